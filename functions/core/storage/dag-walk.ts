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
 * A dag-cbor or dag-json block (an imported IPLD DAG) is scanned for its
 * links within ipld.ts's bounds: one pass over its tokens that builds no
 * value and no CID, and gives the event loop turns (scanLinks); a link
 * becomes a CID only when the walk visits it. Plain cbor and json blocks
 * have none.
 *
 * The walk is a loop over an explicit stack of levels, so its work is linear
 * in blocks and links whatever the DAG's shape. (It was a generator per
 * level, each delegating with `yield*` to the next: a block d levels down
 * passed through d generators on its way out, so a chain of n blocks cost
 * n²/2 resumptions, 7 s of a blocked event loop at 2,500 deep, and at 3,000
 * the nesting overflowed the call stack.) The local blockstore reads small
 * blocks synchronously, so a walk can go on for long without ever waiting
 * for I/O: it gives the event loop a turn every SLICE_MS of work (work-slices.ts).
 *
 * A DAG someone sent (an import, a CID they deploy) is walked with `limits`:
 * deeper than maxDepth levels, or more than maxBlocks blocks or maxLinks
 * links, and the walk stops with a DagLimitError. The links of a level are
 * kept packed (their CIDs' bytes in one buffer, not the block they came
 * from), so what a walk holds is tens of bytes a link, and the limits bound
 * it.
 */
import { decode as decodeDagPb } from '@ipld/dag-pb';
import type { Blockstore } from 'interface-blockstore';
import { CID } from 'multiformats/cid';
import { workSlices } from '../work-slices.js';
import { isIpldCodec, isLinkingCodec, multihashOffset } from '../ipfs/ipld-codecs.js';

const READ_AHEAD = 4;

const DAG_PB = 0x70;
const RAW = 0x55;
const IDENTITY = 0x00;

/**
 * The bounds on a DAG someone else sent, far past any site's:
 * - depth: a UnixFS directory tree is as deep as its deepest path (a Linux
 *   path is at most 4,096 bytes, PATH_MAX, so at most 2,048 directories
 *   deep), plus a few levels of HAMT shards for directories of many
 *   thousands of entries; a file's balanced DAG (Kubo's default: 174 links
 *   a node, 256 KiB leaves) is 4 levels deep at 240 TB, and a trickle DAG a
 *   few dozen.
 * - blocks: a million blocks are 244 GiB of 256 KiB leaves, or a million
 *   small files; a site is a small fraction of either.
 * - links: every block but the root is reached by a link, so a DAG within
 *   the block limit needs few more links than blocks; twice as many leaves
 *   room for content linked many times over (a file of zeros links one leaf
 *   once per 256 KiB) and bounds a walk's work and the links it holds.
 */
export const DAG_LIMITS: Readonly<WalkLimits> = { maxDepth: 4096, maxBlocks: 1_000_000, maxLinks: 2_000_000 };

export interface WalkLimits {
  /** Levels below the root (the root's children are at depth 1). */
  maxDepth: number;
  /** Distinct blocks, the root included. */
  maxBlocks: number;
  /** Links read from the DAG's blocks, each counted however often it repeats. */
  maxLinks: number;
}

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

