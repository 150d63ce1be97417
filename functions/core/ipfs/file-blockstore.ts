/**
 * The local blockstore. Blocks of at most SMALL_BLOCK bytes (a small file's
 * only block, a file's last chunk, the DAG's parent nodes) live in a LevelDB
 * database: one write and one synchronous read, where a file costs four or
 * five thread-pool round trips (and the writes of one turn share one batch,
 * see core/group-commit.ts). Larger blocks (full 256 KiB leaves) are
 * appended to pack files indexed in that same database (pack-store.ts): a
 * 256 MiB upload writes four files, not 1024.
 *
 * Data directories from before kept every block as a file in
 * blockstore-fs's layout (one file per block, named by the multihash in
 * base32, in a directory named by its next-to-last two characters); those
 * blocks keep reading, and deletes reach them. A FileBlockstore opened
 * without `smallBlocks` writes that layout itself: a read is one open and
 * read, a write a writeFile to a temporary name and a rename.
 *
 * A block already stored is not written again.
 *
 * Two promises the IPFS code relies on: once put() resolves the bytes are on
 * disk and the caller may reuse its buffer (`releasesBytesOnPut`), and
 * readPrefix() reads the start of a block without reading all of it. The
 * first byte of the blocks written last is remembered, so pinning a file
 * just imported (which reads one byte per block to learn whether it has
 * links) does not read them again.
 */
import fs from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { FsBlockstore } from 'blockstore-fs';
import { base32upper } from 'multiformats/bases/base32';
import { CID } from 'multiformats/cid';
import { groupCommits, WritesInFlight, type GroupCommitLevel } from '../group-commit.js';
import { PackStore, PACK_KEY_PREFIX, type Allocate, type PackIndexDb } from './pack-store.js';

type AbortOptions = { signal?: AbortSignal };

const EXTENSION = '.data';

/** blockstore-fs's default NextToLast sharding, spelled out so both classes share one instance. */
class NextToLastSharding {
  readonly extension = EXTENSION;
  encode(cid: CID): { dir: string; file: string } {
    const name = base32upper.encoder.encode(cid.multihash.bytes);
    return { dir: name.slice(-2), file: `${name}${EXTENSION}` };
  }
  decode(path: string): CID {
    let name = basename(path);
    if (name.endsWith(EXTENSION)) name = name.slice(0, -EXTENSION.length);
    return CID.decode(base32upper.decoder.decode(name));
  }
}

class BlockNotFoundError extends Error {
  override name = 'NotFoundError';
}

let temporaries = 0;

/** A block file's usual most: a full 256 KiB leaf with its dag-pb and UnixFS framing. */
const USUAL_BLOCK_MAX = 256 * 1024 + 64;

/**
 * A whole block file: open, one read, close (readFile adds an fstat, and
 * the FileHandle API an object per file). A file longer than the first read
 * is read on to its end.
 */
function readBlockFile(file: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    fs.open(file, 'r', (err, fd) => {
      if (err) return reject(err);
      const finish = (error: Error | null, bytes?: Buffer) => {
        fs.close(fd, () => {});
        if (error) reject(error);
        else resolve(bytes!);
      };
      const buffer = Buffer.allocUnsafe(USUAL_BLOCK_MAX);
      fs.read(fd, buffer, 0, buffer.length, 0, (readErr, n) => {
        if (readErr) return finish(readErr);
        if (n < buffer.length) return finish(null, buffer.subarray(0, n));
        // Longer than usual: read the rest through readFile's own loop.
        readFile(file).then((all) => finish(null, all), (e: Error) => finish(e));
      });
    });
  });
}

/** Whether a blockstore-fs directory holds any block file (any shard directory with an entry). */
async function hasBlockFiles(dir: string): Promise<boolean> {
  const shards = await readdir(dir).catch(() => [] as string[]);
  for (const shard of shards) {
    const entries = await readdir(join(dir, shard)).catch(() => [] as string[]);
    if (entries.length) return true;
  }
  return false;
}

function fileExists(file: string): Promise<boolean> {
  return new Promise((resolve) => fs.access(file, (err) => resolve(!err)));
}

/** How many recently written blocks' first bytes are remembered. */
const RECENT_HEADS = 4096;

/** The largest block kept in the small-block database (full 256 KiB leaves stay files). */
export const SMALL_BLOCK = 64 * 1024;

