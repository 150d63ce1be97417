/**
 * Bucket policy conditions on what a request carries and on the object it
 * acts on, through each door with the real @aws-sdk/client-s3: the object's
 * current tags (s3:ExistingObjectTag/<key>), the tags a request sets
 * (s3:RequestObjectTag/<key>, s3:RequestObjectTagKeys, with ForAnyValue: and
 * ForAllValues:), x-amz-copy-source, x-amz-metadata-directive, x-amz-acl and
 * the x-amz-grant-* headers, s3:VersionId, Null and the key names' case, as
 * ceph's s3-tests have them (each test names its cases). Every key has an
 * Allow or a Deny that flips with the request's value, so that each test
 * fails where the key is not evaluated. An attacker's tries are here too:
 * a tag named like another key, too many tags, a tag key in another case.
 */
import {
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetBucketAclCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  PutBucketAclCommand,
  PutBucketPolicyCommand,
  PutBucketVersioningCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  AbortMultipartUploadCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { hostFetch } from '../support/http.js';
import { absent, failure, s3Doors } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
let ownerId: string;
const RUN = Date.now().toString(36);

beforeAll(async () => {
  target = await apiTarget();
  ownerId = (await target.s3(target.account).send(new GetBucketAclCommand({ Bucket: target.account.bucket }))).Owner!.ID!;
});

afterAll(async () => {
  await target?.close();
});

/** The client with extra headers on every request, signed with it (what boto3's before-call hooks do in ceph's cases). */
function withHeaders(client: S3Client, extra: Record<string, string | undefined>): S3Client {
  const add = (next: (args: unknown) => Promise<unknown>) => (args: unknown) => {
    const headers = (args as { request: { headers: Record<string, string> } }).request.headers;
    for (const [name, value] of Object.entries(extra)) {
      if (value === undefined) delete headers[name];
      else headers[name] = value;
    }
    return next(args);
  };
  client.middlewareStack.add(add as never, { step: 'build', name: 'extraHeaders' });
  return client;
}

type Statement = Record<string, unknown>;
const doc = (...Statement: Statement[]) => JSON.stringify({ Version: '2012-10-17', Statement });
const objects = (bucket: string, Action: string | string[], Condition?: Record<string, unknown>, extra: Statement = {}): Statement => ({
  Effect: 'Allow',
  Principal: { AWS: '*' },
  Action,
  Resource: `arn:aws:s3:::${bucket}/*`,
  ...(Condition ? { Condition } : {}),
  ...extra,
});
const code = async (p: Promise<unknown>) => {
  const err = await failure(p);
  return `${err.$metadata.httpStatusCode} ${err.name}`;
};
const status = async (p: Promise<{ $metadata: { httpStatusCode?: number } }>) => {
  try {
    return (await p).$metadata.httpStatusCode;
  } catch (err) {
    return `${(err as { $metadata: { httpStatusCode?: number } }).$metadata.httpStatusCode} ${(err as Error).name}`;
  }
};
const TagSet = (tags: Record<string, string>) => Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));

