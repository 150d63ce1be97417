/**
 * The tests' git server (test/support/git-server.ts) runs in a process of
 * its own: what the suites rely on through it. A clone counts its requests
 * and the count is read after them; a failed fixture command reaches the
 * suite as a rejected call with git's own words; the process goes when the
 * suite's does, closed or not, and takes its repositories with it.
 */
import { execFile, fork } from 'node:child_process';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { GitCommandError, startGitServer, type GitServer } from '../support/git-server.js';

const run = promisify(execFile);
let server: GitServer;
let dir: string;

beforeAll(async () => {
  [server, dir] = await Promise.all([startGitServer(), mkdtemp(join(tmpdir(), 'cairn-git-server-test-'))]);
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

test('a clone sees the commits, counted request by request; Buffer contents arrive byte for byte', async () => {
  const bytes = Buffer.from([0, 255, 1, 254, 10, 13]);
  const sha = await server.commit('acme/counted', { 'index.html': '<h1>hi</h1>', 'blob.bin': bytes }, 'first');
  const before = await server.requests();
  await run('git', ['clone', '--quiet', server.repoUrl('acme/counted'), join(dir, 'counted')]);
  // Smart HTTP, protocol v2: the refs advertisement, ls-refs, then fetch.
  expect((await server.requests()) - before).toBeGreaterThanOrEqual(2);
  const { stdout } = await run('git', ['rev-parse', 'HEAD'], { cwd: join(dir, 'counted') });
  expect(stdout.trim()).toBe(sha);
  const { stdout: blob } = await run('git', ['cat-file', 'blob', 'HEAD:blob.bin'], { cwd: join(dir, 'counted'), encoding: 'buffer' });
  expect(Buffer.compare(blob, bytes)).toBe(0);
});

test('pack() leaves the repository in one pack, as a host keeps it; clones and later commits still work', async () => {
  await server.commit('acme/packed', { 'a.txt': 'one', 'dir/b.txt': 'two' }, 'first');
  const second = await server.commit('acme/packed', { 'a.txt': 'three' }, 'second');
  await server.pack('acme/packed');
  const third = await server.commit('acme/packed', { 'c.txt': 'four' }, 'third');
  await run('git', ['clone', '--quiet', server.repoUrl('acme/packed'), join(dir, 'packed')]);
  const { stdout: log } = await run('git', ['log', '--format=%H', '-3'], { cwd: join(dir, 'packed') });
  expect(log.trim().split('\n').slice(0, 2)).toEqual([third, second]);
  // The bare repository behind the working copy a script gets: what pack() made is one pack,
  // and only the third commit's objects are loose (blob, tree, commit).
  const counts = await server.shell('acme/packed', 'git -C "$(git remote get-url origin)" count-objects -v');
  expect(counts).toMatch(/^count: 3$/m);
  expect(counts).toMatch(/^packs: 1$/m);
});

test('private-* repositories and ones given credentials answer 401; what was sent is kept', async () => {
  await server.commit('acme/closed', { a: '1' }, 'first');
  await server.requireCredentials('acme/closed', 'x-access-token', 'the-token');
  const ask = (repo: string, authorization?: string) =>
    fetch(`${server.repoUrl(repo)}/info/refs?service=git-upload-pack`, { headers: authorization ? { authorization } : {} });
  expect((await ask('acme/private-thing')).status).toBe(401);
  expect((await ask('acme/closed')).status).toBe(401);
  const basic = `Basic ${Buffer.from('x-access-token:the-token').toString('base64')}`;
  expect((await ask('acme/closed', basic)).status).toBe(200);
  expect(await server.authorizations()).toContainEqual({ path: '/acme/closed.git/info/refs', authorization: basic });
});

test("a failed fixture command rejects with git's stderr, and the server carries on", async () => {
  const error = await server.shell('acme/failing', 'git rev-parse --verify no-such-ref').then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(GitCommandError);
  expect((error as GitCommandError).stderr).toContain('fatal: Needed a single revision');
  expect(await server.shell('acme/failing', 'echo still here')).toBe('still here');
});

test('the process ends, its repositories removed, when its parent goes without closing it', async () => {
  // The process as git-server.ts forks it, without the handle's close(): its parent's side of the channel closing is all it sees.
  const child = fork(fileURLToPath(new URL('../support/git-server-process.mjs', import.meta.url)), [], {
    execArgv: [],
    serialization: 'advanced',
  });
  const { ready: url, root } = await new Promise<{ ready: string; root: string }>((resolve) => child.once('message', resolve));
  await access(root);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.disconnect();
  expect(await exited).toBe(0);
  await expect(fetch(url)).rejects.toThrow();
  await expect(access(root)).rejects.toThrow(/ENOENT/);
});
