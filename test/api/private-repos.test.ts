/**
 * Sites built from private repositories, end to end on a local service: a
 * git server that takes HTTP basic credentials, the site's access token set
 * through GraphQL (write-only), deploys that clone with it, and a search of
 * everything the service says or keeps for the token: every GraphQL
 * response, the deploy logs, the deploy records, the sites table's sealed
 * item, and the service's own log lines.
 *
 * Local only: the git server listens on this machine's loopback.
 */
import { QueryCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { startTestService, type TestService } from '../support/service.js';
import { graphqlClient, newAccount, type AccountFixture, type GraphqlResult } from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { deployLogKey } from '../../functions/core/ports/log-store.js';

let service: TestService;
let git: GitServer;
let a: AccountFixture;
let client: ReturnType<typeof graphqlClient>;

const TOKEN = `ghp_${'Q7x'.repeat(12)}${process.pid}`;
const WRONG = `ghp_${'W9z'.repeat(12)}${process.pid}`;
/** Everything any GraphQL request of this suite answered. */
const responses: string[] = [];
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
  // Info lines too: the search covers what the service would log in production.
  [service, git] = await Promise.all([
    startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off', CAIRN_LOG_LEVEL: 'debug' }),
    startGitServer(),
  ]);
  a = await newAccount(service, 'private');
  service.services.logger.info('capture probe'); // shows the capture below sees the service's logger
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});
afterAll(async () => {
  process.stdout.write = writes.out;
  process.stderr.write = writes.err;
  await service?.close();
  await git?.close();
});

async function gql(query: string, variables: Record<string, unknown> = {}): Promise<GraphqlResult> {
  const result = await client.gql(a.apiKey, query, variables);
  responses.push(result.text);
  return result;
}
function data(result: GraphqlResult): any {
  if (result.errors?.length || !result.data) throw new Error(`expected data, got ${result.status}: ${result.text}`);
  return result.data;
}

const DEPLOY = 'id status published log repository { commit branch }';
const SITE = 'id repositoryTokenSet repositoryUsername latestDeploy { id status log }';

