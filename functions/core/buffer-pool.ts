/**
 * Memory lent out and given back: the read buffers of file blocks streamed
 * to clients, and the protocol a response body uses to lend its chunks to
 * the one writer that gives them back once written (http/node.ts).
 *
 * Why: every buffer Node allocates for a block (256 KiB) counts as external
 * memory, and V8 answers each few dozen MiB of it with a full collection of
 * the heap. A 256 MiB download read into fresh buffers started up to seven
 * of them (--trace-gc, in `npm run bench:s3`), some 0.6 s of CPU on a heap of
 * the local server's size, more than the download's own work. Read into
 * buffers that come back, a download allocates nothing after its first few
 * blocks.
 */

export class BufferPool {
  private readonly free: ArrayBuffer[] = [];
  /** Handed out by take() and not given back yet. A WeakSet: memory never given back is simply collected. */
  private readonly lent = new WeakSet<ArrayBuffer>();
  /** For tests and tools: buffers created, and takes served by a given-back one. */
  readonly stats = { created: 0, reused: 0 };

  /**
   * @param size bytes of each pooled buffer; a take() of more is not pooled
   * @param keep buffers kept for reuse at most (the rest of what comes back is left to the GC)
   */
  constructor(
    readonly size: number,
    private readonly keep: number,
  ) {}

  /** A buffer of `length` bytes: pooled memory when it fits, else a fresh buffer of its own. */
  take = (length: number): Buffer => {
    if (length > this.size) return Buffer.allocUnsafe(length);
    let memory = this.free.pop();
    if (memory) this.stats.reused++;
    else {
      memory = new ArrayBuffer(this.size);
      this.stats.created++;
    }
    this.lent.add(memory);
    return Buffer.from(memory, 0, length);
  };

  /** Whether `bytes` is a view of memory this pool has lent and not had back. */
  lends(bytes: Uint8Array): boolean {
    return this.lent.has(bytes.buffer as ArrayBuffer);
  }

  /**
   * Gives back the memory under `bytes`, a view of a buffer take() returned,
   * for the next take(). Whoever gives it back must be done with every view
   * of it, and gives it back once: a second give is ignored only until the
   * memory is lent again (after that it would hand another reader's memory
   * back). Memory the pool did not lend is ignored.
   */
  give = (bytes: Uint8Array): void => {
    const memory = bytes.buffer as ArrayBuffer;
    if (!this.lent.delete(memory)) return;
    if (this.free.length < this.keep) this.free.push(memory);
  };
}

/**
 * The read buffers of file blocks: a full leaf of a Kubo-layout file (256 KiB
 * of data in a dag-pb frame of a few bytes) fits one. Up to 32 kept: 8 MiB.
 */
export const blockBuffers = new BufferPool(256 * 1024 + 256, 32);

/** A body's chunks, lent: each one is to be given back once written, and not touched after. */
export interface LentChunks {
  chunks: AsyncIterator<Uint8Array>;
  give(chunk: Uint8Array): void;
}

const LEND = Symbol('lend');

/**
 * Marks `stream` as able to lend its chunks instead: a writer that knows
 * when a chunk is written (and so can give it back) calls lentChunks()
 * before reading the stream; any other reader reads the stream as usual.
 */
export function lendable<T extends ReadableStream<Uint8Array>>(stream: T, lend: () => LentChunks): T {
  Object.defineProperty(stream, LEND, { value: lend, configurable: true });
  return stream;
}

/** The lent chunks of a body marked lendable() and not read yet; undefined for any other body. */
export function lentChunks(body: ReadableStream<Uint8Array> | null): LentChunks | undefined {
  if (!body || body.locked) return undefined;
  const marked = body as unknown as Record<symbol, (() => LentChunks) | undefined>;
  const lend = marked[LEND];
  if (!lend) return undefined;
  Object.defineProperty(body, LEND, { value: undefined }); // lent once
  return lend();
}