/** LevelDB's caches, smaller than its defaults (8 MiB block cache, 4 MiB write buffer): the server's memory budget is shared. */
export const LEVEL_MEMORY = { cacheSize: 2 * 1024 * 1024, writeBufferSize: 1024 * 1024 };

/** The part of classic-level this store uses. */
interface SmallBlockDb {
  status: string;
  open(): Promise<void>;
  close(): Promise<void>;
  put(key: string, value: Uint8Array): Promise<void>;
  del(key: string): Promise<void>;
  getSync(key: string): Uint8Array | undefined;
  keys(options: { lt: string }): AsyncIterable<string>;
  iterator(options: { gt: string; lt: string }): AsyncIterable<[string, Uint8Array]>;
}

export class FileBlockstore extends FsBlockstore {
  /** put() keeps no reference to the bytes once it resolves. */
  readonly releasesBytesOnPut = true;
  private readonly layout: NextToLastSharding;
  private readonly shards = new Set<string>();
  /** Block key -> first byte (-1: empty block) of recently written blocks. */
  private readonly heads = new Map<string, number>();

  private small?: SmallBlockDb;
  /** Small blocks being written. */
  private readonly writingSmall = new WritesInFlight();
  private packs?: PackStore;
  /** Whether the directory holds blocks written as files (by this store without `smallBlocks`, or by earlier versions). */
  private files = true;

  /**
   * `smallBlocks`: where the small-block database (and the pack index) lives;
   * `packs`: the pack files' directory (default: `packs` beside `location`);
   * `packBytes`: a pack's size. Without `smallBlocks` every block is a file.
   */
  constructor(
    location: string,
    private readonly options: { smallBlocks?: string; packs?: string; packBytes?: number } = {},
  ) {
    const layout = new NextToLastSharding();
    super(location, { shardingStrategy: layout });
    this.layout = layout;
  }

  override async open(): Promise<void> {
    await super.open();
    if (this.options.smallBlocks && !this.small) {
      const { ClassicLevel } = await import('classic-level');
      const db = new ClassicLevel<string, Uint8Array>(this.options.smallBlocks, { keyEncoding: 'utf8', valueEncoding: 'view', ...LEVEL_MEMORY });
      await db.open();
      groupCommits(db as unknown as GroupCommitLevel);
      this.small = db as unknown as SmallBlockDb;
      const packs = new PackStore(this.options.packs ?? join(this.path, '..', 'packs'), db as unknown as PackIndexDb, this.options.packBytes);
      try {
        await packs.open();
      } catch (err) {
        await db.close();
        this.small = undefined;
        throw err;
      }
      this.packs = packs;
      this.files = await hasBlockFiles(this.path);
    }
  }

  override async close(): Promise<void> {
    await this.packs?.close();
    this.packs = undefined;
    await this.small?.close();
    this.small = undefined;
    await super.close();
  }

  /** The pack store (for tests and tools). */
  get packStore(): PackStore | undefined {
    return this.packs;
  }

  /** A block's name in the small-block database and the pack index: its multihash in base32. */
  private nameOf(cid: CID): string {
    return PackStore.nameOf(cid.multihash.bytes);
  }

  /** The block from the small-block database, if it is there. */
  private smallGet(name: string): Uint8Array | undefined {
    if (!this.small || this.small.status !== 'open') return undefined;
    return this.small.getSync(name) ?? undefined;
  }

  private remember(key: string, bytes: Uint8Array): void {
    this.heads.delete(key);
    this.heads.set(key, bytes.length ? bytes[0]! : -1);
    if (this.heads.size > RECENT_HEADS) this.heads.delete(this.heads.keys().next().value!);
  }

  private locate(cid: CID): { dir: string; file: string } {
    const { dir, file } = this.layout.encode(cid);
    const shard = join(this.path, dir);
    return { dir: shard, file: join(shard, file) };
  }

