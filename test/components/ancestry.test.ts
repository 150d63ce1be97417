/**
 * The publish step's question "is this commit older than the published
 * one?" against a real git server (git-http-backend, offline): a line of
 * commits with a merged side branch, a force-push, a private repository.
 * Every case runs twice: with git's command line (this machine) and with
 * isomorphic-git alone (Lambda, which has no git binary). The answer's
 * shape is checked from a history built by hand too (judge), including the
 * shallow edges the fetch deepens past.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AncestryUnknown, compareCommits, judge, type History } from '../../functions/deploy-worker/steps/ancestry.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { variantsFor } from '../support/test-set.js';

let server: GitServer;
let work: string;
/** main's commits, oldest first (20 of them, so that an old one needs several rounds of deepening). */
const line: string[] = [];
/** A side branch's commit, branched from line[10] and merged into main after line[19] by `merge`. */
let side: string;
let merge: string;
let runs = 0;

beforeAll(async () => {
  server = await startGitServer();
  work = await mkdtemp(join(tmpdir(), 'cairn-ancestry-'));
  for (let i = 0; i < 20; i++) line.push(await server.commit('acme/line', { 'index.html': `v${i}` }, `v${i}`));
  side = await server.shell(
    'acme/line',
    `git checkout -q -b side ${line[10]} && echo side > side.txt && git add side.txt && git commit -q -m side && git rev-parse HEAD`,
  );
  merge = await server.shell(
    'acme/line',
    'git checkout -q main && git merge -q --no-ff -m merge side && git push -q origin main && git rev-parse HEAD',
  );
}, 60_000);

afterAll(async () => {
  await server?.close();
  await rm(work, { recursive: true, force: true });
});

const history = (entries: Array<[string, string[] | null]>, complete: boolean): History => ({ parents: new Map(entries), complete });

test('judge: the answers a history gives, and "more" wherever a shallow edge hides it', () => {
  // c <- b <- a (a the newest); b's parents are past the edge.
  const shallow = history(
    [
      ['a', ['b']],
      ['b', null],
    ],
    false,
  );
  expect(judge(shallow, 'a', 'b')).toBe('newer');
  expect(judge(shallow, 'b', 'a')).toBe('older');
  expect(judge(shallow, 'a', 'a')).toBe('same');
  // The published commit is not here yet and the history goes on: fetch more.
  expect(judge(shallow, 'a', 'z')).toBe('more');
  expect(judge(shallow, 'z', 'a')).toBe('more');
  // Whole, and the published commit is not in it: the branch was force-pushed away from it.
  const whole = history(
    [
      ['a', ['b']],
      ['b', ['c']],
      ['c', []],
    ],
    true,
  );
  expect(judge(whole, 'a', 'z')).toBe('off-branch');
  // Two tips of a merge: neither holds the other.
  const merged = history(
    [
      ['m', ['x', 'y']],
      ['x', ['r']],
      ['y', ['r']],
      ['r', []],
    ],
    true,
  );
  expect(judge(merged, 'x', 'y')).toBe('diverged');
  expect(judge(merged, 'y', 'm')).toBe('older');
  // Both pasts cut by the edge: not enough to say they diverged.
  expect(
    judge(
      history(
        [
          ['m', ['x', 'y']],
          ['x', null],
          ['y', null],
        ],
        false,
      ),
      'x',
      'y',
    ),
  ).toBe('more');
  // A long history is walked without recursion.
  const long: Array<[string, string[] | null]> = [];
  for (let i = 0; i < 200_000; i++) long.push([`c${i}`, i === 0 ? [] : [`c${i - 1}`]]);
  expect(judge(history(long, true), 'c0', 'c199999')).toBe('older');
});

