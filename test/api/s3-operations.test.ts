/**
 * The S3 operations beyond Put/Get, through both doors with the real
 * @aws-sdk/client-s3: buckets, listings, deletes, copies, ACLs, checksums.
 */
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketLocationCommand,
  GetBucketVersioningCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import type { SerializeHandler, SerializeHandlerArguments } from '@smithy/types';
import { apiTarget, localTest, type ApiTarget } from '../support/api-target.js';
import { absent, captureHeaders, s3Doors, failure } from '../support/s3-doors.js';

let target: ApiTarget;
/** The account's own bucket, and the other account's. */
let B: string;
let O: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  target = await apiTarget();
  ({ bucket: B } = target.account);
  ({ bucket: O } = target.other);
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

const md5 = (s: string | Buffer) => createHash('md5').update(s).digest('hex');

describe.each(s3Doors(() => target))('through the $name', (door) => {
  const { tag } = door;
  let s3: S3Client;
  beforeAll(() => {
    s3 = door.client();
  });

  describe('buckets', () => {
    const bucket = `photos-${tag}`;

    test('CreateBucket, HeadBucket, ListBuckets with the default bucket first, GetBucketLocation', async () => {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
      await s3.send(new HeadBucketCommand({ Bucket: bucket }));
      const names = (await s3.send(new ListBucketsCommand({}))).Buckets!.map((b) => b.Name);
      expect(names[0]).toBe(B);
      expect(names).toContain(bucket);
      const location = await s3.send(new GetBucketLocationCommand({ Bucket: bucket }));
      expect(location.LocationConstraint ?? '').toBe('');
      const versioning = await s3.send(new GetBucketVersioningCommand({ Bucket: bucket }));
      expect(versioning.Status).toBeUndefined();
    });

    test('an existing name is a success for its owner (us-east-1) and BucketAlreadyExists for others', async () => {
      expect((await s3.send(new CreateBucketCommand({ Bucket: bucket }))).$metadata.httpStatusCode).toBe(200);
      const other = door.client(target.other);
      expect(await failure(other.send(new CreateBucketCommand({ Bucket: bucket })))).toMatchObject({
        name: 'BucketAlreadyExists',
        $metadata: { httpStatusCode: 409 },
      });
      // And the other account cannot see into it.
      expect((await failure(other.send(new HeadBucketCommand({ Bucket: bucket })))).$metadata.httpStatusCode).toBe(403);
    });

    test('invalid bucket names are InvalidBucketName', async () => {
      for (const name of ['ab', 'Upper-Case', 'under_score', 'a..b', '192.168.1.1', '-start', `${'x'.repeat(64)}`]) {
        const err = await failure(s3.send(new CreateBucketCommand({ Bucket: name })));
        expect([name, err.name]).toEqual([name, 'InvalidBucketName']);
      }
    });

    test('DeleteBucket refuses a non-empty bucket, then deletes it once empty', async () => {
      const name = `doomed-${tag}`;
      await s3.send(new CreateBucketCommand({ Bucket: name }));
      await s3.send(new PutObjectCommand({ Bucket: name, Key: 'a.txt', Body: 'a' }));
      expect(await failure(s3.send(new DeleteBucketCommand({ Bucket: name })))).toMatchObject({
        name: 'BucketNotEmpty',
        $metadata: { httpStatusCode: 409 },
      });
      expect((await s3.send(new HeadObjectCommand({ Bucket: name, Key: 'a.txt' }))).ContentLength).toBe(1);
      await s3.send(new DeleteObjectCommand({ Bucket: name, Key: 'a.txt' }));
      await s3.send(new DeleteBucketCommand({ Bucket: name }));
      expect(await failure(s3.send(new HeadBucketCommand({ Bucket: name })))).toMatchObject({ $metadata: { httpStatusCode: 404 } });
      expect(await failure(s3.send(new PutObjectCommand({ Bucket: name, Key: 'late.txt', Body: 'x' })))).toMatchObject({
        name: 'NoSuchBucket',
      });
    });

    test('the default bucket cannot be deleted', async () => {
      await s3.send(new PutObjectCommand({ Bucket: B, Key: `keep-${tag}`, Body: 'x' }));
      const err = await failure(s3.send(new DeleteBucketCommand({ Bucket: B })));
      expect(err.$metadata.httpStatusCode).toBe(409);
    });
  });

  describe('listing', () => {
    // A bucket of this run's own: a deployed stack keeps the key a later test adds.
    const bucket = `list-${tag}-${Date.now().toString(36)}`;
    const keys = ['a.txt', 'b/1.txt', 'b/2.txt', 'b/c/3.txt', 'd e+f.txt', 'docs/x.md', 'docs/y.md', 'z.txt', 'zz/1', 'é.txt'];
    beforeAll(async () => {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
      for (const key of keys) await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `body of ${key}` }));
    });

    test('ListObjectsV2 pages through every key once, in order, with continuation tokens', async () => {
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 3, ContinuationToken: token }));
        pages++;
        seen.push(...(out.Contents ?? []).map((c) => c.Key!));
        expect(out.KeyCount).toBe((out.Contents ?? []).length);
        token = out.NextContinuationToken;
        expect(Boolean(out.IsTruncated)).toBe(token !== undefined);
      } while (token);
      expect(seen).toEqual([...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
      expect(pages).toBe(4);
    });

    test('Contents carry Key, LastModified, ETag, Size, StorageClass; Owner only with fetch-owner', async () => {
      const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'a.' }));
      expect(out.Contents).toHaveLength(1);
      const c = out.Contents![0]!;
      expect(c).toMatchObject({ Key: 'a.txt', ETag: `"${md5('body of a.txt')}"`, Size: 13, StorageClass: 'STANDARD' });
      expect(c.LastModified).toBeInstanceOf(Date);
      expect(c.Owner).toBeUndefined();
      const owned = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'a.', FetchOwner: true }));
      expect(owned.Contents![0]!.Owner?.DisplayName).toBe('default');
    });

    test('delimiter rolls keys into CommonPrefixes; prefix narrows; pages of prefixes continue after them', async () => {
      const top = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Delimiter: '/' }));
      expect(top.Contents!.map((c) => c.Key)).toEqual(['a.txt', 'd e+f.txt', 'z.txt', 'é.txt']);
      expect(top.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['b/', 'docs/', 'zz/']);
      const inB = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Delimiter: '/', Prefix: 'b/' }));
      expect(inB.Contents!.map((c) => c.Key)).toEqual(['b/1.txt', 'b/2.txt']);
      expect(inB.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['b/c/']);
      const entries: string[] = [];
      let token: string | undefined;
      do {
        const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Delimiter: '/', MaxKeys: 2, ContinuationToken: token }));
        entries.push(...(out.Contents ?? []).map((c) => c.Key!), ...(out.CommonPrefixes ?? []).map((p) => p.Prefix!));
        token = out.NextContinuationToken;
      } while (token);
      expect(entries.sort()).toEqual(['a.txt', 'b/', 'd e+f.txt', 'docs/', 'z.txt', 'zz/', 'é.txt'].sort());
    });

    test('start-after, max-keys 0, and a tampered continuation token', async () => {
      const after = await s3.send(new ListObjectsV2Command({ Bucket: bucket, StartAfter: 'docs/y.md' }));
      expect(after.Contents!.map((c) => c.Key)).toEqual(['z.txt', 'zz/1', 'é.txt']);
      const none = await s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 0 }));
      expect(none.Contents ?? []).toEqual([]);
      expect(none.IsTruncated).toBe(false);
      const err = await failure(s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: 'not-a-token!' })));
      expect(err).toMatchObject({ name: 'InvalidArgument', $metadata: { httpStatusCode: 400 } });
    });

    test('encoding-type=url encodes keys the way S3 does', async () => {
      const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'd', EncodingType: 'url' }));
      expect(out.EncodingType).toBe('url');
      expect(out.Contents!.map((c) => c.Key)).toEqual(['d%20e%2Bf.txt', 'docs/x.md', 'docs/y.md']);
    });

    test('ListObjects (v1) pages with marker and NextMarker, with Owner', async () => {
      const first = await s3.send(new ListObjectsCommand({ Bucket: bucket, MaxKeys: 2, Delimiter: '/' }));
      expect(first.Contents!.map((c) => c.Key)).toEqual(['a.txt']);
      expect(first.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['b/']);
      expect(first.IsTruncated).toBe(true);
      expect(first.NextMarker).toBe('b/');
      const second = await s3.send(new ListObjectsCommand({ Bucket: bucket, MaxKeys: 2, Delimiter: '/', Marker: first.NextMarker }));
      expect([...(second.Contents ?? []).map((c) => c.Key), ...(second.CommonPrefixes ?? []).map((p) => p.Prefix)].sort()).toEqual([
        'd e+f.txt',
        'docs/',
      ]);
      const flat = await s3.send(new ListObjectsCommand({ Bucket: bucket, Marker: 'z.txt' }));
      expect(flat.Contents!.map((c) => c.Key)).toEqual(['zz/1', 'é.txt']);
      expect(flat.Contents![0]!.Owner?.ID).toBeTruthy();
    });

    test('ListObjectVersions lists every object as version null', async () => {
      const out = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: 'docs/' }));
      expect(out.Versions!.map((v) => [v.Key, v.VersionId, v.IsLatest])).toEqual([
        ['docs/x.md', 'null', true],
        ['docs/y.md', 'null', true],
      ]);
    });

    test("the ipfs-hashes extension adds each object's CIDs", async () => {
      const seen = captureHeaders(s3);
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'zzz-hashed', Body: 'hello world' }));
      expect(seen.headers['x-service-ipfs-hash']).toMatch(/^bafy/);
      const res = await door.fetch(`${target.endpoints.s3}/${bucket}?list-type=2&prefix=zzz-hashed&ipfs-hashes=true`);
      expect(res.status).toBe(403); // anonymous: listing needs the owner
      const signed = door.client();
      signed.middlewareStack.add(
        (next) => (args) => {
          (args.request as { query: Record<string, string> }).query['ipfs-hashes'] = 'true';
          return next(args);
        },
        { step: 'build', name: 'hashes' },
      );
      let body = '';
      signed.middlewareStack.add(
        (next) => async (args) => {
          const out = await next(args);
          const stream = (out.response as { body: NodeJS.ReadableStream }).body;
          const chunks: Buffer[] = [];
          for await (const c of stream as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
          body = Buffer.concat(chunks).toString();
          (out.response as { body: unknown }).body = (await import('node:stream')).Readable.from([Buffer.from(body)]);
          return out;
        },
        { step: 'deserialize', name: 'raw' },
      );
      await signed.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'zzz-hashed' }));
      expect(body).toContain(`<IpfsHash>${seen.headers['x-service-ipfs-hash']}</IpfsHash>`);
      expect(body).toContain('<IpfsHashV0>Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD</IpfsHashV0>');
    });
  });

  describe('deleting', () => {
    test('DeleteObject removes the object; a missing key is still a success', async () => {
      await s3.send(new PutObjectCommand({ Bucket: B, Key: `gone-${tag}`, Body: 'x' }));
      await s3.send(new DeleteObjectCommand({ Bucket: B, Key: `gone-${tag}` }));
      expect(await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: `gone-${tag}` })))).toMatchObject({ name: 'NoSuchKey' });
      await s3.send(new DeleteObjectCommand({ Bucket: B, Key: `never-${tag}` }));
    });

    test('DeleteObjects verbose lists what it deleted; quiet lists nothing', async () => {
      const keys = [0, 1, 2, 3].map((i) => `batch-${tag}/${i}`);
      for (const key of keys) await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: key }));
      const verbose = await s3.send(
        new DeleteObjectsCommand({ Bucket: B, Delete: { Objects: [{ Key: keys[0] }, { Key: keys[1] }, { Key: 'missing' }] } }),
      );
      expect(verbose.Deleted!.map((d) => d.Key)).toEqual([keys[0], keys[1], 'missing']);
      expect(verbose.Errors ?? []).toEqual([]);
      const quiet = await s3.send(
        new DeleteObjectsCommand({ Bucket: B, Delete: { Quiet: true, Objects: [{ Key: keys[2] }, { Key: keys[3] }] } }),
      );
      expect(quiet.Deleted ?? []).toEqual([]);
      const left = await s3.send(new ListObjectsV2Command({ Bucket: B, Prefix: `batch-${tag}/` }));
      expect(left.KeyCount).toBe(0);
    });
  });

  describe('copying', () => {
    test('CopyObject copies metadata by default and replaces it with REPLACE', async () => {
      const src = `copy-src-${tag}`;
      await s3.send(
        new PutObjectCommand({ Bucket: B, Key: src, Body: 'copied bytes', ContentType: 'text/plain', Metadata: { colour: 'blue' } }),
      );
      const seen = captureHeaders(s3);
      const copied = await s3.send(new CopyObjectCommand({ Bucket: B, Key: `${src}-copy`, CopySource: `${B}/${src}` }));
      expect(copied.CopyObjectResult?.ETag).toBe(`"${md5('copied bytes')}"`);
      expect(seen.headers['x-service-ipfs-hash-v0']).toMatch(/^Qm/);
      const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: `${src}-copy` }));
      expect(head).toMatchObject({ ContentType: 'text/plain', Metadata: { colour: 'blue' }, ContentLength: 12 });
      await s3.send(
        new CopyObjectCommand({
          Bucket: B,
          Key: `${src}-replaced`,
          CopySource: `/${B}/${encodeURIComponent(src)}`,
          MetadataDirective: 'REPLACE',
          ContentType: 'text/markdown',
          Metadata: { shape: 'round' },
        }),
      );
      const replaced = await s3.send(new GetObjectCommand({ Bucket: B, Key: `${src}-replaced` }));
      expect(replaced.ContentType).toBe('text/markdown');
      expect(replaced.Metadata).toEqual({ shape: 'round' });
      expect(await replaced.Body!.transformToString()).toBe('copied bytes');
    });

    test('copying an object onto itself without changes is InvalidRequest; failed source conditions are 412', async () => {
      const key = `self-${tag}`;
      await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'me' }));
      expect(await failure(s3.send(new CopyObjectCommand({ Bucket: B, Key: key, CopySource: `${B}/${key}` })))).toMatchObject({
        name: 'InvalidRequest',
      });
      const err = await failure(
        s3.send(new CopyObjectCommand({ Bucket: B, Key: `${key}-2`, CopySource: `${B}/${key}`, CopySourceIfMatch: '"nope"' })),
      );
      expect(err.$metadata.httpStatusCode).toBe(412);
      expect(
        await failure(s3.send(new CopyObjectCommand({ Bucket: B, Key: `${key}-3`, CopySource: `${B}/missing-${tag}` }))),
      ).toMatchObject({ name: 'NoSuchKey' });
    });

    test("another account's private object cannot be copied", async () => {
      await door.client(target.other).send(new PutObjectCommand({ Bucket: O, Key: `secret-${tag}`, Body: 'theirs' }));
      const err = await failure(s3.send(new CopyObjectCommand({ Bucket: B, Key: `stolen-${tag}`, CopySource: `${O}/secret-${tag}` })));
      expect(err.name).toBe('AccessDenied');
      expect(await absent(s3, B, `stolen-${tag}`)).toBe(true);
    });
  });

  describe('ACLs', () => {
    test('PutObjectAcl public-read opens anonymous reads; private closes them; GetObjectAcl shows the grants', async () => {
      const key = `acl-${tag}.txt`;
      await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'shared' }));
      const url = `${target.endpoints.s3}/${B}/${key}`;
      expect((await door.fetch(url)).status).toBe(403);
      await s3.send(new PutObjectAclCommand({ Bucket: B, Key: key, ACL: 'public-read' }));
      const open = await door.fetch(url);
      expect(open.status).toBe(200);
      expect(await open.text()).toBe('shared');
      const acl = await s3.send(new GetObjectAclCommand({ Bucket: B, Key: key }));
      expect(acl.Grants!.map((g) => [g.Grantee?.Type, g.Permission])).toEqual([
        ['CanonicalUser', 'FULL_CONTROL'],
        ['Group', 'READ'],
      ]);
      await s3.send(new PutObjectAclCommand({ Bucket: B, Key: key, ACL: 'private' }));
      expect((await door.fetch(url)).status).toBe(403);
      expect(await failure(s3.send(new PutObjectAclCommand({ Bucket: B, Key: `missing-${tag}`, ACL: 'private' })))).toMatchObject({
        name: 'NoSuchKey',
      });
    });
  });

  describe('checksums', () => {
    test.each(['CRC32', 'CRC32C', 'SHA1', 'SHA256', 'CRC64NVME'] as const)(
      '%s is verified, stored and returned when asked',
      async (algorithm) => {
        const key = `sum-${tag}-${algorithm}`;
        const put = await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'checksummed body', ChecksumAlgorithm: algorithm }));
        const field = `Checksum${algorithm}` as const;
        expect(put[field]).toBeTruthy();
        const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key, ChecksumMode: 'ENABLED' }));
        expect(got[field]).toBe(put[field]);
        expect(await got.Body!.transformToString()).toBe('checksummed body');
      },
    );

    test('a checksum that does not match is BadDigest and stores nothing', async () => {
      const key = `badsum-${tag}`;
      const err = await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'real body', ChecksumCRC32: 'AAAAAA==' })));
      expect(err).toMatchObject({ name: 'BadDigest', $metadata: { httpStatusCode: 400 } });
      expect(await absent(s3, B, key)).toBe(true);
    });

    test('a wrong Content-MD5 is BadDigest', async () => {
      const key = `badmd5-${tag}`;
      const err = await failure(
        s3.send(
          new PutObjectCommand({ Bucket: B, Key: key, Body: 'real body', ContentMD5: Buffer.from(md5('other'), 'hex').toString('base64') }),
        ),
      );
      expect(err.name).toBe('BadDigest');
      expect(await absent(s3, B, key)).toBe(true);
    });
  });
});

