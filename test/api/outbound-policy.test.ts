/**
 * The outbound address policy on a local service that refuses private
 * addresses (CAIRN_OUTBOUND_PRIVATE=refuse, the default outside the test
 * suites), through the node:http door and the GraphQL Lambda handler: a
 * notification URL that leads to this machine, its network or the
 * metadata service, in any IPv4-in-IPv6 form or by a name, is refused when
 * it is added; a site whose repository is on such an address gets a deploy
 * that fails with the policy's line, its git server never asked; a commit
 * status whose API base is such an address is not sent, and the deploy's
 * log says why. The git server, the receiver and the fake git host API
 * listen on 127.0.0.1: each counts what reached it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { startTestService, type TestService } from '../support/service.js';
import {
  dataOf,
  graphqlClient,
  graphqlDoors,
  importGraphqlLambda,
  newAccount,
  onlyError,
  type AccountFixture,
} from '../support/graphql.js';
import type { LambdaFn } from '../support/lambda-door.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { startGitHostApi, type GitHostApi } from '../support/git-host-api.js';
import { waitFor } from '../support/wait.js';
import { doorsFor } from '../support/test-set.js';

const RULE = 'outbound requests to private addresses are refused (CAIRN_OUTBOUND_PRIVATE=allow allows them)';

let service: TestService;
let git: GitServer;
let api: GitHostApi;
let receiver: Server;
let receiverPort: number;
let received = 0;
let a: AccountFixture;
let graphqlLambda: LambdaFn;
const savedEnv = { ...process.env };

beforeAll(async () => {
  [git, api] = await Promise.all([startGitServer(), startGitHostApi()]);
  receiver = createServer((req, res) => {
    received++;
    req.resume();
    res.writeHead(204).end();
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  receiverPort = (receiver.address() as AddressInfo).port;
  // The git server's host has a GitHub API here, on loopback over https (refused by its address, not its scheme).
  const apiBase = `https://127.0.0.1:${new URL(api.githubUrl).port}/github`;
  service = await startTestService({
    CAIRN_GC_INTERVAL: '0',
    CAIRN_PREVIEW: 'off',
    CAIRN_OUTBOUND_PRIVATE: 'refuse',
    CAIRN_GIT_HOST_APIS: `${new URL(git.url).host}=github@${apiBase}`,
  });
  Object.assign(process.env, service.env);
  graphqlLambda = await importGraphqlLambda();
  a = await newAccount(service, 'outbound');
});
afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  await Promise.all([git?.close(), api?.close(), new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()))]);
});

test('the service refuses private addresses', () => {
  expect(service.config.outbound).toEqual({ private: 'refuse' });
});

describe.each(doorsFor(graphqlDoors(() => graphqlLambda)))('through the $name', (door) => {
  const client = () => graphqlClient(door, service.endpoints.graphql);
  const gql = (query: string, variables: Record<string, unknown> = {}) => client().gql(a.apiKey, query, variables);
  let repos = 0;

  const gitSite = async (url: (repo: string) => string) => {
    const repo = `acme/outbound-${door.name.split(' ')[0]}-${++repos}`;
    const commit = await git.commit(repo, { 'index.html': 'x' }, 'the commit');
    const input = { deploySettings: { source: { repository: { type: 'GIT_HOST', url: url(repo), branch: 'main' } } } };
    const site = dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', { input })).createSite as {
      id: string;
    };
    return { ...site, repo, commit };
  };
  const trigger = async (siteId: string, commit?: string) =>
    dataOf(await gql('mutation ($s: ID!, $c: String) { triggerDeploy(siteId: $s, commit: $c) { id } }', { s: siteId, c: commit }))
      .triggerDeploy.id as string;
  const deployOf = async (siteId: string, deployId: string) =>
    dataOf(await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status log } }', { s: siteId, d: deployId }))
      .getDeployById as { status: string; log: string };
  const ended = (siteId: string, deployId: string) =>
    waitFor(
      async () => {
        const d = await deployOf(siteId, deployId);
        return d.status !== 'IN_PROGRESS' ? d : undefined;
      },
      { timeoutMs: 60_000, what: 'the deploy to end' },
    );

  test.each([
    ['loopback', () => `https://127.0.0.1:${receiverPort}/hook`, `127.0.0.1 is a loopback address: ${RULE}`],
    ['the metadata service', () => 'https://169.254.169.254/latest/meta-data/', `169.254.169.254 is a link-local address: ${RULE}`],
    [
      'IPv4-compatible loopback',
      () => `https://[::127.0.0.1]:${receiverPort}/hook`,
      `::7f00:1 is an IPv4-compatible form of 127.0.0.1, a loopback address: ${RULE}`,
    ],
    [
      'IPv4-translated loopback',
      () => `https://[::ffff:0:127.0.0.1]:${receiverPort}/hook`,
      `::ffff:0:7f00:1 is an IPv4-translated form of 127.0.0.1, a loopback address: ${RULE}`,
    ],
    [
      'local-use NAT64 loopback',
      () => `https://[64:ff9b:1::7f00:1]:${receiverPort}/hook`,
      `64:ff9b:1::7f00:1 is a local-use NAT64 form of 127.0.0.1, a loopback address: ${RULE}`,
    ],
    [
      '6to4 loopback',
      () => `https://[2002:7f00:1::]:${receiverPort}/hook`,
      `2002:7f00:1:: is a 6to4 form of 127.0.0.1, a loopback address: ${RULE}`,
    ],
    [
      'IPv4-mapped metadata',
      () => 'https://[::ffff:169.254.169.254]/latest/meta-data/',
      `::ffff:a9fe:a9fe is an IPv4-mapped form of 169.254.169.254, a link-local address: ${RULE}`,
    ],
    ['localhost', () => `https://localhost:${receiverPort}/hook`, `localhost names this machine, a loopback address: ${RULE}`],
  ])('a notification URL to %s is refused when added, with the rule', async (_, url, why) => {
    const site = await gitSite((repo) => git.repoUrl(repo));
    const before = received;
    const err = onlyError(
      await gql('mutation ($s: ID!, $u: String!) { addNotificationUrl(siteId: $s, url: $u) { secret } }', { s: site.id, u: url() }),
    );
    expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'url' });
    expect(err.message).toBe(`url refused: ${why}`);
    expect(received).toBe(before);
  });

  test("a notification URL naming this machine's own name is refused for the address the name resolves to", async () => {
    const site = await gitSite((repo) => git.repoUrl(repo));
    const err = onlyError(
      await gql('mutation ($s: ID!, $u: String!) { addNotificationUrl(siteId: $s, url: $u) { secret } }', {
        s: site.id,
        u: `https://${hostname()}:${receiverPort}/hook`,
      }),
    );
    expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'url' });
    expect(err.message).toMatch(
      new RegExp(`^url refused: ${hostname()} resolves to \\S+, an? [^:]+ address: ${RULE.replace(/[()]/g, '\\$&')}$`),
    );
  });

  test.each([
    [
      'the git server on this machine',
      (repo: string) => git.repoUrl(repo),
      () => `127.0.0.1:${new URL(git.url).port} is not cloned: 127.0.0.1 is a loopback address: ${RULE}`,
    ],
    [
      'the metadata service',
      (repo: string) => `http://169.254.169.254/${repo}.git`,
      () => `169.254.169.254 is not cloned: 169.254.169.254 is a link-local address: ${RULE}`,
    ],
    [
      'an IPv4-translated form of the git server',
      (repo: string) => git.repoUrl(repo).replace('127.0.0.1', '[::ffff:0:127.0.0.1]'),
      () =>
        `[::ffff:0:7f00:1]:${new URL(git.url).port} is not cloned: ::ffff:0:7f00:1 is an IPv4-translated form of 127.0.0.1, a loopback address: ${RULE}`,
    ],
    [
      'a 6to4 form of the git server',
      (repo: string) => git.repoUrl(repo).replace('127.0.0.1', '[2002:7f00:1::]'),
      () =>
        `[2002:7f00:1::]:${new URL(git.url).port} is not cloned: 2002:7f00:1:: is a 6to4 form of 127.0.0.1, a loopback address: ${RULE}`,
    ],
    [
      'localhost',
      (repo: string) => git.repoUrl(repo).replace('127.0.0.1', 'localhost'),
      () => `localhost:${new URL(git.url).port} is not cloned: localhost names this machine, a loopback address: ${RULE}`,
    ],
  ])('a repository on %s is not cloned: the deploy fails with the rule, and nothing was asked of the host', async (_, url, line) => {
    const site = await gitSite(url);
    const before = await git.requests();
    const deployId = await trigger(site.id);
    const done = await ended(site.id, deployId);
    expect(done.status).toBe('FAILED');
    expect(done.log.trimEnd().split('\n').at(-1)).toContain(line());
    expect(await git.requests()).toBe(before);
  });
});

test('a commit status whose API base is on this machine is not sent; the ended deploy says why once', async () => {
  const gql = async (query: string, variables: Record<string, unknown> = {}) =>
    dataOf(await graphqlClient(graphqlDoors(() => graphqlLambda)[0]!, service.endpoints.graphql).gql(a.apiKey, query, variables));
  const repo = 'acme/outbound-status';
  const commit = await git.commit(repo, { 'index.html': 'x' }, 'the commit');
  const input = { deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } } };
  const site = (await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', { input })).createSite as {
    id: string;
  };
  await gql('mutation ($s: ID!, $t: String) { setRepositoryToken(siteId: $s, token: $t) { repositoryUsername } }', {
    s: site.id,
    t: 'ghp_outboundPolicyToken000000000000',
  });
  const deployId = (await gql('mutation ($s: ID!, $c: String) { triggerDeploy(siteId: $s, commit: $c) { id } }', { s: site.id, c: commit }))
    .triggerDeploy.id as string;
  const line = `Commit status not set: the GitHub API address https://127.0.0.1:${new URL(api.githubUrl).port}/github is refused here (127.0.0.1 is a loopback address: ${RULE})`;
  const log = await waitFor(
    async () => {
      const d = (
        await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status log } }', { s: site.id, d: deployId })
      ).getDeployById as { status: string; log: string };
      return d.status !== 'IN_PROGRESS' && d.log.includes('Commit status not set') ? d.log : undefined;
    },
    { timeoutMs: 60_000, what: "the refusal on the ended deploy's log" },
  );
  expect(log.split('\n').filter((l) => l.includes('Commit status not set'))).toEqual([expect.stringContaining(line)]);
  expect(api.requests()).toEqual([]);
});
