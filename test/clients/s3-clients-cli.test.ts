/**
 * The AWS CLI (Debian's awscli) against Cairn: `aws s3 cp/ls/sync/rm` and
 * `aws s3api`, checking bytes, MD5 ETags, Kubo's CIDs, listings and deletes.
 */
import { readFile, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { startTestService, type TestService } from '../support/service.js';
import {
  DEBIAN_CLIENTS,
  awkwardTree,
  cidsOf,
  clientWorkspace,
  headObject,
  md5,
  multipartEtag,
  randomFile,
  requireClient,
  run,
  type ClientWorkspace,
} from '../support/clients.js';
import { bytesOf, vectorNamed } from '../support/vectors.js';

let service: TestService;
let ws: ClientWorkspace;

beforeAll(async () => {
  await requireClient('aws');
  [service, ws] = await Promise.all([startTestService(), clientWorkspace()]);
});

afterAll(async () => {
  await service?.close();
  await ws?.cleanup();
});

/** The transfer commands print "Completed ... remaining" progress into stdout when a transfer takes a while; the tests read their result lines. */
const TRANSFERS = new Set(['cp', 'mv', 'sync']);

function aws(...args: string[]) {
  const quiet = args[0] === 's3' && TRANSFERS.has(args[1]!) ? ['--no-progress'] : [];
  return run(DEBIAN_CLIENTS.aws.bin, ['--endpoint-url', service.endpoints.s3, '--no-cli-pager', ...args, ...quiet], { env: ws.env });
}

async function awsJson<T = Record<string, unknown>>(...args: string[]): Promise<T> {
  const { stdout } = await aws(...args, '--output', 'json');
  return (stdout.trim() ? JSON.parse(stdout) : {}) as T;
}
// (Paginated s3api output keeps only the result keys: KeyCount needs --no-paginate.)

/** Every file under `dir`, as relative path -> bytes. */
async function tree(dir: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.set(relative(dir, path), await readFile(path));
  }
  return out;
}

const hello = vectorNamed('"hello world\\n"');

