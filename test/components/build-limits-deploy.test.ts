/**
 * Build limits through the whole service: the local service hands
 * config.build.limits (CAIRN_BUILD_*) to its runner, the deploy log says
 * which mechanism keeps each, and a build ended at one fails its deploy
 * with a line naming the limit and its value.
 */
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';

let service: TestService;
let git: GitServer;
let a: AccountFixture;
let client: ReturnType<typeof graphqlClient>;

beforeAll(async () => {
  [service, git] = await Promise.all([
    startTestService({
      CAIRN_GC_INTERVAL: '0',
      CAIRN_PREVIEW: 'off',
      CAIRN_BUILD_TIMEOUT: '60',
      CAIRN_BUILD_OUTPUT: '64KiB',
      CAIRN_BUILD_MEMORY: '256MiB',
      CAIRN_BUILD_TMP: '16MiB',
    }),
    startGitServer(),
  ]);
  a = await newAccount(service, 'limited');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});
afterAll(async () => {
  await service?.close();
  await git?.close();
});

const gql = async (query: string, variables: Record<string, unknown> = {}) => client.gql(a.apiKey, query, variables);
let repos = 0;

/** A site on a repository of the test's git server, with this build command, deployed once; its deploy when it has ended. */
async function deployed(buildCommand: string): Promise<{ status: string; log: string }> {
  const repo = `acme/limited-${++repos}`;
  await git.commit(repo, { 'index.html': 'x' }, 'the commit');
  const input = {
    buildSettings: { buildCommand },
    deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } },
  };
  const site = dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', { input })).createSite;
  const deploy = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id })).triggerDeploy;
  const deadline = Date.now() + 90_000;
  for (;;) {
    const d = dataOf(
      await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status log } }', { s: site.id, d: deploy.id }),
    ).getDeployById;
    if (d.status === 'DEPLOYED' || d.status === 'FAILED') return d;
    if (Date.now() > deadline) throw new Error(`the deploy did not end: ${JSON.stringify(d).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('a build printing past CAIRN_BUILD_OUTPUT fails its deploy naming the output limit', async () => {
  const { status, log } = await deployed('yes "a line of the build" | head -c 1000000; sleep 30');
  expect(status).toBe('FAILED');
  expect(log).toMatch(
    /Build limits: memory 256 MiB \(.+\), processes 512 \(.+\), CPU time 1800 s \(.+\), disk 10 GiB \(.+\), \/tmp 16 MiB \(tmpfs\), output 64 KiB/,
  );
  expect(log).toMatch(/Failed: the build was ended: output limit 64 KiB reached$/m);
});

test('a build within its limits deploys', async () => {
  const { status, log } = await deployed('node -e "console.log(1 + 1)" > two.txt && echo built');
  expect(log).toContain('built');
  expect(status).toBe('DEPLOYED');
  expect(log).not.toMatch(/Failed:/);
});