  override async put(key: CID, val: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>, options?: AbortOptions): Promise<CID> {
    if (!(val instanceof Uint8Array)) return super.put(key, val, options);
    options?.signal?.throwIfAborted();
    const name = this.nameOf(key);
    const small = this.small;
    if (small && val.length <= SMALL_BLOCK) {
      // LevelDB copies the bytes before put() resolves (releasesBytesOnPut holds).
      await this.writingSmall.once(name, () => this.smallGet(name) !== undefined, () => small.put(name, val));
      this.remember(name, val);
      return key;
    }
    const { dir, file } = this.locate(key);
    // A block is its bytes: one already stored is not written again (as Kubo's
    // blockstore does). A block file from before counts as stored.
    if (this.files && (await fileExists(file))) {
      this.remember(name, val);
      return key;
    }
    if (this.packs) {
      await this.packs.put(name, key.multihash.bytes, val);
      this.remember(name, val);
      return key;
    }
    if (!this.shards.has(dir)) {
      await mkdir(dir, { recursive: true });
      this.shards.add(dir);
    }
    const temporary = `${file}.${process.pid}.${++temporaries}.tmp`;
    try {
      await writeFile(temporary, val);
      await rename(temporary, file);
      this.remember(name, val);
    } catch (err) {
      await rm(temporary, { force: true }).catch(() => {});
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') this.shards.delete(dir); // the shard went away; recreate next time
      throw err;
    }
    return key;
  }

  override async delete(key: CID, options?: AbortOptions): Promise<void> {
    const name = this.nameOf(key);
    this.heads.delete(name);
    if (this.small && this.smallGet(name) !== undefined) await this.small.del(name);
    await this.packs?.delete(name);
    if (this.files) await super.delete(key, options);
  }

  override async has(key: CID, options?: AbortOptions): Promise<boolean> {
    const name = this.nameOf(key);
    if (this.smallGet(name) !== undefined || this.packs?.has(name)) return true;
    return this.files && super.has(key, options);
  }

  override async *getAll(options?: AbortOptions): AsyncGenerator<{ cid: CID; bytes: AsyncGenerator<Uint8Array> }> {
    if (this.small) {
      for await (const name of this.small.keys({ lt: PACK_KEY_PREFIX })) {
        options?.signal?.throwIfAborted();
        const cid = CID.decode(base32upper.decoder.decode(name));
        const bytes = this.smallGet(name);
        if (bytes) yield { cid, bytes: (async function* () { yield bytes; })() };
      }
    }
    if (this.packs) {
      for await (const multihash of this.packs.multihashes()) {
        options?.signal?.throwIfAborted();
        const cid = CID.decode(multihash);
        const get = () => this.get(cid, options);
        yield { cid, bytes: (async function* () { yield* get(); })() };
      }
    }
    if (this.files) yield* super.getAll(options) as AsyncGenerator<{ cid: CID; bytes: AsyncGenerator<Uint8Array> }>;
  }

  /**
   * `options.allocate`, if given, supplies the buffer a large block is read
   * into (a pool's: see buffer-pool.ts); small blocks come from the database.
   */
  override async *get(key: CID, options?: AbortOptions & { allocate?: Allocate }): AsyncGenerator<Uint8Array> {
    options?.signal?.throwIfAborted();
    const name = this.nameOf(key);
    const small = this.smallGet(name);
    if (small) {
      yield small;
      return;
    }
    const packed = await this.packs?.read(name, 0, undefined, options?.allocate);
    if (packed) {
      yield packed;
      return;
    }
    if (!this.files) throw new BlockNotFoundError(`block ${key} not found`);
    let bytes: Buffer;
    try {
      bytes = await readBlockFile(this.locate(key).file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlockNotFoundError(`block ${key} not found`);
      throw err;
    }
    yield bytes;
  }

  /** At most `length` bytes from the start of a block. */
  async readPrefix(key: CID, length: number, options?: AbortOptions): Promise<Uint8Array> {
    options?.signal?.throwIfAborted();
    const name = this.nameOf(key);
    const head = length === 1 ? this.heads.get(name) : undefined;
    if (head !== undefined) return head < 0 ? new Uint8Array(0) : Uint8Array.of(head);
    const small = this.smallGet(name);
    if (small) return small.subarray(0, length);
    const packed = await this.packs?.read(name, 0, length);
    if (packed) return packed;
    if (!this.files) throw new BlockNotFoundError(`block ${key} not found`);
    const { file } = this.locate(key);
    let handle;
    try {
      handle = await open(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlockNotFoundError(`block ${key} not found`);
      throw err;
    }
    try {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, 0);
      return buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }
}
