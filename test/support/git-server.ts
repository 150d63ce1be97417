/**
 * A real git server for tests, offline: Debian's git-http-backend (the CGI
 * program that serves git's smart HTTP protocol) behind node:http, over
 * bare repositories in a temporary directory, with commits the tests make
 * with the git command line. A repository whose name starts with
 * `private-` answers 401 to everyone, as a host does for a repository that
 * needs credentials; one given credentials with requireCredentials()
 * answers 401 to every request without exactly those (HTTP basic).
 */
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

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

async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', args, { cwd, env: { ...process.env, ...GIT_ENV }, maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

export interface GitServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The clone URL of a repository: `<url>/<owner>/<name>.git`. */
  repoUrl(repo: string): string;
  /**
   * Commits `files` (path -> content; null deletes) to `branch` of `repo`
   * (created on first use, as `<owner>/<name>`), with `message`; returns the
   * commit's full hash.
   */
  commit(repo: string, files: Record<string, string | Buffer | null>, message: string, branch?: string): Promise<string>;
  /**
   * Runs a shell script in the working copy of `repo` (created on first
   * use; `origin` is its bare repository) and returns its output: for what
   * commit() cannot make (modes, symlinks, trees git itself would refuse to
   * check out).
   */
  shell(repo: string, script: string): Promise<string>;
  /** From now on `repo` answers only requests with these HTTP basic credentials (401 to others). */
  requireCredentials(repo: string, username: string, password: string): void;
  /** Every Authorization header the server was sent, with the path it came with. */
  authorizations(): Array<{ path: string; authorization: string }>;
  /** How many requests the server has answered. */
  requests(): number;
  close(): Promise<void>;
}

export async function startGitServer(): Promise<GitServer> {
  const root = await mkdtemp(join(tmpdir(), 'cairn-git-'));
  const bare = join(root, 'repos');
  const work = join(root, 'work');
  await mkdir(bare, { recursive: true });
  let count = 0;
  const required = new Map<string, string>();
  const seen: Array<{ path: string; authorization: string }> = [];

  const server: Server = createServer((req, res) => {
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
    req.pipe(cgi.stdin);
    // A CGI answer: header lines (Status: among them), a blank line, the body.
    let head = Buffer.alloc(0);
    let started = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (started) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      started = true;
      let status = 200;
      const headers: Record<string, string> = {};
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const ensureRepo = async (repo: string): Promise<string> => {
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
  };

  return {
    url,
    repoUrl: (repo) => `${url}/${repo}.git`,
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
    authorizations: () => [...seen],
    requests: () => count,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
    },
  };
}
