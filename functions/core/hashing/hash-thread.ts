/**
 * The hash thread (see leaf-hasher.ts): per job, the SHA-256 of each leaf
 * block it is sent, and the job's digests over the leaves' file bytes, in
 * the order they arrive. Each block goes back by transfer with its hash.
 */
import { createHash } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import { createDigest, type Digest, type DigestName } from './digests.js';
import type { FromHashThread, ToHashThread } from './leaf-hasher.js';

const port = parentPort!;
const jobs = new Map<number, Array<[DigestName, Digest]>>();
const post = (m: FromHashThread, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

port.on('message', (m: ToHashThread) => {
  if ('start' in m) {
    jobs.set(m.job, m.start.map((name) => [name, createDigest(name)]));
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
    Promise.all(digests.map(async ([name, d]) => [name, await d.digest()] as const)).then(
      (pairs) => post({ job: m.job, digests: Object.fromEntries(pairs.map(([name, d]) => [name, new Uint8Array(d)])) }),
      (err: Error) => post({ job: m.job, failed: err.message }),
    );
    return;
  }
  try {
    const { block, offset, length } = m;
    const data = block.subarray(offset, offset + length);
    for (const [, d] of digests) d.update(data);
    const h = createHash('sha256').update(block).digest();
    // A copy of the digest: the Buffer is a view of a shared pool, which a message would carry whole.
    post({ job: m.job, sha256: new Uint8Array(h), block }, [block.buffer as ArrayBuffer]);
  } catch (err) {
    jobs.delete(m.job);
    post({ job: m.job, failed: (err as Error).message });
  }
});
