/**
 * Sites at their own address on the gateway, through both doors: real
 * deploys (the pipeline, through the GraphQL API, from directories imported
 * into the node or from a git server), then `<slug>.<sites domain>` and
 * `<deployId>--<slug>.<sites domain>` with website semantics, `/ipfs/` paths
 * into directories, the local response cache and its purges. Every wait is
 * a poll with a deadline.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { exporter } from 'ipfs-unixfs-exporter';
import { startTestService, type TestService } from '../support/service.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import { hostFetch } from '../support/http.js';
import {
  dataOf,
  graphqlDoors,
  graphqlClient,
  importGraphqlLambda,
  newAccount,
  onlyError,
  type AccountFixture,
} from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import type { LocalSiteCache } from '../../functions/local/site-cache.js';
import { doorsFor } from '../support/test-set.js';

let service: TestService;
let git: GitServer;
let gatewayLambda: LambdaFn;
let graphqlLambda: LambdaFn;
let a: AccountFixture;
let b: AccountFixture;
let client: ReturnType<typeof graphqlClient>;
let scratch: string;
const savedEnv = { ...process.env };

/** Small enough that a 1.5 MiB file is past the per-entry cap (an eighth of it). */
const CACHE_BYTES = 8 * 1024 * 1024;

beforeAll(async () => {
  [service, git] = await Promise.all([
    startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_SITE_CACHE_BYTES: String(CACHE_BYTES) }),
    startGitServer(),
  ]);
  Object.assign(process.env, service.env);
  gatewayLambda = ((await import('../../functions/gateway/handler.js')) as unknown as { handler: LambdaFn }).handler;
  graphqlLambda = await importGraphqlLambda();
  scratch = await mkdtemp(join(tmpdir(), 'cairn-sites-'));
  [a, b] = [await newAccount(service, 'sites'), await newAccount(service, 'other')];
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});

afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  await git?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const gql = async (query: string, variables: Record<string, unknown> = {}, key = a.apiKey) => client.gql(key, query, variables);

let dirs = 0;
/** A directory imported into the node as a deploy would be: its root CID (v1). */
async function importFiles(files: Record<string, string | Buffer>): Promise<string> {
  const dir = join(scratch, `site-${++dirs}`);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
  }
  const node = await service.services.ipfs();
  return (await importDirectory(node.blockstore, dir)).cid.toV1().toString();
}

async function getDeploy(siteId: string, deployId: string, key = a.apiKey) {
  return dataOf(
    await gql(
      'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { id status ipfsHash published log } }',
      { s: siteId, d: deployId },
      key,
    ),
  ).getDeployById;
}

async function poll<T>(what: string, get: () => Promise<T>, done: (v: T) => boolean, ms = 30_000, every = 50): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await get();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${ms} ms: ${JSON.stringify(value).slice(0, 1000)}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

async function deploy(siteId: string, key = a.apiKey) {
  const queued = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: siteId }, key)).triggerDeploy;
  const done = await poll(
    'the deploy',
    () => getDeploy(siteId, queued.id, key),
    (d) => d.status !== 'IN_PROGRESS',
  );
  expect(done.status).toBe('DEPLOYED');
  return done as { id: string; ipfsHash: string; published: boolean; log: string };
}

async function deployCid(siteId: string, cid: string, key = a.apiKey) {
  const queued = dataOf(
    await gql('mutation ($s: ID!, $c: String!) { deployCid(siteId: $s, cid: $c) { id } }', { s: siteId, c: cid }, key),
  ).deployCid;
  return poll(
    'the deploy',
    () => getDeploy(siteId, queued.id, key),
    (d) => d.status !== 'IN_PROGRESS',
  );
}

/** A site whose source is the CID of `files`, deployed and published. */
async function publishedSite(files: Record<string, string | Buffer>, key = a.apiKey) {
  const cid = await importFiles(files);
  const site = dataOf(
    await gql(
      'mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }',
      { input: { deploySettings: { source: { ipfs: { cid } } } } },
      key,
    ),
  ).createSite as { id: string; slug: string };
  const d = await deploy(site.id, key);
  expect(d.published).toBe(true);
  return { ...site, root: d.ipfsHash, deployId: d.id };
}

/** The CID of the file at `path` in the DAG `root`. */
async function cidAt(root: string, path: string): Promise<string> {
  const node = await service.services.ipfs();
  return (await exporter(`${root}/${path}`, node.blockstore)).cid.toString();
}

