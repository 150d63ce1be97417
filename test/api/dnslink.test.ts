/**
 * DNSLink records of sites' domains, written by RFC 2136 updates signed
 * with TSIG to a real DNS server (Debian's knot, started here on a free
 * port) and read back with plain DNS queries: a verified primary domain's
 * `_dnslink` carries the published root, every publish (a new deploy, a
 * rollback) moves it, removing the domain removes it; a write the server
 * cannot take never fails the publish and is retried by the scheduled
 * work; a wrong key is refused and writes nothing; a domain outside the
 * zones is shown the record to create.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { startKnot, type KnotServer } from '../support/knot-server.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { loadConfig, TsigKey } from '../../functions/core/config.js';
import { Rfc2136DnsLinkZone } from '../../functions/adapters/rfc2136-dnslink-zone.js';
import { retryDnsLinks } from '../../functions/core/hosting/dnslink.js';

const ZONE = 'dnslink.test';
/** Names with addresses in the zone (the gateway's, so verification passes). */
const NAMES = ['a', 'b', 'c', 'd'].map((l) => `${l}.${ZONE}`);

let service: TestService;
let knot: KnotServer;
let owner: AccountFixture;
let client: ReturnType<typeof graphqlClient>;
let scratch: string;

beforeAll(async () => {
  knot = await startKnot(
    [ZONE],
    NAMES.map((n) => `${n}. 300 IN A 127.0.0.1`),
  );
  service = await startTestService({
    CAIRN_GC_INTERVAL: '0',
    CAIRN_DNS_RESOLVER: knot.address,
    CAIRN_DOMAIN_ADDRESSES: '127.0.0.1',
    CAIRN_DNSLINK_SERVER: knot.address,
    CAIRN_DNSLINK_ZONES: ZONE,
    CAIRN_DNSLINK_TSIG: knot.tsig,
  });
  owner = await newAccount(service, 'dnslink');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
  scratch = await mkdtemp(join(tmpdir(), 'cairn-dnslink-'));
});

afterAll(async () => {
  await service?.close();
  await knot?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const gql = async (query: string, variables: Record<string, unknown> = {}) => client.gql(owner.apiKey, query, variables);

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
/** The CIDv1 of a directory of `files`, imported into the service's node. */
async function contentCid(files: Record<string, string>): Promise<string> {
  const dir = join(scratch, `content-${++dirs}`);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
  }
  return (await importDirectory((await service.services.ipfs()).blockstore, dir)).cid.toV1().toString();
}

/** Deploys the site's CID source and waits for it to be published; the deploy's id. */
async function deployed(siteId: string): Promise<string> {
  const queued = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: siteId })).triggerDeploy;
  await poll(
    'the deploy',
    async () =>
      dataOf(
        await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status published } }', {
          s: siteId,
          d: queued.id,
        }),
      ).getDeployById,
    (d) => d.status === 'DEPLOYED' && d.published,
  );
  return queued.id;
}

async function siteOf(cid: string): Promise<{ id: string; slug: string }> {
  return dataOf(
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
      input: { deploySettings: { source: { ipfs: { cid } } } },
    }),
  ).createSite;
}

const setSource = (siteId: string, cid: string) =>
  gql('mutation ($s: ID!, $i: UpdateSiteInput!) { updateSite(siteId: $s, input: $i) { id } }', {
    s: siteId,
    i: { deploySettings: { source: { ipfs: { cid } } } },
  });

const DOMAIN = 'domain status reason primary dnsRecords { type name value }';
const addAndVerify = async (siteId: string, domain: string) => {
  dataOf(await gql(`mutation ($s: ID!, $d: String!) { addDomain(siteId: $s, domain: $d) { ${DOMAIN} } }`, { s: siteId, d: domain }));
  return dataOf(
    await gql(`mutation ($s: ID!, $d: String!) { verifyDomain(siteId: $s, domain: $d) { ${DOMAIN} } }`, { s: siteId, d: domain }),
  ).verifyDomain;
};

