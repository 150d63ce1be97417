/**
 * The tests' git server as a process of its own (test/support/git-server.ts
 * starts it with `fork` and speaks to it over the IPC channel): the
 * node:http server, the git-http-backend CGI it runs per request and the
 * git commands that make the fixtures' commits all fork from here, a plain
 * Node process of about 50 MB, not from the Jest worker. On this machine a
 * fork costs the parent by its size (page tables trap to the hypervisor):
 * 5.8 ms of CPU for a `spawn` at 58 MB resident, 14 ms at the 1.5 GB a Jest
 * worker holds, and the child about as much again to unmap what it was
 * lent; a deploying suite runs dozens of git commands and CGI requests per
 * test. Plain JavaScript, no TypeScript loader, so it starts in about 40 ms.
 *
 * Messages in: `{ id, op, args }`; out: `{ ready: url }` once listening,
 * then `{ id, value }` or `{ id, error: { message, stderr } }` per call
 * (matched by id: a count is answered while a commit is still running). A repository whose name starts with `private-`
 * answers 401 to everyone; one given credentials (`requireCredentials`)
 * answers 401 to every request without exactly those (HTTP basic). The
 * process ends when the channel does (`close`, or the parent gone without
 * it), removing its repositories.
 */
import { execFile, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

// What `ps` and `perf` name this process (and its forks' parent) by, beside the suite's own `node`.
process.title = 'cairn-git-server';

const run = promisify(execFile);
const BACKEND = '/usr/lib/git-core/git-http-backend';

const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Cairn Test',
  GIT_AUTHOR_EMAIL: 'test@cairn.invalid',
  GIT_COMMITTER_NAME: 'Cairn Test',
  GIT_COMMITTER_EMAIL: 'test@cairn.invalid',
  GIT_CONFIG_NOSYSTEM: '1',
  HOME: tmpdir(),
};

async function git(cwd, ...args) {
  const { stdout } = await run('git', args, { cwd, env: { ...process.env, ...GIT_ENV }, maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

const root = await mkdtemp(join(tmpdir(), 'cairn-git-'));
const bare = join(root, 'repos');
const work = join(root, 'work');
await mkdir(bare, { recursive: true });
let count = 0;
const required = new Map();
const seen = [];

const server = createServer((req, res) => {
  count++;
  const url = new URL(req.url ?? '/', 'http://git.invalid');
  if (req.headers.authorization) seen.push({ path: url.pathname, authorization: req.headers.authorization });
  const repoOf = /^\/([^/]+\/[^/]+?)(?:\.git)?\//.exec(url.pathname)?.[1];
  const wanted = repoOf === undefined ? undefined : required.get(repoOf);
  if (/^\/[^/]+\/private-/.test(url.pathname) || (wanted !== undefined && req.headers.authorization !== wanted)) {
    res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end('credentials required\n');
    return;
  }
  const cgi = spawn(BACKEND, [], {
    env: {
      GIT_PROJECT_ROOT: bare,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
      GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
      REMOTE_ADDR: '127.0.0.1',
    },
  });
  // A client that gives up mid-request (a cancelled clone) leaves the CGI
  // writing to a closed socket, or a CGI that exits early leaves the request
  // writing to a closed pipe: neither may end the server.
  cgi.stdin.on('error', () => {});
  req.on('error', () => {});
  res.on('error', () => {});
  req.pipe(cgi.stdin);
  // A CGI answer: header lines (Status: among them), a blank line, the body.
  let head = Buffer.alloc(0);
  let started = false;
  cgi.stdout.on('data', (chunk) => {
    if (started) return void res.write(chunk);
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    started = true;
    let status = 200;
    const headers = {};
    for (const line of head.subarray(0, end).toString().split('\r\n')) {
      const at = line.indexOf(':');
      const name = line.slice(0, at).trim().toLowerCase();
      const value = line.slice(at + 1).trim();
      if (name === 'status') status = Number.parseInt(value, 10);
      else headers[name] = value;
    }
    res.writeHead(status, headers);
    res.write(head.subarray(end + 4));
  });
  cgi.stdout.on('end', () => res.end());
  cgi.on('error', (err) => {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(err));
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));

async function ensureRepo(repo) {
  const checkout = join(work, repo);
  const barePath = join(bare, `${repo}.git`);
  try {
    await git(checkout, 'rev-parse', '--git-dir');
  } catch {
    await mkdir(barePath, { recursive: true });
    await git(barePath, 'init', '--bare', '--quiet', '--initial-branch=main');
    await mkdir(checkout, { recursive: true });
    await git(checkout, 'init', '--quiet', '--initial-branch=main');
    await git(checkout, 'remote', 'add', 'origin', barePath);
  }
  return checkout;
}

const calls = {
  async commit(repo, files, message, branch = 'main') {
    const checkout = await ensureRepo(repo);
    const branches = await git(checkout, 'branch', '--list', branch);
    const hasCommits = await git(checkout, 'rev-parse', '--verify', '--quiet', 'HEAD').then(
      () => true,
      () => false,
    );
    if (!hasCommits) await git(checkout, 'checkout', '--quiet', '-B', branch);
    else if (branches) await git(checkout, 'checkout', '--quiet', branch);
    else await git(checkout, 'checkout', '--quiet', '-b', branch);
    for (const [path, content] of Object.entries(files)) {
      const file = join(checkout, path);
      if (content === null) {
        await rm(file, { recursive: true, force: true });
        continue;
      }
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, content);
    }
    await git(checkout, 'add', '--all');
    await git(checkout, 'commit', '--quiet', '--allow-empty', '-m', message);
    await git(checkout, 'push', '--quiet', 'origin', `${branch}:${branch}`);
    return git(checkout, 'rev-parse', 'HEAD');
  },
  async shell(repo, script) {
    const checkout = await ensureRepo(repo);
    const { stdout } = await run('sh', ['-c', script], { cwd: checkout, env: { ...process.env, ...GIT_ENV } });
    return stdout.trim();
  },
  requireCredentials(repo, username, password) {
    required.set(repo, `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`);
  },
  // Counted as each request arrives, so an answer sent after the suite read
  // a response holds every request that response came from.
  authorizations: () => [...seen],
  requests: () => count,
  async close() {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(() => resolve()));
    await rm(root, { recursive: true, force: true });
  },
};

process.on('message', ({ id, op, args }) => {
  Promise.resolve()
    .then(() => calls[op](...args))
    .then(
      (value) => ({ id, value }),
      // A failed command's own words: execFile's error carries git's stderr.
      (err) => ({ id, error: { message: err.message, stderr: typeof err.stderr === 'string' ? err.stderr : undefined } }),
    )
    // The parent may be gone by the time a call finishes: the disconnect handler ends this process.
    .then((answer) => process.connected && process.send(answer, (err) => void err));
});

// The parent's close, or the parent gone without one (killed, crashed, a
// suite that never closed): this process and its repositories go with it.
process.on('disconnect', () => {
  server.closeAllConnections();
  server.close();
  rmSync(root, { recursive: true, force: true });
  process.exit(0);
});

process.send({ ready: `http://127.0.0.1:${server.address().port}`, root });
