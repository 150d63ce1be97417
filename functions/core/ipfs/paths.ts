/**
 * Paths inside a UnixFS DAG: a request path made safe (decoded once, `.`,
 * `..` and empty segments resolved lexically so nothing climbs above the
 * root), and walked from a root CID segment by segment, HAMT-sharded
 * directories included, keeping the CID of every step (`X-Ipfs-Roots`).
 *
 * The walk reads each block once and decodes no more of it than the step
 * needs (unixfs-file.ts): a directory's links are binary searched by name
 * bytes, a HAMT shard is followed by the name's murmur3 hash as
 * import-directory.ts builds shards, and the entry at the end keeps its
 * block, so a file's reader (read.ts) starts from it instead of reading and
 * decoding it again. Only codecs other than dag-pb and raw (dag-cbor,
 * dag-json...) go through ipfs-unixfs-exporter. Every block is read through
 * `blockstore.get`, in path order: the trustless gateway records them so.
 */
import { murmur3128 } from '@multiformats/murmur3';
import type { UnixFSEntry } from 'ipfs-unixfs-exporter';
import type { Blockstore } from 'interface-blockstore';
import type { CID } from 'multiformats/cid';
import { readBlock } from '../storage/dag-walk.js';
import { isIpldCodec, isLinkingCodec } from './ipld-codecs.js';
import {
  compareBytes,
  decodeUnixfs,
  findLink,
  linkCid,
  linkName,
  MalformedBlockError,
  UnixfsType,
  viewDagPb,
  type DagPbView,
  type UnixfsData,
} from './unixfs-file.js';
// Request paths alone, in a module of their own: the gateway threads' hit path needs them and nothing of the walk.
export { BadPathError, contentPath, encodePath, type ContentPath } from './content-path.js';

/**
 * ipfs-unixfs-exporter, loaded with its first use: it serves only the rare
 * paths (codecs Cairn does not decode, a HAMT of another hash, typing a
 * listing's children), and it brings the dag-cbor and dag-json codecs
 * (cborg) with it, which an object's read, on every S3 GET, does not need
 * (test/infra/cold-bundles.test.ts).
 */
const unixfsExporter = () => import('ipfs-unixfs-exporter');

/** A dag-pb node that holds no UnixFS data, where UnixFS is read (the exporter's error of that name). */
export class NotUnixFSError extends Error {
  override name = 'NotUnixFSError';
}

/** What a path resolves to, with the block it was read from. */
export interface PathEntry {
  cid: CID;
  /**
   * As ipfs-unixfs-exporter types it: `directory` (a HAMT too), `file` for
   * any other UnixFS node (a symlink is a file whose bytes are its target),
   * `raw`, `identity` (the identity codec), `object` (dag-cbor, dag-json,
   * cbor, json: then `bytes` holds its block).
   */
  type: UnixFSEntry['type'];
  /** A file's length, a raw block's; a directory's block size (as the exporter has them). */
  size: bigint;
  /** A dag-pb node: its block, as read, and its UnixFS data. */
  dagPb?: { view: DagPbView; unixfs: UnixfsData };
  /** A raw block's bytes, an identity CID's digest, an IPLD block's (`object`). */
  bytes?: Uint8Array;
}

export interface Resolved {
  entry: PathEntry;
  /** The root, then the CID of each segment (of each link followed, in a dag-cbor or dag-json node). */
  roots: CID[];
  /**
   * The segments that lead into the data of the dag-cbor or dag-json block
   * `entry`, below its last link: data other than a link, which no gateway
   * serves yet (the spec's 501).
   */
  remainder?: string[];
}

const DAG_PB = 0x70;
const RAW = 0x55;
const IDENTITY = 0x00;
/** The multicodec of murmur3-x64-64, the name hash of a HAMT built by Kubo (boxo) and import-directory.ts. */
const MURMUR3_64 = 0x22;

const utf8 = new TextEncoder();

/** A block's bytes: an identity CID's are its digest, any other's come from the blockstore (whose NotFoundError is thrown as it is). */
function blockOf(blockstore: Blockstore, cid: CID, signal?: AbortSignal): Uint8Array | Promise<Uint8Array> {
  if (cid.multihash.code === IDENTITY) return cid.multihash.digest;
  return readBlock(blockstore, cid, signal);
}