describe('aws s3 (high-level commands)', () => {
  test('cp up and down: same bytes, MD5 ETag, Kubo CIDs', async () => {
    const local = await ws.file('cp', 'hello.txt');
    await writeFile(local, bytesOf(hello));
    await aws('s3', 'cp', local, 's3://default-bucket/cli/hello.txt');

    const stored = await headObject(service, 'default-bucket', 'cli/hello.txt');
    expect(stored.etag).toBe(md5(bytesOf(hello)));
    expect(stored.cidV1).toBe(hello.cidV1);
    expect(stored.cidV0).toBe(hello.cidV0);
    expect(stored.contentType).toBe('text/plain'); // the CLI guesses it from the extension

    const back = await ws.file('cp', 'back.txt');
    await aws('s3', 'cp', 's3://default-bucket/cli/hello.txt', back);
    expect(await readFile(back)).toEqual(bytesOf(hello));
  });

  test('cp of a 1 MiB + 1 byte random file (single part) round-trips', async () => {
    const local = await ws.file('cp', 'random.bin');
    const bytes = await randomFile(local, (1 << 20) + 1);
    await aws('s3', 'cp', local, 's3://default-bucket/cli/random.bin');
    const stored = await headObject(service, 'default-bucket', 'cli/random.bin');
    expect(stored.etag).toBe(md5(bytes));
    expect(stored.size).toBe(bytes.length);
    expect(stored.cidV1).toBe((await cidsOf(bytes)).v1);
    const back = await ws.file('cp', 'random.back');
    await aws('s3', 'cp', 's3://default-bucket/cli/random.bin', back);
    expect(md5(await readFile(back))).toBe(md5(bytes));
  });

  test('ls lists buckets, prefixes and objects with their sizes', async () => {
    const buckets = await aws('s3', 'ls');
    expect(buckets.stdout).toMatch(/\sdefault-bucket\n/);
    const top = await aws('s3', 'ls', 's3://default-bucket/');
    expect(top.stdout).toMatch(/PRE cli\/\n/);
    const inside = await aws('s3', 'ls', 's3://default-bucket/cli/');
    expect(inside.stdout).toMatch(/\s12 hello\.txt\n/);
    expect(inside.stdout).toMatch(/\s1048577 random\.bin\n/);
  });

  test('sync uploads a tree, uploads only what changed, --delete removes, and syncs back byte-for-byte', async () => {
    const src = join(ws.dir, 'sync-src');
    await randomFile(join(src, 'a.bin'), 3000);
    await randomFile(join(src, 'nested', 'b.bin'), 70_000);
    await randomFile(join(src, 'nested', 'deeper', 'c.bin'), 1);
    await writeFile(join(src, 'space and ü.txt'), 'unicode key\n');
    await writeFile(join(src, 'empty'), '');
    // sync re-uploads a file modified after its object's LastModified, which
    // S3 gives to the second: date the files a minute back, so a file
    // written in the second of its upload is not taken for a change.
    const past = new Date(Date.now() - 60_000);
    for (const path of (await tree(src)).keys()) await utimes(join(src, path), past, past);

    const first = await aws('s3', 'sync', src, 's3://default-bucket/sync/');
    expect(first.stdout.match(/^upload:/gm)).toHaveLength(5);

    const listed = await awsJson<{ Contents: Array<{ Key: string; Size: number; ETag: string }> }>(
      's3api',
      'list-objects-v2',
      '--bucket',
      'default-bucket',
      '--prefix',
      'sync/',
    );
    const local = await tree(src);
    expect(listed.Contents.map((c) => c.Key).sort()).toEqual([...local.keys()].map((k) => `sync/${k}`).sort());
    for (const c of listed.Contents) {
      const bytes = local.get(c.Key.slice('sync/'.length))!;
      expect(c.Size).toBe(bytes.length);
      expect(c.ETag).toBe(`"${md5(bytes)}"`);
    }

    const again = await aws('s3', 'sync', src, 's3://default-bucket/sync/');
    expect(again.stdout.trim()).toBe('');

    await writeFile(join(src, 'a.bin'), 'changed size\n');
    await rm(join(src, 'nested', 'deeper', 'c.bin'));
    const third = await aws('s3', 'sync', src, 's3://default-bucket/sync/', '--delete');
    expect(third.stdout).toMatch(/^upload: .*a\.bin to s3:\/\/default-bucket\/sync\/a\.bin$/m);
    expect(third.stdout).toMatch(/^delete: s3:\/\/default-bucket\/sync\/nested\/deeper\/c\.bin$/m);
    expect(third.stdout.trim().split('\n')).toHaveLength(2);

    const dest = join(ws.dir, 'sync-dest');
    await aws('s3', 'sync', 's3://default-bucket/sync/', dest);
    const down = await tree(dest);
    const now = await tree(src);
    expect([...down.keys()].sort()).toEqual([...now.keys()].sort());
    for (const [k, bytes] of now) expect(down.get(k)).toEqual(bytes);
  });

  test('rm removes one object, then --recursive the rest of a prefix', async () => {
    await aws('s3', 'rm', 's3://default-bucket/sync/empty');
    await expect(headObject(service, 'default-bucket', 'sync/empty')).rejects.toThrow();
    const removed = await aws('s3', 'rm', 's3://default-bucket/sync/', '--recursive');
    expect(removed.stdout.match(/^delete:/gm)!.length).toBeGreaterThanOrEqual(3);
    const after = await awsJson<{ Contents?: unknown[]; KeyCount: number }>(
      's3api',
      'list-objects-v2',
      '--bucket',
      'default-bucket',
      '--prefix',
      'sync/',
      '--no-paginate',
    );
    expect(after.KeyCount).toBe(0);
    expect(after.Contents).toBeUndefined();
  });
});

