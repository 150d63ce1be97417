/**
 * The gateway as the CDN's origin: `/sites/<siteId>/<path>` and
 * `/previews/<siteId>/<deployLabel>/<path>`, the paths the CloudFront
 * viewer-request function (functions/cdn/viewer-request.js) rewrites site
 * hosts to, served through both doors with the same website semantics as
 * the hosts themselves; and what a direct request for them can and cannot
 * see (nothing a site host does not serve, no escape from the site's root).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { startTestService, type TestService } from '../support/service.js';
import { v2Event, type LambdaFn } from '../support/lambda-door.js';
import { request } from 'node:http';
import { dataOf, finishedDeploy, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
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
  scratch = await mkdtemp(join(tmpdir(), 'cairn-cdn-origin-'));
  a = await newAccount(service, 'cdn');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});

afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const gql = async (query: string, variables: Record<string, unknown> = {}) => dataOf(await client.gql(a.apiKey, query, variables));

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

async function deploy(siteId: string): Promise<{ id: string; ipfsHash: string; published: boolean }> {
  const queued = (await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: siteId })).triggerDeploy;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const d = (
      await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { id status ipfsHash published } }', {
        s: siteId,
        d: queued.id,
      })
    ).getDeployById;
    if (d.status !== 'IN_PROGRESS') {
      expect(d.status).toBe('DEPLOYED');
      return d;
    }
    if (Date.now() > deadline) throw new Error('the deploy did not end in 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function publishedSite(files: Record<string, string>) {
  const cid = await importFiles(files);
  const site = (
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
      input: { deploySettings: { source: { ipfs: { cid } } } },
    })
  ).createSite as { id: string; slug: string };
  const d = await deploy(site.id);
  expect(d.published).toBe(true);
  return { ...site, root: d.ipfsHash, deployId: d.id };
}

const context = { awsRequestId: 'test', functionName: 'test', getRemainingTimeInMillis: () => 30000 } as unknown as Context;

/** GET with the target sent as it is: a URL (fetch, or node:http given one) resolves `..` before it leaves. */
function rawHttpGet(target: string, headers: Record<string, string>): Promise<Response> {
  const { hostname, port } = new URL(service.endpoints.gateway);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        const h = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2) h.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        resolve(new Response(status === 304 || !chunks.length ? null : Buffer.concat(chunks), { status, headers: h }));
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** The raw target as sent (WHATWG URLs would resolve `..` before it left). */
type RawFetch = (target: string, headers?: Record<string, string>) => Promise<Response>;
const doors: Array<{ name: string; get: RawFetch }> = [
  { name: 'node:http door', get: (target, headers = {}) => rawHttpGet(target, headers) },
  {
    name: 'Lambda door',
    get: async (target, headers = {}) => {
      const q = target.indexOf('?');
      const event = v2Event('GET', service.endpoints.gateway, headers);
      event.rawPath = q < 0 ? target : target.slice(0, q);
      event.rawQueryString = q < 0 ? '' : target.slice(q + 1);
      const result = (await gatewayLambda(event, context)) as APIGatewayProxyStructuredResultV2;
      const body = result.body ? Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8') : null;
      const status = result.statusCode ?? 200;
      return new Response(status === 304 || !body?.length ? null : body, { status, headers: result.headers as Record<string, string> });
    },
  },
];

const SITE = {
  'index.html': 'home of site one',
  'about/index.html': 'about site one',
  '404.html': 'site one has no such page',
  _redirects: '/old /about/ 301\n/go/:id /about/?id=:id 302\n',
};
const OTHER = { 'index.html': 'home of site two', 'secret.txt': 'site two only', 'cached.txt': 'kept until a purge' };

let one: Awaited<ReturnType<typeof publishedSite>>;
let two: Awaited<ReturnType<typeof publishedSite>>;
beforeAll(async () => {
  [one, two] = [await publishedSite(SITE), await publishedSite(OTHER)];
}, 60_000);

