/**
 * Fleek's published storage SDK (@fleekhq/fleek-storage-js 1.0.24), unchanged,
 * against Cairn started with CAIRN_ETAG=cid: the SDK reads PutObject's and
 * CompleteMultipartUpload's ETag as the file's CID. Its endpoints are
 * constants in its CommonJS `config.js`; the test points them at Cairn
 * before the SDK is first loaded.
 */
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { startTestService, BOOT, type TestService } from '../support/service.js';
import { md5 } from '../support/clients.js';
import { bytesOf, vectorNamed } from '../support/vectors.js';

interface FleekFile {
  key?: string;
  bucket?: string;
  hash?: string | null;
  hashV0?: string;
  publicUrl?: string;
  data?: Buffer;
}
interface FleekStorage {
  upload(args: {
    apiKey: string;
    apiSecret: string;
    key: string;
    data: unknown;
    bucket?: string;
    httpUploadProgressCallback?: (e: { loaded: number; total: number }) => void;
  }): Promise<Required<Pick<FleekFile, 'hash' | 'hashV0' | 'key' | 'bucket' | 'publicUrl'>>>;
  streamUpload(args: {
    apiKey: string;
    apiSecret: string;
    key: string;
    stream: Readable;
    bucket?: string;
  }): Promise<Required<Pick<FleekFile, 'hash' | 'hashV0' | 'key' | 'bucket' | 'publicUrl'>>>;
  get(args: { apiKey: string; apiSecret: string; key: string; bucket?: string; getOptions?: string[] }): Promise<FleekFile>;
  listFiles(args: { apiKey: string; apiSecret: string; bucket?: string; prefix?: string; getOptions?: string[] }): Promise<FleekFile[]>;
  listBuckets(args: { apiKey: string; apiSecret: string }): Promise<Array<{ name: string }>>;
  deleteFile(args: { apiKey: string; apiSecret: string; key: string; bucket?: string }): Promise<{ key: string; bucket: string }>;
  getFileFromHash(args: { hash: string; getFileFromHashOptions?: string[] }): Promise<unknown>;
}

let service: TestService;
let fleek: FleekStorage;
const auth = { apiKey: BOOT.accessKeyId, apiSecret: BOOT.secretAccessKey };

const hello = vectorNamed('"hello world\\n"');
const chunk2 = vectorNamed('chacha "chunk-v0-seed" 262145 B (2 chunks)');
const big = vectorNamed('chacha "v0-seed" 174*262144+1 B (175 leaves, 2 levels)');

beforeAll(async () => {
  service = await startTestService({ CAIRN_ETAG: 'cid' });
  process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = '1';
  const require = createRequire(import.meta.url);
  const config = require('@fleekhq/fleek-storage-js/config.js') as { storageEndpoint: string; ipfsGateway: string };
  config.storageEndpoint = service.endpoints.s3;
  config.ipfsGateway = `${service.endpoints.gateway}/ipfs`;
  fleek = require('@fleekhq/fleek-storage-js') as FleekStorage;
  // A bucket whose name sorts before the default one: the SDK takes the first bucket listed as the default.
  const s3 = service.s3();
  await s3.send(new CreateBucketCommand({ Bucket: 'aaa-first-by-name' }));
  s3.destroy();
});

afterAll(async () => {
  await service?.close();
});

test('listBuckets lists the default bucket first', async () => {
  const buckets = await fleek.listBuckets(auth);
  expect(buckets).toEqual([{ name: 'default-bucket' }, { name: 'aaa-first-by-name' }]);
});

test('upload (no bucket: the default one) returns Kubo CIDs as hash and hashV0, and reports progress', async () => {
  const progress: number[] = [];
  const up = await fleek.upload({
    ...auth,
    key: 'fleek/hello.txt',
    data: bytesOf(hello),
    httpUploadProgressCallback: (e) => progress.push(e.loaded),
  });
  expect(up).toMatchObject({ hash: hello.cidV1, hashV0: hello.cidV0, key: 'fleek/hello.txt', bucket: 'default-bucket' });
  expect(up.publicUrl).toMatch(/\/default-bucket\/fleek\/hello\.txt$/); // the SDK builds Fleek's URL itself
  expect(progress.at(-1)).toBe(12);

  const two = await fleek.upload({ ...auth, key: 'fleek/chunk2.bin', data: bytesOf(chunk2), bucket: 'default-bucket' });
  expect(two).toMatchObject({ hash: chunk2.cidV1, hashV0: chunk2.cidV0 });
  const text = await fleek.upload({ ...auth, key: 'fleek/string.txt', data: 'a string body' });
  expect(text.hash).toMatch(/^bafybei/);
});