describe('aws s3 (more)', () => {
  test('awkward key names: sync up, ls, cp one down, rm --recursive', async () => {
    const dir = join(ws.dir, 'awkward');
    const files = await awkwardTree(dir);
    await aws('s3', 'sync', dir, 's3://default-bucket/awkward/');
    const listed = await awsJson<{ Contents: Array<{ Key: string; ETag: string }> }>(
      's3api',
      'list-objects-v2',
      '--bucket',
      'default-bucket',
      '--prefix',
      'awkward/',
    );
    expect(listed.Contents.map((c) => c.Key).sort()).toEqual([...files.keys()].map((n) => `awkward/${n}`).sort());
    for (const c of listed.Contents) expect(c.ETag).toBe(`"${md5(files.get(c.Key.slice('awkward/'.length))!)}"`);
    const back = await ws.file('awkward-back', 'one');
    await aws('s3', 'cp', 's3://default-bucket/awkward/quote"d.txt', back);
    expect(await readFile(back, 'utf8')).toBe('quote"d.txt\n');
    await aws('s3', 'rm', 's3://default-bucket/awkward/', '--recursive');
    expect(
      (
        await awsJson<{ KeyCount: number }>(
          's3api',
          'list-objects-v2',
          '--bucket',
          'default-bucket',
          '--prefix',
          'awkward/',
          '--no-paginate',
        )
      ).KeyCount,
    ).toBe(0);
  });

  test('cp from stdin and to stdout, mv, presign, mb and rb --force, canned ACL and stored headers', async () => {
    await aws('s3', 'mb', 's3://cli-more');
    await run(
      DEBIAN_CLIENTS.aws.bin,
      [
        '--endpoint-url',
        service.endpoints.s3,
        's3',
        'cp',
        '-',
        's3://cli-more/stdin.txt',
        '--acl',
        'public-read',
        '--cache-control',
        'max-age=60',
        '--content-disposition',
        'attachment; filename="x.txt"',
      ],
      { env: ws.env, input: 'from stdin\n' },
    );
    expect((await aws('s3', 'cp', 's3://cli-more/stdin.txt', '-')).stdout).toBe('from stdin\n');
    const head = await awsJson<Record<string, unknown>>('s3api', 'head-object', '--bucket', 'cli-more', '--key', 'stdin.txt');
    expect(head).toMatchObject({ CacheControl: 'max-age=60', ContentDisposition: 'attachment; filename="x.txt"', ContentLength: 11 });
    const acl = await awsJson<{ Grants: Array<{ Permission: string; Grantee: { URI?: string } }> }>(
      's3api',
      'get-object-acl',
      '--bucket',
      'cli-more',
      '--key',
      'stdin.txt',
    );
    expect(acl.Grants).toContainEqual(
      expect.objectContaining({
        Permission: 'READ',
        Grantee: expect.objectContaining({ URI: 'http://acs.amazonaws.com/groups/global/AllUsers' }),
      }),
    );

    await aws('s3', 'mv', 's3://cli-more/stdin.txt', 's3://cli-more/moved.txt');
    expect((await aws('s3', 'ls', 's3://cli-more/')).stdout).toMatch(/^\S+ \S+\s+11 moved\.txt\n$/);
    const url = (await aws('s3', 'presign', 's3://cli-more/moved.txt', '--expires-in', '300')).stdout.trim();
    const got = await fetch(url);
    expect(got.status).toBe(200);
    expect(await got.text()).toBe('from stdin\n');

    await aws('s3', 'rb', 's3://cli-more', '--force');
    expect((await aws('s3', 'ls')).stdout).not.toMatch(/cli-more/);
  });
});

