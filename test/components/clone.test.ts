/**
 * The deploy's clone step against a real git server (git-http-backend,
 * offline): what lands in the checkout, how much history is fetched, and the
 * one-line message of each way a clone fails, and the outbound address
 * policy every clone passes. Every test runs twice: with git's command line
 * (this machine) and with isomorphic-git alone (Lambda, which has no git
 * binary). The git server listens on 127.0.0.1, so clones allow private
 * addresses unless a test shows them refused.
 */
import * as git from 'isomorphic-git';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloneError, cloneRepository, type CloneRequest } from '../../functions/deploy-worker/steps/clone/index.js';
import { copyTree, copyTreeInNode, linkTree, linkTreeInNode } from '../../functions/deploy-worker/steps/checkout/trees.js';
import { mirrorsIdle } from '../../functions/deploy-worker/steps/checkout/mirrors.js';
import { BwrapRunner, type BwrapRunnerOptions } from '../../functions/local/bwrap-runner.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import type { Resolver } from '../../functions/core/net/outbound.js';
import { variantsFor } from '../support/test-set.js';

let server: GitServer;
let work: string;
let url: string;
/** main's commits, oldest first: commit i sets index.html to "v<i>" and adds page<i>.html. */
const main: string[] = [];
/** feature's commits, branched from main's head. */
const feature: string[] = [];
const HEAD_MESSAGE = 'Ship the new landing page\n\nThe old one is kept under /old for a while.\nSee issue 12.';

beforeAll(async () => {
  server = await startGitServer();
  work = await mkdtemp(join(tmpdir(), 'cairn-clone-'));
  url = server.repoUrl('acme/site');
  for (let i = 0; i < 6; i++) {
    const message = i === 5 ? HEAD_MESSAGE : `Version ${i}`;
    main.push(await server.commit('acme/site', { 'index.html': `v${i}`, [`page${i}.html`]: `page ${i}` }, message));
  }
  for (let i = 0; i < 2; i++) {
    feature.push(await server.commit('acme/site', { 'feature.txt': `feature ${i}` }, `Feature ${i}`, 'feature'));
  }
});

afterAll(async () => {
  await server.close();
  await rm(work, { recursive: true, force: true });
});

let runs = 0;
/** Repositories made by the tests of kept repositories, numbered across both blocks (each test gets its own). */
let repoCount = 0;
/** git's command line (looked up on PATH), or none (isomorphic-git alone): set by each block of tests below. */
let tool: string | false | undefined;
/** Clones into a fresh directory; returns the result, the directory and the log lines. */
async function clone(request: Partial<CloneRequest> = {}) {
  const dir = join(work, `checkout-${++runs}`);
  const lines: string[] = [];
  const result = await cloneRepository({
    url,
    branch: 'main',
    dir,
    signal: new AbortController().signal,
    log: (line) => lines.push(line),
    outbound: { private: 'allow' },
    ...(tool === undefined ? {} : { git: tool }),
    ...request,
  });
  return { result, dir, lines };
}

async function failure(request: Partial<CloneRequest>): Promise<CloneError> {
  const error = await clone(request).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(CloneError);
  expect((error as Error).message).not.toContain('\n');
  return error as CloneError;
}

async function files(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name !== '.git').sort();
}

async function history(dir: string): Promise<string[]> {
  return (await git.log({ fs, dir })).map((entry) => entry.oid);
}