/** A DAG past one of the walk's limits; the message says which, as a clause ("is deeper than 4096 levels"). */
export class DagLimitError extends Error {
  override name = 'DagLimitError';
  constructor(
    readonly root: CID,
    readonly limit: keyof WalkLimits,
    readonly max: number,
  ) {
    super(
      `the DAG of ${root} ${limit === 'maxDepth' ? `is deeper than ${max} levels` : limit === 'maxBlocks' ? `has more than ${max} blocks` : `has more than ${max} links`}`,
    );
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
  /** Bounds for a DAG someone else sent (DAG_LIMITS): past one, the walk throws DagLimitError. */
  limits?: WalkLimits;
  /** Told of every block read (present or not), for counting work. */
  onRead?(cid: CID): void;
  /**
   * Visit a block again each time a link leads to it, its DAG included (a
   * CAR with `dups=y`), instead of once. `onRepeat` is told of each repeat
   * before it is visited, and bounds them by throwing: a few blocks linked
   * many times over can make a walk of repeats exponentially longer.
   */
  duplicates?: boolean;
  onRepeat?(cid: CID): void;
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

/**
 * A block's links, packed: their CIDs' bytes end to end in one buffer of
 * their own. Decoded CIDs are views into the block they came from, which
 * would keep every 2 MiB block of a level alive while the walk is below it.
 */
class Links {
  static readonly none = new Links(new Uint8Array(0), new Uint32Array(1));
  constructor(
    private readonly bytes: Uint8Array,
    /** Where each link starts, and one more: where the last ends. */
    private readonly ends: Uint32Array,
  ) {}

  static of(cids: CID[]): Links {
    return Links.ofBytes(cids.map((cid) => cid.bytes));
  }

  /** Links from their CIDs' bytes, each one whole CID (scanLinks checks them), copied into one buffer. */
  static ofBytes(links: Uint8Array[]): Links {
    if (!links.length) return Links.none;
    const ends = new Uint32Array(links.length + 1);
    for (let i = 0; i < links.length; i++) ends[i + 1] = ends[i]! + links[i]!.length;
    const bytes = new Uint8Array(ends[links.length]!);
    for (let i = 0; i < links.length; i++) bytes.set(links[i]!, ends[i]!);
    return new Links(bytes, ends);
  }

  get length(): number {
    return this.ends.length - 1;
  }

  at(i: number): CID {
    return CID.decode(this.bytes.subarray(this.ends[i]!, this.ends[i + 1]!));
  }

  /** blockKey of the i-th link, read from its bytes without building its CID (most links of a large block are not visited). */
  keyAt(i: number): string {
    const link = this.bytes.subarray(this.ends[i]!, this.ends[i + 1]!);
    const start = multihashOffset(link) ?? 0;
    return Buffer.from(link.buffer, link.byteOffset + start, link.length - start).toString('base64');
  }
}

/** The links of a block, 'missing', or why it does not decode. */
async function linksOf(blockstore: Blockstore, cid: CID, signal?: AbortSignal): Promise<Links | 'missing' | { undecodable: string }> {
  if (cid.multihash.code === IDENTITY) return Links.none;
  if (cid.code !== DAG_PB && cid.code !== RAW && !isIpldCodec(cid.code)) throw new UnsupportedCodecError(cid);
  try {
    if (isIpldCodec(cid.code) && !isLinkingCodec(cid.code)) return (await blockstore.has(cid, { signal })) ? Links.none : 'missing';
    if (isLinkingCodec(cid.code)) {
      // The codecs are loaded with the first such block (ipfs/ipld-codecs.ts says why).
      const { IpldBlockError, scanLinks } = await import('../ipfs/ipld.js');
      const bytes = await readAll(blockstore, cid, signal);
      try {
        return Links.ofBytes(await scanLinks(cid.code, bytes, signal));
      } catch (err) {
        if (err instanceof IpldBlockError) return { undecodable: err.message };
        throw err;
      }
    }
    const prefixes = 'readPrefix' in blockstore ? (blockstore as unknown as PrefixReader) : undefined;
    if (prefixes) {
      const head = await prefixes.readPrefix(cid, 1, { signal }); // also proves the block is here
      if (cid.code === RAW || head.length === 0 || head[0] === 0x0a) return Links.none;
    } else if (cid.code === RAW) {
      return (await blockstore.has(cid, { signal })) ? Links.none : 'missing';
    }
    const bytes = await readAll(blockstore, cid, signal);
    try {
      return Links.of(decodeDagPb(bytes).Links.map((l) => l.Hash));
    } catch (err) {
      return { undecodable: (err as Error).message };
    }
  } catch (err) {
    if (isNotFound(err)) return 'missing';
    throw err;
  }
}

type Read = ReturnType<typeof linksOf>;

/** One level of the walk: the children of a block still to visit, and the reads started ahead of them. */
interface Level {
  links: Links;
  /** Indexes into `links` of the children this level visits (those not seen before), in order. */
  children: number[];
  /** The next of `children` to visit. */
  next: number;
  /** The next of `children` to start reading. */
  started: number;
  /** Reads of children[next..started), in order. */
  pending: Read[];
}

/** Every block of the DAG under `root`, once each (or as often as it is linked, with `duplicates`), parents before their children. */
export async function* walkDag(blockstore: Blockstore, root: CID, options: WalkOptions = {}): AsyncGenerator<CID> {
  const { signal, limits, onRead } = options;
  const seen = new Set<string>([blockKey(root)]);
  const skip = options.missing === 'skip';
  const levels: Level[] = [];
  let linksRead = 0;
  let cid = root;
  let loading: Read = linksOf(blockstore, root, signal);
  const pause = workSlices();
  for (;;) {
    let links = await loading;
    onRead?.(cid);
    let present = true;
    if (links === 'missing') {
      if (!skip) throw new MissingBlockError(cid, root);
      options.onDamage?.(cid, 'missing');
      present = false;
    } else if (!(links instanceof Links)) {
      if (!skip) throw new CorruptBlockError(cid, root, links.undecodable);
      options.onDamage?.(cid, 'undecodable');
      links = Links.none;
    }
    if (present) {
      yield cid;
      const found = links as Links;
      const children: number[] = [];
      for (let i = 0; i < found.length; i++) {
        const key = found.keyAt(i);
        if (seen.has(key)) {
          if (!options.duplicates) continue;
          options.onRepeat?.(found.at(i));
        } else {
          seen.add(key);
        }
        children.push(i);
        // A block of 50,000 links is a long loop of its own.
        if (i % 256 === 255) {
          const paused = pause();
          if (paused) {
            await paused;
            signal?.throwIfAborted();
          }
        }
      }
      if (limits) {
        linksRead += found.length;
        if (linksRead > limits.maxLinks) throw new DagLimitError(root, 'maxLinks', limits.maxLinks);
        if (seen.size > limits.maxBlocks) throw new DagLimitError(root, 'maxBlocks', limits.maxBlocks);
        if (children.length && levels.length + 1 > limits.maxDepth) throw new DagLimitError(root, 'maxDepth', limits.maxDepth);
      }
      if (children.length) levels.push({ links: found, children, next: 0, started: 0, pending: [] });
    }
    // The next block: the next child of the deepest level that has one left.
    let level = levels[levels.length - 1];
    while (level && level.next === level.children.length) {
      levels.pop();
      level = levels[levels.length - 1];
    }
    if (!level) return;
    while (level.started < level.children.length && level.pending.length < READ_AHEAD) {
      const read = linksOf(blockstore, level.links.at(level.children[level.started++]!), signal);
      read.catch(() => {}); // awaited in order, or dropped with the walk
      level.pending.push(read);
    }
    cid = level.links.at(level.children[level.next++]!);
    loading = level.pending.shift()!;
    const paused = pause();
    if (paused) {
      await paused;
      signal?.throwIfAborted();
    }
  }
}

/** A block's bytes, whole. */
export { readAll as readBlock };