test('get returns the requested items: data, hash (by an anonymous HEAD of the public-read object), key, bucket, publicUrl', async () => {
  const file = await fleek.get({ ...auth, key: 'fleek/hello.txt', getOptions: ['data', 'hash', 'publicUrl', 'key', 'bucket'] });
  expect(Buffer.from(file.data!)).toEqual(bytesOf(hello));
  expect(file.hash).toBe(hello.cidV0);
  expect(file).toMatchObject({ key: 'fleek/hello.txt', bucket: 'default-bucket' });
  expect(file.publicUrl).toMatch(/\/default-bucket\/fleek\/hello\.txt$/);

  const onlyHash = await fleek.get({ ...auth, key: 'fleek/chunk2.bin', bucket: 'default-bucket', getOptions: ['hash'] });
  expect(onlyHash).toEqual({ hash: chunk2.cidV0 });
  const onlyData = await fleek.get({ ...auth, key: 'fleek/chunk2.bin' });
  expect(Object.keys(onlyData)).toEqual(['data']);
  expect(md5(Buffer.from(onlyData.data!))).toBe(md5(bytesOf(chunk2)));
});

test('get with hash of a private object gets null (the anonymous HEAD is refused)', async () => {
  const s3 = service.s3();
  await s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: 'private/secret.txt', Body: 'private' }));
  s3.destroy();
  const file = await fleek.get({ ...auth, key: 'private/secret.txt', getOptions: ['hash', 'data'] });
  expect(file.hash).toBeNull();
  expect(Buffer.from(file.data!).toString()).toBe('private');
});

test('listFiles lists keys, buckets and public URLs by default, and hashes when asked, with a prefix', async () => {
  const files = await fleek.listFiles({ ...auth, prefix: 'fleek/' });
  expect(files.map((f) => f.key)).toEqual(['fleek/chunk2.bin', 'fleek/hello.txt', 'fleek/string.txt']);
  for (const f of files) {
    expect(f.bucket).toBe('default-bucket');
    expect(f.publicUrl).toMatch(new RegExp(`/default-bucket/${f.key}$`));
    expect(f.hash).toBeUndefined();
  }
  const hashed = await fleek.listFiles({ ...auth, bucket: 'default-bucket', prefix: 'fleek/', getOptions: ['key', 'hash'] });
  expect(hashed.slice(0, 2)).toEqual([
    { key: 'fleek/chunk2.bin', hash: chunk2.cidV0 },
    { key: 'fleek/hello.txt', hash: hello.cidV0 },
  ]);
});

test('getFileFromHash fetches from the gateway by v0 and v1 CID, as text and as a buffer', async () => {
  expect(await fleek.getFileFromHash({ hash: hello.cidV0 })).toBe('hello world\n');
  expect(await fleek.getFileFromHash({ hash: hello.cidV1 })).toBe('hello world\n');
  const buffer = (await fleek.getFileFromHash({ hash: chunk2.cidV1, getFileFromHashOptions: ['buffer'] })) as Buffer;
  expect(md5(Buffer.from(buffer))).toBe(md5(bytesOf(chunk2)));
});

test('deleteFile deletes; the file is no longer listed or readable', async () => {
  await expect(fleek.deleteFile({ ...auth, key: 'fleek/string.txt' })).resolves.toEqual({
    key: 'fleek/string.txt',
    bucket: 'default-bucket',
  });
  const files = await fleek.listFiles({ ...auth, prefix: 'fleek/' });
  expect(files.map((f) => f.key)).toEqual(['fleek/chunk2.bin', 'fleek/hello.txt']);
  await expect(fleek.get({ ...auth, key: 'fleek/string.txt' })).rejects.toMatchObject({ code: 'NoSuchKey', statusCode: 404 });
});

test('streamUpload of a stream smaller than its 10 MiB part size (one PutObject) returns Kubo CIDs', async () => {
  const bytes = bytesOf(chunk2);
  // A byte stream: aws-sdk v2's managed upload never reads an object-mode one (Readable.from's default).
  const stream = Readable.from(
    (function* () {
      for (let i = 0; i < bytes.length; i += 10_000) yield bytes.subarray(i, i + 10_000);
    })(),
    { objectMode: false },
  );
  const up = await fleek.streamUpload({ ...auth, key: 'fleek/streamed-small.bin', stream });
  expect(up).toMatchObject({ hash: chunk2.cidV1, hashV0: chunk2.cidV0, key: 'fleek/streamed-small.bin', bucket: 'default-bucket' });
});

test("streamUpload of Kubo's 45 MiB vector (multipart: 10 MiB parts, 4 at once) returns its CIDs", async () => {
  const bytes = bytesOf(big);
  const stream = Readable.from(
    (function* () {
      for (let i = 0; i < bytes.length; i += 1 << 20) yield bytes.subarray(i, i + (1 << 20));
    })(),
    { objectMode: false },
  );
  const up = await fleek.streamUpload({ ...auth, key: 'fleek/big.bin', stream, bucket: 'default-bucket' });
  expect(up).toMatchObject({ hash: big.cidV1, hashV0: big.cidV0, key: 'fleek/big.bin', bucket: 'default-bucket' });
  const file = await fleek.get({ ...auth, key: 'fleek/big.bin', getOptions: ['hash'] });
  expect(file.hash).toBe(big.cidV0);
});
