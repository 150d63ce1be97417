/**
 * Crash safety: the local service runs as a child process (`npm start`'s
 * command), takes ~40 concurrent PutObjects of random sizes, and is killed
 * with SIGKILL while uploads are in flight. Restarted on the same data
 * directory, it must list every acknowledged object with its exact bytes,
 * and every object it lists (acknowledged or not) must return exactly the
 * bytes its CID names.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { Agent } from 'node:http';
import { Readable } from 'node:stream';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { BOOT } from '../support/service.js';
import { captureHeaders } from '../support/s3-doors.js';
import { cidsOf, md5 } from '../support/clients.js';
import { startChildService, type ChildService } from '../support/child-service.js';

const BUCKET = 'default-bucket';
const UPLOADS = 40;
/** Uploads that stop halfway and wait: they are certainly in flight when the server dies. */
const STALLED = 6;
/** Acknowledgements to wait for before the kill. */
const ACKS_BEFORE_KILL = 12;

function client(endpoint: string, agent?: Agent): S3Client {
  return new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: BOOT,
    maxAttempts: 1,
    // The SDK warns about every upload the kill cuts off; those are expected here.
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    ...(agent ? { requestHandler: { httpAgent: agent } } : {}),
  });
}

/** A body that sends half of `bytes` in 64 KiB pieces, then waits for `release` (which never comes before the kill). */
function stallingBody(bytes: Buffer, release: Promise<void>): Readable {
  let offset = 0;
  const half = Math.floor(bytes.length / 2);
  return new Readable({
    read() {
      if (offset === half) {
        void release.then(() => this.destroy());
        return;
      }
      const end = Math.min(offset + 65536, offset < half ? half : bytes.length);
      this.push(bytes.subarray(offset, end));
      offset = end;
      if (offset === bytes.length) this.push(null);
    },
  });
}

let first: ChildService | undefined;
let second: ChildService | undefined;

afterAll(async () => {
  await first?.kill();
  await second?.kill();
  // The data directory is the first service's (the second is its restart).
  await first?.stop();
});

test('SIGKILL during concurrent uploads loses no acknowledged object, and every listed object is the bytes its CID names', async () => {
  first = await startChildService({ captureLog: true });

  const bodies = new Map<string, Buffer>();
  for (let i = 0; i < UPLOADS; i++) {
    bodies.set(`crash/${String(i).padStart(2, '0')}.bin`, randomBytes(randomInt(1024, 3 * 1024 * 1024 + 1)));
  }
  const agent = new Agent({ keepAlive: true, maxSockets: UPLOADS });
  const s3 = client(first.endpoints.s3, agent);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));

  const acked = new Set<string>();
  let reachedAcks!: () => void;
  const enoughAcks = new Promise<void>((r) => (reachedAcks = r));
  const uploads = [...bodies].map(async ([key, bytes], i) => {
    const stalled = i < STALLED;
    try {
      await s3.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: key,
          Body: stalled ? stallingBody(bytes, released) : bytes,
          ContentLength: bytes.length,
        }),
      );
      acked.add(key);
      if (acked.size >= ACKS_BEFORE_KILL) reachedAcks();
    } catch {
      // Cut off by the kill: not acknowledged.
    }
  });
  // The free-running uploads may all finish before ACKS_BEFORE_KILL on a very slow machine: kill then too.
  const freeRunningDone = Promise.all(uploads.slice(STALLED));
  await Promise.race([enoughAcks, freeRunningDone]);

  await first.kill();
  release();
  await Promise.all(uploads);
  s3.destroy();
  agent.destroy();
  const ackedAtKill = new Set(acked);
  expect(ackedAtKill.size).toBeGreaterThan(0);
  expect(ackedAtKill.size).toBeLessThan(UPLOADS); // the stalled ones at least were cut off

  second = await first.restart();
  const after = client(second.endpoints.s3);
  try {
    const listed = new Map<string, { size: number; etag: string }>();
    let token: string | undefined;
    do {
      const page = await after.send(new ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken: token }));
      for (const c of page.Contents ?? []) listed.set(c.Key!, { size: c.Size!, etag: c.ETag!.replace(/"/g, '') });
      token = page.NextContinuationToken;
    } while (token);

    for (const key of ackedAtKill) expect(listed.has(key) ? key : `acknowledged but not listed: ${key}`).toBe(key);

    for (const [key, entry] of listed) {
      const sent = bodies.get(key);
      expect(sent).toBeDefined();
      const seen = captureHeaders(after);
      const got = await after.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      const bytes = Buffer.from(await got.Body!.transformToByteArray());
      const cid = seen.headers['x-service-ipfs-hash']!;
      // The bytes are the ones the CID names, recomputed here from scratch...
      expect((await cidsOf(bytes)).v1).toBe(cid);
      // ...and, whole, the bytes that were sent for that key: never a torn object.
      expect(md5(bytes)).toBe(md5(sent!));
      expect(entry).toEqual({ size: sent!.length, etag: md5(sent!) });
      // The gateway serves the same bytes under the CID.
      const byCid = await fetch(`${second.endpoints.gateway}/ipfs/${cid}`);
      expect(byCid.status).toBe(200);
      expect(md5(Buffer.from(await byCid.arrayBuffer()))).toBe(md5(sent!));
    }

    // And the restarted service takes new uploads.
    const fresh = randomBytes(4096);
    const put = await after.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'crash/after-restart.bin', Body: fresh }));
    expect(put.ETag).toBe(`"${md5(fresh)}"`);
  } finally {
    after.destroy();
  }
}, 90_000);
