/**
 * Deploys from git hosts, end to end on a local service: a real git server,
 * GitHub- and GitLab-style webhook deliveries to /hooks/git/<siteId>
 * (through the node:http door and the GraphQL Lambda handler), pull-request
 * previews, build hooks, and the deploys they start, as the API reports
 * them. Every wait is a poll with a deadline.
 *
 * Local only: the git server listens on this machine's loopback.
 */
import { createHmac } from 'node:crypto';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, importGraphqlLambda, newAccount, onlyError, type AccountFixture } from '../support/graphql.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { exporter } from 'ipfs-unixfs-exporter';

let service: TestService;
let git: GitServer;
let a: AccountFixture;
let client: ReturnType<typeof graphqlClient>;
let graphqlLambda: LambdaFn;
const savedEnv = { ...process.env };

beforeAll(async () => {
  [service, git] = await Promise.all([startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off' }), startGitServer()]);
  Object.assign(process.env, service.env);
  graphqlLambda = await importGraphqlLambda();
  a = await newAccount(service, 'hooks');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});
afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  await git?.close();
});

type Post = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array }) => Promise<Response>;
const DOORS: Array<{ name: string; post: () => Post }> = [
  { name: 'node:http door', post: () => (path, init) => fetch(`${service.config.urls.baseUrl}${path}`, { method: init.method ?? 'POST', headers: init.headers, body: init.body as BodyInit }) },
  { name: 'Lambda door', post: () => (path, init) => lambdaFetch(graphqlLambda)(`${service.config.urls.baseUrl}${path}`, { method: init.method ?? 'POST', headers: init.headers, body: init.body }) },
];

const DEPLOY = 'id status published preview pullRequest { number title url fork } log repository { commit branch owner name }';
const gql = async (query: string, variables: Record<string, unknown> = {}, key = a.apiKey) => client.gql(key, query, variables);

let repos = 0;
const newRepoName = () => `acme/hooked-${++repos}`;

async function gitSite(repo: string, deploy: Record<string, unknown> = {}): Promise<{ id: string; slug: string }> {
  const input = { buildSettings: { publishDirectoryPath: 'public' }, deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } }, ...deploy } };
  return dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', { input })).createSite;
}

async function webhookSecret(siteId: string): Promise<{ secret: string; url: string }> {
  return dataOf(await gql('mutation ($s: ID!) { createWebhookSecret(siteId: $s) { secret url } }', { s: siteId })).createWebhookSecret;
}

async function deploysOf(siteId: string): Promise<any[]> {
  return dataOf(await gql(`query ($s: ID!) { getDeploysBySite(siteId: $s, limit: 100) { deploys { ${DEPLOY} } } }`, { s: siteId })).getDeploysBySite.deploys;
}

async function waitFor(siteId: string, deployId: string, done = (d: any) => d.status !== 'IN_PROGRESS' && /Published|not published|Failed/i.test(d.log ?? ''), ms = 40_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const deploy = dataOf(await gql(`query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ${DEPLOY} } }`, { s: siteId, d: deployId })).getDeployById;
    if (done(deploy)) return deploy;
    if (Date.now() > deadline) throw new Error(`deploy ${deployId} did not get there in ${ms} ms: ${JSON.stringify(deploy).slice(0, 2000)} ${JSON.stringify(await service.services.deploys.get(siteId, deployId))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function fileOf(siteId: string, deployId: string, path: string): Promise<string> {
  const deploy = dataOf(await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ipfsHash } }', { s: siteId, d: deployId })).getDeployById;
  const entry = await exporter(`${deploy.ipfsHash}/${path}`, (await service.services.ipfs()).blockstore);
  if (entry.type !== 'file' && entry.type !== 'raw') throw new Error(`${path} is a ${entry.type}`);
  const parts: Uint8Array[] = [];
  for await (const chunk of entry.content()) parts.push(chunk as Uint8Array);
  return Buffer.concat(parts).toString('utf8');
}

const sign = (secret: string, body: string | Buffer) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
let deliveries = 0;
const newDelivery = () => `delivery-${process.pid}-${++deliveries}`;

function githubHeaders(secret: string | null, event: string, body: string | Buffer, delivery = newDelivery()): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-github-event': event,
    'x-github-delivery': delivery,
    ...(secret !== null ? { 'x-hub-signature-256': sign(secret, body) } : {}),
  };
}

const pushEvent = (repo: string, ref: string, after: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ ref, before: '0'.repeat(40), after, deleted: false, repository: { full_name: repo, clone_url: git.repoUrl(repo) }, ...extra });

function pullRequestEvent(repo: string, init: { action: string; number: number; head: string; sha: string; base?: string; headRepo?: string; title?: string }) {
  const headRepo = init.headRepo ?? repo;
  return JSON.stringify({
    action: init.action,
    number: init.number,
    pull_request: {
      number: init.number,
      title: init.title ?? `Change ${init.number}`,
      html_url: `https://git.example/${repo}/pull/${init.number}`,
      head: { ref: init.head, sha: init.sha, repo: { id: headRepo === repo ? 1 : 2, full_name: headRepo, clone_url: git.repoUrl(headRepo) } },
      base: { ref: init.base ?? 'main', repo: { id: 1, full_name: repo, clone_url: git.repoUrl(repo) } },
    },
  });
}