describe.each(
  variantsFor([
    ["git's command line", undefined],
    ['isomorphic-git alone (Lambda: no git binary)', false],
  ] as const),
)('with %s', (_, using) => {
  beforeAll(() => {
    tool = using;
  });

  test("a branch's head is cloned at depth 1: its files, one commit of history, its subject line", async () => {
    const { result, dir, lines } = await clone();
    expect(result).toEqual({ commit: main[5], branch: 'main', message: 'Ship the new landing page', owner: 'acme', name: 'site' });
    expect(await readFile(join(dir, 'index.html'), 'utf8')).toBe('v5');
    expect(await files(dir)).toEqual(['index.html', 'page0.html', 'page1.html', 'page2.html', 'page3.html', 'page4.html', 'page5.html']);
    expect(await history(dir)).toEqual([main[5]]);
    expect((await readFile(join(dir, '.git', 'shallow'), 'utf8')).trim()).toBe(main[5]);
    expect(lines[0]).toBe(`Cloning ${url} (branch main)`);
    expect(lines.at(-1)).toBe(`Checked out ${main[5]!.slice(0, 7)}: Ship the new landing page`);
    expect(lines).toContainEqual(expect.stringMatching(/^Fetched \d+(\.\d)? (B|KB|MB) in \d+\.\d s$/));
  });

  test('an older commit is found by deepening the branch, and its files are checked out', async () => {
    const { result, dir, lines } = await clone({ commit: main[1] });
    expect(result).toEqual({ commit: main[1], branch: 'main', message: 'Version 1', owner: 'acme', name: 'site' });
    expect(await readFile(join(dir, 'index.html'), 'utf8')).toBe('v1');
    expect(await files(dir)).toEqual(['index.html', 'page0.html', 'page1.html']);
    expect(await git.resolveRef({ fs, dir, ref: 'HEAD' })).toBe(main[1]);
    // Four commits behind the head: depths 1, 2 and 4 do not reach it, 8 does.
    expect(lines.filter((line) => line.includes('fetching'))).toEqual([
      `${main[1]} is not in the last 1 commits of main; fetching 1 more`,
      `${main[1]} is not in the last 2 commits of main; fetching 2 more`,
      `${main[1]} is not in the last 4 commits of main; fetching 4 more`,
    ]);
    expect(lines.at(-1)).toBe(`Checked out ${main[1]!.slice(0, 7)}: Version 1`);
  });

  test("a commit named by a 7-digit prefix is found, down to the branch's root", async () => {
    const { result, dir } = await clone({ commit: main[0]!.slice(0, 7).toUpperCase() });
    expect(result.commit).toBe(main[0]);
    expect(await files(dir)).toEqual(['index.html', 'page0.html']);
    expect(await readFile(join(dir, 'index.html'), 'utf8')).toBe('v0');
  });

  test('a commit of another branch is cloned from that branch, and is not found on main', async () => {
    const { result, dir } = await clone({ branch: 'feature', commit: feature[0] });
    expect(result).toMatchObject({ commit: feature[0], branch: 'feature', message: 'Feature 0' });
    expect(await readFile(join(dir, 'feature.txt'), 'utf8')).toBe('feature 0');
    expect(await readFile(join(dir, 'index.html'), 'utf8')).toBe('v5');

    const error = await failure({ branch: 'main', commit: feature[0] });
    expect(error.message).toBe(`commit ${feature[0]} not found in branch main of ${url} (searched its whole history)`);
  });

  test('a commit that is nowhere in the branch fails once the whole history is fetched', async () => {
    const missing = 'f'.repeat(40);
    const lines: string[] = [];
    const error = await failure({ commit: missing, log: (line) => lines.push(line) });
    expect(error.message).toBe(`commit ${missing} not found in branch main of ${url} (searched its whole history)`);
    expect(lines.filter((line) => line.includes('fetching'))).toHaveLength(3); // 1 + 1 + 2 + 4 = 8 ≥ 6 commits
  });

  test('a hash that is not 7 to 40 hex digits is refused before any request', async () => {
    const before = await server.requests();
    expect((await failure({ commit: 'abc12' })).message).toBe('"abc12" is not a commit hash (7 to 40 hex digits)');
    expect((await failure({ commit: 'main~2' })).message).toBe('"main~2" is not a commit hash (7 to 40 hex digits)');
    expect(await server.requests()).toBe(before);
  });

  test('a missing branch says which branch and where', async () => {
    expect((await failure({ branch: 'nope' })).message).toBe(`branch nope not found in ${url}`);
  });

  test('a missing repository is named with its URL', async () => {
    const missing = server.repoUrl('acme/gone');
    expect((await failure({ url: missing })).message).toBe(`no repository at ${missing} (HTTP 404)`);
  });

  test('a host that refuses connections is named', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await failure({ url: `http://127.0.0.1:${port}/acme/site.git` });
    expect(error.message).toBe(`could not reach 127.0.0.1:${port} (connection refused)`);
  });

  describe('the outbound address policy', () => {
    const refuse = { private: 'refuse' } as const;
    const RULE = 'outbound requests to private addresses are refused (CAIRN_OUTBOUND_PRIVATE=allow allows them)';
    const port = () => new URL(server.url).port;

    test('where private addresses are refused, the git server on this machine is not cloned: the rule is the line, and the server saw no request', async () => {
      const before = await server.requests();
      const error = await failure({ outbound: refuse });
      expect(error.message).toBe(`127.0.0.1:${port()} is not cloned: 127.0.0.1 is a loopback address: ${RULE}`);
      expect(await server.requests()).toBe(before);
    });

    test.each([
      ['the metadata service', 'http://169.254.169.254/acme/site.git', '169.254.169.254 is a link-local address'],
      ['a private address', 'https://10.0.12.7/acme/site.git', '10.0.12.7 is a private address'],
      ['IPv6 loopback', 'http://[::1]:PORT/acme/site.git', '::1 is a loopback address'],
      [
        'IPv4-mapped loopback',
        'http://[::ffff:127.0.0.1]:PORT/acme/site.git',
        '::ffff:7f00:1 is an IPv4-mapped form of 127.0.0.1, a loopback address',
      ],
      [
        'IPv4-compatible loopback',
        'http://[::127.0.0.1]:PORT/acme/site.git',
        '::7f00:1 is an IPv4-compatible form of 127.0.0.1, a loopback address',
      ],
      [
        'IPv4-translated loopback',
        'http://[::ffff:0:127.0.0.1]:PORT/acme/site.git',
        '::ffff:0:7f00:1 is an IPv4-translated form of 127.0.0.1, a loopback address',
      ],
      [
        'local-use NAT64 loopback',
        'http://[64:ff9b:1::7f00:1]:PORT/acme/site.git',
        '64:ff9b:1::7f00:1 is a local-use NAT64 form of 127.0.0.1, a loopback address',
      ],
      ['6to4 loopback', 'http://[2002:7f00:1::]:PORT/acme/site.git', '2002:7f00:1:: is a 6to4 form of 127.0.0.1, a loopback address'],
      ['a numeric form of loopback', 'http://2130706433:PORT/acme/site.git', '127.0.0.1 is a loopback address'],
      ['localhost', 'http://localhost:PORT/acme/site.git', 'localhost names this machine, a loopback address'],
    ])('%s is refused before any request', async (_, raw, what) => {
      const before = await server.requests();
      const error = await failure({ url: raw.replace('PORT', port()), outbound: refuse });
      expect(error.message).toMatch(/^\S+ is not cloned: /);
      expect(error.message.endsWith(`${what}: ${RULE}`)).toBe(true);
      expect(await server.requests()).toBe(before);
    });

    test('a name is resolved once and refused when any address it resolves to is private', async () => {
      let asked = 0;
      const resolver: Resolver = async () => {
        asked++;
        return ['93.184.216.34', '127.0.0.1'];
      };
      const error = await failure({ url: `http://git.cairn.test:${port()}/acme/site.git`, outbound: refuse, resolver });
      expect(error.message).toBe(
        `git.cairn.test:${port()} is not cloned: git.cairn.test resolves to 127.0.0.1, a loopback address: ${RULE}`,
      );
      expect(asked).toBe(1);
    });

    test('every request of a clone, deepening included, goes to the address checked once, not to what the name would resolve to', async () => {
      // git.cairn.test resolves nowhere (.test is reserved): only the pinned address can have been connected to.
      let asked = 0;
      const resolver: Resolver = async () => {
        asked++;
        return asked === 1 ? ['127.0.0.1'] : ['127.0.0.2'];
      };
      const pinned = `http://git.cairn.test:${port()}/acme/site.git`;
      const { result } = await clone({ url: pinned, commit: main[1], resolver });
      expect(result.commit).toBe(main[1]);
      expect(asked).toBe(1);
    });

    test('a cancel does not wait for a name server that never answers', async () => {
      const controller = new AbortController();
      const never: Resolver = () => new Promise(() => undefined);
      setTimeout(() => controller.abort(), 50);
      const error = await failure({ url: `http://git.cairn.test:${port()}/acme/site.git`, resolver: never, signal: controller.signal });
      expect(error.message).toBe('clone cancelled');
    });

    test('a redirect is not followed: where it leads was never checked', async () => {
      const redirecting = createServer((req, res) => res.writeHead(301, { location: `${server.url}${req.url}` }).end());
      await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
      const at = `127.0.0.1:${(redirecting.address() as AddressInfo).port}`;
      try {
        const before = await server.requests();
        const error = await failure({ url: `http://${at}/acme/site.git` });
        expect(error.message).toBe(
          `${at} answered HTTP 301, a redirect: Cairn does not follow redirects; set the repository URL the host redirects to`,
        );
        expect(await server.requests()).toBe(before);
      } finally {
        await new Promise<void>((resolve) => redirecting.close(() => resolve()));
      }
    });
  });

  test('a repository that asks for credentials is refused without prompting', async () => {
    const error = await failure({ url: server.repoUrl('acme/private-site') });
    expect(error.message).toBe(
      "the repository asks for credentials; set the site's repository access token (setRepositoryToken) to clone a private repository",
    );
  });

  describe('a repository that takes HTTP basic credentials', () => {
    const repo = 'acme/locked';
    const TOKEN = 'ghp_cloneTestToken0123456789';
    let head: string;
    beforeAll(async () => {
      head = await server.commit(repo, { 'index.html': 'locked' }, 'locked');
      await server.requireCredentials(repo, 'x-access-token', TOKEN);
    });

    test('clones with the right token, sent as basic credentials only after the host asks', async () => {
      const { result, dir } = await clone({ url: server.repoUrl(repo), credentials: { username: 'x-access-token', password: TOKEN } });
      expect(result.commit).toBe(head);
      expect(await readFile(join(dir, 'index.html'), 'utf8')).toBe('locked');
      // The token is in no file of the checkout (its .git/config holds the bare URL).
      const files = await readdir(dir, { recursive: true, withFileTypes: true });
      for (const f of files.filter((e) => e.isFile()))
        expect(await readFile(join(f.parentPath, f.name), 'utf8').catch(() => '')).not.toContain(TOKEN);
    });

    test('a wrong token fails with "authentication failed", offered once, and the message never holds the token', async () => {
      const before = await server.requests();
      const wrong = `${TOKEN}-wrong`;
      const error = await failure({ url: server.repoUrl(repo), credentials: { username: 'x-access-token', password: wrong } });
      expect(error.message).toBe(
        `authentication failed: ${new URL(server.url).host} refused the site's repository access token (set a valid one with setRepositoryToken)`,
      );
      expect(error.message).not.toContain(wrong);
      expect((await server.requests()) - before).toBe(2); // asked, answered once with the token, refused: no retry loop
      // Without a token the same repository asks for one.
      expect((await failure({ url: server.repoUrl(repo) })).message).toMatch(/^the repository asks for credentials/);
    });

    test('with mirrors, a repository cloned with a token gets a mirror of its own scope, not the unscoped one', async () => {
      const mirrors = { dir: await mkdtemp(join(work, 'mirrors-private-')), keep: 8 };
      await clone({
        url: server.repoUrl(repo),
        mirrors,
        credentials: { username: 'x-access-token', password: TOKEN },
        mirrorScope: 'site:a',
      });
      expect(await readdir(mirrors.dir)).toHaveLength(1);
      await clone({
        url: server.repoUrl(repo),
        mirrors,
        credentials: { username: 'x-access-token', password: TOKEN },
        mirrorScope: 'site:b',
      });
      expect(await readdir(mirrors.dir)).toHaveLength(2);
      await failure({ url: server.repoUrl(repo), mirrors });
      expect(await readdir(mirrors.dir)).toHaveLength(3);
    });
  });

  test('URLs that are not http(s) are refused before any request', async () => {
    const before = await server.requests();
    expect((await failure({ url: 'file:///srv/git/acme/site.git' })).message).toBe(
      'Cairn clones over https:// (or http://) only, not file:// ("file:///srv/git/acme/site.git")',
    );
    expect((await failure({ url: 'ssh://git@example.com/acme/site.git' })).message).toBe(
      'Cairn clones over https:// (or http://) only, not ssh:// ("ssh://git@example.com/acme/site.git")',
    );
    expect((await failure({ url: 'git@github.com:acme/site.git' })).message).toBe(
      '"git@github.com:acme/site.git" is an SSH address; Cairn clones over https:// only (use the repository\'s HTTPS clone URL)',
    );
    expect(await server.requests()).toBe(before);
  });

  test('a clone that would download more than its cap fails and says so', async () => {
    const big = server.repoUrl('acme/big');
    await server.commit('acme/big', { 'video.bin': randomBytes(256 * 1024) }, 'Add a video');
    const error = await failure({ url: big, maxBytes: 64 * 1024 });
    expect(error.message).toBe(`${big} is larger than 64.0 KB, the most Cairn downloads for one clone`);
    await expect(clone({ url: big, maxBytes: 1024 * 1024 })).resolves.toMatchObject({ result: { message: 'Add a video' } });
  });

  test('a repository with submodules is cloned, with a note that they are not fetched', async () => {
    const withModules = server.repoUrl('acme/themed');
    await server.commit(
      'acme/themed',
      { '.gitmodules': '[submodule "theme"]\n\tpath = theme\n\turl = https://example.com/theme.git\n', 'index.html': 'hi' },
      'Add theme',
    );
    const { lines } = await clone({ url: withModules });
    expect(lines).toContain('Note: this repository has submodules (.gitmodules); Cairn does not fetch them, so their folders are empty');
    const { lines: plain } = await clone();
    expect(plain.filter((line) => line.includes('submodules'))).toEqual([]);
  });

  describe('cancelling', () => {
    test('an aborted signal stops the clone before any request', async () => {
      const controller = new AbortController();
      controller.abort();
      const before = await server.requests();
      expect((await failure({ signal: controller.signal })).message).toBe('clone cancelled');
      expect(await server.requests()).toBe(before);
    });

    test('aborting stops a request the server has not answered', async () => {
      // A host that accepts the request and never answers: only the signal can end the clone.
      const arrived: IncomingMessage[] = [];
      const controller = new AbortController();
      const silent = createServer((req) => {
        arrived.push(req);
        controller.abort();
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = silent.address() as AddressInfo;
        const error = await failure({ url: `http://127.0.0.1:${port}/acme/site.git`, signal: controller.signal });
        expect(error.message).toBe('clone cancelled');
        expect(arrived).toHaveLength(1);
      } finally {
        silent.closeAllConnections();
        await new Promise<void>((resolve) => silent.close(() => resolve()));
      }
    });

    test('aborting while deepening stops before the next fetch', async () => {
      const controller = new AbortController();
      // Asked as the abort happens (the log callback cannot wait), answered by the server before a next fetch could reach it.
      let requestsAtAbort: Promise<number> | undefined;
      const error = await failure({
        commit: main[0],
        signal: controller.signal,
        log: (line) => {
          if (line.includes('fetching') && !controller.signal.aborted) {
            requestsAtAbort = server.requests();
            controller.abort();
          }
        },
      });
      expect(error.message).toBe('clone cancelled');
      expect(await server.requests()).toBe(await requestsAtAbort);
    });
  });

  describe('kept repositories (mirrors)', () => {
    let mirrors: { dir: string; keep: number };
    beforeEach(async () => {
      mirrors = { dir: await mkdtemp(join(work, 'mirrors-')), keep: 8 };
    });

    /** A repository of its own for each test: `pages` files of 2 KB each, plus index.html. */
    async function newRepo(pages = 50): Promise<{ repo: string; url: string; head: string }> {
      const repo = `acme/mirrored-${++repoCount}`;
      const files: Record<string, Buffer | string> = { 'index.html': 'v1' };
      for (let i = 0; i < pages; i++) files[`pages/p${i}.html`] = randomBytes(2048);
      const head = await server.commit(repo, files, 'First');
      return { repo, url: server.repoUrl(repo), head };
    }

    const fetched = (lines: string[]) => {
      const m = /^Fetched (\d+(?:\.\d)?) (B|KB|MB)/.exec(lines.find((l) => l.startsWith('Fetched')) ?? '');
      if (!m) throw new Error(`no "Fetched" line in ${JSON.stringify(lines)}`);
      return Number(m[1]) * { B: 1, KB: 1024, MB: 1024 * 1024 }[m[2] as 'B' | 'KB' | 'MB'];
    };

    test('a second deploy of the same tree fetches almost nothing and links the files it kept', async () => {
      const { url: repoUrl, head } = await newRepo();
      const first = await clone({ url: repoUrl, mirrors });
      const second = await clone({ url: repoUrl, mirrors });
      const { known: _1, ...firstResult } = first.result;
      const { known: _2, ...secondResult } = second.result;
      expect(secondResult).toEqual(firstResult);
      expect(second.result.commit).toBe(head);
      expect(second.lines).toContain('Same files as the last deploy of this branch: 51 kept from it');
      expect(fetched(first.lines)).toBeGreaterThan(50 * 2048);
      expect(fetched(second.lines)).toBeLessThan(4096);
      expect(await files(second.dir)).toEqual(['index.html', 'pages']);
      expect((await readdir(join(second.dir, 'pages'))).length).toBe(50);
      // The checkout is a repository at the commit, as a clone's is.
      expect(await git.resolveRef({ fs, dir: second.dir, ref: 'HEAD' })).toBe(head);
      expect(await history(second.dir)).toEqual([head]);
      // Both checkouts are the kept snapshot's files, not copies of them.
      const ino = async (dir: string, path: string) => (await fs.promises.lstat(join(dir, path))).ino;
      expect(await ino(second.dir, 'pages/p7.html')).toBe(await ino(first.dir, 'pages/p7.html'));
      expect((await fs.promises.lstat(join(second.dir, 'index.html'))).nlink).toBeGreaterThanOrEqual(3);
    });

    test.each([
      ['bubblewrap, through an overlay', { sandbox: 'bwrap', hide: [] }],
      ['bubblewrap without an overlay', { sandbox: 'bwrap', hide: [], overlay: false }],
      ['no sandbox', { sandbox: 'none', hide: [] }],
    ] as Array<[string, BwrapRunnerOptions]>)(
      'what a build (%s) changes in its checkout never reaches the next deploy',
      async (_, options) => {
        const { url: repoUrl } = await newRepo(3);
        const first = await clone({ url: repoUrl, mirrors });
        const p0 = await readFile(join(first.dir, 'pages', 'p0.html'));
        // Written in place, appended to, made anew, deleted: as builds do.
        const command =
          'echo "built over" > index.html && echo more >> pages/p0.html && echo output > dist.js && rm pages/p1.html && rm -r .git';
        let output = '';
        const built = await new BwrapRunner(options).run({
          deployId: 'd',
          checkout: first.dir,
          directory: '',
          command,
          env: {},
          timeoutMs: 30_000,
          signal: new AbortController().signal,
          onOutput: (t) => (output += t),
        });
        expect([built.outcome, output]).toEqual(['succeeded', '']);
        expect(await readFile(join(first.dir, 'index.html'), 'utf8')).toBe('built over\n');
        expect((await readdir(join(first.dir, 'pages'))).sort()).toEqual(['p0.html', 'p2.html']);
        const second = await clone({ url: repoUrl, mirrors });
        expect(second.lines).toContain('Same files as the last deploy of this branch: 4 kept from it');
        expect(await readFile(join(second.dir, 'index.html'), 'utf8')).toBe('v1');
        expect(await files(second.dir)).toEqual(['index.html', 'pages']);
        expect((await readdir(join(second.dir, 'pages'))).sort()).toEqual(['p0.html', 'p1.html', 'p2.html']);
        expect(await readFile(join(second.dir, 'pages', 'p0.html'))).toEqual(p0);
        expect(await history(second.dir)).toEqual([second.result.commit]);
      },
    );

    test('a new commit writes only what changed and keeps the rest; deleted files are gone', async () => {
      const { repo, url: repoUrl } = await newRepo();
      const before = await clone({ url: repoUrl, mirrors });
      const next = await server.commit(repo, { 'index.html': 'v2', 'pages/p0.html': null, 'about.html': 'about' }, 'Second');
      const { result, dir, lines } = await clone({ url: repoUrl, mirrors });
      expect(result.commit).toBe(next);
      expect(lines).toContain('49 files unchanged since the last deploy of this branch, 2 written');
      expect(await readFile(join(dir, 'index.html'), 'utf8')).toBe('v2');
      expect(await readFile(join(dir, 'about.html'), 'utf8')).toBe('about');
      expect((await readdir(join(dir, 'pages'))).sort()).not.toContain('p0.html');
      expect((await readdir(join(dir, 'pages'))).length).toBe(49);
      expect(await git.resolveRef({ fs, dir, ref: 'HEAD' })).toBe(next);
      // Only what changed was written: an unchanged file is still the one the last deploy had; the changed one is new.
      const ino = async (at: string, path: string) => (await fs.promises.lstat(join(at, path))).ino;
      expect(await ino(dir, 'pages/p9.html')).toBe(await ino(before.dir, 'pages/p9.html'));
      expect(await ino(dir, 'index.html')).not.toBe(await ino(before.dir, 'index.html'));
      expect(await readFile(join(before.dir, 'index.html'), 'utf8')).toBe('v1'); // the last deploy's checkout keeps its own
    });

    test('a snapshot without its manifest (a deploy cut short while writing it) is written whole again', async () => {
      const { url: repoUrl } = await newRepo(3);
      await clone({ url: repoUrl, mirrors });
      const [mirror] = await readdir(mirrors.dir);
      await rm(join(mirrors.dir, mirror!, 'tree.json'));
      await writeFile(join(mirrors.dir, mirror!, 'tree', 'half-written.html'), 'left over');
      const again = await clone({ url: repoUrl, mirrors });
      expect(again.lines.some((l) => l.startsWith('Same files'))).toBe(false);
      expect(await files(again.dir)).toEqual(['index.html', 'pages']);
      expect((await readdir(join(again.dir, 'pages'))).length).toBe(3);
    });

    test('an older commit is found by deepening the kept repository, and later heads still come right', async () => {
      const { repo, url: repoUrl, head: first } = await newRepo(2);
      const second = await server.commit(repo, { 'index.html': 'v2' }, 'Second');
      const old = await clone({ url: repoUrl, commit: first, mirrors });
      expect(old.result.commit).toBe(first);
      expect(await readFile(join(old.dir, 'index.html'), 'utf8')).toBe('v1');
      const latest = await clone({ url: repoUrl, mirrors });
      expect(latest.result.commit).toBe(second);
      expect(await readFile(join(latest.dir, 'index.html'), 'utf8')).toBe('v2');
    });

    test('executables, symlinks and nested folders come out as git has them, with or without a mirror', async () => {
      const repo = `acme/modes-${++repoCount}`;
      await server.commit(repo, { 'build.sh': '#!/bin/sh\necho built\n', 'docs/guide/intro.md': '# Intro' }, 'Files');
      await server.shell(
        repo,
        'chmod +x build.sh && ln -s docs/guide link && git add -A && git commit -q -m "Modes" && git push -q origin main',
      );
      for (const options of [{}, { mirrors }, { mirrors }]) {
        const { dir } = await clone({ url: server.repoUrl(repo), ...options });
        expect((await fs.promises.stat(join(dir, 'build.sh'))).mode & 0o777).toBe(0o755);
        expect((await fs.promises.stat(join(dir, 'docs/guide/intro.md'))).mode & 0o111).toBe(0);
        expect(await fs.promises.readlink(join(dir, 'link'))).toBe('docs/guide');
        expect(await readFile(join(dir, 'link', 'intro.md'), 'utf8')).toBe('# Intro');
      }
    });

    test.each(['..', '.git', '.GIT'])(
      'a tree holding "%s" is refused with one line, and nothing is written outside the checkout',
      async (name) => {
        const repo = `acme/hostile-${++repoCount}`;
        await server.commit(repo, { 'index.html': 'hi' }, 'Start');
        await server.shell(
          repo,
          `b=$(printf 'pwned' | git hash-object -w --stdin) && t=$(printf '100644 blob %s\\t${name}\\n' "$b" | git mktree) && c=$(git commit-tree "$t" -m Hostile) && git push -q -f origin "$c:refs/heads/main"`,
        );
        for (const options of [{}, { mirrors }]) {
          const error = await failure({ url: server.repoUrl(repo), ...options });
          expect(error.message).toBe(`the commit holds a path no checkout may have: "${name}"`);
        }
        expect(await readdir(work)).not.toContain('..');
        // The branch put right, the kept repository deploys it whole.
        await server.shell(repo, 'git push -q -f origin main:main');
        const { dir } = await clone({ url: server.repoUrl(repo), mirrors });
        expect(await files(dir)).toEqual(['index.html']);
        expect(await readFile(join(dir, 'index.html'), 'utf8')).toBe('hi');
      },
    );

    test('a kept repository that is damaged is fetched anew, and says so', async () => {
      const { url: repoUrl, head } = await newRepo(2);
      await clone({ url: repoUrl, mirrors });
      await mirrorsIdle();
      const [mirror] = await readdir(mirrors.dir);
      // Its manifest still says the tree is kept, but the files are gone (a disk cleaned by hand, say):
      // whether a fetch touches the damage depends on what the server sends, a checkout of the same tree always does.
      await rm(join(mirrors.dir, mirror!, 'tree'), { recursive: true });
      const packs = join(mirrors.dir, mirror!, 'git', 'objects', 'pack');
      for (const name of await readdir(packs)) await writeFile(join(packs, name), 'garbage');
      const { result, dir, lines } = await clone({ url: repoUrl, mirrors });
      expect(result.commit).toBe(head);
      expect(lines).toContain('The kept copy of this repository could not be used; fetching it anew');
      expect(await readFile(join(dir, 'index.html'), 'utf8')).toBe('v1');
      expect((await readdir(join(dir, 'pages'))).length).toBe(2);
    });

    test('deploys of one repository at once each get their own whole checkout', async () => {
      const { url: repoUrl, head } = await newRepo(20);
      const results = await Promise.all([1, 2, 3].map(() => clone({ url: repoUrl, mirrors })));
      for (const { result, dir } of results) {
        expect(result.commit).toBe(head);
        expect((await readdir(join(dir, 'pages'))).length).toBe(20);
      }
    });

    test('only the most recently used repositories are kept', async () => {
      const kept = { ...mirrors, keep: 2 };
      const repos = [await newRepo(1), await newRepo(1), await newRepo(1)];
      for (const { url: repoUrl } of repos) await clone({ url: repoUrl, mirrors: kept });
      expect((await readdir(kept.dir)).length).toBe(2);
      // The oldest went: using it again fetches it whole.
      const again = await clone({ url: repos[0]!.url, mirrors: kept });
      expect(again.lines.some((l) => l.startsWith('Same files'))).toBe(false);
      const newest = await clone({ url: repos[2]!.url, mirrors: kept });
      expect(newest.lines.some((l) => l.startsWith('Same files'))).toBe(true);
    });
  });
});

