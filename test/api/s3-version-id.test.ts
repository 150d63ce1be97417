/**
 * `x-amz-version-id` on every write, as S3 answers it: absent in a bucket
 * never versioned, `null` in a suspended one (S3's answer there: LocalStack's
 * `test_s3_copy_object_in_place_suspended_only`, recorded against S3,
 * asserts CopyObject's `VersionId == "null"`), the new version's id in an
 * enabled one.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { captureHeaders, s3Doors, uploadParts } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;

beforeAll(async () => {
  target = await apiTarget({ CAIRN_S3_MIN_PART_SIZE: '0' });
});

afterAll(async () => {
  await target?.close();
});

describe.each(doorsFor(s3Doors(() => target)))('through the $name', (door) => {
  const { tag } = door;
  let s3: S3Client;
  let seen: { headers: Record<string, string> };
  beforeAll(() => {
    s3 = door.client();
    seen = captureHeaders(s3);
  });

  /** The x-amz-version-id of every write (and a read) to a fresh bucket in `state`. */
  async function versionIds(state: 'never' | 'Suspended' | 'Enabled'): Promise<Record<string, string | undefined>> {
    const Bucket = `vid-${state.toLowerCase()}-${tag}-${Date.now() % 100000}`;
    await s3.send(new CreateBucketCommand({ Bucket }));
    if (state !== 'never') await s3.send(new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: state } }));
    const out: Record<string, string | undefined> = {};
    const id = () => seen.headers['x-amz-version-id'];
    await s3.send(new PutObjectCommand({ Bucket, Key: 'a', Body: 'a' }));
    out.put = id();
    await s3.send(new CopyObjectCommand({ Bucket, Key: 'b', CopySource: `${Bucket}/a` }));
    out.copy = id();
    const upload = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: 'c' }));
    const parts = await uploadParts(s3, { Bucket, Key: 'c', UploadId: upload.UploadId }, [Buffer.from('part')]);
    await s3.send(new CompleteMultipartUploadCommand({ Bucket, Key: 'c', UploadId: upload.UploadId, MultipartUpload: { Parts: parts } }));
    out.complete = id();
    await s3.send(new PutObjectTaggingCommand({ Bucket, Key: 'a', Tagging: { TagSet: [{ Key: 't', Value: 'v' }] } }));
    out.tagging = id();
    const got = await s3.send(new GetObjectCommand({ Bucket, Key: 'a' }));
    await got.Body!.transformToString();
    out.get = id();
    await s3.send(new DeleteObjectCommand({ Bucket, Key: 'a' }));
    out.delete = id();
    out.deleteMarker = seen.headers['x-amz-delete-marker'];
    const many = await s3.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: [{ Key: 'b' }] } }));
    out.deleteObjects = many.Deleted?.[0]?.VersionId ?? many.Deleted?.[0]?.DeleteMarkerVersionId;
    return out;
  }

  test('a bucket never versioned answers no version id at all', async () => {
    expect(await versionIds('never')).toEqual({
      put: undefined,
      copy: undefined,
      complete: undefined,
      tagging: undefined,
      get: undefined,
      delete: undefined,
      deleteMarker: undefined,
      deleteObjects: undefined,
    });
  });

  test('a suspended bucket answers null for the null versions its writes make', async () => {
    expect(await versionIds('Suspended')).toEqual({
      put: 'null',
      copy: 'null',
      complete: 'null',
      tagging: 'null',
      get: 'null',
      delete: 'null',
      deleteMarker: 'true',
      deleteObjects: 'null',
    });
  });

  test('an enabled bucket answers each new version id', async () => {
    const ids = await versionIds('Enabled');
    for (const op of ['put', 'copy', 'complete', 'delete', 'deleteObjects'] as const) expect(ids[op]).toMatch(/^[A-Za-z0-9._-]{16,}$/);
    expect(new Set([ids.put, ids.copy, ids.complete, ids.delete]).size).toBe(4);
    expect(ids.deleteMarker).toBe('true');
  });
});
