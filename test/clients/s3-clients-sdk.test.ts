/**
 * The AWS SDKs for JavaScript against Cairn:
 * - aws-sdk v2 (path style, as Fleek's SDK and older apps use it): objects,
 *   managed upload, listings, copies, deletes, and bodies of 1 MB or more,
 *   which it sends with `Expect: 100-continue`;
 * - @aws-sdk/client-s3 v3 with its DEFAULT checksum settings, streaming a
 *   body whose length the SDK cannot measure (a generator stream; only
 *   ContentLength says how long it is, as S3 requires for a single PUT): it
 *   goes aws-chunked with a trailing CRC32, and the stored
 *   object is the decoded payload, byte-for-byte, and `aws-chunked` is not
 *   in its Content-Encoding (s3rver, by contrast, stores the framing).
 */
import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type S3V2 from 'aws-sdk/clients/s3.js';
import { startTestService, BOOT, type TestService } from '../support/service.js';
import { cidsOf, clientWorkspace, md5, multipartEtag, randomFile, type ClientWorkspace } from '../support/clients.js';
import { bytesOf, vectorNamed } from '../support/vectors.js';

let service: TestService;
let ws: ClientWorkspace;

beforeAll(async () => {
  [service, ws] = await Promise.all([startTestService(), clientWorkspace()]);
});

afterAll(async () => {
  await service?.close();
  await ws?.cleanup();
});

const hello = vectorNamed('"hello world\\n"');

