/**
 * A file's UnixFS DAG built exactly as `ipfs-unixfs-importer` builds it with
 * Kubo's options (see cid.ts: CIDv0, dag-pb leaves of `chunkSize` bytes,
 * balanced layout of `maxChildren` links, a one-chunk file is its own root),
 * but in one pass with one copy of the data.
 *
 * Why not the importer itself: on the upload path it copies every chunk three
 * times (its chunker's concat, UnixFS marshal, dag-pb encode), allocates a
 * fresh buffer for each, and its balanced layout keeps each leaf's data alive
 * until its parent is written (174 x 256 KiB = 44 MiB per upload). Here the
 * upload's pieces are copied straight into the leaf block, between a header
 * and a trailer that only depend on the chunk's length, and a leaf is
 * remembered by its CID and sizes alone. test/unit/file-dag.test.ts checks
 * the result against the importer, block for block, on deep trees too.
 */
import { createHash } from 'node:crypto';
import type { Blockstore } from 'interface-blockstore';
import { CID } from 'multiformats/cid';
import * as Digest from 'multiformats/hashes/digest';
import { inlineLeafHasher, type LeafHash, type LeafHasher } from '../hashing/leaf-hasher.js';

const SHA2_256 = 0x12;

export interface FileDagOptions {
  chunkSize: number;
  maxChildren: number;
  /** Block writes in flight at once (each holds one block in memory). */
  writeConcurrency?: number;
  /**
   * Hashes the leaves (and, over their file bytes, the upload's own
   * digests); default: inline, SHA-256 only. Up to LEAVES_IN_FLIGHT leaves
   * are hashed ahead of the one being written.
   */
  leaves?: LeafHasher;
}

/** Leaves handed to the hasher and not yet written (each holds one block in memory). */
const LEAVES_IN_FLIGHT = 8;

/** A blockstore that is done with a block's bytes when put() resolves, so the buffer can be reused. */
interface ReleasingBlockstore {
  readonly releasesBytesOnPut?: boolean;
}

export interface FileDag {
  cid: CID;
  /** The file's length in bytes. */
  size: number;
  /** The root's Tsize: its block and every block under it, as a parent directory's link records it. */
  dagSize: number;
}

/** What a parent needs of a child: its CID, the file bytes under it, and its Tsize (block plus descendants). */
interface Child {
  cid: CID;
  fileSize: number;
  tsize: number;
}

function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

function writeVarint(buf: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    buf[at++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[at++] = n;
  return at;
}

/**
 * A dag-pb leaf holding `n` bytes: PBNode{Data: UnixFS{Type: File, Data, filesize: n}}.
 * Bytes: 0a <len U> 08 02 [12 <n> <data>] 18 <n>, the Data field omitted when empty.
 */
function leafFrame(n: number): { header: Uint8Array; trailer: Uint8Array; length: number } {
  const trailer = new Uint8Array(1 + varintLength(n));
  writeVarint(trailer, writeVarint(trailer, 0, 0x18), n);
  const dataField = n > 0 ? 1 + varintLength(n) + n : 0;
  const unixfsLength = 2 + dataField + trailer.length;
  const header = new Uint8Array(1 + varintLength(unixfsLength) + 2 + (n > 0 ? 1 + varintLength(n) : 0));
  let at = writeVarint(header, 0, 0x0a);
  at = writeVarint(header, at, unixfsLength);
  header[at++] = 0x08;
  header[at++] = 0x02;
  if (n > 0) writeVarint(header, writeVarint(header, at, 0x12), n);
  return { header, trailer, length: header.length + n + trailer.length };
}

/**
 * A dag-pb parent: PBNode{Links: [{Hash, Name: "", Tsize}...], Data: UnixFS{Type: File, filesize, blocksizes...}},
 * links first as dag-pb's canonical form has them; blocksizes unpacked (proto2).
 */
function parentBlock(children: readonly Child[]): Uint8Array {
  const fileSize = children.reduce((sum, c) => sum + c.fileSize, 0);
  let unixfsLength = 2 + 1 + varintLength(fileSize);
  for (const c of children) unixfsLength += 1 + varintLength(c.fileSize);
  const links = children.map((c) => {
    const hash = c.cid.bytes;
    const length = 1 + varintLength(hash.length) + hash.length + 2 + 1 + varintLength(c.tsize);
    return { hash, tsize: c.tsize, length };
  });
  let total = 1 + varintLength(unixfsLength) + unixfsLength;
  for (const l of links) total += 1 + varintLength(l.length) + l.length;
  const block = new Uint8Array(total);
  let at = 0;
  for (const l of links) {
    block[at++] = 0x12;
    at = writeVarint(block, at, l.length);
    block[at++] = 0x0a;
    at = writeVarint(block, at, l.hash.length);
    block.set(l.hash, at);
    at += l.hash.length;
    block[at++] = 0x12; // Name: "" (Kubo writes the empty name)
    block[at++] = 0x00;
    block[at++] = 0x18;
    at = writeVarint(block, at, l.tsize);
  }
  block[at++] = 0x0a;
  at = writeVarint(block, at, unixfsLength);
  block[at++] = 0x08;
  block[at++] = 0x02;
  block[at++] = 0x18;
  at = writeVarint(block, at, fileSize);
  for (const c of children) {
    block[at++] = 0x20;
    at = writeVarint(block, at, c.fileSize);
  }
  if (at !== total) throw new Error(`parent block length ${at} != ${total}`);
  return block;
}

function cidV0Of(block: Uint8Array): CID {
  const digest = createHash('sha256').update(block).digest();
  return CID.createV0(Digest.create(SHA2_256, new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength)));
}

