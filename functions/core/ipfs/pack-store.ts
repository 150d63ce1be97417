/**
 * Large blocks (a file's full 256 KiB leaves) in append-only pack files,
 * found through an index in LevelDB: the local blockstore's home for every
 * block too big for its small-block database (see local-blockstore.ts).
 *
 * Why not a file per block, as blockstore-fs and Kubo's flatfs do: a 256 MiB
 * upload would create 1024 files, and on ext4 creating files costs far more
 * than writing their bytes, most of all soon after many were deleted (the
 * inode allocator skips recently deleted inodes; `perf` showed 0.5-1.4 s of
 * the thread pool per 256 MiB there). Here an upload's blocks are appended
 * to the current pack, one `writev` for every block queued meanwhile, and a
 * new pack file is started every PACK_BYTES.
 *
 * A pack is a sequence of records, each `[0xCA][multihash length: u8]
 * [block length: u32 BE][multihash][block]`, so a pack can be walked
 * without the index. The index maps `~<multihash in base32>` to the
 * block's pack, offset and length; it is written after the bytes are, so it
 * never names bytes not on disk, and a crash leaves at most unindexed bytes
 * at the end of a pack (every start opens a new pack, so nothing is ever
 * appended after a torn record).
 *
 * Space comes back two ways. A pack (not the one being written) whose
 * blocks are all deleted is removed. One whose live blocks fill less than
 * half of it is compacted: its live blocks are appended to the current
 * pack, each re-indexed only if its index entry is still the one copied
 * (a block deleted meanwhile stays deleted), and then the pack is removed.
 * Readers that looked a block up before it moved read the old pack through
 * a descriptor they hold, or, if the pack is already gone, look it up again.
 *
 * Each pack's size and live bytes are counted in memory, from the index at
 * start (a scan of the index, one entry per large block).
 */