test('a malformed DeleteObjects body is MalformedXML', async () => {
  const client = target.s3();
  // Break the body after serialising but before checksums and signing, so only the XML is wrong.
  const breakBody = (next: SerializeHandler<object, object>) => (args: SerializeHandlerArguments<object>) => {
    const req = args.request as { body: string; headers: Record<string, string> };
    req.body = '<Delete><Object><Key>a</Key></Object>';
    req.headers['content-length'] = String(Buffer.byteLength(req.body));
    return next(args);
  };
  client.middlewareStack.addRelativeTo(breakBody as never, { relation: 'after', toMiddleware: 'serializerMiddleware', name: 'breakBody' });
  const err = await failure(client.send(new DeleteObjectsCommand({ Bucket: B, Delete: { Objects: [{ Key: 'a' }] } })));
  expect(err).toMatchObject({ name: 'MalformedXML', $metadata: { httpStatusCode: 400 } });
});

test('anonymous callers cannot create buckets or list', async () => {
  expect((await fetch(`${target.endpoints.s3}/anon-bucket`, { method: 'PUT' })).status).toBe(403);
  expect((await fetch(`${target.endpoints.s3}/${B}?list-type=2`)).status).toBe(403);
  expect(await failure(target.s3().send(new HeadBucketCommand({ Bucket: 'anon-bucket' })))).toMatchObject({
    $metadata: { httpStatusCode: 404 },
  });
});

