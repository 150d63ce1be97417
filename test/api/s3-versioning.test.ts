/**
 * S3 versioning through each door with the real @aws-sdk/client-s3, as
 * ceph's s3-tests have it (each test names the cases it follows): every
 * version keeps its own CID (`x-service-ipfs-hash`), a delete makes a
 * delete marker, a delete by version id removes that version for good and
 * the one before becomes the latest, a suspended bucket writes the null
 * version, ListObjectVersions pages by key and version markers.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  GetObjectAclCommand,
  PutObjectAclCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  UploadPartCommand,
  type ListObjectVersionsCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { captureHeaders, failure, s3Doors } from '../support/s3-doors.js';
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

describe.each(doorsFor(s3Doors(() => target)))('versioning through the $name', (door) => {
  let s3: S3Client;
  let seen: { headers: Record<string, string> };
  let n = 0;
  /** A bucket of this door's own, with versioning as asked. */
  async function bucket(state?: 'Enabled' | 'Suspended'): Promise<string> {
    const name = `ver-${door.tag}-${RUN}-${++n}`;
    await s3.send(new CreateBucketCommand({ Bucket: name }));
    if (state) await s3.send(new PutBucketVersioningCommand({ Bucket: name, VersioningConfiguration: { Status: state } }));
    return name;
  }
  const put = async (Bucket: string, Key: string, Body: string) => {
    const out = await s3.send(new PutObjectCommand({ Bucket, Key, Body }));
    return { versionId: out.VersionId!, cid: seen.headers['x-service-ipfs-hash']! };
  };
  const body = async (Bucket: string, Key: string, VersionId?: string) =>
    (await s3.send(new GetObjectCommand({ Bucket, Key, VersionId }))).Body!.transformToString();
  const versions = (
    Bucket: string,
    extra: Partial<{ Prefix: string; Delimiter: string; MaxKeys: number; KeyMarker: string; VersionIdMarker: string }> = {},
  ) => s3.send(new ListObjectVersionsCommand({ Bucket, ...extra }));
  const summary = (out: ListObjectVersionsCommandOutput) =>
    [
      ...(out.Versions ?? []).map((v) => ({ key: v.Key, id: v.VersionId, latest: v.IsLatest, marker: false, t: v.LastModified })),
      ...(out.DeleteMarkers ?? []).map((m) => ({ key: m.Key, id: m.VersionId, latest: m.IsLatest, marker: true, t: m.LastModified })),
    ]
      .sort((a, b) => (a.key! < b.key! ? -1 : a.key! > b.key! ? 1 : a.id! < b.id! ? -1 : 1))
      .map(({ key, id, latest, marker }) => ({ key, id, latest, marker }));

  beforeAll(() => {
    s3 = door.client();
    seen = captureHeaders(s3);
  });

  test('Get/PutBucketVersioning: never versioned is empty; Enabled and Suspended stick; MfaDelete Enabled is NotImplemented (test_versioning_bucket_create_suspend)', async () => {
    const B = await bucket();
    expect((await s3.send(new GetBucketVersioningCommand({ Bucket: B }))).Status).toBeUndefined();
    for (const Status of ['Suspended', 'Enabled', 'Enabled', 'Suspended', 'Suspended'] as const) {
      await s3.send(new PutBucketVersioningCommand({ Bucket: B, VersioningConfiguration: { Status } }));
      expect((await s3.send(new GetBucketVersioningCommand({ Bucket: B }))).Status).toBe(Status);
    }
    const mfa = await failure(
      s3.send(new PutBucketVersioningCommand({ Bucket: B, VersioningConfiguration: { Status: 'Enabled', MFADelete: 'Enabled' } })),
    );
    expect(status(mfa)).toEqual([501, 'NotImplemented']);
    const other = target.s3(target.other);
    const denied = await failure(other.send(new PutBucketVersioningCommand({ Bucket: B, VersioningConfiguration: { Status: 'Enabled' } })));
    expect(status(denied)).toEqual([403, 'AccessDenied']);
    expect(status(await failure(other.send(new GetBucketVersioningCommand({ Bucket: B }))))).toEqual([403, 'AccessDenied']);
    expect((await s3.send(new GetBucketVersioningCommand({ Bucket: B }))).Status).toBe('Suspended');
  });

  test('each write is a version with its own id and CID, readable by versionId (test_versioning_obj_create_read_remove_head)', async () => {
    const B = await bucket('Enabled');
    const made = [];
    for (const text of ['one', 'two', 'three']) made.push(await put(B, 'k', text));
    expect(new Set(made.map((m) => m.versionId)).size).toBe(3);
    expect(new Set(made.map((m) => m.cid)).size).toBe(3);
    expect(await body(B, 'k')).toBe('three');
    for (const [i, text] of ['one', 'two', 'three'].entries()) {
      const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: 'k', VersionId: made[i]!.versionId }));
      expect(await got.Body!.transformToString()).toBe(text);
      expect(got.VersionId).toBe(made[i]!.versionId);
      expect(seen.headers['x-service-ipfs-hash']).toBe(made[i]!.cid);
      const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: 'k', VersionId: made[i]!.versionId }));
      expect(head.ContentLength).toBe(text.length);
    }
    const listed = await versions(B);
    expect((listed.Versions ?? []).map((v) => [v.VersionId, v.IsLatest, v.Size])).toEqual([
      [made[2]!.versionId, true, 5],
      [made[1]!.versionId, false, 3],
      [made[0]!.versionId, false, 3],
    ]);
    // A forged id of the right form, another key's id, a malformed one.
    const forged = made[0]!.versionId.slice(0, 16) + 'A'.repeat(16);
    expect(status(await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: 'k', VersionId: forged }))))).toEqual([
      404,
      'NoSuchVersion',
    ]);
    await put(B, 'other', 'x');
    expect(status(await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: 'other', VersionId: made[0]!.versionId }))))).toEqual([
      404,
      'NoSuchVersion',
    ]);
    expect(status(await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: 'k', VersionId: '../../etc' }))))).toEqual([
      400,
      'InvalidArgument',
    ]);
    // Another account learns nothing about the versions.
    const other = target.s3(target.other);
    expect(status(await failure(other.send(new GetObjectCommand({ Bucket: B, Key: 'k', VersionId: made[0]!.versionId }))))).toEqual([
      403,
      'AccessDenied',
    ]);
    expect(status(await failure(other.send(new DeleteObjectCommand({ Bucket: B, Key: 'k', VersionId: made[0]!.versionId }))))).toEqual([
      403,
      'AccessDenied',
    ]);
    expect(await body(B, 'k', made[0]!.versionId)).toBe('one');
  });

  test('a delete makes a delete marker; GET is NoSuchKey saying so, the marker by id is 405; removing the marker restores the object (test_versioning_obj_create_read_remove_head, test_delete_marker_versioned, test_versioning_stack_delete_merkers)', async () => {
    const B = await bucket('Enabled');
    const v1 = await put(B, 'd', 'first');
    const del = await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'd' }));
    expect(del.DeleteMarker).toBe(true);
    expect(del.VersionId).toMatch(/^\d{16}[\w-]{16}$/);
    const miss = await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: 'd' })));
    expect(status(miss)).toEqual([404, 'NoSuchKey']);
    expect(seen.headers['x-amz-delete-marker']).toBe('true');
    expect(seen.headers['x-amz-version-id']).toBe(del.VersionId);
    const byId = await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: 'd', VersionId: del.VersionId })));
    expect(byId.$metadata.httpStatusCode).toBe(405);
    expect(seen.headers['x-amz-delete-marker']).toBe('true');
    expect(await body(B, 'd', v1.versionId)).toBe('first');
    // ListObjects sees nothing; ListObjectVersions sees both, the marker latest.
    expect((await s3.send(new ListObjectsV2Command({ Bucket: B }))).KeyCount).toBe(0);
    expect(summary(await versions(B))).toEqual(
      [
        { key: 'd', id: del.VersionId, latest: true, marker: true },
        { key: 'd', id: v1.versionId, latest: false, marker: false },
      ].sort((a, b) => (a.id! < b.id! ? -1 : 1)),
    );
    // The bucket is not empty while versions remain.
    expect(status(await failure(s3.send(new DeleteBucketCommand({ Bucket: B }))))).toEqual([409, 'BucketNotEmpty']);
    const gone = await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'd', VersionId: del.VersionId }));
    expect(gone.DeleteMarker).toBe(true);
    expect(gone.VersionId).toBe(del.VersionId);
    expect(await body(B, 'd')).toBe('first');
    // A delete of a key that never existed still makes a marker (test_versioning_multi_object_delete_with_marker_create).
    const ghost = await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'never' }));
    expect(ghost.DeleteMarker).toBe(true);
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'never', VersionId: ghost.VersionId }));
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'd', VersionId: v1.versionId }));
    expect((await versions(B)).Versions ?? []).toEqual([]);
    await s3.send(new DeleteBucketCommand({ Bucket: B }));
  });

  test('deleting versions by id: the current one promotes the one before; a middle one goes alone (test_versioning_obj_create_versions_remove_all, test_delete_object_version_if_match)', async () => {
    const B = await bucket('Enabled');
    const made = [];
    for (const text of ['a', 'b', 'c', 'd']) made.push(await put(B, 'r', text));
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'r', VersionId: made[1]!.versionId }));
    expect(await body(B, 'r')).toBe('d');
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'r', VersionId: made[3]!.versionId }));
    expect(await body(B, 'r')).toBe('c');
    const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: 'r' }));
    expect(head.VersionId).toBe(made[2]!.versionId);
    expect((await versions(B)).Versions!.map((v) => [v.VersionId, v.IsLatest])).toEqual([
      [made[2]!.versionId, true],
      [made[0]!.versionId, false],
    ]);
    // Deleting a version that is gone changes nothing.
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'r', VersionId: made[3]!.versionId }));
    expect(await body(B, 'r')).toBe('c');
    // If-Match on a version's delete names that version (test_delete_object_version_if_match).
    const bad = await failure(s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'r', VersionId: made[0]!.versionId, IfMatch: '"bad"' })));
    expect(status(bad)).toEqual([412, 'PreconditionFailed']);
    const etag0 = (await s3.send(new HeadObjectCommand({ Bucket: B, Key: 'r', VersionId: made[0]!.versionId }))).ETag!;
    const byMatch = await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'r', VersionId: made[0]!.versionId, IfMatch: etag0 }));
    expect(byMatch.DeleteMarker).toBeUndefined();
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'r', VersionId: made[0]!.versionId, IfMatch: '"bad"' }));
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'r', VersionId: made[2]!.versionId }));
    expect(status(await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: 'r' }))))).toEqual([404, 'NoSuchKey']);
    await s3.send(new DeleteBucketCommand({ Bucket: B }));
  });

  test('objects written before versioning are the null version, kept and readable as versionId=null (test_versioning_obj_plain_null_version_overwrite, test_versioning_obj_plain_null_version_removal)', async () => {
    const B = await bucket();
    const plain = await s3.send(new PutObjectCommand({ Bucket: B, Key: 'p', Body: 'plain' }));
    expect(plain.VersionId).toBeUndefined();
    expect(seen.headers['x-amz-version-id']).toBeUndefined();
    await s3.send(new PutBucketVersioningCommand({ Bucket: B, VersioningConfiguration: { Status: 'Enabled' } }));
    const v = await put(B, 'p', 'versioned');
    expect(await body(B, 'p', 'null')).toBe('plain');
    expect(summary(await versions(B)).map((e) => [e.id === 'null' ? 'null' : 'v', e.latest])).toEqual(
      expect.arrayContaining([
        ['null', false],
        ['v', true],
      ]),
    );
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'p', VersionId: 'null' }));
    expect(status(await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: 'p', VersionId: 'null' }))))).toEqual([
      404,
      'NoSuchVersion',
    ]);
    expect(await body(B, 'p')).toBe('versioned');
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'p', VersionId: v.versionId }));
    await s3.send(new DeleteBucketCommand({ Bucket: B }));
  });

  test('suspended: writes and deletes replace the null version, other versions stay (test_versioning_obj_suspend_versions, test_delete_marker_suspended, test_versioning_bucket_multipart_upload_return_version_id)', async () => {
    const B = await bucket('Enabled');
    const v1 = await put(B, 's', 'kept');
    await s3.send(new PutBucketVersioningCommand({ Bucket: B, VersioningConfiguration: { Status: 'Suspended' } }));
    const n1 = await put(B, 's', 'null one');
    expect(n1.versionId).toBe('null');
    const n2 = await put(B, 's', 'null two');
    expect(n2.versionId).toBe('null');
    expect(await body(B, 's', 'null')).toBe('null two');
    expect(summary(await versions(B)).map((e) => e.id)).toEqual([v1.versionId, 'null'].sort());
    // A suspended delete makes the null version a delete marker.
    const del = await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 's' }));
    expect([del.DeleteMarker, del.VersionId]).toEqual([true, 'null']);
    expect(summary(await versions(B))).toEqual(
      [
        { key: 's', id: 'null', latest: true, marker: true },
        { key: 's', id: v1.versionId, latest: false, marker: false },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
    // Enabled again: a new version; the marker stays a (non-latest) version.
    await s3.send(new PutBucketVersioningCommand({ Bucket: B, VersioningConfiguration: { Status: 'Enabled' } }));
    const v2 = await put(B, 's', 'again');
    expect(summary(await versions(B)).length).toBe(3);
    expect(await body(B, 's')).toBe('again');
    // A multipart upload makes a version too.
    const up = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: 's' }));
    const part = await s3.send(new UploadPartCommand({ Bucket: B, Key: 's', UploadId: up.UploadId, PartNumber: 1, Body: 'multi' }));
    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: B,
        Key: 's',
        UploadId: up.UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
      }),
    );
    expect(done.VersionId).toMatch(/^\d{16}/);
    expect(done.VersionId).not.toBe(v2.versionId);
    expect(await body(B, 's', v2.versionId)).toBe('again');
    expect(await body(B, 's')).toBe('multi');
  });

  test('CopyObject from a version: the copy is a new version naming the same CID (test_object_copy_versioned_bucket, test_object_copy_versioned_url_encoding)', async () => {
    const B = await bucket('Enabled');
    const v1 = await put(B, 'src key', 'old bytes');
    await put(B, 'src key', 'new bytes');
    const copy = await s3.send(
      new CopyObjectCommand({ Bucket: B, Key: 'dst', CopySource: `${B}/${encodeURIComponent('src key')}?versionId=${v1.versionId}` }),
    );
    expect(copy.CopySourceVersionId).toBe(v1.versionId);
    expect(copy.VersionId).toMatch(/^\d{16}/);
    expect(seen.headers['x-service-ipfs-hash']).toBe(v1.cid);
    expect(await body(B, 'dst')).toBe('old bytes');
    // Restoring an old version over its own key is allowed.
    await s3.send(
      new CopyObjectCommand({ Bucket: B, Key: 'src key', CopySource: `${B}/${encodeURIComponent('src key')}?versionId=${v1.versionId}` }),
    );
    expect(await body(B, 'src key')).toBe('old bytes');
    const del = await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'gone' }));
    const fromMarker = await failure(
      s3.send(new CopyObjectCommand({ Bucket: B, Key: 'x', CopySource: `${B}/gone?versionId=${del.VersionId}` })),
    );
    expect(status(fromMarker)).toEqual([400, 'InvalidRequest']);
    const missing = await failure(
      s3.send(new CopyObjectCommand({ Bucket: B, Key: 'x', CopySource: `${B}/dst?versionId=${v1.versionId}` })),
    );
    expect(status(missing)).toEqual([404, 'NoSuchVersion']);
  });

  test('the latest two versions deleted at once, by separate requests, leave no version behind (test_versioned_concurrent_object_create_and_remove)', async () => {
    // A delete of the latest version moves the one before it to the current record; a delete of that one
    // read beside it must not take the move for its own success.
    for (let round = 0; round < 8; round++) {
      const B = await bucket('Enabled');
      const v1 = await put(B, 'k', '1');
      const v2 = await put(B, 'k', '2');
      await Promise.all([
        s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'k', VersionId: v2.versionId })),
        s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'k', VersionId: v1.versionId })),
      ]);
      expect(summary(await versions(B))).toEqual([]);
    }
  });

  test('DeleteObjects with VersionId per entry, and markers for entries without (test_versioning_multi_object_delete, test_versioning_multi_object_delete_with_marker)', async () => {
    const B = await bucket('Enabled');
    const a1 = await put(B, 'a', '1');
    const a2 = await put(B, 'a', '2');
    await put(B, 'b', '1');
    const out = await s3.send(
      new DeleteObjectsCommand({
        Bucket: B,
        Delete: { Objects: [{ Key: 'a', VersionId: a1.versionId }, { Key: 'a', VersionId: a2.versionId }, { Key: 'b' }] },
      }),
    );
    expect(out.Errors ?? []).toEqual([]);
    expect(out.Deleted!.map((d) => [d.Key, d.VersionId, d.DeleteMarker ?? false])).toEqual([
      ['a', a1.versionId, false],
      ['a', a2.versionId, false],
      ['b', undefined, true],
    ]);
    expect(out.Deleted![2]!.DeleteMarkerVersionId).toMatch(/^\d{16}/);
    expect(summary(await versions(B)).filter((e) => e.key === 'a')).toEqual([]);
    const bad = await s3.send(new DeleteObjectsCommand({ Bucket: B, Delete: { Objects: [{ Key: 'b', VersionId: 'forged' }] } }));
    expect(bad.Errors!.map((e) => e.Code)).toEqual(['InvalidArgument']);
  });

  test('ListObjectVersions: prefix, delimiter, key and version-id markers page through every version once (test_versioning_obj_list_marker, test_bucket_list_return_data_versioning)', async () => {
    const B = await bucket('Enabled');
    const expected: Array<{ key: string; id: string }> = [];
    for (const key of ['a/1', 'a/2', 'b', 'c']) {
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await put(B, key, `${key}-${i}`)).versionId);
      expected.push(...ids.reverse().map((id) => ({ key, id })));
    }
    const marker = await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'b' }));
    expected.splice(6, 0, { key: 'b', id: marker.VersionId! });
    // Every page size pages through the same versions, in S3's order.
    for (const MaxKeys of [1, 2, 5, 1000]) {
      const got: Array<{ key: string; id: string }> = [];
      let KeyMarker: string | undefined;
      let VersionIdMarker: string | undefined;
      for (let pages = 0; pages < 30; pages++) {
        const out = await versions(B, { MaxKeys, KeyMarker, VersionIdMarker });
        const page = [
          ...(out.Versions ?? []).map((v) => ({ key: v.Key!, id: v.VersionId!, t: 'v' })),
          ...(out.DeleteMarkers ?? []).map((m) => ({ key: m.Key!, id: m.VersionId!, t: 'm' })),
        ];
        // Within a page, keys ascending and each key's versions newest first (the ids' sorts fall with time).
        page.sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : x.id < y.id ? -1 : 1));
        expect(page.length).toBeLessThanOrEqual(MaxKeys);
        got.push(...page.map(({ key, id }) => ({ key, id })));
        if (!out.IsTruncated) break;
        KeyMarker = out.NextKeyMarker;
        VersionIdMarker = out.NextVersionIdMarker;
      }
      expect(got).toEqual(expected);
    }
    const latest = await versions(B, { Prefix: 'b' });
    expect(latest.DeleteMarkers!.map((m) => [m.VersionId, m.IsLatest])).toEqual([[marker.VersionId, true]]);
    expect(latest.Versions!.every((v) => v.IsLatest === false)).toBe(true);
    const delimited = await versions(B, { Delimiter: '/' });
    expect(delimited.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['a/']);
    expect(new Set((delimited.Versions ?? []).map((v) => v.Key))).toEqual(new Set(['b', 'c']));
    // A huge max-keys is capped, a forged version-id marker refused.
    expect((await versions(B, { MaxKeys: 1_000_000 })).MaxKeys).toBe(1000);
    expect(status(await failure(versions(B, { KeyMarker: 'b', VersionIdMarker: 'x'.repeat(2000) })))).toEqual([400, 'InvalidArgument']);
    // A key marker longer than any key, with a version marker, is an empty page, not an error.
    expect((await versions(B, { KeyMarker: 'k'.repeat(1100), VersionIdMarker: expected[0]!.id })).Versions ?? []).toEqual([]);
    // ListObjects lists only current objects that are not deleted.
    expect((await s3.send(new ListObjectsV2Command({ Bucket: B }))).Contents!.map((o) => o.Key)).toEqual(['a/1', 'a/2', 'c']);
  });

  test('tagging per version, and conditional writes against the latest version (test_put_object_ifmatch_*, test_put_object_ifnonmatch_* on a versioned bucket)', async () => {
    const B = await bucket('Enabled');
    const v1 = await put(B, 't', 'one');
    const v2 = await put(B, 't', 'two');
    await s3.send(
      new PutObjectTaggingCommand({ Bucket: B, Key: 't', VersionId: v1.versionId, Tagging: { TagSet: [{ Key: 'old', Value: '1' }] } }),
    );
    expect((await s3.send(new GetObjectTaggingCommand({ Bucket: B, Key: 't', VersionId: v1.versionId }))).TagSet).toEqual([
      { Key: 'old', Value: '1' },
    ]);
    expect((await s3.send(new GetObjectTaggingCommand({ Bucket: B, Key: 't' }))).TagSet).toEqual([]);
    const onMarker = await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'gone' }));
    const tagMarker = await failure(
      s3.send(new PutObjectTaggingCommand({ Bucket: B, Key: 'gone', VersionId: onMarker.VersionId, Tagging: { TagSet: [] } })),
    );
    expect(tagMarker.$metadata.httpStatusCode).toBe(405);
    // Each version has its own ACL: one asked for by version is that version's.
    await s3.send(new PutObjectAclCommand({ Bucket: B, Key: 't', VersionId: v1.versionId, ACL: 'public-read' }));
    const acl = await s3.send(new GetObjectAclCommand({ Bucket: B, Key: 't', VersionId: v1.versionId }));
    expect(acl.Grants?.map((g) => g.Grantee?.URI ?? g.Permission)).toEqual([
      'FULL_CONTROL',
      'http://acs.amazonaws.com/groups/global/AllUsers',
    ]);
    expect((await s3.send(new GetObjectAclCommand({ Bucket: B, Key: 't' }))).Grants).toHaveLength(1);
    // If-Match names the latest version's ETag; If-None-Match: * refuses while an object is the latest.
    const etag2 = (await s3.send(new HeadObjectCommand({ Bucket: B, Key: 't' }))).ETag!;
    const refused = await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: 't', Body: 'x', IfNoneMatch: '*' })));
    expect(status(refused)).toEqual([412, 'PreconditionFailed']);
    const wrong = await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: 't', Body: 'x', IfMatch: '"0123"' })));
    expect(wrong.$metadata.httpStatusCode).toBe(412);
    await s3.send(new PutObjectCommand({ Bucket: B, Key: 't', Body: 'three', IfMatch: etag2 }));
    expect(await body(B, 't', v2.versionId)).toBe('two');
    // With the latest a delete marker there is no object: If-None-Match: * writes.
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 't' }));
    await s3.send(new PutObjectCommand({ Bucket: B, Key: 't', Body: 'four', IfNoneMatch: '*' }));
    expect(await body(B, 't')).toBe('four');
    expect((await versions(B, { Prefix: 't' })).Versions!.length).toBe(4);
  });
});
