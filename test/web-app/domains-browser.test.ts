/**
 * A site's Domains page in a real browser (Debian's Chromium through
 * playwright-core), against a local service whose domain verification asks
 * a real DNS server the test controls (pebble-challtestsrv, as
 * CAIRN_DNS_RESOLVER): an owner adds a domain (a malformed name refused on
 * the page by the API's rules, a duplicate by the API, its message the
 * page's notice), sees the exact records, copies one (read back from the
 * clipboard), verifies it (failing with the reason, then active once DNS
 * is right, and served by the gateway), adds the apex, makes it primary
 * (the other shown redirecting, and redirecting), and removes one after
 * confirming. A member of the team sees the domains and their records
 * without the controls. Each step is checked against the service too.
 * No console errors, no request to any other host.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { startTestDns, type TestDns } from '../support/acme-servers.js';
import { launchChromium, watchedPage } from '../support/browser.js';
import { accountNamed, dataOf, graphqlClient } from '../support/graphql.js';
import { hostFetch } from '../support/http.js';
import { startTestService, type TestService } from '../support/service.js';

let service: TestService;
let dns: TestDns;
let browser: Browser;
let origin: string;
let ownerKey: string;
let memberKey: string;
let site: { id: string; slug: string };
let target: string;
let gatewayPort: string;
let scratch: string;
const problems: string[] = [];
const apex = `shop-${process.pid}.test`;
const www = `www.${apex}`;

const api = () => graphqlClient({ name: 'node:http door', fetch: (u, i) => fetch(u, i as RequestInit) }, service.endpoints.graphql);
const gql = async (key: string, query: string, variables: Record<string, unknown> = {}) => dataOf(await api().gql(key, query, variables));
/** A GET on the gateway as a browser at `host` would send it. */
const at = (host: string, path = '/') =>
  hostFetch(`http://127.0.0.1:${gatewayPort}${path}`, { headers: { host: `${host}:${gatewayPort}` } });
const domainsOnService = async () =>
  (await service.services.domains.list(site.id)).map((d) => ({ domain: d.domain, status: d.status, primary: d.primary }));

/** The CID the site publishes: its primary domain's DNSLink record names it. */
let siteCid: string;

