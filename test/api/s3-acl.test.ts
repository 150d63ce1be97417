/**
 * Canned ACLs on buckets and objects, and what they open to anonymous
 * callers and to other Cairn accounts, as S3 does: through both doors with
 * @aws-sdk/client-s3, and with boto3 (signed and UNSIGNED). Also presigned
 * URLs' X-Amz-Expires range and expiry.
 */
import { fileURLToPath } from 'node:url';
import { Readable } from 'node:stream';
import {
  CreateBucketCommand,
  GetBucketAclCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutBucketAclCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  type BucketCannedACL,
  type Grant,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { absent, failure, s3Doors } from '../support/s3-doors.js';
import { DEBIAN_CLIENTS, clientWorkspace, requireClient, run, type ClientWorkspace } from '../support/clients.js';
import { doorsFor } from '../support/test-set.js';

const SCRIPT = fileURLToPath(new URL('../clients/boto3_ops.py', import.meta.url));
const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';
const AUTHENTICATED_USERS = 'http://acs.amazonaws.com/groups/global/AuthenticatedUsers';

let target: ApiTarget;
let ws: ClientWorkspace;
/** The account's canonical ID, and its own bucket. */
let bootAccount: string;
let B: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  await requireClient('python3');
  [target, ws] = await Promise.all([apiTarget(), clientWorkspace()]);
  B = target.account.bucket;
  bootAccount = (await target.s3().send(new GetBucketAclCommand({ Bucket: B }))).Owner!.ID!;
});