type Init = { method?: string; headers?: Record<string, string> };
type Fetch = (url: string, init?: Init) => Promise<Response>;
const doors: Array<{ name: string; fetch: Fetch; caches: boolean }> = [
  { name: 'node:http door', fetch: (url, init) => hostFetch(url, init), caches: true },
  { name: 'Lambda door', fetch: (url, init) => lambdaFetch(gatewayLambda)(url, init), caches: false },
];

const siteHostOf = (slug: string) => `${slug}.${service.config.sites.domain}`;
const SITE_CACHE_CONTROL = 'public, max-age=0, s-maxage=31536000, must-revalidate';
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(64)]);

const DOCS = {
  'index.html': '<!doctype html><h1>Home</h1>\n',
  'about/index.html': '<!doctype html><h1>About</h1>\n',
  'assets/app.js': 'console.log("app");\n',
  'data/blob': PNG,
  'files/a.txt': 'a file in a directory without an index',
  '404.html': '<!doctype html><h1>Custom not found</h1>\n',
  _redirects: [
    '# moves',
    '/old-about /about/',
    '/blog/:year/:slug /posts/:year/:slug 302',
    '/see-other /about/ 303',
    '/temp /index.html 307',
    '/perm /about/ 308',
    '/gone /404.html 410',
    '/legal /about/ 451',
    '/nope /missing.html 404',
    '/loop /loop 200',
    '/index.html /elsewhere 301',
    '/app/* /about/index.html 200',
  ].join('\n'),
  _headers: [
    '/assets/*',
    '  Cache-Control: public, max-age=31536000, immutable',
    '  X-Asset: yes',
    '/*',
    '  X-Frame-Options: DENY',
    '  X-Content-Type-Options: sniff-please',
    '  Connection: close-it',
  ].join('\n'),
};

let docs: { id: string; slug: string; root: string };
beforeAll(async () => {
  docs = await publishedSite(DOCS);
});

