/**
 * The gateway resolving DNSLink (CAIRN_GATEWAY_DNSLINK=true), as Kubo's
 * gateway does: a real DNS server (Debian's knot, started here) holds the
 * `_dnslink` TXT records, reached through a relay that counts the queries
 * the service makes. Content is in the service's node (a directory
 * imported into it, a file put through S3). Checked: a Host with a DNSLink
 * serves its index.html, files, a directory's slash redirect and listing,
 * with X-Ipfs-Path, an ETag and Cache-Control from the record's TTL; the
 * same under `/ipns/<domain>/` on any host; a record with a path, a chain
 * of DNSLinks, a loop stopped at Kubo's depth with a 400; a changed record
 * seen once the kept answer's time is over; no record, a malformed one and
 * two at once; a CID the node does not hold (404, nothing fetched);
 * hostile Hosts refused without a query; a flood of distinct Hosts costing
 * at most the per-minute budget of queries. Through the gateway's
 * node:http server and its Lambda handler (doorsFor: the full run takes both).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { startTestService, type TestService } from '../support/service.js';
import { startKnot, type KnotServer } from '../support/knot-server.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import { hostFetch } from '../support/http.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { MAX_NAME_HOPS } from '../../functions/gateway/ipns.js';
import { MIN_KEEP_S, PER_MINUTE } from '../../functions/core/hosting/dnslink-resolver.js';
import { doorsFor } from '../support/test-set.js';

const ZONE = 'dnslink-gw.test';
const at = (label: string) => `${label}.${ZONE}`;

let service: TestService;
let knot: KnotServer;
let relay: Server;
let queries = 0;
const open = new Set<Socket>();
let gatewayLambda: LambdaFn;
let scratch: string;
let gatewayPort: string;
const savedEnv = { ...process.env };
let v1: string;
let v2: string;
let fileCid: string;
let absent: string;
let records: string[];

let dirs = 0;
async function importFiles(files: Record<string, string>): Promise<string> {
  const dir = join(scratch, `content-${++dirs}`);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
  }
  return (await importDirectory((await service.services.ipfs()).blockstore, dir)).cid.toV1().toString();
}

const txt = (label: string, ttl: number, ...values: string[]) =>
  `_dnslink.${at(label)}. ${ttl} IN TXT ${values.map((v) => `"${v}"`).join(' ')}`;

/** The records of every case, `moving` pointing at `movingTo`. */
const zoneRecords = (movingTo: string) => [
  txt('site', 120, `dnslink=/ipfs/${v1}`),
  txt('moving', 1, `dnslink=/ipfs/${movingTo}`),
  txt('sub', 300, `dnslink=/ipfs/${v1}/docs`),
  txt('chain', 300, `dnslink=/ipns/${at('site')}/docs`),
  txt('loop-a', 300, `dnslink=/ipns/${at('loop-b')}`),
  txt('loop-b', 300, `dnslink=/ipns/${at('loop-a')}`),
  txt('bad', 300, 'dnslink=/ipfs/not-a-cid'),
  txt('two', 300, `dnslink=/ipfs/${v1}`),
  txt('two', 300, `dnslink=/ipfs/${v2}`),
  txt('other', 300, 'v=spf1 -all'),
  txt('absent', 300, `dnslink=/ipfs/${absent}`),
  txt('split', 300, 'dnslink=/ipfs/', v2),
  txt('file', 300, `dnslink=/ipfs/${fileCid}`),
  // hop-1 -> hop-2 -> ... -> hop-33 -> the content: 33 names from hop-1, 32 from hop-2.
  ...Array.from({ length: MAX_NAME_HOPS + 1 }, (_, i) =>
    txt(`hop-${i + 1}`, 300, i === MAX_NAME_HOPS ? `dnslink=/ipfs/${v1}` : `dnslink=/ipns/${at(`hop-${i + 2}`)}`),
  ),
];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'cairn-dnslink-gw-'));
  knot = await startKnot([ZONE]);
  // A relay in front of the DNS server that counts each TCP connection: the service's lookups go over TCP (domain-dns.ts).
  const [knotHost, knotPort] = knot.address.split(':') as [string, string];
  relay = createServer((socket) => {
    queries++;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    const upstream = connect({ host: knotHost, port: Number(knotPort) });
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const relayPort = (relay.address() as { port: number }).port;
  service = await startTestService({
    CAIRN_GC_INTERVAL: '0',
    CAIRN_GATEWAY_DNSLINK: 'true',
    CAIRN_DNS_RESOLVER: `127.0.0.1:${relayPort}`,
  });
  Object.assign(process.env, service.env);
  gatewayLambda = ((await import('../../functions/gateway/handler.js')) as unknown as { handler: LambdaFn }).handler;
  gatewayPort = new URL(service.endpoints.gateway).port;
  v1 = await importFiles({
    'index.html': '<!doctype html><h1>One</h1>\n',
    'docs/guide.txt': 'the guide, first edition\n',
    'files/a.txt': 'a\n',
    'files/b.txt': 'b\n',
  });
  v2 = await importFiles({ 'index.html': '<!doctype html><h1>Two</h1>\n', 'docs/guide.txt': 'the guide, second edition\n' });
  // A file put through the S3 API: its CID is what the object's record says.
  const s3 = service.s3();
  await s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: 'dnslink-note.txt', Body: 'a note put through S3\n' }));
  s3.destroy();
  const object = await service.services.objects.get('default-bucket', 'dnslink-note.txt');
  fileCid = CID.parse(object!.cid).toV1().toString();
  absent = CID.createV1(0x55, await sha256.digest(randomBytes(32))).toString();
  records = zoneRecords(v1);
  await knot.setRecords(records);
}, 120_000);

afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  await knot?.close();
  for (const socket of open) socket.destroy();
  relay?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

type Get = (host: string, path?: string, init?: { method?: string; headers?: Record<string, string> }) => Promise<Response>;
const doors: Array<{ name: string; get: Get }> = [
  {
    name: 'node:http door',
    get: (host, path = '/', init = {}) =>
      hostFetch(`http://127.0.0.1:${gatewayPort}${path}`, { ...init, headers: { ...init.headers, host: `${host}:${gatewayPort}` } }),
  },
  {
    name: 'Lambda door',
    get: (host, path = '/', init = {}) =>
      lambdaFetch(gatewayLambda)(`https://${host}${path}`, { method: init.method, headers: { ...init.headers, host } }),
  },
];

describe.each(doorsFor(doors))('DNSLink on the gateway through the $name', ({ get }) => {
  test('a Host with a DNSLink serves its index.html, files and directories, with the path, ETag and TTL headers', async () => {
    const index = await get(at('site'), '/');
    expect(index.status).toBe(200);
    expect(await index.text()).toContain('<h1>One</h1>');
    expect(index.headers.get('x-ipfs-path')).toBe(`/ipns/${at('site')}/`);
    expect(index.headers.get('etag')).toBe(`"${v1}"`);
    // The record's TTL (120 s), as boxo sets max-age from a DNSLink's TTL: never the immutable /ipfs/ caching.
    const maxAge = Number(/max-age=(\d+)/.exec(index.headers.get('cache-control') ?? '')?.[1]);
    expect(maxAge).toBeGreaterThan(100);
    expect(maxAge).toBeLessThanOrEqual(120);
    expect(index.headers.get('cache-control')).not.toContain('immutable');

    const file = await get(at('site'), '/docs/guide.txt');
    expect(file.status).toBe(200);
    expect(await file.text()).toBe('the guide, first edition\n');
    expect(file.headers.get('x-ipfs-path')).toBe(`/ipns/${at('site')}/docs/guide.txt`);
    expect(file.headers.get('etag')).toMatch(/^"(bafk|Qm|bafy)/);

    // A directory without its slash: redirected on the host itself, never to /ipfs/.
    const bare = await get(at('site'), '/files');
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe('/files/');
    const listing = await get(at('site'), '/files/');
    expect(listing.status).toBe(200);
    const html = await listing.text();
    expect(html).toContain('href="/files/a.txt"');
    expect(html).toContain('href="/files/b.txt"');
    expect(html).toContain('href="/"'); // the back link to the host's root
    expect((await get(at('site'), '/nope.txt')).status).toBe(404);
    expect((await get(at('site'), '/', { method: 'POST' })).status).toBe(405);

    // The DNSLink's strings joined (a TXT record of several strings), and a file put through S3.
    expect(await (await get(at('split'), '/docs/guide.txt')).text()).toBe('the guide, second edition\n');
    expect(await (await get(at('file'), '/')).text()).toBe('a note put through S3\n');
  });

  test('/ipns/<domain>/ on the gateway itself; a record with a path, a chain, and a loop stopped at the depth limit', async () => {
    const gw = 'localhost';
    const byPath = await get(gw, `/ipns/${at('site')}/docs/guide.txt`);
    expect(byPath.status).toBe(200);
    expect(await byPath.text()).toBe('the guide, first edition\n');
    expect(byPath.headers.get('x-ipfs-path')).toBe(`/ipns/${at('site')}/docs/guide.txt`);
    expect(byPath.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    const dir = await get(gw, `/ipns/${at('site')}/files`);
    expect(dir.status).toBe(301);
    expect(dir.headers.get('location')).toBe(`/ipns/${at('site')}/files/`);
    const listing = await (await get(gw, `/ipns/${at('site')}/files/`)).text();
    expect(listing).toContain(`href="/ipns/${at('site')}/files/a.txt"`);

    // The record's own path, then a DNSLink to another DNSLink with a path: the spec's chain, paths kept in order.
    expect(await (await get(gw, `/ipns/${at('sub')}/guide.txt`)).text()).toBe('the guide, first edition\n');
    expect(await (await get(at('chain'), '/guide.txt')).text()).toBe('the guide, first edition\n');
    const loop = await get(gw, `/ipns/${at('loop-a')}/`);
    expect(loop.status).toBe(400);
    expect(await loop.text()).toContain(`more than ${MAX_NAME_HOPS} names`);
    expect((await get(at('loop-b'), '/')).status).toBe(400);
    // Kubo's depth exactly: a chain of 32 names is followed, one of 33 is not.
    expect(await (await get(gw, `/ipns/${at('hop-2')}/docs/guide.txt`)).text()).toBe('the guide, first edition\n');
    expect((await get(gw, `/ipns/${at('hop-1')}/docs/guide.txt`)).status).toBe(400);
    // Not a domain by Cairn's rules: refused without a lookup.
    expect((await get(gw, '/ipns/bad_name.example/')).status).toBe(400);
  });

  test('no record, another TXT record, a malformed or doubled record, and a CID this node does not hold', async () => {
    // No DNSLink: the host is the path gateway's, as in boxo's hostname handler; its root a 404 in the gateway's shape.
    for (const host of [at('nothing-here'), at('other')]) {
      const res = await get(host, '/');
      expect([host, res.status]).toEqual([host, 404]);
      expect(await res.text()).toMatch(/^Not Found/);
    }
    const none = await get('localhost', `/ipns/${at('nothing-here')}/`);
    expect(none.status).toBe(404);
    expect(await none.text()).toContain(`_dnslink.${at('nothing-here')}`);
    // Content by CID still answers on such a host.
    expect((await get(at('other'), `/ipfs/${v1}/docs/guide.txt`)).status).toBe(200);
    for (const label of ['bad', 'two']) {
      const res = await get(at(label), '/');
      expect([label, res.status]).toEqual([label, 502]);
      expect(await res.text()).toMatch(/^Bad Gateway: the DNSLink of/);
    }
    // Only what this node holds is served: a DNSLink to anything else is a 404 at once, nothing fetched.
    const started = Date.now();
    const missing = await get(at('absent'), '/');
    expect(missing.status).toBe(404);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test('hostile Hosts are refused without a DNS query', async () => {
    const before = queries;
    for (const host of [
      '127.0.0.1',
      '[::1]',
      'localhost',
      'x.localhost',
      'a..b.test',
      'bad_host.test',
      `${'a'.repeat(64)}.test`,
      'x'.repeat(300),
    ]) {
      const res = await get(host, '/');
      expect([host.slice(0, 30), res.status]).toEqual([host.slice(0, 30), 404]);
    }
    expect(queries).toBe(before);
  });
});

test('a changed record is served once the kept answer is over', async () => {
  const get = doors[0]!.get;
  expect(await (await get(at('moving'), '/docs/guide.txt')).text()).toBe('the guide, first edition\n');
  const maxAge = Number(/max-age=(\d+)/.exec((await get(at('moving'), '/')).headers.get('cache-control') ?? '')?.[1]);
  expect(maxAge).toBeLessThanOrEqual(1);
  await knot.setRecords(zoneRecords(v2));
  // Kept at least MIN_KEEP_S whatever the TTL (the answers-are-kept test shows the keeping), then asked again.
  await new Promise((r) => setTimeout(r, (MIN_KEEP_S + 1) * 1000));
  expect(await (await get(at('moving'), '/docs/guide.txt')).text()).toBe('the guide, second edition\n');
}, 60_000);

test('answers are kept: a name asked many times at once is one query', async () => {
  const get = doors[0]!.get;
  const before = queries;
  const answers = await Promise.all(Array.from({ length: 20 }, () => get(at('coalesced-nothing'), '/')));
  expect(answers.every((r) => r.status === 404)).toBe(true);
  for (let i = 0; i < 5; i++) expect((await get(at('site'), '/')).status).toBe(200);
  expect(queries - before).toBe(1);
});

test('a flood of distinct Hosts costs at most the lookup budget of queries, and kept names still answer', async () => {
  const get = doors[0]!.get;
  const before = queries;
  const started = Date.now();
  const statuses = new Map<number, number>();
  let busy: Response | undefined;
  const hosts = Array.from({ length: PER_MINUTE + 200 }, (_, i) => at(`flood-${i}-${randomBytes(3).toString('hex')}`));
  for (let i = 0; i < hosts.length; i += 30) {
    const batch = await Promise.all(hosts.slice(i, i + 30).map((h) => get(h, '/')));
    for (const res of batch) statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    busy ??= batch.find((res) => res.status === 503);
  }
  // At most the bucket (PER_MINUTE) and what refilled it while the flood lasted, never one query a Host.
  const refilled = Math.ceil(((Date.now() - started) / 60_000) * PER_MINUTE);
  expect(queries - before).toBeLessThanOrEqual(PER_MINUTE + refilled);
  expect(queries - before).toBeLessThan(hosts.length);
  expect(statuses.get(503)).toBeGreaterThan(0);
  expect([...statuses.keys()].sort()).toEqual([404, 503]);
  expect(Number(busy!.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(await busy!.text()).toMatch(/^Service Unavailable/);
  // A name kept from before answers without a query.
  expect((await get(at('site'), '/')).status).toBe(200);
}, 120_000);
