/**
 * Bucket policies, public access blocks and ownership controls through each
 * door with the real @aws-sdk/client-s3, two accounts and anonymous
 * callers, as ceph's s3-tests have them (each test names its cases), and
 * the gateway's public URLs, which are anonymous GetObjects to a policy.
 * What an attacker would try is here too: a forged X-Forwarded-For, another
 * account managing the policy, a public policy under BlockPublicPolicy.
 */
import {
  CreateBucketCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  DeleteBucketOwnershipControlsCommand,
  DeleteBucketPolicyCommand,
  DeletePublicAccessBlockCommand,
  GetBucketAclCommand,
  GetBucketOwnershipControlsCommand,
  GetBucketPolicyCommand,
  GetBucketPolicyStatusCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  GetPublicAccessBlockCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutBucketAclCommand,
  PutBucketOwnershipControlsCommand,
  PutBucketPolicyCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  PutPublicAccessBlockCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { apiTarget, REMOTE, type ApiTarget } from '../support/api-target.js';
import { hostFetch } from '../support/http.js';
import { failure, s3Doors } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';
import { waitFor } from '../support/wait.js';
import { BUCKET_CACHE_MS } from '../../functions/core/data/buckets.js';

let target: ApiTarget;
let otherId: string;
const RUN = Date.now().toString(36);

beforeAll(async () => {
  target = await apiTarget();
  otherId = (await target.s3(target.other).send(new GetBucketAclCommand({ Bucket: target.other.bucket }))).Owner!.ID!;
});

afterAll(async () => {
  await target?.close();
});

/** The client with its signature taken off again: what an anonymous caller sends. */
function unsigned(client: S3Client): S3Client {
  const unsign = (next: (args: unknown) => Promise<unknown>) => (args: unknown) => {
    const headers = (args as { request: { headers: Record<string, string> } }).request.headers;
    for (const name of Object.keys(headers)) {
      if (['authorization', 'x-amz-date', 'x-amz-security-token'].includes(name.toLowerCase())) delete headers[name];
    }
    return next(args);
  };
  client.middlewareStack.addRelativeTo(unsign as never, { relation: 'after', toMiddleware: 'httpSigningMiddleware', name: 'unsign' });
  return client;
}

/** The client with extra headers on every request (sent after signing: a proxy or an attacker adds them). */
function withHeaders(client: S3Client, extra: Record<string, string>): S3Client {
  const add = (next: (args: unknown) => Promise<unknown>) => (args: unknown) => {
    Object.assign((args as { request: { headers: Record<string, string> } }).request.headers, extra);
    return next(args);
  };
  client.middlewareStack.addRelativeTo(add as never, { relation: 'after', toMiddleware: 'httpSigningMiddleware', name: 'extraHeaders' });
  return client;
}

type Statement = Record<string, unknown>;
const doc = (...Statement: Statement[]) => JSON.stringify({ Version: '2012-10-17', Statement });
const everything = (bucket: string, extra: Statement = {}): Statement => ({
  Effect: 'Allow',
  Principal: { AWS: '*' },
  Action: 's3:*',
  Resource: [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/*`],
  ...extra,
});
const code = async (p: Promise<unknown>) => {
  const err = await failure(p);
  return `${err.$metadata.httpStatusCode} ${err.name}`;
};
/**
 * The gateway's answer once a bucket's settings have reached it: through a
 * Lambda door the S3 handler and the gateway are two processes' worth of
 * caches, and another process sees a bucket's change within BUCKET_CACHE_MS.
 */
const settles = async (status: () => Promise<unknown>, expected: unknown) => {
  let last: unknown;
  await waitFor(async () => JSON.stringify((last = await status())) === JSON.stringify(expected), {
    timeoutMs: BUCKET_CACHE_MS + 5_000,
    intervalMs: 100,
    what: () => `the gateway to answer ${JSON.stringify(expected)} (last ${JSON.stringify(last)})`,
  });
  return last;
};
const ok = async (p: Promise<{ $metadata: { httpStatusCode?: number } }>) => (await p).$metadata.httpStatusCode;

describe.each(doorsFor(s3Doors(() => target)))('bucket policies through the $name', (door) => {
  let s3: S3Client;
  let other: S3Client;
  let anon: S3Client;
  let n = 0;
  /** A new bucket of the account's, holding `asdf`. */
  const newBucket = async (acl?: 'public-read' | 'authenticated-read') => {
    const bucket = `pol-${door.tag}-${RUN}-${++n}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket, ...(acl ? { ACL: acl } : {}) }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'asdf', Body: 'asdf' }));
    return bucket;
  };
  const put = (bucket: string, policy: string, client = s3) => client.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: policy }));
  const policyOf = async (bucket: string) => (await s3.send(new GetBucketPolicyCommand({ Bucket: bucket }))).Policy;
  beforeAll(() => {
    s3 = door.client();
    other = door.client(target.other);
    anon = unsigned(door.client());
  });

  test('put, get (byte for byte), delete; none is NoSuchBucketPolicy (s3-tests test_set_get_del_bucket_policy)', async () => {
    const bucket = await newBucket();
    expect(await code(s3.send(new GetBucketPolicyCommand({ Bucket: bucket })))).toBe('404 NoSuchBucketPolicy');
    const text = `{ "Version": "2012-10-17",\n  "Statement": [${JSON.stringify(everything(bucket, { Action: 's3:ListBucket' }))}] }`;
    expect(await ok(put(bucket, text))).toBe(204);
    expect(await policyOf(bucket)).toBe(text);
    expect(await ok(s3.send(new DeleteBucketPolicyCommand({ Bucket: bucket })))).toBe(204);
    expect(await code(s3.send(new GetBucketPolicyCommand({ Bucket: bucket })))).toBe('404 NoSuchBucketPolicy');
  });

  test("only the owner manages the policy, even one granting s3:* to everyone; another account's attempt changes nothing", async () => {
    const bucket = await newBucket();
    const open = doc(everything(bucket));
    await put(bucket, open);
    expect(await code(other.send(new GetBucketPolicyCommand({ Bucket: bucket })))).toBe('403 AccessDenied');
    expect(await code(put(bucket, doc(everything(bucket, { Effect: 'Deny' })), other))).toBe('403 AccessDenied');
    expect(await code(other.send(new DeleteBucketPolicyCommand({ Bucket: bucket })))).toBe('403 AccessDenied');
    expect(await code(anon.send(new DeleteBucketPolicyCommand({ Bucket: bucket })))).toBe('403 AccessDenied');
    expect(await code(other.send(new PutPublicAccessBlockCommand({ Bucket: bucket, PublicAccessBlockConfiguration: {} })))).toBe(
      '403 AccessDenied',
    );
    expect(await policyOf(bucket)).toBe(open);
  });

  test('a malformed policy is MalformedPolicy with a message and changes nothing (s3-tests test_bucket_policy_allow_notprincipal)', async () => {
    const bucket = await newBucket();
    const good = doc(everything(bucket, { Action: 's3:GetObject' }));
    await put(bucket, good);
    const cases: Array<[string, string]> = [
      ['{"Version": "2012-10-17", "Statement": [', 'This policy contains invalid Json'],
      [doc(everything(bucket, { Resource: 'arn:aws:s3:::someone-elses-bucket/*' })), 'Policy has invalid resource'],
      [
        doc({ ...everything(bucket), Principal: undefined, NotPrincipal: { AWS: 'arn:aws:iam::s3tenant1:root' } }),
        'NotPrincipal is supported with "Effect": "Deny" only',
      ],
      [doc(everything(bucket, { Action: 's3:MakeCoffee' })), 'Policy has invalid action'],
      [doc(everything(bucket, { Sid: 'x'.repeat(21 * 1024) })), 'Policies must be less than 20 KB'],
      ['['.repeat(3000) + ']'.repeat(3000), 'Policies must not be nested more than 8 levels deep'],
    ];
    for (const [text, message] of cases) {
      const err = await failure(put(bucket, text));
      expect([err.$metadata.httpStatusCode, err.name, err.message]).toEqual([400, 'MalformedPolicy', message]);
    }
    expect(await policyOf(bucket)).toBe(good);
  });

  test('an Allow to * opens listing to another account (s3-tests test_bucket_policy, test_bucketv2_policy, test_bucket_policy_another_bucket)', async () => {
    const bucket = await newBucket();
    expect(await code(other.send(new ListObjectsCommand({ Bucket: bucket })))).toBe('403 AccessDenied');
    await put(bucket, doc(everything(bucket, { Action: 's3:ListBucket', Resource: ['arn:aws:s3:::*', 'arn:aws:s3:::*/*'] })));
    expect((await other.send(new ListObjectsCommand({ Bucket: bucket }))).Contents?.map((c) => c.Key)).toEqual(['asdf']);
    expect((await other.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents?.map((c) => c.Key)).toEqual(['asdf']);
    // Listing is not reading: the object itself stays private.
    expect(await code(other.send(new GetObjectCommand({ Bucket: bucket, Key: 'asdf' })))).toBe('403 AccessDenied');
  });

  test('a grant to one account is for that account alone, by id or root ARN', async () => {
    const bucket = await newBucket();
    await put(bucket, doc(everything(bucket, { Principal: { AWS: `arn:aws:iam::${otherId}:root` }, Action: 's3:GetObject' })));
    expect(await (await other.send(new GetObjectCommand({ Bucket: bucket, Key: 'asdf' }))).Body!.transformToString()).toBe('asdf');
    expect(await code(anon.send(new GetObjectCommand({ Bucket: bucket, Key: 'asdf' })))).toBe('403 AccessDenied');
    expect(await code(other.send(new PutObjectCommand({ Bucket: bucket, Key: 'x', Body: 'x' })))).toBe('403 AccessDenied');
  });

  test('Deny beats an ACL grant, and the owner too, who may still fix the policy (s3-tests test_bucket_policy_acl, test_bucketv2_policy_acl, test_bucket_policy_deny_self_denied_policy)', async () => {
    const bucket = await newBucket('authenticated-read');
    expect(await ok(other.send(new ListObjectsCommand({ Bucket: bucket })))).toBe(200);
    await put(
      bucket,
      doc(
        everything(bucket, {
          Effect: 'Deny',
          Action: ['s3:ListBucket', 's3:PutBucketPolicy', 's3:GetBucketPolicy', 's3:DeleteBucketPolicy'],
        }),
      ),
    );
    expect(await code(other.send(new ListObjectsCommand({ Bucket: bucket })))).toBe('403 AccessDenied');
    expect(await code(other.send(new ListObjectsV2Command({ Bucket: bucket })))).toBe('403 AccessDenied');
    expect(await code(s3.send(new ListObjectsV2Command({ Bucket: bucket })))).toBe('403 AccessDenied');
    expect(await policyOf(bucket)).toContain('Deny');
    expect(await ok(s3.send(new DeleteBucketPolicyCommand({ Bucket: bucket })))).toBe(204);
    expect(await ok(other.send(new ListObjectsCommand({ Bucket: bucket })))).toBe(200);
  });

  test("PutObject on the bucket's ARN is not on its objects (s3-tests test_bucket_policy_multipart); what another account writes is the owner's", async () => {
    const bucket = await newBucket();
    const create = () => other.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mpobj' }));
    expect(await code(create())).toBe('403 AccessDenied');
    await put(bucket, doc(everything(bucket, { Action: 's3:PutObject', Resource: `arn:aws:s3:::${bucket}` })));
    expect(await code(create())).toBe('403 AccessDenied');
    await put(bucket, doc(everything(bucket, { Action: 's3:PutObject', Resource: `arn:aws:s3:::${bucket}/mp*` })));
    expect((await create()).UploadId).toBeTruthy();
    await other.send(new PutObjectCommand({ Bucket: bucket, Key: 'mp-put', Body: 'from other' }));
    expect(await code(other.send(new PutObjectCommand({ Bucket: bucket, Key: 'elsewhere', Body: 'x' })))).toBe('403 AccessDenied');
    const acl = await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'mp-put' }));
    expect(acl.Owner?.ID).not.toBe(otherId);
  });

  test("DeleteObjects asks the policy for each key; CopyObject reads its source as the source bucket's policy says", async () => {
    const bucket = await newBucket();
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'tmp/a', Body: 'a' }));
    await put(
      bucket,
      doc(
        everything(bucket, { Action: 's3:DeleteObject', Resource: `arn:aws:s3:::${bucket}/tmp/*` }),
        everything(bucket, { Action: 's3:GetObject', Resource: `arn:aws:s3:::${bucket}/tmp/*` }),
      ),
    );
    const copy = (key: string) =>
      other.send(new CopyObjectCommand({ Bucket: target.other.bucket, Key: `copied-${door.tag}-${RUN}`, CopySource: `${bucket}/${key}` }));
    expect(await ok(copy('tmp/a'))).toBe(200);
    expect(await code(copy('asdf'))).toBe('403 AccessDenied');
    const result = await other.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'tmp/a' }, { Key: 'asdf' }] } }));
    expect([result.Deleted?.map((d) => d.Key), result.Errors?.map((e) => [e.Key, e.Code])]).toEqual([
      ['tmp/a'],
      [['asdf', 'AccessDenied']],
    ]);
    expect(await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'asdf' }))).Body!.transformToString()).toBe('asdf');
    // The owner deletes both, unless a Deny says otherwise.
    await put(bucket, doc(everything(bucket, { Effect: 'Deny', Action: 's3:DeleteObject', Resource: `arn:aws:s3:::${bucket}/asdf` })));
    const own = await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'asdf' }, { Key: 'tmp/b' }] } }));
    expect([own.Deleted?.map((d) => d.Key), own.Errors?.map((e) => [e.Key, e.Code])]).toEqual([['tmp/b'], [['asdf', 'AccessDenied']]]);
  });

  test('aws:Referer with StringLikeIfExists (s3-tests test_bucket_policy_set_condition_operator_end_with_IfExists)', async () => {
    const bucket = await newBucket();
    await put(
      bucket,
      doc(
        everything(bucket, {
          Principal: '*',
          Action: 's3:GetObject',
          Condition: { StringLikeIfExists: { 'aws:Referer': 'http://www.example.com/*' } },
        }),
      ),
    );
    const get = (referer?: string) =>
      (referer ? withHeaders(unsigned(door.client()), { referer }) : anon).send(new GetObjectCommand({ Bucket: bucket, Key: 'asdf' }));
    expect(await ok(get('http://www.example.com/'))).toBe(200);
    expect(await ok(get('http://www.example.com/index.html'))).toBe(200);
    expect(await ok(get())).toBe(200);
    expect(await code(get('http://example.com'))).toBe('403 AccessDenied');
  });

  test('s3:prefix decides NoSuchKey or AccessDenied for a missing key (s3-tests test_head_object_404_with_policy_prefix)', async () => {
    const bucket = await newBucket();
    await put(
      bucket,
      doc(
        everything(bucket, {
          Action: 's3:ListBucket',
          Resource: `arn:aws:s3:::${bucket}`,
          Condition: { StringLike: { 's3:prefix': 'public/*' } },
        }),
      ),
    );
    expect((await failure(other.send(new HeadObjectCommand({ Bucket: bucket, Key: 'public/object' })))).$metadata.httpStatusCode).toBe(404);
    expect((await failure(other.send(new HeadObjectCommand({ Bucket: bucket, Key: 'private/object' })))).$metadata.httpStatusCode).toBe(
      403,
    );
    expect((await other.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'public/' }))).KeyCount).toBe(0);
    expect(await code(other.send(new ListObjectsV2Command({ Bucket: bucket })))).toBe('403 AccessDenied');
  });

  test('aws:SourceIp is the address the door saw; a forged X-Forwarded-For does not count', async () => {
    const bucket = await newBucket();
    // The node:http door and the Function URL event say 127.0.0.1, the REST API event API Gateway's 203.0.113.7 (test/support/lambda-door.ts).
    const seen = door.tag === 'r' ? '203.0.113.7' : '127.0.0.1';
    const readFrom = (cidr: string) =>
      put(bucket, doc(everything(bucket, { Action: 's3:GetObject', Condition: { IpAddress: { 'aws:SourceIp': cidr } } })));
    const get = (client: S3Client) => client.send(new GetObjectCommand({ Bucket: bucket, Key: 'asdf' }));
    if (!REMOTE) {
      await readFrom(`${seen}/32`);
      expect(await ok(get(anon))).toBe(200);
    }
    await readFrom('192.0.2.0/24');
    const forged = withHeaders(unsigned(door.client()), {
      'x-forwarded-for': '192.0.2.10',
      'x-real-ip': '192.0.2.10',
      forwarded: 'for=192.0.2.10',
    });
    expect(await code(get(forged))).toBe('403 AccessDenied');
    expect(await code(get(anon))).toBe('403 AccessDenied');
  });

  test('aws:SecureTransport: a Deny of plain HTTP refuses the node:http door (no TLS) and not the Lambda doors (HTTPS only)', async () => {
    const bucket = await newBucket();
    await put(
      bucket,
      doc(
        everything(bucket, {
          Effect: 'Deny',
          Principal: '*',
          Action: 's3:GetObject',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
      ),
    );
    const get = s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'asdf' }));
    if (door.lambda || REMOTE) expect(await ok(get)).toBe(200);
    else expect(await code(get)).toBe('403 AccessDenied');
  });

  test('GetBucketPolicyStatus (s3-tests test_get_bucket_policy_status, test_get_public_acl_, test_get_authpublic_acl_, test_get_publicpolicy_acl_, test_get_nonpublicpolicy_acl_, test_get_nonpublicpolicy_principal_bucket_policy_status)', async () => {
    const isPublic = async (bucket: string) => (await s3.send(new GetBucketPolicyStatusCommand({ Bucket: bucket }))).PolicyStatus?.IsPublic;
    const bucket = await newBucket();
    expect(await isPublic(bucket)).toBe(false);
    await s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'public-read' }));
    expect(await isPublic(bucket)).toBe(true);
    await s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'authenticated-read' }));
    expect(await isPublic(bucket)).toBe(true);
    await s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'private' }));
    await put(bucket, doc(everything(bucket, { Action: 's3:ListBucket' })));
    expect(await isPublic(bucket)).toBe(true);
    await put(bucket, doc(everything(bucket, { Action: 's3:ListBucket', Condition: { IpAddress: { 'aws:SourceIp': '10.0.0.0/32' } } })));
    expect(await isPublic(bucket)).toBe(false);
    await put(bucket, doc(everything(bucket, { Action: 's3:ListBucket', Principal: { AWS: 'arn:aws:iam::s3tenant1:root' } })));
    expect(await isPublic(bucket)).toBe(false);
    expect(await code(other.send(new GetBucketPolicyStatusCommand({ Bucket: bucket })))).toBe('403 AccessDenied');
  });
});

describe.each(doorsFor(s3Doors(() => target)))('public access blocks and ownership controls through the $name', (door) => {
  let s3: S3Client;
  let other: S3Client;
  let anon: S3Client;
  let n = 0;
  const newBucket = async (acl?: 'public-read') => {
    const bucket = `pab-${door.tag}-${RUN}-${++n}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket, ...(acl ? { ACL: acl } : {}) }));
    return bucket;
  };
  const block = (
    bucket: string,
    conf: Partial<Record<'BlockPublicAcls' | 'IgnorePublicAcls' | 'BlockPublicPolicy' | 'RestrictPublicBuckets', boolean>>,
  ) => s3.send(new PutPublicAccessBlockCommand({ Bucket: bucket, PublicAccessBlockConfiguration: conf }));
  beforeAll(() => {
    s3 = door.client();
    other = door.client(target.other);
    anon = unsigned(door.client());
  });

  test('put, get, delete; none is NoSuchPublicAccessBlockConfiguration (s3-tests test_get_undefined_public_block, test_put_public_block, test_put_get_delete_public_block)', async () => {
    const bucket = await newBucket();
    expect(await ok(s3.send(new DeletePublicAccessBlockCommand({ Bucket: bucket })))).toBe(204);
    expect(await code(s3.send(new GetPublicAccessBlockCommand({ Bucket: bucket })))).toBe('404 NoSuchPublicAccessBlockConfiguration');
    const conf = { BlockPublicAcls: true, IgnorePublicAcls: true, BlockPublicPolicy: true, RestrictPublicBuckets: false };
    expect(await ok(block(bucket, conf))).toBe(200);
    expect((await s3.send(new GetPublicAccessBlockCommand({ Bucket: bucket }))).PublicAccessBlockConfiguration).toEqual(conf);
    expect(await ok(s3.send(new DeletePublicAccessBlockCommand({ Bucket: bucket })))).toBe(204);
    expect(await code(s3.send(new GetPublicAccessBlockCommand({ Bucket: bucket })))).toBe('404 NoSuchPublicAccessBlockConfiguration');
  });

  test('a policy Deny holds for the owner reading the block (s3-tests test_get_public_block_deny_bucket_policy)', async () => {
    const bucket = await newBucket();
    await block(bucket, { BlockPublicAcls: true });
    await s3.send(
      new PutBucketPolicyCommand({
        Bucket: bucket,
        Policy: doc(everything(bucket, { Effect: 'Deny', Action: 's3:GetBucketPublicAccessBlock', Resource: `arn:aws:s3:::${bucket}` })),
      }),
    );
    expect(await code(s3.send(new GetPublicAccessBlockCommand({ Bucket: bucket })))).toBe('403 AccessDenied');
  });

  test('BlockPublicAcls refuses public canned ACLs on buckets and objects, and stores nothing (s3-tests test_block_public_put_bucket_acls, test_block_public_object_canned_acls)', async () => {
    const bucket = await newBucket();
    await block(bucket, { BlockPublicAcls: true, BlockPublicPolicy: true });
    for (const ACL of ['public-read', 'public-read-write', 'authenticated-read'] as const) {
      expect(await code(s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL })))).toBe('403 AccessDenied');
      expect(await code(s3.send(new PutObjectCommand({ Bucket: bucket, Key: `foo-${ACL}`, Body: 'x', ACL })))).toBe('403 AccessDenied');
      expect((await failure(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: `foo-${ACL}` })))).$metadata.httpStatusCode).toBe(404);
    }
    expect(await ok(s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'foo4', Body: 'x', ACL: 'private' })))).toBe(200);
    expect(await code(s3.send(new PutObjectAclCommand({ Bucket: bucket, Key: 'foo4', ACL: 'public-read' })))).toBe('403 AccessDenied');
    const grants = (await s3.send(new GetBucketAclCommand({ Bucket: bucket }))).Grants ?? [];
    expect(grants.map((g) => g.Permission)).toEqual(['FULL_CONTROL']);
  });

  test('BlockPublicPolicy refuses a public policy, not one naming an account (s3-tests test_block_public_policy, test_block_public_policy_with_principal)', async () => {
    const bucket = await newBucket();
    await block(bucket, { BlockPublicPolicy: true });
    const readAll = (extra: Statement = {}) =>
      s3.send(
        new PutBucketPolicyCommand({
          Bucket: bucket,
          Policy: doc(everything(bucket, { Action: 's3:GetObject', Resource: `arn:aws:s3:::${bucket}/*`, ...extra })),
        }),
      );
    expect(await code(readAll())).toBe('403 AccessDenied');
    expect(await code(s3.send(new GetBucketPolicyCommand({ Bucket: bucket })))).toBe('404 NoSuchBucketPolicy');
    expect(await ok(readAll({ Principal: { AWS: 'arn:aws:iam::s3tenant1:root' } }))).toBe(204);
  });

  test('RestrictPublicBuckets shuts a public policy to others, the owner still reads; the public URL too (s3-tests test_block_public_restrict_public_buckets)', async () => {
    const bucket = await newBucket();
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'foo', Body: 'bar' }));
    await s3.send(
      new PutBucketPolicyCommand({
        Bucket: bucket,
        Policy: doc(everything(bucket, { Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${bucket}/*` })),
      }),
    );
    const publicUrl = () =>
      hostFetch(`${target.endpoints.gateway}/foo`, { headers: { host: `${bucket}.${target.domains.storagePublic}` } }).then(
        (r) => r.status,
      );
    expect(await (await anon.send(new GetObjectCommand({ Bucket: bucket, Key: 'foo' }))).Body!.transformToString()).toBe('bar');
    expect(await publicUrl()).toBe(200);
    expect(await ok(block(bucket, { RestrictPublicBuckets: true }))).toBe(200);
    expect(await code(anon.send(new GetObjectCommand({ Bucket: bucket, Key: 'foo' })))).toBe('403 AccessDenied');
    expect(await code(other.send(new GetObjectCommand({ Bucket: bucket, Key: 'foo' })))).toBe('403 AccessDenied');
    expect(await settles(publicUrl, 403)).toBe(403);
    expect(await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'foo' }))).Body!.transformToString()).toBe('bar');
  });

  test('IgnorePublicAcls makes a public bucket and object private, at the public URL too (s3-tests test_ignore_public_acls)', async () => {
    const bucket = await newBucket('public-read');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'key1', Body: 'abcde', ACL: 'public-read' }));
    const publicUrl = () =>
      hostFetch(`${target.endpoints.gateway}/key1`, { headers: { host: `${bucket}.${target.domains.storagePublic}` } }).then(
        (r) => r.status,
      );
    expect(await ok(other.send(new ListObjectsCommand({ Bucket: bucket })))).toBe(200);
    expect(await (await other.send(new GetObjectCommand({ Bucket: bucket, Key: 'key1' }))).Body!.transformToString()).toBe('abcde');
    expect(await publicUrl()).toBe(200);
    await block(bucket, { IgnorePublicAcls: true });
    await s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'public-read' }));
    expect(await code(other.send(new ListObjectsCommand({ Bucket: bucket })))).toBe('403 AccessDenied');
    expect(await code(other.send(new GetObjectCommand({ Bucket: bucket, Key: 'key1' })))).toBe('403 AccessDenied');
    expect(await code(anon.send(new GetObjectCommand({ Bucket: bucket, Key: 'key1' })))).toBe('403 AccessDenied');
    expect(await settles(publicUrl, 403)).toBe(403);
  });

  test('a policy Allow serves a private object at its public URL, a Deny refuses a public-read one', async () => {
    const bucket = await newBucket();
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'private.txt', Body: 'p' }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'open/public.txt', Body: 'o', ACL: 'public-read' }));
    const at = (key: string, headers: Record<string, string> = {}) =>
      hostFetch(`${target.endpoints.gateway}/${key}`, { headers: { host: `${bucket}.${target.domains.storagePublic}`, ...headers } }).then(
        (r) => r.status,
      );
    expect([await at('private.txt'), await at('open/public.txt')]).toEqual([403, 200]);
    await s3.send(
      new PutBucketPolicyCommand({
        Bucket: bucket,
        Policy: doc(
          everything(bucket, {
            Principal: '*',
            Action: 's3:GetObject',
            Resource: `arn:aws:s3:::${bucket}/private.txt`,
            Condition: { StringLike: { 'aws:Referer': 'https://mine.test/*' } },
          }),
          everything(bucket, { Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${bucket}/open/*` }),
        ),
      }),
    );
    const statuses = async () => [
      await at('private.txt', { referer: 'https://mine.test/page' }),
      await at('private.txt'),
      await at('open/public.txt'),
    ];
    expect(await settles(statuses, [200, 403, 403])).toEqual([200, 403, 403]);
  });

  test('ownership controls: put, get, delete; none is OwnershipControlsNotFoundError (s3-tests test_bucket_create_delete_bucket_ownership, test_put_bucket_ownership_bucket_owner_preferred, _object_writer)', async () => {
    const bucket = await newBucket();
    expect(await code(s3.send(new GetBucketOwnershipControlsCommand({ Bucket: bucket })))).toBe('404 OwnershipControlsNotFoundError');
    for (const ObjectOwnership of ['BucketOwnerPreferred', 'ObjectWriter', 'BucketOwnerEnforced'] as const) {
      expect(
        await ok(s3.send(new PutBucketOwnershipControlsCommand({ Bucket: bucket, OwnershipControls: { Rules: [{ ObjectOwnership }] } }))),
      ).toBe(200);
      expect((await s3.send(new GetBucketOwnershipControlsCommand({ Bucket: bucket }))).OwnershipControls?.Rules).toEqual([
        { ObjectOwnership },
      ]);
    }
    expect(await code(other.send(new GetBucketOwnershipControlsCommand({ Bucket: bucket })))).toBe('403 AccessDenied');
    expect(await ok(s3.send(new DeleteBucketOwnershipControlsCommand({ Bucket: bucket })))).toBe(204);
    expect(await code(s3.send(new GetBucketOwnershipControlsCommand({ Bucket: bucket })))).toBe('404 OwnershipControlsNotFoundError');
    expect(await ok(s3.send(new DeleteBucketOwnershipControlsCommand({ Bucket: bucket })))).toBe(204);
  });

  test('CreateBucket takes x-amz-object-ownership (s3-tests test_create_bucket_bucket_owner_enforced, _bucket_owner_preferred, _object_writer)', async () => {
    for (const ObjectOwnership of ['BucketOwnerEnforced', 'BucketOwnerPreferred', 'ObjectWriter'] as const) {
      const bucket = `own-${door.tag}-${RUN}-${ObjectOwnership.toLowerCase()}`;
      await s3.send(new CreateBucketCommand({ Bucket: bucket, ObjectOwnership }));
      expect((await s3.send(new GetBucketOwnershipControlsCommand({ Bucket: bucket }))).OwnershipControls?.Rules).toEqual([
        { ObjectOwnership },
      ]);
    }
    const refused = `own-${door.tag}-${RUN}-refused`;
    expect(
      await code(s3.send(new CreateBucketCommand({ Bucket: refused, ObjectOwnership: 'BucketOwnerEnforced', ACL: 'public-read' }))),
    ).toBe('400 InvalidBucketAclWithObjectOwnership');
    expect(await code(s3.send(new GetBucketOwnershipControlsCommand({ Bucket: refused })))).toBe('404 NoSuchBucket');
  });

  test('BucketOwnerEnforced: only over a private bucket ACL; then ACLs are off (s3-tests test_put_bucket_ownership_bucket_owner_enforced)', async () => {
    const bucket = await newBucket('public-read');
    const enforce = () =>
      s3.send(
        new PutBucketOwnershipControlsCommand({
          Bucket: bucket,
          OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
        }),
      );
    expect(await code(enforce())).toBe('400 InvalidBucketAclWithObjectOwnership');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'was-public', Body: 'w', ACL: 'public-read' }));
    await s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'private' }));
    expect(await ok(enforce())).toBe(200);
    await s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: doc(everything(bucket, { Action: '*' })) }));
    // The other account, through the public policy: writes without an ACL or with bucket-owner-full-control; any other ACL is refused.
    expect(await ok(other.send(new PutObjectCommand({ Bucket: bucket, Key: 'no-acl', Body: 'x' })))).toBe(200);
    expect(await ok(other.send(new PutObjectCommand({ Bucket: bucket, Key: 'bofc', Body: 'x', ACL: 'bucket-owner-full-control' })))).toBe(
      200,
    );
    expect(await code(other.send(new PutObjectCommand({ Bucket: bucket, Key: 'private', Body: 'x', ACL: 'private' })))).toBe(
      '400 AccessControlListNotSupported',
    );
    expect(await code(other.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mp', ACL: 'private' })))).toBe(
      '400 AccessControlListNotSupported',
    );
    expect(await code(s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'private' })))).toBe('400 AccessControlListNotSupported');
    expect(await code(s3.send(new PutObjectAclCommand({ Bucket: bucket, Key: 'no-acl', ACL: 'private' })))).toBe(
      '400 AccessControlListNotSupported',
    );
    const owner = (await s3.send(new GetBucketAclCommand({ Bucket: bucket }))).Owner?.ID;
    for (const key of ['no-acl', 'bofc'])
      expect((await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: key }))).Owner?.ID).toBe(owner);
    // The object put public-read before is private now: its ACL is off, and the policy (which grants to everyone) is the only way in.
    const acl = await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'was-public' }));
    expect(acl.Grants?.map((g) => g.Permission)).toEqual(['FULL_CONTROL']);
    await s3.send(new DeleteBucketPolicyCommand({ Bucket: bucket }));
    expect(await code(anon.send(new GetObjectCommand({ Bucket: bucket, Key: 'was-public' })))).toBe('403 AccessDenied');
  });
});
