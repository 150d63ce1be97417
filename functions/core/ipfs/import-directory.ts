/**
 * Imports a site's publish directory as one UnixFS DAG, the DAG Kubo's
 * `ipfs add -r -H` builds with its defaults (profile unixfs-v0-2015), so the
 * deploy's CID is the one anybody gets from the same files with Kubo.
 *
 * Files go through importFile (file-dag.ts: Kubo-exact, streaming, and
 * faster than ipfs-unixfs-importer); directories, HAMT shards and symlinks
 * are built here, because the importer has no symlink entries. (With
 * Kubo's options it does give the same HAMT CIDs: both match t0260.)
 * What Kubo does, and so this:
 * - a directory is a dag-pb node, UnixFS Directory, links sorted by the
 *   bytes of their names, each carrying the child's Tsize;
 * - it becomes a HAMT (boxo's hamt package: fanout 256, murmur3-64 of the
 *   name) when the sum over its links of (name bytes + CID bytes) is
 *   strictly greater than 256 KiB (boxo's HAMTShardingSize);
 * - hidden files are kept (-H), empty directories too;
 * - a symlink is a UnixFS Symlink node holding the target, never followed;
 * - no mode, no mtime.
 *
 * A site's symlink may not point out of the publish directory (absolute
 * targets, `..` that leaves it): the deploy would publish a link to
 * something it does not publish, and a build that links to the builder's
 * files is a mistake worth stopping.
 */
import fs from 'node:fs';
import { lstat, readdir, readlink, realpath, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Dirent } from 'node:fs';
import { createHash } from 'node:crypto';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { encode as encodeDagPb, type PBLink } from '@ipld/dag-pb';
import { murmur3128 } from '@multiformats/murmur3';
import type { Blockstore } from 'interface-blockstore';
import { UnixFS } from 'ipfs-unixfs';
import { CID } from 'multiformats/cid';
import * as Digest from 'multiformats/hashes/digest';
import type { LeafHasher } from '../hashing/leaf-hasher.js';
import { importFile } from './import.js';
import { taskLimit } from '../task-limit.js';

/** boxo's HAMTShardingSize: a directory whose estimated links pass it (strictly) is sharded. */
export const KUBO_SHARDING_THRESHOLD = 256 * 1024;
const SHARD_FANOUT = 256;
/** The multicodec of murmur3-x64-64, the name hash boxo's HAMT records. */
const MURMUR3_64 = 0x22n;
/** boxo takes 8 bits a level from a 64-bit hash: deeper than 8 levels it gives up. */
const MAX_SHARD_DEPTH = 8;

/** Files read at once: enough to keep the disk and the hashing busy on two cores, each holding a read buffer and a few blocks. */
const FILES_IN_FLIGHT = 8;
/** A file's read size (1 MiB reads import faster than 64 KiB ones, see the CID reference). */
const READ_SIZE = 1024 * 1024;

const SHA2_256 = 0x12;

/** The publish directory cannot be imported as it is; the message names the path. */
export class PublishDirectoryError extends Error {
  override name = 'PublishDirectoryError';
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
  }
}

export interface ImportDirectoryOptions {
  signal?: AbortSignal;
  /** A leaf hasher for each file (one that hashes on another thread, say); default: inline SHA-256. */
  leaves?: () => LeafHasher;
  /**
   * Files whose DAG is known without reading them (imported before, and
   * unchanged since): `lookup` answers it or undefined; `learn` is told
   * what each file read was imported as.
   */
  known?: {
    lookup(path: string): Promise<{ cid: CID; tsize: number; size: number } | undefined>;
    learn(path: string, made: { cid: CID; tsize: number; size: number }): Promise<void>;
  };
  /**
   * Kubo's Internal.UnixFSShardingSizeThreshold. Only for matching Kubo's
   * own tests, which force sharding with "1B"; a deploy keeps the default.
   */
  shardingThreshold?: number;
}

export interface ImportedDirectory {
  /** The root's CIDv0, what `ipfs add -r -H` prints last. */
  cid: CID;
  /** Regular files. */
  files: number;
  /** Directories, the root included. */
  directories: number;
  symlinks: number;
  /** The files' bytes. */
  bytes: number;
}

/** A directory entry as its parent links to it. */
interface Entry {
  name: string;
  nameBytes: Uint8Array;
  cid: CID;
  tsize: number;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function cidV0Of(block: Uint8Array): CID {
  const digest = createHash('sha256').update(block).digest();
  return CID.createV0(Digest.create(SHA2_256, new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength)));
}

const byNameBytes = (a: Entry, b: Entry) => Buffer.compare(a.nameBytes, b.nameBytes);