function dagPbEntry(cid: CID, view: DagPbView): PathEntry {
  if (!view.data) throw new NotUnixFSError(`${cid}: a dag-pb node without UnixFS data`);
  const unixfs = decodeUnixfs(view.data);
  if (unixfs.type === UnixfsType.directory || unixfs.type === UnixfsType.hamtShard) {
    return { cid, type: 'directory', size: BigInt(view.block.byteLength), dagPb: { view, unixfs } };
  }
  // UnixFS.fileSize(): the block sizes and the node's own data (a symlink's target).
  let size = unixfs.data?.length ?? 0;
  for (const s of unixfs.blockSizes) size += s;
  return { cid, type: 'file', size: BigInt(size), dagPb: { view, unixfs } };
}

/** The entry at `cid` itself: one block read and decoded (the exporter for codecs other than dag-pb and raw). */
export async function readEntry(blockstore: Blockstore, cid: CID, signal?: AbortSignal): Promise<PathEntry> {
  if (cid.code === DAG_PB) return dagPbEntry(cid, viewDagPb(await blockOf(blockstore, cid, signal)));
  if (cid.code === RAW) {
    const bytes = await blockOf(blockstore, cid, signal);
    return { cid, type: 'raw', size: BigInt(bytes.byteLength), bytes };
  }
  if (cid.code === IDENTITY) {
    const bytes = cid.multihash.digest;
    return { cid, type: 'identity', size: BigInt(bytes.byteLength), bytes };
  }
  if (isIpldCodec(cid.code)) {
    const bytes = await blockOf(blockstore, cid, signal);
    return { cid, type: 'object', size: BigInt(bytes.byteLength), bytes };
  }
  const entry = await (await unixfsExporter()).exporter(cid, blockstore, { signal });
  return { cid, type: entry.type, size: entry.size };
}

/** The bits of a 64-bit hash (big-endian bytes) that pick a slot at `depth`, or undefined past its end. */
function slotAt(hash: Uint8Array, depth: number, bits: number): number | undefined {
  const first = depth * bits;
  if (first + bits > hash.length * 8) return undefined;
  let slot = 0;
  for (let b = first; b < first + bits; b++) slot = (slot << 1) | ((hash[b >> 3]! >> (7 - (b & 7))) & 1);
  return slot;
}

/** Whether `name` begins with `prefix`. */
function startsWith(name: Uint8Array, prefix: Uint8Array): boolean {
  return name.length >= prefix.length && compareBytes(name.subarray(0, prefix.length), prefix) === 0;
}

/** The link of a shard node whose name begins with `prefix` (a slot's: a sub-shard, or one entry), or -1. */
function shardLink(view: DagPbView, prefix: Uint8Array): number {
  const count = view.starts.length;
  // Links are in slot order, which is their names' byte order (upper-case hex): the first name not below the prefix.
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareBytes(linkName(view, mid), prefix) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < count && startsWith(linkName(view, lo), prefix)) return lo;
  for (let i = 0; i < count; i++) if (startsWith(linkName(view, i), prefix)) return i;
  return -1;
}

/**
 * `name` in a HAMT-sharded directory, as boxo's hamt package (and
 * import-directory.ts) place it: murmur3-x64-64 of the name (the first 8
 * bytes of murmur3-x64-128), log2(fanout) bits per level from the most
 * significant, the slot written as upper-case hex before the name; a link
 * named by the slot alone is the next level's shard. Each shard on the
 * way is one block read. Undefined for a name that is not there; 'other'
 * for a HAMT of another hash or fanout, left to the exporter.
 */
async function findInShard(
  blockstore: Blockstore,
  view: DagPbView,
  unixfs: UnixfsData,
  name: Uint8Array,
  signal?: AbortSignal,
): Promise<CID | undefined | 'other'> {
  const fanout = unixfs.fanout ?? 0;
  if (unixfs.hashType !== MURMUR3_64 || fanout < 2 || fanout > 4096 || (fanout & (fanout - 1)) !== 0) return 'other';
  const bits = Math.log2(fanout);
  const padLength = (fanout - 1).toString(16).length;
  const digest = murmur3128.encode(name);
  if (!(digest instanceof Uint8Array)) throw new Error('murmur3 answered asynchronously'); // its encode is synchronous
  const hash = digest.subarray(0, 8);
  for (let depth = 0; ; depth++) {
    const slot = slotAt(hash, depth, bits);
    if (slot === undefined) return undefined;
    const prefix = utf8.encode(slot.toString(16).toUpperCase().padStart(padLength, '0'));
    const at = shardLink(view, prefix);
    if (at < 0) return undefined;
    const linkNameBytes = linkName(view, at);
    if (linkNameBytes.length > padLength)
      return compareBytes(linkNameBytes.subarray(padLength), name) === 0 ? linkCid(view, at) : undefined;
    // The slot's shard, one level down.
    const shard = linkCid(view, at);
    if (shard.code !== DAG_PB) throw new MalformedBlockError(`${shard}: a HAMT shard of codec 0x${shard.code.toString(16)}`);
    view = viewDagPb(await blockOf(blockstore, shard, signal));
    if (!view.data) throw new NotUnixFSError(`${shard}: a HAMT shard without UnixFS data`);
    const inner = decodeUnixfs(view.data);
    if (inner.type !== UnixfsType.hamtShard) throw new MalformedBlockError(`${shard}: a HAMT shard of UnixFS type ${inner.type}`);
  }
}

