/**
 * `cairn storage` against a local service: a folder copied up and back
 * recursively, each file printed with the CID the S3 API itself answers
 * for it; listings, URLs, removal; the progress bars in a terminal; and
 * failures as one line.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { startTestService, type TestService } from '../support/service.js';
import { newAccount, type AccountFixture } from '../support/graphql.js';
import { captureHeaders } from '../support/s3-doors.js';
import { hostFetch } from '../support/http.js';
import { loginArgs, newCliUser, plain, type CliUser } from './cli-runner.js';

let service: TestService;
let a: AccountFixture;
let u: CliUser;
let s3: S3Client;
let bucket: string;

const MiB = 1024 * 1024;
const FILES: Record<string, Buffer> = {
  'index.html': Buffer.from('<h1>hello</h1>\n'),
  'empty.txt': Buffer.alloc(0),
  'assets/app.js': Buffer.from('console.log(1);\n'),
  'assets/deep/été photo.bin': randomBytes(300 * 1024),
  // Past the SDK's 5 MiB part size: a multipart upload, whose CID is still the whole file's.
  'big/video.mp4': randomBytes(6 * MiB + 123),
};

async function writeTree(root: string, files: Record<string, Buffer>): Promise<void> {
  for (const [path, bytes] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), bytes);
  }
}

async function readTree(root: string, prefix = ''): Promise<Record<string, Buffer>> {
  const out: Record<string, Buffer> = {};
  for (const entry of await readdir(join(root, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) Object.assign(out, await readTree(root, rel));
    else out[rel] = await readFile(join(root, rel));
  }
  return out;
}

/** The CIDs the S3 API answers for an object (HEAD), and its Content-Type. */
async function headOf(key: string, inBucket = bucket): Promise<{ hash: string; hashV0: string; contentType?: string }> {
  const captured = captureHeaders(s3);
  const head = await s3.send(new HeadObjectCommand({ Bucket: inBucket, Key: key }));
  return {
    hash: captured.headers['x-service-ipfs-hash']!,
    hashV0: captured.headers['x-service-ipfs-hash-v0']!,
    contentType: head.ContentType,
  };
}

function oneErrorLine(stderr: string): string {
  const lines = stderr.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^cairn: /);
  return lines[0]!;
}

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off' });
  a = await newAccount(service, 'cli-storage');
  bucket = `${a.account.name}-bucket`;
  s3 = service.s3({ accessKeyId: a.accessKeyId, secretAccessKey: a.secretAccessKey });
  u = await newCliUser();
  const login = await u.run(loginArgs(service, a.apiKey));
  if (login.code !== 0) throw new Error(login.stderr);
}, 120_000);
afterAll(async () => {
  await u?.cleanup();
  await service?.close();
});

test('cp -r uploads a folder, printing for each file the CID the S3 API answers; ls, url and cp -r back agree', async () => {
  const src = join(u.home, 'site');
  await writeTree(src, FILES);
  const uploaded = await u.json(['storage', 'cp', '-r', src, `s3://${bucket}/site`], { binary: true });
  expect(uploaded.map((r: { key: string }) => r.key)).toEqual(
    Object.keys(FILES)
      .map((k) => `site/${k}`)
      .sort(),
  );
  for (const file of uploaded) {
    const head = await headOf(file.key);
    expect({ key: file.key, hash: file.hash, hashV0: file.hashV0 }).toEqual({ key: file.key, hash: head.hash, hashV0: head.hashV0 });
    expect(file.size).toBe(FILES[file.key.slice('site/'.length)]!.length);
  }
  expect(uploaded[0].hash).toMatch(/^bafybei/);
  expect((await headOf('site/index.html')).contentType).toBe('text/html; charset=utf-8');
  expect((await headOf('site/assets/app.js')).contentType).toBe('text/javascript; charset=utf-8');
  // Private unless asked: only the owner has a grant.
  const acl = await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'site/index.html' }));
  expect(acl.Grants?.some((g) => g.Grantee?.URI?.endsWith('/AllUsers'))).toBe(false);

  const listed = await u.json(['storage', 'ls', `s3://${bucket}/site/`, '-r']);
  expect(listed.files.map((f: { key: string; hash: string; size: number }) => [f.key, f.hash, f.size])).toEqual(
    uploaded.map((r: { key: string; hash: string; size: number }) => [r.key, r.hash, r.size]),
  );
  const oneLevel = await u.json(['storage', 'ls', `s3://${bucket}/site/`]);
  expect(oneLevel.directories).toEqual(['site/assets/', 'site/big/']);
  expect(oneLevel.files.map((f: { key: string }) => f.key)).toEqual(['site/empty.txt', 'site/index.html']);
  const human = await u.run(['storage', 'ls', `s3://${bucket}/site/`]);
  expect(human.stdout).toMatch(/PRE {2}site\/assets\//);
  expect(human.stdout).toMatch(
    new RegExp(`15 B\\s+${uploaded.find((r: { key: string }) => r.key === 'site/index.html').hash}\\s+site/index.html`),
  );

  const url = await u.json(['storage', 'url', `s3://${bucket}/site/index.html`]);
  const index = uploaded.find((r: { key: string }) => r.key === 'site/index.html');
  expect(url).toMatchObject({
    hash: index.hash,
    hashV0: index.hashV0,
    publicUrl: `http://${bucket}.${service.config.urls.storagePublicDomain}/site/index.html`,
  });
  const byCid = await fetch(url.gatewayUrl);
  expect(await byCid.text()).toBe('<h1>hello</h1>\n');

  const dest = join(u.home, 'copy');
  const downloaded = await u.json(['storage', 'cp', '-r', `s3://${bucket}/site`, dest]);
  expect(downloaded.map((r: { key: string; hash: string }) => [r.key, r.hash])).toEqual(
    uploaded.map((r: { key: string; hash: string }) => [r.key, r.hash]),
  );
  const copy = await readTree(dest);
  expect(Object.keys(copy).sort()).toEqual(Object.keys(FILES).sort());
  for (const [path, bytes] of Object.entries(FILES)) expect(copy[path]!.equals(bytes)).toBe(true);
  expect((await readdir(join(dest, 'big'))).filter((n) => n.includes('partial'))).toEqual([]);

  const toStdout = await u.run(['storage', 'cp', `s3://${bucket}/site/assets/app.js`, '-'], { binary: true });
  expect(toStdout).toEqual({ code: 0, stdout: 'console.log(1);\n', stderr: '' });
});

