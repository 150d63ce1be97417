/**
 * S3 behaviours measured against AWS S3 and ceph/s3-tests: Expect headers
 * other than 100-continue on the local door; listings' encoding-type=url,
 * max-keys=0 and empty continuation token (both doors).
 */
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { connect } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';
import type { SourceData } from '@smithy/types';
import { startTestService, BOOT, type TestService } from '../support/service.js';
import type { LambdaFn } from '../support/lambda-door.js';
import { loadS3Lambda, s3Doors } from '../support/s3-doors.js';

let service: TestService;
let lambda: LambdaFn;
const savedEnv = { ...process.env };

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  lambda = await loadS3Lambda(service);
});

afterAll(async () => {
  process.env = savedEnv;
  await service.close();
});

const bytes = (data: SourceData): string | Uint8Array =>
  typeof data === 'string' ? data : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);

/** node:crypto in the shape SignatureV4 wants. */
class Sha256 {
  private readonly hash: Hash | Hmac;
  constructor(secret?: SourceData) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: SourceData): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

/**
 * A SigV4-signed PUT written on a raw socket, with `expect` added unsigned as
 * the client sends it (`''` is an empty `Expect:` line). With 100-continue,
 * the body waits for the interim answer as a client's would.
 */
async function rawSignedPut(path: string, body: string, expect: string): Promise<{ status: number; interim: boolean }> {
  const url = new URL(service.endpoints.s3);
  const signer = new SignatureV4({ credentials: BOOT, region: 'us-east-1', service: 's3', sha256: Sha256, uriEscapePath: false });
  const signed = await signer.sign({
    method: 'PUT',
    protocol: 'http:',
    hostname: url.hostname,
    port: Number(url.port),
    path,
    headers: {
      host: url.host,
      'content-length': String(Buffer.byteLength(body)),
      'x-amz-content-sha256': createHash('sha256').update(body).digest('hex'),
    },
    body,
  });
  const head = [`PUT ${path} HTTP/1.1`, ...Object.entries(signed.headers).map(([k, v]) => `${k}: ${v}`), `Expect:${expect ? ` ${expect}` : ''}`, 'Connection: close'];
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let received = '';
    let sent = false;
    const send = () => {
      sent = true;
      socket.write(body);
    };
    socket.on('connect', () => {
      socket.write(`${head.join('\r\n')}\r\n\r\n`);
      if (expect !== '100-continue') send();
    });
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (!sent && received.startsWith('HTTP/1.1 100 ')) send();
    });
    socket.on('error', reject);
    socket.on('end', () => {
      const interim = received.startsWith('HTTP/1.1 100 ');
      const final = interim ? received.slice(received.indexOf('\r\n\r\n') + 4) : received;
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(final)?.[1] ?? 0), interim });
    });
    setTimeout(() => socket.destroy(new Error(`no answer; got ${JSON.stringify(received)}`)), 5000).unref();
  });
}

describe('Expect headers on the local door', () => {
  const s3 = () => service.s3();

  test.each([
    ['a bogus Expect', 'foo'],
    ['an empty Expect', ''],
  ])('a signed PUT with %s is stored as if the header were absent (S3 ignores it; Node alone answers 417)', async (_what, value) => {
    const key = `expect-${value || 'empty'}.txt`;
    const answer = await rawSignedPut(`/default-bucket/${key}`, `sent with Expect: ${value}`, value);
    expect(answer).toEqual({ status: 200, interim: false });
    const got = await s3().send(new GetObjectCommand({ Bucket: 'default-bucket', Key: key }));
    expect(await got.Body!.transformToString()).toBe(`sent with Expect: ${value}`);
  });

  test('Expect: 100-continue still gets its interim 100 before the body is sent', async () => {
    const answer = await rawSignedPut('/default-bucket/expect-continue.txt', 'after the interim answer', '100-continue');
    expect(answer).toEqual({ status: 200, interim: true });
    const got = await s3().send(new GetObjectCommand({ Bucket: 'default-bucket', Key: 'expect-continue.txt' }));
    expect(await got.Body!.transformToString()).toBe('after the interim answer');
  });
});

