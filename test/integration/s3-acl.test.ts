/**
 * Canned ACLs on buckets and objects, as S3 stores and reports them:
 * through both doors with @aws-sdk/client-s3. Also presigned URLs'
 * X-Amz-Expires range (boto3 and the JS SDK's presigner).
 */
import { fileURLToPath } from 'node:url';
import {
  CreateBucketCommand,
  GetBucketAclCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  PutBucketAclCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  type BucketCannedACL,
  type Grant,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { startTestService, BOOT, type TestService } from '../support/service.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import { failure, loadS3Lambda, s3Doors } from '../support/s3-doors.js';
import { DEBIAN_CLIENTS, clientWorkspace, requireClient, run, type ClientWorkspace } from '../support/clients.js';

const SCRIPT = fileURLToPath(new URL('../clients/boto3_ops.py', import.meta.url));
const OTHER = { name: 'acl-other', accessKeyId: 'CAIRNACLOTHERKEY0001', secretAccessKey: 'acl-other-secret-0123456789012345678901', apiToken: 'cairn_acl_other_token_0123456789' };
const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';
const AUTHENTICATED_USERS = 'http://acs.amazonaws.com/groups/global/AuthenticatedUsers';

let service: TestService;
let lambda: LambdaFn;
let ws: ClientWorkspace;
let bootAccount: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  await requireClient('python3');
  [service, ws] = await Promise.all([startTestService(), clientWorkspace()]);
  lambda = await loadS3Lambda(service);
  await service.services.accounts.createAccount(OTHER);
  bootAccount = (await service.services.accounts.getAccessKey(BOOT.accessKeyId))!.accountId;
});

afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  await ws?.cleanup();
});

/** The client with its signature taken off again: what an anonymous caller sends. */
function unsigned(client: S3Client): S3Client {
  const unsign = (next: (args: unknown) => Promise<unknown>) => (args: unknown) => {
    const headers = (args as { request: { headers: Record<string, string> } }).request.headers;
    for (const name of Object.keys(headers)) {
      if (['authorization', 'x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token'].includes(name.toLowerCase())) delete headers[name];
    }
    return next(args);
  };
  client.middlewareStack.addRelativeTo(unsign as never, { relation: 'after', toMiddleware: 'httpSigningMiddleware', name: 'unsign' });
  return client;
}

/** Grants as [grantee, permission] pairs: the owner's ID, or a group's URI. */
const grantsOf = (grants: Grant[] | undefined) => (grants ?? []).map((g) => [g.Grantee?.URI ?? g.Grantee?.ID, g.Permission]);

const expectedGrants = (owner: string, acl: string) =>
  ({
    private: [[owner, 'FULL_CONTROL']],
    'public-read': [[owner, 'FULL_CONTROL'], [ALL_USERS, 'READ']],
    'public-read-write': [[owner, 'FULL_CONTROL'], [ALL_USERS, 'READ'], [ALL_USERS, 'WRITE']],
    'authenticated-read': [[owner, 'FULL_CONTROL'], [AUTHENTICATED_USERS, 'READ']],
  })[acl];

const CANNED = ['private', 'public-read', 'public-read-write', 'authenticated-read'] as const;

