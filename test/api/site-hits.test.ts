/**
 * The local gateway's path for site cache hits (functions/local/site-hits.ts):
 * a plain GET or HEAD of a cached 200 is written straight from the cache,
 * and must send what the general way sends (Date aside), be used for hits
 * only, and see a purge or a publish on the very next request. With gateway
 * threads (functions/local/gateway-threads.ts) the same holds whichever
 * thread a connection lands on, and a purge's answer means no thread
 * answers the purged page.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { jest } from '@jest/globals';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { base36 } from 'multiformats/bases/base36';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import type { LocalSiteCache } from '../../functions/local/site-cache.js';

/** A service and an account on it. */
interface Ctx {
  service: TestService;
  a: AccountFixture;
  client: ReturnType<typeof graphqlClient>;
}

let main: Ctx;
let service: TestService;
let scratch: string;

async function ctxOn(s: TestService, name: string): Promise<Ctx> {
  return {
    service: s,
    a: await newAccount(s, name),
    client: graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, s.endpoints.graphql),
  };
}

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  scratch = await mkdtemp(join(tmpdir(), 'cairn-site-hits-'));
  main = await ctxOn(service, 'hits');
});

afterAll(async () => {
  await service?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const gql = async (query: string, variables: Record<string, unknown> = {}, c: Ctx = main) => c.client.gql(c.a.apiKey, query, variables);

let dirs = 0;
async function importFiles(files: Record<string, string>, c: Ctx = main): Promise<string> {
  const dir = join(scratch, `site-${++dirs}`);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
  }
  const node = await c.service.services.ipfs();
  return (await importDirectory(node.blockstore, dir)).cid.toV1().toString();
}

async function deployCid(siteId: string, cid: string, c: Ctx = main): Promise<string> {
  await gql(
    'mutation ($s: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $s, input: $input) { id } }',
    {
      s: siteId,
      input: { deploySettings: { source: { ipfs: { cid } } } },
    },
    c,
  );
  const queued = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: siteId }, c)).triggerDeploy;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const d = dataOf(
      await gql(
        'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status published } }',
        { s: siteId, d: queued.id },
        c,
      ),
    ).getDeployById;
    if (d.status !== 'IN_PROGRESS') {
      expect([d.status, d.published]).toEqual(['DEPLOYED', true]);
      return queued.id as string;
    }
    if (Date.now() > deadline) throw new Error('the deploy did not end in 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function publishedSite(files: Record<string, string>, c: Ctx = main): Promise<{ id: string; slug: string; deployId: string }> {
  const cid = await importFiles(files, c);
  const site = dataOf(
    await gql(
      'mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }',
      {
        input: { deploySettings: { source: { ipfs: { cid } } } },
      },
      c,
    ),
  ).createSite as { id: string; slug: string };
  return { ...site, deployId: await deployCid(site.id, cid, c) };
}

interface Raw {
  status: number;
  /** Every header as sent, in order, names as sent, Date left out. */
  headers: string[];
  body: Buffer;
}

interface RawInit {
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer;
  /** The connection's agent (Node's keep-alive global one by default); false opens a connection of its own. */
  agent?: Agent | false;
  /** The service: the suite's first by default. */
  on?: TestService;
}

/** A request to the gateway with exactly these headers; the answer's headers as they came on the wire. */
function raw(slug: string, path: string, init: RawInit = {}): Promise<Raw> {
  const on = init.on ?? service;
  const url = new URL(on.endpoints.gateway);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: init.method ?? 'GET',
        agent: init.agent,
        headers: { host: `${slug}.${on.config.sites.domain}`, ...init.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const headers: string[] = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2)
            if (res.rawHeaders[i]!.toLowerCase() !== 'date') headers.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
          resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
        });
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

const cache = () => service.services.siteCache as LocalSiteCache;

