/**
 * Cairn's own walk of a DAG in the blockstore: what pinning, collection and
 * the integrity check follow. Unlike Helia's graph walkers it never asks a
 * network for a missing block (Helia's did, and its rejection escaped as an
 * unhandled one that ended the process): a missing block is an error that
 * names it, or is skipped where the caller expects holes.
 *
 * Each block is visited once, however often it is linked (a file of zeros
 * links one leaf hundreds of times), depth first, parents before children.
 * Reads run at most READ_AHEAD blocks ahead of the caller per level, so a
 * large file never queues in memory. A dag-pb block lists its links before
 * its data (dag-pb's canonical order, which decoders enforce), so a block
 * that starts with the Data field (0x0a) has none: with a PrefixReader such
 * a leaf is checked by reading its first byte instead of all 256 KiB.
 */
import { decode as decodeDagPb } from '@ipld/dag-pb';
import type { Blockstore } from 'interface-blockstore';
import type { CID } from 'multiformats/cid';

const READ_AHEAD = 4;

const DAG_PB = 0x70;
const RAW = 0x55;
const IDENTITY = 0x00;

/** A blockstore that can read the start of a block alone (the local PackedBlockstore). */
export interface PrefixReader {
  readPrefix(cid: CID, length: number, options?: { signal?: AbortSignal }): Promise<Uint8Array>;
}

export class MissingBlockError extends Error {
  override name = 'MissingBlockError';
  constructor(
    readonly cid: CID,
    readonly root: CID,
  ) {
    super(`block ${cid} of ${root} is missing`);
  }
}

export class CorruptBlockError extends Error {
  override name = 'CorruptBlockError';
  constructor(
    readonly cid: CID,
    readonly root: CID,
    why: string,
  ) {
    super(`block ${cid} of ${root} cannot be decoded: ${why}`);
  }
}

export class UnsupportedCodecError extends Error {
  override name = 'UnsupportedCodecError';
  constructor(readonly cid: CID) {
    super(`block ${cid} has codec 0x${cid.code.toString(16)}, which Cairn does not store`);
  }
}

export interface WalkOptions {
  /**
   * 'throw' (the default) fails the walk with MissingBlockError, or
   * CorruptBlockError for a block that is there but does not decode.
   * 'skip' goes on: a missing block is not yielded, an undecodable one is
   * (it is there) without its links, and `onDamage` is told of each.
   */
  missing?: 'throw' | 'skip';
  onDamage?(cid: CID, damage: 'missing' | 'undecodable'): void;
  signal?: AbortSignal;
}

/** Text that tells blocks apart (the multihash: a v0 and a v1 CID of one dag-pb block are the same block). */
export const blockKey = (cid: CID): string => Buffer.from(cid.multihash.bytes).toString('base64');

const isNotFound = (err: unknown) => (err as Error)?.name === 'NotFoundError';

async function readAll(blockstore: Blockstore, cid: CID, signal?: AbortSignal): Promise<Uint8Array> {
  const got = blockstore.get(cid, { signal }) as unknown;
  if (got instanceof Uint8Array) return got;
  const resolved = await (got as Promise<Uint8Array> | AsyncIterable<Uint8Array>);
  if (resolved instanceof Uint8Array) return resolved;
  const pieces: Uint8Array[] = [];
  for await (const piece of resolved as AsyncIterable<Uint8Array>) pieces.push(piece);
  return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
}

/** The links of a block, 'missing', or why it does not decode. */
async function linksOf(blockstore: Blockstore, cid: CID, signal?: AbortSignal): Promise<CID[] | 'missing' | { undecodable: string }> {
  if (cid.multihash.code === IDENTITY) return [];
  if (cid.code !== DAG_PB && cid.code !== RAW) throw new UnsupportedCodecError(cid);
  try {
    const prefixes = 'readPrefix' in blockstore ? (blockstore as unknown as PrefixReader) : undefined;
    if (prefixes) {
      const head = await prefixes.readPrefix(cid, 1, { signal }); // also proves the block is here
      if (cid.code === RAW || head.length === 0 || head[0] === 0x0a) return [];
    } else if (cid.code === RAW) {
      return (await blockstore.has(cid, { signal })) ? [] : 'missing';
    }
    const bytes = await readAll(blockstore, cid, signal);
    try {
      return decodeDagPb(bytes).Links.map((l) => l.Hash);
    } catch (err) {
      return { undecodable: (err as Error).message };
    }
  } catch (err) {
    if (isNotFound(err)) return 'missing';
    throw err;
  }
}

/** Every block of the DAG under `root`, once each, parents before their children. */
export async function* walkDag(blockstore: Blockstore, root: CID, options: WalkOptions = {}): AsyncGenerator<CID> {
  const { signal } = options;
  const seen = new Set<string>([blockKey(root)]);
  const skip = options.missing === 'skip';
  async function* visit(cid: CID, loading: ReturnType<typeof linksOf>): AsyncGenerator<CID> {
    let links = await loading;
    if (links === 'missing') {
      if (!skip) throw new MissingBlockError(cid, root);
      return options.onDamage?.(cid, 'missing');
    }
    if (!Array.isArray(links)) {
      if (!skip) throw new CorruptBlockError(cid, root, links.undecodable);
      options.onDamage?.(cid, 'undecodable');
      links = [];
    }
    yield cid;
    const children = links.filter((child) => {
      const key = blockKey(child);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    const pending: Array<ReturnType<typeof linksOf>> = [];
    let next = 0;
    for (const child of children) {
      while (next < children.length && pending.length < READ_AHEAD) {
        const read = linksOf(blockstore, children[next++]!, signal);
        read.catch(() => {}); // awaited in order below
        pending.push(read);
      }
      yield* visit(child, pending.shift()!);
    }
  }
  yield* visit(root, linksOf(blockstore, root, signal));
}

/** A block's bytes, whole. */
export { readAll as readBlock };