describe.each(doorsFor(s3Doors(() => target)))('policy conditions through the $name', (door) => {
  let s3: S3Client;
  let other: S3Client;
  let n = 0;
  const newBucket = async () => {
    const bucket = `cond-${door.tag}-${RUN}-${++n}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    return bucket;
  };
  const put = (bucket: string, ...statements: Statement[]) =>
    s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: doc(...statements) }));
  /** Objects `publictag` (security=public, foo=bar), `privatetag` (security=private), `invalidtag` (security1=public), `casetag` (Security=public). */
  const taggedObjects = async (bucket: string) => {
    const tagged: Record<string, Record<string, string>> = {
      publictag: { security: 'public', foo: 'bar' },
      privatetag: { security: 'private' },
      invalidtag: { security1: 'public' },
      casetag: { Security: 'public' },
    };
    for (const [Key, tags] of Object.entries(tagged)) {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: Key }));
      await s3.send(new PutObjectTaggingCommand({ Bucket: bucket, Key, Tagging: { TagSet: TagSet(tags) } }));
    }
  };
  beforeAll(() => {
    s3 = door.client();
    other = door.client(target.other);
  });

  test('s3:ExistingObjectTag on GetObject and HeadObject: the tag key is case-sensitive, the key name not (s3-tests test_bucket_policy_get_obj_existing_tag)', async () => {
    const bucket = await newBucket();
    await taggedObjects(bucket);
    await put(bucket, objects(bucket, 's3:GetObject', { StringEquals: { 'S3:existingObjectTag/security': 'public' } }));
    const get = (Key: string) => status(other.send(new GetObjectCommand({ Bucket: bucket, Key })));
    expect([await get('publictag'), await get('privatetag'), await get('invalidtag'), await get('casetag')]).toEqual([
      200,
      '403 AccessDenied',
      '403 AccessDenied',
      '403 AccessDenied',
    ]);
    expect(await status(other.send(new HeadObjectCommand({ Bucket: bucket, Key: 'publictag' })))).toBe(200);
    // Retagging the object flips the answer: the tags are read per request, not cached.
    await s3.send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'privatetag', Tagging: { TagSet: TagSet({ security: 'public' }) } }));
    expect(await get('privatetag')).toBe(200);
    // The key allows GetObject only: another action of the same object is not covered.
    expect(await code(other.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'publictag' })))).toBe('403 AccessDenied');
  });

  test('s3:ExistingObjectTag on GetObjectTagging, GetObjectAcl and PutObjectTagging (s3-tests test_bucket_policy_get_obj_tagging_existing_tag, test_bucket_policy_get_obj_acl_existing_tag, test_bucket_policy_put_obj_tagging_existing_tag)', async () => {
    const bucket = await newBucket();
    await taggedObjects(bucket);
    await put(
      bucket,
      objects(bucket, ['s3:GetObjectTagging', 's3:GetObjectAcl', 's3:PutObjectTagging'], {
        StringEquals: { 's3:ExistingObjectTag/security': 'public' },
      }),
    );
    expect(await status(other.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'publictag' })))).toBe(200);
    expect(await status(other.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'publictag' })))).toBe(200);
    expect(await code(other.send(new GetObjectCommand({ Bucket: bucket, Key: 'publictag' })))).toBe('403 AccessDenied');
    for (const Key of ['privatetag', 'invalidtag']) {
      expect(await code(other.send(new GetObjectTaggingCommand({ Bucket: bucket, Key })))).toBe('403 AccessDenied');
      expect(await code(other.send(new GetObjectAclCommand({ Bucket: bucket, Key })))).toBe('403 AccessDenied');
    }
    const retag = (Key: string, tags: Record<string, string>) =>
      status(other.send(new PutObjectTaggingCommand({ Bucket: bucket, Key, Tagging: { TagSet: TagSet(tags) } })));
    expect(await retag('publictag', { security: 'public', foo: 'bar' })).toBe(200);
    expect(await retag('privatetag', { security: 'public' })).toBe('403 AccessDenied');
    // Its current tags decide, not the ones it asks for: once private, the caller cannot put them back.
    expect(await retag('publictag', { security: 'private' })).toBe(200);
    expect(await retag('publictag', { security: 'public' })).toBe('403 AccessDenied');
    expect((await s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'publictag' }))).TagSet).toEqual(
      TagSet({ security: 'private' }),
    );
  });

  test("a Deny on a missing tag refuses the owner too; PutObject does not carry s3:ExistingObjectTag (S3's table)", async () => {
    const bucket = await newBucket();
    await taggedObjects(bucket);
    await put(
      bucket,
      objects(bucket, 's3:GetObject', { StringNotEquals: { 's3:ExistingObjectTag/security': 'public' } }, { Effect: 'Deny' }),
      objects(bucket, 's3:PutObject', { StringEquals: { 's3:ExistingObjectTag/security': 'public' } }, { Effect: 'Deny' }),
    );
    expect(await status(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'publictag' })))).toBe(200);
    expect(await code(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'invalidtag' })))).toBe('403 AccessDenied');
    expect(await code(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'casetag' })))).toBe('403 AccessDenied');
    // The key is absent from a PutObject, so StringEquals on it never denies the overwrite.
    expect(await status(s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'publictag', Body: 'again' })))).toBe(200);
  });

  test("the gateway's public URL weighs the object's tags as GetObject does", async () => {
    const bucket = await newBucket();
    await taggedObjects(bucket);
    await put(bucket, objects(bucket, 's3:GetObject', { StringEquals: { 's3:ExistingObjectTag/security': 'public' } }, { Principal: '*' }));
    const at = (key: string) =>
      hostFetch(`${target.endpoints.gateway}/${key}`, { headers: { host: `${bucket}.${target.domains.storagePublic}` } }).then(
        (r) => r.status,
      );
    // The gateway caches a bucket's record for a few seconds: this bucket is new to it, so it sees the policy at once.
    expect([await at('publictag'), await at('privatetag'), await at('casetag')]).toEqual([200, 403, 403]);
  });

  test('s3:RequestObjectTag on PutObject, CreateMultipartUpload and CopyObject (s3-tests test_bucket_policy_put_obj_request_obj_tag)', async () => {
    const bucket = await newBucket();
    await put(bucket, objects(bucket, 's3:PutObject', { StringEquals: { 's3:RequestObjectTag/security': 'public' } }));
    const putAs = (Key: string, Tagging?: string) =>
      status(other.send(new PutObjectCommand({ Bucket: bucket, Key, Body: Key, ...(Tagging !== undefined ? { Tagging } : {}) })));
    expect(await putAs('none')).toBe('403 AccessDenied');
    expect(await putAs('pub', 'security=public&x=y')).toBe(200);
    // Values compare case-sensitively under StringEquals, tag keys too.
    expect(await putAs('cased', 'security=Public')).toBe('403 AccessDenied');
    expect(await putAs('keycase', 'Security=public')).toBe('403 AccessDenied');
    // A tag named like another key is only a tag: it cannot stand in for it.
    expect(await putAs('lookalike', 's3%3ARequestObjectTag%2Fsecurity=public')).toBe('403 AccessDenied');
    expect([await absent(s3, bucket, 'none'), await absent(s3, bucket, 'cased'), await absent(s3, bucket, 'pub')]).toEqual([
      true,
      true,
      false,
    ]);
    const upload = await other.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mp', Tagging: 'security=public' }));
    await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: 'mp', UploadId: upload.UploadId! }));
    expect(await code(other.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mp2', Tagging: 'security=private' })))).toBe(
      '403 AccessDenied',
    );
    // Eleven tags are InvalidTag (400), never a 500 or a decision on the first ten.
    const eleven = Array.from({ length: 11 }, (_, i) => `k${i}=v`).join('&');
    expect(await putAs('many', `security=public&${eleven}`)).toBe('400 InvalidTag');
  });

  test('s3:RequestObjectTagKeys with ForAllValues and ForAnyValue, on PutObjectTagging (the body) and PutObject', async () => {
    const bucket = await newBucket();
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'obj', Body: 'obj' }));
    await put(
      bucket,
      objects(bucket, ['s3:PutObjectTagging', 's3:PutObject'], {
        'ForAllValues:StringEquals': { 's3:RequestObjectTagKeys': ['project', 'owner'] },
      }),
      objects(bucket, 's3:PutObjectTagging', { 'ForAnyValue:StringLike': { 's3:requestobjecttagkeys': 'secret*' } }, { Effect: 'Deny' }),
    );
    const tag = (client: S3Client, tags: Record<string, string>) =>
      status(client.send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'obj', Tagging: { TagSet: TagSet(tags) } })));
    expect(await tag(other, { project: 'a' })).toBe(200);
    expect(await tag(other, { project: 'a', owner: 'b' })).toBe(200);
    expect(await tag(other, { project: 'a', evil: 'c' })).toBe('403 AccessDenied');
    // The body read to decide is the body stored.
    expect((await s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'obj' }))).TagSet).toEqual(
      TagSet({ project: 'a', owner: 'b' }),
    );
    // ForAnyValue: one secret key among others is enough for the Deny, the owner's request too.
    expect(await tag(s3, { project: 'a', secretive: 'x' })).toBe('403 AccessDenied');
    expect(await tag(s3, { project: 'a' })).toBe(200);
    // ForAllValues holds for a request with no tags at all (as IAM documents), so a bare PutObject is allowed.
    expect(await status(other.send(new PutObjectCommand({ Bucket: bucket, Key: 'bare', Body: 'x' })))).toBe(200);
    expect(await status(other.send(new PutObjectCommand({ Bucket: bucket, Key: 'b2', Body: 'x', Tagging: 'owner=me' })))).toBe(200);
    expect(await status(other.send(new PutObjectCommand({ Bucket: bucket, Key: 'b3', Body: 'x', Tagging: 'owner=me&x=y' })))).toBe(
      '403 AccessDenied',
    );
  });

  test('Null on a request tag: a Deny for writes without it', async () => {
    const bucket = await newBucket();
    await put(bucket, objects(bucket, 's3:PutObject', { Null: { 's3:RequestObjectTag/project': 'true' } }, { Effect: 'Deny' }));
    expect(await code(s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'a', Body: 'a' })))).toBe('403 AccessDenied');
    expect(await code(s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'a', Body: 'a', Tagging: 'other=x' })))).toBe('403 AccessDenied');
    expect(await status(s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'a', Body: 'a', Tagging: 'project=x' })))).toBe(200);
  });

  test('s3:x-amz-copy-source and s3:x-amz-metadata-directive on CopyObject (s3-tests test_bucket_policy_put_obj_copy_source, test_bucket_policy_put_obj_copy_source_meta)', async () => {
    const source = await newBucket();
    for (const Key of ['public/foo', 'public/bar', 'private/foo', 'public/sp ace']) {
      await s3.send(new PutObjectCommand({ Bucket: source, Key, Body: Key }));
    }
    await put(source, objects(source, 's3:GetObject'));
    const dest = await newBucket();
    await put(dest, objects(dest, 's3:PutObject', { StringLike: { 's3:x-amz-copy-source': `${source}/public/*` } }));
    const copy = (from: string, Key: string) => status(other.send(new CopyObjectCommand({ Bucket: dest, Key, CopySource: from })));
    expect(await copy(`${source}/public/foo`, 'new_foo')).toBe(200);
    // The header decoded, with or without its leading slash, as S3 compares it.
    expect(await copy(`/${source}/public/sp%20ace`, 'new_space')).toBe(200);
    expect(await copy(`${source}/private/foo`, 'new_foo2')).toBe('403 AccessDenied');
    // A plain PutObject has no copy source: the condition fails.
    expect(await code(other.send(new PutObjectCommand({ Bucket: dest, Key: 'plain', Body: 'x' })))).toBe('403 AccessDenied');
    expect(await (await s3.send(new GetObjectCommand({ Bucket: dest, Key: 'new_space' }))).Body!.transformToString()).toBe('public/sp ace');

    const meta = await newBucket();
    await put(meta, objects(meta, 's3:PutObject', { StringEquals: { 's3:x-amz-metadata-directive': 'COPY' } }));
    const copyMeta = (Key: string, directive?: 'COPY' | 'REPLACE') =>
      status(
        other.send(
          new CopyObjectCommand({
            Bucket: meta,
            Key,
            CopySource: `${source}/public/foo`,
            ...(directive ? { MetadataDirective: directive } : {}),
          }),
        ),
      );
    expect(await copyMeta('m1', 'COPY')).toBe(200);
    expect(await copyMeta('m2')).toBe('403 AccessDenied');
    expect(await copyMeta('m3', 'REPLACE')).toBe('403 AccessDenied');
  });

  test('s3:x-amz-acl and s3:x-amz-grant-* on PutObject, PutObjectAcl and PutBucketAcl (s3-tests test_bucket_policy_put_obj_acl, test_bucket_policy_put_obj_grant)', async () => {
    const bucket = await newBucket();
    await put(
      bucket,
      objects(bucket, 's3:PutObject'),
      objects(bucket, 's3:PutObject', { StringLike: { 's3:x-amz-acl': 'public*' } }, { Effect: 'Deny' }),
    );
    expect(await status(other.send(new PutObjectCommand({ Bucket: bucket, Key: 'private-key', Body: 'k' })))).toBe(200);
    expect(await code(other.send(new PutObjectCommand({ Bucket: bucket, Key: 'public-key', Body: 'k', ACL: 'public-read' })))).toBe(
      '403 AccessDenied',
    );
    expect(await absent(s3, bucket, 'public-key')).toBe(true);

    const granted = await newBucket();
    const owner = `id=${ownerId}`;
    await put(
      granted,
      objects(granted, 's3:PutObject', { StringEquals: { 's3:x-amz-grant-full-control': owner } }),
      objects(granted, 's3:PutObjectAcl', { StringEquals: { 's3:x-amz-grant-read': owner } }),
      { ...objects(granted, 's3:PutBucketAcl', { StringEquals: { 's3:x-amz-acl': 'private' } }), Resource: `arn:aws:s3:::${granted}` },
    );
    const grantClient = withHeaders(door.client(target.other), { 'x-amz-grant-full-control': owner });
    expect(await status(grantClient.send(new PutObjectCommand({ Bucket: granted, Key: 'key1', Body: 'key1' })))).toBe(200);
    expect(await code(other.send(new PutObjectCommand({ Bucket: granted, Key: 'key2', Body: 'key2' })))).toBe('403 AccessDenied');
    expect(
      await code(
        withHeaders(door.client(target.other), { 'x-amz-grant-full-control': `id=${ownerId}x` }).send(
          new PutObjectCommand({ Bucket: granted, Key: 'key3', Body: 'key3' }),
        ),
      ),
    ).toBe('403 AccessDenied');
    expect(await status(other.send(new PutObjectAclCommand({ Bucket: granted, Key: 'key1', GrantRead: owner })))).toBe(200);
    expect(await code(other.send(new PutObjectAclCommand({ Bucket: granted, Key: 'key1', GrantRead: `id="${ownerId}"` })))).toBe(
      '403 AccessDenied',
    );
    expect(await status(other.send(new PutBucketAclCommand({ Bucket: granted, ACL: 'private' })))).toBe(200);
    expect(await code(other.send(new PutBucketAclCommand({ Bucket: granted, ACL: 'public-read' })))).toBe('403 AccessDenied');
    // The ACL keys are the ACL writes': on a read the header says nothing (absent), so a condition on it fails.
    await put(granted, objects(granted, 's3:GetObject', { StringEquals: { 's3:x-amz-acl': 'private' } }));
    expect(
      await code(
        withHeaders(door.client(target.other), { 'x-amz-acl': 'private' }).send(new GetObjectCommand({ Bucket: granted, Key: 'key1' })),
      ),
    ).toBe('403 AccessDenied');
  });

  test('s3:VersionId on GetObjectVersion: a Deny of one version leaves the others', async () => {
    const bucket = await newBucket();
    await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    const v1 = (await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'one' }))).VersionId!;
    const v2 = (await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'two' }))).VersionId!;
    await put(bucket, objects(bucket, 's3:GetObjectVersion', { StringEquals: { 's3:VersionId': v1 } }, { Effect: 'Deny' }));
    expect(await code(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'k', VersionId: v1 })))).toBe('403 AccessDenied');
    expect(await status(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'k', VersionId: v2 })))).toBe(200);
    // Without a versionId the request is s3:GetObject, which carries no version id.
    expect(await status(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'k' })))).toBe(200);
  });

  test('an anonymous POST upload: its tagging and acl fields are the request tags and x-amz-acl a policy weighs', async () => {
    const bucket = await newBucket();
    await put(
      bucket,
      objects(bucket, 's3:PutObject', { StringEquals: { 's3:RequestObjectTag/security': 'public' } }, { Principal: '*' }),
      objects(bucket, 's3:PutObject', { StringLike: { 's3:x-amz-acl': 'public*' } }, { Principal: '*', Effect: 'Deny' }),
    );
    const { url } = await createPresignedPost(s3, { Bucket: bucket, Key: 'x' });
    const boundary = '----CairnPolicyConditions';
    const form = (fields: Array<[string, string]>) =>
      Buffer.concat([
        ...fields.map(([name, value]) =>
          Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
        ),
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.txt"\r\nContent-Type: text/plain\r\n\r\nbody\r\n--${boundary}--\r\n`,
        ),
      ]);
    const tagging = (value: string) => `<Tagging><TagSet><Tag><Key>security</Key><Value>${value}</Value></Tag></TagSet></Tagging>`;
    const post = (fields: Array<[string, string]>) =>
      door
        .fetch(url, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body: form(fields) })
        .then((r) => r.status);
    expect(
      await post([
        ['key', 'p1'],
        ['tagging', tagging('public')],
      ]),
    ).toBe(204);
    expect(
      await post([
        ['key', 'p2'],
        ['tagging', tagging('private')],
      ]),
    ).toBe(403);
    expect(await post([['key', 'p3']])).toBe(403);
    expect(
      await post([
        ['key', 'p4'],
        ['tagging', tagging('public')],
        ['acl', 'private'],
      ]),
    ).toBe(204);
    expect(
      await post([
        ['key', 'p5'],
        ['tagging', tagging('public')],
        ['acl', 'public-read'],
      ]),
    ).toBe(403);
    expect([await absent(s3, bucket, 'p1'), await absent(s3, bucket, 'p2'), await absent(s3, bucket, 'p5')]).toEqual([false, true, true]);
  });

  test('a tag key the policy cannot mean is MalformedPolicy: empty, or longer than S3 allows', async () => {
    const bucket = await newBucket();
    for (const key of ['s3:ExistingObjectTag/', `s3:RequestObjectTag/${'k'.repeat(129)}`, 's3:ExistingObjectTags']) {
      const err = await failure(put(bucket, objects(bucket, 's3:GetObject', { StringEquals: { [key]: 'x' } })));
      expect([err.$metadata.httpStatusCode, err.name]).toEqual([400, 'MalformedPolicy']);
    }
    expect(
      await status(put(bucket, objects(bucket, 's3:GetObject', { StringEquals: { [`s3:RequestObjectTag/${'k'.repeat(128)}`]: 'x' } }))),
    ).toBe(204);
  });
});
