/**
 * An object's parts, read back: GetObject and HeadObject with `partNumber`
 * (the part's bytes, 206 with its Content-Range and x-amz-mp-parts-count;
 * InvalidPartNumber past the last; InvalidRequest with a Range), and
 * GetObjectAttributes (ETag, Checksum, ObjectParts paged with max-parts and
 * part-number-marker, StorageClass, ObjectSize; versionId; who may ask),
 * through each door with the real @aws-sdk/client-s3, as the API reference
 * and ceph's s3-tests (test_multipart_get_part, test_non_multipart_get_part,
 * test_get_object_attributes_*) have them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectAttributesCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketPolicyCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { failure, s3Doors } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const RUN = Date.now().toString(36);

beforeAll(async () => {
  target = await apiTarget({ CAIRN_S3_MIN_PART_SIZE: '0' });
});

afterAll(async () => {
  await target?.close();
});

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('base64');

describe.each(doorsFor(s3Doors(() => target)))('object parts through the $name', (door) => {
  let s3: S3Client;
  let B: string;
  let n = 0;
  const key = (what: string) => `parts-${door.tag}-${RUN}-${what}-${++n}`;
  beforeAll(() => {
    s3 = door.client();
    B = target.account.bucket;
  });

  /** A completed multipart object of parts of these sizes (with SHA-256 checksums when asked). */
  async function multipart(k: string, sizes: number[], checksum = false) {
    const bodies = sizes.map((s) => randomBytes(s));
    const { UploadId } = await s3.send(
      new CreateMultipartUploadCommand({ Bucket: B, Key: k, ...(checksum ? { ChecksumAlgorithm: 'SHA256' as const } : {}) }),
    );
    const parts = [];
    for (const [i, Body] of bodies.entries()) {
      const out = await s3.send(
        new UploadPartCommand({
          Bucket: B,
          Key: k,
          UploadId,
          PartNumber: i + 1,
          Body,
          ...(checksum ? { ChecksumAlgorithm: 'SHA256' as const } : {}),
        }),
      );
      parts.push({ PartNumber: i + 1, ETag: out.ETag, ...(checksum ? { ChecksumSHA256: out.ChecksumSHA256 } : {}) });
    }
    const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: B, Key: k, UploadId, MultipartUpload: { Parts: parts } }));
    return { bodies, done };
  }

  test('partNumber reads each part of a multipart object: 206, its bytes, Content-Range, x-amz-mp-parts-count', async () => {
    const k = key('get');
    // Runs of equal sizes and odd ones, as clients send them.
    const sizes = [1000, 1000, 1000, 777, 1000, 3];
    const { bodies } = await multipart(k, sizes);
    const whole = Buffer.concat(bodies);
    let offset = 0;
    for (const [i, body] of bodies.entries()) {
      const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: k, PartNumber: i + 1 }));
      expect(got.$metadata.httpStatusCode).toBe(206);
      expect(got.ContentRange).toBe(`bytes ${offset}-${offset + body.length - 1}/${whole.length}`);
      expect(got.ContentLength).toBe(body.length);
      expect(got.PartsCount).toBe(sizes.length);
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
      const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: k, PartNumber: i + 1 }));
      expect([head.ContentLength, head.ContentRange, head.PartsCount]).toEqual([body.length, got.ContentRange, sizes.length]);
      offset += body.length;
    }
    const past = await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: k, PartNumber: sizes.length + 1 })));
    expect([past.$metadata.httpStatusCode, past.name]).toEqual([416, 'InvalidPartNumber']);
    const both = await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: k, PartNumber: 1, Range: 'bytes=0-1' })));
    expect([both.$metadata.httpStatusCode, both.name]).toEqual([400, 'InvalidRequest']);
    const invalid = await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: k, PartNumber: 0 })));
    expect([invalid.$metadata.httpStatusCode, invalid.name]).toEqual([400, 'InvalidArgument']);
  });

  test("a part of an object with checksums answers that part's checksum", async () => {
    const k = key('sum');
    const { bodies } = await multipart(k, [1500, 1500, 10], true);
    for (const [i, body] of bodies.entries()) {
      const got = await s3.send(new HeadObjectCommand({ Bucket: B, Key: k, PartNumber: i + 1, ChecksumMode: 'ENABLED' }));
      expect(got.ChecksumSHA256).toBe(sha256(body));
    }
  });

  test('an object not uploaded in parts is one part: partNumber=1 is the whole object, 2 is InvalidPartNumber', async () => {
    const k = key('single');
    const body = randomBytes(4096);
    await s3.send(new PutObjectCommand({ Bucket: B, Key: k, Body: body }));
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: k, PartNumber: 1 }));
    expect(got.$metadata.httpStatusCode).toBe(206);
    expect(got.ContentRange).toBe(`bytes 0-4095/4096`);
    expect(got.PartsCount).toBeUndefined();
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
    const past = await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: k, PartNumber: 2 })));
    expect([past.$metadata.httpStatusCode, past.name]).toEqual([416, 'InvalidPartNumber']);
  });

  test('GetObjectAttributes of a multipart object: ETag, composite checksum, parts paged, storage class, size', async () => {
    const k = key('attrs');
    const sizes = [2000, 2000, 2000, 2000, 500];
    const { bodies, done } = await multipart(k, sizes, true);
    const all = await s3.send(
      new GetObjectAttributesCommand({
        Bucket: B,
        Key: k,
        ObjectAttributes: ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'],
      }),
    );
    expect(all.ETag).toBe(done.ETag!.replace(/"/g, ''));
    expect(all.ObjectSize).toBe(8500);
    expect(all.StorageClass).toBe('STANDARD');
    expect(all.Checksum).toEqual({ ChecksumSHA256: done.ChecksumSHA256!.split('-')[0], ChecksumType: 'COMPOSITE' });
    expect(all.LastModified).toBeInstanceOf(Date);
    expect(all.ObjectParts).toMatchObject({ TotalPartsCount: 5, IsTruncated: false, MaxParts: 1000 });
    expect(all.ObjectParts!.Parts!.map((p) => [p.PartNumber, p.Size, p.ChecksumSHA256])).toEqual(
      bodies.map((b, i) => [i + 1, b.length, sha256(b)]),
    );
    // Paged: two at a time after part 1.
    const page = await s3.send(
      new GetObjectAttributesCommand({ Bucket: B, Key: k, ObjectAttributes: ['ObjectParts'], MaxParts: 2, PartNumberMarker: '1' }),
    );
    expect(page.ObjectParts).toMatchObject({
      TotalPartsCount: 5,
      IsTruncated: true,
      MaxParts: 2,
      PartNumberMarker: '1',
      NextPartNumberMarker: '3',
    });
    expect(page.ObjectParts!.Parts!.map((p) => p.PartNumber)).toEqual([2, 3]);
    expect(page.ETag).toBeUndefined();
    const last = await s3.send(
      new GetObjectAttributesCommand({ Bucket: B, Key: k, ObjectAttributes: ['ObjectParts'], MaxParts: 2, PartNumberMarker: '3' }),
    );
    expect(last.ObjectParts).toMatchObject({ IsTruncated: false, NextPartNumberMarker: '5' });
    expect(last.ObjectParts!.Parts!.map((p) => p.PartNumber)).toEqual([4, 5]);
  });

  test('GetObjectAttributes of a plain object, a version, and refusals: no attributes, a bad name, a missing key', async () => {
    const bucket = `attrs-${door.tag}-${RUN}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    const first = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'first', ChecksumAlgorithm: 'SHA256' }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'second version' }));
    const latest = await s3.send(
      new GetObjectAttributesCommand({ Bucket: bucket, Key: 'k', ObjectAttributes: ['ObjectSize', 'ObjectParts', 'Checksum'] }),
    );
    // The SDK sends a CRC32 of every upload by default: the object's checksum.
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32('second version'));
    expect([latest.ObjectSize, latest.ObjectParts, latest.Checksum]).toEqual([
      14,
      undefined,
      { ChecksumCRC32: crc.toString('base64'), ChecksumType: 'FULL_OBJECT' },
    ]);
    const old = await s3.send(
      new GetObjectAttributesCommand({
        Bucket: bucket,
        Key: 'k',
        VersionId: first.VersionId,
        ObjectAttributes: ['ObjectSize', 'ETag', 'Checksum'],
      }),
    );
    expect([old.ObjectSize, old.ETag, old.VersionId]).toEqual([5, createHash('md5').update('first').digest('hex'), first.VersionId]);
    expect(old.Checksum).toEqual({ ChecksumSHA256: sha256(Buffer.from('first')), ChecksumType: 'FULL_OBJECT' });
    const bad = await failure(s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'k', ObjectAttributes: ['Colour' as never] })));
    expect([bad.$metadata.httpStatusCode, bad.name]).toEqual([400, 'InvalidArgument']);
    const none = await failure(s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'k', ObjectAttributes: [] })));
    expect([none.$metadata.httpStatusCode, none.name]).toEqual([400, 'InvalidArgument']);
    const missing = await failure(s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'nope', ObjectAttributes: ['ETag'] })));
    expect([missing.$metadata.httpStatusCode, missing.name]).toEqual([404, 'NoSuchKey']);
  });

  test('who may ask: another account is refused; a policy granting s3:GetObject alone is not enough, with s3:GetObjectAttributes it is', async () => {
    const bucket = `attrs-pol-${door.tag}-${RUN}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'secret' }));
    const other = door.client(target.other);
    const ask = () => other.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'k', ObjectAttributes: ['ObjectSize'] }));
    expect((await failure(ask())).name).toBe('AccessDenied');
    const grant = (Action: string[]) =>
      s3.send(
        new PutBucketPolicyCommand({
          Bucket: bucket,
          Policy: JSON.stringify({
            Version: '2012-10-17',
            Statement: [{ Effect: 'Allow', Principal: { AWS: '*' }, Action, Resource: `arn:aws:s3:::${bucket}/*` }],
          }),
        }),
      );
    await grant(['s3:GetObject']);
    expect((await failure(ask())).name).toBe('AccessDenied');
    // GetObject itself is allowed now.
    expect(await (await other.send(new GetObjectCommand({ Bucket: bucket, Key: 'k' }))).Body!.transformToString()).toBe('secret');
    await grant(['s3:GetObject', 's3:GetObjectAttributes']);
    expect((await ask()).ObjectSize).toBe(6);
  });
});
