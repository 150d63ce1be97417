/**
 * The tests' git server as a process of its own (test/support/git-server.ts
 * starts it with `fork` and speaks to it over the IPC channel): the
 * node:http server, the git-http-backend CGI it runs per request and the
 * git commands of the fixtures' scripts all fork from here, a plain
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
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { deflateSync } from 'node:zlib';

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

/**
 * What the process knows of each repository it made, by name. Its
 * commits are written here, straight into the bare repository: each
 * object hashed and deflated as git writes a loose object, the branch's
 * ref replaced last, so a clone sees the whole commit or none of it. A
 * commit made with git's command line was eight commands and a push (a
 * dozen processes, 0.3 to 0.4 s of CPU on this machine); this is none.
 * What it writes is what those commands wrote: the tree of the branch's
 * last commit (a new branch starts from the branch committed to last, as
 * a working copy would be on it) with the files given written over it and
 * those given null removed, blobs holding exactly the bytes given (git's
 * add would filter them through a .gitattributes; the suites' one changes
 * no byte of theirs), author
 * and committer `Cairn Test`, the message cleaned up as `git commit -m`
 * does. The suites' scripts (`shell`) need a working copy: the first one
 * makes it from the bare repository (every branch, on the one committed
 * to last, as commits through it would have left it), and from then on
 * that repository's commits go through it with git's commands, as before.
 */
const repos = new Map();

const IDENTITY = `${GIT_ENV.GIT_AUTHOR_NAME} <${GIT_ENV.GIT_AUTHOR_EMAIL}>`;

function repository(repo) {
  let known = repos.get(repo);
  if (!known) {
    known = {
      bare: join(bare, `${repo}.git`),
      checkout: join(work, repo),
      made: undefined,
      // Set once a script has needed a working copy: commits go through it from then on.
      working: false,
      // The branch a working copy would be on: the one committed to last.
      current: 'main',
      /** branch -> { head, files: Map<path, blob id> } */
      branches: new Map(),
      written: new Set(),
    };
    repos.set(repo, known);
  }
  return known;
}

async function made(known) {
  known.made ??= (async () => {
    await mkdir(known.bare, { recursive: true });
    await git(known.bare, 'init', '--bare', '--quiet', '--initial-branch=main');
  })();
  await known.made;
}

/** Writes a loose object (as `git hash-object -w` does) unless this repository has it; returns its id. */
async function writeObject(known, type, body) {
  const raw = Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body]);
  const id = createHash('sha1').update(raw).digest('hex');
  if (known.written.has(id)) return id;
  const dir = join(known.bare, 'objects', id.slice(0, 2));
  await mkdir(dir, { recursive: true });
  const temporary = join(dir, `tmp_obj_${process.pid}_${++temporaries}`);
  await writeFile(temporary, deflateSync(raw), { mode: 0o444 });
  await rename(temporary, join(dir, id.slice(2)));
  known.written.add(id);
  return id;
}
let temporaries = 0;

/** The tree objects of `files` (path -> blob id), written bottom up; returns the root's id. */
async function writeTrees(known, files) {
  const root = new Map();
  for (const [path, id] of files) {
    const parts = path.split('/');
    let dir = root;
    for (const part of parts.slice(0, -1)) {
      let sub = dir.get(part);
      if (!(sub instanceof Map)) dir.set(part, (sub = new Map()));
      dir = sub;
    }
    dir.set(parts.at(-1), id);
  }
  const write = async (dir) => {
    const entries = [];
    for (const [name, entry] of dir) {
      const tree = entry instanceof Map;
      // Sorted as git sorts a tree: by the bytes of each name, a directory's as if it ended in "/".
      entries.push({
        key: Buffer.from(tree ? `${name}/` : name),
        name,
        mode: tree ? '40000' : '100644',
        id: tree ? await write(entry) : entry,
      });
    }
    entries.sort((a, b) => Buffer.compare(a.key, b.key));
    const body = Buffer.concat(entries.map((e) => Buffer.concat([Buffer.from(`${e.mode} ${e.name}\0`), Buffer.from(e.id, 'hex')])));
    return writeObject(known, 'tree', body);
  };
  return write(root);
}

/** A message as `git commit -m` keeps it: trailing whitespace and blank lines at either end gone, blank lines between paragraphs one. */
function cleanMessage(message) {
  const lines = [];
  for (const line of String(message)
    .split('\n')
    .map((l) => l.replace(/[ \t\r\v\f]+$/, ''))) {
    if (line === '' && (lines.length === 0 || lines.at(-1) === '')) continue;
    lines.push(line);
  }
  while (lines.at(-1) === '') lines.pop();
  if (lines.length === 0) throw new Error('Aborting commit due to empty commit message.');
  return `${lines.join('\n')}\n`;
}

