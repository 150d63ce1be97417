/**
 * Conditional writes and deletes, through each door with the real
 * @aws-sdk/client-s3. AWS's user guide (conditional-writes.html): "With
 * conditional writes, you can add an additional header to your WRITE
 * requests to specify preconditions for your Amazon S3 operation ... If
 * the condition isn't met, the operation fails" (412 Precondition Failed),
 * for PutObject, CopyObject ("before creating it or copying it to the
 * destination bucket") and CompleteMultipartUpload (`If-None-Match`,
 * `If-Match`) and DeleteObject (`If-Match`). The cases are ceph's s3-tests
 * (`test_put_object_if_match`, `test_multipart_put_object_if_match`,
 * `test_delete_object_if_match`): If-Match on a missing object is NoSuchKey
 * for a write and a plain 204 for a delete; `*` matches any object.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { absent, failure, s3Doors, uploadParts } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const RUN = Date.now().toString(36);

beforeAll(async () => {
  target = await apiTarget({ CAIRN_S3_MIN_PART_SIZE: '0' });
});

afterAll(async () => {
  await target?.close();
});

const status = (err: { $metadata: { httpStatusCode?: number }; name: string }) => [err.$metadata.httpStatusCode, err.name];

describe.each(doorsFor(s3Doors(() => target)))('conditional writes through the $name', (door) => {
  let s3: S3Client;
  let B: string;
  beforeAll(() => {
    s3 = door.client();
    B = target.account.bucket;
  });
  const read = async (key: string) => (await s3.send(new GetObjectCommand({ Bucket: B, Key: key }))).Body!.transformToString();
  const put = (key: string, body: string, conditions: { IfMatch?: string; IfNoneMatch?: string } = {}) =>
    s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: body, ...conditions }));

  test('PutObject: If-None-Match * or the current ETag is 412 and the object stays; If-Match needs the object and its ETag', async () => {
    const key = `put-if-${door.tag}-${RUN}`;
    const { ETag: first } = await put(key, 'one', { IfNoneMatch: '*' });
    expect(status(await failure(put(key, 'two', { IfNoneMatch: '*' })))).toEqual([412, 'PreconditionFailed']);
    expect(status(await failure(put(key, 'two', { IfNoneMatch: first! })))).toEqual([412, 'PreconditionFailed']);
    expect(await read(key)).toBe('one');
    const { ETag: second } = await put(key, 'two', { IfNoneMatch: '"badetag"' });
    expect(await read(key)).toBe('two');
    expect(status(await failure(put(key, 'three', { IfMatch: first! })))).toEqual([412, 'PreconditionFailed']);
    expect(await read(key)).toBe('two');
    await put(key, 'three', { IfMatch: second! });
    await put(key, 'four', { IfMatch: '*' });
    expect(await read(key)).toBe('four');
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: key }));
    // If-Match on no object: NoSuchKey, and nothing is made.
    expect(status(await failure(put(key, 'five', { IfMatch: '*' })))).toEqual([404, 'NoSuchKey']);
    expect(status(await failure(put(key, 'five', { IfMatch: second! })))).toEqual([404, 'NoSuchKey']);
    expect(await absent(s3, B, key)).toBe(true);
  });

  test('of many PutObjects with If-None-Match * at once, exactly one creates the object; the others are 412', async () => {
    const key = `put-race-${door.tag}-${RUN}`;
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        put(key, `writer ${i}`, { IfNoneMatch: '*' }).then(
          () => `writer ${i}`,
          (err: { $metadata: { httpStatusCode?: number }; name: string }) => status(err).join(' '),
        ),
      ),
    );
    const winners = outcomes.filter((o) => o.startsWith('writer'));
    expect(winners).toHaveLength(1);
    expect(outcomes.filter((o) => o === '412 PreconditionFailed')).toHaveLength(7);
    expect(await read(key)).toBe(winners[0]);
  });

  test('CompleteMultipartUpload: the same conditions; a refused one leaves the upload to complete later', async () => {
    const key = `mpu-if-${door.tag}-${RUN}`;
    const complete = async (body: string, conditions: { IfMatch?: string; IfNoneMatch?: string }) => {
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
      const Parts = await uploadParts(s3, { Bucket: B, Key: key, UploadId }, [Buffer.from(body)]);
      const send = (c = conditions) =>
        s3.send(new CompleteMultipartUploadCommand({ Bucket: B, Key: key, UploadId, MultipartUpload: { Parts }, ...c }));
      return { UploadId, send };
    };
    expect(status(await failure((await complete('a', { IfMatch: '*' })).send()))).toEqual([404, 'NoSuchKey']);
    const { ETag: first } = await (await complete('one', { IfNoneMatch: '*' })).send();
    const refused = await complete('two', { IfNoneMatch: '*' });
    expect(status(await failure(refused.send()))).toEqual([412, 'PreconditionFailed']);
    expect(await read(key)).toBe('one');
    // The refused upload is still there, and completes without the condition.
    const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: B, Prefix: key }));
    expect(uploads.Uploads?.map((u) => u.UploadId)).toContain(refused.UploadId);
    expect(status(await failure(refused.send({ IfMatch: '"badetag"' })))).toEqual([412, 'PreconditionFailed']);
    await refused.send({ IfMatch: first! });
    expect(await read(key)).toBe('two');
  });

  test("CopyObject: the destination's If-None-Match and If-Match hold as PutObject's; the source's conditions stay apart", async () => {
    const source = `copy-src-${door.tag}-${RUN}`;
    const key = `copy-if-${door.tag}-${RUN}`;
    const { ETag: sourceEtag } = await put(source, 'copied');
    const copy = (conditions: { IfMatch?: string; IfNoneMatch?: string; CopySourceIfMatch?: string }) =>
      s3.send(new CopyObjectCommand({ Bucket: B, Key: key, CopySource: `${B}/${source}`, ...conditions }));
    // No destination yet: If-Match (any or an ETag) is NoSuchKey and makes nothing; If-None-Match * creates it.
    expect(status(await failure(copy({ IfMatch: '*' })))).toEqual([404, 'NoSuchKey']);
    expect(status(await failure(copy({ IfMatch: sourceEtag! })))).toEqual([404, 'NoSuchKey']);
    expect(await absent(s3, B, key)).toBe(true);
    await copy({ IfNoneMatch: '*' });
    expect(await read(key)).toBe('copied');
    // The destination now exists: If-None-Match * fails and it stays as it is.
    const { ETag: mine } = await put(key, 'mine');
    expect(status(await failure(copy({ IfNoneMatch: '*' })))).toEqual([412, 'PreconditionFailed']);
    expect(status(await failure(copy({ IfMatch: sourceEtag! })))).toEqual([412, 'PreconditionFailed']);
    expect(await read(key)).toBe('mine');
    // If-Match on the destination's own ETag replaces it, whatever the source's ETag is.
    await copy({ IfMatch: mine! });
    expect(await read(key)).toBe('copied');
    // x-amz-copy-source-if-match is about the source: it passes on the source's ETag and fails on another.
    expect(status(await failure(copy({ CopySourceIfMatch: '"badetag"' })))).toEqual([412, 'PreconditionFailed']);
    await copy({ CopySourceIfMatch: sourceEtag! });
  });

  test('of many CopyObjects with If-None-Match * to one key at once, exactly one creates it', async () => {
    const source = `copy-race-src-${door.tag}-${RUN}`;
    const key = `copy-race-${door.tag}-${RUN}`;
    await put(source, 'raced');
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, () =>
        s3.send(new CopyObjectCommand({ Bucket: B, Key: key, CopySource: `${B}/${source}`, IfNoneMatch: '*' })).then(
          () => 'copied',
          (err: { $metadata: { httpStatusCode?: number }; name: string }) => status(err).join(' '),
        ),
      ),
    );
    expect(outcomes.filter((o) => o === 'copied')).toHaveLength(1);
    expect(outcomes.filter((o) => o === '412 PreconditionFailed')).toHaveLength(5);
  });

  test('DeleteObject: If-Match another ETag is 412 and keeps the object; a missing object is 204 whatever its If-Match', async () => {
    const key = `del-if-${door.tag}-${RUN}`;
    const { ETag } = await put(key, 'kept');
    const del = (IfMatch: string) => s3.send(new DeleteObjectCommand({ Bucket: B, Key: key, IfMatch }));
    expect(status(await failure(del('"badetag"')))).toEqual([412, 'PreconditionFailed']);
    expect(await read(key)).toBe('kept');
    expect((await del(ETag!)).$metadata.httpStatusCode).toBe(204);
    expect(await absent(s3, B, key)).toBe(true);
    expect((await del('*')).$metadata.httpStatusCode).toBe(204);
    expect((await del('"badetag"')).$metadata.httpStatusCode).toBe(204);
    await put(key, 'again');
    await del('*');
    expect(await absent(s3, B, key)).toBe(true);
  });

  test("DeleteObjects: an entry's ETag makes its delete conditional; a mismatch fails that entry alone", async () => {
    const [a, b] = [`dels-a-${door.tag}-${RUN}`, `dels-b-${door.tag}-${RUN}`];
    const { ETag: etagA } = await put(a, 'a');
    await put(b, 'b');
    const out = await s3.send(
      new DeleteObjectsCommand({
        Bucket: B,
        Delete: {
          Objects: [
            { Key: a, ETag: etagA },
            { Key: b, ETag: '"badetag"' },
          ],
        },
      }),
    );
    expect(out.Deleted?.map((d) => d.Key)).toEqual([a]);
    expect(out.Errors?.map((e) => [e.Key, e.Code])).toEqual([[b, 'PreconditionFailed']]);
    expect(await absent(s3, B, a)).toBe(true);
    expect(await read(b)).toBe('b');
  });
});
