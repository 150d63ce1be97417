/**
 * ACL grants to Cairn accounts (by canonical id and by e-mail) and to S3's
 * groups, set with an AccessControlPolicy body, the x-amz-grant-* headers
 * or a canned ACL, on buckets, objects and object versions, and what they
 * let another account (or an anonymous caller) do, together with bucket
 * policies, the public access block and BucketOwnerEnforced; the version
 * actions of bucket policies. Through every door with @aws-sdk/client-s3
 * (CAIRN_TEST_SET=full), and with boto3.
 */
import { fileURLToPath } from 'node:url';
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketAclCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  ListObjectsV2Command,
  PutBucketAclCommand,
  PutBucketOwnershipControlsCommand,
  PutBucketPolicyCommand,
  PutBucketVersioningCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  PutPublicAccessBlockCommand,
  type Grant,
  type S3Client,
} from '@aws-sdk/client-s3';
import { apiTarget, localTest, type ApiTarget } from '../support/api-target.js';
import { absent, failure, s3Doors } from '../support/s3-doors.js';
import { DEBIAN_CLIENTS, clientWorkspace, requireClient, run, type ClientWorkspace } from '../support/clients.js';
import { doorsFor } from '../support/test-set.js';

const SCRIPT = fileURLToPath(new URL('../clients/boto3_ops.py', import.meta.url));
const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';
const AUTHENTICATED_USERS = 'http://acs.amazonaws.com/groups/global/AuthenticatedUsers';
const LOG_DELIVERY = 'http://acs.amazonaws.com/groups/s3/LogDelivery';
const OTHER_EMAIL = 'grants-other@example.com';

let target: ApiTarget;
let ws: ClientWorkspace;
/** The two accounts' canonical ids (GetBucketAcl's Owner ID). */
let ownerId: string;
let otherId: string;

beforeAll(async () => {
  await requireClient('python3');
  [target, ws] = await Promise.all([apiTarget(), clientWorkspace()]);
  ownerId = (await target.s3().send(new GetBucketAclCommand({ Bucket: target.account.bucket }))).Owner!.ID!;
  otherId = (await target.s3(target.other).send(new GetBucketAclCommand({ Bucket: target.other.bucket }))).Owner!.ID!;
  // The second account signs in with an e-mail, so grants can name it by that.
  await target.whenLocal((service) => service.services.people.add(otherId, OTHER_EMAIL, 'not-a-password-hash'));
});

afterAll(async () => {
  await target?.close();
  await ws?.cleanup();
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

/** Grants as [grantee, permission] pairs: an account's ID, or a group's URI. */
const grantsOf = (grants: Grant[] | undefined) => (grants ?? []).map((g) => [g.Grantee?.URI ?? g.Grantee?.ID, g.Permission]);

/** What a GET answers this caller: the body, or the error's name. */
const read = (client: S3Client, Bucket: string, Key: string, VersionId?: string) =>
  client.send(new GetObjectCommand({ Bucket, Key, VersionId })).then(
    (r) => r.Body!.transformToString(),
    (e: Error) => e.name,
  );

/** The error's name a call fails with, or 'ok'. */
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: Error) => e.name,
  );

const ownerGrant = () => ({ Grantee: { Type: 'CanonicalUser' as const, ID: ownerId }, Permission: 'FULL_CONTROL' as const });
const idGrant = (ID: string, Permission: Grant['Permission']) => ({ Grantee: { Type: 'CanonicalUser' as const, ID }, Permission });
const uriGrant = (URI: string, Permission: Grant['Permission']) => ({ Grantee: { Type: 'Group' as const, URI }, Permission });
const policyOf = (grants: Grant[]) => ({ Owner: { ID: ownerId }, Grants: grants });