describe('site cache hits on the local door', () => {
  test('a hit written from the cache sends what the general way sends, for GET and HEAD, _headers included', async () => {
    const site = await publishedSite({
      'index.html': '<!doctype html><h1>Home</h1>\n',
      'docs/page.html': '<p>a page</p>',
      _headers: '/*\n  X-Frame-Options: DENY\n/docs/*\n  Cache-Control: public, max-age=60\n',
    });
    for (const path of ['/', '/docs/page.html', '/docs/page.html?v=2']) {
      const miss = await raw(site.slug, path);
      expect(miss.headers).toContain('x-cache: MISS');
      const prepared = jest.spyOn(cache(), 'preparedHit');
      try {
        const fast = await raw(site.slug, path);
        // An If-None-Match that matches nothing: the general way, which still answers the whole 200 from the cache.
        const general = await raw(site.slug, path, { headers: { 'if-none-match': '"something-else"' } });
        const fastHead = await raw(site.slug, path, { method: 'HEAD' });
        const generalHead = await raw(site.slug, path, { method: 'HEAD', headers: { 'if-none-match': '"something-else"' } });
        // Only the two plain requests were looked up on the fast path, and both found their answer there.
        expect(prepared.mock.calls.length).toBe(2);
        expect(prepared.mock.results.map((r) => r.value !== undefined)).toEqual([true, true]);
        expect(fast.status).toBe(200);
        expect(fast.headers).toContain('x-cache: HIT');
        expect(fast.headers).toContain('x-frame-options: DENY');
        expect(fast).toEqual(general);
        expect(fast.body.equals(miss.body)).toBe(true);
        expect(fastHead).toEqual(generalHead);
        expect(fastHead.body.length).toBe(0);
        expect(fastHead.headers).toContain(`content-length: ${miss.body.length}`);
      } finally {
        prepared.mockRestore();
      }
    }
  });

  test('what is not a plain hit of a 200 goes the general way, and answers as it did', async () => {
    const site = await publishedSite({ 'index.html': 'home page', '404.html': 'custom not found', 'dir/index.html': 'dir' });
    for (const path of ['/', '/missing', '/dir']) await raw(site.slug, path);
    const prepared = jest.spyOn(cache(), 'preparedHit');
    try {
      const range = await raw(site.slug, '/', { headers: { range: 'bytes=0-3' } });
      expect([range.status, range.body.toString()]).toEqual([206, 'home']);
      const notFound = await raw(site.slug, '/missing');
      expect([notFound.status, notFound.body.toString()]).toEqual([404, 'custom not found']);
      expect(notFound.headers).toContain('x-cache: HIT');
      const moved = await raw(site.slug, '/dir');
      expect(moved.status).toBe(301);
      const bad = await raw(site.slug, '/%ff');
      expect(bad.status).toBe(400);
      const post = await raw(site.slug, '/', { method: 'POST' });
      expect(post.status).toBe(405);
      // The 404 and the 301 were looked up and declined (kept, but not 200s); the rest never looked up.
      expect(prepared.mock.results.map((r) => r.value)).toEqual([undefined, undefined]);
    } finally {
      prepared.mockRestore();
    }
  });

  test('a purge and a publish are seen on the next request', async () => {
    const site = await publishedSite({ 'index.html': 'version one' });
    await raw(site.slug, '/');
    const hit = await raw(site.slug, '/');
    expect([hit.headers.includes('x-cache: HIT'), hit.body.toString()]).toEqual([true, 'version one']);
    expect(dataOf(await gql('mutation ($s: String!) { purgeCache(input: { siteId: $s }) }', { s: site.id }))).toEqual({
      purgeCache: true,
    });
    const afterPurge = await raw(site.slug, '/');
    expect(afterPurge.headers).toContain('x-cache: MISS');
    expect((await raw(site.slug, '/')).headers).toContain('x-cache: HIT');
    await deployCid(site.id, await importFiles({ 'index.html': 'version two' }));
    const afterPublish = await raw(site.slug, '/');
    expect([afterPublish.headers.includes('x-cache: MISS'), afterPublish.body.toString()]).toEqual([true, 'version two']);
    const again = await raw(site.slug, '/');
    expect([again.headers.includes('x-cache: HIT'), again.body.toString()]).toEqual([true, 'version two']);
  });
});

