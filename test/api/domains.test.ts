/**
 * Sites' own domains through the GraphQL API and the gateway, with a real
 * DNS server (pebble-challtestsrv) as the service's resolver
 * (CAIRN_DNS_RESOLVER): names checked strictly, the records to create,
 * verification against what DNS answers (wrong records fail with the
 * reason, and verify again once they are right), one site per name (taking
 * one from another site needs its TXT proof), serving by Host with the
 * site's rules, apex/`www` redirects, purges and removal. No certificates
 * here (no ACME configured: a verified domain is ACTIVE at once); those
 * are test/system/domains-acme.test.ts's. The API itself (every mutation,
 * Site.domains, the owners-only rule, the per-team limit under a burst)
 * also goes through the GraphQL Lambda handler (its services built as in
 * AWS, over the same data), in the full run.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startTestService, type TestService } from '../support/service.js';
import { hostFetch } from '../support/http.js';
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
import { doorsFor } from '../support/test-set.js';
import { startTestDns, type TestDns } from '../support/acme-servers.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { normalizeDomain } from '../../functions/core/hosting/domain-names.js';

let service: TestService;
let dns: TestDns;
let a: AccountFixture;
let b: AccountFixture;
let client: ReturnType<typeof graphqlClient>;
let scratch: string;
let gatewayPort: string;
let sitesHost: string;
let graphqlLambda: LambdaFn;
const savedEnv = { ...process.env };
/** Each team's domains across its sites (CAIRN_DOMAINS_PER_TEAM here): the burst below runs into it. */
const PER_TEAM = 8;

beforeAll(async () => {
  dns = await startTestDns();
  service = await startTestService({
    CAIRN_GC_INTERVAL: '0',
    CAIRN_DNS_RESOLVER: dns.address,
    CAIRN_DOMAIN_ADDRESSES: '127.0.0.1,::1',
    CAIRN_DOMAINS_PER_SITE: '3',
    CAIRN_DOMAINS_PER_TEAM: String(PER_TEAM),
  });
  Object.assign(process.env, service.env);
  graphqlLambda = await importGraphqlLambda();
  [a, b] = [await newAccount(service, 'domains'), await newAccount(service, 'other')];
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
  scratch = await mkdtemp(join(tmpdir(), 'cairn-domains-'));
  gatewayPort = new URL(service.endpoints.gateway).port;
  sitesHost = service.config.sites.domain.replace(/:\d+$/, '');
});

afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  await dns?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const gql = async (query: string, variables: Record<string, unknown> = {}, key = a.apiKey) => client.gql(key, query, variables);
const DOMAIN = 'domain status reason primary dnsRecords { type name value } verifiedAt';

async function poll<T>(what: string, get: () => Promise<T>, done: (v: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await get();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${ms} ms: ${JSON.stringify(value).slice(0, 1000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let dirs = 0;
/** A site whose source is the CID of `files`, deployed and published. */
async function publishedSite(files: Record<string, string>, key = a.apiKey): Promise<{ id: string; slug: string }> {
  const dir = join(scratch, `site-${++dirs}`);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
  }
  const cid = (await importDirectory((await service.services.ipfs()).blockstore, dir)).cid.toV1().toString();
  const site = dataOf(
    await gql(
      'mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }',
      { input: { deploySettings: { source: { ipfs: { cid } } } } },
      key,
    ),
  ).createSite;
  const queued = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id }, key)).triggerDeploy;
  await poll(
    'the deploy',
    async () =>
      dataOf(
        await gql(
          'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status published } }',
          { s: site.id, d: queued.id },
          key,
        ),
      ).getDeployById,
    (d) => d.status === 'DEPLOYED' && d.published,
  );
  return site;
}

const add = (siteId: string, domain: string, key = a.apiKey) =>
  gql(`mutation ($s: ID!, $d: String!) { addDomain(siteId: $s, domain: $d) { ${DOMAIN} } }`, { s: siteId, d: domain }, key);
const verify = (siteId: string, domain: string, key = a.apiKey) =>
  gql(`mutation ($s: ID!, $d: String!) { verifyDomain(siteId: $s, domain: $d) { ${DOMAIN} } }`, { s: siteId, d: domain }, key);
const remove = (siteId: string, domain: string, key = a.apiKey) =>
  gql('mutation ($s: ID!, $d: String!) { removeDomain(siteId: $s, domain: $d) }', { s: siteId, d: domain }, key);