describe.each(DOORS)('GitHub-style events through the $name', (door) => {
  let post: Post;
  beforeAll(() => {
    post = door.post();
  });

  test('a signed push to the site\'s branch deploys exactly the pushed commit, and publishes it', async () => {
    const repo = newRepoName();
    const pushed = await git.commit(repo, { 'public/index.html': 'pushed' }, 'the pushed commit');
    // The branch moves on before the event arrives: the deploy must still be of `after`.
    const later = await git.commit(repo, { 'public/index.html': 'later' }, 'a later commit');
    const site = await gitSite(repo);
    const { secret, url } = await webhookSecret(site.id);
    expect(url).toBe(`${service.config.urls.baseUrl}/hooks/git/${site.id}`);
    const body = pushEvent(repo, 'refs/heads/main', pushed);
    const res = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', body), body });
    expect(res.status).toBe(200);
    const answer = await res.json();
    expect(answer).toEqual({ ok: true, deployId: expect.any(String) });
    const deploy = await waitFor(site.id, answer.deployId);
    expect(deploy).toMatchObject({ status: 'DEPLOYED', published: true, preview: false, pullRequest: null, repository: { commit: pushed, branch: 'main' } });
    expect(deploy.repository.commit).not.toBe(later);
    expect(await fileOf(site.id, deploy.id, 'index.html')).toBe('pushed');
    const got = dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } webhookSecretSet } }', { s: site.id })).getSiteById;
    expect(got).toEqual({ publishedDeploy: { id: deploy.id }, webhookSecretSet: true });
  });

  test('a wrong or missing signature is 401 and starts nothing; so is a signature over another body', async () => {
    const repo = newRepoName();
    const commit = await git.commit(repo, { 'public/index.html': 'x' }, 'c');
    const site = await gitSite(repo);
    const { secret } = await webhookSecret(site.id);
    const body = pushEvent(repo, 'refs/heads/main', commit);
    const cases: Array<Record<string, string>> = [
      githubHeaders(null, 'push', body),
      githubHeaders('not-the-secret', 'push', body),
      { ...githubHeaders(secret, 'push', body), 'x-hub-signature-256': sign(secret, body).slice(0, -1) + (sign(secret, body).endsWith('0') ? '1' : '0') },
      githubHeaders(secret, 'push', body + ' '),
      { ...githubHeaders(secret, 'push', body), 'x-hub-signature-256': 'sha1=' + createHmac('sha1', secret).update(body).digest('hex') },
    ];
    for (const headers of cases) {
      const res = await post(`/hooks/git/${site.id}`, { headers, body });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ ok: false, error: expect.stringMatching(/X-Hub-Signature-256/) });
    }
    expect(await deploysOf(site.id)).toEqual([]);
  });

  test('a body over 1 MiB is 413, even correctly signed; exactly 1 MiB is read', async () => {
    const repo = newRepoName();
    const commit = await git.commit(repo, { 'public/index.html': 'x' }, 'c');
    const site = await gitSite(repo);
    const { secret } = await webhookSecret(site.id);
    const base = pushEvent(repo, 'refs/heads/other', commit);
    const pad = (size: number) => base.slice(0, -1) + `,"pad":"${'x'.repeat(size - base.length - 9)}"}`;
    const over = pad(1024 * 1024 + 1);
    expect(Buffer.byteLength(over)).toBe(1024 * 1024 + 1);
    const res = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', over), body: over });
    expect(res.status).toBe(413);
    const exact = pad(1024 * 1024);
    expect(Buffer.byteLength(exact)).toBe(1024 * 1024);
    const ok = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', exact), body: exact });
    expect(ok.status).toBe(200);
    expect((await ok.json()).ignored).toMatch(/branch other/);
    expect(await deploysOf(site.id)).toEqual([]);
  });

  test('an unknown site and a site without a secret are the same 404; GET is 405; JSON that does not parse is 400', async () => {
    const repo = newRepoName();
    const commit = await git.commit(repo, { 'public/index.html': 'x' }, 'c');
    const site = await gitSite(repo);
    const body = pushEvent(repo, 'refs/heads/main', commit);
    const noSecret = await post(`/hooks/git/${site.id}`, { headers: githubHeaders('anything', 'push', body), body });
    const unknown = await post(`/hooks/git/00000000-0000-4000-8000-000000000000`, { headers: githubHeaders('anything', 'push', body), body });
    expect([noSecret.status, unknown.status]).toEqual([404, 404]);
    expect(await noSecret.text()).toBe(await unknown.text());
    const { secret } = await webhookSecret(site.id);
    const get = await post(`/hooks/git/${site.id}`, { method: 'GET', headers: {} });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const bad = '{"ref": "refs/heads/main", ';
    const res = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', bad), body: bad });
    expect(res.status).toBe(400);
    expect(await deploysOf(site.id)).toEqual([]);
  });

  test('a delivery id seen before is acknowledged and not acted on twice, even when both arrive at once', async () => {
    const repo = newRepoName();
    const commit = await git.commit(repo, { 'public/index.html': 'once' }, 'c');
    const site = await gitSite(repo);
    const { secret } = await webhookSecret(site.id);
    const body = pushEvent(repo, 'refs/heads/main', commit);
    const headers = githubHeaders(secret, 'push', body);
    const [first, second] = await Promise.all([post(`/hooks/git/${site.id}`, { headers, body }), post(`/hooks/git/${site.id}`, { headers, body })]);
    const answers = [await first.json(), await second.json()];
    expect([first.status, second.status]).toEqual([200, 200]);
    const acted = answers.filter((x) => !x.alreadyHandled);
    expect(acted).toHaveLength(1);
    const third = await post(`/hooks/git/${site.id}`, { headers, body });
    const repeat = await third.json();
    expect(repeat).toMatchObject({ ok: true, alreadyHandled: true, ignored: expect.stringMatching(/already handled/), deployId: acted[0].deployId });
    expect((await deploysOf(site.id)).map((d) => d.id)).toEqual([acted[0].deployId]);
    // A new delivery of the same event is a new request to act.
    const again = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', body), body });
    expect((await again.json()).deployId).toEqual(expect.any(String));
    expect(await deploysOf(site.id)).toHaveLength(2);
  });

  test('a push to another branch, a tag, a branch deletion and a ping are acknowledged and ignored, saying why', async () => {
    const repo = newRepoName();
    const commit = await git.commit(repo, { 'public/index.html': 'x' }, 'c');
    const site = await gitSite(repo);
    const { secret } = await webhookSecret(site.id);
    const send = async (event: string, body: string) => {
      const res = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, event, body), body });
      expect(res.status).toBe(200);
      return res.json();
    };
    expect(await send('push', pushEvent(repo, 'refs/heads/feature', commit))).toEqual({ ok: true, ignored: 'a push to branch feature: this site deploys branch main' });
    expect(await send('push', pushEvent(repo, 'refs/tags/v1.0', commit))).toEqual({ ok: true, ignored: 'a tag push (v1.0): only pushes to branch main deploy' });
    expect(await send('push', pushEvent(repo, 'refs/heads/main', '0'.repeat(40), { deleted: true }))).toEqual({ ok: true, ignored: 'branch main was deleted: nothing to deploy' });
    expect(await send('ping', JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 }))).toEqual({ ok: true, ignored: 'ping: the webhook is set up' });
    expect(await send('issues', JSON.stringify({ action: 'opened' }))).toMatchObject({ ok: true, ignored: expect.stringMatching(/issues event is not acted on/) });
    expect(await deploysOf(site.id)).toEqual([]);
  });
});