describe('aws-sdk v2', () => {
  let s3: S3V2;

  beforeAll(() => {
    process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = '1';
    const S3 = createRequire(import.meta.url)('aws-sdk/clients/s3.js') as typeof S3V2;
    s3 = new S3({
      endpoint: service.endpoints.s3,
      region: 'us-east-1',
      s3ForcePathStyle: true,
      accessKeyId: BOOT.accessKeyId,
      secretAccessKey: BOOT.secretAccessKey,
      maxRetries: 0,
    });
  });

  interface Sent<T> {
    data: T;
    /** The raw response headers (how Fleek's docs read the CIDs with aws-sdk v2). */
    headers: Record<string, string>;
    requestHeaders: Record<string, string>;
  }

  /** Sends a v2 request, keeping the raw request and response headers. */
  function send<T>(request: {
    on: (...a: any[]) => any;
    promise: () => Promise<T>;
    httpRequest: { headers: Record<string, string> };
  }): Promise<Sent<T>> {
    let headers: Record<string, string> = {};
    request.on('httpHeaders', (_status: number, h: Record<string, string>) => {
      headers = h;
    });
    return request.promise().then((data) => ({ data, headers, requestHeaders: request.httpRequest.headers }));
  }

  test('putObject (SigV4, payload hash) answers the MD5 ETag and Kubo CIDs; getObject and headObject agree', async () => {
    const put = await send(
      s3.putObject({
        Bucket: 'default-bucket',
        Key: 'v2/hello.txt',
        Body: bytesOf(hello),
        ContentType: 'text/plain',
        Metadata: { via: 'v2' },
      }),
    );
    expect(put.requestHeaders.Authorization).toMatch(/^AWS4-HMAC-SHA256 /);
    expect(put.data.ETag).toBe(`"${md5(bytesOf(hello))}"`);
    expect(put.headers['x-service-ipfs-hash']).toBe(hello.cidV1);
    expect(put.headers['x-service-ipfs-hash-v0']).toBe(hello.cidV0);

    const got = await send(s3.getObject({ Bucket: 'default-bucket', Key: 'v2/hello.txt' }));
    expect(Buffer.from(got.data.Body as Buffer)).toEqual(bytesOf(hello));
    expect(got.data).toMatchObject({ ContentType: 'text/plain', Metadata: { via: 'v2' }, ETag: put.data.ETag, ContentLength: 12 });
    expect(got.headers['x-service-ipfs-hash']).toBe(hello.cidV1);

    const head = await send(s3.headObject({ Bucket: 'default-bucket', Key: 'v2/hello.txt' }));
    expect(head.data).toMatchObject({ ContentLength: 12, ETag: put.data.ETag });
    expect(head.headers['x-service-ipfs-hash-v0']).toBe(hello.cidV0);
  });

  test('bodies of 1 MB or more go with Expect: 100-continue: a Buffer and a file stream', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const put = await send(s3.putObject({ Bucket: 'default-bucket', Key: 'v2/continue.bin', Body: bytes }));
    expect(put.requestHeaders.Expect).toBe('100-continue');
    expect(put.data.ETag).toBe(`"${md5(bytes)}"`);
    expect(put.headers['x-service-ipfs-hash']).toBe((await cidsOf(bytes)).v1);

    const file = await ws.file('v2', 'file.bin');
    const fromFile = await randomFile(file, (1 << 20) + 1);
    const streamed = await send(
      s3.putObject({ Bucket: 'default-bucket', Key: 'v2/file.bin', Body: createReadStream(file), ContentLength: fromFile.length }),
    );
    expect(streamed.requestHeaders.Expect).toBe('100-continue');
    expect(streamed.data.ETag).toBe(`"${md5(fromFile)}"`);

    const back = await s3.getObject({ Bucket: 'default-bucket', Key: 'v2/continue.bin' }).promise();
    expect(md5(back.Body as Buffer)).toBe(md5(bytes));
    const chunks: Buffer[] = [];
    for await (const c of s3.getObject({ Bucket: 'default-bucket', Key: 'v2/file.bin' }).createReadStream()) chunks.push(c as Buffer);
    expect(md5(Buffer.concat(chunks))).toBe(md5(fromFile));
  });

  test('upload (managed) of a body below its part size is one PutObject, with progress', async () => {
    const bytes = randomBytes(200_000);
    const progress: number[] = [];
    const up = s3.upload({ Bucket: 'default-bucket', Key: 'v2/managed-small.bin', Body: bytes, ContentType: 'application/x-small' });
    up.on('httpUploadProgress', (p) => progress.push(p.loaded));
    const done = await up.promise();
    expect(done.ETag).toBe(`"${md5(bytes)}"`);
    expect(done).toMatchObject({ Bucket: 'default-bucket', Key: 'v2/managed-small.bin' });
    expect(progress.at(-1)).toBe(bytes.length);
    const head = await s3.headObject({ Bucket: 'default-bucket', Key: 'v2/managed-small.bin' }).promise();
    expect(head).toMatchObject({ ContentType: 'application/x-small', ContentLength: bytes.length });
  });

  test('listObjectsV2 (prefix, delimiter, pages), copyObject, deleteObject', async () => {
    for (const k of ['v2/list/a', 'v2/list/b/1', 'v2/list/c']) await s3.putObject({ Bucket: 'default-bucket', Key: k, Body: k }).promise();
    const grouped = await s3.listObjectsV2({ Bucket: 'default-bucket', Prefix: 'v2/list/', Delimiter: '/' }).promise();
    expect(grouped.Contents!.map((c) => c.Key)).toEqual(['v2/list/a', 'v2/list/c']);
    expect(grouped.CommonPrefixes).toEqual([{ Prefix: 'v2/list/b/' }]);
    expect(grouped.Contents![0]).toMatchObject({ ETag: `"${md5('v2/list/a')}"`, Size: 9, StorageClass: 'STANDARD' });

    const first = await s3.listObjectsV2({ Bucket: 'default-bucket', Prefix: 'v2/list/', MaxKeys: 2 }).promise();
    expect(first).toMatchObject({ IsTruncated: true, KeyCount: 2 });
    const second = await s3
      .listObjectsV2({ Bucket: 'default-bucket', Prefix: 'v2/list/', ContinuationToken: first.NextContinuationToken })
      .promise();
    expect([...first.Contents!, ...second.Contents!].map((c) => c.Key)).toEqual(['v2/list/a', 'v2/list/b/1', 'v2/list/c']);
    expect(second.IsTruncated).toBe(false);

    const copied = await send(s3.copyObject({ Bucket: 'default-bucket', Key: 'v2/copy.txt', CopySource: 'default-bucket/v2/hello.txt' }));
    expect(copied.data.CopyObjectResult!.ETag).toBe(`"${md5(bytesOf(hello))}"`);
    const copy = await send(s3.headObject({ Bucket: 'default-bucket', Key: 'v2/copy.txt' }));
    expect(copy.headers['x-service-ipfs-hash']).toBe(hello.cidV1);
    expect(copy.data.Metadata).toEqual({ via: 'v2' });

    await s3.deleteObject({ Bucket: 'default-bucket', Key: 'v2/copy.txt' }).promise();
    await s3.deleteObject({ Bucket: 'default-bucket', Key: 'v2/never-there' }).promise();
    const err = await s3
      .headObject({ Bucket: 'default-bucket', Key: 'v2/copy.txt' })
      .promise()
      .catch((e: { statusCode: number; code: string }) => e);
    expect(err).toMatchObject({ statusCode: 404, code: 'NotFound' });
    const missing = await s3
      .getObject({ Bucket: 'default-bucket', Key: 'v2/copy.txt' })
      .promise()
      .catch((e: { statusCode: number; code: string }) => e);
    expect(missing).toMatchObject({ statusCode: 404, code: 'NoSuchKey' });
  });

  test('upload (managed) of a 12 MiB stream: multipart in 5 MiB parts, 4 at once; whole-file CID', async () => {
    const file = await ws.file('v2', 'big.bin');
    const bytes = await randomFile(file, 12 * 1024 * 1024);
    const done = await s3
      .upload({ Bucket: 'default-bucket', Key: 'v2/big.bin', Body: createReadStream(file) }, { partSize: 5 * 1024 * 1024, queueSize: 4 })
      .promise();
    expect(done.ETag).toBe(`"${multipartEtag(bytes, 5 * 1024 * 1024)}"`);
    const head = await send(s3.headObject({ Bucket: 'default-bucket', Key: 'v2/big.bin' }));
    expect(head.data.ContentLength).toBe(bytes.length);
    expect(head.headers['x-service-ipfs-hash']).toBe((await cidsOf(bytes)).v1);
    const back = await s3.getObject({ Bucket: 'default-bucket', Key: 'v2/big.bin' }).promise();
    expect(md5(back.Body as Buffer)).toBe(md5(bytes));
  });
});