import fs from 'node:fs';
import { mkdir, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { base32upper } from 'multiformats/bases/base32';
import { GroupCommit, WritesInFlight } from '../group-commit.js';

/** A pack takes no new blocks once it holds this many bytes. */
export const PACK_BYTES = 64 * 1024 * 1024;

/** Index keys start with this (above every base32 character, so the small-block keys sort before them all). */
export const PACK_KEY_PREFIX = '~';

const MAGIC = 0xca;
const HEADER = 6;
/** Descriptors of packs kept open while no read uses them. */
const IDLE_HANDLES = 16;

/** Where a block's bytes are. */
export interface Location {
  pack: number;
  /** Of the block's bytes (after its record header). */
  offset: number;
  length: number;
  /** The record's whole length, header included. */
  record: number;
}

/** The part of a (group-committed) classic-level database the index uses. */
export interface PackIndexDb {
  put(key: string, value: Uint8Array): Promise<void>;
  del(key: string): Promise<void>;
  getSync(key: string): Uint8Array | undefined;
  iterator(options: { gt: string; lt: string }): AsyncIterable<[string, Uint8Array]>;
}

class PackGoneError extends Error {
  override name = 'PackGoneError';
}

function encodeLocation(loc: Location): Uint8Array {
  const out = new Uint8Array(20);
  const view = new DataView(out.buffer);
  view.setUint32(0, loc.pack);
  view.setFloat64(4, loc.offset);
  view.setUint32(12, loc.length);
  view.setUint32(16, loc.record);
  return out;
}

function decodeLocation(bytes: Uint8Array): Location {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { pack: view.getUint32(0), offset: view.getFloat64(4), length: view.getUint32(12), record: view.getUint32(16) };
}

const sameLocation = (a: Location | undefined, b: Location) => a !== undefined && a.pack === b.pack && a.offset === b.offset;

const packName = (pack: number) => `${String(pack).padStart(8, '0')}.pack`;
const PACK_FILE = /^(\d{8})\.pack$/;

/** Where a read puts its bytes: a buffer of exactly `length` bytes. */
export type Allocate = (length: number) => Buffer;

const allocUnsafe: Allocate = (length) => Buffer.allocUnsafe(length);

function preadFull(fd: number, length: number, position: number, allocate: Allocate = allocUnsafe): Promise<Buffer> {
  const buffer = allocate(length);
  return new Promise((resolve, reject) => {
    const step = (done: number) => {
      if (done === length) return resolve(buffer);
      fs.read(fd, buffer, done, length - done, position + done, (err, n) => {
        if (err) return reject(err);
        if (n === 0) return resolve(buffer.subarray(0, done)); // end of file
        step(done + n);
      });
    };
    step(0);
  });
}

const writev = (fd: number, buffers: Uint8Array[], position: number) =>
  new Promise<number>((resolve, reject) => fs.writev(fd, buffers, position, (err, n) => (err ? reject(err) : resolve(n))));
const close = (fd: number) => new Promise<void>((resolve) => fs.close(fd, () => resolve()));

interface Handle {
  fd: Promise<number>;
  users: number;
  /** Removed: close once the last user is done. */
  gone: boolean;
}

/** One block to append; `expect`: a compaction's move, indexed only if the block is still there. */
interface Append {
  /** Its index key. */
  key: string;
  multihash: Uint8Array;
  bytes: Uint8Array;
  expect?: Location;
  /** Set by write(): resolves once the block's index entry is written. */
  indexed?: Promise<unknown>;
}

export class PackStore {
  /** Per pack: bytes in the file, and bytes of records the index still names. */
  private readonly packs = new Map<number, { size: number; live: number }>();
  private readonly handles = new Map<number, Handle>();
  /** The pack being appended to (created at the first write after start); its descriptor is a handle the writer holds. */
  private current?: { pack: number; fd: number; size: number; handle: Handle };
  private next = 1;
  /** Blocks being written (a second put of one waits for the first). */
  private readonly writing = new WritesInFlight();
  private readonly appends = new GroupCommit<Append>((ops) => this.write(ops));
  private readonly compactions = new Set<number>();
  private compacting: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly dir: string,
    private readonly index: PackIndexDb,
    private readonly packBytes = PACK_BYTES,
  ) {}

  /** Counts every pack's live bytes from the index, removes packs nothing lives in, and queues compaction of sparse ones. */
  async open(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    for (const name of await readdir(this.dir)) {
      const match = PACK_FILE.exec(name);
      if (!match) continue;
      const pack = Number(match[1]);
      this.packs.set(pack, { size: (await stat(join(this.dir, name))).size, live: 0 });
      this.next = Math.max(this.next, pack + 1);
    }
    const orphans: string[] = [];
    for await (const [key, value] of this.index.iterator({ gt: PACK_KEY_PREFIX, lt: `${PACK_KEY_PREFIX}\uffff` })) {
      const loc = decodeLocation(value);
      const counts = this.packs.get(loc.pack);
      if (counts && loc.offset + loc.length <= counts.size) counts.live += loc.record;
      else orphans.push(key); // its pack was removed by hand, or cut short: the block is gone
    }
    for (const key of orphans) await this.index.del(key);
    for (const pack of [...this.packs.keys()]) this.consider(pack);
  }

  /** Stops compacting and closes every descriptor (writes in flight are their callers' to await). */
  async close(): Promise<void> {
    this.closed = true;
    await this.compacting;
    for (const handle of this.handles.values()) void handle.fd.then(close, () => {});
    this.handles.clear();
    this.current = undefined;
  }

  /** A block's name here: its multihash in base32 (as the small-block database names blocks). */
  static nameOf(multihash: Uint8Array): string {
    return base32upper.encoder.encode(multihash);
  }

  locate(name: string): Location | undefined {
    return this.locateKey(PACK_KEY_PREFIX + name);
  }

  has(name: string): boolean {
    return this.index.getSync(PACK_KEY_PREFIX + name) !== undefined;
  }

  /** Stores a block unless it is stored (or being stored) already; resolves once it is on disk and indexed. */
  put(name: string, multihash: Uint8Array, bytes: Uint8Array): Promise<void> {
    const key = PACK_KEY_PREFIX + name;
    return this.writing.once(
      key,
      () => this.has(name),
      () => this.append({ key, multihash, bytes }),
    );
  }

  /** `length` bytes from `start` of the block (all of it by default), into a buffer from `allocate`; undefined if it is not here. */
  async read(name: string, start = 0, length?: number, allocate?: Allocate): Promise<Buffer | undefined> {
    for (let attempt = 0; ; attempt++) {
      const loc = this.locate(name);
      if (!loc) return undefined;
      const want = Math.max(0, Math.min(length ?? loc.length, loc.length - start));
      try {
        return await this.readAt(loc.pack, loc.offset + start, want, allocate);
      } catch (err) {
        // The pack went away after the lookup (the block moved or was deleted): look again, once.
        if (err instanceof PackGoneError && attempt === 0) continue;
        throw err;
      }
    }
  }

  /** Removes a block from the index; its bytes are reclaimed with its pack. */
  async delete(name: string): Promise<boolean> {
    const key = PACK_KEY_PREFIX + name;
    const loc = this.locateKey(key);
    if (!loc) return false;
    const removed = this.index.del(key); // seen by locate() from now on
    this.count(loc.pack, -loc.record);
    await removed;
    return true;
  }

  /** Every indexed block's multihash. */
  async *multihashes(): AsyncGenerator<Uint8Array> {
    for await (const [key] of this.index.iterator({ gt: PACK_KEY_PREFIX, lt: `${PACK_KEY_PREFIX}\uffff` })) {
      yield base32upper.decoder.decode(key.slice(PACK_KEY_PREFIX.length));
    }
  }

  /** Resolves once no compaction is queued or running. */
  async settled(): Promise<void> {
    while (this.compactions.size) await this.compacting;
    await this.compacting;
  }

  /** The pack files and their sizes (for tests and tools). */
  packSizes(): Map<number, number> {
    return new Map([...this.packs].map(([pack, { size }]) => [pack, size]));
  }

  private locateKey(key: string): Location | undefined {
    const value = this.index.getSync(key);
    return value ? decodeLocation(value) : undefined;
  }

  /** Resolves once the block is written and indexed. */
  private async append(op: Append): Promise<void> {
    await this.appends.commit([op]);
    await op.indexed;
  }

  private count(pack: number, bytes: number): void {
    const counts = this.packs.get(pack);
    if (!counts) return;
    counts.live += bytes;
    if (bytes < 0) this.consider(pack);
  }

  /** Removes an empty pack, or queues a sparse one for compaction (never the pack being written). */
  private consider(pack: number): void {
    if (this.closed || pack === this.current?.pack) return;
    const counts = this.packs.get(pack);
    if (!counts) return;
    if (counts.live <= 0) {
      this.remove(pack);
      return;
    }
    if (counts.live * 2 < counts.size && !this.compactions.has(pack)) {
      this.compactions.add(pack);
      this.compacting = this.compacting
        .then(() => this.compact(pack))
        .catch(() => {
          // Left as it is: a later delete or start tries again.
        })
        .finally(() => this.compactions.delete(pack));
    }
  }

  private remove(pack: number): void {
    this.packs.delete(pack);
    const handle = this.handles.get(pack);
    if (handle) {
      this.handles.delete(pack);
      handle.gone = true;
      if (handle.users === 0) void handle.fd.then(close, () => {});
    }
    void unlink(join(this.dir, packName(pack))).catch(() => {});
  }

  private acquire(pack: number): Handle {
    let handle = this.handles.get(pack);
    if (handle) {
      this.handles.delete(pack); // most recently used last
      this.handles.set(pack, handle);
    } else {
      if (!this.packs.has(pack)) throw new PackGoneError(`pack ${pack} is gone`);
      const fd = new Promise<number>((resolve, reject) =>
        fs.open(join(this.dir, packName(pack)), 'r', (err, fd) =>
          err ? reject(err.code === 'ENOENT' ? new PackGoneError(`pack ${pack} is gone`) : err) : resolve(fd),
        ),
      );
      handle = { fd, users: 0, gone: false };
      fd.catch(() => this.handles.get(pack) === handle && this.handles.delete(pack));
      this.handles.set(pack, handle);
      this.trimHandles();
    }
    handle.users++;
    return handle;
  }

  private release(handle: Handle): void {
    if (--handle.users === 0 && handle.gone) void handle.fd.then(close, () => {});
  }

  private trimHandles(): void {
    if (this.handles.size <= IDLE_HANDLES) return;
    for (const [pack, handle] of this.handles) {
      if (this.handles.size <= IDLE_HANDLES) break;
      if (handle.users > 0) continue;
      this.handles.delete(pack);
      void handle.fd.then(close, () => {});
    }
  }

  private async readAt(pack: number, position: number, length: number, allocate?: Allocate): Promise<Buffer> {
    const handle = this.acquire(pack);
    try {
      return await preadFull(await handle.fd, length, position, allocate);
    } finally {
      this.release(handle);
    }
  }

  /**
   * Appends one batch of blocks with one writev, then indexes them together.
   * The next batch's writev need not wait for the index: each block's
   * `indexed` says when its entry is written.
   */
  private async write(ops: Append[]): Promise<void> {
    const current = await this.packFor();
    const buffers: Uint8Array[] = [];
    const locations: Location[] = [];
    let at = current.size;
    for (const op of ops) {
      const header = Buffer.allocUnsafe(HEADER);
      header[0] = MAGIC;
      header[1] = op.multihash.length;
      header.writeUInt32BE(op.bytes.length, 2);
      buffers.push(header, op.multihash, op.bytes);
      const record = HEADER + op.multihash.length + op.bytes.length;
      locations.push({ pack: current.pack, offset: at + HEADER + op.multihash.length, length: op.bytes.length, record });
      at += record;
    }
    const counts = this.packs.get(current.pack)!;
    try {
      await writev(current.fd, buffers, current.size);
      counts.size = current.size = at;
    } catch (err) {
      // What reached the file is dead bytes; nothing is appended after them (the next write starts a new pack).
      counts.size = at;
      current.size = Infinity;
      throw err;
    }
    ops.forEach((op, i) => {
      const loc = locations[i]!;
      const old = op.expect;
      // A compaction's move: only if the block was neither deleted nor moved meanwhile.
      if (old && !sameLocation(this.locateKey(op.key), old)) return;
      const put = this.index.put(op.key, encodeLocation(loc)); // one LevelDB batch (group commit)
      // Only once the new entry is written may the old pack, if emptied, be removed.
      op.indexed = old ? put.then(() => this.count(old.pack, -old.record)) : put;
      counts.live += loc.record;
    });
  }

  /** The pack to append to: the current one, or a new one once it is full. */
  private async packFor(): Promise<{ pack: number; fd: number; size: number }> {
    const current = this.current;
    if (current && current.size < this.packBytes) return current;
    const pack = this.next++;
    const fd = await new Promise<number>((resolve, reject) =>
      fs.open(join(this.dir, packName(pack)), 'wx+', (err, fd) => (err ? reject(err) : resolve(fd))),
    );
    this.packs.set(pack, { size: 0, live: 0 });
    // Readers of the new pack share its descriptor; the writer holds it open until the pack is full.
    const handle: Handle = { fd: Promise.resolve(fd), users: 1, gone: false };
    this.handles.set(pack, handle);
    this.current = { pack, fd, size: 0, handle };
    if (current) {
      this.release(current.handle); // an ordinary read descriptor from now on
      this.trimHandles();
      this.consider(current.pack);
    }
    return this.current;
  }

  /** Moves a sparse pack's live blocks to the current pack, then removes it. */
  private async compact(pack: number): Promise<void> {
    const counts = this.packs.get(pack);
    if (!counts || this.closed || pack === this.current?.pack) return;
    let position = 0;
    const moves: Promise<void>[] = [];
    while (position + HEADER <= counts.size && !this.closed) {
      const header = await this.readAt(pack, position, HEADER + 255);
      if (header.length < HEADER || header[0] !== MAGIC) break; // a torn end
      const hashLength = header[1]!;
      const length = header.readUInt32BE(2);
      const record = HEADER + hashLength + length;
      if (header.length < HEADER + hashLength || position + record > counts.size) break;
      const multihash = header.subarray(HEADER, HEADER + hashLength);
      const key = PACK_KEY_PREFIX + PackStore.nameOf(multihash);
      const here: Location = { pack, offset: position + HEADER + hashLength, length, record };
      if (sameLocation(this.locateKey(key), here)) {
        const bytes = await this.readAt(pack, here.offset, length);
        moves.push(this.append({ key, multihash: Uint8Array.from(multihash), bytes, expect: here }));
        if (moves.length >= 16) await Promise.all(moves.splice(0));
      }
      position += record;
    }
    await Promise.all(moves);
    // Every live block moved (or was deleted meanwhile): count() has removed the pack.
  }
}