test('a rotated webhook secret replaces the old one at once, and no response ever shows a secret again', async () => {
  const repo = newRepoName();
  const commit = await git.commit(repo, { 'public/index.html': 'x' }, 'c');
  const site = await gitSite(repo);
  const first = await webhookSecret(site.id);
  const second = await webhookSecret(site.id);
  expect(second.secret).not.toBe(first.secret);
  expect(Buffer.from(second.secret, 'base64url').length).toBeGreaterThanOrEqual(32);
  const body = pushEvent(repo, 'refs/heads/feature', commit);
  const post = (secret: string) => fetch(`${service.config.urls.baseUrl}/hooks/git/${site.id}`, { method: 'POST', headers: githubHeaders(secret, 'push', body), body });
  expect((await post(first.secret)).status).toBe(401);
  expect((await post(second.secret)).status).toBe(200);
  const read = await gql('query ($s: ID!) { getSiteById(siteId: $s) { id webhookUrl webhookSecretSet repositoryTokenSet buildHooks { id } } }', { s: site.id });
  expect(read.text).not.toContain(second.secret);
  expect(dataOf(read).getSiteById).toMatchObject({ webhookSecretSet: true, repositoryTokenSet: false });
  // Sealed at rest: the plaintext is nowhere in the sites table's item.
  const raw = await service.services.db.doc.send(new (await import('@aws-sdk/lib-dynamodb')).GetCommand({ TableName: service.config.tables.sites, Key: { pk: `SITE#${site.id}`, sk: 'SECRETS' } }));
  expect(raw.Item?.webhookSecret).toEqual(expect.stringMatching(/^v1\./));
  expect(JSON.stringify(raw.Item)).not.toContain(second.secret);
  expect(dataOf(await gql('mutation ($s: ID!) { deleteWebhookSecret(siteId: $s) }', { s: site.id })).deleteWebhookSecret).toBe(true);
  expect((await post(second.secret)).status).toBe(404);
  expect(dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { webhookSecretSet } }', { s: site.id })).getSiteById.webhookSecretSet).toBe(false);
});