describe.each(doorsFor(doors))('site addresses through the $name', (door) => {
  const { caches } = door;
  const get = (path: string, init: Init = {}, host = siteHostOf(docs.slug)) =>
    door.fetch(`${service.endpoints.gateway}${path}`, { ...init, headers: { host, ...init.headers } });

  test('the root serves index.html with the site headers, its CID as ETag and _headers applied', async () => {
    const res = await get('/');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(DOCS['index.html']);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('etag')).toBe(`"${await cidAt(docs.root, 'index.html')}"`);
    expect(res.headers.get('x-ipfs-path')).toBe(`/ipfs/${docs.root}/index.html`);
    expect(res.headers.get('x-ipfs-roots')).toBe(docs.root);
    expect(res.headers.get('cache-control')).toBe(SITE_CACHE_CONTROL);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    // Protected headers cannot be set by _headers.
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('connection')).not.toBe('close-it');
    if (!caches) expect(res.headers.get('x-cache')).toBeNull();
  });

  test('a directory without its slash is a 301 keeping the query; with it, its index.html', async () => {
    const moved = await get('/about?x=1');
    expect(moved.status).toBe(301);
    expect(moved.headers.get('location')).toBe('/about/?x=1');
    const about = await get('/about/');
    expect(about.status).toBe(200);
    expect(await about.text()).toBe(DOCS['about/index.html']);
    expect(about.headers.get('x-ipfs-roots')).toBe(`${docs.root},${await cidAt(docs.root, 'about')}`);
  });

  test('Content-Type from the name, else the first bytes; _headers by path pattern', async () => {
    const js = await get('/assets/app.js');
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.headers.get('x-asset')).toBe('yes');
    expect(js.headers.get('x-frame-options')).toBe('DENY');
    const blob = await get('/data/blob');
    expect(blob.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await blob.arrayBuffer()).equals(PNG)).toBe(true);
    expect((await get('/')).headers.get('x-asset')).toBeNull();
  });

  test.each([
    ['/old-about?ref=1', 301, '/about/?ref=1'],
    ['/blog/2024/hello', 302, '/posts/2024/hello'],
    ['/see-other', 303, '/about/'],
    ['/temp?a=b', 307, '/index.html?a=b'],
    ['/perm', 308, '/about/'],
  ])('_redirects: %s is a %d to %s', async (path, status, location) => {
    const res = await get(path);
    expect(res.status).toBe(status);
    expect(res.headers.get('location')).toBe(location);
  });

  test('_redirects: 410, 451 and 404 serve their target with that status; a rewrite serves it with 200', async () => {
    const gone = await get('/gone');
    expect(gone.status).toBe(410);
    expect(await gone.text()).toBe(DOCS['404.html']);
    const legal = await get('/legal');
    expect(legal.status).toBe(451);
    expect(await legal.text()).toBe(DOCS['about/index.html']);
    const rewrite = await get('/app/some/route');
    expect(rewrite.status).toBe(200);
    expect(await rewrite.text()).toBe(DOCS['about/index.html']);
    expect(rewrite.headers.get('etag')).toBe(`"${await cidAt(docs.root, 'about/index.html')}"`);
    const nope = await get('/nope');
    expect(nope.status).toBe(404);
    expect(await nope.text()).not.toContain('Custom not found');
  });

  test('rules apply only to missing paths; a missing path without a rule gets 404.html with 404; a rewrite to itself stops', async () => {
    const index = await get('/index.html');
    expect(index.status).toBe(200);
    expect(await index.text()).toBe(DOCS['index.html']);
    const missing = await get('/no/such/page');
    expect(missing.status).toBe(404);
    expect(await missing.text()).toBe(DOCS['404.html']);
    expect(missing.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const loop = await get('/loop');
    expect(loop.status).toBe(404);
    expect(await loop.text()).toBe(DOCS['404.html']);
  });

  test('a directory without index.html is a 404 on a site address', async () => {
    const res = await get('/files/');
    expect(res.status).toBe(404);
    expect(await res.text()).toBe(DOCS['404.html']);
  });

  test('Range, conditional requests and HEAD', async () => {
    const etag = `"${await cidAt(docs.root, 'assets/app.js')}"`;
    const part = await get('/assets/app.js', { headers: { range: 'bytes=0-6' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 0-6/${DOCS['assets/app.js'].length}`);
    expect(await part.text()).toBe('console');
    const notModified = await get('/assets/app.js', { headers: { 'if-none-match': etag } });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get('etag')).toBe(etag);
    const head = await get('/assets/app.js', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(DOCS['assets/app.js'].length));
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });

  test('.., %2e%2e, double slashes and NUL never leave the site root', async () => {
    for (const path of ['/../../assets/app.js', '/%2e%2e/%2E%2E/assets/app.js', '//assets//app.js', '/files/..%2f..%2fassets/app.js']) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(DOCS['assets/app.js']);
    }
    const escaped = await get('/%2e%2e/%2e%2e/etc/passwd');
    expect(escaped.status).toBe(404);
    expect(await escaped.text()).toBe(DOCS['404.html']);
    expect((await get('/index.html%00.js')).status).toBe(400);
  });

  test('hosts with ports, upper case and a trailing dot name the same site; unknown hosts and unpublished sites are 404', async () => {
    const [name, port] = [siteHostOf(docs.slug).split(':')[0]!, service.config.ports.gateway];
    for (const host of [name.toUpperCase(), `${name}.`, `${name.toUpperCase()}.:${port}`, `${name}:80`]) {
      const res = await get('/', {}, host);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(DOCS['index.html']);
    }
    const unknown = await get('/', {}, siteHostOf('no-such-site-here'));
    expect(unknown.status).toBe(404);
    // Neither "no such site" nor "nothing published" may be kept by a cache: the site may be made or published a moment later.
    expect(unknown.headers.get('cache-control')).toBe('no-store');
    const empty = dataOf(
      await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { slug } }', {
        input: { deploySettings: { source: { ipfs: { cid: docs.root } } } },
      }),
    ).createSite;
    const unpublished = await get('/', {}, siteHostOf(empty.slug));
    expect(unpublished.status).toBe(404);
    expect(unpublished.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await unpublished.text()).toContain('no published deploy');
    expect(unpublished.headers.get('cache-control')).toBe('no-store');
    if (caches) expect(unpublished.headers.get('x-cache')).toBeNull();
  });

  test('_redirects and _headers at the root are not served on a site address, but are files under /ipfs/', async () => {
    for (const path of ['/_redirects', '/_headers', '/%5Fredirects']) {
      const res = await get(path);
      expect(res.status).toBe(404);
      expect(await res.text()).toBe(DOCS['404.html']);
    }
    const raw = await door.fetch(`${service.endpoints.gateway}/ipfs/${docs.root}/_redirects`);
    expect(raw.status).toBe(200);
    expect(await raw.text()).toBe(DOCS._redirects);
    expect(await (await door.fetch(`${service.endpoints.gateway}/ipfs/${docs.root}/_headers`)).text()).toBe(DOCS._headers);
  });

  test('/ipfs/<cid>[/path] serves directories: 301 to the slash, index.html, a listing with its ETag, X-Ipfs-Path as requested', async () => {
    const gw = service.endpoints.gateway;
    const bare = await door.fetch(`${gw}/ipfs/${docs.root}?q=1`);
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe(`/ipfs/${docs.root}/?q=1`);
    const root = await door.fetch(`${gw}/ipfs/${docs.root}/`);
    expect(root.status).toBe(200);
    expect(await root.text()).toBe(DOCS['index.html']);
    // The directory's own CID names what it serves (path gateway spec, ETag).
    expect(root.headers.get('etag')).toBe(`"${docs.root}"`);
    expect(root.headers.get('x-ipfs-path')).toBe(`/ipfs/${docs.root}/`);
    const js = await door.fetch(`${gw}/ipfs/${docs.root}/assets/app.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('etag')).toBe(`"${await cidAt(docs.root, 'assets/app.js')}"`);
    expect(js.headers.get('x-ipfs-roots')).toBe(
      [docs.root, await cidAt(docs.root, 'assets'), await cidAt(docs.root, 'assets/app.js')].join(','),
    );
    const filesCid = await cidAt(docs.root, 'files');
    const listing = await door.fetch(`${gw}/ipfs/${docs.root}/files/`);
    expect(listing.status).toBe(200);
    expect(listing.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const listingEtag = listing.headers.get('etag')!;
    expect(listingEtag).toMatch(new RegExp(`^"DirIndex-[0-9a-f]+_CID-${filesCid}"$`));
    const html = await listing.text();
    expect(html).toContain(`href="/ipfs/${docs.root}/files/a.txt"`);
    expect(html).toContain(await cidAt(docs.root, 'files/a.txt'));
    expect((await door.fetch(`${gw}/ipfs/${docs.root}/files/`, { headers: { 'if-none-match': listingEtag } })).status).toBe(304);
    expect((await door.fetch(`${gw}/ipfs/${docs.root}/no/such`)).status).toBe(404);
  });
});

describe('single-page apps, previews and bad rule files', () => {
  const get = (slug: string, path: string, init: Init = {}) =>
    hostFetch(`${service.endpoints.gateway}${path}`, { ...init, headers: { host: siteHostOf(slug), ...init.headers } });

  test('`/* /index.html 200` serves the app for every route while real files stay themselves', async () => {
    const app = await publishedSite({ 'index.html': '<div id=app></div>', 'main.js': 'boot()', _redirects: '/* /index.html 200\n' });
    for (const door of doors) {
      const route = await door.fetch(`${service.endpoints.gateway}/users/42/settings`, { headers: { host: siteHostOf(app.slug) } });
      expect(route.status).toBe(200);
      expect(await route.text()).toBe('<div id=app></div>');
      const main = await door.fetch(`${service.endpoints.gateway}/main.js`, { headers: { host: siteHostOf(app.slug) } });
      expect(await main.text()).toBe('boot()');
    }
  });

  test('`/* /404.html 404` answers every missing path with the custom page and status 404; real files stay themselves', async () => {
    const site = await publishedSite({
      'index.html': 'home',
      'docs/a.html': 'a',
      '404.html': '<p>custom missing</p>',
      _redirects: '/* /404.html 404\n',
    });
    const pageEtag = `"${await cidAt(site.root, '404.html')}"`;
    for (const door of doors) {
      const at = (path: string) => door.fetch(`${service.endpoints.gateway}${path}`, { headers: { host: siteHostOf(site.slug) } });
      for (const path of ['/no/such/page?x=1', '/docs/b.html', '/docs/']) {
        const missing = await at(path);
        expect([missing.status, await missing.text()]).toEqual([404, '<p>custom missing</p>']);
        expect(missing.headers.get('content-type')).toBe('text/html; charset=utf-8');
        expect(missing.headers.get('etag')).toBe(pageEtag);
        expect(missing.headers.get('location')).toBeNull();
      }
      const real = await at('/docs/a.html');
      expect([real.status, await real.text()]).toEqual([200, 'a']);
      expect(await (await at('/')).text()).toBe('home');
    }
  });

  test('a valid 10,000-line _redirects under 64 KiB: a rule near the end applies, a path no rule names gets 404.html', async () => {
    const rules = [
      ...Array.from({ length: 9_998 }, (_, i) => `/${(i % 1296).toString(36)} /`),
      '/near/:name /found/:name 302',
      '/last /',
    ].join('\n');
    expect(Buffer.byteLength(rules)).toBeLessThan(64 * 1024);
    const site = await publishedSite({ 'index.html': 'home', '404.html': 'not here', _redirects: rules });
    for (const door of doors) {
      const at = (path: string) => door.fetch(`${service.endpoints.gateway}${path}`, { headers: { host: siteHostOf(site.slug) } });
      const near = await at('/near/thing?q=1');
      expect([near.status, near.headers.get('location')]).toEqual([302, '/found/thing?q=1']);
      const last = await at('/last');
      expect([last.status, last.headers.get('location')]).toEqual([301, '/']);
      const missing = await at('/no/such/page');
      expect([missing.status, await missing.text()]).toEqual([404, 'not here']);
      expect((await at('/')).status).toBe(200);
    }
  });

  test('a _redirects that does not parse: existing paths serve, a missing one is 500 naming the line; over 64 KiB likewise', async () => {
    const bad = await publishedSite({ 'index.html': 'home', _redirects: '/ok /index.html 200\n/bad /x 999\n' });
    for (const door of doors) {
      const at = (path: string) => door.fetch(`${service.endpoints.gateway}${path}`, { headers: { host: siteHostOf(bad.slug) } });
      expect((await at('/')).status).toBe(200);
      const res = await at('/missing');
      expect(res.status).toBe(500);
      // The web-redirects-file spec's 500, in Kubo's words (gateway-conformance: "could not parse _redirects:").
      const text = await res.text();
      expect(text).toMatch(
        /^Internal Server Error: trouble processing _redirects file at "\/ipfs\/\w+\/_redirects": could not parse _redirects: /,
      );
      expect(text).toContain('_redirects line 2: the status must be one of 200, 301, 302, 303, 307, 308, 404, 410, 451 ("/bad /x 999")\n');
    }
    const huge = await publishedSite({
      'index.html': 'home',
      _redirects: Array.from({ length: 10_000 }, (_, i) => `/old-${i} /new-${i} 301`).join('\n'),
    });
    for (const door of doors) {
      const over = await door.fetch(`${service.endpoints.gateway}/old-1`, { headers: { host: siteHostOf(huge.slug) } });
      expect(over.status).toBe(500);
      // gateway-conformance: "could not parse _redirects:" and "redirects file size cannot exceed".
      expect(await over.text()).toMatch(
        /^Internal Server Error: trouble processing _redirects file at "\/ipfs\/\w+\/_redirects": could not parse _redirects: _redirects: redirects file size cannot exceed 65536 bytes: the file is \d+ bytes/,
      );
    }
    expect((await get(huge.slug, '/')).status).toBe(200);
  });

  test('a deploy from git warns in its log about a _redirects that does not parse', async () => {
    const repo = 'acme/bad-redirects';
    await git.commit(repo, { 'index.html': 'hi', _redirects: '/a\n' }, 'add a broken rule');
    const site = dataOf(
      await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
        input: { deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } } },
      }),
    ).createSite;
    const d = await deploy(site.id);
    expect(d.log).toMatch(/Warning: _redirects line 1: a rule needs a source path and a target/);
    expect((await get(site.slug, '/')).status).toBe(200);
  });

  test('a deploy from a CID (deployCid) warns in its log about a _redirects that does not parse, too', async () => {
    const site = await publishedSite({ 'index.html': 'first' });
    const cid = await importFiles({ 'index.html': 'from a CID', _redirects: '/fine /index.html 200\n/a /b 302 extra\n' });
    const d = await deployCid(site.id, cid);
    expect(d.status).toBe('DEPLOYED');
    expect(d.log).toMatch(/Warning: _redirects line 2: too many fields/);
    // The site is published all the same, and its existing paths serve.
    expect(await (await get(site.slug, '/')).text()).toBe('from a CID');
    const clean = await deployCid(site.id, await importFiles({ 'index.html': 'clean' }));
    expect(clean.log).not.toMatch(/Warning/);
  });

  test('a deploy from git whose _headers holds a value past ASCII, or a cookie for another domain, fails naming the line; the live deploy keeps serving', async () => {
    const repo = 'acme/bad-headers';
    await git.commit(repo, { 'index.html': 'live', _headers: '/*\n  X-Fine: yes\n' }, 'good headers');
    const site = dataOf(
      await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
        input: { deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } } },
      }),
    ).createSite;
    await deploy(site.id);
    const cases: Array<[string, RegExp]> = [
      ['/*\n  X-Fine: yes\n  X-Price: 5 €\n', /Failed: _headers line 3: the value of X-Price holds "€"; header values are visible ASCII/],
      [
        `# cookies\n/*\n  Set-Cookie: sid=attacker; Path=/; Domain=${service.config.sites.domain}\n`,
        /Failed: _headers line 3: a cookie set by _headers stays with the site's own address: remove its Domain attribute/,
      ],
    ];
    for (const [headers, failure] of cases) {
      await git.commit(repo, { 'index.html': 'never served', _headers: headers }, 'bad headers');
      const queued = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id })).triggerDeploy;
      const done = await poll(
        'the deploy',
        () => getDeploy(site.id, queued.id),
        (d) => d.status !== 'IN_PROGRESS',
      );
      expect([done.status, done.published]).toEqual(['FAILED', false]);
      expect(done.log).toMatch(failure);
      for (const door of doors) {
        const res = await door.fetch(`${service.endpoints.gateway}/`, { headers: { host: siteHostOf(site.slug) } });
        expect([res.status, await res.text(), res.headers.get('x-fine'), res.headers.get('set-cookie')]).toEqual([
          200,
          'live',
          'yes',
          null,
        ]);
      }
    }
  });

  test('content deployed by CID (no check at publish) with unsendable _headers lines serves: those lines are left out, the others apply', async () => {
    const headers = [
      '/*',
      '  X-Before: 1',
      '  X-Price: 5 €',
      '  X-Bell: a\u0007b',
      `  Set-Cookie: sid=attacker; Path=/; Domain=${service.config.sites.domain}`,
      '  Set-Cookie: own=1; Path=/; Secure',
      '  X-After: 2',
    ].join('\n');
    const site = await publishedSite({ 'index.html': 'served', _headers: headers });
    for (const door of doors) {
      for (const path of ['/', '/missing']) {
        const res = await door.fetch(`${service.endpoints.gateway}${path}`, { headers: { host: siteHostOf(site.slug) } });
        expect(res.status).toBe(path === '/' ? 200 : 404);
        expect([res.headers.get('x-before'), res.headers.get('x-after'), res.headers.get('x-price'), res.headers.get('x-bell')]).toEqual([
          '1',
          '2',
          null,
          null,
        ]);
        // Only the host-only cookie: nothing reaches the other sites under the sites domain.
        expect(res.headers.get('set-cookie')).toBe('own=1; Path=/; Secure');
      }
      const page = await door.fetch(`${service.endpoints.gateway}/`, { headers: { host: siteHostOf(site.slug) } });
      expect(await page.text()).toBe('served');
    }
  });

  test('a file over 6 MB streams whole through the gateway Lambda, from a site address and from /ipfs/', async () => {
    // The Lambda runtime streams a handler so marked (the Function URL in RESPONSE_STREAM mode); a buffered answer stops at 6 MB.
    expect((gatewayLambda as unknown as Record<symbol, unknown>)[Symbol.for('aws.lambda.runtime.handler.streaming')]).toBe('response');
    const big = randomBytes(7 * 1024 * 1024);
    const site = await publishedSite({ 'index.html': 'x', 'big.bin': big });
    const gw = service.endpoints.gateway;
    for (const [url, headers] of [
      [`${gw}/big.bin`, { host: siteHostOf(site.slug) }],
      [`${gw}/ipfs/${site.root}/big.bin`, {}],
    ] as const) {
      const res = await lambdaFetch(gatewayLambda)(url, { headers });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-length')).toBe(String(big.length));
      const got = new Uint8Array(await res.arrayBuffer());
      expect(got.byteLength).toBe(big.length);
      expect(sha256(got)).toBe(sha256(big));
    }
  });

  test("a deploy address's custom 404, 410 and 451 pages are immutable, as Kubo sends those of immutable content; the site's are not", async () => {
    const site = await publishedSite({
      'index.html': 'home',
      '404.html': 'custom missing',
      'gone.html': 'gone for good',
      'own/x.html': 'x',
      _redirects: '/old /gone.html 410\n/own/* /404.html 404\n',
      _headers: '/own/*\n  Cache-Control: max-age=60\n',
    });
    const deployHost = `${site.deployId.toLowerCase()}--${site.slug}.${service.config.sites.domain}`;
    for (const door of doors) {
      const at = async (host: string, path: string) => {
        const res = await door.fetch(`${service.endpoints.gateway}${path}`, { headers: { host } });
        return [res.status, await res.text(), res.headers.get('cache-control')];
      };
      expect(await at(deployHost, '/missing')).toEqual([404, 'custom missing', 'public, max-age=29030400, immutable']);
      expect(await at(deployHost, '/old')).toEqual([410, 'gone for good', 'public, max-age=29030400, immutable']);
      // A page that is there keeps the deploy address's own caching; a _headers Cache-Control stays the site's choice.
      expect(await at(deployHost, '/')).toEqual([200, 'home', 'public, max-age=0, must-revalidate']);
      expect(await at(deployHost, '/own/y.html')).toEqual([404, 'custom missing', 'max-age=60']);
      // The published address changes with each publish: its 404 is revalidated like its pages.
      expect(await at(siteHostOf(site.slug), '/missing')).toEqual([404, 'custom missing', SITE_CACHE_CONTROL]);
    }
  });

  test('<deployId>--<slug> serves that deploy, published or not, and is never cached as the site', async () => {
    const site = await publishedSite({ 'index.html': 'first' });
    const second = await importFiles({ 'index.html': 'second' });
    await gql('mutation ($s: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $s, input: $input) { id } }', {
      s: site.id,
      input: { deploySettings: { autoPublishing: false, source: { ipfs: { cid: second } } } },
    });
    const unpublished = await deploy(site.id);
    expect(unpublished.published).toBe(false);
    const previewHost = `${unpublished.id.toLowerCase()}--${site.slug}.${service.config.sites.domain}`.toUpperCase();
    for (const door of doors) {
      const preview = await door.fetch(`${service.endpoints.gateway}/`, { headers: { host: previewHost } });
      expect(preview.status).toBe(200);
      expect(await preview.text()).toBe('second');
      expect(preview.headers.get('cache-control')).not.toContain('s-maxage');
      expect(preview.headers.get('x-cache')).toBeNull();
      const published = await door.fetch(`${service.endpoints.gateway}/`, { headers: { host: siteHostOf(site.slug) } });
      expect(await published.text()).toBe('first');
      const old = await door.fetch(`${service.endpoints.gateway}/`, {
        headers: { host: `${site.deployId.toLowerCase()}--${site.slug}.${service.config.sites.domain}` },
      });
      expect(await old.text()).toBe('first');
      const unknown = await door.fetch(`${service.endpoints.gateway}/`, {
        headers: { host: `0000000000aaaaaaaaaaaa--${site.slug}.${service.config.sites.domain}` },
      });
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get('cache-control')).toBe('no-store');
    }
  });
});