/**
 * The entry at `segments` under `root`, or undefined when the DAG has no
 * such path. A block that is missing is not a missing path: its error is
 * thrown (the caller's 404 for an unknown root, 500 for a damaged site).
 */
export async function resolvePath(
  blockstore: Blockstore,
  root: CID,
  segments: readonly string[],
  signal?: AbortSignal,
): Promise<Resolved | undefined> {
  if (segments.length === 0) return { entry: await readEntry(blockstore, root, signal), roots: [root] };
  if (isLinkingCodec(root.code)) return ipldWalk(blockstore, root, segments, [root], signal);
  if (root.code !== DAG_PB)
    return root.code === RAW || root.code === IDENTITY || isIpldCodec(root.code)
      ? undefined
      : exporterWalk(blockstore, root, segments, [root], signal);
  return resolveBelow(blockstore, { cid: root, view: viewDagPb(await blockOf(blockstore, root, signal)) }, segments, [root], signal);
}

/**
 * The entry at `segments` under a directory already resolved (a
 * directory's index.html), its block not read again. Its roots are `dir`'s
 * followed by the segments'.
 */
export async function resolveUnder(
  blockstore: Blockstore,
  dir: Resolved,
  segments: readonly string[],
  signal?: AbortSignal,
): Promise<Resolved | undefined> {
  const { entry } = dir;
  if (!entry.dagPb)
    return resolvePath(blockstore, entry.cid, segments, signal).then(
      (r) => r && { entry: r.entry, roots: [...dir.roots, ...r.roots.slice(1)] },
    );
  if (segments.length === 0) return dir;
  return resolveBelow(blockstore, { cid: entry.cid, view: entry.dagPb.view }, segments, [...dir.roots], signal);
}

/** The walk from a dag-pb node already read; `roots` ends with its CID and is extended in place. */
async function resolveBelow(
  blockstore: Blockstore,
  at: { cid: CID; view: DagPbView },
  segments: readonly string[],
  roots: CID[],
  signal?: AbortSignal,
): Promise<Resolved | undefined> {
  let { cid, view } = at;
  for (let i = 0; ; i++) {
    if (i === segments.length) return { entry: dagPbEntry(cid, view), roots };
    // A node without UnixFS data has no named children (the exporter's walk does not find one either).
    if (!view.data) return undefined;
    const unixfs = decodeUnixfs(view.data);
    const name = utf8.encode(segments[i]!);
    let next: CID | undefined;
    if (unixfs.type === UnixfsType.directory) {
      const link = findLink(view, name);
      next = link < 0 ? undefined : linkCid(view, link);
    } else if (unixfs.type === UnixfsType.hamtShard) {
      const found = await findInShard(blockstore, view, unixfs, name, signal);
      if (found === 'other') return exporterWalk(blockstore, cid, segments.slice(i), roots, signal);
      next = found;
    } else {
      return undefined; // a file or a symlink has no children: a symlink is never followed
    }
    if (!next) return undefined;
    roots.push(next);
    cid = next;
    if (cid.code !== DAG_PB) {
      if (i + 1 === segments.length) return { entry: await readEntry(blockstore, cid, signal), roots };
      if (isLinkingCodec(cid.code)) return ipldWalk(blockstore, cid, segments.slice(i + 1), roots, signal);
      if (cid.code === RAW || cid.code === IDENTITY || isIpldCodec(cid.code)) return undefined;
      return exporterWalk(blockstore, cid, segments.slice(i + 1), roots, signal);
    }
    signal?.throwIfAborted();
    view = viewDagPb(await blockOf(blockstore, cid, signal));
  }
}

/** Links at a block's root followed in a row without a segment between them (a block that is a link to itself would loop). */
const MAX_BARE_LINKS = 32;

/**
 * The walk from the dag-cbor or dag-json block `from` (the last of
 * `roots`, which is extended in place) down `segments`: inside each block
 * by map key and list index to its next link (path gateway spec,
 * "Traversing through DAG-JSON and DAG-CBOR": "DAG-CBOR: links are tagged
 * with CBOR tag 42"; "DAG-JSON: link are represented as a base encoded CID
 * under the `/` reserved namespace"), then on from the linked block, a
 * UnixFS one included. A path that ends inside a block's own data is
 * resolved to that block with the segments left as `remainder`.
 */