test('another team cannot create or read a site\'s webhook secret', async () => {
  const repo = newRepoName();
  await git.commit(repo, { 'public/index.html': 'x' }, 'c');
  const site = await gitSite(repo);
  const b = await newAccount(service, 'hooks-other');
  const res = await gql('mutation ($s: ID!) { createWebhookSecret(siteId: $s) { secret } }', { s: site.id }, b.apiKey);
  expect(onlyError(res).extensions.code).toBe('FORBIDDEN');
  expect(await service.services.siteSecrets.webhookSecret(site.id)).toBeUndefined();
});

test('a GitLab push hook with the right token deploys the pushed commit; a wrong token is 401', async () => {
  const repo = newRepoName();
  const commit = await git.commit(repo, { 'public/index.html': 'from gitlab' }, 'c');
  const site = await gitSite(repo);
  const { secret } = await webhookSecret(site.id);
  const body = JSON.stringify({ object_kind: 'push', ref: 'refs/heads/main', before: '0'.repeat(40), after: commit, checkout_sha: commit, project: { git_http_url: git.repoUrl(repo) } });
  const headers = (token: string, uuid = `gl-${newDelivery()}`) => ({ 'content-type': 'application/json', 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': token, 'x-gitlab-event-uuid': uuid });
  const url = `${service.config.urls.baseUrl}/hooks/git/${site.id}`;
  const wrong = await fetch(url, { method: 'POST', headers: headers(`${secret}x`), body });
  expect(wrong.status).toBe(401);
  expect(await deploysOf(site.id)).toEqual([]);
  const uuid = `gl-${newDelivery()}`;
  const res = await fetch(url, { method: 'POST', headers: headers(secret, uuid), body });
  expect(res.status).toBe(200);
  const { deployId } = await res.json();
  const deploy = await waitFor(site.id, deployId);
  expect(deploy).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit, branch: 'main' } });
  expect(await fileOf(site.id, deployId, 'index.html')).toBe('from gitlab');
  const repeat = await fetch(url, { method: 'POST', headers: headers(secret, uuid), body });
  expect(await repeat.json()).toMatchObject({ alreadyHandled: true, deployId });
  // A branch deletion (GitLab: after all zeros, no checkout_sha) is ignored.
  const deletion = JSON.stringify({ object_kind: 'push', ref: 'refs/heads/main', before: commit, after: '0'.repeat(40), checkout_sha: null });
  const deleted = await fetch(url, { method: 'POST', headers: headers(secret), body: deletion });
  expect(await deleted.json()).toEqual({ ok: true, ignored: 'branch main was deleted: nothing to deploy' });
  expect(await deploysOf(site.id)).toHaveLength(1);
});

