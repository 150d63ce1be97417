/**
 * Commit statuses end to end on a local service: real deploys from real git
 * servers that require the site's token, and a fake GitHub API and GitLab
 * API (test/support/git-host-api.ts) that CAIRN_GIT_HOST_APIS names for
 * those servers' hosts, recording every request. What is checked: the
 * states posted in order with the right commit, context and address; a
 * failed build's reason; a 403 said once on the deploy's log and never
 * retried; a 500 retried; a site without a token posting nothing; and the
 * token in the Authorization / PRIVATE-TOKEN header and nowhere else (the
 * rest of every request, the deploy logs and records, the outbox's records,
 * the service's own log lines). Retries use a 1 s back-off base.
 *
 * Local only: the git servers and the fake APIs listen on this machine's
 * loopback (AWS refuses such addresses: test/aws/commit-status.test.ts).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { waitFor } from '../support/wait.js';
import { startGitHostApi, type GitHostApi, type StatusRequest } from '../support/git-host-api.js';
import { deployLogKey } from '../../functions/core/ports/log-store.js';
import { siteAddresses } from '../../functions/core/hosting/notifications.js';
import { commitStatusChannel } from '../../functions/core/hosting/commit-status.js';
import { triggerPreview } from '../../functions/core/hosting/deploys.js';

let service: TestService;
let github: GitServer;
let gitlab: GitServer;
let api: GitHostApi;
let a: AccountFixture;
let client: ReturnType<typeof graphqlClient>;

const TOKEN = `ghp_${'S7t'.repeat(12)}${process.pid}`;
/** The service's own log lines (stdout and stderr) while this suite runs. */
const serviceOutput: string[] = [];
const writes = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };

beforeAll(async () => {
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => (
    serviceOutput.push(String(chunk)),
    writes.out(chunk as string, ...(rest as []))
  )) as typeof process.stdout.write;
  process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => (
    serviceOutput.push(String(chunk)),
    writes.err(chunk as string, ...(rest as []))
  )) as typeof process.stderr.write;
  [github, gitlab, api] = await Promise.all([startGitServer(), startGitServer(), startGitHostApi()]);
  const apis = `${new URL(github.url).host}=github@${api.githubUrl}, ${new URL(gitlab.url).host}=gitlab@${api.gitlabUrl}`;
  service = await startTestService({
    CAIRN_GC_INTERVAL: '0',
    CAIRN_PREVIEW: 'off',
    CAIRN_NOTIFICATION_RETRY_BASE: '1',
    CAIRN_LOG_LEVEL: 'debug',
    CAIRN_GIT_HOST_APIS: apis,
  });
  a = await newAccount(service, 'statuses');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});
afterAll(async () => {
  process.stdout.write = writes.out;
  process.stderr.write = writes.err;
  await service?.close();
  await Promise.all([github?.close(), gitlab?.close(), api?.close()]);
});

const gql = async (query: string, variables: Record<string, unknown> = {}) => dataOf(await client.gql(a.apiKey, query, variables));

/** `get()` once `done` holds of it (polled; failing after `ms`). */
const poll = <T>(what: string, get: () => Promise<T> | T, done: (v: T) => boolean, ms = 30_000): Promise<T> =>
  waitFor(
    async () => {
      const value = await get();
      return done(value) ? { value } : undefined;
    },
    { timeoutMs: ms, intervalMs: 50, what },
  ).then((found) => found.value);

interface TestSite {
  id: string;
  slug: string;
  repo: string;
  commit: string;
}

let repos = 0;
/** Every site this suite made. */
const siteIds: string[] = [];
/** A site of a new repository on `git`, which requires the site's token when `token` is set (the user name the site's default). */
async function newSite(
  git: GitServer,
  options: { token?: boolean; build?: Record<string, unknown>; autoPublishing?: boolean } = {},
): Promise<TestSite> {
  const repo = `acme/status-${++repos}`;
  const commit = await git.commit(repo, { 'index.html': `<p>${repo}</p>` }, 'the commit');
  const input = {
    buildSettings: options.build ?? { buildCommand: 'sleep 1' },
    deploySettings: {
      autoPublishing: options.autoPublishing ?? true,
      source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } },
    },
  };
  const site = (await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', { input })).createSite;
  siteIds.push(site.id);
  if (options.token !== false) {
    const set = (
      await gql('mutation ($s: ID!, $t: String) { setRepositoryToken(siteId: $s, token: $t) { repositoryUsername } }', {
        s: site.id,
        t: TOKEN,
      })
    ).setRepositoryToken;
    await git.requireCredentials(repo, set.repositoryUsername, TOKEN);
  }
  return { ...site, repo, commit };
}

