/**
 * S3 behaviours measured against AWS S3 and ceph/s3-tests: Expect headers
 * other than 100-continue on the local door; listings' encoding-type=url,
 * max-keys=0 and empty continuation token; CreateBucket of a bucket one
 * owns, DeleteBucket with unfinished multipart uploads; a retried
 * CompleteMultipartUpload, and one naming a resent part twice (both doors).
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetBucketAclCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  HeadObjectCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  ListMultipartUploadsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { createHash, createHmac, randomBytes, type Hash, type Hmac } from 'node:crypto';
import { connect } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';
import type { SourceData } from '@smithy/types';
import { CID } from 'multiformats/cid';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { isRootPinned } from '../../functions/core/storage/pins.js';
import { BOOT, startTestService, type TestService } from '../support/service.js';
import { apiTarget, localDescribe, localTest, REMOTE, type ApiTarget } from '../support/api-target.js';
import { captureHeaders, failure, s3Doors } from '../support/s3-doors.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
/** The account's own bucket. */
let B: string;
/** A local service in another region, where S3 has no legacy CreateBucket behaviour (local only: a stack has one region). */
let euService: TestService | undefined;
const savedEnv = { ...process.env };

beforeAll(async () => {
  // Small parts on purpose, so no least part size: s3-part-size.test.ts checks S3's.
  target = await apiTarget({ CAIRN_S3_MIN_PART_SIZE: '0' });
  B = target.account.bucket;
  if (!REMOTE) euService = await startTestService({ CAIRN_GC_INTERVAL: '0', AWS_REGION: 'eu-west-1' });
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
  await euService?.close();
});

async function pinned(service: TestService, cid: string): Promise<{ pinned: boolean; stored: boolean }> {
  const node = await service.services.ipfs();
  const parsed = CID.parse(cid);
  return { pinned: await isRootPinned(node, parsed), stored: await node.blockstore.has(parsed) };
}

const bytes = (data: SourceData): string | Uint8Array =>
  typeof data === 'string'
    ? data
    : ArrayBuffer.isView(data)
      ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      : new Uint8Array(data);

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
  const url = new URL(target.endpoints.s3);
  const signer = new SignatureV4({
    credentials: target.account,
    region: target.region,
    service: 's3',
    sha256: Sha256,
    uriEscapePath: false,
  });
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
  const head = [
    `PUT ${path} HTTP/1.1`,
    ...Object.entries(signed.headers).map(([k, v]) => `${k}: ${v}`),
    `Expect:${expect ? ` ${expect}` : ''}`,
    'Connection: close',
  ];
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

// Local only: the request goes as plain HTTP/1.1 on a socket; a deployed
// stack's endpoint is HTTPS, and its front (API Gateway) answers Expect itself.
localDescribe('Expect headers on the local door', () => {
  const s3 = () => target.s3();

  test.each([
    ['a bogus Expect', 'foo'],
    ['an empty Expect', ''],
  ])('a signed PUT with %s is stored as if the header were absent (S3 ignores it; Node alone answers 417)', async (_what, value) => {
    const key = `expect-${value || 'empty'}.txt`;
    const answer = await rawSignedPut(`/${B}/${key}`, `sent with Expect: ${value}`, value);
    expect(answer).toEqual({ status: 200, interim: false });
    const got = await s3().send(new GetObjectCommand({ Bucket: B, Key: key }));
    expect(await got.Body!.transformToString()).toBe(`sent with Expect: ${value}`);
  });

  test('Expect: 100-continue still gets its interim 100 before the body is sent', async () => {
    const answer = await rawSignedPut(`/${B}/expect-continue.txt`, 'after the interim answer', '100-continue');
    expect(answer).toEqual({ status: 200, interim: true });
    const got = await s3().send(new GetObjectCommand({ Bucket: B, Key: 'expect-continue.txt' }));
    expect(await got.Body!.transformToString()).toBe('after the interim answer');
  });
});