afterAll(async () => {
  process.env = savedEnv;
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

/** Grants as [grantee, permission] pairs: the owner's ID, or a group's URI. */
const grantsOf = (grants: Grant[] | undefined) => (grants ?? []).map((g) => [g.Grantee?.URI ?? g.Grantee?.ID, g.Permission]);

const expectedGrants = (owner: string, acl: string) =>
  ({
    private: [[owner, 'FULL_CONTROL']],
    'public-read': [
      [owner, 'FULL_CONTROL'],
      [ALL_USERS, 'READ'],
    ],
    'public-read-write': [
      [owner, 'FULL_CONTROL'],
      [ALL_USERS, 'READ'],
      [ALL_USERS, 'WRITE'],
    ],
    'authenticated-read': [
      [owner, 'FULL_CONTROL'],
      [AUTHENTICATED_USERS, 'READ'],
    ],
  })[acl];

const CANNED = ['private', 'public-read', 'public-read-write', 'authenticated-read'] as const;

/** The canned ACL a bucket's grants say it has (undefined for grants no canned ACL gives). */
async function bucketAcl(s3: S3Client, bucket: string): Promise<string | undefined> {
  const grants = JSON.stringify(grantsOf((await s3.send(new GetBucketAclCommand({ Bucket: bucket }))).Grants));
  return CANNED.find((acl) => JSON.stringify(expectedGrants(bootAccount, acl)) === grants);
}

describe.each(doorsFor(s3Doors(() => target)))('through the $name', (door) => {
  const { tag } = door;
  let s3: S3Client;
  let other: S3Client;
  let anon: S3Client;
  beforeAll(() => {
    s3 = door.client();
    other = door.client(target.other);
    anon = unsigned(door.client());
  });

  test("CreateBucket x-amz-acl and PutBucketAcl store each canned ACL; GetBucketAcl answers S3's grants", async () => {
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

  test('PutBucketAcl takes an AccessControlPolicy that is a canned ACL as that ACL; a grant to no account is InvalidArgument and changes nothing', async () => {
    const bucket = `policy-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const owner = { ID: bootAccount };
    const ownerGrant = { Grantee: { Type: 'CanonicalUser' as const, ID: bootAccount }, Permission: 'FULL_CONTROL' as const };
    await s3.send(
      new PutBucketAclCommand({
        Bucket: bucket,
        AccessControlPolicy: {
          Owner: owner,
          Grants: [ownerGrant, { Grantee: { Type: 'Group', URI: AUTHENTICATED_USERS }, Permission: 'READ' }],
        },
      }),
    );
    expect(grantsOf((await s3.send(new GetBucketAclCommand({ Bucket: bucket }))).Grants)).toEqual(
      expectedGrants(bootAccount, 'authenticated-read'),
    );
    const err = await failure(
      s3.send(
        new PutBucketAclCommand({
          Bucket: bucket,
          AccessControlPolicy: {
            Owner: owner,
            Grants: [ownerGrant, { Grantee: { Type: 'CanonicalUser', ID: 'someone-else' }, Permission: 'READ' }],
          },
        }),
      ),
    );
    expect(err).toMatchObject({ name: 'InvalidArgument', $metadata: { httpStatusCode: 400 } });
    expect(grantsOf((await s3.send(new GetBucketAclCommand({ Bucket: bucket }))).Grants)).toEqual(
      expectedGrants(bootAccount, 'authenticated-read'),
    );
  });

  test('an invalid canned ACL is InvalidArgument (400) and leaves nothing behind', async () => {
    const bucket = `bogus-acl-${tag}`;
    const bogus = 'public-everything' as BucketCannedACL;
    expect(await failure(s3.send(new CreateBucketCommand({ Bucket: bucket, ACL: bogus })))).toMatchObject({
      name: 'InvalidArgument',
      $metadata: { httpStatusCode: 400 },
    });
    expect(await failure(s3.send(new HeadBucketCommand({ Bucket: bucket })))).toMatchObject({ $metadata: { httpStatusCode: 404 } });
    expect(await failure(s3.send(new PutBucketAclCommand({ Bucket: B, ACL: bogus })))).toMatchObject({
      name: 'InvalidArgument',
      $metadata: { httpStatusCode: 400 },
    });
    expect(await bucketAcl(s3, B)).toBe('private');
    const key = `bogus-${tag}.txt`;
    expect(await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'x', ACL: bogus as never })))).toMatchObject({
      name: 'InvalidArgument',
      $metadata: { httpStatusCode: 400 },
    });
    expect(await absent(s3, B, key)).toBe(true);
    // Only the ACL's owner may change it.
    expect(await failure(other.send(new PutBucketAclCommand({ Bucket: B, ACL: 'public-read' })))).toMatchObject({ name: 'AccessDenied' });
    expect(await failure(anon.send(new PutBucketAclCommand({ Bucket: B, ACL: 'public-read' })))).toMatchObject({ name: 'AccessDenied' });
    expect(await bucketAcl(s3, B)).toBe('private');
  });

  test("objects take all four canned ACLs; GetObjectAcl answers S3's grants; PutObjectAcl changes them", async () => {
    const key = `obj-grants-${tag}`;
    for (const acl of CANNED) {
      await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'x', ACL: acl }));
      expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: B, Key: key }))).Grants)).toEqual(expectedGrants(bootAccount, acl));
    }
    for (const acl of CANNED) {
      await s3.send(new PutObjectAclCommand({ Bucket: B, Key: key, ACL: acl }));
      expect(grantsOf((await s3.send(new GetObjectAclCommand({ Bucket: B, Key: key }))).Grants)).toEqual(expectedGrants(bootAccount, acl));
    }
  });

  test('other accounts and anonymous callers GET and HEAD objects as their ACL says', async () => {
    const base = `obj-acl-${tag}/`;
    for (const acl of CANNED) {
      await s3.send(new PutObjectCommand({ Bucket: B, Key: `${base}${acl}`, Body: `body ${acl}`, ACL: acl }));
    }
    const reads = async (client: S3Client, acl: string) => {
      const got = await client.send(new GetObjectCommand({ Bucket: B, Key: `${base}${acl}` })).then(
        (r) => r.Body!.transformToString(),
        (e: Error) => e.name,
      );
      const head = await client.send(new HeadObjectCommand({ Bucket: B, Key: `${base}${acl}` })).then(
        () => 'ok',
        (e: { $metadata: { httpStatusCode: number } }) => e.$metadata.httpStatusCode,
      );
      return [acl, got, head];
    };
    const expected = (who: 'other' | 'anon') =>
      CANNED.map((acl) => {
        const open = acl.startsWith('public') || (acl === 'authenticated-read' && who === 'other');
        return [acl, open ? `body ${acl}` : 'AccessDenied', open ? 'ok' : 403];
      });
    expect(await Promise.all(CANNED.map((acl) => reads(other, acl)))).toEqual(expected('other'));
    expect(await Promise.all(CANNED.map((acl) => reads(anon, acl)))).toEqual(expected('anon'));
    await s3.send(new PutObjectAclCommand({ Bucket: B, Key: `${base}private`, ACL: 'authenticated-read' }));
    expect(await reads(other, 'private')).toEqual(['private', 'body private', 'ok']);
  });

  test('a public-read bucket lists for anyone; private and authenticated-read ones as S3 does; missing buckets and keys are 404 to all', async () => {
    const open = `open-${tag}`;
    const shut = `shut-${tag}`;
    const members = `members-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: open, ACL: 'public-read' }));
    await s3.send(new CreateBucketCommand({ Bucket: shut }));
    await s3.send(new CreateBucketCommand({ Bucket: members, ACL: 'authenticated-read' }));
    for (const bucket of [open, shut, members]) {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'public.txt', Body: 'public', ACL: 'public-read' }));
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'private.txt', Body: 'private' }));
    }
    const lists = async (client: S3Client, bucket: string) => {
      const v2 = await client.send(new ListObjectsV2Command({ Bucket: bucket })).then(
        (r) => r.Contents!.map((c) => c.Key),
        (e: Error) => e.name,
      );
      const v1 = await client.send(new ListObjectsCommand({ Bucket: bucket })).then(
        (r) => r.Contents!.map((c) => c.Key),
        (e: Error) => e.name,
      );
      const head = await client.send(new HeadBucketCommand({ Bucket: bucket })).then(
        () => 200,
        (e: { $metadata: { httpStatusCode: number } }) => e.$metadata.httpStatusCode,
      );
      return [v2, v1, head];
    };
    const keys = ['private.txt', 'public.txt'];
    expect(await lists(anon, open)).toEqual([keys, keys, 200]);
    expect(await lists(anon, shut)).toEqual(['AccessDenied', 'AccessDenied', 403]);
    expect(await lists(anon, members)).toEqual(['AccessDenied', 'AccessDenied', 403]);
    expect(await lists(other, members)).toEqual([keys, keys, 200]);
    expect(await lists(other, shut)).toEqual(['AccessDenied', 'AccessDenied', 403]);
    // Listing a bucket opens its keys, not its private objects' bytes: nor their CIDs, which any IPFS gateway would serve.
    expect(await failure(anon.send(new GetObjectCommand({ Bucket: open, Key: 'private.txt' })))).toMatchObject({
      name: 'AccessDenied',
      $metadata: { httpStatusCode: 403 },
    });
    expect(await (await anon.send(new GetObjectCommand({ Bucket: open, Key: 'public.txt' }))).Body!.transformToString()).toBe('public');
    const hashed = await (await door.fetch(`${target.endpoints.s3}/${open}?list-type=2&ipfs-hashes=true`)).text();
    const hashes = [...hashed.matchAll(/<Key>([^<]*)<\/Key>.*?<\/Contents>/g)].map((m) => [m[1], m[0].includes('<IpfsHash>')]);
    expect(hashes).toEqual([
      ['private.txt', false],
      ['public.txt', true],
    ]);

    for (const client of [s3, other, anon]) {
      expect(await failure(client.send(new ListObjectsV2Command({ Bucket: `never-made-${tag}` })))).toMatchObject({
        name: 'NoSuchBucket',
        $metadata: { httpStatusCode: 404 },
      });
      expect(await failure(client.send(new GetObjectCommand({ Bucket: `never-made-${tag}`, Key: 'k' })))).toMatchObject({
        name: 'NoSuchBucket',
        $metadata: { httpStatusCode: 404 },
      });
      expect(await failure(client.send(new GetObjectCommand({ Bucket: open, Key: 'never-put' })))).toMatchObject({
        name: 'NoSuchKey',
        $metadata: { httpStatusCode: 404 },
      });
    }
    expect(await failure(other.send(new GetObjectCommand({ Bucket: members, Key: 'never-put' })))).toMatchObject({ name: 'NoSuchKey' });
    // Who may not list a bucket may not learn which keys it lacks either (S3 answers 403 there too).
    expect(await failure(anon.send(new GetObjectCommand({ Bucket: shut, Key: 'never-put' })))).toMatchObject({
      name: 'AccessDenied',
      $metadata: { httpStatusCode: 403 },
    });
  });

  test('a public-read-write bucket takes anonymous PUTs, owned by the bucket owner; other buckets refuse them and store nothing', async () => {
    const bucket = `dropbox-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket, ACL: 'public-read-write' }));
    await anon.send(new PutObjectCommand({ Bucket: bucket, Key: 'from-anon.txt', Body: 'anonymous upload' }));
    await other.send(new PutObjectCommand({ Bucket: bucket, Key: 'from-other.txt', Body: 'other account upload' }));
    for (const key of ['from-anon.txt', 'from-other.txt']) {
      const acl = await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: key }));
      expect([acl.Owner?.ID, grantsOf(acl.Grants)]).toEqual([bootAccount, expectedGrants(bootAccount, 'private')]);
    }
    expect(await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'from-anon.txt' }))).Body!.transformToString()).toBe(
      'anonymous upload',
    );
    // A stream goes as aws-chunked with a trailing checksum (no signature to chain): the framing is decoded, not stored.
    const seen: Record<string, string> = {};
    const streaming = unsigned(door.client());
    streaming.middlewareStack.add(
      (next) => (args) => {
        Object.assign(seen, (args.request as { headers: Record<string, string> }).headers);
        return next(args);
      },
      { step: 'finalizeRequest', priority: 'low' },
    );
    await streaming.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: 'streamed.txt',
        Body: Readable.from([Buffer.from('streamed '), Buffer.from('upload')]),
        ContentLength: 15,
      }),
    );
    expect(seen['x-amz-content-sha256'] ?? seen['X-Amz-Content-Sha256']).toBe('STREAMING-UNSIGNED-PAYLOAD-TRAILER');
    expect(await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'streamed.txt' }))).Body!.transformToString()).toBe(
      'streamed upload',
    );
    for (const refusing of [B, `open-${tag}`]) {
      const err = await failure(anon.send(new PutObjectCommand({ Bucket: refusing, Key: `anon-${tag}.txt`, Body: 'nope' })));
      expect(err).toMatchObject({ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
      expect(await absent(s3, refusing, `anon-${tag}.txt`)).toBe(true);
    }
  });

  test('ten concurrent PutBucketAcl on one bucket all succeed; the bucket ends with one of their ACLs', async () => {
    const bucket = `contended-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const acls = Array.from({ length: 10 }, (_, i) => CANNED[i % CANNED.length]!);
    const results = await Promise.allSettled(acls.map((ACL) => s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL }))));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.$metadata.httpStatusCode : String(r.reason)))).toEqual(
      acls.map(() => 200),
    );
    expect(CANNED).toContain(await bucketAcl(s3, bucket));
  });
});