const trigger = async (siteId: string, commit?: string): Promise<string> =>
  (await gql('mutation ($s: ID!, $c: String) { triggerDeploy(siteId: $s, commit: $c) { id } }', { s: siteId, c: commit })).triggerDeploy.id;
const deployOf = async (siteId: string, deployId: string) =>
  (
    await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { id status published log repository { commit } } }', {
      s: siteId,
      d: deployId,
    })
  ).getDeployById;
const ended = (siteId: string, deployId: string) =>
  poll(
    'the deploy ending',
    () => deployOf(siteId, deployId),
    (d) => d.status !== 'IN_PROGRESS',
  );
/** The statuses posted for a commit, oldest first. */
const postedFor = (sha: string) => api.requests().filter((r) => r.path.endsWith(`/statuses/${sha}`));
const deliveries = (siteId: string, deployId: string) =>
  service.services.notificationDeliveries.listOfUrl(siteId, commitStatusChannel(deployId), 20);
const finalStatus = (sha: string, state: string) =>
  poll(
    `a ${state} status for ${sha}`,
    () => postedFor(sha),
    (r) => r.some((x) => x.body.state === state),
  );
const appPage = (siteId: string, deployId: string) => `${service.config.urls.baseUrl}/#/sites/${siteId}/deploys/${deployId}`;

/** Earlier states only before later ones: `order` lists them as a deploy goes. */
function inOrder(requests: StatusRequest[], order: string[]): boolean {
  const at = requests.map((r) => order.indexOf(r.body.state as string));
  return at.every((i, n) => i >= 0 && (n === 0 || i >= at[n - 1]!));
}

