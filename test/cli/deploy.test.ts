/**
 * `cairn deploy` and `cairn deploys` against a local service building from
 * a real git server: --watch follows a deploy to its end and exits 0 when
 * DEPLOYED (printing an address that serves it), 3 when FAILED, 4 when
 * CANCELLED, 1 past --timeout; --commit builds that commit; the phases are
 * drawn as a progress display in a terminal.
 */
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { hostFetch } from '../support/http.js';
import { waitFor } from '../support/wait.js';
import { loginArgs, newCliUser, plain, type CliUser } from './cli-runner.js';

let service: TestService;
let git: GitServer;
let a: AccountFixture;
let u: CliUser;
let gql: ReturnType<typeof graphqlClient>;

beforeAll(async () => {
  [service, git] = await Promise.all([
    startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off', CAIRN_BUILD_TIMEOUT: '60' }),
    startGitServer(),
  ]);
  a = await newAccount(service, 'cli-deploy');
  gql = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
  u = await newCliUser();
  const login = await u.run(loginArgs(service, a.apiKey));
  if (login.code !== 0) throw new Error(login.stderr);
}, 120_000);
afterAll(async () => {
  await u?.cleanup();
  await service?.close();
  await git?.close();
});

let repos = 0;
async function gitSite(
  files: Record<string, string>,
  build: string[] = [],
): Promise<{ name: string; id: string; repo: string; commit: string }> {
  const repo = `acme/cli-${++repos}`;
  const commit = await git.commit(repo, files, 'first');
  const name = `cli-deploy-${repos}-${Date.now().toString(36)}`;
  const site = await u.json(['sites', 'create', name, '--repo', git.repoUrl(repo), ...build]);
  return { name, id: site.id, repo, commit };
}

/** What the gateway serves at a site address (the Host header picks the site). */
async function served(address: string, path = '/'): Promise<{ status: number; body: string }> {
  const url = new URL(address);
  const res = await hostFetch(`${service.endpoints.gateway}${path}`, { headers: { host: url.host } });
  return { status: res.status, body: await res.text() };
}

function oneErrorLine(stderr: string): string {
  const lines = stderr.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^cairn: /);
  return lines[0]!;
}

test('deploy --watch --json follows a deploy to DEPLOYED, exits 0, and gives addresses that serve it', async () => {
  const site = await gitSite({ 'public/index.html': '<h1>v1</h1>' }, ['--publish-dir', 'public']);
  const result = await u.run(['deploy', site.name, '--watch', '--interval', '200', '--json'], { binary: true });
  expect(result.code).toBe(0);
  expect(result.stderr).toBe('');
  const deploy = JSON.parse(result.stdout);
  expect(deploy).toMatchObject({
    status: 'DEPLOYED',
    published: true,
    repository: { commit: site.commit, branch: 'main' },
    site: { id: site.id, name: site.name },
  });
  expect(deploy.ipfsHash).toMatch(/^bafybei/);
  expect(deploy.url).toBe(`http://${deploy.id.toLowerCase()}--${site.name}.${service.config.sites.domain}/`);
  expect(deploy.siteUrl).toBe(`http://${site.name}.${service.config.sites.domain}/`);
  expect(deploy.log).toMatch(/Published/);
  expect(await served(deploy.url)).toEqual({ status: 200, body: '<h1>v1</h1>' });
  expect(await served(deploy.siteUrl)).toEqual({ status: 200, body: '<h1>v1</h1>' });
  // The API agrees.
  const api = dataOf(
    await gql.gql(a.apiKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status ipfsHash } }', {
      s: site.id,
      d: deploy.id,
    }),
  ).getDeployById;
  expect(api).toEqual({ status: 'DEPLOYED', ipfsHash: deploy.ipfsHash });
  // The publish gave the site its IPNS name, which the CLI shows with its /ipns/ address, and which serves the deploy.
  // (signed as the deploy is announced, just after it is DEPLOYED and published)
  const shownSite = await waitFor(
    async () => {
      const shown = await u.json(['sites', 'show', site.name]);
      return shown.ipnsName ? shown : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200, what: "the site's IPNS name" },
  );
  expect(shownSite.ipnsName).toMatch(/^k51[0-9a-z]+$/);
  expect(shownSite.ipnsUrl).toBe(`${service.endpoints.gateway}/ipns/${shownSite.ipnsName}/`);
  expect((await u.run(['sites', 'show', site.name])).stdout).toContain(`IPNS name:   ${shownSite.ipnsName} (${shownSite.ipnsUrl})`);
  expect((await u.run(['sites', 'list'])).stdout).toContain(shownSite.ipnsName);
  const byName = await fetch(shownSite.ipnsUrl);
  expect(await byName.text()).toBe('<h1>v1</h1>');

  // --commit builds that commit, not the branch head; people get the log and the address.
  await git.commit(site.repo, { 'public/index.html': '<h1>v2</h1>' }, 'second');
  const human = await u.run(['deploy', site.name, '--commit', site.commit, '--watch', '--interval', '200']);
  expect(human.code).toBe(0);
  expect(human.stdout).toMatch(/==> cloning/);
  expect(human.stdout).toMatch(/Checked out/);
  const address = /Deploy address: (\S+)/.exec(human.stdout)?.[1];
  expect(address).toBeDefined();
  expect(await served(address!)).toEqual({ status: 200, body: '<h1>v1</h1>' });

  const list = await u.json(['deploys', 'list', site.name]);
  expect(list).toHaveLength(2);
  expect(list[1].id).toBe(deploy.id); // newest first
  expect(
    list.every((d: { status: string; repository: { commit: string } }) => d.status === 'DEPLOYED' && d.repository.commit === site.commit),
  ).toBe(true);
  const shown = await u.run(['deploys', 'show', site.name, deploy.id, '--log']);
  expect(shown.code).toBe(0);
  expect(shown.stdout).toContain(`CID:       ${deploy.ipfsHash}`);
  expect(shown.stdout).toContain('Pinned');
});

