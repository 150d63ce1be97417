/**
 * A site's IPNS name, end to end: real deploys through the pipeline (a
 * CID-sourced site, through the GraphQL API), then `/ipns/<name>/` on the
 * gateway serving the published files, the signed record by
 * `?format=ipns-record`, Accept and the Delegated Routing V1 API, each
 * checked with the `ipns` package and Helia's delegated routing client
 * rather than Cairn's own code; a second publish moving the name with a
 * higher sequence; records signed by the test's own key PUT and served;
 * tampered, oversized, older and misnamed records, malformed names and a
 * flood of PUTs refused; the tick's republish signing the record again.
 * Through the gateway's node:http server and its
 * Lambda handler (doorsFor: the full run takes both).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { generateKeyPair, privateKeyFromProtobuf } from '@libp2p/crypto/keys';
import { peerIdFromString } from '@libp2p/peer-id';
import { delegatedRoutingV1HttpApiClient } from '@helia/delegated-routing-v1-http-api-client';
import { defaultLogger } from '@libp2p/logger';
import { createIPNSRecord, marshalIPNSRecord, unmarshalIPNSRecord } from 'ipns';
import { ipnsValidator } from 'ipns/validator';
import { CID } from 'multiformats/cid';
import { base36 } from 'multiformats/bases/base36';
import { startTestService, type TestService } from '../support/service.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { parseIpnsName } from '../../functions/core/ipfs/ipns.js';
import { IPNS_PUT_RATE } from '../../functions/gateway/ipns.js';
import { republishSiteNames, REPUBLISH_INTERVAL_MS } from '../../functions/core/hosting/ipns-names.js';
import { doorsFor } from '../support/test-set.js';

let service: TestService;
let gatewayLambda: LambdaFn;
let a: AccountFixture;
let client: ReturnType<typeof graphqlClient>;
let scratch: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  Object.assign(process.env, service.env);
  gatewayLambda = ((await import('../../functions/gateway/handler.js')) as unknown as { handler: LambdaFn }).handler;
  scratch = await mkdtemp(join(tmpdir(), 'cairn-ipns-'));
  a = await newAccount(service, 'ipns');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});

afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const gql = async (query: string, variables: Record<string, unknown> = {}) => client.gql(a.apiKey, query, variables);

let dirs = 0;
async function importFiles(files: Record<string, string>): Promise<string> {
  const dir = join(scratch, `site-${++dirs}`);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
  }
  return (await importDirectory((await service.services.ipfs()).blockstore, dir)).cid.toV1().toString();
}

async function poll<T>(what: string, get: () => Promise<T>, done: (v: T) => boolean, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await get();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${ms} ms: ${JSON.stringify(value).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Deploys the CID through the pipeline (deployCid) and waits for it to be published. */
async function publish(siteId: string, cid: string): Promise<{ id: string; ipfsHash: string }> {
  const queued = dataOf(
    await gql('mutation ($s: ID!, $c: String!) { deployCid(siteId: $s, cid: $c) { id } }', { s: siteId, c: cid }),
  ).deployCid;
  const done = await poll(
    'the deploy',
    async () =>
      dataOf(
        await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { id status ipfsHash published } }', {
          s: siteId,
          d: queued.id,
        }),
      ).getDeployById,
    (d) => d.status !== 'IN_PROGRESS',
  );
  expect(done).toMatchObject({ status: 'DEPLOYED', published: true });
  return done;
}

const ipnsNameOf = async (siteId: string): Promise<string | null> =>
  dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { ipnsName } }', { s: siteId })).getSiteById.ipnsName;

const V1 = { 'index.html': '<!doctype html><h1>One</h1>\n', 'docs/guide.txt': 'the guide, first edition\n' };
const V2 = { 'index.html': '<!doctype html><h1>Two</h1>\n', 'docs/guide.txt': 'the guide, second edition\n' };

let site: { id: string; name: string; roots: [string, string] };

beforeAll(async () => {
  const [first, second] = [await importFiles(V1), await importFiles(V2)];
  const created = dataOf(
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id ipnsName } }', {
      input: { deploySettings: { source: { ipfs: { cid: first } } } },
    }),
  ).createSite as { id: string; ipnsName: string | null };
  // No name before the first publish: the key is made by it.
  expect(created.ipnsName).toBeNull();
  await publish(created.id, first);
  // The record is signed as the deploy is announced, just after it is DEPLOYED and published.
  const name = await poll(
    'the site IPNS name',
    () => ipnsNameOf(created.id),
    (n) => n !== null,
  );
  expect(name).toMatch(/^k51[0-9a-z]{50,}$/);
  site = { id: created.id, name: name!, roots: [first, second] };
}, 120_000);