type Result = Record<string, any> & { error?: { code: string; status: number; message: string } };

async function boto3(options: { unsigned?: boolean; env?: NodeJS.ProcessEnv }, ...ops: object[]): Promise<Result[]> {
  const { stdout } = await run(DEBIAN_CLIENTS.python3.bin, [SCRIPT], {
    env: {
      ...ws.env,
      AWS_ACCESS_KEY_ID: target.account.accessKeyId,
      AWS_SECRET_ACCESS_KEY: target.account.secretAccessKey,
      ...options.env,
    },
    input: JSON.stringify({ endpoint: target.endpoints.s3, ops, unsigned: options.unsigned ?? false }),
  });
  return JSON.parse(stdout) as Result[];
}

describe('boto3', () => {
  test('create_bucket ACL, put_bucket_acl, get_bucket_acl; UNSIGNED boto3 lists and reads what is public, and only that', async () => {
    const [created, got, bogus, setPrivate] = await boto3(
      {},
      { call: 'create_bucket', args: { Bucket: 'py-acl', ACL: 'public-read' } },
      { call: 'get_bucket_acl', args: { Bucket: 'py-acl' } },
      { call: 'put_bucket_acl', args: { Bucket: 'py-acl', ACL: 'not-a-canned-acl' } },
      { call: 'create_bucket', args: { Bucket: 'py-acl-private', ACL: 'private' } },
      { call: 'put_object', args: { Bucket: 'py-acl', Key: 'open.txt', Body: 'open', ACL: 'public-read' } },
      { call: 'put_object', args: { Bucket: 'py-acl', Key: 'closed.txt', Body: 'closed' } },
      { call: 'put_object', args: { Bucket: 'py-acl-private', Key: 'open.txt', Body: 'open too', ACL: 'public-read' } },
    );
    expect(created!.error).toBeUndefined();
    expect(grantsOf(got!.Grants)).toEqual(expectedGrants(bootAccount, 'public-read'));
    expect(bogus!.error).toMatchObject({ code: 'InvalidArgument', status: 400 });
    expect(setPrivate!.error).toBeUndefined();

    const [list, listV1, get, head, closed, shutList, shutGet, missing, noBucket] = await boto3(
      { unsigned: true },
      { call: 'list_objects_v2', args: { Bucket: 'py-acl' } },
      { call: 'list_objects', args: { Bucket: 'py-acl' } },
      { call: 'get_object', args: { Bucket: 'py-acl', Key: 'open.txt' } },
      { call: 'head_object', args: { Bucket: 'py-acl', Key: 'open.txt' } },
      { call: 'get_object', args: { Bucket: 'py-acl', Key: 'closed.txt' } },
      { call: 'list_objects_v2', args: { Bucket: 'py-acl-private' } },
      { call: 'get_object', args: { Bucket: 'py-acl-private', Key: 'open.txt' } },
      { call: 'get_object', args: { Bucket: 'py-acl', Key: 'never-put' } },
      { call: 'list_objects_v2', args: { Bucket: 'py-never-made' } },
    );
    expect((list!.Contents as Array<{ Key: string }>).map((c) => c.Key)).toEqual(['closed.txt', 'open.txt']);
    expect((listV1!.Contents as Array<{ Key: string }>).map((c) => c.Key)).toEqual(['closed.txt', 'open.txt']);
    expect(get!.body_text).toBe('open');
    expect(head!.ContentLength).toBe(4);
    expect(closed!.error).toMatchObject({ code: 'AccessDenied', status: 403 });
    expect(shutList!.error).toMatchObject({ code: 'AccessDenied', status: 403 });
    expect(shutGet!.body_text).toBe('open too');
    expect(missing!.error).toMatchObject({ code: 'NoSuchKey', status: 404 });
    expect(noBucket!.error).toMatchObject({ code: 'NoSuchBucket', status: 404 });
  });

  test('authenticated-read: any Cairn key reads and lists, an anonymous caller does not', async () => {
    await boto3(
      {},
      { call: 'create_bucket', args: { Bucket: 'py-members', ACL: 'authenticated-read' } },
      { call: 'put_object', args: { Bucket: 'py-members', Key: 'memo.txt', Body: 'for members', ACL: 'authenticated-read' } },
    );
    const ops = [
      { call: 'list_objects_v2', args: { Bucket: 'py-members' } },
      { call: 'get_object', args: { Bucket: 'py-members', Key: 'memo.txt' } },
    ];
    const [otherList, otherGet] = await boto3(
      { env: { AWS_ACCESS_KEY_ID: target.other.accessKeyId, AWS_SECRET_ACCESS_KEY: target.other.secretAccessKey } },
      ...ops,
    );
    expect((otherList!.Contents as Array<{ Key: string }>).map((c) => c.Key)).toEqual(['memo.txt']);
    expect(otherGet!.body_text).toBe('for members');
    const [anonList, anonGet] = await boto3({ unsigned: true }, ...ops);
    expect(anonList!.error).toMatchObject({ code: 'AccessDenied', status: 403 });
    expect(anonGet!.error).toMatchObject({ code: 'AccessDenied', status: 403 });
  });
});

test('presigned URLs: X-Amz-Expires of 0, negative (SDK presigner) or over 604800 (boto3) is AuthorizationQueryParametersError (400), through both doors', async () => {
  const s3 = target.s3();
  await s3.send(new PutObjectCommand({ Bucket: B, Key: 'presign-range.txt', Body: 'in range' }));
  const params = { Bucket: B, Key: 'presign-range.txt' };
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
  for (const { fetch: get } of doorsFor(s3Doors(() => target))) {
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