describe('the site cache and purgeCache', () => {
  const get = (slug: string, path: string, init: Init = {}) =>
    hostFetch(`${service.endpoints.gateway}${path}`, { ...init, headers: { host: siteHostOf(slug), ...init.headers } });
  const purge = (siteId: string, key = a.apiKey) => gql('mutation ($s: String!) { purgeCache(input: { siteId: $s }) }', { s: siteId }, key);

  test('a repeated GET is a HIT with the same answer; a range or a 304 is cut from the cached whole', async () => {
    const site = await publishedSite({ 'index.html': 'cached page', 'big.txt': 'x'.repeat(5000) });
    // A range first: the partial answer must not be what later requests get.
    const part = await get(site.slug, '/big.txt', { headers: { range: 'bytes=10-19' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('x-cache')).toBe('MISS');
    const whole = await get(site.slug, '/big.txt');
    expect(whole.status).toBe(200);
    expect(whole.headers.get('x-cache')).toBe('HIT');
    expect(await whole.text()).toBe('x'.repeat(5000));
    expect(whole.headers.get('content-length')).toBe('5000');
    const first = await get(site.slug, '/');
    const second = await get(site.slug, '/');
    expect([first.headers.get('x-cache'), second.headers.get('x-cache')]).toEqual(['MISS', 'HIT']);
    expect(await second.text()).toBe('cached page');
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
    const range = await get(site.slug, '/', { headers: { range: 'bytes=0-5' } });
    expect([range.status, range.headers.get('x-cache'), await range.text()]).toEqual([206, 'HIT', 'cached']);
    const notModified = await get(site.slug, '/', { headers: { 'if-none-match': first.headers.get('etag')! } });
    expect([notModified.status, notModified.headers.get('x-cache')]).toEqual([304, 'HIT']);
    const head = await get(site.slug, '/', { method: 'HEAD' });
    expect([head.status, head.headers.get('x-cache'), head.headers.get('content-length')]).toEqual([200, 'HIT', '11']);
    const notFound = [await get(site.slug, '/missing'), await get(site.slug, '/missing')];
    expect(notFound.map((r) => [r.status, r.headers.get('x-cache')])).toEqual([
      [404, 'MISS'],
      [404, 'HIT'],
    ]);
  });

  test('a file past the per-entry cap is served whole every time and never cached', async () => {
    const big = randomBytes(1.5 * 1024 * 1024);
    const site = await publishedSite({ 'index.html': 'x', 'big.bin': big });
    for (let i = 0; i < 2; i++) {
      const res = await get(site.slug, '/big.bin');
      expect(res.status).toBe(200);
      expect(res.headers.get('x-cache')).toBe('MISS');
      expect(Buffer.from(await res.arrayBuffer()).equals(big)).toBe(true);
    }
  });

  test("purgeCache drops that site's entries only; another team's site is FORBIDDEN and keeps its entries", async () => {
    const [one, two] = [await publishedSite({ 'index.html': 'one' }), await publishedSite({ 'index.html': 'two' })];
    const theirs = await publishedSite({ 'index.html': 'theirs' }, b.apiKey);
    for (const s of [one, two, theirs]) {
      await get(s.slug, '/');
      expect((await get(s.slug, '/')).headers.get('x-cache')).toBe('HIT');
    }
    expect(dataOf(await purge(one.id))).toEqual({ purgeCache: true });
    const after = await get(one.slug, '/');
    expect([after.headers.get('x-cache'), await after.text()]).toEqual(['MISS', 'one']);
    expect((await get(one.slug, '/')).headers.get('x-cache')).toBe('HIT');
    expect((await get(two.slug, '/')).headers.get('x-cache')).toBe('HIT');
    for (const door of doorsFor(graphqlDoors(() => graphqlLambda))) {
      const refused = await graphqlClient(door, service.endpoints.graphql).gql(
        a.apiKey,
        'mutation ($s: String!) { purgeCache(input: { siteId: $s }) }',
        { s: theirs.id },
      );
      expect(onlyError(refused).extensions.code).toBe('FORBIDDEN');
      expect((await get(theirs.slug, '/')).headers.get('x-cache')).toBe('HIT');
    }
    const empty = dataOf(
      await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', {
        input: { deploySettings: { source: { ipfs: { cid: one.root } } } },
      }),
    ).createSite;
    expect(dataOf(await purge(empty.id))).toEqual({ purgeCache: true });
  });

  test('deleting a site drops its cached answers and host entry; other sites keep theirs', async () => {
    const cache = service.services.siteCache as LocalSiteCache;
    const [gone, kept] = [await publishedSite({ 'index.html': 'gone', 'a.txt': 'a' }), await publishedSite({ 'index.html': 'kept' })];
    for (const s of [gone, kept]) {
      await get(s.slug, '/');
      expect((await get(s.slug, '/')).headers.get('x-cache')).toBe('HIT');
    }
    await get(gone.slug, '/a.txt');
    expect(cache.entriesOf(gone.id)).toBe(2);
    expect(dataOf(await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: gone.id }))).toEqual({ deleteSite: true });
    expect(cache.entriesOf(gone.id)).toBe(0);
    expect(cache.getHost(gone.slug)).toBeUndefined();
    // At once, not when the host entry expires.
    const after = await get(gone.slug, '/');
    expect([after.status, after.headers.get('cache-control')]).toEqual([404, 'no-store']);
    expect(cache.entriesOf(kept.id)).toBe(1);
    expect((await get(kept.slug, '/')).headers.get('x-cache')).toBe('HIT');
  });

  test('within a second of a deploy being published, and of publishDeploy rolling back, the address serves it', async () => {
    const site = await publishedSite({ 'index.html': 'version one' });
    await get(site.slug, '/');
    expect((await get(site.slug, '/')).headers.get('x-cache')).toBe('HIT');
    const next = await importFiles({ 'index.html': 'version two' });
    await gql('mutation ($s: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $s, input: $input) { id } }', {
      s: site.id,
      input: { deploySettings: { source: { ipfs: { cid: next } } } },
    });
    const queued = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id })).triggerDeploy;
    await poll(
      'publishing',
      () => getDeploy(site.id, queued.id),
      (d) => d.published === true,
      30_000,
      10,
    );
    const body = async () => (await get(site.slug, '/')).text();
    await poll('the new deploy at the address', body, (t) => t === 'version two', 1000, 10);
    const lambdaBody = async () =>
      (await lambdaFetch(gatewayLambda)(`${service.endpoints.gateway}/`, { headers: { host: siteHostOf(site.slug) } })).text();
    await poll('the new deploy through the Lambda door', lambdaBody, (t) => t === 'version two', 1000, 10);
    expect((await get(site.slug, '/')).headers.get('x-cache')).toBe('HIT');
    // publishDeploy answers once the cache is purged: the very next request sees the rollback.
    dataOf(await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: site.deployId }));
    const rolledBack = await get(site.slug, '/');
    expect([rolledBack.headers.get('x-cache'), await rolledBack.text()]).toEqual(['MISS', 'version one']);
  });
});