describe('site cache hits on the gateway threads (CAIRN_GATEWAY_THREADS=3: the main thread and two more)', () => {
  let t: Ctx;
  let threaded: TestService;

  beforeAll(async () => {
    threaded = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_GATEWAY_THREADS: '3' });
    t = await ctxOn(threaded, 'threads');
  });

  afterAll(async () => {
    await threaded?.close();
  });

  const threads = () => threaded.gatewayThreads!;
  const stats = async () => (await threads().stats()).sort((x, y) => x.index - y.index);
  /** Without Date: what every thread must send alike. */
  const same = (answers: Raw[]) => {
    for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
  };
  /** `n` requests, each on a connection of its own (so the kernel spreads them over the threads' sockets), a few at a time. */
  async function many(n: number, slug: string, path: string, init: RawInit = {}): Promise<Raw[]> {
    const out: Raw[] = [];
    for (let i = 0; i < n; i += 6)
      out.push(
        ...(await Promise.all(Array.from({ length: Math.min(6, n - i) }, () => raw(slug, path, { on: threaded, agent: false, ...init })))),
      );
    return out;
  }
  const gqlT = (query: string, variables: Record<string, unknown> = {}) => gql(query, variables, t);

  /**
   * Sequential GETs on `loops` keep-alive connections until stop(), each
   * noted with when it was sent; the connections land on the threads as
   * the kernel spreads them.
   */
  function racing(slug: string, loops = 6) {
    const seen: { sentAt: number; status: number; body: string }[] = [];
    let going = true;
    const agents = Array.from({ length: loops }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
    const done = Promise.all(
      agents.map(async (agent) => {
        while (going) {
          const sentAt = performance.now();
          const r = await raw(slug, '/', { on: threaded, agent });
          seen.push({ sentAt, status: r.status, body: r.body.toString() });
        }
      }),
    );
    return {
      seen,
      async stop() {
        going = false;
        await done;
        for (const agent of agents) agent.destroy();
      },
    };
  }

  test('hits are answered on every thread, as the main thread answers them: GET, HEAD, 304 and ranges alike', async () => {
    expect(threads().count).toBe(2);
    const site = await publishedSite({ 'index.html': '<!doctype html><h1>Threads</h1>\n', _headers: '/*\n  X-Frame-Options: DENY\n' }, t);
    const miss = await raw(site.slug, '/', { on: threaded });
    expect([miss.status, miss.headers.includes('x-cache: MISS')]).toEqual([200, true]);
    const before = await stats();
    // Each thread's copy has the page: sent to it when the main thread kept it.
    for (const s of before) expect(s.kept).toBeGreaterThanOrEqual(1);

    const gets = await many(36, site.slug, '/');
    same(gets);
    expect(gets[0]!.headers).toContain('x-cache: HIT');
    expect(gets[0]!.headers).toContain('x-frame-options: DENY');
    expect(gets[0]!.body.equals(miss.body)).toBe(true);
    const after = await stats();
    const hitsOn = after.map((s, i) => s.hits - before[i]!.hits);
    // Both threads answered some from their copies, and the main thread the rest.
    for (const n of hitsOn) expect(n).toBeGreaterThan(0);
    expect(hitsOn.reduce((x, y) => x + y, 0)).toBeLessThan(36);
    // No hit was relayed to the main thread.
    expect(after.map((s) => s.relayed)).toEqual(before.map((s) => s.relayed));

    const heads = await many(12, site.slug, '/', { method: 'HEAD' });
    same(heads);
    expect(heads[0]!.status).toBe(200);
    expect(heads[0]!.body.length).toBe(0);
    expect(heads[0]!.headers).toContain(`content-length: ${miss.body.length}`);
    expect(heads[0]!.headers.filter((h) => !h.startsWith('content-length'))).toEqual(
      gets[0]!.headers.filter((h) => !h.startsWith('content-length') && !h.startsWith('transfer-encoding')),
    );

    const etag = gets[0]!.headers.find((h) => h.startsWith('etag: '))!.slice('etag: '.length);
    const notModified = await many(12, site.slug, '/', { headers: { 'if-none-match': etag } });
    same(notModified);
    expect([notModified[0]!.status, notModified[0]!.body.length]).toEqual([304, 0]);
    expect(notModified[0]!.headers).toContain(`etag: ${etag}`);
    const ranges = await many(12, site.slug, '/', { headers: { range: 'bytes=0-14' } });
    same(ranges);
    expect([ranges[0]!.status, ranges[0]!.body.toString()]).toEqual([206, '<!doctype html>']);
    // Those went the general way: the threads relayed theirs to the main thread.
    const last = await stats();
    for (const [i, s] of last.entries()) expect(s.relayed).toBeGreaterThan(after[i]!.relayed);
  });

  test('a relayed request with a body, or refused before its body came, answers as on the main thread alone', async () => {
    const key = await generateKeyPair('Ed25519');
    const name = key.publicKey.toCID().toString(base36);
    const put = (on: TestService, body: Buffer) =>
      raw('ipns', `/routing/v1/ipns/${name}`, {
        on,
        agent: false,
        method: 'PUT',
        headers: { host: new URL(on.endpoints.gateway).host, 'content-type': 'application/vnd.ipfs.ipns-record' },
        body,
      });
    const garbage = Buffer.from('not a record');
    const large = Buffer.alloc(64 * 1024, 1);
    const alone = [await put(service, garbage), await put(service, large)];
    expect(alone.map((r) => r.status)).toEqual([400, 400]);
    const before = await stats();
    for (let i = 0; i < 12; i++) {
      expect(await put(threaded, garbage)).toEqual(alone[0]);
      expect(await put(threaded, large)).toEqual(alone[1]);
    }
    const after = await stats();
    for (const [i, s] of after.entries()) expect(s.relayed).toBeGreaterThan(before[i]!.relayed);
  });

  test('publishDeploy answers once no thread answers the old deploy: requests racing it never get it after', async () => {
    const site = await publishedSite({ 'index.html': 'version one' }, t);
    const v2 = await deployCid(site.id, await importFiles({ 'index.html': 'version two' }, t), t);
    expect(v2).not.toBe(site.deployId);
    await raw(site.slug, '/', { on: threaded });
    const race = racing(site.slug);
    await new Promise((r) => setTimeout(r, 300));
    // One thread deaf for a while: the publish's purge must wait for it.
    threads().block(1, 400);
    const asked = performance.now();
    const published = dataOf(
      await gqlT('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: site.deployId }),
    );
    const answered = performance.now();
    expect(published.publishDeploy.id).toBe(site.deployId);
    const fresh = await many(12, site.slug, '/');
    await new Promise((r) => setTimeout(r, 300));
    await race.stop();
    expect(answered - asked).toBeGreaterThanOrEqual(300);
    expect(fresh.map((r) => r.body.toString())).toEqual(Array(12).fill('version one'));
    const sentAfter = race.seen.filter((s) => s.sentAt >= answered);
    expect(sentAfter.length).toBeGreaterThan(6);
    expect(sentAfter.filter((s) => s.body !== 'version one')).toEqual([]);
    // The race did race: the old deploy was answered before the publish.
    expect(race.seen.filter((s) => s.sentAt < asked && s.body === 'version two').length).toBeGreaterThan(6);
  });

  test('purgeCache answers once every thread has dropped the pages; deleteSite too, with requests racing it', async () => {
    const site = await publishedSite({ 'index.html': 'home', 'other.html': 'other' }, t);
    await raw(site.slug, '/', { on: threaded });
    await raw(site.slug, '/other.html', { on: threaded });
    const before = await stats();
    threads().block(2, 400);
    const asked = performance.now();
    expect(dataOf(await gqlT('mutation ($s: String!) { purgeCache(input: { siteId: $s }) }', { s: site.id }))).toEqual({
      purgeCache: true,
    });
    expect(performance.now() - asked).toBeGreaterThanOrEqual(300);
    expect((await stats()).map((s) => s.kept)).toEqual(before.map((s) => s.kept - 2));

    // Kept again on every thread, then the site deleted while requests race.
    await raw(site.slug, '/', { on: threaded });
    const race = racing(site.slug);
    await new Promise((r) => setTimeout(r, 300));
    threads().block(1, 400);
    const deleting = performance.now();
    expect(dataOf(await gqlT('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: site.id }))).toEqual({ deleteSite: true });
    const deleted = performance.now();
    const fresh = await many(12, site.slug, '/');
    await new Promise((r) => setTimeout(r, 300));
    await race.stop();
    expect(deleted - deleting).toBeGreaterThanOrEqual(300);
    expect(fresh.map((r) => r.status)).toEqual(Array(12).fill(404));
    const sentAfter = race.seen.filter((s) => s.sentAt >= deleted);
    expect(sentAfter.length).toBeGreaterThan(6);
    expect(sentAfter.filter((s) => s.status === 200)).toEqual([]);
    expect(race.seen.filter((s) => s.sentAt < deleting && s.status === 200).length).toBeGreaterThan(6);
  });

  test('a thread that fails is logged and started again; the port is served meanwhile; the new thread answers hits from its copy', async () => {
    const site = await publishedSite({ 'index.html': 'still here' }, t);
    await raw(site.slug, '/', { on: threaded });
    const logged: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      logged.push(String(chunk));
      return true;
    });
    try {
      const before = await stats();
      expect(before.map((s) => s.index)).toEqual([1, 2]);
      threads().fail(1);
      // Answered by the main thread and thread 2 while thread 1 is down (a connection its dying socket had queued is reset: tried again).
      const during: Raw[] = [];
      for (let i = 0; i < 12; i++)
        during.push(
          await raw(site.slug, '/', { on: threaded, agent: false }).catch(() => raw(site.slug, '/', { on: threaded, agent: false })),
        );
      expect(during.map((r) => [r.status, r.body.toString()])).toEqual(Array(12).fill([200, 'still here']));
      const deadline = Date.now() + 20_000;
      for (;;) {
        const now = await stats();
        if (now.length === 2 && logged.join('').includes('a gateway thread ended')) break;
        if (Date.now() > deadline) throw new Error(`thread 1 was not started again: ${JSON.stringify(now)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await threads().ready();
      const restarted = (await stats())[0]!;
      // Its copy came whole with it, before any request.
      expect(restarted.kept).toBeGreaterThanOrEqual(1);
      const gets = await many(36, site.slug, '/');
      expect(gets.map((r) => r.body.toString())).toEqual(Array(36).fill('still here'));
      const after = (await stats())[0]!;
      // Hits from its copy (a request now and then is relayed: the host's resolution is kept a second).
      expect(after.hits - restarted.hits).toBeGreaterThan(after.relayed - restarted.relayed);
    } finally {
      write.mockRestore();
    }
    expect(logged.join('')).toMatch(/"level":"error".*a gateway thread failed; it is started again.*asked to fail/);
    expect(logged.join('')).toMatch(/"level":"warn".*a gateway thread ended; it is started again/);
  });
});
