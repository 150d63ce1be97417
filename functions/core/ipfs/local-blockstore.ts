/**
 * The local blockstore. Blocks of at most SMALL_BLOCK bytes (a small file's
 * only block, a file's last chunk, the DAG's parent nodes) live in a LevelDB
 * database: one write and one synchronous read, where a file costs four or
 * five thread-pool round trips (and the writes of one turn share one batch,
 * see core/group-commit.ts). Larger blocks (full 256 KiB leaves) are
 * appended to pack files indexed in that same database (pack-store.ts): a
 * 256 MiB upload writes four files, not the 1024 a file per block would.
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
import { BaseBlockstore } from 'blockstore-core/base';
import type { Pair } from 'interface-blockstore';
import { base32upper } from 'multiformats/bases/base32';
import { CID } from 'multiformats/cid';
import { groupCommits, WritesInFlight, type GroupCommitLevel } from '../group-commit.js';
import { PackStore, PACK_KEY_PREFIX, type Allocate, type PackIndexDb } from './pack-store.js';
import { LEVEL_MEMORY } from '../level-memory.js';

type AbortOptions = { signal?: AbortSignal };

class BlockNotFoundError extends Error {
  override name = 'NotFoundError';
}

/** How many recently written blocks' first bytes are remembered. */
const RECENT_HEADS = 4096;

/** The largest block kept in the small-block database (larger ones go to packs). */
export const SMALL_BLOCK = 64 * 1024;

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

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

async function collect(val: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const part of val) parts.push(part);
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

export class PackedBlockstore extends BaseBlockstore {
  /** put() keeps no reference to the bytes once it resolves. */
  readonly releasesBytesOnPut = true;
  /** Block key -> first byte (-1: empty block) of recently written blocks. */
  private readonly heads = new Map<string, number>();
  private small?: SmallBlockDb;
  /** Small blocks being written. */
  private readonly writingSmall = new WritesInFlight();
  private packs?: PackStore;

  /**
   * `smallBlocks`: where the small-block database (and the pack index) lives;
   * `packs`: the pack files' directory; `packBytes`: a pack's size.
   */
  constructor(private readonly options: { smallBlocks: string; packs: string; packBytes?: number }) {
    super();
  }

  async open(): Promise<void> {
    if (this.small) return;
    const { ClassicLevel } = await import('classic-level');
    const db = new ClassicLevel<string, Uint8Array>(this.options.smallBlocks, {
      keyEncoding: 'utf8',
      valueEncoding: 'view',
      ...LEVEL_MEMORY,
    });
    await db.open();
    groupCommits(db as unknown as GroupCommitLevel);
    const packs = new PackStore(this.options.packs, db as unknown as PackIndexDb, this.options.packBytes);
    try {
      await packs.open();
    } catch (err) {
      await db.close();
      throw err;
    }
    this.small = db as unknown as SmallBlockDb;
    this.packs = packs;
  }

  async close(): Promise<void> {
    await this.packs?.close();
    this.packs = undefined;
    await this.small?.close();
    this.small = undefined;
  }

  /** The pack store (for tests and tools). */
  get packStore(): PackStore | undefined {
    return this.packs;
  }

  private opened(): { small: SmallBlockDb; packs: PackStore } {
    if (!this.small || !this.packs) throw new Error('the blockstore is not open');
    return { small: this.small, packs: this.packs };
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

  override async put(key: CID, val: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>, options?: AbortOptions): Promise<CID> {
    options?.signal?.throwIfAborted();
    const bytes = val instanceof Uint8Array ? val : await collect(val);
    const { small, packs } = this.opened();
    const name = this.nameOf(key);
    if (bytes.length <= SMALL_BLOCK) {
      // LevelDB copies the bytes before put() resolves (releasesBytesOnPut holds).
      await this.writingSmall.once(
        name,
        () => this.smallGet(name) !== undefined,
        () => small.put(name, bytes),
      );
    } else {
      await packs.put(name, key.multihash.bytes, bytes);
    }
    this.remember(name, bytes);
    return key;
  }

  override async delete(key: CID): Promise<void> {
    const { small, packs } = this.opened();
    const name = this.nameOf(key);
    this.heads.delete(name);
    if (this.smallGet(name) !== undefined) await small.del(name);
    await packs.delete(name);
  }

  override async has(key: CID): Promise<boolean> {
    const name = this.nameOf(key);
    return this.smallGet(name) !== undefined || (this.packs?.has(name) ?? false);
  }

  override async *getAll(options?: AbortOptions): AsyncGenerator<Pair> {
    const { small, packs } = this.opened();
    for await (const name of small.keys({ lt: PACK_KEY_PREFIX })) {
      options?.signal?.throwIfAborted();
      const bytes = this.smallGet(name);
      if (bytes) yield { cid: CID.decode(base32upper.decoder.decode(name)), bytes: once(bytes) };
    }
    for await (const multihash of packs.multihashes()) {
      options?.signal?.throwIfAborted();
      const cid = CID.decode(multihash);
      yield { cid, bytes: this.get(cid, options) };
    }
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
    if (!packed) throw new BlockNotFoundError(`block ${key} not found`);
    yield packed;
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
    if (!packed) throw new BlockNotFoundError(`block ${key} not found`);
    return packed;
  }
}