type Init = { method?: string; headers?: Record<string, string>; body?: Uint8Array | string; redirect?: 'manual' };
type Fetch = (url: string, init?: Init) => Promise<Response>;
const doors: Array<{ name: string; fetch: Fetch }> = [
  { name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) },
  { name: 'Lambda door', fetch: (url, { redirect: _, ...init } = {}) => lambdaFetch(gatewayLambda)(url, init) },
];

/** The record the gateway holds for the site's name now, as a client gets it (validated by the ipns package). */
async function recordOf(get: Fetch, name: string) {
  const res = await get(`${service.endpoints.gateway}/routing/v1/ipns/${name}`, {
    headers: { accept: 'application/vnd.ipfs.ipns-record' },
  });
  expect(res.status).toBe(200);
  const bytes = new Uint8Array(await res.arrayBuffer());
  await ipnsValidator(parseIpnsName(name).routingKey, bytes);
  return { res, bytes, record: unmarshalIPNSRecord(bytes) };
}

async function foreignKey() {
  const key = await generateKeyPair('Ed25519');
  return { key, name: key.publicKey.toCID().toString(base36) };
}

const put = (get: Fetch, name: string, body: Uint8Array | string, type = 'application/vnd.ipfs.ipns-record') =>
  get(`${service.endpoints.gateway}/routing/v1/ipns/${name}`, { method: 'PUT', headers: { 'content-type': type }, body });

