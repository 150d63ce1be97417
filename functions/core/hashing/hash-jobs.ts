/**
 * The thread side of remote hashing (see leaf-hasher.ts): per job, its
 * digests over the file bytes of the leaf blocks it is sent, in the order
 * they arrive. Each block goes back by transfer once hashed. Served by the
 * local service's helper thread, beside the embedded database, or by a
 * thread of its own (hash-thread.ts).
 */
import { createDigest, type Digest, type DigestName } from './digests.js';
import type { FromHashThread, ToHashThread } from './leaf-hasher.js';

export type HashReply = (m: FromHashThread, transfer?: ArrayBuffer[]) => void;

/** One thread's hash jobs: hand it every ToHashThread message, in order. */
export function hashJobs(reply: HashReply): (m: ToHashThread) => void {
  const jobs = new Map<number, Array<[DigestName, Digest]>>();
  return (m) => {
    if ('start' in m) {
      jobs.set(
        m.job,
        m.start.map((name) => [name, createDigest(name)]),
      );
      return;
    }
    if ('abort' in m) {
      jobs.delete(m.job);
      return;
    }
    const digests = jobs.get(m.job);
    if (!digests) return;
    if ('finish' in m) {
      jobs.delete(m.job);
      Promise.all(digests.map(async ([name, d]) => [name, new Uint8Array(await d.digest())] as const)).then(
        (pairs) => reply({ job: m.job, digests: Object.fromEntries(pairs) }),
        (err: Error) => reply({ job: m.job, failed: err.message }),
      );
      return;
    }
    try {
      const { block, offset, length } = m;
      const data = block.subarray(offset, offset + length);
      for (const [, d] of digests) d.update(data);
      reply({ job: m.job, block }, [block.buffer as ArrayBuffer]);
    } catch (err) {
      jobs.delete(m.job);
      reply({ job: m.job, failed: (err as Error).message });
    }
  };
}