test('one file up with --public (served at its public URL) and down to a folder; the human lines name the CID', async () => {
  const file = join(u.home, 'note.txt');
  await writeFile(file, 'a public note\n');
  const up = await u.run(['storage', 'cp', file, `s3://${bucket}/notes/`, '--public']);
  expect(up.code).toBe(0);
  const head = await headOf('notes/note.txt');
  expect(up.stdout).toContain(`-> s3://${bucket}/notes/note.txt  ${head.hash}`);
  const publicUrl = new URL(`http://${bucket}.${service.config.urls.storagePublicDomain}/notes/note.txt`);
  const served = await hostFetch(`${service.endpoints.gateway}${publicUrl.pathname}`, { headers: { host: publicUrl.host } });
  expect(served.status).toBe(200);
  expect(await served.text()).toBe('a public note\n');

  await mkdir(join(u.home, 'into'), { recursive: true });
  const down = await u.run(['storage', 'cp', `s3://${bucket}/notes/note.txt`, join(u.home, 'into')]);
  expect(down.code).toBe(0);
  expect(down.stdout).toContain(head.hash);
  expect(await readFile(join(u.home, 'into', 'note.txt'), 'utf8')).toBe('a public note\n');
});

test('cp between s3:// paths copies in the service: same CIDs, folders with -r, --public and --content-type; a missing source is one line', async () => {
  const other = `${a.account.name}-backup`;
  await s3.send(new CreateBucketCommand({ Bucket: other }));
  const files: Record<string, Buffer> = {
    'r/a.txt': Buffer.from('alpha\n'),
    'r/sub/b c.bin': randomBytes(70 * 1024),
    'r/sub/ü.txt': Buffer.from('ü\n'),
  };
  for (const [Key, Body] of Object.entries(files)) await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body }));

  const copied = await u.json(['storage', 'cp', '-r', `s3://${bucket}/r`, `s3://${other}/backup/`]);
  expect(copied.map((c: { key: string; size: number }) => [c.key, c.size])).toEqual([
    ['backup/a.txt', 6],
    ['backup/sub/b c.bin', 70 * 1024],
    ['backup/sub/ü.txt', 3],
  ]);
  for (const c of copied) {
    const source = `r/${c.key.slice('backup/'.length)}`;
    const [from, to] = [await headOf(source), await headOf(c.key, other)];
    // Content-addressed: the copy is the same DAG, and what the command printed is what the service answers.
    expect(to.hash).toBe(from.hash);
    expect({ hash: c.hash, hashV0: c.hashV0 }).toEqual({ hash: to.hash, hashV0: to.hashV0 });
    const got = await s3.send(new GetObjectCommand({ Bucket: other, Key: c.key }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(files[source]!)).toBe(true);
  }
  const acl = await s3.send(new GetObjectAclCommand({ Bucket: other, Key: 'backup/a.txt' }));
  expect(acl.Grants?.some((g) => g.Grantee?.URI?.endsWith('/AllUsers'))).toBe(false);

  // One file into a folder, public, with a new type; the human line names the copy and its CID.
  const human = await u.run([
    'storage',
    'cp',
    `s3://${bucket}/r/a.txt`,
    `s3://${other}/pub/`,
    '--public',
    '--content-type',
    'text/markdown',
  ]);
  expect(human.code).toBe(0);
  const head = await headOf('pub/a.txt', other);
  expect(head.contentType).toBe('text/markdown');
  expect(plain(human.stderr + human.stdout)).toContain(`copy: s3://${bucket}/r/a.txt -> s3://${other}/pub/a.txt  ${head.hash}`);
  const served = await hostFetch(`${service.endpoints.gateway}/pub/a.txt`, {
    headers: { host: `${other}.${service.config.urls.storagePublicDomain}` },
  });
  expect(await served.text()).toBe('alpha\n');

  const missing = await u.run(['storage', 'cp', `s3://${bucket}/r/nope.txt`, `s3://${other}/x`]);
  expect(missing.code).toBe(1);
  expect(oneErrorLine(missing.stderr)).toBe(`cairn: s3://${bucket}/r/nope.txt does not exist`);
  const folderNoR = await u.run(['storage', 'cp', `s3://${bucket}/r/`, `s3://${other}/x/`]);
  expect(oneErrorLine(folderNoR.stderr)).toMatch(/names a folder: add -r/);
});

