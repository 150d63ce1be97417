/**
 * Reads a file's bytes (or a range of them) back out of the blockstore,
 * from its CID or from the entry a path walk resolved (paths.ts), whose
 * block is then not read again: a small file, its data inline in that one
 * block, is answered from memory.
 */
import type { Blockstore } from 'interface-blockstore';
import { CID } from 'multiformats/cid';
import { blockBuffers, lendable, type BufferPool } from '../buffer-pool.js';
import { readEntry, type PathEntry } from './paths.js';
import { decodeFileNode, linkCid, MalformedBlockError, UnixfsType, type FileNode } from './unixfs-file.js';

export interface FileEntry {
  /** File length in bytes. */
  size: number;
  /**
   * A lazy stream of `[offset, offset+length)`, read as it is consumed. It
   * is lendable (see buffer-pool.ts): a writer that gives each chunk back
   * once written gets the chunks in reused memory instead.
   */
  stream(range?: { offset: number; length: number }): ReadableStream<Uint8Array>;
}

export class NotAFileError extends Error {
  override name = 'NotAFileError';
}

/** Blocks fetched ahead of the reader, per level of the DAG (each up to 256 KiB). */
const READ_AHEAD = 4;

const DAG_PB = 0x70;
const RAW = 0x55;
const IDENTITY = 0x00;

/** The root of a file as resolved, in the shape the walk reads; NotAFileError for anything else. */
function rootNode(entry: PathEntry): FileNode {
  if (entry.type !== 'file' && entry.type !== 'raw' && entry.type !== 'identity')
    throw new NotAFileError(`${entry.cid} is a ${entry.type}`);
  if (entry.bytes) return { data: entry.bytes, links: [] };
  const node = entry.dagPb;
  if (!node || node.unixfs.type === UnixfsType.directory || node.unixfs.type === UnixfsType.hamtShard)
    throw new NotAFileError(`${entry.cid} is not a file`);
  const sizes = node.unixfs.blockSizes;
  const count = node.view.starts.length;
  if (count !== sizes.length) throw new MalformedBlockError(`${entry.cid}: links and block sizes differ`);
  const links = new Array<{ cid: CID; fileSize: number }>(count);
  for (let i = 0; i < count; i++) links[i] = { cid: linkCid(node.view, i), fileSize: sizes[i]! };
  return { data: node.unixfs.data, links };
}

/**
 * A block below the root: read whole (a single piece from the file
 * blockstore is not copied) and decoded. With `pool`, the blockstore may
 * read it into the pool's memory (the file blockstore does): a leaf's data
 * is then lent memory, for the reader to give back; a parent is copied out
 * of it (it outlives the chunks below it, and its links are views of its
 * bytes) and the memory given back at once.
 */
async function childNode(blockstore: Blockstore, cid: CID, signal?: AbortSignal, pool?: BufferPool): Promise<FileNode> {
  if (cid.multihash.code === IDENTITY) return { data: cid.multihash.digest, links: [] };
  const pieces: Uint8Array[] = [];
  const options = pool ? { signal, allocate: pool.take } : { signal };
  for await (const piece of blockstore.get(cid, options)) pieces.push(piece);
  const bytes = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
  if (cid.code === RAW) return { data: bytes, links: [] };
  if (cid.code === DAG_PB) {
    const node = decodeFileNode(bytes);
    if (!pool || node.links.length === 0 || !pool.lends(bytes)) return node;
    const own = decodeFileNode(Uint8Array.from(bytes));
    pool.give(bytes);
    return own;
  }
  throw new NotAFileError(`${cid}: a block of codec 0x${cid.code.toString(16)} inside a file`);
}

/**
 * The bytes of `[start, end)` of the file under `node` (which begins at
 * `position` in the file), depth first. Unlike the exporter's own `content()`,
 * which pushes blocks into an unbounded queue as fast as the disk gives
 * them (a slow client then holds the whole file in memory), this reads only
 * as the consumer pulls, a few blocks ahead.
 */
async function* walk(
  blockstore: Blockstore,
  node: FileNode,
  position: number,
  start: number,
  end: number,
  signal?: AbortSignal,
  pool?: BufferPool,
): AsyncGenerator<Uint8Array> {
  const data = node.data;
  if (data && data.length > 0) {
    const from = Math.max(0, start - position);
    const to = Math.min(data.length, end - position);
    if (to > from) yield data.subarray(from, to);
    position += data.length;
  }
  const wanted: Array<{ cid: CID; at: number; size: number }> = [];
  for (const link of node.links) {
    if (position >= end) break;
    if (position + link.fileSize > start) wanted.push({ cid: link.cid, at: position, size: link.fileSize });
    position += link.fileSize;
  }
  const pending: Array<Promise<FileNode>> = [];
  let next = 0;
  const fill = () => {
    while (next < wanted.length && pending.length < READ_AHEAD) {
      const p = childNode(blockstore, wanted[next++]!.cid, signal, pool);
      p.catch(() => {}); // awaited below in order; an early failure must not be unhandled
      pending.push(p);
    }
  };
  for (const child of wanted) {
    fill();
    const childNodeValue = await pending.shift()!;
    fill();
    let read = 0;
    for await (const chunk of walk(blockstore, childNodeValue, child.at, start, end, signal, pool)) {
      read += chunk.byteLength;
      yield chunk;
    }
    const expected = Math.min(child.at + child.size, end) - Math.max(child.at, start);
    if (read !== expected) throw new MalformedBlockError(`${child.cid}: read ${read} bytes where the parent promises ${expected}`);
  }
}

/**
 * A file by its CID, or by the entry resolvePath gave (its block already
 * read); throws NotFoundError-like errors when blocks are missing,
 * NotAFileError for a directory or non-UnixFS data.
 */
export async function openFile(blockstore: Blockstore, target: CID | PathEntry, signal?: AbortSignal): Promise<FileEntry> {
  const cid = CID.asCID(target);
  const entry = cid ? await readEntry(blockstore, cid, signal) : (target as PathEntry);
  const size = Number(entry.size);
  const root = rootNode(entry);
  return {
    size,
    stream(range) {
      const start = range ? Math.min(range.offset, size) : 0;
      const end = range ? Math.min(start + range.length, size) : size;
      let iterator: AsyncIterator<Uint8Array> | undefined;
      const stream = new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            iterator ??= walk(blockstore, root, 0, start, end, signal)[Symbol.asyncIterator]();
            try {
              const next = await iterator.next();
              if (next.done) controller.close();
              else controller.enqueue(next.value);
            } catch (err) {
              controller.error(err);
            }
          },
          async cancel() {
            await iterator?.return?.(undefined);
          },
        },
        { highWaterMark: 0 },
      );
      return lendable(stream, () => ({
        chunks: walk(blockstore, root, 0, start, end, signal, blockBuffers)[Symbol.asyncIterator](),
        give: blockBuffers.give,
      }));
    },
  };
}

/** True for the errors a blockstore throws for a block it does not hold. */
export function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; code?: string };
  return e?.name === 'NotFoundError' || e?.code === 'ERR_NOT_FOUND';
}