describe('aws s3api', () => {
  const bucket = 'cli-api-bucket';

  test('create-bucket, then put-object answers the MD5 ETag and (in --debug) Kubo CIDs', async () => {
    await aws('s3api', 'create-bucket', '--bucket', bucket);
    const buckets = await awsJson<{ Buckets: Array<{ Name: string }> }>('s3api', 'list-buckets');
    expect(buckets.Buckets.map((b) => b.Name)).toEqual(['default-bucket', bucket]);

    const body = await ws.file('api', 'hello.txt');
    await writeFile(body, bytesOf(hello));
    const { stdout, stderr } = await aws(
      's3api',
      'put-object',
      '--bucket',
      bucket,
      '--key',
      'docs/hello.txt',
      '--body',
      body,
      '--content-type',
      'text/plain; charset=utf-8',
      '--metadata',
      'owner=cli,purpose=test',
      '--output',
      'json',
      '--debug',
    );
    expect(JSON.parse(stdout).ETag).toBe(`"${md5(bytesOf(hello))}"`);
    // The CLI prints no custom headers; its debug log shows the raw response.
    expect(stderr).toContain(`'x-service-ipfs-hash': '${hello.cidV1}'`);
    expect(stderr).toContain(`'x-service-ipfs-hash-v0': '${hello.cidV0}'`);
  });

  test('head-object and get-object return the stored headers, metadata and bytes', async () => {
    const head = await awsJson<Record<string, unknown>>('s3api', 'head-object', '--bucket', bucket, '--key', 'docs/hello.txt');
    expect(head).toMatchObject({
      ContentLength: 12,
      ETag: `"${md5(bytesOf(hello))}"`,
      ContentType: 'text/plain; charset=utf-8',
      Metadata: { owner: 'cli', purpose: 'test' },
    });
    const out = await ws.file('api', 'got.txt');
    const got = await awsJson<Record<string, unknown>>('s3api', 'get-object', '--bucket', bucket, '--key', 'docs/hello.txt', out);
    expect(got).toMatchObject({ ContentLength: 12, ETag: head.ETag, Metadata: { owner: 'cli', purpose: 'test' } });
    expect(await readFile(out)).toEqual(bytesOf(hello));

    const ranged = await ws.file('api', 'range.txt');
    await aws('s3api', 'get-object', '--bucket', bucket, '--key', 'docs/hello.txt', '--range', 'bytes=6-10', ranged);
    expect(await readFile(ranged, 'utf8')).toBe('world');
  });

  test('copy-object copies bytes and CID; REPLACE sets new metadata', async () => {
    const copied = await awsJson<{ CopyObjectResult: { ETag: string } }>(
      's3api',
      'copy-object',
      '--bucket',
      bucket,
      '--key',
      'docs/copy.txt',
      '--copy-source',
      `${bucket}/docs/hello.txt`,
    );
    expect(copied.CopyObjectResult.ETag).toBe(`"${md5(bytesOf(hello))}"`);
    const copy = await headObject(service, bucket, 'docs/copy.txt');
    expect(copy.cidV1).toBe(hello.cidV1);
    expect(copy.contentType).toBe('text/plain; charset=utf-8');

    await aws(
      's3api',
      'copy-object',
      '--bucket',
      'default-bucket',
      '--key',
      'replaced.txt',
      '--copy-source',
      `${bucket}/docs/hello.txt`,
      '--metadata-directive',
      'REPLACE',
      '--content-type',
      'application/x-test',
      '--metadata',
      'fresh=yes',
    );
    const replaced = await awsJson<Record<string, unknown>>('s3api', 'head-object', '--bucket', 'default-bucket', '--key', 'replaced.txt');
    expect(replaced).toMatchObject({ ContentType: 'application/x-test', Metadata: { fresh: 'yes' }, ContentLength: 12 });
  });

  test('list-objects-v2 with prefix, delimiter and pagination', async () => {
    await Promise.all(
      ['docs/a/1.txt', 'docs/a/2.txt', 'docs/b/1.txt', 'top.txt'].map(async (k) => {
        const f = await ws.file('api', 'list', k);
        await writeFile(f, k);
        await aws('s3api', 'put-object', '--bucket', bucket, '--key', k, '--body', f);
      }),
    );
    const grouped = await awsJson<{ Contents: Array<{ Key: string }>; CommonPrefixes: Array<{ Prefix: string }> }>(
      's3api',
      'list-objects-v2',
      '--bucket',
      bucket,
      '--prefix',
      'docs/',
      '--delimiter',
      '/',
    );
    expect(grouped.CommonPrefixes.map((p) => p.Prefix)).toEqual(['docs/a/', 'docs/b/']);
    expect(grouped.Contents.map((c) => c.Key)).toEqual(['docs/copy.txt', 'docs/hello.txt']);

    // --page-size makes the CLI follow continuation tokens, two keys a page.
    const all = await awsJson<{ Contents: Array<{ Key: string; ETag: string }> }>(
      's3api',
      'list-objects-v2',
      '--bucket',
      bucket,
      '--page-size',
      '2',
    );
    expect(all.Contents.map((c) => c.Key)).toEqual([
      'docs/a/1.txt',
      'docs/a/2.txt',
      'docs/b/1.txt',
      'docs/copy.txt',
      'docs/hello.txt',
      'top.txt',
    ]);
    expect(all.Contents.find((c) => c.Key === 'top.txt')!.ETag).toBe(`"${md5('top.txt')}"`);
  });

  test('delete-objects deletes a batch (a missing key included), then delete-bucket', async () => {
    await expect(aws('s3api', 'delete-bucket', '--bucket', bucket)).rejects.toThrow(/BucketNotEmpty/);
    const keys = ['docs/a/1.txt', 'docs/a/2.txt', 'docs/b/1.txt', 'docs/copy.txt', 'docs/hello.txt', 'top.txt', 'never-existed'];
    const deleted = await awsJson<{ Deleted: Array<{ Key: string }>; Errors?: unknown[] }>(
      's3api',
      'delete-objects',
      '--bucket',
      bucket,
      '--delete',
      JSON.stringify({ Objects: keys.map((Key) => ({ Key })) }),
    );
    expect(deleted.Deleted.map((d) => d.Key).sort()).toEqual([...keys].sort());
    expect(deleted.Errors).toBeUndefined();
    const left = await awsJson<{ KeyCount: number }>('s3api', 'list-objects-v2', '--bucket', bucket, '--no-paginate');
    expect(left.KeyCount).toBe(0);
    await expect(aws('s3api', 'get-object', '--bucket', bucket, '--key', 'top.txt', await ws.file('api', 'x'))).rejects.toThrow(
      /NoSuchKey/,
    );

    await aws('s3api', 'delete-bucket', '--bucket', bucket);
    const buckets = await awsJson<{ Buckets: Array<{ Name: string }> }>('s3api', 'list-buckets');
    expect(buckets.Buckets.map((b) => b.Name)).toEqual(['default-bucket']);
  });
});

