/**
 * streamUpload and large uploads against a real service whose object route
 * takes at most 4 MiB a request (the Lambda route's limit): a 200 MiB stream
 * of unknown length in bounded memory, web streams, progress, and failures
 * (the source breaking, the server refusing a part, the server going away)
 * that abort the multipart upload and reject without crashing the process.
 */
import {
  AbortMultipartUploadCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { importBytes } from 'ipfs-unixfs-importer';
import { BlackHoleBlockstore } from 'blockstore-core/black-hole';
import { cidV0, cidV1, kuboImportOptions } from '../../functions/core/ipfs/cid.js';
import { BOOT, startTestService, type TestService } from '../support/service.js';
import { startChildService } from '../support/child-service.js';
import {
  CREDS,
  expectedCids,
  generatedChunks,
  generatedStream,
  MiB,
  optionsFor,
  peakMemoryGrowth,
  startProxy,
  storageFor,
} from '../support/sdk.js';
import { CairnStorageError, createStorage, type UploadProgress } from '../../packages/storage-sdk/src/node.js';

const LAMBDA_LIMIT = String(4 * MiB);
const QUIET_LAMBDA_LIMITED = { CAIRN_MAX_REQUEST_BODY: LAMBDA_LIMIT, CAIRN_LOG_LEVEL: 'error', CAIRN_GC_INTERVAL: '0' };

let service: TestService;
let s3: S3Client;
const crashes: unknown[] = [];
const onCrash = (err: unknown) => crashes.push(err);

beforeAll(async () => {
  process.on('unhandledRejection', onCrash);
  process.on('uncaughtException', onCrash);
  // Parts of 1 MiB on purpose (configured part sizes), so no least part size (S3's: s3-part-size.test.ts).
  service = await startTestService({ CAIRN_MAX_REQUEST_BODY: LAMBDA_LIMIT, CAIRN_S3_MIN_PART_SIZE: '0' });
  s3 = service.s3();
});

afterAll(async () => {
  s3.destroy();
  await service.close();
  process.off('unhandledRejection', onCrash);
  process.off('uncaughtException', onCrash);
});

afterEach(() => {
  expect(crashes).toEqual([]);
});

async function kubo(bytes: Uint8Array): Promise<{ hash: string; hashV0: string }> {
  const { cid } = await importBytes(bytes, new BlackHoleBlockstore(), kuboImportOptions());
  return { hash: cidV1(cid), hashV0: cidV0(cid) };
}

async function rejection(p: Promise<unknown>): Promise<CairnStorageError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof CairnStorageError)) throw new Error(`expected a CairnStorageError, got ${String(err)}`);
  return err;
}