const fsOpen = promisify(fs.open);
const fsFstat = promisify(fs.fstat);
const fsRead = promisify(fs.read);
const fsClose = promisify(fs.close);

/**
 * A file's bytes in READ_SIZE pieces through one buffer (file-dag copies
 * each piece before asking for the next). Through fs's callback calls, not
 * FileHandle: for a site's thousands of small files, FileHandle's promises
 * and finalizers cost more than the reads (a third of a 2,000-file import
 * went to them and to the garbage they left). A buffer one byte larger
 * than the file reads a small file whole, and its end, in one call.
 */
async function* fileBytes(path: string, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  const fd = await fsOpen(path, 'r');
  try {
    const { size } = await fsFstat(fd);
    const buffer = Buffer.allocUnsafe(Math.min(size + 1, READ_SIZE));
    let total = 0;
    for (;;) {
      signal.throwIfAborted();
      const { bytesRead } = await fsRead(fd, buffer, 0, buffer.length, null);
      if (bytesRead === 0) return;
      total += bytesRead;
      yield buffer.subarray(0, bytesRead);
      if (bytesRead < buffer.length && total >= size) return; // the end the file had when opened; a short read before it reads on
    }
  } finally {
    await fsClose(fd);
  }
}

const inside = (root: string, path: string) => {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
};

/** A PBNode's bytes with the UnixFS data; Tsize is the block plus its links' Tsizes. */
function node(data: Uint8Array, links: PBLink[]): { block: Uint8Array; cid: CID; tsize: number } {
  const block = encodeDagPb({ Data: data, Links: links });
  return { block, cid: cidV0Of(block), tsize: links.reduce((sum, l) => sum + l.Tsize!, block.length) };
}

/** boxo's link name prefix: the slot in two upper-case hex digits. */
const SLOT_NAMES = Array.from({ length: SHARD_FANOUT }, (_, i) => i.toString(16).toUpperCase().padStart(2, '0'));

/** boxo hashes a name with murmur3-x64-128 and keeps h1, big-endian (`murmur3.New64().Sum(nil)`). */
function nameHash(nameBytes: Uint8Array): Uint8Array {
  const digest = murmur3128.encode(nameBytes);
  if (!(digest instanceof Uint8Array)) throw new Error('murmur3 answered asynchronously'); // its encode is synchronous
  return digest.subarray(0, 8);
}