test('a deploy that FAILS exits 3 with its reason as one line, after its log', async () => {
  const site = await gitSite({ 'index.html': 'x' }, ['--build-command', 'echo the build says hello; exit 7']);
  const result = await u.run(['deploy', site.name, '--watch', '--interval', '200']);
  expect(result.code).toBe(3);
  expect(oneErrorLine(result.stderr)).toMatch(/^cairn: deploy \S+ FAILED: Failed: the build command failed \(exit code 7\)$/);
  expect(result.stdout).toContain('the build says hello');
  expect(result.stdout).toMatch(/==> building/);
  // Scripts get the deploy too.
  const again = await u.run(['deploy', site.name, '--watch', '--interval', '200', '--json']);
  expect(again.code).toBe(3);
  expect(JSON.parse(again.stdout)).toMatchObject({ status: 'FAILED', published: false, ipfsHash: null });
});

test('without --watch it answers at once; --timeout stops watching (exit 1); a cancel ends the watch with exit 4', async () => {
  const site = await gitSite({ 'index.html': 'slow' }, ['--build-command', 'sleep 50']);
  const deployIds = async (): Promise<Array<{ id: string; status: string; log: string | null }>> =>
    dataOf(
      await gql.gql(a.apiKey, 'query ($s: ID!) { getDeploysBySite(siteId: $s, limit: 10) { deploys { id status log } } }', { s: site.id }),
    ).getDeploysBySite.deploys;
  const cancel = (id: string) =>
    gql.gql(a.apiKey, 'mutation ($s: ID!, $d: ID!) { cancelDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: id });

  const first = await u.json(['deploy', site.name]);
  expect(first).toMatchObject({ status: 'IN_PROGRESS', site: { id: site.id } });
  const timedOut = await u.run(['deploy', site.name, '--watch', '--timeout', '1', '--interval', '200']);
  expect(timedOut.code).toBe(1);
  expect(oneErrorLine(timedOut.stderr)).toMatch(/is still IN_PROGRESS after --timeout; it goes on/);
  const second = /Deploy (\S+) of/.exec(timedOut.stdout)![1]!;
  expect((await deployIds()).find((d) => d.id === second)?.status).toBe('IN_PROGRESS');

  // Follow a third one, and cancel it from elsewhere once it builds.
  const watcher = u.start(['deploy', site.name, '--watch', '--interval', '200', '--json']);
  const third = await waitFor(async () => (await deployIds()).find((d) => d.id !== first.id && d.id !== second), {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: 'the third deploy',
  });
  await Promise.all([cancel(first.id), cancel(second)]);
  await waitFor(async () => /Building with/.test((await deployIds()).find((d) => d.id === third.id)?.log ?? ''), {
    timeoutMs: 30_000,
    intervalMs: 200,
    what: 'the third build to start',
  });
  await cancel(third.id);
  const ended = await watcher.done;
  // Should it end otherwise, the deploy's own log says why.
  if (ended.code !== 4) {
    const record = (await deployIds()).find((d) => d.id === third.id);
    throw new Error(`the watch ended ${ended.code}, the deploy ${record?.status}; its log:\n${record?.log}\n${ended.stderr}`);
  }
  expect(oneErrorLine(ended.stderr)).toMatch(new RegExp(`^cairn: deploy ${third.id} was CANCELLED`));
  expect(JSON.parse(ended.stdout)).toMatchObject({ id: third.id, status: 'CANCELLED' });
});

test('in a terminal, --watch draws the phases as a progress display and ends with the address', async () => {
  const site = await gitSite({ 'index.html': '<p>tty</p>' });
  const { code, output } = await u.runInTerminal(['deploy', site.name, '--watch', '--interval', '200']);
  expect(code).toBe(0);
  const text = plain(output);
  expect(text).toContain('\u2588');
  expect(text).toMatch(/DEPLOYED \| +\d+s/);
  expect(text).not.toContain('==> '); // the phases are on the bar, not printed as lines
  const address = /Deploy address: (\S+)/.exec(text)?.[1];
  expect(await served(address!)).toEqual({ status: 200, body: '<p>tty</p>' });
});

test('deploys of a site that is not there, or of another team, are one-line errors', async () => {
  const missing = await u.run(['deploy', 'no-such-site-anywhere', '--watch']);
  expect(missing.code).toBe(1);
  expect(oneErrorLine(missing.stderr)).toMatch(/no site named "no-such-site-anywhere"/);
  const b = await newAccount(service, 'cli-other');
  const theirs = dataOf(
    await gql.gql(b.apiKey, 'mutation ($i: CreateSiteInput!) { createSite(input: $i) { id } }', {
      i: { deploySettings: { source: { ipfs: { cid: null } } } },
    }),
  ).createSite.id;
  const other = await u.run(['deploys', 'list', theirs]);
  expect(other.code).toBe(1);
  expect(oneErrorLine(other.stderr)).toMatch(new RegExp(`no site with id "${theirs}"`));
  const both = await u.run(['deploy', 'x', '--dir', '.', '--commit', 'abc']);
  expect(both.code).toBe(1);
  expect(oneErrorLine(both.stderr)).toMatch(/give one/);
});
