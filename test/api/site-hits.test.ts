/**
 * The local gateway's path for site cache hits (functions/local/site-hits.ts):
 * a plain GET or HEAD of a cached 200 is written straight from the cache,
 * and must send what the general way sends (Date aside), be used for hits
 * only, and see a purge or a publish on the very next request.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { jest } from '@jest/globals';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import type { LocalSiteCache } from '../../functions/local/site-cache.js';

let service: TestService;
let a: AccountFixture;
let client: ReturnType<typeof graphqlClient>;
let scratch: string;

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  scratch = await mkdtemp(join(tmpdir(), 'cairn-site-hits-'));
  a = await newAccount(service, 'hits');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});

afterAll(async () => {
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
  const node = await service.services.ipfs();
  return (await importDirectory(node.blockstore, dir)).cid.toV1().toString();
}

async function deployCid(siteId: string, cid: string): Promise<void> {
  await gql('mutation ($s: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $s, input: $input) { id } }', {
    s: siteId,
    input: { deploySettings: { source: { ipfs: { cid } } } },
  });
  const queued = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: siteId })).triggerDeploy;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const d = dataOf(
      await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status published } }', { s: siteId, d: queued.id }),
    ).getDeployById;
    if (d.status !== 'IN_PROGRESS') {
      expect([d.status, d.published]).toEqual(['DEPLOYED', true]);
      return;
    }
    if (Date.now() > deadline) throw new Error('the deploy did not end in 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function publishedSite(files: Record<string, string>): Promise<{ id: string; slug: string }> {
  const cid = await importFiles(files);
  const site = dataOf(
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
      input: { deploySettings: { source: { ipfs: { cid } } } },
    }),
  ).createSite as { id: string; slug: string };
  await deployCid(site.id, cid);
  return site;
}

interface Raw {
  status: number;
  /** Every header as sent, in order, names as sent, Date left out. */
  headers: string[];
  body: Buffer;
}

/** A request to the gateway with exactly these headers; the answer's headers as they came on the wire. */
function raw(slug: string, path: string, init: { method?: string; headers?: Record<string, string> } = {}): Promise<Raw> {
  const url = new URL(service.endpoints.gateway);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: init.method ?? 'GET',
        headers: { host: `${slug}.${service.config.sites.domain}`, ...init.headers },
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
    req.end();
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