test('answers without a body say Content-Length: 0, as S3 does, not an empty chunked body', async () => {
  const s3 = target.s3();
  const seen = captureHeaders(s3);
  await s3.send(new PutObjectCommand({ Bucket: B, Key: 'empty-answer.txt', Body: 'x' }));
  expect(seen.headers['content-length']).toBe('0');
  expect(seen.headers['transfer-encoding']).toBeUndefined();
  const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: 'empty-answer.txt' }));
  expect(head.ContentLength).toBe(1); // HEAD keeps the object's length
  expect(seen.headers['content-length']).toBe('1');
});

// Local only: it resolves the local server's bucket domain (s3.localhost) to this machine.
localTest('virtual-host-style addressing (<bucket>.<CAIRN_BUCKET_ENDPOINT_DOMAIN>) works like path style', async () => {
  const service = target.local!;
  const { S3Client: Client } = await import('@aws-sdk/client-s3');
  const { NodeHttpHandler } = await import('@smithy/node-http-handler');
  const { Agent } = await import('node:http');
  const port = new URL(service.endpoints.s3).port;
  expect(service.config.urls.bucketEndpointDomain).toBe(`s3.localhost:${port}`);
  // Every *.s3.localhost name resolves to this machine, as a wildcard DNS record would.
  const lookup = ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) =>
    opts?.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)) as never;
  const vhost = new Client({
    endpoint: `http://s3.localhost:${port}`,
    region: 'us-east-1',
    forcePathStyle: false,
    credentials: target.account,
    requestHandler: new NodeHttpHandler({ httpAgent: new Agent({ lookup }) }),
  });
  const seen = captureHeaders(vhost);
  const hosts: string[] = [];
  vhost.middlewareStack.add(
    (next) => (args) => {
      const req = args.request as { hostname: string; path: string };
      hosts.push(`${req.hostname}${req.path}`);
      return next(args);
    },
    { step: 'finalizeRequest' },
  );
  await vhost.send(new PutObjectCommand({ Bucket: B, Key: 'vhost/hello.txt', Body: 'hello world' }));
  expect(hosts).toEqual(['default-bucket.s3.localhost/vhost/hello.txt']);
  expect(seen.headers['x-service-ipfs-hash-v0']).toBe('Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD');
  const got = await vhost.send(new GetObjectCommand({ Bucket: B, Key: 'vhost/hello.txt' }));
  expect(await got.Body!.transformToString()).toBe('hello world');
  const listed = await vhost.send(new ListObjectsV2Command({ Bucket: B, Prefix: 'vhost/' }));
  expect(listed.Contents!.map((c) => c.Key)).toEqual(['vhost/hello.txt']);
  expect(await service.services.objects.get('default-bucket', 'vhost/hello.txt')).toMatchObject({ size: 11 });
});

