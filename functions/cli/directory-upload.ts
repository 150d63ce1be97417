/**
 * `cairn deploy --dir`: a local folder made into the UnixFS DAG Kubo's
 * `ipfs add -r -H` builds (the project's own importer, the one deploys
 * use), then sent as CARs to the import endpoint, only the blocks the
 * service lacks.
 *
 * Two passes over the folder, so that nothing is kept on disk or in
 * memory but the list of CIDs: the first builds the DAG and records each
 * block's CID (a blockstore that keeps nothing); the service says which it
 * lacks; the second builds the same DAG again and streams just those
 * blocks into CARs of at most `carBytes`, each sent before the next is
 * filled. Every CAR names the root; the service pins it for a deploy once
 * the DAG is complete. The second pass must arrive at the same root, or
 * the folder changed in between.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Blockstore } from 'interface-blockstore';
import type { CID } from 'multiformats/cid';
import { importDirectory, PublishDirectoryError } from '../core/ipfs/import-directory.js';
import type { Block, CarAnswer, ImportClient } from './import-client.js';
import { CliError } from './output.js';

/** Under the 10 MB a request to the API through Lambda may carry, with room for the CAR's framing. */
export const DEFAULT_CAR_BYTES = 8 * 1024 * 1024;
/** A block is at most 1 MiB (a 256 KiB leaf, or a directory node under Kubo's sharding limit); a CAR holds at least one. */
export const MIN_CAR_BYTES = 1024 * 1024;
/** Rounds of "send what is missing" before giving up (collection on the service may take blocks it held between rounds). */
const MAX_ROUNDS = 3;

export interface UploadProgress {
  /** 'hashing': the first pass (bytes of the folder's files read); 'uploading': bytes of blocks sent. */
  stage: 'hashing' | 'checking' | 'uploading';
  done: number;
  total: number;
}

export interface DirectoryUpload {
  /** The root as CIDv1, what the deploy records. */
  cid: string;
  /** The root as `ipfs add -r -H` prints it (CIDv0). */
  cidV0: string;
  files: number;
  directories: number;
  bytes: number;
  /** Blocks in the DAG, and how many of them (and of their bytes) were sent. */
  blocks: number;
  blocksSent: number;
  bytesSent: number;
  /** CARs sent, and what the service said it stored of them. */
  cars: number;
  blocksStored: number;
}

/** Records each block's CID and size (first put only), keeping no bytes. */
class RecordingStore {
  readonly sizes = new Map<string, number>();
  hashed = 0;
  constructor(private readonly onBytes: (n: number) => void) {}
  async put(cid: CID, block: Uint8Array): Promise<CID> {
    const key = cid.toString();
    if (!this.sizes.has(key)) this.sizes.set(key, block.byteLength);
    this.onBytes(block.byteLength);
    return cid;
  }
}

/** Takes the blocks the service lacks, each once, into CARs of at most `limit` bytes, sent one at a time. */
class SendingStore {
  private pending: Block[] = [];
  private pendingBytes = 0;
  private flushing?: Promise<void>;
  readonly sent = new Set<string>();
  bytesSent = 0;
  cars = 0;
  blocksStored = 0;
  last?: CarAnswer;

  constructor(
    private readonly client: ImportClient,
    private readonly root: CID,
    private readonly wanted: Set<string>,
    private readonly limit: number,
    private readonly onSent: (bytes: number) => void,
  ) {}

  async put(cid: CID, block: Uint8Array): Promise<CID> {
    const key = cid.toString();
    if (!this.wanted.has(key) || this.sent.has(key)) return cid;
    this.sent.add(key);
    while (this.pending.length > 0 && this.pendingBytes + block.byteLength > this.limit) {
      await (this.flushing ??= this.flush().finally(() => (this.flushing = undefined)));
    }
    // The importer may reuse its buffers once put() resolves.
    this.pending.push({ cid, bytes: Uint8Array.from(block) });
    this.pendingBytes += block.byteLength;
    return cid;
  }

  /** Sends what is pending as one CAR (with nothing pending, a CAR of the root alone: the question whether the DAG is complete). */
  async flush(): Promise<void> {
    const blocks = this.pending;
    const bytes = this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    const answer = await this.client.sendCar(this.root, blocks);
    this.cars++;
    this.blocksStored += answer.blocks;
    this.bytesSent += bytes;
    this.last = answer;
    this.onSent(bytes);
  }

  async finish(): Promise<CarAnswer> {
    while (this.flushing) await this.flushing;
    await this.flush();
    return this.last!;
  }
}

/** The folder's regular files' bytes, for the first pass's progress (symlinks are not followed, as the import does not). */
async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await folderBytes(path);
    else if (entry.isFile()) total += (await stat(path)).size;
  }
  return total;
}

export async function uploadDirectory(
  client: ImportClient,
  dir: string,
  options: { carBytes?: number; onProgress?: (p: UploadProgress) => void } = {},
): Promise<DirectoryUpload> {
  const limit = options.carBytes ?? DEFAULT_CAR_BYTES;
  const report = options.onProgress ?? (() => {});
  const kind = await stat(dir).then(
    (s) => (s.isDirectory() ? 'dir' : 'other'),
    () => 'missing',
  );
  if (kind === 'missing') throw new CliError(`--dir ${dir}: no such folder`);
  if (kind !== 'dir') throw new CliError(`--dir ${dir}: not a folder`);

  const total = await folderBytes(dir);
  let hashed = 0;
  const recorder = new RecordingStore((n) => {
    hashed += n;
    report({ stage: 'hashing', done: Math.min(hashed, total), total });
  });
  const imported = await importDirectory(recorder as unknown as Blockstore, dir).catch((err: unknown) => {
    if (err instanceof PublishDirectoryError) throw new CliError(`--dir ${dir}: ${err.message}`);
    throw err;
  });
  const root = imported.cid;
  const cids = [...recorder.sizes.keys()];
  report({ stage: 'hashing', done: total, total });

  let blocksSent = 0;
  let bytesSent = 0;
  let cars = 0;
  let blocksStored = 0;
  for (let round = 1; ; round++) {
    report({ stage: 'checking', done: 0, total: cids.length });
    const missing = await client.missing(cids, (asked) => report({ stage: 'checking', done: asked, total: cids.length }));
    const missingBytes = [...missing].reduce((sum, cid) => sum + (recorder.sizes.get(cid) ?? 0), 0);
    let uploaded = 0;
    report({ stage: 'uploading', done: 0, total: missingBytes });
    const sender = new SendingStore(client, root, missing, limit, (n) => {
      uploaded += n;
      report({ stage: 'uploading', done: uploaded, total: missingBytes });
    });
    if (missing.size > 0) {
      const again = await importDirectory(sender as unknown as Blockstore, dir);
      if (!again.cid.equals(root)) throw new CliError(`--dir ${dir}: the folder changed while it was being uploaded; deploy it again`);
    }
    const answer = await sender.finish();
    blocksSent += sender.sent.size;
    bytesSent += sender.bytesSent;
    cars += sender.cars;
    blocksStored += sender.blocksStored;
    if (answer.complete) break;
    if (round === MAX_ROUNDS)
      throw new CliError(`the service still lacks ${answer.missing ?? 'some'} blocks of ${root.toV1()} after ${MAX_ROUNDS} uploads`);
  }
  return {
    cid: root.toV1().toString(),
    cidV0: root.toString(),
    files: imported.files,
    directories: imported.directories,
    bytes: imported.bytes,
    blocks: cids.length,
    blocksSent,
    bytesSent,
    cars,
    blocksStored,
  };
}
