/**
 * Paths inside a UnixFS DAG: a request path made safe (decoded once, `.`,
 * `..` and empty segments resolved lexically so nothing climbs above the
 * root), and walked from a root CID segment by segment, HAMT-sharded
 * directories included, keeping the CID of every step (`X-Ipfs-Roots`).
 */
import { exporter, walkPath, type UnixFSEntry } from 'ipfs-unixfs-exporter';
import type { Blockstore } from 'interface-blockstore';
import type { CID } from 'multiformats/cid';

export interface ContentPath {
  /** Decoded segments, none empty, `.` or `..`. */
  segments: string[];
  /** Whether the request ended in `/` (a directory asked for as one). */
  trailingSlash: boolean;
}

export class BadPathError extends Error {
  override name = 'BadPathError';
}

/**
 * Decodes a raw (percent-encoded) path. `%2F` becomes a separator like `/`
 * (a UnixFS name cannot hold one), and `..` (`%2e%2e` too) stops at the
 * root, as a browser resolves it. NUL and malformed escapes are refused.
 */
export function contentPath(rawPath: string): ContentPath {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    throw new BadPathError('the path is not valid percent-encoded UTF-8');
  }
  if (decoded.includes('\0')) throw new BadPathError('the path holds a NUL character');
  const segments: string[] = [];
  for (const part of decoded.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') segments.pop();
    else segments.push(part);
  }
  return { segments, trailingSlash: decoded.endsWith('/') || decoded.endsWith('/.') || decoded.endsWith('/..') };
}

/** The path as a URL path again, each segment percent-encoded. */
export function encodePath(segments: readonly string[], trailingSlash = false): string {
  const body = segments.map((s) => encodeURIComponent(s)).join('/');
  if (body === '') return '/';
  return `/${body}${trailingSlash ? '/' : ''}`;
}

export interface Resolved {
  entry: UnixFSEntry;
  /** The root, then the CID of each segment. */
  roots: CID[];
}

/**
 * The entry at `segments` under `root`, or undefined when the DAG has no
 * such path. A block that is missing is not a missing path: its error is
 * thrown (the caller's 404 for an unknown root, 500 for a damaged site).
 */
export async function resolvePath(blockstore: Blockstore, root: CID, segments: readonly string[], signal?: AbortSignal): Promise<Resolved | undefined> {
  // walkPath splits on `/` unless escaped; a segment cannot hold one, but may hold a `\` before the split point.
  if (segments.some((s) => s.includes('\\'))) return undefined;
  let last: { cid: CID; roots: CID[] } | undefined;
  try {
    for await (const step of walkPath([root.toString(), ...segments].join('/'), blockstore, { signal })) last = step;
  } catch (err) {
    if (isPathMissing(err)) return undefined;
    throw err;
  }
  if (!last || last.roots.length !== segments.length + 1) return undefined;
  const entry = await exporter(last.cid, blockstore, { signal });
  return { entry, roots: last.roots };
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

/** A directory's entries (a sharded one's too), sorted by name, with their types and file sizes. */
export async function listDirectory(blockstore: Blockstore, entry: UnixFSEntry, signal?: AbortSignal): Promise<ListedEntry[]> {
  if (entry.type !== 'directory') return [];
  const links: Array<{ name: string; cid: CID }> = [];
  for await (const child of entry.entries({ signal })) links.push({ name: child.name, cid: child.cid });
  const out: ListedEntry[] = [];
  for (let i = 0; i < links.length; i += LISTING_PARALLEL) {
    const batch = links.slice(i, i + LISTING_PARALLEL);
    const entries = await Promise.all(batch.map((l) => exporter(l.cid, blockstore, { signal })));
    entries.forEach((e, j) => out.push({ name: batch[j]!.name, cid: batch[j]!.cid, type: e.type, size: e.size }));
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