async function openUploads(client: S3Client, bucket = 'default-bucket') {
  return (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? [];
}

async function exists(client: S3Client, key: string): Promise<boolean> {
  return client.send(new HeadObjectCommand({ Bucket: 'default-bucket', Key: key })).then(
    () => true,
    () => false,
  );
}

test('the service refuses a single request over 4 MiB, as the Lambda route does', async () => {
  const err = await s3
    .send(new PutObjectCommand({ Bucket: 'default-bucket', Key: 'too-big.bin', Body: randomBytes(4 * MiB + 1) }))
    .catch((e: Error) => e);
  expect((err as Error).name).toBe('EntityTooLarge');
});

test('a 200 MiB stream of unknown length, in 4 MiB parts, with memory bounded well under its size', async () => {
  // The service runs in its own process here, so the memory measured is the SDK's (and the generator's).
  const server = await startChildService({ env: QUIET_LAMBDA_LIMITED, captureLog: true });
  const publicDomain = `storage.localhost:${server.env.CAIRN_GATEWAY_PORT}`;
  const storage = createStorage({ endpoint: server.endpoints.s3, gatewayUrl: server.endpoints.gateway, publicDomain });
  const client = new S3Client({ endpoint: server.endpoints.s3, region: 'us-east-1', forcePathStyle: true, credentials: BOOT });
  try {
    const size = 200 * MiB;
    const events: UploadProgress[] = [];
    const { result, rss, arrayBuffers, liveArrayBuffers } = await peakMemoryGrowth(() =>
      storage.streamUpload({
        ...CREDS,
        key: 'big/200MiB.bin',
        stream: generatedStream('two hundred', size),
        httpUploadProgressCallback: (e) => events.push(e),
      }),
    );
    console.log(
      `200 MiB streamUpload: peak growth of the test process: rss ${(rss / MiB).toFixed(1)} MiB, arrayBuffers ${(arrayBuffers / MiB).toFixed(1)} MiB, live after a collection ${(liveArrayBuffers / MiB).toFixed(1)} MiB`,
    );
    expect(result).toEqual({
      ...(await expectedCids('two hundred', size)),
      key: 'big/200MiB.bin',
      bucket: 'default-bucket',
      publicUrl: `http://default-bucket.${publicDomain}/big/200MiB.bin`,
    });
    const head = await client.send(new HeadObjectCommand({ Bucket: 'default-bucket', Key: 'big/200MiB.bin' }));
    expect(head.ContentLength).toBe(size);
    expect(head.ETag).toMatch(/-50"$/); // 50 parts of 4 MiB
    // What a collection leaves: the parts in flight (4 at once, 4 MiB each, with the HTTP layer's
    // copies) and the one being filled; 16-48 MiB measured. An SDK that buffered the stream would hold 200 MiB.
    expect(liveArrayBuffers).toBeLessThan(64 * MiB);
    // Garbage included (the generator's chunks), it stays well under the stream's size.
    expect(arrayBuffers).toBeLessThan(96 * MiB);
    expect(rss).toBeLessThan(128 * MiB);
    // Progress: loaded only grows; the total is unknown until the stream ends.
    expect(events.length).toBeGreaterThan(50);
    for (let i = 1; i < events.length; i++) expect(events[i]!.loaded).toBeGreaterThanOrEqual(events[i - 1]!.loaded);
    expect(events.slice(0, -1).every((e) => e.total === undefined)).toBe(true);
    expect(events.at(-1)).toEqual({ loaded: size, total: size });
    expect(await openUploads(client)).toEqual([]);
  } finally {
    storage.destroy();
    client.destroy();
    await server.stop();
  }
}, 150000);

test('a web ReadableStream, with configured part size and concurrency; a short stream is one PutObject', async () => {
  const proxy = await startProxy(service.endpoints.s3);
  const storage = createStorage(optionsFor(service, { endpoint: proxy.url, partSize: 1 * MiB, concurrency: 2 }));
  try {
    const size = 5 * MiB + 123;
    const chunks = generatedChunks('web', size, 100000);
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(new Uint8Array(next.value));
      },
    });
    const result = await storage.streamUpload({
      ...CREDS,
      key: 'web.bin',
      bucket: 'default-bucket',
      stream,
      ContentType: 'application/x-test',
    });
    expect(result).toMatchObject(await expectedCids('web', size));
    const parts = proxy.requests.filter((r) => r.startsWith('PUT ') && r.includes('partNumber='));
    expect(parts).toHaveLength(6);
    const posts = proxy.requests.filter((r) => r.startsWith('POST '));
    expect(posts).toEqual([expect.stringMatching(/\?uploads\b/), expect.stringMatching(/\?uploadId=/)]);
    expect((await s3.send(new HeadObjectCommand({ Bucket: 'default-bucket', Key: 'web.bin' }))).ContentType).toBe('application/x-test');

    proxy.requests.length = 0;
    const small = await storage.streamUpload({
      ...CREDS,
      key: 'small.txt',
      bucket: 'default-bucket',
      stream: new Blob(['just this']).stream(),
    });
    expect(small).toMatchObject(await kubo(Buffer.from('just this')));
    expect(proxy.requests.map((r) => r.split('?')[0])).toEqual(['PUT /default-bucket/small.txt']);
  } finally {
    storage.destroy();
    await proxy.close();
  }
});

test('upload of data larger than a part goes multipart, so any size passes the 4 MiB route; progress has the total', async () => {
  const storage = storageFor(service);
  try {
    const data = randomBytes(9 * MiB + 7);
    const events: UploadProgress[] = [];
    const result = await storage.upload({ ...CREDS, key: 'nine.bin', data, httpUploadProgressCallback: (e) => events.push(e) });
    expect(result).toMatchObject(await kubo(data));
    expect(events.every((e) => e.total === data.length)).toBe(true);
    expect(events.at(-1)).toEqual({ loaded: data.length, total: data.length });
    expect(events.length).toBeGreaterThan(10);
    const got = await storage.get({ ...CREDS, key: 'nine.bin' });
    expect(got.data.equals(data)).toBe(true);
  } finally {
    storage.destroy();
  }
});