describe.each(doorsFor(s3Doors(() => target)))('through the $name', (door) => {
  const { tag } = door;
  let s3: S3Client;
  let other: S3Client;
  let anon: S3Client;
  let bucket: string;
  beforeAll(async () => {
    s3 = door.client();
    other = door.client(target.other);
    anon = unsigned(door.client());
    bucket = `grants-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  });

  test('a READ grant by canonical id lets that account GET the object, and nothing else; a new ACL revokes it', async () => {
    const key = 'by-id.txt';
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'for other' }));
    expect(await read(other, bucket, key)).toBe('AccessDenied');
    await s3.send(
      new PutObjectAclCommand({ Bucket: bucket, Key: key, AccessControlPolicy: policyOf([ownerGrant(), idGrant(otherId, 'READ')]) }),
    );
    const acl = await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: key }));
    expect(acl.Owner?.ID).toBe(ownerId);
    expect(grantsOf(acl.Grants)).toEqual([
      [ownerId, 'FULL_CONTROL'],
      [otherId, 'READ'],
    ]);
    // The grantee's display name is its account's name, as S3 shows it.
    expect(acl.Grants![1]!.Grantee).toMatchObject({ Type: 'CanonicalUser', ID: otherId, DisplayName: 'other' });
    expect(await read(other, bucket, key)).toBe('for other');
    expect(await read(anon, bucket, key)).toBe('AccessDenied');
    // READ is not READ_ACP or WRITE_ACP, and an object grant does not list the bucket or write to it.
    expect(await outcome(other.send(new GetObjectAclCommand({ Bucket: bucket, Key: key })))).toBe('AccessDenied');
    expect(await outcome(other.send(new PutObjectAclCommand({ Bucket: bucket, Key: key, ACL: 'public-read' })))).toBe('AccessDenied');
    expect(await outcome(other.send(new ListObjectsV2Command({ Bucket: bucket })))).toBe('AccessDenied');
    expect(await outcome(other.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'overwritten' })))).toBe('AccessDenied');
    expect(await outcome(other.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })))).toBe('AccessDenied');
    // Revoked by the next ACL.
    await s3.send(new PutObjectAclCommand({ Bucket: bucket, Key: key, ACL: 'private' }));
    expect(await read(other, bucket, key)).toBe('AccessDenied');
    expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: key }))).Grants)).toEqual([[ownerId, 'FULL_CONTROL']]);
  });

  localTest('a grant by e-mail is stored as the account it names; an unknown e-mail is UnresolvableGrantByEmailAddress', async () => {
    const key = 'by-email.txt';
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'mailed' }));
    await s3.send(
      new PutObjectAclCommand({
        Bucket: bucket,
        Key: key,
        AccessControlPolicy: policyOf([
          ownerGrant(),
          { Grantee: { Type: 'AmazonCustomerByEmail', EmailAddress: 'Grants-Other@Example.com' }, Permission: 'READ' },
        ]),
      }),
    );
    const acl = await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: key }));
    expect(grantsOf(acl.Grants)).toEqual([
      [ownerId, 'FULL_CONTROL'],
      [otherId, 'READ'],
    ]);
    expect(acl.Grants![1]!.Grantee?.Type).toBe('CanonicalUser');
    expect(await read(other, bucket, key)).toBe('mailed');
    for (const EmailAddress of ['nobody@example.com', 'not an address', 'x'.repeat(300) + '@example.com']) {
      const err = await failure(
        s3.send(
          new PutObjectAclCommand({
            Bucket: bucket,
            Key: key,
            AccessControlPolicy: policyOf([{ Grantee: { Type: 'AmazonCustomerByEmail', EmailAddress }, Permission: 'READ' }]),
          }),
        ),
      );
      expect([err.name, err.$metadata.httpStatusCode]).toEqual(['UnresolvableGrantByEmailAddress', 400]);
    }
    const header = await failure(
      s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'never.txt', Body: 'x', GrantRead: 'emailAddress="nobody@example.com"' })),
    );
    expect(header.name).toBe('UnresolvableGrantByEmailAddress');
    expect(await absent(s3, bucket, 'never.txt')).toBe(true);
    // Nothing changed.
    expect(await read(other, bucket, key)).toBe('mailed');
    // The header form names e-mails too.
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'mail-header.txt', Body: 'h', GrantRead: `emailAddress="${OTHER_EMAIL}"` }));
    expect(await read(other, bucket, 'mail-header.txt')).toBe('h');
  });

  test('x-amz-grant-* headers on PutObject, CreateMultipartUpload and PutObjectAcl: lists of ids and groups', async () => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'hdr.txt', Body: 'headers', GrantRead: `id="${otherId}"` }));
    // As S3: the grants are exactly the headers' (the owner keeps full control as the owner, without a grant).
    expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'hdr.txt' }))).Grants)).toEqual([[otherId, 'READ']]);
    expect(await read(other, bucket, 'hdr.txt')).toBe('headers');
    expect(await read(s3, bucket, 'hdr.txt')).toBe('headers');
    await s3.send(
      new PutObjectAclCommand({
        Bucket: bucket,
        Key: 'hdr.txt',
        GrantFullControl: `id="${ownerId}"`,
        GrantRead: `uri="${ALL_USERS}", id=${otherId}`,
        GrantReadACP: `id="${otherId}"`,
      }),
    );
    expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'hdr.txt' }))).Grants)).toEqual([
      [ALL_USERS, 'READ'],
      [otherId, 'READ'],
      [otherId, 'READ_ACP'],
      [ownerId, 'FULL_CONTROL'],
    ]);
    expect(await read(anon, bucket, 'hdr.txt')).toBe('headers');
    expect(grantsOf((await other.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'hdr.txt' }))).Grants)).toHaveLength(4);
    expect(await outcome(other.send(new PutObjectAclCommand({ Bucket: bucket, Key: 'hdr.txt', ACL: 'private' })))).toBe('AccessDenied');
    // A multipart upload keeps its grants for the object it completes.
    const mpu = await s3.send(
      new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mpu.txt', GrantRead: `uri="${AUTHENTICATED_USERS}"` }),
    );
    expect(mpu.UploadId).toBeTruthy();
    // A canned ACL that equals the grants reads back as that canned ACL's grants.
    await s3.send(
      new PutObjectAclCommand({
        Bucket: bucket,
        Key: 'hdr.txt',
        GrantFullControl: `id="${ownerId}"`,
        GrantRead: `uri="${AUTHENTICATED_USERS}"`,
      }),
    );
    expect(await read(other, bucket, 'hdr.txt')).toBe('headers');
    expect(await read(anon, bucket, 'hdr.txt')).toBe('AccessDenied');
  });

  test("WRITE on a bucket lets another account put and delete objects (the bucket owner's), not list them nor delete versions", async () => {
    const b = `grants-write-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: b, GrantWrite: `id="${otherId}"`, GrantFullControl: `id="${ownerId}"` }));
    expect(await outcome(other.send(new PutObjectCommand({ Bucket: b, Key: 'dropped.txt', Body: 'from other' })))).toBe('ok');
    expect(await read(s3, b, 'dropped.txt')).toBe('from other');
    // What another account writes belongs to the bucket's owner.
    expect((await s3.send(new GetObjectAclCommand({ Bucket: b, Key: 'dropped.txt' }))).Owner?.ID).toBe(ownerId);
    expect(await read(other, b, 'dropped.txt')).toBe('AccessDenied');
    expect(await outcome(other.send(new ListObjectsV2Command({ Bucket: b })))).toBe('AccessDenied');
    expect(await outcome(other.send(new GetBucketAclCommand({ Bucket: b })))).toBe('AccessDenied');
    expect(await outcome(anon.send(new PutObjectCommand({ Bucket: b, Key: 'anon.txt', Body: 'x' })))).toBe('AccessDenied');
    await s3.send(new PutBucketVersioningCommand({ Bucket: b, VersioningConfiguration: { Status: 'Enabled' } }));
    const v = await other.send(new PutObjectCommand({ Bucket: b, Key: 'versioned.txt', Body: 'v1' }));
    expect(await outcome(other.send(new DeleteObjectCommand({ Bucket: b, Key: 'versioned.txt', VersionId: v.VersionId })))).toBe(
      'AccessDenied',
    );
    const multi = await other.send(
      new DeleteObjectsCommand({
        Bucket: b,
        Delete: { Objects: [{ Key: 'dropped.txt' }, { Key: 'versioned.txt', VersionId: v.VersionId }] },
      }),
    );
    expect(multi.Deleted?.map((d) => d.Key)).toEqual(['dropped.txt']);
    expect(multi.Errors?.map((e) => [e.Key, e.Code])).toEqual([['versioned.txt', 'AccessDenied']]);
    expect(await outcome(other.send(new DeleteObjectCommand({ Bucket: b, Key: 'versioned.txt' })))).toBe('ok');
    expect(await read(s3, b, 'versioned.txt', v.VersionId)).toBe('v1');
    // Revoked: the bucket made private again.
    await s3.send(new PutBucketAclCommand({ Bucket: b, ACL: 'private' }));
    expect(await outcome(other.send(new PutObjectCommand({ Bucket: b, Key: 'late.txt', Body: 'x' })))).toBe('AccessDenied');
  });

  test("READ_ACP and WRITE_ACP on a bucket: the grantee reads, then writes the bucket's ACL, but cannot give the bucket away", async () => {
    const b = `grants-acp-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: b, GrantReadACP: `id="${otherId}"`, GrantFullControl: `id="${ownerId}"` }));
    expect(grantsOf((await other.send(new GetBucketAclCommand({ Bucket: b }))).Grants)).toEqual([
      [otherId, 'READ_ACP'],
      [ownerId, 'FULL_CONTROL'],
    ]);
    expect(await outcome(other.send(new PutBucketAclCommand({ Bucket: b, ACL: 'public-read' })))).toBe('AccessDenied');
    await s3.send(new PutBucketAclCommand({ Bucket: b, AccessControlPolicy: policyOf([ownerGrant(), idGrant(otherId, 'WRITE_ACP')]) }));
    expect(await outcome(other.send(new GetBucketAclCommand({ Bucket: b })))).toBe('AccessDenied');
    // The bucket's owner stays its owner: a policy naming another owner is refused.
    const giveAway = await failure(
      other.send(
        new PutBucketAclCommand({ Bucket: b, AccessControlPolicy: { Owner: { ID: otherId }, Grants: [idGrant(otherId, 'FULL_CONTROL')] } }),
      ),
    );
    expect(giveAway.name).toBe('AccessDenied');
    await other.send(
      new PutBucketAclCommand({ Bucket: b, AccessControlPolicy: policyOf([ownerGrant(), idGrant(otherId, 'FULL_CONTROL')]) }),
    );
    // FULL_CONTROL: all of it (listing, writing, the ACL), still not the owner's own settings.
    expect(await outcome(other.send(new PutObjectCommand({ Bucket: b, Key: 'full.txt', Body: 'x' })))).toBe('ok');
    expect((await other.send(new ListObjectsV2Command({ Bucket: b }))).Contents?.map((c) => c.Key)).toEqual(['full.txt']);
    expect((await other.send(new GetBucketAclCommand({ Bucket: b }))).Owner?.ID).toBe(ownerId);
    expect(await outcome(other.send(new PutBucketPolicyCommand({ Bucket: b, Policy: '{}' })))).toBe('AccessDenied');
  });

  test('FULL_CONTROL on an object: GET, GetObjectAcl and PutObjectAcl', async () => {
    await s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: 'full.txt', Body: 'all', GrantFullControl: `id="${otherId}", id="${ownerId}"` }),
    );
    expect(await read(other, bucket, 'full.txt')).toBe('all');
    expect(await outcome(other.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'full.txt' })))).toBe('ok');
    await other.send(new PutObjectAclCommand({ Bucket: bucket, Key: 'full.txt', ACL: 'private' }));
    expect(await read(other, bucket, 'full.txt')).toBe('AccessDenied');
    expect(await read(s3, bucket, 'full.txt')).toBe('all');
  });

  test('group grants: AllUsers opens to anonymous callers, AuthenticatedUsers to any Cairn account', async () => {
    const b = `grants-groups-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: b, GrantRead: `uri="${AUTHENTICATED_USERS}"` }));
    await s3.send(new PutObjectCommand({ Bucket: b, Key: 'all.txt', Body: 'everyone', GrantRead: `uri="${ALL_USERS}"` }));
    await s3.send(new PutObjectCommand({ Bucket: b, Key: 'members.txt', Body: 'members', GrantRead: `uri="${AUTHENTICATED_USERS}"` }));
    expect(await read(anon, b, 'all.txt')).toBe('everyone');
    expect(await read(anon, b, 'members.txt')).toBe('AccessDenied');
    expect(await read(other, b, 'members.txt')).toBe('members');
    expect((await other.send(new ListObjectsV2Command({ Bucket: b }))).Contents?.map((c) => c.Key)).toEqual(['all.txt', 'members.txt']);
    expect(await outcome(anon.send(new ListObjectsV2Command({ Bucket: b })))).toBe('AccessDenied');
  });

  test('the public access block: BlockPublicAcls refuses public grants (not grants to accounts), IgnorePublicAcls ignores them', async () => {
    const b = `grants-block-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: b }));
    await s3.send(new PutObjectCommand({ Bucket: b, Key: 'was-public.txt', Body: 'p', GrantRead: `uri="${ALL_USERS}", id="${otherId}"` }));
    await s3.send(
      new PutPublicAccessBlockCommand({ Bucket: b, PublicAccessBlockConfiguration: { BlockPublicAcls: true, IgnorePublicAcls: true } }),
    );
    for (const call of [
      () => s3.send(new PutObjectCommand({ Bucket: b, Key: 'blocked.txt', Body: 'x', GrantRead: `uri="${AUTHENTICATED_USERS}"` })),
      () =>
        s3.send(
          new PutObjectAclCommand({ Bucket: b, Key: 'was-public.txt', AccessControlPolicy: policyOf([uriGrant(ALL_USERS, 'READ')]) }),
        ),
      () => s3.send(new PutBucketAclCommand({ Bucket: b, GrantWrite: `uri="${ALL_USERS}"` })),
    ]) {
      expect(await outcome(call())).toBe('AccessDenied');
    }
    expect(await absent(s3, b, 'blocked.txt')).toBe(true);
    // The public grant is kept but ignored; the grant to an account still counts.
    expect(await read(anon, b, 'was-public.txt')).toBe('AccessDenied');
    expect(await read(other, b, 'was-public.txt')).toBe('p');
    expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: b, Key: 'was-public.txt' }))).Grants)).toEqual([
      [ALL_USERS, 'READ'],
      [otherId, 'READ'],
    ]);
    await s3.send(new PutObjectAclCommand({ Bucket: b, Key: 'was-public.txt', GrantRead: `id="${otherId}"` }));
    await s3.send(new PutPublicAccessBlockCommand({ Bucket: b, PublicAccessBlockConfiguration: {} }));
    expect(await read(anon, b, 'was-public.txt')).toBe('AccessDenied');
  });

  test('BucketOwnerEnforced: grants are refused (the owner alone is taken) and grant nothing', async () => {
    const b = `grants-enforced-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: b }));
    await s3.send(new PutObjectCommand({ Bucket: b, Key: 'before.txt', Body: 'b', GrantRead: `id="${otherId}"` }));
    expect(await read(other, b, 'before.txt')).toBe('b');
    await s3.send(
      new PutBucketOwnershipControlsCommand({ Bucket: b, OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] } }),
    );
    expect(await read(other, b, 'before.txt')).toBe('AccessDenied');
    expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: b, Key: 'before.txt' }))).Grants)).toEqual([
      [ownerId, 'FULL_CONTROL'],
    ]);
    for (const call of [
      () => s3.send(new PutObjectCommand({ Bucket: b, Key: 'after.txt', Body: 'x', GrantRead: `id="${otherId}"` })),
      () =>
        s3.send(
          new PutObjectAclCommand({
            Bucket: b,
            Key: 'before.txt',
            AccessControlPolicy: policyOf([ownerGrant(), idGrant(otherId, 'READ')]),
          }),
        ),
      () => s3.send(new PutBucketAclCommand({ Bucket: b, GrantRead: `id="${otherId}"` })),
    ]) {
      const err = await failure(call());
      expect([err.name, err.$metadata.httpStatusCode]).toEqual(['AccessControlListNotSupported', 400]);
    }
    expect(await absent(s3, b, 'after.txt')).toBe(true);
    // The owner's full control alone is what ACLs are here: taken.
    await s3.send(new PutObjectCommand({ Bucket: b, Key: 'owner.txt', Body: 'o', GrantFullControl: `id="${ownerId}"` }));
    await s3.send(new PutObjectAclCommand({ Bucket: b, Key: 'owner.txt', AccessControlPolicy: policyOf([ownerGrant()]) }));
    // And a bucket whose ACL grants others cannot be enforced.
    const granted = `grants-enforce-no-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: granted, GrantRead: `id="${otherId}"` }));
    const refused = await failure(
      s3.send(
        new PutBucketOwnershipControlsCommand({
          Bucket: granted,
          OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
        }),
      ),
    );
    expect(refused.name).toBe('InvalidBucketAclWithObjectOwnership');
  });

  test("malformed, unknown and oversized ACLs are S3's errors and change nothing", async () => {
    const key = 'guarded.txt';
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'g' }));
    const put = (input: Partial<ConstructorParameters<typeof PutObjectAclCommand>[0]>) =>
      failure(s3.send(new PutObjectAclCommand({ Bucket: bucket, Key: key, ...input })));
    const cases: Array<[Promise<{ name: string; $metadata: { httpStatusCode?: number } }>, string, number]> = [
      [put({ ACL: 'public-read', GrantRead: `id="${otherId}"` }), 'InvalidRequest', 400],
      [put({ GrantRead: 'someone' }), 'InvalidArgument', 400],
      [put({ GrantRead: 'id="no-such-account"' }), 'InvalidArgument', 400],
      [put({ GrantRead: 'id="bad id with spaces"' }), 'InvalidArgument', 400],
      [put({ GrantRead: 'uri="http://acs.amazonaws.com/groups/global/Everyone"' }), 'InvalidArgument', 400],
      [put({ GrantWrite: `uri="${LOG_DELIVERY}"` }), 'NotImplemented', 501],
      [put({ AccessControlPolicy: policyOf([idGrant('no-such-account', 'READ')]) }), 'InvalidArgument', 400],
      [put({ AccessControlPolicy: policyOf([idGrant(otherId, 'EVERYTHING' as never)]) }), 'MalformedACLError', 400],
      [
        put({ AccessControlPolicy: policyOf([{ Grantee: { Type: 'CanonicalUser' } as never, Permission: 'READ' }]) }),
        'MalformedACLError',
        400,
      ],
      [put({ AccessControlPolicy: policyOf(Array.from({ length: 101 }, () => idGrant(otherId, 'READ'))) }), 'MalformedACLError', 400],
      [put({ GrantRead: Array.from({ length: 101 }, () => `id="${otherId}"`).join(',') }), 'MalformedACLError', 400],
      [put({ ACL: 'public-read', AccessControlPolicy: policyOf([ownerGrant()]) }), 'UnexpectedContent', 400],
    ];
    for (const [call, name, status] of cases) {
      const err = await call;
      expect([name, err.name, err.$metadata.httpStatusCode]).toEqual([name, name, status]);
    }
    // 100 grants is S3's limit, and taken.
    await s3.send(
      new PutObjectAclCommand({
        Bucket: bucket,
        Key: key,
        AccessControlPolicy: policyOf(Array.from({ length: 100 }, () => idGrant(otherId, 'READ'))),
      }),
    );
    expect((await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: key }))).Grants).toHaveLength(100);
    await s3.send(new PutObjectAclCommand({ Bucket: bucket, Key: key, ACL: 'private' }));
    // A refused write stored nothing.
    const refusedPut = await failure(
      s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'refused.txt', Body: 'x', GrantRead: 'id="no-such-account"' })),
    );
    expect(refusedPut.name).toBe('InvalidArgument');
    expect(await absent(s3, bucket, 'refused.txt')).toBe(true);
    const refusedBucket = await failure(
      s3.send(new CreateBucketCommand({ Bucket: `grants-refused-${tag}`, ACL: 'private', GrantRead: `id="${otherId}"` })),
    );
    expect(refusedBucket.name).toBe('InvalidRequest');
    expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: key }))).Grants)).toEqual([[ownerId, 'FULL_CONTROL']]);
  });

  test('per-version ACLs: versionId on PutObjectAcl and GetObjectAcl sets and reads that version, READ on a version reads that version only', async () => {
    const b = `grants-versions-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: b }));
    await s3.send(new PutBucketVersioningCommand({ Bucket: b, VersioningConfiguration: { Status: 'Enabled' } }));
    const v1 = await s3.send(new PutObjectCommand({ Bucket: b, Key: 'k', Body: 'one' }));
    const v2 = await s3.send(new PutObjectCommand({ Bucket: b, Key: 'k', Body: 'two' }));
    const set = await s3.send(new PutObjectAclCommand({ Bucket: b, Key: 'k', VersionId: v1.VersionId, GrantRead: `id="${otherId}"` }));
    expect(set.$metadata.httpStatusCode).toBe(200);
    expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: b, Key: 'k', VersionId: v1.VersionId }))).Grants)).toEqual([
      [otherId, 'READ'],
    ]);
    expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: b, Key: 'k' }))).Grants)).toEqual([[ownerId, 'FULL_CONTROL']]);
    expect(await read(other, b, 'k', v1.VersionId)).toBe('one');
    expect(await read(other, b, 'k', v2.VersionId)).toBe('AccessDenied');
    expect(await read(other, b, 'k')).toBe('AccessDenied');
    // The latest's ACL by its id is the same record as without one.
    await s3.send(new PutObjectAclCommand({ Bucket: b, Key: 'k', VersionId: v2.VersionId, ACL: 'authenticated-read' }));
    expect(await read(other, b, 'k')).toBe('two');
    const missing = await failure(s3.send(new GetObjectAclCommand({ Bucket: b, Key: 'k', VersionId: 'not-a-version' })));
    expect(missing.$metadata.httpStatusCode).toBe(400);
    const marker = await s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'k' }));
    const onMarker = await failure(s3.send(new PutObjectAclCommand({ Bucket: b, Key: 'k', VersionId: marker.VersionId, ACL: 'private' })));
    expect(onMarker.$metadata.httpStatusCode).toBe(405);
  });

  test('policy actions for versions: s3:GetObjectVersion, s3:DeleteObjectVersion, s3:Get/PutObjectVersionAcl, s3:Get/PutObjectVersionTagging', async () => {
    const b = `grants-vpolicy-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: b }));
    await s3.send(new PutBucketVersioningCommand({ Bucket: b, VersioningConfiguration: { Status: 'Enabled' } }));
    const v1 = await s3.send(new PutObjectCommand({ Bucket: b, Key: 'k', Body: 'one' }));
    const statement = (Effect: string, Action: string[], who = otherId) => ({
      Effect,
      Principal: { AWS: who },
      Action,
      Resource: `arn:aws:s3:::${b}/*`,
    });
    await s3.send(
      new PutBucketPolicyCommand({
        Bucket: b,
        Policy: JSON.stringify({
          Version: '2012-10-17',
          Statement: [
            statement('Allow', [
              's3:GetObjectVersion',
              's3:GetObjectVersionAcl',
              's3:PutObjectVersionTagging',
              's3:GetObjectVersionTagging',
            ]),
            statement('Deny', ['s3:DeleteObjectVersion'], ownerId),
          ],
        }),
      }),
    );
    const V = v1.VersionId;
    expect(await read(other, b, 'k', V)).toBe('one');
    expect(await read(other, b, 'k')).toBe('AccessDenied');
    expect(await outcome(other.send(new GetObjectAclCommand({ Bucket: b, Key: 'k', VersionId: V })))).toBe('ok');
    expect(await outcome(other.send(new GetObjectAclCommand({ Bucket: b, Key: 'k' })))).toBe('AccessDenied');
    expect(await outcome(other.send(new PutObjectAclCommand({ Bucket: b, Key: 'k', VersionId: V, ACL: 'public-read' })))).toBe(
      'AccessDenied',
    );
    const tagging = { TagSet: [{ Key: 'by', Value: 'other' }] };
    expect(await outcome(other.send(new PutObjectTaggingCommand({ Bucket: b, Key: 'k', VersionId: V, Tagging: tagging })))).toBe('ok');
    expect(await outcome(other.send(new PutObjectTaggingCommand({ Bucket: b, Key: 'k', Tagging: tagging })))).toBe('AccessDenied');
    expect((await other.send(new GetObjectTaggingCommand({ Bucket: b, Key: 'k', VersionId: V }))).TagSet).toEqual(tagging.TagSet);
    // The owner's own Deny on s3:DeleteObjectVersion holds; a plain delete (a marker) is s3:DeleteObject.
    expect(await outcome(s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'k', VersionId: V })))).toBe('AccessDenied');
    expect(await outcome(s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'k' })))).toBe('ok');
    expect(await read(s3, b, 'k', V)).toBe('one');
  });
});

type Result = Record<string, any> & { error?: { code: string; status: number; message: string } };

async function boto3(creds: { accessKeyId: string; secretAccessKey: string }, ...ops: object[]): Promise<Result[]> {
  const { stdout } = await run(DEBIAN_CLIENTS.python3.bin, [SCRIPT], {
    env: { ...ws.env, AWS_ACCESS_KEY_ID: creds.accessKeyId, AWS_SECRET_ACCESS_KEY: creds.secretAccessKey },
    input: JSON.stringify({ endpoint: target.endpoints.s3, ops, unsigned: false }),
  });
  return JSON.parse(stdout) as Result[];
}

describe('boto3', () => {
  test('put_object GrantRead, put_object_acl with an AccessControlPolicy, get_object_acl; the grantee reads with its own key', async () => {
    const [made, put, acl, policyAcl, bad] = await boto3(
      target.account,
      { call: 'create_bucket', args: { Bucket: 'py-grants' } },
      { call: 'put_object', args: { Bucket: 'py-grants', Key: 'a.txt', Body: 'for other', GrantRead: `id="${otherId}"` } },
      { call: 'get_object_acl', args: { Bucket: 'py-grants', Key: 'a.txt' } },
      {
        call: 'put_object_acl',
        args: {
          Bucket: 'py-grants',
          Key: 'a.txt',
          AccessControlPolicy: {
            Owner: { ID: ownerId },
            Grants: [ownerGrant(), idGrant(otherId, 'READ_ACP'), idGrant(otherId, 'READ')],
          },
        },
      },
      { call: 'put_object_acl', args: { Bucket: 'py-grants', Key: 'a.txt', ACL: 'private', GrantRead: `id="${otherId}"` } },
    );
    expect([made!.error, put!.error, policyAcl!.error]).toEqual([undefined, undefined, undefined]);
    expect(grantsOf(acl!.Grants)).toEqual([[otherId, 'READ']]);
    expect(bad!.error).toMatchObject({ code: 'InvalidRequest', status: 400 });
    const [got, gotAcl, denied] = await boto3(
      target.other,
      { call: 'get_object', args: { Bucket: 'py-grants', Key: 'a.txt' } },
      { call: 'get_object_acl', args: { Bucket: 'py-grants', Key: 'a.txt' } },
      { call: 'put_object_acl', args: { Bucket: 'py-grants', Key: 'a.txt', ACL: 'public-read' } },
    );
    expect(got!.body_text).toBe('for other');
    expect(grantsOf(gotAcl!.Grants)).toEqual([
      [ownerId, 'FULL_CONTROL'],
      [otherId, 'READ_ACP'],
      [otherId, 'READ'],
    ]);
    expect(denied!.error).toMatchObject({ code: 'AccessDenied', status: 403 });
  });
});