async function ipldWalk(
  blockstore: Blockstore,
  from: CID,
  segments: readonly string[],
  roots: CID[],
  signal?: AbortSignal,
): Promise<Resolved | undefined> {
  // The codecs are loaded with the first such block (ipld-codecs.ts says why).
  const { decodeIpld, followInNode } = await import('./ipld.js');
  let cid = from;
  let at = 0;
  let bare = 0;
  for (;;) {
    const bytes = await blockOf(blockstore, cid, signal);
    const step = followInNode(decodeIpld(cid.code, bytes), segments, at);
    if (step.kind === 'missing') return undefined;
    if (step.kind === 'end') {
      const entry: PathEntry = { cid, type: 'object', size: BigInt(bytes.byteLength), bytes };
      return step.consumed > at ? { entry, roots, remainder: segments.slice(at) } : { entry, roots };
    }
    bare = step.consumed === at ? bare + 1 : 0;
    if (bare > MAX_BARE_LINKS) return undefined;
    at = step.consumed;
    cid = step.cid;
    roots.push(cid);
    if (at === segments.length) return { entry: await readEntry(blockstore, cid, signal), roots };
    if (cid.code === DAG_PB)
      return resolveBelow(blockstore, { cid, view: viewDagPb(await blockOf(blockstore, cid, signal)) }, segments.slice(at), roots, signal);
    if (!isLinkingCodec(cid.code)) return undefined; // raw, identity, cbor, json: no names inside
    signal?.throwIfAborted();
  }
}

/**
 * The exporter's walk, for what only it decodes (a HAMT of another hash, a
 * codec Cairn does not decode, which the exporter refuses), from `from` (the last of
 * `roots`) down `segments`.
 */
async function exporterWalk(
  blockstore: Blockstore,
  from: CID,
  segments: readonly string[],
  roots: CID[],
  signal?: AbortSignal,
): Promise<Resolved | undefined> {
  // walkPath splits on `/` unless escaped; a segment cannot hold one, but may hold a `\` before the split point.
  if (segments.some((s) => s.includes('\\'))) return undefined;
  let last: { cid: CID; roots: CID[] } | undefined;
  try {
    const { walkPath } = await unixfsExporter();
    for await (const step of walkPath([from.toString(), ...segments].join('/'), blockstore, { signal })) last = step;
  } catch (err) {
    if (isPathMissing(err)) return undefined;
    throw err;
  }
  if (!last || last.roots.length !== segments.length + 1) return undefined;
  return { entry: await readEntry(blockstore, last.cid, signal), roots: [...roots, ...last.roots.slice(1)] };
}

/** walkPath's own "no such name" error, as opposed to a block the blockstore lacks. */
function isPathMissing(err: unknown): boolean {
  const e = err as { name?: string; message?: string };
  if (e?.name === 'BadPathError') return true;
  return e?.name === 'NotFoundError' && /^(Could not resolve path|No link |Cannot load path)/.test(e.message ?? '');
}

export interface ListedEntry {
  name: string;
  cid: CID;
  type: UnixFSEntry['type'];
  size: bigint;
}

/** Children resolved at once for a listing: each is one block read. */
const LISTING_PARALLEL = 16;

/**
 * A directory's entries (a sharded one's too), sorted by name, with their
 * types and file sizes. Listings are not a measured hot path, so the
 * children are named by @helia/unixfs's `ls` (the product's UnixFS
 * library), loaded on the first listing: its index loads every command and
 * libp2p's utilities, 180 modules a start of the service does not need.
 * Each child is typed by the exporter, which also types what `stat`
 * refuses (an identity CID, a dag-cbor node).
 */
export async function listDirectory(blockstore: Blockstore, entry: PathEntry, signal?: AbortSignal): Promise<ListedEntry[]> {
  if (entry.type !== 'directory') return [];
  const { unixfs } = await import('@helia/unixfs');
  const links: Array<{ name: string; cid: CID }> = [];
  for await (const child of unixfs({ blockstore }).ls(entry.cid, { signal })) links.push({ name: child.name, cid: child.cid });
  const out: ListedEntry[] = [];
  for (let i = 0; i < links.length; i += LISTING_PARALLEL) {
    const batch = links.slice(i, i + LISTING_PARALLEL);
    const { exporter } = await unixfsExporter();
    const entries = await Promise.all(batch.map((l) => exporter(l.cid, blockstore, { signal })));
    entries.forEach((e, j) => out.push({ name: batch[j]!.name, cid: batch[j]!.cid, type: e.type, size: e.size }));
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