describe('aws s3 cp of a large file (multipart)', () => {
  // Kubo's 45 MiB vector: the CLI uploads it in 8 MiB parts (its default threshold and part size).
  const big = vectorNamed('chacha "v0-seed" 174*262144+1 B (175 leaves, 2 levels)');

  test('the object is the whole file: bytes, S3 multipart ETag and the CID ipfs add gives the assembled file', async () => {
    const bytes = bytesOf(big);
    const local = await ws.file('big', 'v0-seed.bin');
    await writeFile(local, bytes);
    await aws('s3', 'cp', local, 's3://default-bucket/big/v0-seed.bin');

    const stored = await headObject(service, 'default-bucket', 'big/v0-seed.bin');
    expect(stored.size).toBe(bytes.length);
    expect(stored.etag).toBe(multipartEtag(bytes, 8 * 1024 * 1024));
    expect(stored.cidV1).toBe(big.cidV1);
    expect(stored.cidV0).toBe(big.cidV0);

    const back = await ws.file('big', 'back.bin');
    await aws('s3', 'cp', 's3://default-bucket/big/v0-seed.bin', back);
    expect(md5(await readFile(back))).toBe(md5(bytes));
    await aws('s3', 'rm', 's3://default-bucket/big/v0-seed.bin');
  });
});