describe.each(doorsFor(s3Doors(() => target)))('listings through the $name', (door) => {
  const { tag } = door;
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
    const v2 = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: 'quux ab/', StartAfter: 'quux ab/ ', EncodingType: 'url' }),
    );
    expect([v2.Prefix, v2.StartAfter, v2.Contents!.map((c) => c.Key)]).toEqual(['quux%20ab/', 'quux%20ab/%20', ['quux%20ab/thud']]);
    // After 'foo+1/bar': 'foo/bar/xyzzy', then everything under 'quux ' rolled up; the page ends there.
    const v1 = await s3.send(
      new ListObjectsCommand({ Bucket: bucket, Delimiter: ' ', Marker: 'foo+1/bar', MaxKeys: 2, EncodingType: 'url' }),
    );
    expect(v1).toMatchObject({ Delimiter: '%20', Marker: 'foo%2B1/bar', NextMarker: 'quux%20', IsTruncated: true });
    expect([v1.Contents!.map((c) => c.Key), v1.CommonPrefixes!.map((p) => p.Prefix)]).toEqual([['foo/bar/xyzzy'], ['quux%20']]);
    const versions = await s3.send(
      new ListObjectVersionsCommand({ Bucket: bucket, Delimiter: ' ', KeyMarker: 'foo+1/bar', MaxKeys: 2, EncodingType: 'url' }),
    );
    expect(versions).toMatchObject({ Delimiter: '%20', KeyMarker: 'foo%2B1/bar', NextKeyMarker: 'quux%20', IsTruncated: true });
    expect([versions.Versions!.map((v) => v.Key), versions.CommonPrefixes!.map((p) => p.Prefix)]).toEqual([['foo/bar/xyzzy'], ['quux%20']]);
  });

  test('ListObjects (v1) sends its Prefix back as asked, encoding-type=url or not: clients decode every field but that one', async () => {
    // S3 API reference, ListObjects (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjects.html), response
    // Prefix: "Keys that begin with the indicated prefix": the one asked for, which the client compares with its own.
    // ceph/s3-tests' test_bucket_list_prefix_unreadable asks for '\n' and wants '\n' (botocore decodes v1's
    // Delimiter, Marker, NextMarker, keys and common prefixes, not Prefix); this SDK trims a lone '\n'.
    for (const prefix of ['a\nb', 'quux ab/']) {
      const v1 = await s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: prefix, EncodingType: 'url' }));
      expect([prefix, v1.Prefix]).toEqual([prefix, prefix]);
    }
    const listed = await s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: 'quux ab/', EncodingType: 'url' }));
    expect(listed.Contents!.map((c) => c.Key)).toEqual(['quux%20ab/thud']);
    // A prefix XML cannot carry is sent encoded rather than as a document no parser reads.
    const control = await s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: 'x\u0001y', EncodingType: 'url' }));
    expect(control.Prefix).toBe('x%01y');
    // ListObjectsV2 encodes its Prefix (botocore decodes it there).
    const v2 = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'a\nb', EncodingType: 'url' }));
    expect(v2.Prefix).toBe('a%0Ab');
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
      expect('Contents' in out ? (out.Contents ?? []) : []).toEqual([]);
      expect('Versions' in out ? (out.Versions ?? []) : []).toEqual([]);
      expect(out.CommonPrefixes ?? []).toEqual([]);
    }
  });

  test('an empty continuation-token lists from the start, as none would (s3-tests test_bucket_listv2_continuationtoken_empty)', async () => {
    const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: '' }));
    expect(out).toMatchObject({ ContinuationToken: '', IsTruncated: false, KeyCount: keys.length });
    expect(out.NextContinuationToken).toBeUndefined();
  });
});

