/**
 * Automatic HTTPS for sites' own domains, end to end against a real ACME
 * CA: Let's Encrypt's pebble (Debian's package), with pebble-challtestsrv
 * as the DNS both pebble and the service ask. Pebble checks each HTTP-01
 * challenge on the service's gateway port at the address DNS gives; the
 * certificate it issues is checked here against pebble's own root, as a
 * browser would check a public CA's. A site deployed from a git server is
 * served at https://www.example.test, example.test redirects to it, a
 * certificate whose expiry is brought near (its record moved, as time
 * would) is renewed, and removing the domain stops it being served.
 * Failure paths: a challenge the CA cannot reach (FAILED with the CA's
 * reason, then verifyDomain again), and an expired certificate whose
 * renewal fails. (Pebble enforces no rate limits, so the CA's
 * `rateLimited` error is not reproduced here: it is reported like any
 * other order failure.) Every wait is a poll with a deadline.
 */
import { request, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import { X509Certificate } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { freePort, startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { startTestCa, startTestDns, type TestCa, type TestDns } from '../support/acme-servers.js';

let service: TestService;
let dns: TestDns;
let ca: TestCa;
let git: GitServer;
let a: AccountFixture;
let client: ReturnType<typeof graphqlClient>;
let gatewayPort: number;
let httpsPort: number;
let sitesHost: string;
let root: string;

beforeAll(async () => {
  [dns, git] = await Promise.all([startTestDns(), startGitServer()]);
  gatewayPort = await freePort();
  httpsPort = await freePort();
  ca = await startTestCa(dns, gatewayPort);
  service = await startTestService({
    CAIRN_GC_INTERVAL: '0',
    CAIRN_BUILD_TIMEOUT: '60',
    CAIRN_GATEWAY_PORT: String(gatewayPort),
    CAIRN_HTTPS_PORT: String(httpsPort),
    CAIRN_DNS_RESOLVER: dns.address,
    CAIRN_DOMAIN_ADDRESSES: '127.0.0.1',
    CAIRN_ACME_DIRECTORY: ca.directoryUrl,
    CAIRN_ACME_CA_FILE: ca.caFile,
    CAIRN_ACME_EMAIL: 'hostmaster@example.test',
    CAIRN_ACME_CHECK_INTERVAL: '1',
  });
  a = await newAccount(service, 'acme');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
  sitesHost = service.config.sites.domain.replace(/:\d+$/, '');
  root = await ca.root();
}, 120_000);

afterAll(async () => {
  await service?.close();
  await ca?.close();
  await dns?.close();
  await git?.close();
});

const gql = async (query: string, variables: Record<string, unknown> = {}) => client.gql(a.apiKey, query, variables);
const DOMAIN = 'domain status reason primary certificateExpiresAt';

async function poll<T>(what: string, get: () => Promise<T>, done: (v: T) => boolean, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await get();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what} did not happen in ${ms} ms: ${JSON.stringify(value).slice(0, 1000)}\npebble:\n${ca.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  certificate?: X509Certificate;
}

/** A GET on the HTTPS listener as a browser trusting only pebble's root would make it (SNI `host`, the chain verified). */
function httpsGet(host: string, path = '/'): Promise<Answer> {
  const options: RequestOptions = {
    host: '127.0.0.1',
    port: httpsPort,
    path,
    servername: host,
    headers: { host: `${host}:${httpsPort}` },
    ca: root,
    agent: false,
  };
  return new Promise((resolve, reject) => {
    const req = request(options, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => {
        const peer = (res.socket as import('node:tls').TLSSocket).getPeerX509Certificate?.();
        resolve({ status: res.statusCode!, headers: res.headers, body, certificate: peer });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

function httpGet(host: string, path = '/'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port: gatewayPort, path, headers: { host: `${host}:${gatewayPort}` }, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    })
      .on('error', reject)
      .end();
  });
}

const domainsOf = async (siteId: string) =>
  dataOf(await gql(`query ($s: ID!) { getSiteById(siteId: $s) { domains { ${DOMAIN} } } }`, { s: siteId })).getSiteById.domains as Array<{
    domain: string;
    status: string;
    reason: string | null;
    certificateExpiresAt: string | null;
  }>;
const domainOf = async (siteId: string, name: string) => (await domainsOf(siteId)).find((d) => d.domain === name)!;
const add = async (siteId: string, name: string) =>
  dataOf(await gql(`mutation ($s: ID!, $d: String!) { addDomain(siteId: $s, domain: $d) { ${DOMAIN} } }`, { s: siteId, d: name }))
    .addDomain;
const verify = async (siteId: string, name: string) =>
  dataOf(await gql(`mutation ($s: ID!, $d: String!) { verifyDomain(siteId: $s, domain: $d) { ${DOMAIN} } }`, { s: siteId, d: name }))
    .verifyDomain;

/** Moves the kept certificate's expiry, as the passing of time would: the renewal check reads it from there. */
async function expireAt(name: string, when: Date): Promise<void> {
  const iso = when.toISOString();
  await service.services.db.doc.send(
    new UpdateCommand({
      TableName: service.config.tables.sites,
      Key: { pk: `DOMAIN#${name}`, sk: 'CERT' },
      UpdateExpression: 'SET notAfter = :n, gsi1sk = :s',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':n': iso, ':s': `${iso}#${name}` },
    }),
  );
}

let siteId: string;
let slug: string;

test('a site deployed from git is served at https://www.example.test with a certificate pebble issued; example.test and http:// redirect to it', async () => {
  const repo = 'acme/shop';
  await git.commit(repo, { 'index.html': '<h1>the shop</h1>', 'about.html': 'about us' }, 'the shop');
  const site = dataOf(
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
      input: { deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } } },
    }),
  ).createSite;
  siteId = site.id;
  slug = site.slug;
  const queued = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: siteId })).triggerDeploy;
  await poll(
    'the deploy',
    async () =>
      dataOf(
        await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status published } }', { s: siteId, d: queued.id }),
      ).getDeployById,
    (d) => d.status !== 'IN_PROGRESS' && d.status !== 'QUEUED' && d.status !== 'PENDING' && (d.status !== 'DEPLOYED' || d.published),
  );

  await dns.addA(`${slug}.${sitesHost}`, ['127.0.0.1']);
  await dns.setCname('www.example.test', `${slug}.${sitesHost}`);
  await dns.addA('example.test', ['127.0.0.1']);
  await add(siteId, 'www.example.test');
  await add(siteId, 'example.test');
  expect((await verify(siteId, 'www.example.test')).status).toBe('ISSUING_CERTIFICATE');
  expect((await verify(siteId, 'example.test')).status).toBe('ISSUING_CERTIFICATE');
  const [www, apex] = await Promise.all(
    ['www.example.test', 'example.test'].map((name) =>
      poll(
        `${name}'s certificate`,
        () => domainOf(siteId, name),
        (d) => d.status !== 'ISSUING_CERTIFICATE',
      ),
    ),
  );
  expect(www).toMatchObject({ status: 'ACTIVE', reason: null, certificateExpiresAt: expect.any(String) });
  expect(apex.status).toBe('ACTIVE');

  const home = await httpsGet('www.example.test');
  expect(home.status).toBe(200);
  expect(home.body).toBe('<h1>the shop</h1>');
  // Verified against pebble's root (the request would have failed otherwise), for this name.
  expect(home.certificate!.checkHost('www.example.test')).toBe('www.example.test');
  expect(home.certificate!.issuer).not.toContain('pebble test CA');
  expect(new Date(home.certificate!.validTo).toISOString()).toBe(www.certificateExpiresAt);

  const moved = await httpsGet('example.test', '/about.html?x=1');
  expect([moved.status, moved.headers.location]).toEqual([301, `https://www.example.test:${httpsPort}/about.html?x=1`]);
  const plain = await httpGet('www.example.test', '/about.html?y=2');
  expect([plain.status, plain.headers.location]).toEqual([301, `https://www.example.test:${httpsPort}/about.html?y=2`]);
  const plainApex = await httpGet('example.test', '/');
  expect([plainApex.status, plainApex.headers.location]).toEqual([301, `https://www.example.test:${httpsPort}/`]);

  // A name with no certificate gets no handshake.
  await expect(httpsGet('unknown.example.test')).rejects.toThrow();
  // The key is sealed where it is kept, and no API field carries it.
  const item = (
    await service.services.db.doc.send(
      new GetCommand({ TableName: service.config.tables.sites, Key: { pk: 'DOMAIN#www.example.test', sk: 'CERT' } }),
    )
  ).Item!;
  expect(item.privateKey).toMatch(/^v1\./);
  expect(JSON.stringify(item)).not.toContain('PRIVATE KEY');
  const account = (
    await service.services.db.doc.send(
      new GetCommand({ TableName: service.config.tables.sites, Key: { pk: `ACME#${ca.directoryUrl}`, sk: 'ACCOUNT' } }),
    )
  ).Item!;
  expect(account.key).toMatch(/^v1\./);
}, 180_000);

