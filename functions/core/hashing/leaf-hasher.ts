/**
 * Hashing an upload's leaves: each leaf block's SHA-256 (its CID) and, over
 * the file bytes the leaves carry, in order, the digests the upload is
 * checked against (MD5 for the ETag, a flexible checksum).
 *
 * Two ways, one result:
 * - inline, on the calling thread: small uploads, and Lambda, where one
 *   request has the instance to itself;
 * - on another thread (RemoteHashing, served by hash-jobs.ts): large
 *   uploads on the local server. Hashing is most of an upload's CPU (MD5
 *   alone runs at about 600 MB/s), so there the other thread computes MD5,
 *   the checksum and the payload hash of one leaf while the request thread
 *   takes in the next and computes its SHA-256: two cores instead of one. A leaf block
 *   travels there and back by transfer, not by copy.
 *   The thread is the local server's helper thread, which also runs the
 *   embedded database (a thread costs 12 MiB or more of resident memory,
 *   and the local server keeps its 1 GiB transfers under 300 MiB), or one
 *   of its own when the database is elsewhere.
 *
 * Calls to leaf() answer in the order they were made.
 */
import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { createDigest, type Digest, type DigestName } from './digests.js';

export interface LeafHash {
  /** SHA-256 of the whole block. */
  sha256: Uint8Array;
  /** The block's bytes (after a trip to the hash thread, a new view of the same memory). */
  block: Uint8Array;
}

export interface LeafHasher {
  /** Hashes the block, and adds its file bytes (`length` bytes at `offset`) to the digests. */
  leaf(block: Uint8Array, offset: number, length: number): LeafHash | Promise<LeafHash>;
  /** The digests of every leaf's file bytes, by name; call once every leaf() has answered. */
  finish(): Promise<Partial<Record<DigestName, Uint8Array>>>;
  /** Gives up (a failed upload); nothing more may be asked. */
  abort(): void;
}

const sha256 = (bytes: Uint8Array) => {
  const d = createHash('sha256').update(bytes).digest();
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
};

export function inlineLeafHasher(names: readonly DigestName[] = []): LeafHasher {
  const digests: Array<[DigestName, Digest]> = names.map((n) => [n, createDigest(n)]);
  return {
    leaf(block, offset, length) {
      if (digests.length) {
        const data = block.subarray(offset, offset + length);
        for (const [, d] of digests) d.update(data);
      }
      return { sha256: sha256(block), block };
    },
    async finish() {
      const out: Partial<Record<DigestName, Uint8Array>> = {};
      for (const [name, d] of digests) out[name] = await d.digest();
      return out;
    },
    abort() {},
  };
}

/** Messages to the hash thread and back. */
export type ToHashThread =
  | { job: number; start: DigestName[] }
  | { job: number; block: Uint8Array; offset: number; length: number }
  | { job: number; finish: true }
  | { job: number; abort: true };
export type FromHashThread =
  { job: number; block: Uint8Array } | { job: number; digests: Partial<Record<DigestName, Uint8Array>> } | { job: number; failed: string };

interface Job {
  waiting: Array<{ resolve: (value: unknown) => void; reject: (err: Error) => void }>;
}

/** A thread that serves hash jobs (hash-jobs.ts): how to post to it, and its answers and failure. */
export interface HashChannel {
  post(m: ToHashThread, transfer: ArrayBuffer[]): void;
  /** Called with each of the thread's answers. */
  onMessage(fn: (m: FromHashThread) => void): void;
  /** Called once if the thread dies. */
  onDown(fn: (err: Error) => void): void;
}

/** Hash jobs on another thread, through `channel`. */
export class RemoteHashing {
  private readonly jobs = new Map<number, Job>();
  private nextJob = 0;
  dead?: Error;

  constructor(private readonly channel: HashChannel) {
    channel.onMessage((m) => {
      const job = this.jobs.get(m.job);
      if (!job) return; // an aborted job's leftovers
      if ('failed' in m) {
        // The thread dropped the job: nothing more will come for it.
        this.jobs.delete(m.job);
        for (const w of job.waiting.splice(0)) w.reject(new Error(`hash thread: ${m.failed}`));
        return;
      }
      const next = job.waiting.shift();
      if (!next) return;
      if ('digests' in m) next.resolve(m.digests);
      else next.resolve(m.block);
    });
    channel.onDown((err) => {
      this.dead = err;
      for (const job of this.jobs.values()) for (const w of job.waiting.splice(0)) w.reject(err);
      this.jobs.clear();
    });
  }

  hasher(names: readonly DigestName[]): LeafHasher {
    // The leaves' SHA-256 (their CIDs) runs here, every digest of the file
    // bytes (MD5, a checksum, a SigV4 payload hash) there: per 256 MiB about
    // 0.2 s here and 0.8 s there, which leaves this thread, with the HTTP
    // body and the DAG to take care of besides, as busy as that one.
    const id = this.nextJob++;
    const job: Job = { waiting: [] };
    this.jobs.set(id, job);
    const post = (m: ToHashThread, transfer: ArrayBuffer[] = []) => this.channel.post(m, transfer);
    const ask = <T>(m: ToHashThread, transfer?: ArrayBuffer[]) =>
      new Promise<T>((resolve, reject) => {
        if (this.dead) return reject(this.dead);
        job.waiting.push({ resolve: resolve as (value: unknown) => void, reject });
        post(m, transfer);
      });
    if (!this.dead) post({ job: id, start: [...names] });
    return {
      leaf: (block, offset, length) => {
        const digest = sha256(block);
        // Transfer the block's memory when it is the block's alone (leaves are); copy otherwise.
        const own = block.byteOffset === 0 && block.byteLength === block.buffer.byteLength && block.buffer instanceof ArrayBuffer;
        return ask<Uint8Array>({ job: id, block, offset, length }, own ? [block.buffer as ArrayBuffer] : []).then((back) => ({
          sha256: digest,
          block: back,
        }));
      },
      finish: async () => {
        try {
          return await ask<Partial<Record<DigestName, Uint8Array>>>({ job: id, finish: true });
        } finally {
          this.jobs.delete(id);
        }
      },
      abort: () => {
        if (!this.jobs.delete(id)) return;
        for (const w of job.waiting.splice(0)) w.reject(new Error('hashing aborted'));
        if (!this.dead) post({ job: id, abort: true });
      },
    };
  }
}

/** The hash thread's young generation: it holds a few leaves at a time. */
const YOUNG_GENERATION_MB = 4;

/** A thread of its own that only hashes (hash-thread.ts); it does not keep the process alive. */
export function ownHashThread(): HashChannel {
  const worker = new Worker(new URL('./hash-thread.mjs', import.meta.url), {
    resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
  });
  let down: ((err: Error) => void) | undefined;
  const channel: HashChannel = {
    post: (m, transfer) => worker.postMessage(m, transfer),
    onMessage: (fn) => {
      worker.on('message', fn);
      // After the listener: adding a 'message' listener refs the thread again.
      worker.unref();
    },
    onDown: (fn) => (down = fn),
  };
  worker.on('error', (err) => down?.(err));
  worker.on('exit', (code) => down?.(new Error(`the hash thread exited (${code})`)));
  return channel;
}