async function createSite(url: string): Promise<string> {
  const input = {
    buildSettings: { publishDirectoryPath: 'public' },
    deploySettings: { source: { repository: { type: 'GIT_HOST', url, branch: 'main' } } },
  };
  return data(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', { input })).createSite.id;
}
const setToken = async (siteId: string, token: string | null, username?: string) =>
  gql(`mutation ($s: ID!, $t: String, $u: String) { setRepositoryToken(siteId: $s, token: $t, username: $u) { ${SITE} } }`, {
    s: siteId,
    t: token,
    u: username,
  });
async function deploy(siteId: string) {
  const { id } = data(await gql(`mutation ($s: ID!) { triggerDeploy(siteId: $s) { ${DEPLOY} } }`, { s: siteId })).triggerDeploy;
  const deadline = Date.now() + 40_000;
  for (;;) {
    const d = data(
      await gql(`query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ${DEPLOY} } }`, { s: siteId, d: id }),
    ).getDeployById;
    if (d.status !== 'IN_PROGRESS' && /Published|Failed/.test(d.log ?? '')) return d;
    if (Date.now() > deadline) throw new Error(`deploy ${id} did not end: ${JSON.stringify(d)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const REPO = 'acme/closed-site';
let head: string;
let siteId: string;
let otherSiteId: string;

beforeAll(async () => {
  head = await git.commit(REPO, { 'public/index.html': 'private content' }, 'private');
  await git.requireCredentials(REPO, 'x-access-token', TOKEN);
  siteId = await createSite(git.repoUrl(REPO));
  otherSiteId = await createSite(git.repoUrl(REPO));
});

test('with the right token the private repository deploys; the Site says only that a token is set', async () => {
  const set = await setToken(siteId, TOKEN);
  expect(data(set).setRepositoryToken).toMatchObject({ repositoryTokenSet: true, repositoryUsername: 'x-access-token' });
  const d = await deploy(siteId);
  expect(d).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit: head, branch: 'main' } });
  expect(d.log).toContain("Cloning with the site's repository access token (user name x-access-token)");
  // The host was sent exactly these basic credentials.
  const sent = (await git.authorizations()).filter((x) => x.path.startsWith(`/${REPO}.git/`));
  expect(sent.length).toBeGreaterThan(0);
  expect(new Set(sent.map((x) => x.authorization))).toEqual(
    new Set([`Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`]),
  );
});

test("another site of the same repository without a token fails asking for one (it never gets the first site's mirror or token)", async () => {
  const d = await deploy(otherSiteId);
  expect(d.status).toBe('FAILED');
  expect(d.log.trim().split('\n').at(-1)).toMatch(/Failed: the repository asks for credentials; set the site's repository access token/);
});

test('a wrong token ends FAILED with "authentication failed"', async () => {
  expect(data(await setToken(siteId, WRONG)).setRepositoryToken.repositoryTokenSet).toBe(true);
  const d = await deploy(siteId);
  expect(d.status).toBe('FAILED');
  expect(d.log.trim().split('\n').at(-1)).toMatch(/^\S+\s+Failed: authentication failed: /);
  const site = data(await gql(`query ($s: ID!) { getSiteById(siteId: $s) { ${SITE} } }`, { s: siteId })).getSiteById;
  expect(site.latestDeploy).toMatchObject({ id: d.id, status: 'FAILED' });
});

test('a token is cleared with null; the user name defaults to oauth2 for GitLab hosts and can be given; bad tokens are refused without echoing them', async () => {
  expect(data(await setToken(siteId, null)).setRepositoryToken).toMatchObject({ repositoryTokenSet: false, repositoryUsername: null });
  expect(await service.services.siteSecrets.repositoryCredentials(siteId)).toBeUndefined();
  const gitlabSite = await createSite('https://gitlab.com/acme/site.git');
  expect(data(await setToken(gitlabSite, TOKEN)).setRepositoryToken.repositoryUsername).toBe('oauth2');
  expect(data(await setToken(gitlabSite, TOKEN, 'deploy-bot')).setRepositoryToken.repositoryUsername).toBe('deploy-bot');
  const spaced = `${TOKEN} with spaces`;
  const bad = await setToken(gitlabSite, spaced);
  expect(bad.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'token' });
  expect(bad.text).not.toContain(TOKEN);
});

test('the tokens appear in no GraphQL response, deploy log, deploy record, service log line or plaintext at rest', async () => {
  // Set the right one again (sealed at rest) and read everything there is to read.
  await setToken(siteId, TOKEN);
  const listing = data(
    await gql(`query ($s: ID!) { getDeploysBySite(siteId: $s, limit: 10) { deploys { ${DEPLOY} id published } } }`, { s: siteId }),
  ).getDeploysBySite.deploys;
  expect(listing.length).toBeGreaterThanOrEqual(2);
  await gql(`query ($s: ID!) { getSiteById(siteId: $s) { ${SITE} buildSettings { environmentVariables { name value } } } }`, { s: siteId });

  const logs: string[] = [];
  for (const id of [siteId, otherSiteId]) {
    const items = await service.services.db.doc.send(
      new QueryCommand({
        TableName: service.config.tables.deploys,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `SITE#${id}` },
      }),
    );
    expect(items.Items!.length).toBeGreaterThan(0);
    for (const item of items.Items!) {
      expect(JSON.stringify(item)).not.toContain(TOKEN);
      expect(JSON.stringify(item)).not.toContain(WRONG);
      if (typeof item.id === 'string')
        logs.push((await service.services.deployLogs.read(deployLogKey(id, item.id)).catch(() => undefined)) ?? '');
    }
  }
  const apiLogs = listing.map((d: any) => d.log as string);
  expect(apiLogs.join('').length).toBeGreaterThan(0);
  for (const text of [...responses, ...apiLogs, ...logs, ...serviceOutput]) {
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(WRONG);
  }
  expect(responses.length).toBeGreaterThan(10);
  expect(serviceOutput.some((l) => l.includes('capture probe'))).toBe(true); // the capture did see the service's log lines
  const sealed = await service.services.db.doc.send(
    new GetCommand({ TableName: service.config.tables.sites, Key: { pk: `SITE#${siteId}`, sk: 'SECRETS' } }),
  );
  expect(sealed.Item?.repositoryToken).toEqual(expect.stringMatching(/^v1\./));
  expect(JSON.stringify(sealed.Item)).not.toContain(TOKEN);
  // And it opens to the token, bound to this site.
  expect(await service.services.siteSecrets.repositoryCredentials(siteId)).toEqual({ username: 'x-access-token', token: TOKEN });
});