test('a verified domain carries the published root; each publish moves it, a rollback too; removing the domain removes it', async () => {
  const [first, second] = [await contentCid({ 'index.html': 'one' }), await contentCid({ 'index.html': 'two' })];
  const site = await siteOf(first);
  const firstDeploy = await deployed(site.id);
  const domain = NAMES[0]!;
  expect(await knot.txt(`_dnslink.${domain}`)).toEqual([]);

  const verified = await addAndVerify(site.id, domain);
  expect(verified.status).toBe('ACTIVE');
  // The zone is Cairn's to write: no DNSLink record for the owner to create.
  expect(verified.dnsRecords.some((r: { name: string }) => r.name.startsWith('_dnslink.'))).toBe(false);
  expect(await knot.txt(`_dnslink.${domain}`)).toEqual([`dnslink=/ipfs/${first}`]);

  await setSource(site.id, second);
  await deployed(site.id);
  // The deploy is published before its announce step (which writes the record) has run.
  await poll(
    'the record moved',
    () => knot.txt(`_dnslink.${domain}`),
    (v) => v[0] === `dnslink=/ipfs/${second}` && v.length === 1,
  );

  // A rollback is a publish too.
  dataOf(await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: firstDeploy }));
  expect(await knot.txt(`_dnslink.${domain}`)).toEqual([`dnslink=/ipfs/${first}`]);

  expect(dataOf(await gql('mutation ($s: ID!, $d: String!) { removeDomain(siteId: $s, domain: $d) }', { s: site.id, d: domain }))).toEqual({
    removeDomain: true,
  });
  expect(await knot.txt(`_dnslink.${domain}`)).toEqual([]);
  expect(knot.output()).not.toMatch(/DDNS.*(failed|denied)/i);
}, 120_000);

test('a deleted site takes its records with it', async () => {
  const cid = await contentCid({ 'index.html': 'pair' });
  const site = await siteOf(cid);
  await deployed(site.id);
  const primary = NAMES[1]!;
  await addAndVerify(site.id, primary);
  expect(await knot.txt(`_dnslink.${primary}`)).toEqual([`dnslink=/ipfs/${cid}`]);
  dataOf(await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: site.id }));
  await poll(
    'the record removed',
    () => knot.txt(`_dnslink.${primary}`),
    (v) => v.length === 0,
  );
}, 120_000);

test('a domain outside the zones is shown its DNSLink record, current with the last publish', async () => {
  const [first, second] = [await contentCid({ 'index.html': 'shown 1' }), await contentCid({ 'index.html': 'shown 2' })];
  const site = await siteOf(first);
  await deployed(site.id);
  const outside = `shop-${process.pid}.elsewhere.test`;
  const added = dataOf(
    await gql(`mutation ($s: ID!, $d: String!) { addDomain(siteId: $s, domain: $d) { ${DOMAIN} } }`, { s: site.id, d: outside }),
  ).addDomain;
  expect(added.dnsRecords).toContainEqual({ type: 'TXT', name: `_dnslink.${outside}`, value: `dnslink=/ipfs/${first}` });
  await setSource(site.id, second);
  await deployed(site.id);
  const after = dataOf(await gql(`query ($s: ID!) { getSiteById(siteId: $s) { domains { ${DOMAIN} } } }`, { s: site.id })).getSiteById
    .domains[0];
  expect(after.dnsRecords).toContainEqual({ type: 'TXT', name: `_dnslink.${outside}`, value: `dnslink=/ipfs/${second}` });
  expect(after.dnsRecords.filter((r: { name: string }) => r.name.startsWith('_dnslink.'))).toHaveLength(1);
  // Nothing was written for it.
  expect(knot.output()).not.toContain(outside);
}, 120_000);