describe('@aws-sdk/client-s3 v3 with default checksums, streaming a body it cannot measure', () => {
  let client: S3Client;
  beforeEach(() => {
    client = service.s3();
  });
  afterEach(() => client.destroy());

  /** Captures the signed request's headers and the raw response headers of the client's last call. */
  function watch(client: S3Client) {
    const seen = { request: {} as Record<string, string>, response: {} as Record<string, string> };
    client.middlewareStack.add(
      (next) => async (args) => {
        seen.request = { ...(args.request as { headers: Record<string, string> }).headers };
        const out = await next(args);
        seen.response = (out.response as { headers: Record<string, string> }).headers;
        return out;
      },
      { step: 'deserialize' },
    );
    return seen;
  }

  const crc32Base64 = (bytes: Uint8Array) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(crc32(bytes));
    return b.toString('base64');
  };

  /**
   * Random chunks of uneven sizes, from a stream that never says how long it
   * is. (Without ContentLength the SDK itself refuses a single PutObject:
   * S3 needs x-amz-decoded-content-length; unknown lengths are multipart.)
   */
  function unknownLength(bytes: Buffer): Readable {
    return Readable.from(
      (function* () {
        for (let i = 0, n = 1; i < bytes.length; i += n, n = ((n * 7 + 12345) % 150_000) + 1) yield bytes.subarray(i, i + n);
      })(),
    );
  }

  async function putStreamed(client: S3Client, key: string, bytes: Buffer, extra: { ContentEncoding?: string } = {}) {
    const seen = watch(client);
    const put = await client.send(
      new PutObjectCommand({ Bucket: 'default-bucket', Key: key, Body: unknownLength(bytes), ContentLength: bytes.length, ...extra }),
    );
    return { put, request: seen.request, response: seen.response };
  }

  test('the upload goes aws-chunked with a trailing CRC32, and is stored decoded: same bytes, MD5, CID, no aws-chunked', async () => {
    const bytes = randomBytes(700_001);
    const { put, request, response } = await putStreamed(client, 'v3/streamed.bin', bytes);
    // What proves this test exercised the framing: the SDK chose it by default.
    expect(request['content-encoding']).toBe('aws-chunked');
    expect(request['x-amz-content-sha256']).toMatch(/^STREAMING-.*TRAILER$/);
    expect(request['x-amz-trailer']).toBe('x-amz-checksum-crc32');
    expect(request['x-amz-decoded-content-length']).toBe(String(bytes.length));
    expect(request['content-length']).toBeUndefined(); // the framed body goes Transfer-Encoding: chunked

    expect(put.ETag).toBe(`"${md5(bytes)}"`);
    expect(put.ChecksumCRC32).toBe(crc32Base64(bytes));
    const cids = await cidsOf(bytes);
    expect(response['x-service-ipfs-hash']).toBe(cids.v1);
    expect(response['x-service-ipfs-hash-v0']).toBe(cids.v0);

    const got = await client.send(new GetObjectCommand({ Bucket: 'default-bucket', Key: 'v3/streamed.bin', ChecksumMode: 'ENABLED' }));
    const stored = Buffer.from(await got.Body!.transformToByteArray());
    expect(stored.length).toBe(bytes.length);
    expect(stored.equals(bytes)).toBe(true);
    expect(got.ContentEncoding).toBeUndefined();
    expect(got.ContentLength).toBe(bytes.length);
    expect(got.ChecksumCRC32).toBe(crc32Base64(bytes));

    const head = await client.send(new HeadObjectCommand({ Bucket: 'default-bucket', Key: 'v3/streamed.bin' }));
    expect(head.ContentEncoding).toBeUndefined();
    expect(head.ContentLength).toBe(bytes.length);

    // The gateway serves the same bytes under the CID.
    const byCid = await fetch(`${service.endpoints.gateway}/ipfs/${cids.v1}`);
    expect(md5(Buffer.from(await byCid.arrayBuffer()))).toBe(md5(bytes));
  });

  test('a Content-Encoding of the object itself (gzip) is kept, without aws-chunked', async () => {
    const bytes = randomBytes(70_000);
    const { request } = await putStreamed(client, 'v3/gzipped.bin', bytes, { ContentEncoding: 'gzip' });
    expect(request['content-encoding']).toMatch(/^gzip,\s*aws-chunked$/);
    const got = await client.send(new GetObjectCommand({ Bucket: 'default-bucket', Key: 'v3/gzipped.bin' }));
    expect(got.ContentEncoding).toBe('gzip');
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(bytes)).toBe(true);
  });

  test('contrast: s3rver 3.7.1 stores the same upload with its aws-chunked framing (what the checks above catch)', async () => {
    interface S3rver {
      run(): Promise<{ port: number }>;
      close(): Promise<void>;
    }
    const S3rver = createRequire(import.meta.url)('s3rver') as new (options: object) => S3rver;
    const dir = await mkdtemp(join(tmpdir(), 'cairn-s3rver-'));
    const server = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: dir,
      configureBuckets: [{ name: 'default-bucket' }],
    });
    const { port } = await server.run();
    const other = new S3Client({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    try {
      const bytes = randomBytes(5000);
      await putStreamed(other, 'streamed.bin', bytes);
      const got = await other.send(new GetObjectCommand({ Bucket: 'default-bucket', Key: 'streamed.bin' }));
      const stored = Buffer.from(await got.Body!.transformToByteArray());
      expect(stored.equals(bytes)).toBe(false);
      expect(stored.toString('latin1')).toMatch(/^[0-9a-f]+\r\n/);
      expect(stored.toString('latin1')).toContain('x-amz-checksum-crc32:');
      expect(got.ContentEncoding).toContain('aws-chunked');
    } finally {
      other.destroy();
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("XML bodies escaped the way Go's encoding/xml does (rclone, minio-go, aws-sdk-go)", () => {
  /** Go writes `"`, `'`, tab, newline and CR in text as character references. */
  const goEscape = (xml: string) =>
    xml
      .replace(/&quot;/g, '&#34;')
      .replace(/&apos;/g, '&#39;')
      .replace(/"(?![^<]*>)/g, '&#34;')
      .replace(/'(?![^<]*>)/g, '&#39;')
      .replace(/\t/g, '&#x9;');

  test('DeleteObjects deletes the keys the character references spell', async () => {
    const client = service.s3();
    // Rewrites the serialized body before the SDK checksums and signs it.
    client.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { body?: unknown; headers: Record<string, string> };
        if (typeof request.body === 'string' && request.body.includes('<Delete')) {
          request.body = goEscape(request.body);
          request.headers['content-length'] = String(Buffer.byteLength(request.body as string));
        }
        return next(args);
      },
      { step: 'serialize', priority: 'low' },
    );
    const keys = ['go/say "hi".txt', "go/it's.txt", 'go/tab\there.txt'];
    try {
      for (const Key of keys) await client.send(new PutObjectCommand({ Bucket: 'default-bucket', Key, Body: Key }));
      const out = await client.send(
        new DeleteObjectsCommand({ Bucket: 'default-bucket', Delete: { Objects: keys.map((Key) => ({ Key })) } }),
      );
      expect(out.Deleted!.map((d) => d.Key).sort()).toEqual([...keys].sort());
      const left = await client.send(new ListObjectsV2Command({ Bucket: 'default-bucket', Prefix: 'go/' }));
      expect(left.KeyCount).toBe(0);
    } finally {
      client.destroy();
    }
  });
});