describe.each(s3Doors(() => service, () => lambda))('through the $name', (door) => {
  const tag = door.name.startsWith('Lambda') ? 'l' : 'n';
  let s3: S3Client;
  let other: S3Client;
  let anon: S3Client;
  beforeAll(() => {
    s3 = door.client();
    other = door.client(OTHER);
    anon = unsigned(door.client());
  });

  test('CreateBucket x-amz-acl and PutBucketAcl store each canned ACL; GetBucketAcl answers S3\'s grants', async () => {
    for (const acl of CANNED) {
      const bucket = `canned-${acl}-${tag}`;
      await s3.send(new CreateBucketCommand({ Bucket: bucket, ACL: acl }));
      expect(grantsOf((await s3.send(new GetBucketAclCommand({ Bucket: bucket }))).Grants)).toEqual(expectedGrants(bootAccount, acl));
    }
    const bucket = `canned-private-${tag}`;
    for (const acl of [...CANNED].reverse()) {
      await s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: acl }));
      const got = await s3.send(new GetBucketAclCommand({ Bucket: bucket }));
      expect([acl, got.Owner?.ID, grantsOf(got.Grants)]).toEqual([acl, bootAccount, expectedGrants(bootAccount, acl)]);
    }
  });

  test('PutBucketAcl takes an AccessControlPolicy that is a canned ACL; other grants are NotImplemented and change nothing', async () => {
    const bucket = `policy-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const owner = { ID: bootAccount };
    const ownerGrant = { Grantee: { Type: 'CanonicalUser' as const, ID: bootAccount }, Permission: 'FULL_CONTROL' as const };
    await s3.send(new PutBucketAclCommand({
      Bucket: bucket,
      AccessControlPolicy: { Owner: owner, Grants: [ownerGrant, { Grantee: { Type: 'Group', URI: AUTHENTICATED_USERS }, Permission: 'READ' }] },
    }));
    expect(grantsOf((await s3.send(new GetBucketAclCommand({ Bucket: bucket }))).Grants)).toEqual(expectedGrants(bootAccount, 'authenticated-read'));
    for (const grant of [
      { Grantee: { Type: 'CanonicalUser' as const, ID: 'someone-else' }, Permission: 'READ' as const },
      { Grantee: { Type: 'Group' as const, URI: ALL_USERS }, Permission: 'WRITE_ACP' as const },
    ]) {
      const err = await failure(s3.send(new PutBucketAclCommand({ Bucket: bucket, AccessControlPolicy: { Owner: owner, Grants: [ownerGrant, grant] } })));
      expect(err).toMatchObject({ name: 'NotImplemented', $metadata: { httpStatusCode: 501 } });
      expect(err.message).toMatch(/canned ACLs/);
    }
    expect(grantsOf((await s3.send(new GetBucketAclCommand({ Bucket: bucket }))).Grants)).toEqual(expectedGrants(bootAccount, 'authenticated-read'));
  });

  test('an invalid canned ACL is InvalidArgument (400) and leaves nothing behind', async () => {
    const bucket = `bogus-acl-${tag}`;
    const bogus = 'public-everything' as BucketCannedACL;
    expect(await failure(s3.send(new CreateBucketCommand({ Bucket: bucket, ACL: bogus })))).toMatchObject({ name: 'InvalidArgument', $metadata: { httpStatusCode: 400 } });
    expect(await service.services.buckets.get(bucket)).toBeUndefined();
    expect(await failure(s3.send(new PutBucketAclCommand({ Bucket: 'default-bucket', ACL: bogus })))).toMatchObject({ name: 'InvalidArgument', $metadata: { httpStatusCode: 400 } });
    expect((await service.services.buckets.get('default-bucket'))?.acl).toBe('private');
    const key = `bogus-${tag}.txt`;
    expect(await failure(s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: key, Body: 'x', ACL: bogus as never })))).toMatchObject({ name: 'InvalidArgument', $metadata: { httpStatusCode: 400 } });
    expect(await service.services.objects.get('default-bucket', key)).toBeUndefined();
    // Only the ACL's owner may change it.
    expect(await failure(other.send(new PutBucketAclCommand({ Bucket: 'default-bucket', ACL: 'public-read' })))).toMatchObject({ name: 'AccessDenied' });
    expect(await failure(anon.send(new PutBucketAclCommand({ Bucket: 'default-bucket', ACL: 'public-read' })))).toMatchObject({ name: 'AccessDenied' });
    expect((await service.services.buckets.get('default-bucket'))?.acl).toBe('private');
  });

  test('objects take all four canned ACLs; GetObjectAcl answers S3\'s grants; PutObjectAcl changes them', async () => {
    const key = `obj-grants-${tag}`;
    for (const acl of CANNED) {
      await s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: key, Body: 'x', ACL: acl }));
      expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: 'default-bucket', Key: key }))).Grants)).toEqual(expectedGrants(bootAccount, acl));
    }
    for (const acl of CANNED) {
      await s3.send(new PutObjectAclCommand({ Bucket: 'default-bucket', Key: key, ACL: acl }));
      expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: 'default-bucket', Key: key }))).Grants)).toEqual(expectedGrants(bootAccount, acl));
    }
  });

  test('ten concurrent PutBucketAcl on one bucket all succeed; the bucket ends with one of their ACLs', async () => {
    const bucket = `contended-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const acls = Array.from({ length: 10 }, (_, i) => CANNED[i % CANNED.length]!);
    const results = await Promise.allSettled(acls.map((ACL) => s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL }))));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.$metadata.httpStatusCode : String(r.reason)))).toEqual(acls.map(() => 200));
    const final = (await service.services.buckets.get(bucket))!.acl!;
    expect(CANNED).toContain(final);
    expect(grantsOf((await s3.send(new GetBucketAclCommand({ Bucket: bucket }))).Grants)).toEqual(expectedGrants(bootAccount, final));
  });
});

type Result = Record<string, any> & { error?: { code: string; status: number; message: string } };

async function boto3(options: { env?: NodeJS.ProcessEnv }, ...ops: object[]): Promise<Result[]> {
  const { stdout } = await run(DEBIAN_CLIENTS.python3.bin, [SCRIPT], {
    env: { ...ws.env, ...options.env },
    input: JSON.stringify({ endpoint: service.endpoints.s3, ops }),
  });
  return JSON.parse(stdout) as Result[];
}

test('presigned URLs: X-Amz-Expires of 0, negative (SDK presigner) or over 604800 (boto3) is AuthorizationQueryParametersError (400), through both doors', async () => {
  const s3 = service.s3();
  await s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: 'presign-range.txt', Body: 'in range' }));
  const params = { Bucket: 'default-bucket', Key: 'presign-range.txt' };
  // boto3 (awscrt) refuses to sign 0 or less; the JS SDK's presigner signs them, and refuses over a week.
  const [overWeek, week] = await boto3(
    {},
    ...[604801, 604800].map((ExpiresIn) => ({ call: 'presign', method: 'get_object', args: { Params: params, ExpiresIn } })),
  );
  const bad = [
    await getSignedUrl(s3, new GetObjectCommand(params), { expiresIn: 0 }),
    await getSignedUrl(s3, new GetObjectCommand(params), { expiresIn: -60 }),
    overWeek!.url as string,
  ];
  for (const get of [(url: string) => fetch(url), (url: string) => lambdaFetch(lambda)(url)]) {
    for (const url of bad) {
      const expires = new URL(url).searchParams.get('X-Amz-Expires');
      const res = await get(url);
      const body = await res.text();
      expect([expires, res.status, body.match(/<Code>(.*)<\/Code>/)?.[1]]).toEqual([expires, 400, 'AuthorizationQueryParametersError']);
    }
    const ok = await get(week!.url as string);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('in range');
  }
  expect(bad.map((url) => new URL(url).searchParams.get('X-Amz-Expires'))).toEqual(['0', '-60', '604801']);
});