const domainsOf = async (siteId: string, key = a.apiKey) =>
  dataOf(await gql(`query ($s: ID!) { getSiteById(siteId: $s) { domains { ${DOMAIN} } } }`, { s: siteId }, key)).getSiteById.domains;
/** A GET on the gateway as a browser at `host` would send it. */
const at = (host: string, path = '/') =>
  hostFetch(`http://127.0.0.1:${gatewayPort}${path}`, { headers: { host: `${host}:${gatewayPort}` } });

let names = 0;
/** A fresh registrable name under .test for each test. */
const freshApex = () => `shop-${process.pid}-${++names}.test`;

test('names are checked strictly and kept in one form; each refusal says why', async () => {
  const site = await publishedSite({ 'index.html': 'x' });
  const refused: Array<[unknown, RegExp]> = [
    ['', /required/],
    ['localhost', /two labels|\.localhost/],
    ['printer.local', /\.local/],
    ['db.internal', /\.internal/],
    ['127.0.0.1', /IP address/],
    ['[::1]', /without a scheme|IP address/],
    ['1.2.3.4.5', /IP address|not a valid domain name/],
    ['https://example.test/', /without a scheme/],
    ['example.test:8443', /without a scheme/],
    ['*.example.test', /wildcard/],
    ['com', /two labels/],
    ['-bad.example.test', /not a valid label/],
    ['bad_.example.test', /not a valid|not a valid label/],
    [`${'a'.repeat(64)}.test`, /not a valid label/],
    [`${Array.from({ length: 60 }, () => 'abcd').join('.')}.test`, /at most 253/],
    ['x'.repeat(5000), /at most 253/],
    [`${site.slug}.${sitesHost}`, /service's own|\.localhost/],
    [sitesHost, /service's own|\.localhost/],
    [`deep.${site.slug}.${sitesHost}`, /service's own|\.localhost/],
  ];
  for (const [input, why] of refused) {
    const err = onlyError(await add(site.id, input as string));
    expect([input, err.extensions?.code]).toEqual([input, 'BAD_USER_INPUT']);
    expect(err.message).toMatch(why);
  }
  // Where the service's domains are public names, they and their subdomains are refused as its own.
  const publicConfig = { ...service.config, sites: { ...service.config.sites, domain: 'sites.example.com' } };
  publicConfig.urls = { ...service.config.urls, storagePublicDomain: 'storage.example.com', bucketEndpointDomain: 's3.example.com' };
  for (const own of ['sites.example.com', 'a.sites.example.com', 'b.storage.example.com', 's3.example.com'])
    expect(() => normalizeDomain(own, publicConfig)).toThrow(/service's own addresses/);
  expect(normalizeDomain('example.com', publicConfig)).toBe('example.com');
  // Case, a trailing dot and Unicode come out as the one ASCII form (UTS #46, as a browser maps them).
  expect(dataOf(await add(site.id, ' WWW.Example-Shop.TEST. ')).addDomain.domain).toBe('www.example-shop.test');
  expect(dataOf(await add(site.id, 'bücher.test')).addDomain.domain).toBe('xn--bcher-kva.test');
  // The same name twice on one site, and past the per-site limit (3 here).
  expect(onlyError(await add(site.id, 'www.example-shop.test')).message).toMatch(/already a domain of this site/);
  expect(dataOf(await add(site.id, 'third.test')).addDomain.status).toBe('PENDING_DNS');
  expect(onlyError(await add(site.id, 'fourth.test')).message).toMatch(/at most 3 domains/);
  expect((await domainsOf(site.id)).map((d: any) => d.domain).sort()).toEqual([
    'third.test',
    'www.example-shop.test',
    'xn--bcher-kva.test',
  ]);
  // Removing one frees a place; a removed one is gone.
  expect(dataOf(await remove(site.id, 'third.test')).removeDomain).toBe(true);
  expect(onlyError(await remove(site.id, 'third.test')).extensions?.code).toBe('NOT_FOUND');
  expect(dataOf(await add(site.id, 'fourth.test')).addDomain.domain).toBe('fourth.test');
});

test('another team can neither add, verify, list nor remove a site’s domains', async () => {
  const site = await publishedSite({ 'index.html': 'x' });
  const name = `www.${freshApex()}`;
  dataOf(await add(site.id, name));
  expect(onlyError(await add(site.id, `other.${name}`, b.apiKey)).extensions?.code).toBe('FORBIDDEN');
  expect(onlyError(await verify(site.id, name, b.apiKey)).extensions?.code).toBe('FORBIDDEN');
  expect(onlyError(await remove(site.id, name, b.apiKey)).extensions?.code).toBe('FORBIDDEN');
  expect(dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { id } }', { s: site.id }, b.apiKey)).getSiteById).toBeNull();
  expect((await domainsOf(site.id)).map((d: any) => d.domain)).toEqual([name]);
});

test('a subdomain: the CNAME to create, verification failing until DNS is right, then the site served by Host with its rules', async () => {
  const site = await publishedSite({
    'index.html': '<h1>shop</h1>',
    'about/index.html': 'about',
    '404.html': 'custom missing page',
    _redirects: '/old /about/ 301\n/app/* /index.html 200\n',
    _headers: '/*\n  X-Site: shop\n',
  });
  const name = `www.${freshApex()}`;
  const added = dataOf(await add(site.id, name)).addDomain;
  expect(added).toMatchObject({ domain: name, status: 'PENDING_DNS', reason: null, primary: true, verifiedAt: null });
  const target = `${site.slug}.${sitesHost}`;
  const txt = added.dnsRecords.find((r: any) => r.name.startsWith('_cairn-challenge.'));
  expect(added.dnsRecords).toEqual([
    { type: 'CNAME', name, value: target },
    // No zone of its is Cairn's to write: the published root's DNSLink record is shown (test/api/dnslink.test.ts).
    { type: 'TXT', name: `_dnslink.${name}`, value: expect.stringMatching(/^dnslink=\/ipfs\/bafy[a-z2-7]+$/) },
    { type: 'TXT', name: `_cairn-challenge.${name}`, value: expect.stringMatching(/^[A-Za-z0-9_-]{24}$/) },
  ]);
  // Not served before it is verified.
  expect((await at(name)).status).toBe(404);

  // No records at all, then a CNAME elsewhere: FAILED, each time saying why.
  let v = dataOf(await verify(site.id, name)).verifyDomain;
  expect(v.status).toBe('FAILED');
  expect(v.reason).toMatch(/no CNAME, A or AAAA records/);
  await dns.setCname(name, 'elsewhere.example.test');
  v = dataOf(await verify(site.id, name)).verifyDomain;
  expect(v).toMatchObject({ status: 'FAILED', reason: `${name} is a CNAME to elsewhere.example.test, not to ${target}` });
  expect((await at(name)).status).toBe(404);

  await dns.setCname(name, target);
  v = dataOf(await verify(site.id, name)).verifyDomain;
  expect(v).toMatchObject({ status: 'ACTIVE', reason: null, verifiedAt: expect.any(String) });
  expect(txt.value).toBe(v.dnsRecords.find((r: any) => r.name.startsWith('_cairn-challenge.')).value);

  const home = await at(name);
  expect(home.status).toBe(200);
  expect(await home.text()).toBe('<h1>shop</h1>');
  expect(home.headers.get('x-site')).toBe('shop');
  expect(home.headers.get('x-cache')).toBe('MISS');
  expect((await at(name)).headers.get('x-cache')).toBe('HIT');
  const old = await at(name, '/old?x=1');
  expect([old.status, old.headers.get('location')]).toEqual([301, '/about/?x=1']);
  expect(await (await at(name, '/app/deep/link')).text()).toBe('<h1>shop</h1>');
  const missing = await at(name, '/nothing');
  expect([missing.status, await missing.text()]).toEqual([404, 'custom missing page']);
  const dir = await at(name, '/about');
  expect([dir.status, dir.headers.get('location')]).toEqual([301, '/about/']);
  // Only GET and HEAD.
  expect((await hostFetch(`http://127.0.0.1:${gatewayPort}/`, { method: 'POST', headers: { host: name } })).status).toBe(405);

  // purgeCache of the site drops what its own domain answered too.
  expect(dataOf(await gql('mutation ($i: PurgeCacheInput!) { purgeCache(input: $i) }', { i: { siteId: site.id } })).purgeCache).toBe(true);
  expect((await at(name)).headers.get('x-cache')).toBe('MISS');

  // Removing it stops serving it at once, cached answers and all.
  expect((await at(name)).headers.get('x-cache')).toBe('HIT');
  expect(dataOf(await remove(site.id, name)).removeDomain).toBe(true);
  expect((await at(name)).status).toBe(404);
  expect(await domainsOf(site.id)).toEqual([]);
});

test('an apex and its www: A records, one primary, the other a 301 to it with path and query; setPrimaryDomain turns it round', async () => {
  const site = await publishedSite({ 'index.html': 'apex site', 'a/b.html': 'b' });
  const apex = freshApex();
  const www = `www.${apex}`;
  expect(dataOf(await add(site.id, www)).addDomain.primary).toBe(true);
  const added = dataOf(await add(site.id, apex)).addDomain;
  expect(added.primary).toBe(false);
  expect(added.dnsRecords.filter((r: any) => r.type !== 'TXT')).toEqual([
    { type: 'A', name: apex, value: '127.0.0.1' },
    { type: 'AAAA', name: apex, value: '::1' },
  ]);
  // An address that is not the gateway's fails, naming it.
  await dns.addA(apex, ['192.0.2.7']);
  expect(dataOf(await verify(site.id, apex)).verifyDomain.reason).toMatch(/resolves to 192\.0\.2\.7, which is not this service/);
  await dns.clearA(apex);
  await dns.addA(apex, ['127.0.0.1']);
  await dns.setCname(www, `${site.slug}.${sitesHost}`);
  expect(dataOf(await verify(site.id, apex)).verifyDomain.status).toBe('ACTIVE');
  expect(dataOf(await verify(site.id, www)).verifyDomain.status).toBe('ACTIVE');

  const moved = await at(apex, '/a/b.html?q=1&r=2');
  expect(moved.status).toBe(301);
  expect(moved.headers.get('location')).toBe(`http://${www}:${gatewayPort}/a/b.html?q=1&r=2`);
  expect(await (await at(www, '/a/b.html')).text()).toBe('b');

  const primary = dataOf(
    await gql(`mutation ($s: ID!, $d: String!) { setPrimaryDomain(siteId: $s, domain: $d) { ${DOMAIN} } }`, { s: site.id, d: apex }),
  ).setPrimaryDomain;
  expect(primary.primary).toBe(true);
  expect((await domainsOf(site.id)).map((d: any) => [d.domain, d.primary])).toEqual([
    [apex, true],
    [www, false],
  ]);
  const back = await at(www, '/?z');
  expect([back.status, back.headers.get('location')]).toEqual([301, `http://${apex}:${gatewayPort}/?z`]);
  expect(await (await at(apex)).text()).toBe('apex site');
});

test('a name another site serves is taken only with the TXT proof; the other site stops serving it', async () => {
  const first = await publishedSite({ 'index.html': 'first' });
  const second = await publishedSite({ 'index.html': 'second' }, b.apiKey);
  const name = `www.${freshApex()}`;
  dataOf(await add(first.id, name));
  await dns.setCname(name, `${first.slug}.${sitesHost}`);
  expect(dataOf(await verify(first.id, name)).verifyDomain.status).toBe('ACTIVE');
  expect(await (await at(name)).text()).toBe('first');

  // Another team points the name at its own site: without the proof the first keeps it.
  const theirs = dataOf(await add(second.id, name, b.apiKey)).addDomain;
  await dns.setCname(name, `${second.slug}.${sitesHost}`);
  const refused = dataOf(await verify(second.id, name, b.apiKey)).verifyDomain;
  expect(refused.status).toBe('FAILED');
  expect(refused.reason).toContain(`create the TXT record _cairn-challenge.${name} with the value ${theirs.dnsRecords.at(-1).value}`);
  // The first site's token does not prove it for the second.
  const mine = (await domainsOf(first.id))[0].dnsRecords.at(-1).value;
  await dns.setTxt(`_cairn-challenge.${name}`, mine);
  expect(dataOf(await verify(second.id, name, b.apiKey)).verifyDomain.status).toBe('FAILED');
  expect(await (await at(name)).text()).toBe('first');

  await dns.clearTxt(`_cairn-challenge.${name}`);
  await dns.setTxt(`_cairn-challenge.${name}`, theirs.dnsRecords.at(-1).value);
  expect(dataOf(await verify(second.id, name, b.apiKey)).verifyDomain.status).toBe('ACTIVE');
  expect(await (await at(name)).text()).toBe('second');
  const lost = (await domainsOf(first.id))[0];
  expect(lost.status).toBe('FAILED');
  expect(lost.reason).toMatch(/another site proved it owns this domain/);
  // The first site removing its (lost) record does not take the name from the second.
  expect(dataOf(await remove(first.id, name)).removeDomain).toBe(true);
  expect(await (await at(name)).text()).toBe('second');
  await dns.clearTxt(`_cairn-challenge.${name}`);
});

test('a claim never moves a name another site holds unless it names that holder (a verification racing another)', async () => {
  const [one, two] = [await publishedSite({ 'index.html': '1' }), await publishedSite({ 'index.html': '2' }, b.apiKey)];
  const name = `www.${freshApex()}`;
  dataOf(await add(one.id, name));
  dataOf(await add(two.id, name, b.apiKey));
  const store = service.services.domains;
  // As when both verifications read "nobody holds it" and then write: the second write fails.
  expect(await store.claim(one.id, name, 'ACTIVE')).toBe(true);
  expect(await store.claim(two.id, name, 'ACTIVE')).toBe(false);
  expect(await store.claimOf(name)).toEqual({ domain: name, siteId: one.id });
  // Naming the holder (its TXT proof checked) moves it.
  expect(await store.claim(two.id, name, 'ACTIVE', { siteId: one.id, hasDomain: true })).toBe(true);
  expect(await store.claimOf(name)).toEqual({ domain: name, siteId: two.id });
  expect((await store.get(one.id, name))?.status).toBe('FAILED');
  expect(dataOf(await remove(one.id, name)).removeDomain).toBe(true);
  expect(dataOf(await remove(two.id, name, b.apiKey)).removeDomain).toBe(true);
});

test('deleting a site frees its domains for another site', async () => {
  const site = await publishedSite({ 'index.html': 'gone soon' });
  const name = `www.${freshApex()}`;
  dataOf(await add(site.id, name));
  await dns.setCname(name, `${site.slug}.${sitesHost}`);
  expect(dataOf(await verify(site.id, name)).verifyDomain.status).toBe('ACTIVE');
  expect(dataOf(await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: site.id })).deleteSite).toBe(true);
  expect((await at(name)).status).toBe(404);
  expect(await service.services.domains.claimOf(name)).toBeUndefined();
  const next = await publishedSite({ 'index.html': 'next' }, b.apiKey);
  dataOf(await add(next.id, name, b.apiKey));
  await dns.setCname(name, `${next.slug}.${sitesHost}`);
  // No proof needed: nobody holds it.
  expect(dataOf(await verify(next.id, name, b.apiKey)).verifyDomain.status).toBe('ACTIVE');
  expect(await (await at(name)).text()).toBe('next');
});

test('hostile Host headers and ACME paths on the gateway answer as for any unknown host, never 500', async () => {
  for (const host of ['x'.repeat(10_000), 'a..b.test', '%00.test', 'bad_host.test', 'WWW.UNKNOWN.TEST.', '[::1]', '999.999.999.999']) {
    const res = await hostFetch(`http://127.0.0.1:${gatewayPort}/index.html`, { headers: { host } }).catch((err: Error) => err);
    if (res instanceof Error) continue; // (a header Node's client refuses to send)
    expect([host.slice(0, 20), res.status]).toEqual([host.slice(0, 20), 404]);
  }
  const challenge = await hostFetch(`http://127.0.0.1:${gatewayPort}/.well-known/acme-challenge/abc`, {
    headers: { host: 'www.unknown.test' },
  });
  expect(challenge.status).toBe(404);
});

describe.each(doorsFor(graphqlDoors(() => graphqlLambda)))('the domain API through the $name', (door) => {
  let owner: AccountFixture;
  let other: AccountFixture;
  let api: ReturnType<typeof graphqlClient>;
  beforeAll(async () => {
    api = graphqlClient(door, service.endpoints.graphql);
    [owner, other] = [await newAccount(service, 'door-owner'), await newAccount(service, 'door-other')];
  });
  const call = (key: string, field: string, siteId: string, domain: string, select = ` { ${DOMAIN} }`) =>
    api.gql(key, `mutation ($s: ID!, $d: String!) { ${field}(siteId: $s, domain: $d)${select} }`, { s: siteId, d: domain });
  const listed = async (siteId: string, key = owner.apiKey) =>
    dataOf(await api.gql(key, `query ($s: ID!) { getSiteById(siteId: $s) { domains { ${DOMAIN} } } }`, { s: siteId })).getSiteById.domains;
  /** A site of the team that deploys a CID (nothing published: the API needs no more). */
  let cid: string | undefined;
  const bareSite = async (key: string): Promise<{ id: string; slug: string }> => {
    if (!cid) {
      const dir = join(scratch, `bare-${++dirs}`);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'index.html'), 'bare');
      cid = (await importDirectory((await service.services.ipfs()).blockstore, dir)).cid.toV1().toString();
    }
    return dataOf(
      await api.gql(key, 'mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
        input: { deploySettings: { source: { ipfs: { cid } } } },
      }),
    ).createSite;
  };

  test('add, Site.domains, verify (failing, then right), make primary, remove', async () => {
    const site = await publishedSite({ 'index.html': `through the ${door.name}` }, owner.apiKey);
    const apex = freshApex();
    const www = `www.${apex}`;
    const target = `${site.slug}.${sitesHost}`;
    const added = dataOf(await call(owner.apiKey, 'addDomain', site.id, www)).addDomain;
    expect(added).toMatchObject({ domain: www, status: 'PENDING_DNS', primary: true });
    expect(added.dnsRecords[0]).toEqual({ type: 'CNAME', name: www, value: target });
    expect(dataOf(await call(owner.apiKey, 'addDomain', site.id, apex)).addDomain.primary).toBe(false);
    expect((await listed(site.id)).map((d: any) => [d.domain, d.status])).toEqual([
      [apex, 'PENDING_DNS'],
      [www, 'PENDING_DNS'],
    ]);
    expect(onlyError(await call(owner.apiKey, 'addDomain', site.id, 'https://x.test/')).extensions.code).toBe('BAD_USER_INPUT');

    const failed = dataOf(await call(owner.apiKey, 'verifyDomain', site.id, www)).verifyDomain;
    expect([failed.status, failed.reason]).toEqual(['FAILED', `${www} has no CNAME, A or AAAA records: create the records shown`]);
    await dns.setCname(www, target);
    await dns.addA(apex, ['127.0.0.1']);
    expect(dataOf(await call(owner.apiKey, 'verifyDomain', site.id, www)).verifyDomain.status).toBe('ACTIVE');
    expect(dataOf(await call(owner.apiKey, 'verifyDomain', site.id, apex)).verifyDomain.status).toBe('ACTIVE');
    expect(await (await at(www)).text()).toBe(`through the ${door.name}`);
    expect((await at(apex, '/?a=1')).headers.get('location')).toBe(`http://${www}:${gatewayPort}/?a=1`);

    expect(dataOf(await call(owner.apiKey, 'setPrimaryDomain', site.id, apex)).setPrimaryDomain.primary).toBe(true);
    expect((await listed(site.id)).map((d: any) => [d.domain, d.primary])).toEqual([
      [apex, true],
      [www, false],
    ]);
    expect(dataOf(await call(owner.apiKey, 'removeDomain', site.id, www, '')).removeDomain).toBe(true);
    expect(onlyError(await call(owner.apiKey, 'removeDomain', site.id, www, '')).extensions.code).toBe('NOT_FOUND');
    expect(await service.services.domains.claimOf(www)).toBeUndefined();
    expect((await listed(site.id)).map((d: any) => d.domain)).toEqual([apex]);
    expect(onlyError(await call(other.apiKey, 'removeDomain', site.id, apex, '')).extensions.code).toBe('FORBIDDEN');
    await dns.clearCname(www);
    await dns.clearA(apex);
  });

  test("only the team's owners change domains; a member sees them, with their records", async () => {
    const team = await newAccount(service, 'door-team');
    const member = await newAccount(service, 'door-member');
    const site = await bareSite(team.apiKey);
    await service.services.teams.addMember(team.team.id, member.account, 'MEMBER');
    const memberKey = dataOf(await api.gql(member.apiKey, 'mutation ($t: ID!) { createApiKey(teamId: $t) { key } }', { t: team.team.id }))
      .createApiKey.key;
    const name = `www.${freshApex()}`;
    dataOf(await call(team.apiKey, 'addDomain', site.id, name));
    for (const [field, select] of [
      ['addDomain', ` { ${DOMAIN} }`],
      ['verifyDomain', ` { ${DOMAIN} }`],
      ['setPrimaryDomain', ` { ${DOMAIN} }`],
      ['removeDomain', ''],
    ] as const) {
      const err = onlyError(await call(memberKey, field, site.id, field === 'addDomain' ? `m.${name}` : name, select));
      expect([field, err.extensions.code, err.message]).toEqual([field, 'FORBIDDEN', expect.stringMatching(/^Only the team's owners can/)]);
    }
    const seen = await listed(site.id, memberKey);
    expect(seen.map((d: any) => [d.domain, d.status, d.dnsRecords.length])).toEqual([[name, 'PENDING_DNS', 2]]);
    // Made an owner, the same key may.
    await service.services.teams.setMemberRole(team.team.id, member.account.id, 'OWNER');
    expect(dataOf(await call(memberKey, 'removeDomain', site.id, name, '')).removeDomain).toBe(true);
  });

  test(`a burst of adds across a team's sites stops at the team's limit (${PER_TEAM}), exactly`, async () => {
    const team = await newAccount(service, 'door-burst');
    const sites = await Promise.all([1, 2, 3, 4].map(() => bareSite(team.apiKey)));
    const base = freshApex();
    // 4 sites x 3 (each site's limit) = 12 asked for at once: 8 may be had.
    const tries = sites.flatMap((s, i) => [1, 2, 3].map((j) => ({ siteId: s.id, domain: `d${j}.s${i}.${base}` })));
    const results = await Promise.all(tries.map((t) => call(team.apiKey, 'addDomain', t.siteId, t.domain, ' { domain }')));
    const made = results.filter((r) => !r.errors);
    const refused = results.filter((r) => r.errors);
    expect(made).toHaveLength(PER_TEAM);
    expect(refused.map((r) => [onlyError(r).extensions.code, onlyError(r).message])).toEqual(
      Array.from({ length: tries.length - PER_TEAM }, () => [
        'BAD_USER_INPUT',
        `a team has at most ${PER_TEAM} domains across its sites; remove one first`,
      ]),
    );
    const bySite = await Promise.all(sites.map(async (s) => ({ site: s, domains: await listed(s.id, team.apiKey) })));
    expect(bySite.flatMap((x) => x.domains)).toHaveLength(PER_TEAM);
    // Another team is not counted with this one.
    const theirs = await bareSite(other.apiKey);
    expect(dataOf(await call(other.apiKey, 'addDomain', theirs.id, `x.${base}`, ' { domain }')).addDomain.domain).toBe(`x.${base}`);
    expect(dataOf(await call(other.apiKey, 'removeDomain', theirs.id, `x.${base}`, '')).removeDomain).toBe(true);

    // A removal frees one place; deleting a site frees all of its.
    const spare = await bareSite(team.apiKey);
    expect(onlyError(await call(team.apiKey, 'addDomain', spare.id, `e1.${base}`, ' { domain }')).message).toMatch(/a team has at most/);
    const holding = bySite.filter((x) => x.domains.length > 0);
    const first = holding[0]!;
    expect(dataOf(await call(team.apiKey, 'removeDomain', first.site.id, first.domains[0].domain, '')).removeDomain).toBe(true);
    expect(dataOf(await call(team.apiKey, 'addDomain', spare.id, `e1.${base}`, ' { domain }')).addDomain.domain).toBe(`e1.${base}`);
    expect(onlyError(await call(team.apiKey, 'addDomain', spare.id, `e2.${base}`, ' { domain }')).message).toMatch(/a team has at most/);
    const second = holding[1]!;
    expect(dataOf(await api.gql(team.apiKey, 'mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: second.site.id })).deleteSite).toBe(
      true,
    );
    const refill = await bareSite(team.apiKey);
    for (let i = 0; i < second.domains.length; i++)
      expect(dataOf(await call(team.apiKey, 'addDomain', refill.id, `f${i}.${base}`, ' { domain }')).addDomain.domain).toBe(
        `f${i}.${base}`,
      );
    expect(onlyError(await call(team.apiKey, 'addDomain', spare.id, `g.${base}`, ' { domain }')).message).toMatch(/a team has at most/);
  });
});