export async function importDirectory(
  blockstore: Blockstore,
  dir: string,
  options: ImportDirectoryOptions = {},
): Promise<ImportedDirectory> {
  const threshold = options.shardingThreshold ?? KUBO_SHARDING_THRESHOLD;
  // The first failure stops the rest of the walk.
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const counts = { files: 0, directories: 0, symlinks: 0, bytes: 0 };
  const limit = taskLimit(FILES_IN_FLIGHT, signal);

  const root = await realpath(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') throw new PublishDirectoryError(`the publish directory ${dir} does not exist`, dir);
    throw err;
  });
  if (!(await stat(root)).isDirectory()) throw new PublishDirectoryError(`the publish directory ${dir} is not a directory`, dir);

  // Every entry's work is over before a failure is reported: nothing writes to the blockstore once the caller hears of it.
  const settle = async <T>(work: Array<Promise<T>>): Promise<T[]> => {
    for (const w of work) w.catch((err: unknown) => stop.abort(err));
    const results = await Promise.allSettled(work);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw options.signal?.aborted ? options.signal.reason : stop.signal.aborted ? stop.signal.reason : failed.reason;
    return results.map((r) => (r as PromiseFulfilledResult<T>).value);
  };

  const put = async (made: { block: Uint8Array; cid: CID; tsize: number }) => {
    await blockstore.put(made.cid, made.block, { signal });
    return made;
  };

  const importRegularFile = (path: string) =>
    limit(async () => {
      const known = await options.known?.lookup(path);
      if (known) {
        counts.files++;
        counts.bytes += known.size;
        return { cid: known.cid, tsize: known.tsize };
      }
      const hasher = options.leaves?.();
      try {
        const file = await importFile(blockstore, fileBytes(path, signal), { leaves: hasher });
        await hasher?.finish();
        counts.files++;
        counts.bytes += file.size;
        await options.known?.learn(path, { cid: file.cid, tsize: file.dagSize, size: file.size });
        return { cid: file.cid, tsize: file.dagSize };
      } catch (err) {
        hasher?.abort();
        throw err;
      }
    });

  const importSymlink = async (path: string) => {
    const target = await readlink(path, { encoding: 'buffer' });
    const shown = relative(root, path);
    if (isAbsolute(target.toString()) || !inside(root, resolve(path, '..', target.toString()))) {
      throw new PublishDirectoryError(`the symlink ${shown} points out of the publish directory (to ${target.toString()})`, path);
    }
    // Lexically inside may still lead out through another link (`up -> .`, then `x -> up/../secret`).
    const real = await realpath(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ELOOP' || err.code === 'ENOTDIR') return undefined; // dangling or a loop: stored as it is
      throw err;
    });
    if (real !== undefined && !inside(root, real)) {
      throw new PublishDirectoryError(`the symlink ${shown} leads out of the publish directory (to ${real})`, path);
    }
    counts.symlinks++;
    return put(node(new UnixFS({ type: 'symlink', data: target }).marshal(), []));
  };

  const importEntry = async (parent: string, dirent: Dirent<Buffer>): Promise<Entry> => {
    let name: string;
    try {
      name = utf8.decode(dirent.name);
    } catch {
      throw new PublishDirectoryError(`a name in ${relative(root, parent) || '.'} is not UTF-8 (${dirent.name.toString('hex')})`, parent);
    }
    const path = join(parent, name);
    let kind: 'file' | 'dir' | 'symlink' | undefined;
    if (dirent.isFile()) kind = 'file';
    else if (dirent.isDirectory()) kind = 'dir';
    else if (dirent.isSymbolicLink()) kind = 'symlink';
    else if (!dirent.isFIFO() && !dirent.isSocket() && !dirent.isBlockDevice() && !dirent.isCharacterDevice()) {
      // Some file systems do not say in readdir.
      const st = await lstat(path);
      kind = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : undefined;
    }
    let made: { cid: CID; tsize: number };
    if (kind === 'file') made = await importRegularFile(path);
    else if (kind === 'dir') made = await importDir(path);
    else if (kind === 'symlink') made = await importSymlink(path);
    else throw new PublishDirectoryError(`${relative(root, path)} is not a file, a directory or a symlink`, path);
    return { name, nameBytes: dirent.name, cid: made.cid, tsize: made.tsize };
  };

  const buildShard = async (entries: Array<Entry & { hash: Uint8Array }>, depth: number): Promise<{ cid: CID; tsize: number }> => {
    if (depth >= MAX_SHARD_DEPTH) throw new Error(`sharded directory too deep (${entries.length} names share a 64-bit hash)`);
    const slots: Array<Array<Entry & { hash: Uint8Array }> | undefined> = new Array(SHARD_FANOUT);
    for (const e of entries) (slots[e.hash[depth]!] ??= []).push(e);
    const bitfield = new Uint8Array(SHARD_FANOUT / 8);
    const links: PBLink[] = [];
    for (let slot = 0; slot < SHARD_FANOUT; slot++) {
      const inSlot = slots[slot];
      if (!inSlot) continue;
      // go-bitfield: bit i in byte (len - 1 - i/8), so the bytes read as one big-endian number.
      bitfield[bitfield.length - 1 - (slot >> 3)]! |= 1 << (slot & 7);
      if (inSlot.length === 1) {
        const e = inSlot[0]!;
        links.push({ Name: SLOT_NAMES[slot]! + e.name, Hash: e.cid, Tsize: e.tsize });
      } else {
        const child = await buildShard(inSlot, depth + 1);
        links.push({ Name: SLOT_NAMES[slot]!, Hash: child.cid, Tsize: child.tsize });
      }
    }
    // go-bitfield's Bytes() leaves out the leading zero bytes.
    const first = bitfield.findIndex((b) => b !== 0);
    const data = new UnixFS({
      type: 'hamt-sharded-directory',
      data: bitfield.subarray(first),
      fanout: BigInt(SHARD_FANOUT),
      hashType: MURMUR3_64,
    }).marshal();
    return put(node(data, links));
  };

  const importDir = async (path: string): Promise<{ cid: CID; tsize: number }> => {
    signal.throwIfAborted();
    const dirents = await readdir(path, { withFileTypes: true, encoding: 'buffer' });
    const entries = await settle(dirents.map((d) => importEntry(path, d)));
    counts.directories++;
    const estimate = entries.reduce((sum, e) => sum + e.nameBytes.length + e.cid.bytes.length, 0);
    if (estimate > threshold)
      return buildShard(
        entries.map((e) => ({ ...e, hash: nameHash(e.nameBytes) })),
        0,
      );
    entries.sort(byNameBytes);
    return put(
      node(
        new UnixFS({ type: 'directory' }).marshal(),
        entries.map((e) => ({ Name: e.name, Hash: e.cid, Tsize: e.tsize })),
      ),
    );
  };

  const { cid } = await importDir(root);
  return { cid, ...counts };
}