describe.each(doorsFor(doors))('IPNS names through the $name', ({ fetch: get }) => {
  const gw = (path: string, init?: Init) => get(`${service.endpoints.gateway}${path}`, init);

  test("/ipns/<name>/ serves the site's files, sub-paths too, cached for the record's TTL", async () => {
    const root = await gw(`/ipns/${site.name}/`);
    expect(root.status).toBe(200);
    const body = await root.text();
    expect([V1['index.html'], V2['index.html']]).toContain(body);
    expect(root.headers.get('cache-control')).toMatch(/^public, max-age=(\d+)$/);
    expect(Number(/max-age=(\d+)/.exec(root.headers.get('cache-control')!)![1])).toBeLessThanOrEqual(300);
    expect(root.headers.get('x-ipfs-path')).toBe(`/ipns/${site.name}/`);
    expect(root.headers.get('access-control-allow-origin')).toBe('*');
    const guide = await gw(`/ipns/${site.name}/docs/guide.txt`);
    expect(guide.status).toBe(200);
    expect(await guide.text()).toMatch(/^the guide, (first|second) edition\n$/);
    expect(guide.headers.get('x-ipfs-roots')?.split(',')).toHaveLength(3);
    // A directory without its slash is a redirect that stays under the name.
    const bare = await gw(`/ipns/${site.name}/docs`, { redirect: 'manual' });
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe(`/ipns/${site.name}/docs/`);
    expect((await gw(`/ipns/${site.name}/nothing-here.txt`)).status).toBe(404);
    // The base58 peer id and the base32 CID of the same key are the same name.
    const peerId = peerIdFromString(site.name);
    expect((await gw(`/ipns/${peerId.toString()}/docs/guide.txt`)).status).toBe(200);
  });

  test('?format=ipns-record and Accept give the signed record, which the ipns package validates', async () => {
    const byQuery = await gw(`/ipns/${site.name}?format=ipns-record`);
    expect(byQuery.status).toBe(200);
    expect(byQuery.headers.get('content-type')).toBe('application/vnd.ipfs.ipns-record');
    expect(byQuery.headers.get('content-disposition')).toBe(`attachment; filename="${site.name}.ipns-record"`);
    expect(byQuery.headers.get('x-content-type-options')).toBe('nosniff');
    expect(byQuery.headers.get('vary')).toBe('Accept');
    expect(byQuery.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    const bytes = new Uint8Array(await byQuery.arrayBuffer());
    await ipnsValidator(parseIpnsName(site.name).routingKey, bytes);
    expect(unmarshalIPNSRecord(bytes).value).toMatch(/^\/ipfs\/bafy/);
    const etag = byQuery.headers.get('etag')!;
    expect((await gw(`/ipns/${site.name}?format=ipns-record`, { headers: { 'if-none-match': etag } })).status).toBe(304);

    const byAccept = await gw(`/ipns/${site.name}`, { headers: { accept: 'application/vnd.ipfs.ipns-record' } });
    expect(byAccept.status).toBe(200);
    expect(Buffer.from(await byAccept.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
    expect(byAccept.headers.get('content-location')).toBe(`/ipns/${site.name}?format=ipns-record`);
    // A record is of a name, not of a path under it.
    expect((await gw(`/ipns/${site.name}/docs?format=ipns-record`)).status).toBe(400);
    // /ipfs/ content has no record.
    expect((await gw(`/ipfs/${site.roots[0]}?format=ipns-record`)).status).toBe(400);
  });

  test('GET /routing/v1/ipns/<name> answers the record, for Accept, a wildcard or none, with the routing spec headers', async () => {
    const { res, record } = await recordOf(get, site.name);
    expect(res.headers.get('content-type')).toBe('application/vnd.ipfs.ipns-record');
    expect(res.headers.get('cache-control')).toMatch(/^public, max-age=\d+, stale-while-revalidate=\d+, stale-if-error=\d+$/);
    expect(Date.parse(res.headers.get('expires')!)).toBeGreaterThan(Date.now() + 40 * 3600_000);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(record.value).toMatch(/^\/ipfs\//);
    for (const accept of [undefined, '*/*']) {
      const again = await gw(`/routing/v1/ipns/${site.name}`, { headers: accept ? { accept } : {} });
      expect(again.status).toBe(200);
    }
    const json = await gw(`/routing/v1/ipns/${site.name}`, { headers: { accept: 'application/json' } });
    expect(json.status).toBe(406);
    expect(await json.text()).toContain('application/vnd.ipfs.ipns-record');
  });

  test('malformed names are 400, DNSLink names 501, names with no record 404, other routing paths 400 or 501', async () => {
    const { name: unknown } = await foreignKey();
    expect((await gw(`/ipns/not-a-name/`)).status).toBe(400);
    expect((await gw(`/ipns/${site.roots[0]}/`)).status).toBe(400);
    expect((await gw(`/routing/v1/ipns/k51zzzz`)).status).toBe(400);
    const dnsLink = await gw(`/ipns/en.wikipedia-on-ipfs.org/wiki/`);
    expect(dnsLink.status).toBe(501);
    // Off by default; the answer says how to turn it on (gateway-dnslink.test.ts has it on).
    expect(await dnsLink.text()).toContain('CAIRN_GATEWAY_DNSLINK=true');
    const missing = await gw(`/ipns/${unknown}/`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('access-control-allow-origin')).toBe('*');
    expect((await gw(`/ipns/${unknown}?format=ipns-record`)).status).toBe(404);
    expect((await gw(`/routing/v1/ipns/${unknown}`)).status).toBe(404);
    expect((await gw(`/routing/v1/providers/${site.roots[0]}`)).status).toBe(501);
    expect((await gw(`/routing/v1/nothing`)).status).toBe(400);
    expect((await gw(`/routing/v1/ipns/${unknown}`, { method: 'DELETE' })).status).toBe(501);
    const preflight = await gw(`/routing/v1/ipns/${unknown}`, { method: 'OPTIONS' });
    expect(preflight.status).toBe(200);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, PUT, OPTIONS');
    expect((await gw(`/ipns/${unknown}/`, { method: 'PUT', body: 'x' })).status).toBe(405);
  });

  test('PUT stores a record signed by its own key; the name then resolves, and a higher sequence replaces it', async () => {
    const { key, name } = await foreignKey();
    const first = marshalIPNSRecord(await createIPNSRecord(key, `/ipfs/${site.roots[0]}`, 1n, 3600_000));
    expect((await put(get, name, first)).status).toBe(200);
    // The same record again is fine (a republish), and changes nothing.
    expect((await put(get, name, first)).status).toBe(200);
    expect((await gw(`/ipns/${name}/docs/guide.txt`)).status).toBe(200);
    expect(await (await gw(`/ipns/${name}/docs/guide.txt`)).text()).toBe(V1['docs/guide.txt']);
    const second = marshalIPNSRecord(await createIPNSRecord(key, `/ipfs/${site.roots[1]}`, 2n, 3600_000));
    expect((await put(get, name, second)).status).toBe(200);
    expect(await (await gw(`/ipns/${name}/docs/guide.txt`)).text()).toBe(V2['docs/guide.txt']);
    const { bytes } = await recordOf(get, name);
    expect(Buffer.from(bytes).equals(Buffer.from(second))).toBe(true);
    // An older one (the first, or a new one with a lower sequence) is refused and changes nothing.
    expect((await put(get, name, first)).status).toBe(400);
    const lower = marshalIPNSRecord(await createIPNSRecord(key, `/ipfs/${site.roots[0]}`, 1n, 3600_000));
    const refused = await put(get, name, lower);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('not higher');
    expect(Buffer.from((await recordOf(get, name)).bytes).equals(Buffer.from(second))).toBe(true);
  });

  test('PUT refuses tampered, misnamed, oversized, expired and mistyped records, and any for a site’s name', async () => {
    const { key, name } = await foreignKey();
    const good = marshalIPNSRecord(await createIPNSRecord(key, `/ipfs/${site.roots[0]}`, 5n, 3600_000));
    const tampered = Uint8Array.from(good);
    tampered[tampered.length - 1]! ^= 0x01;
    expect((await put(get, name, tampered)).status).toBe(400);
    const other = await foreignKey();
    expect((await put(get, other.name, good)).status).toBe(400);
    const oversized = new Uint8Array(10 * 1024 + 1);
    oversized.set(good);
    const big = await put(get, name, oversized);
    expect(big.status).toBe(400);
    expect(await big.text()).toContain('at most 10240 bytes');
    const expired = marshalIPNSRecord(await createIPNSRecord(key, `/ipfs/${site.roots[0]}`, 6n, -1000));
    expect((await put(get, name, expired)).status).toBe(400);
    expect((await put(get, name, good, 'application/octet-stream')).status).toBe(406);
    expect((await put(get, name, 'garbage')).status).toBe(400);
    expect((await put(get, 'not-a-name', good)).status).toBe(400);
    // None of it was stored.
    expect((await gw(`/routing/v1/ipns/${name}`)).status).toBe(404);
    // A site's name takes only the records its publishes sign, whatever is sent: even one signed with its own key
    // (opened here, in-process, as no API returns it) and a higher sequence.
    const held = await recordOf(get, site.name);
    expect((await put(get, site.name, held.bytes)).status).toBe(200);
    const siteKey = await service.services.ipnsNames.siteKey(site.id, () => Promise.reject(new Error('the site has a key')));
    const forged = marshalIPNSRecord(
      await createIPNSRecord(privateKeyFromProtobuf(siteKey.key), `/ipfs/${site.roots[0]}`, held.record.sequence + 10n, 3600_000),
    );
    const refused = await put(get, site.name, forged);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("a site's name here");
    expect((await recordOf(get, site.name)).record.sequence).toBe(held.record.sequence);
  });

  test('PUTs past the rate from one address are 429 with Retry-After', async () => {
    const addresses = ['127.0.0.1', '::ffff:127.0.0.1'];
    for (const address of addresses) while ((await service.services.rateLimits.take(IPNS_PUT_RATE, address)) === 0);
    try {
      const { key, name } = await foreignKey();
      const record = marshalIPNSRecord(await createIPNSRecord(key, `/ipfs/${site.roots[0]}`, 1n, 3600_000));
      const res = await put(get, name, record);
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await gw(`/routing/v1/ipns/${name}`)).status).toBe(404);
    } finally {
      for (const address of addresses) await service.services.rateLimits.clear({ limit: IPNS_PUT_RATE, key: address });
    }
  });
});

describe("Helia's delegated routing client (over HTTP: it calls fetch itself)", () => {
  test("getIPNS resolves the site's name through Cairn, and putIPNS publishes a record signed elsewhere", async () => {
    const routing = delegatedRoutingV1HttpApiClient({ url: service.endpoints.gateway, cacheTTL: 0 })({ logger: defaultLogger() });
    await routing.start();
    try {
      const bytes = await routing.getIPNS(CID.parse(site.name, base36));
      await ipnsValidator(parseIpnsName(site.name).routingKey, bytes);
      expect(unmarshalIPNSRecord(bytes).value).toMatch(/^\/ipfs\/bafy/);
      const { key, name } = await foreignKey();
      const record = marshalIPNSRecord(await createIPNSRecord(key, `/ipfs/${site.roots[1]}`, 1n, 3600_000));
      await routing.putIPNS(CID.parse(name, base36), record);
      expect(Buffer.from(await routing.getIPNS(CID.parse(name, base36))).equals(Buffer.from(record))).toBe(true);
      expect(await (await fetch(`${service.endpoints.gateway}/ipns/${name}/docs/guide.txt`)).text()).toBe(V2['docs/guide.txt']);
      // A name with no record is the client's NotFoundError.
      await expect(routing.getIPNS(CID.parse((await foreignKey()).name, base36))).rejects.toThrow(/No matching records/);
    } finally {
      await routing.stop();
    }
  });
});

describe('publishing moves the name', () => {
  test('a second publish signs a record with a higher sequence pointing at the new deploy', async () => {
    const get = doors[0]!.fetch;
    const before = await recordOf(get, site.name);
    const deploy = await publish(site.id, site.roots[1]);
    // Signed as the deploy is announced, just after it is DEPLOYED and published.
    await poll(
      'the new record',
      async () => (await recordOf(get, site.name)).record.value,
      (v) => v === `/ipfs/${site.roots[1]}`,
    );
    const after = await recordOf(get, site.name);
    expect(after.record.sequence).toBeGreaterThan(before.record.sequence);
    expect(after.record.value).toBe(`/ipfs/${CID.parse(deploy.ipfsHash).toV1().toString()}`);
    expect(after.record.value).toBe(`/ipfs/${site.roots[1]}`);
    // The name is the same; what it serves is the new deploy, through every door.
    expect(await ipnsNameOf(site.id)).toBe(site.name);
    for (const door of doors)
      expect(await (await door.fetch(`${service.endpoints.gateway}/ipns/${site.name}/`)).text()).toBe(V2['index.html']);
    // Publishing an older deploy again (a rollback) moves it back, with a higher sequence still.
    const deploys = dataOf(await gql('query ($s: ID!) { getDeploysBySite(siteId: $s) { deploys { id ipfsHash } } }', { s: site.id }))
      .getDeploysBySite.deploys as Array<{ id: string; ipfsHash: string }>;
    const old = deploys.find((d) => CID.parse(d.ipfsHash).toV1().toString() === site.roots[0])!;
    dataOf(await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: old.id }));
    const rolledBack = await recordOf(get, site.name);
    expect(rolledBack.record.sequence).toBeGreaterThan(after.record.sequence);
    expect(rolledBack.record.value).toBe(`/ipfs/${site.roots[0]}`);
  }, 120_000);

  test('the republish (the tick) signs the record again before it expires: same value, next sequence, a later EOL', async () => {
    const get = doors[0]!.fetch;
    const before = await recordOf(get, site.name);
    // Nothing is due yet: a record is signed again 4 hours after it was signed.
    expect(await republishSiteNames(service.services, new Date(), 1000)).toBe(0);
    const later = new Date(Date.now() + REPUBLISH_INTERVAL_MS + 60_000);
    expect(await republishSiteNames(service.services, later, 1000)).toBeGreaterThanOrEqual(1);
    const after = await recordOf(get, site.name);
    expect(after.record.sequence).toBe(before.record.sequence + 1n);
    expect(after.record.value).toBe(before.record.value);
    expect(after.record.validity > before.record.validity).toBe(true);
  });

  test('deleting the site drops its name', async () => {
    const cid = await importFiles({ 'index.html': 'gone soon' });
    const created = dataOf(
      await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', {
        input: { deploySettings: { source: { ipfs: { cid } } } },
      }),
    ).createSite as { id: string };
    await publish(created.id, cid);
    const name = (await poll(
      'the site IPNS name',
      () => ipnsNameOf(created.id),
      (n) => n !== null,
    ))!;
    expect((await doors[0]!.fetch(`${service.endpoints.gateway}/ipns/${name}/`)).status).toBe(200);
    expect(dataOf(await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: created.id })).deleteSite).toBe(true);
    expect((await doors[0]!.fetch(`${service.endpoints.gateway}/ipns/${name}/`)).status).toBe(404);
    expect(await service.services.ipnsNames.nameOfSite(created.id)).toBeUndefined();
  }, 120_000);
});