test('a source that breaks mid-upload: the upload is aborted and the promise rejects', async () => {
  const storage = createStorage(optionsFor(service, { partSize: 1 * MiB }));
  try {
    const err = await rejection(
      storage.streamUpload({ ...CREDS, key: 'broken-source.bin', stream: generatedStream('broken', 20 * MiB, { failAfter: 5 * MiB }) }),
    );
    expect(err.code).toBe('SourceStreamError');
    expect(err.message).toContain('the source broke');
    expect(err.uploadId).toEqual(expect.any(String));
    expect(err.aborted).toBe(true);
    expect(await openUploads(s3)).toEqual([]);
    expect(await exists(s3, 'broken-source.bin')).toBe(false);
  } finally {
    storage.destroy();
  }
});

test("the server refusing a part: the parts in flight stop, the upload is aborted, the promise rejects with the server's code", async () => {
  const proxy = await startProxy(service.endpoints.s3, (method, url) =>
    method === 'PUT' && url.searchParams.get('partNumber') === '3'
      ? { status: 403, code: 'AccessDenied', message: 'no more parts today' }
      : undefined,
  );
  const storage = createStorage(optionsFor(service, { endpoint: proxy.url, partSize: 1 * MiB, concurrency: 2 }));
  try {
    const stream = generatedStream('refused', 32 * MiB);
    const err = await rejection(storage.streamUpload({ ...CREDS, key: 'refused.bin', stream }));
    expect([err.code, err.status, err.aborted]).toEqual(['AccessDenied', 403, true]);
    expect(err.message).toContain('part 3');
    expect(stream.destroyed).toBe(true);
    // Reading stopped soon after the failure: nowhere near the 32 parts.
    expect(proxy.count((m, url) => m === 'PUT' && url.searchParams.has('partNumber'))).toBeLessThan(8);
    expect(proxy.count((m, url) => m === 'DELETE' && url.searchParams.has('uploadId'))).toBe(1);
    expect(await openUploads(s3)).toEqual([]);
    expect(await exists(s3, 'refused.bin')).toBe(false);
  } finally {
    storage.destroy();
    await proxy.close();
  }
});

test('the server killed mid-upload: the promise rejects (no crash), with the upload id to abort once it is back', async () => {
  let server = await startChildService({ env: QUIET_LAMBDA_LIMITED, captureLog: true });
  const storage = createStorage({
    endpoint: server.endpoints.s3,
    gatewayUrl: server.endpoints.gateway,
    partSize: 1 * MiB,
    clientConfig: { maxAttempts: 2 },
  });
  let client: S3Client | undefined;
  try {
    let killing: Promise<void> | undefined;
    const err = await rejection(
      storage.streamUpload({
        ...CREDS,
        key: 'killed.bin',
        stream: generatedStream('killed', 64 * MiB),
        httpUploadProgressCallback: (e) => {
          if (e.loaded >= 6 * MiB) killing ??= server.kill();
        },
      }),
    );
    await killing;
    expect(err.code).toBe('NetworkError');
    expect(err.status).toBeUndefined();
    expect(err.aborted).toBe(false);
    expect(err.uploadId).toEqual(expect.any(String));
    expect(err.message).toContain(err.uploadId!);
    // Back up on the same data: the upload the SDK could not abort is there, under the id the error gave.
    server = await server.restart();
    client = new S3Client({ endpoint: server.endpoints.s3, region: 'us-east-1', forcePathStyle: true, credentials: BOOT });
    expect((await openUploads(client)).map((u) => u.UploadId)).toEqual([err.uploadId]);
    await client.send(new AbortMultipartUploadCommand({ Bucket: 'default-bucket', Key: 'killed.bin', UploadId: err.uploadId }));
    expect(await openUploads(client)).toEqual([]);
    expect(await exists(client, 'killed.bin')).toBe(false);
  } finally {
    storage.destroy();
    client?.destroy();
    await server.stop();
  }
}, 120000);
