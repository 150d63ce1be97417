/**
 * The local blockstore: blockstore-fs's layout (one file per block, named by
 * the multihash in base32, in a directory named by its next-to-last two
 * characters), with a faster read and write of whole blocks.
 *
 * blockstore-fs reads a block through a file ReadStream (open, a read per
 * 64 KiB, close, then a concat), and writes one with a recursive mkdir and a
 * steno Writer every time. Here a read is one readFile, and a write is a
 * writeFile to a unique temporary name and a rename (atomic, as before),
 * with each shard directory created once per process.
 *
 * Two promises the IPFS code relies on: once put() resolves the bytes are on
 * disk and the caller may reuse its buffer (`releasesBytesOnPut`), and
 * readPrefix() reads the start of a block without reading all of it. The
 * first byte of the blocks written last is remembered, so pinning a file
 * just imported (which reads one byte per block to learn whether it has
 * links) does not reopen them.
 */
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { FsBlockstore } from 'blockstore-fs';
import { base32upper } from 'multiformats/bases/base32';
import { CID } from 'multiformats/cid';

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

/** How many recently written blocks' first bytes are remembered. */
const RECENT_HEADS = 4096;

export class FileBlockstore extends FsBlockstore {
  /** put() keeps no reference to the bytes once it resolves. */
  readonly releasesBytesOnPut = true;
  private readonly layout: NextToLastSharding;
  private readonly shards = new Set<string>();
  /** File path -> first byte (-1: empty block) of recently written blocks. */
  private readonly heads = new Map<string, number>();

  constructor(location: string) {
    const layout = new NextToLastSharding();
    super(location, { shardingStrategy: layout });
    this.layout = layout;
  }

  private locate(cid: CID): { dir: string; file: string } {
    const { dir, file } = this.layout.encode(cid);
    const shard = join(this.path, dir);
    return { dir: shard, file: join(shard, file) };
  }

  override async put(key: CID, val: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>, options?: AbortOptions): Promise<CID> {
    if (!(val instanceof Uint8Array)) return super.put(key, val, options);
    options?.signal?.throwIfAborted();
    const { dir, file } = this.locate(key);
    if (!this.shards.has(dir)) {
      await mkdir(dir, { recursive: true });
      this.shards.add(dir);
    }
    const temporary = `${file}.${process.pid}.${++temporaries}.tmp`;
    try {
      await writeFile(temporary, val);
      await rename(temporary, file);
      this.heads.delete(file);
      this.heads.set(file, val.length ? val[0]! : -1);
      if (this.heads.size > RECENT_HEADS) this.heads.delete(this.heads.keys().next().value!);
    } catch (err) {
      await rm(temporary, { force: true }).catch(() => {});
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') this.shards.delete(dir); // the shard went away; recreate next time
      throw err;
    }
    return key;
  }

  override async delete(key: CID, options?: AbortOptions): Promise<void> {
    this.heads.delete(this.locate(key).file);
    await super.delete(key, options);
  }

  override async *get(key: CID, options?: AbortOptions): AsyncGenerator<Uint8Array> {
    options?.signal?.throwIfAborted();
    let bytes: Buffer;
    try {
      bytes = await readFile(this.locate(key).file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlockNotFoundError(`block ${key} not found`);
      throw err;
    }
    yield bytes;
  }

  /** At most `length` bytes from the start of a block. */
  async readPrefix(key: CID, length: number, options?: AbortOptions): Promise<Uint8Array> {
    options?.signal?.throwIfAborted();
    const { file } = this.locate(key);
    const head = length === 1 ? this.heads.get(file) : undefined;
    if (head !== undefined) return head < 0 ? new Uint8Array(0) : Uint8Array.of(head);
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