test('GetObject conditional requests: 304 and 412 in S3 order, If-Match compared weakly as S3 does', async () => {
  const s3 = target.s3();
  const put = await s3.send(new PutObjectCommand({ Bucket: B, Key: 'conditional.txt', Body: 'conditional' }));
  const url = `${target.endpoints.s3}/${B}/conditional.txt`;
  await s3.send(new PutObjectAclCommand({ Bucket: B, Key: 'conditional.txt', ACL: 'public-read' }));
  const get = (headers: Record<string, string>) => fetch(url, { headers });
  expect((await get({ 'if-none-match': put.ETag! })).status).toBe(304);
  expect((await get({ 'if-match': put.ETag! })).status).toBe(200);
  expect((await get({ 'if-match': `W/${put.ETag!}` })).status).toBe(200);
  const failed = await get({ 'if-match': '"other"' });
  expect(failed.status).toBe(412);
  expect(await failed.text()).toContain('<Condition>If-Match</Condition>');
  const future = new Date(Date.now() + 3_600_000).toUTCString();
  expect((await get({ 'if-modified-since': future })).status).toBe(304);
  expect((await get({ 'if-unmodified-since': new Date(0).toUTCString() })).status).toBe(412);
  // If-Match wins over If-Unmodified-Since; If-None-Match over If-Modified-Since.
  expect((await get({ 'if-match': put.ETag!, 'if-unmodified-since': new Date(0).toUTCString() })).status).toBe(200);
  expect((await get({ 'if-none-match': '"other"', 'if-modified-since': future })).status).toBe(200);
});