describe.each(doorsFor(s3Doors(() => target)))('buckets through the $name', (door) => {
  const { tag } = door;
  let s3: S3Client;
  beforeAll(() => {
    s3 = door.client();
  });

  test('CreateBucket of a bucket one owns answers 200 in us-east-1 and changes nothing; 409 BucketAlreadyOwnedByYou elsewhere', async () => {
    const bucket = `again-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'kept.txt', Body: 'still here', ACL: 'public-read' }));
    const created = (await s3.send(new ListBucketsCommand({}))).Buckets!.find((b) => b.Name === bucket)!.CreationDate;
    const acl = await s3.send(new GetBucketAclCommand({ Bucket: bucket }));

    const again = await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    expect(again.$metadata.httpStatusCode).toBe(200);
    expect(again.Location).toBe(`/${bucket}`);
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'kept.txt' }));
    expect(await got.Body!.transformToString()).toBe('still here');
    expect(
      (await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'kept.txt' }))).Grants!.some((g) =>
        g.Grantee?.URI?.endsWith('/AllUsers'),
      ),
    ).toBe(true);
    expect((await s3.send(new GetBucketAclCommand({ Bucket: bucket }))).Grants).toEqual(acl.Grants);
    expect((await s3.send(new ListBucketsCommand({}))).Buckets!.find((b) => b.Name === bucket)!.CreationDate).toEqual(created);

    // Another account's bucket stays taken.
    expect(await failure(door.client(target.other).send(new CreateBucketCommand({ Bucket: bucket })))).toMatchObject({
      name: 'BucketAlreadyExists',
      $metadata: { httpStatusCode: 409 },
    });
    // Outside us-east-1, S3 answers the owner 409 BucketAlreadyOwnedByYou.
    await target.whenLocal(async () => {
      const eu = new S3Client({ endpoint: euService!.endpoints.s3, region: 'eu-west-1', forcePathStyle: true, credentials: BOOT });
      await eu.send(new CreateBucketCommand({ Bucket: bucket }));
      expect(await failure(eu.send(new CreateBucketCommand({ Bucket: bucket })))).toMatchObject({
        name: 'BucketAlreadyOwnedByYou',
        $metadata: { httpStatusCode: 409 },
      });
    });
  });

  test('DeleteBucket with only unfinished multipart uploads deletes the bucket and ends them: no upload, part, marker or pin is left (with an object too, nothing changes)', async () => {
    const bucket = `unfinished-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const uploads: Array<{ key: string; id: string }> = [];
    for (const [key, sizes] of [
      ['a.bin', [300 * 1024, 1000]],
      ['b/c.bin', [5000]],
    ] as const) {
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
      for (const [i, size] of sizes.entries()) {
        await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: randomBytes(size) }));
      }
      uploads.push({ key, id: UploadId! });
    }
    let cids: string[] = [];
    // Inside the local service: the parts' blocks are stored and pinned.
    await target.whenLocal(async (service) => {
      cids = (await Promise.all(uploads.map((u) => service.services.uploads.allParts(u.id)))).flat().map((p) => p.cid);
      expect(cids).toHaveLength(3);
      for (const cid of cids) expect(await pinned(service, cid)).toEqual({ pinned: true, stored: true });
    });

    // With an object in it, the bucket stays, and so do its uploads, untouched.
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'object.txt', Body: 'x' }));
    expect(await failure(s3.send(new DeleteBucketCommand({ Bucket: bucket })))).toMatchObject({
      name: 'BucketNotEmpty',
      $metadata: { httpStatusCode: 409 },
    });
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads!.map((u) => u.UploadId)).toEqual(
      uploads.map((u) => u.id),
    );
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'object.txt' }));

    await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
    expect(await failure(s3.send(new HeadBucketCommand({ Bucket: bucket })))).toMatchObject({ $metadata: { httpStatusCode: 404 } });
    // Inside the local service: no upload, part or cleanup marker is left, and collection takes the blocks.
    await target.whenLocal(async (service) => {
      for (const u of uploads) {
        expect(await service.services.uploads.get(bucket, u.key, u.id)).toBeUndefined();
        expect(await service.services.uploads.allParts(u.id)).toEqual([]);
      }
      expect(await service.services.uploads.resumeCleanups(0)).toBe(0);
      await collectGarbage(service.services);
      for (const cid of cids) expect(await pinned(service, cid)).toEqual({ pinned: false, stored: false });
    });
    // A bucket of the same name starts with no uploads.
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? []).toEqual([]);
  });
});

// Local only: the uploads are written straight into the store, 120 at once.
localTest('DeleteBucket ends more unfinished uploads than one transaction can hold', async () => {
  const service = target.local!;
  const s3 = target.s3();
  const bucket = 'many-unfinished';
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const ids = Array.from({ length: 120 }, (_, i) => `upload-${String(i).padStart(3, '0')}`);
  for (const uploadId of ids) {
    await service.services.uploads.create({
      bucket,
      key: `k/${uploadId}`,
      uploadId,
      initiated: new Date().toISOString(),
      acl: 'private',
      ownerId: 'x',
      contentType: 'binary/octet-stream',
      metadata: {},
    });
  }
  await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
  for (const uploadId of ids) expect(await service.services.uploads.get(bucket, `k/${uploadId}`, uploadId)).toBeUndefined();
  expect(await service.services.uploads.resumeCleanups(0)).toBe(0);
});