describe('GitHub', () => {
  test("a deploy posts pending, then success with the deploy's address, on its exact commit; publishing it later posts the site's", async () => {
    const site = await newSite(github, { autoPublishing: false });
    const deployId = await trigger(site.id, site.commit);
    await finalStatus(site.commit, 'success');
    const done = await ended(site.id, deployId);
    expect(done).toMatchObject({ status: 'DEPLOYED', published: false, repository: { commit: site.commit } });
    const posted = postedFor(site.commit);
    expect(inOrder(posted, ['pending', 'success'])).toBe(true);
    // The build sleeps 1 s: "building" is posted before the end is recorded.
    expect(posted.filter((r) => r.body.state === 'pending').map((r) => r.body.description)).toContain('Deploy building');
    for (const r of posted) {
      expect(r).toMatchObject({ api: 'github', method: 'POST', path: `/repos/acme/${site.repo.split('/')[1]}/statuses/${site.commit}` });
      expect(r.headers).toMatchObject({
        authorization: `Bearer ${TOKEN}`,
        accept: 'application/vnd.github+json',
        'content-type': 'application/json',
      });
      expect(r.headers['private-token']).toBeUndefined();
      expect(r.body.context).toBe('cairn/deploy');
    }
    const addresses = siteAddresses(service.services, site, deployId);
    expect(posted.at(-1)!.body).toEqual({
      state: 'success',
      target_url: addresses.deploy,
      description: 'Deploy ready',
      context: 'cairn/deploy',
    });
    expect(posted.filter((r) => r.body.state === 'pending').every((r) => r.body.target_url === appPage(site.id, deployId))).toBe(true);
    // Each recorded status was sent once, or dropped unsent when a newer one was recorded before its turn.
    for (const d of await deliveries(site.id, deployId)) {
      if (d.status === 'DELIVERED') expect(d).toMatchObject({ attempt: 1, statusCode: 201 });
      else expect(d).toMatchObject({ status: 'FAILED', statusCode: null, error: expect.stringMatching(/newer status/) });
    }
    expect(done.log).not.toMatch(/commit status/i);

    await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: deployId });
    const published = await poll(
      'the published status',
      () => postedFor(site.commit),
      (r) => r.at(-1)?.body.description === 'Deploy published',
    );
    expect(published.at(-1)!.body).toMatchObject({ state: 'success', target_url: addresses.site, context: 'cairn/deploy' });
  });

  test('a pull-request preview posts as cairn/deploy-preview, "Deploy preview ready" at its deploy address', async () => {
    const site = await newSite(github, { build: {} });
    const head = await github.commit(site.repo, { 'index.html': '<p>the change</p>' }, 'a change', 'feature');
    const siteRecord = (await service.services.sites.getById(site.id))!;
    const preview = await triggerPreview(service.services, siteRecord, {
      branch: 'feature',
      commit: head,
      pullRequest: { number: 7, title: 'A change', fork: false },
    });
    const posted = await finalStatus(head, 'success');
    expect(inOrder(posted, ['pending', 'success'])).toBe(true);
    expect(posted.every((r) => r.body.context === 'cairn/deploy-preview')).toBe(true);
    expect(posted.at(-1)!.body).toEqual({
      state: 'success',
      target_url: siteAddresses(service.services, site, preview.id).deploy,
      description: 'Deploy preview ready',
      context: 'cairn/deploy-preview',
    });
    expect((await ended(site.id, preview.id)).published).toBe(false);
    expect(postedFor(site.commit)).toEqual([]);
  });

  test("a failing build posts failure with the log's last line; a cancelled deploy posts error", async () => {
    const site = await newSite(github, { build: { buildCommand: 'echo nope; exit 3' } });
    const deployId = await trigger(site.id);
    const posted = await finalStatus(site.commit, 'failure');
    expect(inOrder(posted, ['pending', 'failure'])).toBe(true);
    expect(posted.at(-1)!.body).toEqual({
      state: 'failure',
      target_url: appPage(site.id, deployId),
      description: 'Failed: the build command failed (exit code 3)',
      context: 'cairn/deploy',
    });
    expect((await ended(site.id, deployId)).status).toBe('FAILED');

    const slow = await newSite(github, { build: { buildCommand: 'sleep 30' } });
    const slowId = await trigger(slow.id);
    await poll(
      'the building status',
      () => postedFor(slow.commit),
      (r) => r.some((x) => x.body.description === 'Deploy building'),
    );
    await gql('mutation ($s: ID!, $d: ID!) { cancelDeploy(siteId: $s, deployId: $d) { id } }', { s: slow.id, d: slowId });
    const cancelled = await finalStatus(slow.commit, 'error');
    expect(cancelled.at(-1)!.body).toEqual({
      state: 'error',
      target_url: appPage(slow.id, slowId),
      description: 'Cancelled: cancelled by request',
      context: 'cairn/deploy',
    });
  });

  test('a queued deploy superseded by a newer one posts error on its commit', async () => {
    const site = await newSite(github, { build: { buildCommand: 'sleep 3' } });
    const first = await trigger(site.id, site.commit);
    await poll(
      'the first deploy building',
      () => postedFor(site.commit),
      (r) => r.some((x) => x.body.description === 'Deploy building'),
    );
    const second = await github.commit(site.repo, { 'index.html': 'second' }, 'second');
    const secondId = await trigger(site.id, second);
    const third = await github.commit(site.repo, { 'index.html': 'third' }, 'third');
    const thirdId = await trigger(site.id, third);
    const posted = await finalStatus(second, 'error');
    expect(posted.map((r) => r.body.state)).toEqual(['pending', 'error'].slice(posted.length === 1 ? 1 : 0));
    expect(posted.at(-1)!.body).toEqual({
      state: 'error',
      target_url: appPage(site.id, secondId),
      description: `Cancelled: superseded by ${thirdId}`,
      context: 'cairn/deploy',
    });
    await finalStatus(third, 'success');
    expect((await ended(site.id, first)).status).toBe('DEPLOYED');
  });

  test("a 403 is said once on the deploy's log, and no status is tried again", async () => {
    const site = await newSite(github);
    api.answer((r) =>
      r.path.includes(`/${site.repo}/`)
        ? {
            status: 403,
            body: { message: 'Resource not accessible by personal access token', documentation_url: 'https://docs.github.com' },
          }
        : undefined,
    );
    try {
      const deployId = await trigger(site.id, site.commit);
      const done = await ended(site.id, deployId);
      expect(done.status).toBe('DEPLOYED');
      const line =
        /Commit status not set: GitHub answered 403 \(Resource not accessible by personal access token\); the token needs commit statuses: write \(a classic token: the repo:status scope\) on acme\/status-\d+$/;
      const log = await poll(
        'the line on the log',
        async () => (await deployOf(site.id, deployId)).log as string,
        (l) => /Commit status not set/.test(l),
      );
      // Past the retry delays (1 s, 2 s): nothing more is sent, nothing more is said.
      const sent = postedFor(site.commit).length;
      await new Promise((r) => setTimeout(r, 3500));
      expect(postedFor(site.commit)).toHaveLength(sent);
      expect(sent).toBeGreaterThanOrEqual(1);
      const lines = ((await deployOf(site.id, deployId)).log as string).trimEnd().split('\n');
      expect(lines.filter((l) => /Commit status not set/.test(l))).toHaveLength(1);
      expect(lines.at(-1)).toMatch(line);
      expect(log).toContain('Published: the site now serves this deploy');
      const recorded = await deliveries(site.id, deployId);
      expect(recorded.filter((d) => d.statusCode === 403)).toHaveLength(sent);
      // Each tried once (a 403), or dropped unsent for a newer one: none is due again.
      for (const d of recorded) expect(d).toMatchObject({ status: 'FAILED', attempt: 1, nextAttemptAt: null });
    } finally {
      api.answer(() => undefined);
    }
  });

  test('a 500 is tried again after the back-off, and the status is then set', async () => {
    const site = await newSite(github);
    let failed = false;
    api.answer((r) =>
      r.path.includes(site.commit) && r.body.state === 'success' && !failed
        ? ((failed = true), { status: 500, body: { message: 'Server Error' } })
        : undefined,
    );
    try {
      const deployId = await trigger(site.id);
      const success = await poll(
        'two success attempts',
        () => postedFor(site.commit).filter((r) => r.body.state === 'success'),
        (r) => r.length >= 2,
      );
      expect(success[1]!.at - success[0]!.at).toBeGreaterThanOrEqual(900);
      expect(success[1]!.raw).toBe(success[0]!.raw);
      const [last] = await poll(
        'the status delivered',
        () => deliveries(site.id, deployId),
        (d) => d[0]?.status === 'DELIVERED',
      );
      expect(last).toMatchObject({ status: 'DELIVERED', attempt: 2, statusCode: 201, error: null });
      expect((await deployOf(site.id, deployId)).log).not.toMatch(/Commit status not set/);
    } finally {
      api.answer(() => undefined);
    }
  });

  test('a site without a token posts nothing, and its log says why once', async () => {
    const site = await newSite(github, { token: false, build: {} });
    const deployId = await trigger(site.id, site.commit);
    const done = await ended(site.id, deployId);
    expect(done.status).toBe('DEPLOYED');
    const said = (done.log as string).split('\n').filter((l) => /commit status/i.test(l));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(
      new RegExp(`No commit status on ${new URL(github.url).host.replace(/\./g, '\\.')}: the site has no repository access token`),
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(postedFor(site.commit)).toEqual([]);
    expect(await deliveries(site.id, deployId)).toEqual([]);
  });
});

