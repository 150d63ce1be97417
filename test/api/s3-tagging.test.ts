/**
 * Object and bucket tagging through each door with the real
 * @aws-sdk/client-s3, as S3's user guide (object-tagging.html: "You can
 * associate up to 10 tags with an object. Tags that are associated with an
 * object must have unique tag keys. A tag key can be up to 128 Unicode
 * characters in length, and tag values can be up to 256 Unicode characters
 * in length") and ceph's s3-tests (test_put_max_tags, test_put_excess_tags,
 * test_put_max_kvsize_tags, test_put_excess_key_tags / _val_tags,
 * test_put_modify_tags, test_put_delete_tags, test_set_multipart_tagging,
 * test_get_obj_head_tagging, test_put_obj_with_tags, test_set_bucket_tagging)
 * have it: a refused tag set is InvalidTag and leaves the tags as they were.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteBucketTaggingCommand,
  DeleteObjectTaggingCommand,
  GetBucketTaggingCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  PutBucketTaggingCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
  type Tag,
} from '@aws-sdk/client-s3';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { failure, s3Doors, uploadParts } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const RUN = Date.now().toString(36);

beforeAll(async () => {
  target = await apiTarget({ CAIRN_S3_MIN_PART_SIZE: '0' });
});

afterAll(async () => {
  await target?.close();
});

const tagSet = (n: number, key = (i: number) => `key${i}`, value = (i: number) => `value${i}`): Tag[] =>
  Array.from({ length: n }, (_, i) => ({ Key: key(i), Value: value(i) }));
const status = (err: { $metadata: { httpStatusCode?: number }; name: string }) => [err.$metadata.httpStatusCode, err.name];

describe.each(doorsFor(s3Doors(() => target)))('tagging through the $name', (door) => {
  let s3: S3Client;
  let B: string;
  beforeAll(() => {
    s3 = door.client();
    B = target.account.bucket;
  });
  const tagsOf = async (key: string) => (await s3.send(new GetObjectTaggingCommand({ Bucket: B, Key: key }))).TagSet ?? [];
  const putTags = (key: string, TagSet: Tag[]) => s3.send(new PutObjectTaggingCommand({ Bucket: B, Key: key, Tagging: { TagSet } }));

  test('an object takes up to 10 tags, kept in order; HEAD counts them; a new set replaces the old; delete empties it', async () => {
    const key = `tags-${door.tag}-${RUN}`;
    await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'tagged' }));
    expect(await tagsOf(key)).toEqual([]);
    const ten = tagSet(10, (i) => `k${9 - i}`);
    await putTags(key, ten);
    expect(await tagsOf(key)).toEqual(ten);
    const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: key }));
    expect(head.TagCount).toBe(10);
    await putTags(key, [{ Key: 'key3', Value: 'val3' }]);
    expect(await tagsOf(key)).toEqual([{ Key: 'key3', Value: 'val3' }]);
    expect((await s3.send(new DeleteObjectTaggingCommand({ Bucket: B, Key: key }))).$metadata.httpStatusCode).toBe(204);
    expect(await tagsOf(key)).toEqual([]);
    expect((await s3.send(new HeadObjectCommand({ Bucket: B, Key: key }))).TagCount).toBeUndefined();
  });

  test("S3's limits: 11 tags, a 129-character key, a 257-character value, a repeated key, aws: are InvalidTag and change nothing", async () => {
    const key = `tag-limits-${door.tag}-${RUN}`;
    await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'x' }));
    // The longest allowed, counted in Unicode characters (each of these is two UTF-16 units and four bytes).
    const longest = tagSet(
      10,
      (i) => `${i}${'𝄞'.repeat(127)}`,
      () => '𝄞'.repeat(256),
    );
    await putTags(key, longest);
    expect(await tagsOf(key)).toEqual(longest);
    for (const bad of [
      tagSet(11),
      tagSet(1, () => 'k'.repeat(129)),
      tagSet(1, undefined, () => 'v'.repeat(257)),
      [...tagSet(2), { Key: 'key0', Value: 'again' }],
      [{ Key: 'aws:reserved', Value: 'x' }],
      [{ Key: '', Value: 'x' }],
    ]) {
      expect(status(await failure(putTags(key, bad)))).toEqual([400, 'InvalidTag']);
    }
    expect(await tagsOf(key)).toEqual(longest);
  });

  test('x-amz-tagging on PutObject and CreateMultipartUpload; CopyObject copies the tags or, with REPLACE, sets its own', async () => {
    const key = `tag-put-${door.tag}-${RUN}`;
    await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'x', Tagging: 'Hello=World&foo=b%26r&empty=' }));
    expect(await tagsOf(key)).toEqual([
      { Key: 'Hello', Value: 'World' },
      { Key: 'foo', Value: 'b&r' },
      { Key: 'empty', Value: '' },
    ]);
    const tooMany = Array.from({ length: 11 }, (_, i) => `k${i}=v`).join('&');
    expect(status(await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: `${key}-no`, Body: 'x', Tagging: tooMany }))))).toEqual([
      400,
      'InvalidTag',
    ]);

    const mpu = `tag-mpu-${door.tag}-${RUN}`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: mpu, Tagging: 'Hello=World&foo=bar' }));
    const Parts = await uploadParts(s3, { Bucket: B, Key: mpu, UploadId }, [Buffer.from('one part')]);
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: B, Key: mpu, UploadId, MultipartUpload: { Parts } }));
    expect(await tagsOf(mpu)).toEqual([
      { Key: 'Hello', Value: 'World' },
      { Key: 'foo', Value: 'bar' },
    ]);

    await s3.send(new CopyObjectCommand({ Bucket: B, Key: `${key}-copy`, CopySource: `${B}/${key}` }));
    expect(await tagsOf(`${key}-copy`)).toEqual(await tagsOf(key));
    await s3.send(
      new CopyObjectCommand({ Bucket: B, Key: `${key}-replaced`, CopySource: `${B}/${key}`, TaggingDirective: 'REPLACE', Tagging: 'a=1' }),
    );
    expect(await tagsOf(`${key}-replaced`)).toEqual([{ Key: 'a', Value: '1' }]);
    await s3.send(new CopyObjectCommand({ Bucket: B, Key: `${key}-none`, CopySource: `${B}/${key}`, TaggingDirective: 'REPLACE' }));
    expect(await tagsOf(`${key}-none`)).toEqual([]);
  });

  test("a missing object's tags are NoSuchKey; another account may neither read nor set them", async () => {
    const missing = `tag-missing-${door.tag}-${RUN}`;
    expect(status(await failure(s3.send(new GetObjectTaggingCommand({ Bucket: B, Key: missing }))))).toEqual([404, 'NoSuchKey']);
    expect(status(await failure(putTags(missing, tagSet(1))))).toEqual([404, 'NoSuchKey']);
    const key = `tag-owner-${door.tag}-${RUN}`;
    await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'x', ACL: 'public-read', Tagging: 'secret=1' }));
    const stranger = door.client(target.other);
    expect(status(await failure(stranger.send(new GetObjectTaggingCommand({ Bucket: B, Key: key }))))).toEqual([403, 'AccessDenied']);
    expect(status(await failure(stranger.send(new PutObjectTaggingCommand({ Bucket: B, Key: key, Tagging: { TagSet: [] } }))))).toEqual([
      403,
      'AccessDenied',
    ]);
    // It may read the public object, but is not told how many tags it has.
    expect((await stranger.send(new HeadObjectCommand({ Bucket: B, Key: key }))).TagCount).toBeUndefined();
    expect(await tagsOf(key)).toEqual([{ Key: 'secret', Value: '1' }]);
  });

  test('a bucket: NoSuchTagSet until tagged, up to 50 tags, deleted with 204', async () => {
    const get = () => s3.send(new GetBucketTaggingCommand({ Bucket: B }));
    expect(status(await failure(get()))).toEqual([404, 'NoSuchTagSet']);
    await s3.send(new PutBucketTaggingCommand({ Bucket: B, Tagging: { TagSet: tagSet(50) } }));
    expect((await get()).TagSet).toEqual(tagSet(50));
    expect(status(await failure(s3.send(new PutBucketTaggingCommand({ Bucket: B, Tagging: { TagSet: tagSet(51) } }))))).toEqual([
      400,
      'InvalidTag',
    ]);
    expect((await get()).TagSet).toHaveLength(50);
    expect((await s3.send(new DeleteBucketTaggingCommand({ Bucket: B }))).$metadata.httpStatusCode).toBe(204);
    expect(status(await failure(get()))).toEqual([404, 'NoSuchTagSet']);
  });
});
