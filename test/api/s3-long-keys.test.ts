/**
 * Keys of S3's full length: 1024 bytes of UTF-8 work in a bucket whose name
 * has S3's full 63 characters, through every operation that names a key
 * (put, get, head, list, copy, delete, multipart), and 1025 bytes is
 * KeyTooLongError. DynamoDB limits a sort key to 1024 bytes
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html),
 * the embedded database too, so no item may put the bucket name and the key
 * together in one sort key. Through every door.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { absent, failure, s3Doors } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const savedEnv = { ...process.env };

beforeAll(async () => {
  target = await apiTarget();
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

/** A key of exactly `bytes` bytes of UTF-8, multi-byte characters included, starting with `start`. */
function keyOf(start: string, bytes: number, fill = 'é'): string {
  let key = `${start}/`;
  while (Buffer.byteLength(key + fill) <= bytes) key += fill;
  while (Buffer.byteLength(key) < bytes) key += 'k';
  expect(Buffer.byteLength(key)).toBe(bytes);
  return key;
}

/** A bucket name of S3's full 63 characters. */
const bucketOf = (tag: string) => `long-keys-${tag}-${randomBytes(4).toString('hex')}-`.padEnd(62, 'b') + 'z';

const doors = s3Doors(() => target);

describe.each(doorsFor(doors))('through the $name', (door) => {
  const { tag } = door;
  let bucket: string;

  beforeAll(async () => {
    bucket = bucketOf(tag);
    expect(bucket).toHaveLength(63);
    await door.client().send(new CreateBucketCommand({ Bucket: bucket }));
  });

  test('a 1024-byte key in a 63-character bucket: put, head, get, list, copy, delete', async () => {
    const s3 = door.client();
    const key = keyOf('a', 1024, 'k');
    const copy = keyOf('b', 1024, '€');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'long key' }));
    expect((await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ContentLength).toBe(8);
    expect(await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString()).toBe('long key');
    // Overwriting moves the reference from one CID to another.
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'long key, again' }));
    await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: copy, CopySource: `${bucket}/${encodeURIComponent(key)}` }));
    expect(await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: copy }))).Body!.transformToString()).toBe('long key, again');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'c', Body: 'after' }));
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(listed.Contents?.map((o) => o.Key)).toEqual([key, copy, 'c']);
    // StartAfter a key of full length, and a page of one that continues after it.
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket, StartAfter: key }))).Contents?.map((o) => o.Key)).toEqual([copy, 'c']);
    const first = await s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 1 }));
    const next = await s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 1, ContinuationToken: first.NextContinuationToken }));
    expect(next.Contents?.map((o) => o.Key)).toEqual([copy]);
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: key }))).Contents?.map((o) => o.Key)).toEqual([key]);
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: copy }));
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'c' }));
    expect(await absent(s3, bucket, key)).toBe(true);
    expect(await absent(s3, bucket, copy)).toBe(true);
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).KeyCount).toBe(0);
  });

  test('a 1024-byte key by multipart upload: create, parts, list, complete; and abort', async () => {
    const s3 = door.client();
    const key = keyOf('m', 1024, 'k');
    const other = keyOf('n', 1024, '€');
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const { UploadId: abortId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: other }));
    // The largest part the door takes: S3's 5 MiB minimum, or the 4 MiB a Lambda request carries (Cairn takes smaller parts).
    const part1 = randomBytes((door.lambda ? 4 : 5) * 1024 * 1024);
    const p1 = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: part1 }));
    const p2 = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 2, Body: 'tail' }));
    expect((await s3.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId }))).Parts?.map((p) => p.PartNumber)).toEqual([1, 2]);
    const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect(uploads.Uploads?.map((u) => [u.Key, u.UploadId])).toEqual([
      [key, UploadId],
      [other, abortId],
    ]);
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, KeyMarker: key }))).Uploads?.map((u) => u.Key)).toEqual([
      other,
    ]);
    expect(
      (await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, KeyMarker: key, UploadIdMarker: UploadId }))).Uploads?.map(
        (u) => u.Key,
      ),
    ).toEqual([other]);
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: other }))).Uploads?.map((u) => u.Key)).toEqual([other]);
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: p1.ETag },
            { PartNumber: 2, ETag: p2.ETag },
          ],
        },
      }),
    );
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(Buffer.concat([part1, Buffer.from('tail')]))).toBe(true);
    await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: other, UploadId: abortId }));
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? []).toEqual([]);
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  });

  test('1025 bytes is KeyTooLongError for put, copy and multipart; nothing is stored', async () => {
    const s3 = door.client();
    const key = keyOf('x', 1025);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'source', Body: 's' }));
    const tooLong = (p: Promise<unknown>) => failure(p).then((err) => [err.name, err.$metadata.httpStatusCode]);
    expect(await tooLong(s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'x' })))).toEqual(['KeyTooLongError', 400]);
    expect(await tooLong(s3.send(new CopyObjectCommand({ Bucket: bucket, Key: key, CopySource: `${bucket}/source` })))).toEqual([
      'KeyTooLongError',
      400,
    ]);
    expect(await tooLong(s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key })))).toEqual(['KeyTooLongError', 400]);
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents?.map((o) => o.Key)).toEqual(['source']);
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? []).toEqual([]);
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'source' }));
  });

  test('markers and upload ids past any stored length are answered, not a 500', async () => {
    const s3 = door.client();
    const long = keyOf('z', 1500);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'zz', Body: 'z' }));
    // Every key sorts before or after a marker longer than any key; a bound past the limit still lists.
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket, StartAfter: long }))).Contents?.map((o) => o.Key)).toEqual(['zz']);
    expect(
      (await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, KeyMarker: long, UploadIdMarker: 'u'.repeat(1100) }))).Uploads ?? [],
    ).toEqual([]);
    const err = await failure(
      s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'zz', UploadId: 'u'.repeat(1100), PartNumber: 1, Body: 'x' })),
    );
    expect([err.name, err.$metadata.httpStatusCode]).toEqual(['NoSuchUpload', 404]);
    const list = await failure(s3.send(new ListPartsCommand({ Bucket: bucket, Key: 'zz', UploadId: 'u'.repeat(2100) })));
    expect([list.name, list.$metadata.httpStatusCode]).toEqual(['NoSuchUpload', 404]);
    const complete = await failure(
      s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: 'zz',
          UploadId: 'u'.repeat(1100),
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"x"' }] },
        }),
      ),
    );
    expect([complete.name, complete.$metadata.httpStatusCode]).toEqual(['NoSuchUpload', 404]);
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'zz' }));
  });
});