/** `+HHMM` or `-HHMM` of this machine's zone now, as git writes it. */
function zone(date) {
  const minutes = -date.getTimezoneOffset();
  const abs = Math.abs(minutes);
  return `${minutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}${String(abs % 60).padStart(2, '0')}`;
}

/** The path as a working copy would hold it (`a//b`, `./a` are `a/b`, `a`); refused where writing or adding it would fail (`a/`, `..`, `.git`). */
function treePath(path) {
  const parts = String(path)
    .split('/')
    .filter((part, i, all) => (part !== '' || i === all.length - 1) && part !== '.');
  if (parts.length === 0 || parts.some((part) => part === '' || part === '..' || part.toLowerCase() === '.git')) {
    throw new Error(`a commit cannot hold the path "${path}"`);
  }
  return parts.join('/');
}

async function commitToBare(known, files, message, branch) {
  await made(known);
  const from = known.branches.get(branch) ?? known.branches.get(known.current);
  const tree = new Map(from?.files ?? []);
  // How many files each directory holds, to refuse what writing into a working copy would refuse.
  const held = new Map();
  const count = (path, by) => {
    for (let at = path.lastIndexOf('/'); at > 0; at = path.lastIndexOf('/', at - 1)) {
      const dir = path.slice(0, at);
      held.set(dir, (held.get(dir) ?? 0) + by);
    }
  };
  for (const path of tree.keys()) count(path, 1);
  const remove = (path) => {
    if (tree.delete(path)) count(path, -1);
  };
  for (const [given, content] of Object.entries(files)) {
    const path = treePath(given);
    if (content === null) {
      remove(path);
      if (held.get(path) > 0) for (const existing of [...tree.keys()]) if (existing.startsWith(`${path}/`)) remove(existing);
      continue;
    }
    // Over a directory, or below a file: writing it into a working copy fails the same way.
    if (held.get(path) > 0) throw new Error(`EISDIR: ${path} is a directory`);
    for (let at = path.indexOf('/'); at > 0; at = path.indexOf('/', at + 1)) {
      if (tree.has(path.slice(0, at))) throw new Error(`ENOTDIR: ${path.slice(0, at)} is a file`);
    }
    const bytes = typeof content === 'string' ? Buffer.from(content) : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
    if (!tree.has(path)) count(path, 1);
    tree.set(path, await writeObject(known, 'blob', bytes));
  }
  const now = new Date();
  const stamp = `${IDENTITY} ${Math.floor(now.getTime() / 1000)} ${zone(now)}`;
  const head = await writeObject(
    known,
    'commit',
    Buffer.from(
      `tree ${await writeTrees(known, tree)}\n${from ? `parent ${from.head}\n` : ''}author ${stamp}\ncommitter ${stamp}\n\n${cleanMessage(message)}`,
    ),
  );
  const ref = join(known.bare, 'refs', 'heads', branch);
  await mkdir(dirname(ref), { recursive: true });
  const temporary = `${ref}.${process.pid}.lock`;
  await writeFile(temporary, `${head}\n`);
  await rename(temporary, ref);
  known.branches.set(branch, { head, files: tree });
  known.current = branch;
  return head;
}

/** The working copy of `repo` (its `origin` the bare repository), made on first use. */
async function workingCopy(known) {
  if (known.working) return known.checkout;
  await made(known);
  await mkdir(known.checkout, { recursive: true });
  await git(known.checkout, 'init', '--quiet', '--initial-branch=main');
  await git(known.checkout, 'remote', 'add', 'origin', known.bare);
  if (known.branches.size > 0) {
    // Every branch as a local branch and as origin's, on the branch committed to last, its files checked out.
    await git(
      known.checkout,
      'fetch',
      '--quiet',
      '--update-head-ok',
      'origin',
      '+refs/heads/*:refs/heads/*',
      '+refs/heads/*:refs/remotes/origin/*',
    );
    await git(known.checkout, 'symbolic-ref', 'HEAD', `refs/heads/${known.current}`);
    await git(known.checkout, 'reset', '--quiet', '--hard');
  }
  known.working = true;
  return known.checkout;
}

/** A commit through the working copy with git's commands, once a script has used it. */
async function commitInWorkingCopy(checkout, files, message, branch) {
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
}

const calls = {
  async commit(repo, files, message, branch = 'main') {
    const known = repository(repo);
    if (known.working) return commitInWorkingCopy(known.checkout, files, message, branch);
    return commitToBare(known, files, message, branch);
  },
  // As a git host keeps a repository it serves: its objects in one pack
  // (a push arrives as one, and hosts repack). Loose objects, as commit()
  // writes them, are inflated and deflated again by every clone.
  async pack(repo) {
    const known = repository(repo);
    await made(known);
    await git(known.bare, 'repack', '-a', '-d', '-q');
  },
  async shell(repo, script) {
    const checkout = await workingCopy(repository(repo));
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