test('a certificate whose expiry comes within 30 days is renewed and the new one served', async () => {
  const before = (await httpsGet('www.example.test')).certificate!;
  await expireAt('www.example.test', new Date(Date.now() + 5 * 24 * 3600 * 1000));
  const renewed = await poll(
    'the renewal',
    async () => (await httpsGet('www.example.test')).certificate!,
    (c) => c.serialNumber !== before.serialNumber,
  );
  expect(renewed.checkHost('www.example.test')).toBe('www.example.test');
  const d = await domainOf(siteId, 'www.example.test');
  expect(d).toMatchObject({ status: 'ACTIVE', certificateExpiresAt: new Date(renewed.validTo).toISOString() });
}, 120_000);

test('a challenge the CA cannot reach fails the domain with its reason; verifyDomain tries again', async () => {
  const other = dataOf(
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
      input: { deploySettings: { source: { ipfs: {} } } },
    }),
  ).createSite;
  const target = `${other.slug}.${sitesHost}`;
  // The name points at the site (what the service checks), but its address is one nothing listens on (what the CA reaches).
  await dns.setCname('www.refused.test', target);
  await dns.addA(target, ['127.0.0.2']);
  await add(other.id, 'www.refused.test');
  expect((await verify(other.id, 'www.refused.test')).status).toBe('ISSUING_CERTIFICATE');
  const failed = await poll(
    'the failed order',
    () => domainOf(other.id, 'www.refused.test'),
    (d) => d.status !== 'ISSUING_CERTIFICATE',
  );
  expect(failed.status).toBe('FAILED');
  expect(failed.reason).toMatch(/^the certificate could not be issued: .*(connection refused|Connection refused|invalid)/is);
  await expect(httpsGet('www.refused.test')).rejects.toThrow();

  await dns.clearA(target);
  await dns.addA(target, ['127.0.0.1']);
  expect((await verify(other.id, 'www.refused.test')).status).toBe('ISSUING_CERTIFICATE');
  expect(
    (
      await poll(
        'the second order',
        () => domainOf(other.id, 'www.refused.test'),
        (d) => d.status !== 'ISSUING_CERTIFICATE',
      )
    ).status,
  ).toBe('ACTIVE');

  // Expired, and its renewal cannot pass the challenge: FAILED, saying so, and no longer served.
  await dns.clearA(target);
  await dns.addA(target, ['127.0.0.2']);
  await expireAt('www.refused.test', new Date(Date.now() - 1000));
  const expired = await poll(
    'the expiry',
    () => domainOf(other.id, 'www.refused.test'),
    (d) => d.status !== 'ACTIVE',
  );
  expect(expired.status).toBe('FAILED');
  expect(expired.reason).toMatch(/^the certificate expired and could not be renewed: .*connection refused/s);
  expect((await httpGet('www.refused.test')).status).toBe(404);
}, 180_000);

test('removing the domain stops serving it at once, over HTTPS and HTTP', async () => {
  expect((await httpsGet('www.example.test')).status).toBe(200);
  expect(
    dataOf(await gql('mutation ($s: ID!, $d: String!) { removeDomain(siteId: $s, domain: $d) }', { s: siteId, d: 'www.example.test' }))
      .removeDomain,
  ).toBe(true);
  await expect(httpsGet('www.example.test')).rejects.toThrow();
  expect((await httpGet('www.example.test')).status).toBe(404);
  // The apex, primary of nothing now, serves the site itself.
  const apex = await httpsGet('example.test');
  expect([apex.status, apex.body]).toEqual([200, '<h1>the shop</h1>']);
}, 60_000);
