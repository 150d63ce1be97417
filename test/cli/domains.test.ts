/**
 * `cairn domains` as its users run it (bin/cairn.mjs in a child process)
 * against a local service whose DNS resolver is pebble-challtestsrv: the
 * records printed to copy, verification failing with the reason (and a
 * non-zero exit) until DNS is right, the listing, the primary of a pair,
 * removal, and the API's refusals passed on.
 */
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { startTestDns, type TestDns } from '../support/acme-servers.js';
import { loginArgs, newCliUser, type CliUser } from './cli-runner.js';

let service: TestService;
let dns: TestDns;
let a: AccountFixture;
let cli: CliUser;
let site: { id: string; slug: string; name: string };
let target: string;

beforeAll(async () => {
  dns = await startTestDns();
  service = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_DNS_RESOLVER: dns.address, CAIRN_DOMAIN_ADDRESSES: '127.0.0.1' });
  a = await newAccount(service, 'cli-domains');
  cli = await newCliUser();
  const login = await cli.run(loginArgs(service, a.apiKey));
  if (login.code !== 0) throw new Error(`login failed: ${login.stderr}`);
  const gql = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
  site = dataOf(
    await gql.gql(a.apiKey, 'mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug name } }', {
      input: { deploySettings: { source: { ipfs: {} } } },
    }),
  ).createSite;
  target = `${site.slug}.${service.config.sites.domain.replace(/:\d+$/, '')}`;
}, 120_000);

afterAll(async () => {
  await cli?.cleanup();
  await service?.close();
  await dns?.close();
});

test('add prints the records to create; verify fails with the reason until DNS is right; ls, primary and rm', async () => {
  const added = await cli.run(['domains', 'add', site.name, 'WWW.Cli-Shop.test']);
  expect(added.code).toBe(0);
  expect(added.stdout).toContain('www.cli-shop.test: PENDING_DNS');
  expect(added.stdout).toContain(`  CNAME\twww.cli-shop.test\t${target}\n`);
  expect(added.stdout).toMatch(/ {2}TXT\t_cairn-challenge\.www\.cli-shop\.test\t[A-Za-z0-9_-]{24}\n/);

  const failed = await cli.run(['domains', 'verify', site.name, 'www.cli-shop.test']);
  expect(failed.code).not.toBe(0);
  expect(failed.stdout).toContain('www.cli-shop.test: FAILED');
  expect(failed.stderr).toContain('has no CNAME, A or AAAA records');

  await dns.setCname('www.cli-shop.test', target);
  const verified = await cli.run(['domains', 'verify', site.id, 'www.cli-shop.test']);
  expect([verified.code, verified.stdout]).toEqual([0, 'www.cli-shop.test: ACTIVE\n']);

  expect((await cli.run(['domains', 'add', site.name, 'cli-shop.test'])).stdout).toContain(`  A\tcli-shop.test\t127.0.0.1\n`);
  const listed = await cli.json<Array<{ domain: string; status: string; primary: boolean }>>(['domains', 'ls', site.name, '--json']);
  expect(listed.map((d) => [d.domain, d.status, d.primary])).toEqual([
    ['cli-shop.test', 'PENDING_DNS', false],
    ['www.cli-shop.test', 'ACTIVE', true],
  ]);
  const human = await cli.run(['domains', 'ls', site.name]);
  expect(human.stdout).toMatch(/^DOMAIN +STATUS +PRIMARY +CERTIFICATE UNTIL\n/);
  expect(human.stdout).toMatch(/www\.cli-shop\.test +ACTIVE +yes +-/);

  expect((await cli.run(['domains', 'primary', site.name, 'cli-shop.test'])).code).toBe(0);
  expect((await cli.json<Array<{ primary: boolean }>>(['domains', 'ls', site.name, '--json'])).map((d) => d.primary)).toEqual([
    true,
    false,
  ]);

  const removed = await cli.run(['domains', 'rm', site.name, 'www.cli-shop.test']);
  expect([removed.code, removed.stdout]).toEqual([0, `Removed www.cli-shop.test from ${site.name}: it is no longer served.\n`]);
  expect((await cli.json<unknown[]>(['domains', 'ls', site.name, '--json'])).length).toBe(1);
}, 120_000);

test("the API's refusals are printed as they are, with a non-zero exit", async () => {
  const bad = await cli.run(['domains', 'add', site.name, 'http://127.0.0.1/']);
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toContain('without a scheme');
  const missing = await cli.run(['domains', 'rm', site.name, 'never-added.test']);
  expect(missing.code).not.toBe(0);
  expect(missing.stderr).toMatch(/domain not found/);
  const noSite = await cli.run(['domains', 'ls', 'no-such-site']);
  expect(noSite.code).not.toBe(0);
}, 60_000);