describe.each(doorsFor(doors))('CDN origin paths through the $name', ({ get }) => {
  test("/sites/<siteId>/ serves the published deploy with the site cache headers; the path after the id is the site's own", async () => {
    const root = await get(`/sites/${one.id}/`);
    expect(root.status).toBe(200);
    expect(await root.text()).toBe(SITE['index.html']);
    expect(root.headers.get('cache-control')).toBe('public, max-age=0, s-maxage=31536000, must-revalidate');
    expect(root.headers.get('x-ipfs-path')).toBe(`/ipfs/${one.root}/index.html`);
    const about = await get(`/sites/${one.id}/about/`);
    expect(await about.text()).toBe(SITE['about/index.html']);
    const missing = await get(`/sites/${one.id}/no/such`);
    expect([missing.status, await missing.text()]).toEqual([404, SITE['404.html']]);
  });

  test("redirects point at the viewer's own path (no /sites prefix) and carry the query string", async () => {
    const slash = await get(`/sites/${one.id}/about?x=1`);
    expect([slash.status, slash.headers.get('location')]).toEqual([301, '/about/?x=1']);
    const rule = await get(`/sites/${one.id}/old?ref=mail`);
    expect([rule.status, rule.headers.get('location')]).toEqual([301, '/about/?ref=mail']);
    const placeholder = await get(`/sites/${one.id}/go/42`);
    expect([placeholder.status, placeholder.headers.get('location')]).toEqual([302, '/about/?id=42']);
  });

  test("/previews/<siteId>/<deployLabel>/ serves that DEPLOYED deploy, uncached by the CDN; no other site's deploy, none unfinished", async () => {
    const preview = await get(`/previews/${one.id}/${one.deployId.toLowerCase()}/`);
    expect(preview.status).toBe(200);
    expect(await preview.text()).toBe(SITE['index.html']);
    expect(preview.headers.get('cache-control')).toBe('public, max-age=0, must-revalidate');
    // Another site's deploy under this site's id, and an unknown id.
    expect((await get(`/previews/${one.id}/${two.deployId.toLowerCase()}/`)).status).toBe(404);
    expect((await get(`/previews/${one.id}/0000000000aaaaaaaaaaaa/`)).status).toBe(404);
  });

  test(".., %2e%2e and encoded slashes stop at the site's root: another site is never reached", async () => {
    for (const path of [
      `/sites/${one.id}/../../sites/${two.id}/secret.txt`,
      `/sites/${one.id}/%2e%2e/%2E%2E/sites/${two.id}/secret.txt`,
      `/sites/${one.id}/..%2f..%2fsites%2f${two.id}%2fsecret.txt`,
      `/previews/${one.id}/${one.deployId.toLowerCase()}/../../../previews/${two.id}/${two.deployId.toLowerCase()}/secret.txt`,
    ]) {
      const res = await get(path);
      expect([res.status, await res.text()]).toEqual([404, SITE['404.html']]);
    }
    const nul = await get(`/sites/${one.id}/index.html%00.txt`);
    expect(nul.status).toBe(400);
  });

  test('unknown and malformed site ids are 404; a site with nothing published says so', async () => {
    const unknown = await get('/sites/00000000-0000-4000-8000-000000000000/');
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('no site or deploy answers');
    for (const path of [`/sites/${one.id.toUpperCase()}/`, '/sites/not-a-site-id/', `/sites/${one.id}`, `/previews/${one.id}/`]) {
      const res = await get(path);
      expect(res.status).toBe(404);
      expect(await res.text()).toContain('paths are /ipfs/<cid>');
    }
    const empty = (
      await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', {
        input: { deploySettings: { source: { ipfs: { cid: one.root } } } },
      })
    ).createSite;
    const unpublished = await get(`/sites/${empty.id}/`);
    expect(unpublished.status).toBe(404);
    expect(await unpublished.text()).toContain('no published deploy');
  });

  test('on a site host, /sites/... is just a path of that site', async () => {
    const res = await get(`/sites/${two.id}/secret.txt`, { host: `${one.slug}.${service.config.sites.domain}` });
    expect([res.status, await res.text()]).toEqual([404, SITE['404.html']]);
  });
});

test('a deploy that did not finish is not served, even with content recorded', async () => {
  const id = await finishedDeploy(service.services, one.id, two.root, 'FAILED');
  for (const door of doors) expect((await door.get(`/previews/${one.id}/${id.toLowerCase()}/secret.txt`)).status).toBe(404);
});

test('the local response cache keeps /sites/ answers per site, and purgeCache drops them', async () => {
  const get = doors[0]!.get;
  const first = await get(`/sites/${two.id}/cached.txt`);
  const second = await get(`/sites/${two.id}/cached.txt`);
  expect([first.headers.get('x-cache'), second.headers.get('x-cache')]).toEqual(['MISS', 'HIT']);
  expect(await gql('mutation ($s: String!) { purgeCache(input: { siteId: $s }) }', { s: two.id })).toEqual({ purgeCache: true });
  const after = await get(`/sites/${two.id}/cached.txt`);
  expect([after.headers.get('x-cache'), await after.text()]).toEqual(['MISS', OTHER['cached.txt']]);
});