describe('GitLab', () => {
  test('a deploy posts pending, running, success with PRIVATE-TOKEN to the project by its path', async () => {
    const site = await newSite(gitlab);
    const deployId = await trigger(site.id, site.commit);
    const posted = await finalStatus(site.commit, 'success');
    expect(inOrder(posted, ['pending', 'running', 'success'])).toBe(true);
    expect(posted.map((r) => r.body.state)).toContain('running');
    for (const r of posted) {
      expect(r).toMatchObject({
        api: 'gitlab',
        method: 'POST',
        path: `/projects/${encodeURIComponent(site.repo)}/statuses/${site.commit}`,
      });
      expect(r.headers['private-token']).toBe(TOKEN);
      expect(r.headers.authorization).toBeUndefined();
      expect(r.body.name).toBe('cairn/deploy');
    }
    // Published: the site's own address.
    expect(posted.at(-1)!.body).toEqual({
      state: 'success',
      target_url: siteAddresses(service.services, site, deployId).site,
      description: 'Deploy published',
      name: 'cairn/deploy',
    });
  });
});

test('the token is in the Authorization or PRIVATE-TOKEN header and nowhere else', async () => {
  const requests = api.requests();
  expect(requests.length).toBeGreaterThan(10);
  for (const r of requests) {
    const { authorization, 'private-token': privateToken, ...others } = r.headers;
    expect([authorization, privateToken].filter((h) => h !== undefined).map((h) => String(h).replace(/^Bearer /, ''))).toEqual([TOKEN]);
    expect(JSON.stringify(others)).not.toContain(TOKEN);
    expect(r.raw).not.toContain(TOKEN);
    expect(r.path).not.toContain(TOKEN);
  }
  // Every item of every site in the deploys table: deploys and status deliveries, and each deploy's log.
  expect(siteIds.length).toBeGreaterThanOrEqual(7);
  let items = 0;
  let statusItems = 0;
  for (const id of siteIds) {
    const out = await service.services.db.doc.send(
      new QueryCommand({
        TableName: service.config.tables.deploys,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `SITE#${id}` },
      }),
    );
    for (const item of out.Items ?? []) {
      items++;
      if (String(item.sk).startsWith('NOTIFY#commit-status:')) statusItems++;
      expect(JSON.stringify(item)).not.toContain(TOKEN);
      if (String(item.sk).startsWith('DEPLOY#'))
        expect((await service.services.deployLogs.read(deployLogKey(id, item.id as string))) ?? '').not.toContain(TOKEN);
    }
  }
  expect(statusItems).toBeGreaterThan(5);
  expect(items).toBeGreaterThan(statusItems);
  expect(serviceOutput.join('').length).toBeGreaterThan(0);
  expect(serviceOutput.join('')).not.toContain(TOKEN);
});