test.each([
  ['cp', copyTree],
  ['Node alone', copyTreeInNode],
  ['cp, linking', linkTree],
  ['Node alone, linking', linkTreeInNode],
])('a tree is copied (or linked) as it is with %s: nested files, modes, symlinks never followed', async (_, copy) => {
  const from = await mkdtemp(join(work, 'copy-from-'));
  await fs.promises.mkdir(join(from, 'a', 'b'), { recursive: true });
  await writeFile(join(from, 'a', 'b', 'deep.txt'), 'deep');
  await writeFile(join(from, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
  await fs.promises.symlink('/etc/passwd', join(from, 'outside'));
  const to = join(work, `copy-to-${++runs}`);
  expect(await copy(from, to, new AbortController().signal)).toBe(3);
  expect(await readFile(join(to, 'a', 'b', 'deep.txt'), 'utf8')).toBe('deep');
  expect((await fs.promises.stat(join(to, 'run.sh'))).mode & 0o777).toBe(0o755);
  expect(await fs.promises.readlink(join(to, 'outside'))).toBe('/etc/passwd');
  expect((await fs.promises.lstat(join(to, 'outside'))).isSymbolicLink()).toBe(true);
  const linked = copy === linkTree || copy === linkTreeInNode;
  expect((await fs.promises.lstat(join(to, 'run.sh'))).ino === (await fs.promises.lstat(join(from, 'run.sh'))).ino).toBe(linked);
});

describe("git's command line, and only it", () => {
  const repo = 'acme/locked-cli';
  const TOKEN = 'glpat-cliTestToken9876543210';
  beforeAll(async () => {
    await server.commit(repo, { 'index.html': 'locked' }, 'locked');
    await server.requireCredentials(repo, 'oauth2', TOKEN);
    tool = undefined;
  });

  test('the token reaches git in its environment, never as an argument, and git asks for it only after the 401', async () => {
    // git through a wrapper that writes down every argument it is given.
    const wrapper = join(work, 'git-wrapper.sh');
    await writeFile(wrapper, '#!/bin/sh\nprintf "%s\\n" "$@" >> "$0.args"\nexec git "$@"\n', { mode: 0o755 });
    const before = (await server.authorizations()).length;
    const { result, dir } = await clone({
      url: server.repoUrl(repo),
      git: wrapper,
      mirrors: { dir: await mkdtemp(join(work, 'mirrors-cli-')), keep: 4 },
      credentials: { username: 'oauth2', password: TOKEN },
    });
    expect(await readFile(join(dir, 'index.html'), 'utf8')).toBe('locked');
    expect(result.message).toBe('locked');
    const args = await readFile(`${wrapper}.args`, 'utf8');
    expect(args).toContain('fetch');
    expect(args).not.toContain(TOKEN);
    const sent = (await server.authorizations()).slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((a) => a.authorization === `Basic ${Buffer.from(`oauth2:${TOKEN}`).toString('base64')}`)).toBe(true);
    for (const f of (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile())) {
      expect(await readFile(join(f.parentPath, f.name), 'utf8').catch(() => '')).not.toContain(TOKEN);
    }
  });

  test('a branch deployed again unchanged is not fetched: its head is asked for in this process, and no git command runs', async () => {
    const repo = `acme/unchanged-${++repoCount}`;
    await server.commit(repo, { 'index.html': 'same' }, 'Same');
    const wrapper = join(work, `git-count-${runs}.sh`);
    await writeFile(wrapper, '#!/bin/sh\necho "$*" >> "$0.args"\nexec git "$@"\n', { mode: 0o755 });
    const mirrors = { dir: await mkdtemp(join(work, 'mirrors-same-')), keep: 4 };
    await clone({ url: server.repoUrl(repo), git: wrapper, mirrors });
    const commandsBefore = (await readFile(`${wrapper}.args`, 'utf8')).split('\n').filter(Boolean).length;
    const requestsBefore = await server.requests();
    const again = await clone({ url: server.repoUrl(repo), git: wrapper, mirrors });
    expect(again.lines).toContain('Same files as the last deploy of this branch: 1 kept from it');
    expect(await readFile(join(again.dir, 'index.html'), 'utf8')).toBe('same');
    expect((await readFile(`${wrapper}.args`, 'utf8')).split('\n').filter(Boolean).slice(commandsBefore)).toEqual([
      expect.stringMatching(/ log -1 /),
    ]);
    expect((await server.requests()) - requestsBefore).toBeLessThanOrEqual(2);
    // A new head is fetched.
    const next = await server.commit(repo, { 'index.html': 'changed' }, 'Changed');
    const third = await clone({ url: server.repoUrl(repo), git: wrapper, mirrors });
    expect(third.result.commit).toBe(next);
    expect(await readFile(join(third.dir, 'index.html'), 'utf8')).toBe('changed');
  });

  test("git configuration of the service's environment changes nothing (here: a URL rewritten to a dead port)", async () => {
    const set = { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: `url.http://127.0.0.1:1/.insteadOf`, GIT_CONFIG_VALUE_0: `${server.url}/` };
    Object.assign(process.env, set);
    try {
      const { result } = await clone();
      expect(result.commit).toBe(main[5]);
    } finally {
      for (const k of Object.keys(set)) delete process.env[k];
    }
  });

  test("a repository's .gitattributes does not change the bytes written: every file is its blob", async () => {
    const attributed = `acme/attributes-${++runs}`;
    await server.commit(
      attributed,
      { '.gitattributes': '* text eol=crlf\n*.txt ident\n', 'page.html': 'line one\nline two\n', 'id.txt': '$Id$\n' },
      'Attributes',
    );
    for (const mirrors of [undefined, { dir: await mkdtemp(join(work, 'mirrors-attr-')), keep: 4 }]) {
      const { dir } = await clone({ url: server.repoUrl(attributed), ...(mirrors ? { mirrors } : {}) });
      expect(await readFile(join(dir, 'page.html'), 'utf8')).toBe('line one\nline two\n');
      expect(await readFile(join(dir, 'id.txt'), 'utf8')).toBe('$Id$\n');
      // The build's own git sees the repository's attributes.
      expect(await readdir(join(dir, '.git', 'info')).catch(() => [])).not.toContain('attributes');
    }
  });
});
