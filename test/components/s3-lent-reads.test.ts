/**
 * Downloads read their blocks into reused memory (buffer-pool.ts): each
 * chunk is given back only once the socket has taken it. These tests make
 * the reuse as busy as it gets, with many downloads of different objects
 * at once, slow readers (whose writes queue), ranges across blocks and a
 * client that hangs up, and check every byte: memory given back too early
 * would show up as another download's bytes.
 */
import { randomBytes } from 'node:crypto';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { blockBuffers } from '../../functions/core/buffer-pool.js';
import { startTestService, type TestService } from '../support/service.js';

const BLOCK = 256 * 1024;
let service: TestService;
const objects = new Map<string, Buffer>();

beforeAll(async () => {
  service = await startTestService();
  const s3 = service.s3();
  // Several blocks each, the last one short, every block different; larger
  // than a loopback socket's buffers, so a slow reader's writes queue.
  for (const [key, size] of [
    ['a.bin', 12 * 1024 * 1024 + 12345],
    ['b.bin', 8 * 1024 * 1024 + 1],
    ['c.bin', 5 * BLOCK - 7],
  ] as const) {
    const bytes = randomBytes(size);
    objects.set(key, bytes);
    await s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: key, Body: bytes }));
  }
}, 60_000);

afterAll(async () => {
  await service?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The whole body; a slow reader stops for a moment every few chunks, so the server's writes back up. */
async function read(body: unknown, slow: boolean): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(Buffer.from(chunk));
    if (slow && ++n % 4 === 0) await sleep(10);
  }
  return Buffer.concat(chunks);
}

test('many downloads of different objects at once, fast and slow, each get their own bytes, in reused memory', async () => {
  const s3 = service.s3();
  const before = { ...blockBuffers.stats };
  const jobs: Array<Promise<void>> = [];
  for (let i = 0; i < 12; i++) {
    const key = [...objects.keys()][i % objects.size]!;
    jobs.push(
      (async () => {
        const out = await s3.send(new GetObjectCommand({ Bucket: 'default-bucket', Key: key }));
        const got = await read(out.Body, i % 2 === 1);
        expect(got.length).toBe(objects.get(key)!.length);
        expect(got.equals(objects.get(key)!)).toBe(true);
      })(),
    );
  }
  await Promise.all(jobs);
  // The blocks were read into the pool's memory, and most reads reused memory a finished write gave back.
  const reused = blockBuffers.stats.reused - before.reused;
  const created = blockBuffers.stats.created - before.created;
  expect(reused).toBeGreaterThan(created);
  expect(reused + created).toBeGreaterThanOrEqual(12 * 5);
}, 60_000);

test('ranges that start and end inside blocks, read at once, return exactly their bytes', async () => {
  const s3 = service.s3();
  const a = objects.get('a.bin')!;
  const ranges: Array<[number, number]> = [
    [0, 0],
    [BLOCK - 1, BLOCK],
    [BLOCK - 100, 3 * BLOCK + 100],
    [5 * BLOCK + 17, 9 * BLOCK + 3],
    [a.length - 10, a.length - 1],
    [123, a.length - 1],
  ];
  await Promise.all(
    [...ranges, ...ranges].map(async ([start, end], i) => {
      const out = await s3.send(new GetObjectCommand({ Bucket: 'default-bucket', Key: 'a.bin', Range: `bytes=${start}-${end}` }));
      const got = await read(out.Body, i % 3 === 0);
      expect(got.equals(a.subarray(start, end + 1))).toBe(true);
    }),
  );
}, 60_000);

test('a file of more than 174 blocks (a tree two levels deep: its parents are read as blocks too) reads back whole beside others', async () => {
  const s3 = service.s3();
  const deep = randomBytes(180 * BLOCK + 99);
  await s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: 'deep.bin', Body: deep }));
  const all = new Map([...objects, ['deep.bin', deep]]);
  const results = await Promise.all(
    [...all.keys(), 'deep.bin'].map(async (k, i) => {
      const out = await s3.send(new GetObjectCommand({ Bucket: 'default-bucket', Key: k }));
      return (await read(out.Body, i % 2 === 0)).equals(all.get(k)!);
    }),
  );
  expect(results).toEqual([true, true, true, true, true]);
}, 60_000);

test('a client that hangs up mid-download leaves later downloads whole', async () => {
  const s3 = service.s3();
  const key = 'a.bin';
  for (let attempt = 0; attempt < 3; attempt++) {
    const controller = new AbortController();
    const out = await s3.send(new GetObjectCommand({ Bucket: 'default-bucket', Key: key }), { abortSignal: controller.signal });
    let seen = 0;
    await expect(
      (async () => {
        for await (const chunk of out.Body as AsyncIterable<Buffer>) {
          seen += chunk.length;
          if (seen > BLOCK) controller.abort();
        }
      })(),
    ).rejects.toThrow();
  }
  const results = await Promise.all(
    [...objects.keys()].map(async (k) =>
      (await read((await s3.send(new GetObjectCommand({ Bucket: 'default-bucket', Key: k }))).Body, false)).equals(objects.get(k)!),
    ),
  );
  expect(results).toEqual([true, true, true]);
}, 60_000);