describe.each(s3Doors(() => service, () => lambda))('listings through the $name', (door) => {
  const tag = door.name.startsWith('Lambda') ? 'l' : 'n';
  const bucket = `listing-${tag}`;
  // ceph/s3-tests' test_bucket_list(v2)_encoding_basic keys, and a few more.
  const keys = ['foo+1/bar', 'foo/bar/xyzzy', 'quux ab/thud', 'asdf+b', 'sp ace', 'é x', 'a&b<c'];
  let s3: S3Client;
  beforeAll(async () => {
    s3 = door.client();
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    for (const key of keys) await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }));
  });

  test('encoding-type=url encodes keys and common prefixes with %20 for a space, as s3-tests expects; without it they come as they are', async () => {
    const v2 = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Delimiter: '/', EncodingType: 'url' }));
    expect(v2.Contents!.map((c) => c.Key)).toEqual(['a%26b%3Cc', 'asdf%2Bb', 'sp%20ace', '%C3%A9%20x']);
    expect(v2.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['foo%2B1/', 'foo/', 'quux%20ab/']);
    const v1 = await s3.send(new ListObjectsCommand({ Bucket: bucket, Delimiter: '/', EncodingType: 'url' }));
    expect(v1.Contents!.map((c) => c.Key)).toEqual(['a%26b%3Cc', 'asdf%2Bb', 'sp%20ace', '%C3%A9%20x']);
    expect(v1.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['foo%2B1/', 'foo/', 'quux%20ab/']);
    // Not asked for: nothing is URL-encoded, only XML-escaped (the SDK reads 'a&b<c' back from '&amp;' and '&lt;').
    const plain = await s3.send(new ListObjectsCommand({ Bucket: bucket, Delimiter: ' ', Marker: 'a&b<c' }));
    expect(plain).toMatchObject({ Delimiter: ' ', Marker: 'a&b<c' });
    expect(plain.Contents!.map((c) => c.Key)).toEqual(['asdf+b', 'foo+1/bar', 'foo/bar/xyzzy']);
    expect(plain.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['quux ', 'sp ', 'é ']);
  });

  test('encoding-type=url applies to Prefix, StartAfter, Delimiter, Marker, NextMarker, KeyMarker and NextKeyMarker too', async () => {
    const v2 = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'quux ab/', StartAfter: 'quux ab/ ', EncodingType: 'url' }));
    expect([v2.Prefix, v2.StartAfter, v2.Contents!.map((c) => c.Key)]).toEqual(['quux%20ab/', 'quux%20ab/%20', ['quux%20ab/thud']]);
    // After 'foo+1/bar': 'foo/bar/xyzzy', then everything under 'quux ' rolled up; the page ends there.
    const v1 = await s3.send(new ListObjectsCommand({ Bucket: bucket, Delimiter: ' ', Marker: 'foo+1/bar', MaxKeys: 2, EncodingType: 'url' }));
    expect(v1).toMatchObject({ Delimiter: '%20', Marker: 'foo%2B1/bar', NextMarker: 'quux%20', IsTruncated: true });
    expect([v1.Contents!.map((c) => c.Key), v1.CommonPrefixes!.map((p) => p.Prefix)]).toEqual([['foo/bar/xyzzy'], ['quux%20']]);
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Delimiter: ' ', KeyMarker: 'foo+1/bar', MaxKeys: 2, EncodingType: 'url' }));
    expect(versions).toMatchObject({ Delimiter: '%20', KeyMarker: 'foo%2B1/bar', NextKeyMarker: 'quux%20', IsTruncated: true });
    expect([versions.Versions!.map((v) => v.Key), versions.CommonPrefixes!.map((p) => p.Prefix)]).toEqual([['foo/bar/xyzzy'], ['quux%20']]);
  });

  test('ListMultipartUploads encodes its keys, markers and prefixes the same way', async () => {
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'up load+1' }));
    try {
      const out = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: 'up ', KeyMarker: 'up ', EncodingType: 'url' }));
      expect(out).toMatchObject({ Prefix: 'up%20', KeyMarker: 'up%20' });
      expect(out.Uploads!.map((u) => u.Key)).toEqual(['up%20load%2B1']);
      const rolled = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Delimiter: ' ', EncodingType: 'url' }));
      expect([rolled.Delimiter, rolled.CommonPrefixes!.map((p) => p.Prefix)]).toEqual(['%20', ['up%20']]);
    } finally {
      await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: 'up load+1', UploadId }));
    }
  });

  test('max-keys=0 answers an empty page that is not truncated (s3-tests test_bucket_list(v2)_maxkeys_zero)', async () => {
    for (const out of [
      await s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 0 })),
      await s3.send(new ListObjectsCommand({ Bucket: bucket, MaxKeys: 0 })),
      await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, MaxKeys: 0 })),
    ]) {
      expect(out).toMatchObject({ MaxKeys: 0, IsTruncated: false });
      expect('Contents' in out ? out.Contents ?? [] : []).toEqual([]);
      expect('Versions' in out ? out.Versions ?? [] : []).toEqual([]);
      expect(out.CommonPrefixes ?? []).toEqual([]);
    }
  });

  test('an empty continuation-token lists from the start, as none would (s3-tests test_bucket_listv2_continuationtoken_empty)', async () => {
    const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: '' }));
    expect(out).toMatchObject({ ContinuationToken: '', IsTruncated: false, KeyCount: keys.length });
    expect(out.NextContinuationToken).toBeUndefined();
  });
});