describe('pull requests', () => {
  const post = (siteId: string, secret: string, body: string) =>
    fetch(`${service.config.urls.baseUrl}/hooks/git/${siteId}`, { method: 'POST', headers: githubHeaders(secret, 'pull_request', body), body });

  test('an opened pull request against the site\'s branch builds an unpublished preview of its head, with the PR on the deploy', async () => {
    const repo = newRepoName();
    const main = await git.commit(repo, { 'public/index.html': 'main' }, 'main');
    const head = await git.commit(repo, { 'public/index.html': 'feature' }, 'feature work', 'feature');
    const site = await gitSite(repo, { prDeployPreviews: true });
    const { secret } = await webhookSecret(site.id);
    // The site's own deploy first, so that "not published" is seen against a published one.
    const pushBody = pushEvent(repo, 'refs/heads/main', main);
    const live = await (await fetch(`${service.config.urls.baseUrl}/hooks/git/${site.id}`, { method: 'POST', headers: githubHeaders(secret, 'push', pushBody), body: pushBody })).json();
    await waitFor(site.id, live.deployId);

    const res = await post(site.id, secret, pullRequestEvent(repo, { action: 'opened', number: 7, head: 'feature', sha: head, title: 'Add the feature' }));
    expect(res.status).toBe(200);
    const { deployId } = await res.json();
    const deploy = await waitFor(site.id, deployId);
    expect(deploy).toMatchObject({
      status: 'DEPLOYED',
      published: false,
      preview: true,
      pullRequest: { number: 7, title: 'Add the feature', url: `https://git.example/${repo}/pull/7`, fork: false },
      repository: { commit: head, branch: 'feature' },
    });
    expect(deploy.log).toContain('A preview: not published');
    expect(await fileOf(site.id, deployId, 'index.html')).toBe('feature');
    const got = dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } } }', { s: site.id })).getSiteById;
    expect(got.publishedDeploy.id).toBe(live.deployId);
    // A preview cannot be published by hand either.
    const publish = await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: deployId });
    expect(onlyError(publish).extensions.code).toBe('BAD_USER_INPUT');

    // synchronize builds the new head; closed, and PRs against other branches, build nothing.
    const next = await git.commit(repo, { 'public/index.html': 'feature 2' }, 'more work', 'feature');
    const sync = await (await post(site.id, secret, pullRequestEvent(repo, { action: 'synchronize', number: 7, head: 'feature', sha: next }))).json();
    expect((await waitFor(site.id, sync.deployId)).repository).toMatchObject({ commit: next, branch: 'feature' });
    expect(await (await post(site.id, secret, pullRequestEvent(repo, { action: 'closed', number: 7, head: 'feature', sha: next }))).json()).toEqual({
      ok: true,
      ignored: 'pull request #7 closed: only opened, reopened and synchronize build a preview',
    });
    expect(await (await post(site.id, secret, pullRequestEvent(repo, { action: 'opened', number: 8, head: 'feature', sha: next, base: 'develop' }))).json()).toEqual({
      ok: true,
      ignored: 'pull request #8 is against branch develop: this site deploys branch main',
    });
    expect(await deploysOf(site.id)).toHaveLength(3);
  });

  test('with pull-request previews off, a pull request builds nothing and says why', async () => {
    const repo = newRepoName();
    const head = await git.commit(repo, { 'public/index.html': 'feature' }, 'feature', 'feature');
    const site = await gitSite(repo);
    const { secret } = await webhookSecret(site.id);
    const res = await post(site.id, secret, pullRequestEvent(repo, { action: 'opened', number: 3, head: 'feature', sha: head }));
    expect(await res.json()).toEqual({ ok: true, ignored: 'pull request #3: pull-request previews are off for this site (deploySettings.prDeployPreviews)' });
    expect(await deploysOf(site.id)).toEqual([]);
  });

  test('a pull request from a fork is built from the fork, without the site\'s access token, and the log says so', async () => {
    const repo = newRepoName();
    await git.commit(repo, { 'public/index.html': 'main' }, 'main');
    const fork = `forker/hooked-fork-${repos}`;
    await git.commit(fork, { 'public/index.html': 'main' }, 'main'); // a fork has the default branch too
    const head = await git.commit(fork, { 'public/index.html': 'from the fork' }, 'fork work', 'patch-1');
    const site = await gitSite(repo, { prDeployPreviews: true });
    const token = `fork-guard-token-${process.pid}`;
    dataOf(await gql('mutation ($s: ID!, $t: String) { setRepositoryToken(siteId: $s, token: $t) { id } }', { s: site.id, t: token }));
    const { secret } = await webhookSecret(site.id);
    const res = await post(site.id, secret, pullRequestEvent(repo, { action: 'opened', number: 12, head: 'patch-1', sha: head, headRepo: fork }));
    const { deployId } = await res.json();
    const deploy = await waitFor(site.id, deployId);
    expect(deploy).toMatchObject({ status: 'DEPLOYED', published: false, preview: true, pullRequest: { number: 12, fork: true }, repository: { commit: head, branch: 'patch-1', owner: 'forker' } });
    expect(deploy.log).toContain(`Pull request #12 comes from a fork: cloning ${git.repoUrl(fork)} as a public repository, without the site's access token`);
    expect(await fileOf(site.id, deployId, 'index.html')).toBe('from the fork');
    // A fork that asks for credentials is not offered the site's token: it fails as a private repository would.
    const closed = `forker/hooked-closed-${repos}`;
    await git.commit(closed, { 'public/index.html': 'main' }, 'main');
    const closedHead = await git.commit(closed, { 'public/index.html': 'x' }, 'x', 'patch-2');
    git.requireCredentials(closed, 'x-access-token', 'the fork owner\'s own token');
    const second = await (await post(site.id, secret, pullRequestEvent(repo, { action: 'opened', number: 13, head: 'patch-2', sha: closedHead, headRepo: closed }))).json();
    const refused = await waitFor(site.id, second.deployId);
    expect(refused.status).toBe('FAILED');
    expect(refused.log).toMatch(/the repository asks for credentials/);
    const encoded = Buffer.from(`x-access-token:${token}`).toString('base64');
    expect(git.authorizations().filter((x) => x.authorization.includes(encoded))).toEqual([]);
  });

  test('a GitLab merge request (open, update with new commits) builds previews; an update without commits and a merge do not', async () => {
    const repo = newRepoName();
    await git.commit(repo, { 'public/index.html': 'main' }, 'main');
    const head = await git.commit(repo, { 'public/index.html': 'mr' }, 'mr work', 'topic');
    const site = await gitSite(repo, { prDeployPreviews: true });
    const { secret } = await webhookSecret(site.id);
    const mr = (action: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        object_kind: 'merge_request',
        object_attributes: {
          iid: 4, title: 'Topic', url: `https://gitlab.example/${repo}/-/merge_requests/4`, action, source_branch: 'topic', target_branch: 'main',
          source_project_id: 9, target_project_id: 9, last_commit: { id: head }, source: { git_http_url: git.repoUrl(repo) }, ...extra,
        },
      });
    const send = async (body: string) =>
      (await fetch(`${service.config.urls.baseUrl}/hooks/git/${site.id}`, { method: 'POST', headers: { 'x-gitlab-event': 'Merge Request Hook', 'x-gitlab-token': secret, 'content-type': 'application/json' }, body })).json();
    const opened = await send(mr('open'));
    const deploy = await waitFor(site.id, opened.deployId);
    expect(deploy).toMatchObject({ status: 'DEPLOYED', published: false, preview: true, pullRequest: { number: 4, title: 'Topic', fork: false }, repository: { commit: head, branch: 'topic' } });
    expect(await send(mr('update'))).toEqual({ ok: true, ignored: 'merge request !4 updated without new commits: nothing to build' });
    expect(await send(mr('merge'))).toMatchObject({ ok: true, ignored: expect.stringMatching(/^merge request !4 merge:/) });
    const updated = await send(mr('update', { oldrev: '1'.repeat(40) }));
    expect(updated.deployId).toEqual(expect.any(String));
    expect(await deploysOf(site.id)).toHaveLength(2);
  });
});