test('rm removes one file or, with -r, a prefix; a missing file is an error', async () => {
  const dir = join(u.home, 'junk');
  await writeTree(dir, { 'a.txt': Buffer.from('a'), 'b/c.txt': Buffer.from('c') });
  expect((await u.run(['storage', 'cp', '-r', dir, `s3://${bucket}/junk/`])).code).toBe(0);
  const missing = await u.run(['storage', 'rm', `s3://${bucket}/junk/nope.txt`]);
  expect(missing.code).toBe(1);
  expect(oneErrorLine(missing.stderr)).toBe(`cairn: s3://${bucket}/junk/nope.txt does not exist`);
  expect(await u.json(['storage', 'rm', `s3://${bucket}/junk/a.txt`])).toEqual({ bucket, deleted: ['junk/a.txt'] });
  expect(await u.json(['storage', 'rm', '-r', `s3://${bucket}/junk`])).toEqual({ bucket, deleted: ['junk/b/c.txt'] });
  expect((await u.json(['storage', 'ls', `s3://${bucket}/junk/`, '-r'])).files).toEqual([]);
});

test('in a terminal, a transfer draws a progress bar up to 100% and still prints the CID', async () => {
  const file = join(u.home, 'large.bin');
  await writeFile(file, randomBytes(5 * MiB));
  const { code, output } = await u.runInTerminal(['storage', 'cp', file, `s3://${bucket}/tty/large.bin`]);
  expect(code).toBe(0);
  const head = await headOf('tty/large.bin');
  const text = plain(output);
  expect(text).toContain('\u2588'); // the bar's filled part
  expect(text).toMatch(/100% \| 5\.0 MiB\/5\.0 MiB \| 1\/1 files/);
  expect(text).toContain(`-> s3://${bucket}/tty/large.bin  ${head.hash}`);
  // Not on a terminal (the other tests), nothing but the lines.
  const piped = await u.run(['storage', 'cp', file, `s3://${bucket}/tty/again.bin`]);
  expect(piped.stdout).not.toContain('\u2588');
  expect(piped.stderr).toBe('');
});

test('failures are one line: a folder without -r, a bucket that is not there, no storage key pair', async () => {
  const dir = join(u.home, 'folder');
  await writeTree(dir, { 'x.txt': Buffer.from('x') });
  const noR = await u.run(['storage', 'cp', dir, `s3://${bucket}/x/`]);
  expect(noR.code).toBe(1);
  expect(oneErrorLine(noR.stderr)).toMatch(/is a folder: add -r/);
  const noBucket = await u.run(['storage', 'ls', 's3://no-such-bucket-here/']);
  expect(noBucket.code).toBe(1);
  expect(oneErrorLine(noBucket.stderr)).toMatch(/NoSuchBucket/);
  const bothLocal = await u.run(['storage', 'cp', dir, join(u.home, 'elsewhere')]);
  expect(bothLocal.code).toBe(1);
  expect(oneErrorLine(bothLocal.stderr)).toBe('cairn: one side must be a remote path: s3://<bucket>/<key>');
  const keyless = await newCliUser();
  try {
    const result = await keyless.run(['storage', 'ls'], { env: { CAIRN_API_KEY: a.apiKey } });
    expect(result.code).toBe(1);
    expect(oneErrorLine(result.stderr)).toMatch(/no storage key pair: run cairn login/);
  } finally {
    await keyless.cleanup();
  }
});