export async function buildFileDag(blockstore: Blockstore, content: AsyncIterable<Uint8Array>, options: FileDagOptions): Promise<FileDag> {
  const { chunkSize, maxChildren } = options;
  const concurrency = options.writeConcurrency ?? 8;
  const full = leafFrame(chunkSize);
  const dataStart = full.header.length;
  // Full leaves are the same size: when the store lets go of them, recycle
  // their buffers rather than leave a 256 KiB buffer per block to the GC.
  const recycle = (blockstore as ReleasingBlockstore).releasesBytesOnPut === true;
  const spare: Buffer[] = [];

  // Block writes run in the background, a bounded number at a time.
  const writes = new Set<Promise<void>>();
  let writeError: unknown;
  const put = async (cid: CID, block: Uint8Array) => {
    if (writeError) throw writeError;
    const write = Promise.resolve(blockstore.put(cid, block)).then(
      () => {
        writes.delete(write);
        if (recycle && block.length === full.length && spare.length < concurrency) spare.push(block as Buffer);
      },
      (err: unknown) => {
        writes.delete(write);
        writeError ??= err;
      },
    );
    writes.add(write);
    while (writes.size >= concurrency) await Promise.race(writes);
    if (writeError) throw writeError;
  };

  // levels[0] holds leaves waiting for their parent, levels[1] their parents, and so on.
  const levels: Child[][] = [[]];
  let leafCount = 0;
  const addNode = async (level: number, node: Child) => {
    (levels[level] ??= []).push(node);
    if (levels[level]!.length === maxChildren) await reduce(level);
  };
  const reduce = async (level: number) => {
    const children = levels[level]!.filter((c) => c.fileSize > 0);
    levels[level] = [];
    const block = parentBlock(children);
    const cid = cidV0Of(block);
    await put(cid, block);
    await addNode(level + 1, {
      cid,
      fileSize: children.reduce((s, c) => s + c.fileSize, 0),
      tsize: children.reduce((s, c) => s + c.tsize, block.length),
    });
  };
  // Leaves are hashed ahead, in order, and written and linked in the same order.
  const hasher = options.leaves ?? inlineLeafHasher();
  const hashing: Array<{ hash: LeafHash | Promise<LeafHash>; n: number }> = [];
  const settleLeaf = async () => {
    const { hash, n } = hashing.shift()!;
    const { sha256, block } = await hash;
    const cid = CID.createV0(Digest.create(SHA2_256, sha256));
    await put(cid, block.length === full.length ? Buffer.from(block.buffer, block.byteOffset, block.byteLength) : block);
    await addNode(0, { cid, fileSize: n, tsize: block.length });
  };
  const addLeaf = async (block: Uint8Array, dataOffset: number, n: number) => {
    leafCount++;
    const hash = hasher.leaf(block, dataOffset, n);
    if (hash instanceof Promise) hash.catch(() => {}); // awaited in order by settleLeaf; a failed import leaves the rest
    hashing.push({ hash, n });
    // Hashed already (inline): written at once, so its buffer is reused as before.
    while (hashing.length > LEAVES_IN_FLIGHT || (hashing.length > 0 && !(hashing[0]!.hash instanceof Promise))) await settleLeaf();
  };

  let size = 0;
  let current: Buffer | undefined;
  let filled = 0;
  for await (const piece of content) {
    size += piece.byteLength;
    let offset = 0;
    while (offset < piece.byteLength) {
      if (!current) {
        current = spare.pop() ?? Buffer.allocUnsafe(full.length);
        current.set(full.header, 0);
        filled = 0;
      }
      const take = Math.min(chunkSize - filled, piece.byteLength - offset);
      current.set(piece.subarray(offset, offset + take), dataStart + filled);
      filled += take;
      offset += take;
      if (filled === chunkSize) {
        current.set(full.trailer, dataStart + chunkSize);
        const block = current;
        current = undefined;
        await addLeaf(block, dataStart, chunkSize);
      }
    }
  }
  // The last, short chunk (or the one empty chunk of an empty file).
  if (current || leafCount === 0) {
    const frame = leafFrame(filled);
    const block = new Uint8Array(frame.length);
    block.set(frame.header, 0);
    if (current) block.set(current.subarray(dataStart, dataStart + filled), frame.header.length);
    block.set(frame.trailer, frame.header.length + filled);
    current = undefined;
    await addLeaf(block, frame.header.length, filled);
  }
  while (hashing.length) await settleLeaf();

  // Close the tree: every level's partial batch gets its parent, up to a single root.
  let root: Child;
  if (leafCount === 1) {
    root = levels[0]![0]!; // a one-chunk file is its own root
  } else {
    for (let level = 0; ; level++) {
      const pending = levels[level] ?? [];
      const higher = levels.slice(level + 1).some((l) => l.length > 0);
      if (!higher && pending.length === 1) {
        root = pending[0]!;
        break;
      }
      if (pending.length > 0) await reduce(level);
    }
  }
  await Promise.all(writes);
  if (writeError) throw writeError;
  return { cid: root.cid, size, dagSize: root.tsize };
}