describe.each(DOORS)('build hooks through the $name', (door) => {
  test('a build hook URL deploys the branch head on POST; a wrong token is 404, GET is 405, a deleted hook is 404', async () => {
    const post = door.post();
    const repo = newRepoName();
    await git.commit(repo, { 'public/index.html': 'one' }, 'one');
    const site = await gitSite(repo);
    const created = dataOf(await gql('mutation ($s: ID!) { createBuildHook(siteId: $s, name: "CMS") { buildHook { id name branch createdAt } url } }', { s: site.id })).createBuildHook;
    const { buildHook, url } = created;
    expect(buildHook).toMatchObject({ name: 'CMS', branch: null });
    const u = new URL(url);
    expect(`${u.origin}${u.pathname}`).toBe(`${service.config.urls.baseUrl}/hooks/build/${buildHook.id}`);
    const token = u.searchParams.get('token')!;
    expect(Buffer.from(token, 'base64url').length).toBeGreaterThanOrEqual(16);
    const listed = await gql('query ($s: ID!) { getSiteById(siteId: $s) { buildHooks { id name branch } } }', { s: site.id });
    expect(dataOf(listed).getSiteById.buildHooks).toEqual([{ id: buildHook.id, name: 'CMS', branch: null }]);
    expect(listed.text).not.toContain(token);

    const head = await git.commit(repo, { 'public/index.html': 'two' }, 'two');
    const path = `${u.pathname}${u.search}`;
    const res = await post(path, { body: '{}' });
    expect(res.status).toBe(200);
    const { deployId } = await res.json();
    const deploy = await waitFor(site.id, deployId);
    expect(deploy).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit: head, branch: 'main' } });

    const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect((await post(`${u.pathname}?token=${flipped}`, {})).status).toBe(404);
    expect((await post(u.pathname, {})).status).toBe(404);
    expect((await post(path, { method: 'GET' })).status).toBe(405);
    expect(await deploysOf(site.id)).toHaveLength(1);
    expect(dataOf(await gql('mutation ($s: ID!, $h: ID!) { deleteBuildHook(siteId: $s, buildHookId: $h) }', { s: site.id, h: buildHook.id })).deleteBuildHook).toBe(true);
    expect((await post(path, {})).status).toBe(404);
    expect(dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { buildHooks { id } } }', { s: site.id })).getSiteById.buildHooks).toEqual([]);
  });
});

test('a build hook for another branch builds that branch\'s head as an unpublished preview', async () => {
  const repo = newRepoName();
  await git.commit(repo, { 'public/index.html': 'main' }, 'main');
  const head = await git.commit(repo, { 'public/index.html': 'staging' }, 'staging', 'staging');
  const site = await gitSite(repo);
  const { url } = dataOf(await gql('mutation ($s: ID!) { createBuildHook(siteId: $s, name: "stage", branch: "staging") { url buildHook { branch } } }', { s: site.id })).createBuildHook;
  const { deployId } = await (await fetch(url, { method: 'POST' })).json();
  const deploy = await waitFor(site.id, deployId);
  expect(deploy).toMatchObject({ status: 'DEPLOYED', published: false, preview: true, pullRequest: null, repository: { commit: head, branch: 'staging' } });
  const bad = await gql('mutation ($s: ID!) { createBuildHook(siteId: $s, name: "x", branch: "a..b") { url } }', { s: site.id });
  expect(onlyError(bad)).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'branch' } });
});