describe.each(doorsFor(s3Doors(() => target)))('a retried CompleteMultipartUpload through the $name', (door) => {
  const { tag } = door;
  let bucket: string;
  let s3: S3Client;
  beforeAll(() => {
    bucket = target.account.bucket;
    s3 = door.client();
  });

  /** What a client can see of the stored object. */
  const stored = async (key: string) => {
    const { $metadata: _m, ...head } = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
    return head;
  };

  /** An upload of two parts with CRC32 checksums, ready to complete. */
  async function upload(key: string) {
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ChecksumAlgorithm: 'CRC32' }));
    const parts: CompletedPart[] = [];
    for (const [i, body] of [randomBytes(70_000), randomBytes(999)].entries()) {
      const out = await s3.send(
        new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: body, ChecksumAlgorithm: 'CRC32' }),
      );
      parts.push({ PartNumber: i + 1, ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32 });
    }
    const complete = (Parts = parts) =>
      s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts } }));
    return { UploadId: UploadId!, parts, complete };
  }

  const answer = (
    { $metadata: _m, ...out }: Awaited<ReturnType<Awaited<ReturnType<typeof upload>>['complete']>>,
    headers: Record<string, string>,
  ) => ({
    out,
    headers: Object.fromEntries(Object.entries(headers).filter(([name]) => !['x-amz-request-id', 'date', 'content-length'].includes(name))),
  });

  test('the same Complete again answers the same result (ETag, Location, checksum, CID headers) and changes nothing; other parts or an overwrite are NoSuchUpload', async () => {
    const key = `retried-${tag}.bin`;
    const { parts, complete } = await upload(key);
    const seen = captureHeaders(s3);
    const first = answer(await complete(), seen.headers);
    expect(first.out.ETag).toMatch(/^"[0-9a-f]{32}-2"$/);
    expect(first.out.ChecksumType).toBe('COMPOSITE');
    expect(first.headers['x-service-ipfs-hash']).toMatch(/^bafy/);
    const before = await stored(key);

    const again = answer(await complete(), seen.headers);
    expect(again).toEqual(first);
    expect(await stored(key)).toEqual(before);

    // Not a retry: other parts named, or the object overwritten since (Ceph RGW's answer too).
    const gone = { name: 'NoSuchUpload', $metadata: { httpStatusCode: 404 } };
    expect(await failure(complete(parts.slice(0, 1)))).toMatchObject(gone);
    expect(await stored(key)).toEqual(before);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'overwritten' }));
    expect(await failure(complete())).toMatchObject(gone);
  });

  test('a part sent twice and listed twice in a row is one part: the later entry, the copy stored last (s3-tests test_multipart_resend_first_finishes_last)', async () => {
    const key = `resent-${tag}`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const [first, second, last] = [randomBytes(40_000), randomBytes(40_000), randomBytes(500)];
    const put = async (PartNumber: number, Body: Buffer) =>
      (await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber, Body }))).ETag!;
    // S3 API reference, CompleteMultipartUpload (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CompleteMultipartUpload.html):
    // "Amazon S3 concatenates all the parts in ascending order by part number"; a part uploaded again replaces the
    // earlier copy ("If you upload a new part using the same part number that was used with a previous part, the
    // previously uploaded part is overwritten": API_UploadPart.html), so the copy stored last is the part.
    const [a, b, c] = [await put(1, first), await put(1, second), await put(2, last)];
    const complete = (Parts: CompletedPart[]) =>
      s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts } }));
    // The earlier entry last names a copy the store no longer holds: InvalidPart, as for any stale ETag.
    await expect(
      complete([
        { PartNumber: 1, ETag: b },
        { PartNumber: 1, ETag: a },
        { PartNumber: 2, ETag: c },
      ]),
    ).rejects.toMatchObject({
      name: 'InvalidPart',
    });
    // Descending is still out of order.
    await expect(
      complete([
        { PartNumber: 2, ETag: c },
        { PartNumber: 1, ETag: b },
      ]),
    ).rejects.toMatchObject({ name: 'InvalidPartOrder' });
    const done = await complete([
      { PartNumber: 1, ETag: a },
      { PartNumber: 1, ETag: b },
      { PartNumber: 2, ETag: c },
    ]);
    const md5 = (etag: string) => Buffer.from(etag.replace(/"/g, ''), 'hex');
    expect(done.ETag).toBe(
      `"${createHash('md5')
        .update(Buffer.concat([md5(b), md5(c)]))
        .digest('hex')}-2"`,
    );
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(Buffer.concat([second, last]))).toBe(true);
  });

  test("two identical Completes at once both succeed with one answer (the loser answers the winner's result)", async () => {
    const key = `retried-racing-${tag}.bin`;
    const { complete } = await upload(key);
    const [a, b] = await Promise.all([complete(), complete()]);
    expect(b.ETag).toBe(a.ETag);
    expect(b.ChecksumCRC32).toBe(a.ChecksumCRC32);
    expect((await stored(key)).ETag).toBe(a.ETag);
  });

  // Local only: the record's expiry is brought forward in the store.
  localTest('the record of a completion expires: then a repeat is NoSuchUpload, and garbage collection drops it', async () => {
    const service = target.local!;
    const key = `retried-late-${tag}.bin`;
    const { UploadId, complete } = await upload(key);
    await complete();
    await complete();
    await service.services.db.doc.send(
      new UpdateCommand({
        TableName: service.services.db.tables.objects,
        Key: { pk: '#DONE', sk: UploadId },
        UpdateExpression: 'SET expiresAt = :past',
        ExpressionAttributeValues: { ':past': Date.now() - 1 },
      }),
    );
    expect(await failure(complete())).toMatchObject({ name: 'NoSuchUpload', $metadata: { httpStatusCode: 404 } });
    await collectGarbage(service.services);
    expect(await service.services.uploads.completion(bucket, key, UploadId, 0)).toBeUndefined();
  });
});