describe.each(
  variantsFor([
    ["git's command line", undefined],
    ['isomorphic-git alone', false as const],
  ]),
)('compareCommits with %s', (_name, tool) => {
  const compare = (commit: string, published: string, extra: Partial<Parameters<typeof compareCommits>[0]> = {}) =>
    compareCommits({
      url: server.repoUrl('acme/line'),
      branch: 'main',
      commit,
      published,
      dir: join(work, `run-${++runs}`),
      signal: new AbortController().signal,
      git: tool,
      outbound: { private: 'allow' },
      ...extra,
    });

  test('an old commit is older than the head, the head newer than its parent, a commit the same as itself', async () => {
    expect(await compare(line[2]!, merge)).toBe('older');
    expect(await compare(line[18]!, line[19]!)).toBe('older');
    expect(await compare(merge, line[19]!)).toBe('newer');
    expect(await compare(merge, line[0]!)).toBe('newer');
    expect(await compare(line[5]!, line[5]!)).toBe('same');
  });

  test("a merged side branch's commit and main's commit before the merge are neither older nor newer", async () => {
    expect(await compare(side, line[19]!)).toBe('diverged');
    expect(await compare(side, merge)).toBe('older');
  });

  test('a published commit the branch no longer holds (force-pushed away) is off the branch', async () => {
    const repo = `acme/forced-${tool === false ? 'iso' : 'cli'}`;
    const old = await server.commit(repo, { 'index.html': 'old' }, 'old');
    const gone = await server.commit(repo, { 'index.html': 'gone' }, 'gone');
    const fresh = await server.shell(
      repo,
      'git checkout -q --orphan fresh && git commit -q --allow-empty -m fresh && git push -q -f origin fresh:main && git rev-parse HEAD',
    );
    expect(await compare(fresh, gone, { url: server.repoUrl(repo) })).toBe('off-branch');
    // Forced back to an older commit: the commit it left is off the branch too; the old one is the branch's own again.
    await server.shell(repo, `git push -q -f origin ${old}:main`);
    expect(await compare(old, gone, { url: server.repoUrl(repo) })).toBe('off-branch');
  });

  test('a private repository is read with the credentials given; a host that cannot be read leaves the question unanswered', async () => {
    const repo = `acme/closed-line-${tool === false ? 'iso' : 'cli'}`;
    const first = await server.commit(repo, { 'index.html': '1' }, '1');
    const second = await server.commit(repo, { 'index.html': '2' }, '2');
    await server.requireCredentials(repo, 'x-access-token', 'the-token');
    expect(
      await compare(first, second, { url: server.repoUrl(repo), credentials: { username: 'x-access-token', password: 'the-token' } }),
    ).toBe('older');
    const refused = compare(first, second, {
      url: server.repoUrl(repo),
      credentials: { username: 'x-access-token', password: 'wrong-token' },
    });
    await expect(refused).rejects.toBeInstanceOf(AncestryUnknown);
    await expect(refused).rejects.not.toThrow(/wrong-token/);
    await expect(compare(first, second, { url: server.repoUrl('acme/no-such-repo') })).rejects.toBeInstanceOf(AncestryUnknown);
  });

  test('the host passes the outbound address policy first: a private one, when those are refused, is not asked anything', async () => {
    const before = await server.requests();
    const refused = compare(line[0]!, merge, { outbound: { private: 'refuse' } });
    await expect(refused).rejects.toBeInstanceOf(AncestryUnknown);
    await expect(refused).rejects.toThrow(
      /127\.0\.0\.1 .*outbound requests to private addresses are refused \(CAIRN_OUTBOUND_PRIVATE=allow allows them\)/,
    );
    // A name that resolves to loopback is refused the same way, before any connection.
    const url = server.repoUrl('acme/line').replace('127.0.0.1', 'git.cairn.test');
    await expect(compare(line[0]!, merge, { url, outbound: { private: 'refuse' }, resolver: async () => ['127.0.0.1'] })).rejects.toThrow(
      /outbound requests to private addresses are refused/,
    );
    expect(await server.requests()).toBe(before);
    // Allowed, the name connects to the address the check was made for, whatever the system would resolve it to.
    expect(await compare(line[0]!, merge, { url, resolver: async () => ['127.0.0.1'] })).toBe('older');
  });

  test('a history larger than the cap is left unanswered', async () => {
    await expect(compare(line[0]!, merge, { maxBytes: 600 })).rejects.toThrow(/larger than|passed its byte cap|could not be fetched/);
  });
});