test('a server that does not answer never fails the publish; the scheduled work writes the record once it answers', async () => {
  const [first, second] = [await contentCid({ 'index.html': 'retry 1' }), await contentCid({ 'index.html': 'retry 2' })];
  const site = await siteOf(first);
  await deployed(site.id);
  const domain = NAMES[2]!;
  await addAndVerify(site.id, domain);
  expect(await knot.txt(`_dnslink.${domain}`)).toEqual([`dnslink=/ipfs/${first}`]);

  await knot.stop();
  try {
    await setSource(site.id, second);
    await deployed(site.id);
    const due = await poll(
      'the retry marked',
      () => service.services.domains.dnsLinkRetriesDue(new Date(Date.now() + 3600_000), 100),
      (v) => v.some((d) => d.domain === domain),
    );
    expect(due).toContainEqual({ domain, attempt: 1 });
    // Not due yet: nothing is tried before its time.
    expect(await service.services.domains.dnsLinkRetriesDue(new Date(Date.now() - 1000), 100)).not.toContainEqual(
      expect.objectContaining({ domain }),
    );
  } finally {
    await knot.start();
  }
  // The server came back without what updates wrote (its zone from the file): the retry writes the current root.
  expect(await knot.txt(`_dnslink.${domain}`)).toEqual([]);
  expect(await retryDnsLinks(service.services, new Date(Date.now() + 3600_000))).toBeGreaterThanOrEqual(1);
  expect(await knot.txt(`_dnslink.${domain}`)).toEqual([`dnslink=/ipfs/${second}`]);
  expect(await service.services.domains.dnsLinkRetriesDue(new Date(Date.now() + 3600_000), 100)).not.toContainEqual(
    expect.objectContaining({ domain }),
  );
}, 120_000);

test('an update signed with a wrong key, or a key the server does not know, is refused and writes nothing', async () => {
  const domain = NAMES[3]!;
  const [keyName] = knot.tsig.split(':') as [string];
  const server = { host: '127.0.0.1', port: Number(knot.address.split(':')[1]) };
  const wrongSecret = new Rfc2136DnsLinkZone(server, [ZONE], new TsigKey(keyName, 'hmac-sha256', randomBytes(32)));
  await expect(wrongSecret.set(domain, '/ipfs/bafkqaaa')).rejects.toThrow(/refused .*NOTAUTH, TSIG BADSIG/);
  const unknownKey = new Rfc2136DnsLinkZone(server, [ZONE], new TsigKey('stranger-key', 'hmac-sha256', randomBytes(32)));
  await expect(unknownKey.set(domain, '/ipfs/bafkqaaa')).rejects.toThrow(/refused .*NOTAUTH, TSIG BADKEY/);
  await expect(unknownKey.remove(NAMES[0]!)).rejects.toThrow(/refused/);
  expect(await knot.txt(`_dnslink.${domain}`)).toEqual([]);
  // A name in no configured zone is not sent at all.
  await expect(wrongSecret.set('shop.elsewhere.test', '/ipfs/bafkqaaa')).rejects.toThrow(/none of the zones/);
});

test('the TSIG secret is in no JSON, inspection or message of the configuration', () => {
  const secret = randomBytes(32).toString('base64');
  const config = loadConfig({
    CAIRN_DNSLINK_SERVER: '127.0.0.1:53',
    CAIRN_DNSLINK_ZONES: 'example.com,Example.org.=Z0123456789ABC',
    CAIRN_DNSLINK_TSIG: `cairn-key:hmac-sha256:${secret}`,
  });
  expect(config.domains.dnslink.zones).toEqual(['example.com', 'example.org']);
  expect(config.domains.dnslink.hostedZoneIds).toEqual({ 'example.org': 'Z0123456789ABC' });
  expect(JSON.stringify(config)).not.toContain(secret);
  expect(inspect(config, { depth: 10, showHidden: true })).not.toContain(secret);
  const refused = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('accepted');
  };
  const short = refused({ CAIRN_DNSLINK_TSIG: `k:hmac-sha256:${randomBytes(8).toString('base64')}` });
  expect(short).toMatch(/CAIRN_DNSLINK_TSIG: the secret must be at least 16 bytes/);
  const md5 = refused({ CAIRN_DNSLINK_TSIG: `k:hmac-md5:${secret}` });
  expect(md5).toMatch(/CAIRN_DNSLINK_TSIG: must be name:algorithm/);
  expect(md5).not.toContain(secret);
  expect(refused({ CAIRN_DNSLINK_SERVER: '127.0.0.1:53', CAIRN_DNSLINK_ZONES: 'example.com' })).toMatch(/needs CAIRN_DNSLINK_TSIG/);
  expect(refused({ CAIRN_DNSLINK_SERVER: 'dns.example.com:53' })).toMatch(/CAIRN_DNSLINK_SERVER: must be an IP address and port/);
  expect(refused({ CAIRN_DNSLINK_ZONES: 'exa mple.com' })).toMatch(/CAIRN_DNSLINK_ZONES/);
  expect(refused({ CAIRN_DNSLINK_ZONES: 'example.com=not-an-id' })).toMatch(/hosted zone id/);
});