beforeAll(async () => {
  dns = await startTestDns();
  service = await startTestService({
    CAIRN_GC_INTERVAL: '0',
    CAIRN_PREVIEW: 'off',
    CAIRN_DNS_RESOLVER: dns.address,
    CAIRN_DOMAIN_ADDRESSES: '127.0.0.1,::1',
  });
  origin = new URL(service.endpoints.graphql).origin;
  gatewayPort = new URL(service.endpoints.gateway).port;
  const owner = await accountNamed(service, 'domain-owner');
  ownerKey = owner.apiKey;
  // A member of the owner's team, with a key of that team made by themselves.
  const member = await accountNamed(service, 'domain-member');
  await service.services.teams.addMember(owner.team.id, { id: member.account.id, name: 'domain-member' }, 'MEMBER');
  memberKey = (await gql(member.apiKey, 'mutation ($t: ID!) { createApiKey(teamId: $t) { key } }', { t: owner.team.id })).createApiKey.key;

  scratch = await mkdtemp(join(tmpdir(), 'cairn-domains-browser-'));
  await writeFile(join(scratch, 'index.html'), '<h1>the shop</h1>');
  const cid = (await importDirectory((await service.services.ipfs()).blockstore, scratch)).cid.toV1().toString();
  siteCid = cid;
  site = (
    await gql(ownerKey, 'mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
      input: { name: 'shop', deploySettings: { source: { ipfs: { cid } } } },
    })
  ).createSite;
  const deploy = (await gql(ownerKey, 'mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id })).triggerDeploy;
  for (const deadline = Date.now() + 60_000; ;) {
    const d = (
      await gql(ownerKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status published } }', {
        s: site.id,
        d: deploy.id,
      })
    ).getDeployById;
    if (d.published) break;
    if (Date.now() > deadline || d.status === 'FAILED') throw new Error(`the site's deploy did not publish: ${JSON.stringify(d)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  target = `${site.slug}.${service.config.sites.domain.replace(/:\d+$/, '')}`;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await dns?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

afterEach(() => {
  expect(problems).toEqual([]);
});

/** The site's Domains page in a context of its own, signed in with `key`, watched for errors and other hosts. */
async function domainsPage(key: string): Promise<{ context: BrowserContext; page: Page }> {
  const { context, page } = await watchedPage(browser, problems, { apiKey: key, clipboard: origin, hosts: [new URL(origin).host] });
  await page.goto(`${origin}/#/sites/${site.id}`);
  await page.getByRole('link', { name: 'Domains' }).click();
  await page.getByRole('heading', { name: 'Domains', level: 1 }).waitFor({ timeout: 30_000 });
  return { context, page };
}

const section = (page: Page, domain: string) => page.locator(`section[data-domain="${domain}"]`);
const notice = (page: Page) => page.locator('.action-notice [data-result]');

let owner: { context: BrowserContext; page: Page };

test('an owner adds a domain: a malformed name refused on the page, a duplicate by the API, then its exact records', async () => {
  owner = await domainsPage(ownerKey);
  const { page } = owner;
  await page.getByText('No domains yet.').waitFor();
  for (const [typed, why] of [
    ['https://www.example.test/', 'without a scheme, port, path or wildcard'],
    ['printer.local', 'names under .local cannot be a site'],
    [`${site.slug}.${service.config.sites.domain.replace(/:\d+$/, '')}`, 'names under .localhost'],
    ['com', 'at least two labels'],
  ]) {
    await page.getByLabel('Domain name').fill(typed);
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.locator('.field-error').getByText(why).waitFor();
  }
  expect(await domainsOnService()).toEqual([]);

  await page.getByLabel('Domain name').fill(` ${www.toUpperCase()}. `);
  await page.getByRole('button', { name: 'Add domain' }).click();
  await notice(page).getByText(`${www} is added: create the records shown, then verify it.`).waitFor();
  expect(await page.getByLabel('Domain name').inputValue()).toBe('');
  const records = section(page, www).locator('tbody tr');
  await records.first().waitFor();
  const shown = await records.evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent)));
  const stored = (await service.services.domains.get(site.id, www))!;
  // The primary domain's DNSLink record (its zone is not Cairn's here) carries the published root.
  expect(shown).toEqual([
    ['CNAME', www, target],
    ['TXT', `_dnslink.${www}`, `dnslink=/ipfs/${siteCid}`],
    ['TXT', `_cairn-challenge.${www}`, stored.token],
  ]);
  await section(page, www).locator('[data-status="PENDING_DNS"]').getByText('Pending DNS').waitFor();
  expect(await domainsOnService()).toEqual([{ domain: www, status: 'PENDING_DNS', primary: true }]);

  // The same name again: the API refuses it, and the page says what the API said.
  await page.getByLabel('Domain name').fill(www);
  await page.getByRole('button', { name: 'Add domain' }).click();
  await notice(page).getByText(`Adding ${www} failed: ${www} is already a domain of this site`).waitFor();

  // A record's value, copied.
  await section(page, www)
    .getByRole('button', { name: `Copy CNAME value for ${www}` })
    .click();
  await section(page, www)
    .getByRole('button', { name: /^Copied/ })
    .waitFor();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(target);
  await section(page, www)
    .getByRole('button', { name: `Copy TXT value for _cairn-challenge.${www}` })
    .click();
  await page.waitForFunction((token) => navigator.clipboard.readText().then((t) => t === token), stored.token);
});

test('verify: failing with the reason until DNS is right, then active and served', async () => {
  const { page } = owner;
  await section(page, www).getByRole('button', { name: 'Verify' }).click();
  await section(page, www).locator('[data-status="FAILED"]').waitFor();
  await section(page, www)
    .getByTestId('domain-reason')
    .getByText(`${www} has no CNAME, A or AAAA records: create the records shown`)
    .waitFor();
  expect((await at(www)).status).toBe(404);

  await dns.setCname(www, target);
  await section(page, www).getByRole('button', { name: 'Verify' }).click();
  await notice(page).getByText(`${www} is verified and served.`).waitFor();
  await section(page, www).locator('[data-status="ACTIVE"]').getByText('Active').waitFor();
  expect(await section(page, www).getByTestId('domain-reason').count()).toBe(0);
  expect(await domainsOnService()).toEqual([{ domain: www, status: 'ACTIVE', primary: true }]);
  const home = await at(www);
  expect([home.status, await home.text()]).toEqual([200, '<h1>the shop</h1>']);
});

test('the apex beside it: its records, verified, made primary; the other shown redirecting, and redirecting', async () => {
  const { page } = owner;
  await page.getByLabel('Domain name').fill(apex);
  await page.getByRole('button', { name: 'Add domain' }).click();
  await notice(page).getByText(`${apex} is added`).waitFor();
  await section(page, apex).locator('tbody tr').first().waitFor();
  const rows = await section(page, apex)
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((r) => [...r.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent)));
  expect(rows.slice(0, 2)).toEqual([
    ['A', apex, '127.0.0.1'],
    ['AAAA', apex, '::1'],
  ]);
  await dns.addA(apex, ['127.0.0.1']);
  await section(page, apex).getByRole('button', { name: 'Verify' }).click();
  await section(page, apex).locator('[data-status="ACTIVE"]').waitFor();
  await section(page, apex).getByTestId('domain-pair').getByText(`Redirects to ${www}, the primary`).waitFor();
  await section(page, www).getByTestId('domain-pair').getByText(`Primary: ${apex} redirects here`).waitFor();
  expect(await section(page, www).getByRole('button', { name: 'Make primary' }).count()).toBe(0);
  expect((await at(apex, '/x?y=1')).headers.get('location')).toBe(`http://${www}:${gatewayPort}/x?y=1`);

  await section(page, apex).getByRole('button', { name: 'Make primary' }).click();
  await notice(page).getByText(`${apex} is primary: ${www} redirects to it.`).waitFor();
  await section(page, www).getByTestId('domain-pair').getByText(`Redirects to ${apex}, the primary`).waitFor();
  expect(await domainsOnService()).toEqual([
    { domain: apex, status: 'ACTIVE', primary: true },
    { domain: www, status: 'ACTIVE', primary: false },
  ]);
  const moved = await at(www, '/a?b=2');
  expect([moved.status, moved.headers.get('location')]).toEqual([301, `http://${apex}:${gatewayPort}/a?b=2`]);
});

test('a member of the team sees the domains and their records, without the controls', async () => {
  const { context, page } = await domainsPage(memberKey);
  await section(page, www).locator('tbody tr').first().waitFor();
  await page.getByTestId('domains-read-only').waitFor();
  expect(await page.getByLabel('Domain name').count()).toBe(0);
  for (const name of ['Add domain', 'Verify', 'Make primary', 'Remove'])
    expect([name, await page.getByRole('button', { name, exact: true }).count()]).toEqual([name, 0]);
  expect(
    await section(page, apex)
      .getByRole('button', { name: `Copy A value for ${apex}` })
      .count(),
  ).toBe(1);
  await context.close();
});

test('remove, asked twice: the domain goes from the page and stops being served; at 375 px the page fits', async () => {
  const { page } = owner;
  await section(page, www).getByRole('button', { name: 'Remove', exact: true }).click();
  // Nothing is removed until it is confirmed.
  expect((await domainsOnService()).map((d) => d.domain)).toEqual([apex, www]);
  await section(page, www)
    .getByRole('button', { name: `Remove ${www}` })
    .click();
  await notice(page).getByText(`${www} is removed: it is no longer served.`).waitFor();
  await section(page, www).waitFor({ state: 'detached' });
  expect(await domainsOnService()).toEqual([{ domain: apex, status: 'ACTIVE', primary: true }]);
  expect(await service.services.domains.claimOf(www)).toBeUndefined();
  expect((await at(www)).status).toBe(404);
  expect(await (await at(apex)).text()).toBe('<h1>the shop</h1>');
  expect(await section(page, apex).getByTestId('domain-pair').count()).toBe(0);

  await page.setViewportSize({ width: 375, height: 800 });
  await page.waitForTimeout(100);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
  await owner.context.close();
});
