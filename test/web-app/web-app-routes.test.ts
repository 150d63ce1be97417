/**
 * The web app's routes on the API port, through both doors (node:http and
 * the GraphQL Lambda handler): the page, its content-hashed files (cached
 * for a year, gzip, ETag), /app/config.json with the service's public
 * endpoints and nothing secret, and the refusals (404, 405). The build the
 * CDK stack calls (buildWebApp) writes files that the route then serves as
 * they are. And the S3 endpoint's CORS for the app's origin: on every
 * bucket and on ListBuckets, whatever the buckets' own rules, while other
 * origins still get only what each bucket's rules allow. Last, the app's
 * own SigV4 signer (WebCrypto, as in the browser) against the real endpoint.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { CreateBucketCommand, PutBucketCorsCommand } from '@aws-sdk/client-s3';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { hostFetch } from '../support/http.js';
import { lambdaFetch } from '../support/lambda-door.js';
import { httpRequest } from '../../functions/core/http/types.js';
import { buildWebApp } from '../../functions/web-app/build.js';
import { isWebAppPath, WebApp, webAppSource } from '../../functions/web-app/serve.js';
import { webAppOrigins } from '../../functions/core/web-app-origins.js';
import { BOOT } from '../support/service.js';
import { encodeKey, encodeRfc3986, sha256Hex, signRequest, UNSIGNED_PAYLOAD } from '../../functions/web-app/ui/sigv4.js';
import { s3Url } from '../../functions/web-app/ui/s3.js';
import { href, parseHash, type Route } from '../../functions/web-app/ui/router.js';

let target: ApiTarget;
const savedEnv = { ...process.env };

beforeAll(async () => {
  target = await apiTarget();
}, 120_000);

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

type Get = (path: string, init?: { method?: string; headers?: Record<string, string> }) => Promise<Response>;
const apiBase = () => target.endpoints.graphql.replace(/\/graphql$/, '');
const doors: Array<{ name: string; get: Get }> = [
  { name: 'node:http door', get: (path, init) => hostFetch(`${apiBase()}${path}`, init) },
  { name: 'Lambda door', get: (path, init) => lambdaFetch(target.graphqlLambda!)(`${apiBase()}${path}`, init) },
];

const assetPaths = (html: string) => [...html.matchAll(/(?:src|href)="(\/app\/assets\/[^"]+)"/g)].map((m) => m[1]!);

test('the route takes / and /app/... only: /graphql, /hooks/ and the rest stay with the API', () => {
  for (const path of ['/', '/app/', '/app/config.json', '/app/assets/app-ABC.js']) expect(isWebAppPath(path)).toBe(true);
  for (const path of ['/graphql', '/graphql/', '/hooks/git/x', '/imports/x', '/app', '/application', '/index.html', '//'])
    expect(isWebAppPath(path)).toBe(false);
});

test("the app's hash routes read back what they write, a site's git & notifications page among them", () => {
  const routes: Route[] = [
    { name: 'sites' },
    { name: 'new-site' },
    { name: 'site', siteId: 'S1' },
    { name: 'site-settings', siteId: 'S1' },
    { name: 'site-integrations', siteId: 'S 1/x' },
    { name: 'site-domains', siteId: 'S 1/x' },
    { name: 'deploy', siteId: 'S1', deployId: 'D1' },
    { name: 'team' },
    { name: 'settings' },
    { name: 'storage' },
    { name: 'bucket', bucket: 'b', prefix: 'a/b c/' },
  ];
  for (const route of routes) expect(parseHash(href(route))).toEqual(route);
  expect(href({ name: 'site-integrations', siteId: 'S1' })).toBe('#/sites/S1/integrations');
  expect(href({ name: 'site-domains', siteId: 'S1' })).toBe('#/sites/S1/domains');
  expect(href({ name: 'settings' })).toBe('#/settings');
  expect(parseHash('#/sites/S1/integrations/more')).toEqual({ name: 'not-found', path: '/sites/S1/integrations/more' });
});

describe.each(doors)('through the $name', ({ get }) => {
  test("GET / is the page: no-cache, a strict CSP naming only the service's own origins, and hashed files that exist", async () => {
    const res = await get('/', { headers: { accept: 'text/html', 'accept-encoding': 'identity' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain(`connect-src 'self' ${target.endpoints.s3}`);
    expect(csp).toContain(`img-src 'self' data: ${target.endpoints.gateway}`);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const html = await res.text();
    expect(html).toContain('<title>Cairn</title>');
    expect(html).toContain('<div id="root">');
    // Nothing from another host: no CDN fonts or scripts.
    expect(html.replace(/http:\/\/www\.w3\.org\/2000\/svg/g, '')).not.toMatch(/https?:\/\//);
    const paths = assetPaths(html);
    expect(paths.map((p) => p.replace(/-[A-Z0-9]{8}\./, '-HASH.'))).toEqual(['/app/assets/app-HASH.css', '/app/assets/app-HASH.js']);
    const head = await get('/', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(res.headers.get('etag'));
    expect(await head.text()).toBe('');
  });

  test('the files are cached for a year, answer If-None-Match with 304, and come gzipped to clients that take it', async () => {
    const html = await (await get('/', { headers: { 'accept-encoding': 'identity' } })).text();
    for (const path of assetPaths(html)) {
      const plain = await get(path, { headers: { 'accept-encoding': 'identity' } });
      expect(plain.status).toBe(200);
      expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(plain.headers.get('content-type')).toBe(path.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8');
      expect(plain.headers.get('content-encoding')).toBeNull();
      const body = Buffer.from(await plain.arrayBuffer());
      expect(body.length).toBe(Number(plain.headers.get('content-length')));
      if (path.endsWith('.js')) {
        // React's production build, and no development-only code paths.
        expect(body.toString()).toContain('react.production');
        expect(body.toString()).not.toContain('react.development');
      }
      const zipped = await get(path, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
      expect(zipped.headers.get('content-encoding')).toBe('gzip');
      const gz = Buffer.from(await zipped.arrayBuffer());
      expect(gz.length).toBeLessThan(body.length);
      expect(gunzipSync(gz).equals(body)).toBe(true);
      const etag = plain.headers.get('etag')!;
      const again = await get(path, { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
      expect(again.headers.get('etag')).toBe(etag);
    }
  });

  test('/app/config.json gives the public endpoints the app needs, and nothing secret', async () => {
    const res = await get('/app/config.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const text = await res.text();
    const config = JSON.parse(text);
    const local = target.local!.config;
    expect(config).toEqual({
      graphqlPath: '/graphql',
      storageEndpoint: target.endpoints.s3,
      region: 'us-east-1',
      gatewayUrl: target.endpoints.gateway,
      publicGatewayUrl: local.urls.publicGatewayUrl,
      sites: { scheme: 'http:', domain: local.sites.domain },
      publicFiles: { scheme: 'http:', domain: local.urls.storagePublicDomain },
      maxPutBytes: expect.any(Number),
      signUp: local.signup,
      // The test service is at 127.0.0.1: an IP address, where browsers allow no WebAuthn.
      passkeys: false,
    });
    for (const secret of [BOOT.secretAccessKey, BOOT.apiToken, BOOT.accessKeyId]) expect(text).not.toContain(secret);
  });

  test('/app/settings sends the browser to the settings page of the app, at / with its hash route', async () => {
    const res = await get('/app/settings');
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/#/settings');
    expect(parseHash(new URL(res.headers.get('location')!, 'http://x').hash)).toEqual({ name: 'settings' });
    expect((await get('/app/settings/more')).status).toBe(404);
  });

  test("/app/device, the command line's login page (RFC 8628's verification URI), is the app's page with its headers", async () => {
    const [root, device] = await Promise.all([get('/'), get('/app/device?user_code=WDJB-MJHT')]);
    expect(device.status).toBe(200);
    expect(await device.text()).toBe(await root.text());
    for (const name of ['content-type', 'content-security-policy', 'cache-control', 'x-frame-options'])
      expect(device.headers.get(name)).toBe(root.headers.get(name));
  });

  test('other paths are 404 and other methods 405, in plain text; the API is untouched', async () => {
    for (const path of [
      '/app/',
      '/app/assets/',
      '/app/assets/nope-12345678.js',
      '/app/assets/../index.html',
      '/app/index.html',
      '/app/assets/a/b.js',
      '/app/device/x',
    ]) {
      const res = await get(path);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await res.text()).toContain('The web app is at /');
    }
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const res = await get('/', { method });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
    }
    const api = await get('/graphql?query=%7B__typename%7D');
    expect(api.status).toBe(200);
    expect(await api.json()).toEqual({ data: { __typename: 'Query' } });
  });
});

describe('the build the CDK stack runs', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cairn-web-app-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('buildWebApp writes the page and its hashed files, and the route serves that directory as it is', async () => {
    const names = buildWebApp(dir);
    expect(names).toEqual(expect.arrayContaining(['index.html']));
    expect(names.filter((n) => /^app-[A-Z0-9]{8}\.(js|css)$/.test(n))).toHaveLength(2);
    const html = await readFile(join(dir, 'index.html'), 'utf8');
    for (const name of names.filter((n) => n !== 'index.html')) expect(html).toContain(`/app/assets/${name}`);
    // What the Lambda bundle holds is what it serves: marked here, so a build in memory would not have it.
    await writeFile(join(dir, 'index.html'), html.replace('<title>Cairn</title>', '<title>Cairn (prebuilt)</title>'));
    const app = new WebApp(webAppSource(dir));
    const config = target.local!.config;
    const page = await app.respond(config, httpRequest('GET', '/'));
    expect(await page.text()).toContain('<title>Cairn (prebuilt)</title>');
    const js = names.find((n) => n.endsWith('.js'))!;
    const file = await app.respond(config, httpRequest('GET', `/app/assets/${js}`, { headers: { 'accept-encoding': 'identity' } }));
    expect(Buffer.from(await file.arrayBuffer()).equals(await readFile(join(dir, js)))).toBe(true);
  }, 60_000);

  test('a directory without the files falls back to a build here; a build that fails answers 503 and is tried again', async () => {
    let calls = 0;
    const app = new WebApp(async () => {
      calls++;
      if (calls === 1) throw new Error('disk on fire');
      return new Map([['index.html', new TextEncoder().encode('<!doctype html><title>x</title>')]]);
    });
    const config = target.local!.config;
    const first = await app.respond(config, httpRequest('GET', '/'));
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('5');
    const second = await app.respond(config, httpRequest('GET', '/'));
    expect(second.status).toBe(200);
    expect(await second.text()).toContain('<title>x</title>');
    expect(calls).toBe(2);
  });
});

describe("the S3 endpoint lets the app's origin in", () => {
  const app = () => webAppOrigins(target.local!.config)[0]!;
  const other = 'https://elsewhere.example.com';
  const s3 = (path: string, init: { method?: string; headers?: Record<string, string> }) =>
    hostFetch(`${target.endpoints.s3}${path}`, init);
  const s3Lambda = (path: string, init: { method?: string; headers?: Record<string, string> }) =>
    lambdaFetch(target.s3Lambda!)(`${target.endpoints.s3}${path}`, init);

  beforeAll(async () => {
    const client = target.s3();
    await client.send(new CreateBucketCommand({ Bucket: 'app-cors-bare' }));
    await client.send(new CreateBucketCommand({ Bucket: 'app-cors-ruled' }));
    await client.send(
      new PutBucketCorsCommand({
        Bucket: 'app-cors-ruled',
        CORSConfiguration: { CORSRules: [{ AllowedOrigins: [other], AllowedMethods: ['GET'], MaxAgeSeconds: 60 }] },
      }),
    );
  });

  test("the app origins are the API's base URL, with its other loopback names", () => {
    const port = new URL(target.endpoints.graphql).port;
    expect(webAppOrigins(target.local!.config)).toEqual([`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]);
  });

  test.each([
    ['node:http door', s3],
    ['Lambda door', s3Lambda],
  ])(
    'through the %s: preflights from the app pass on the root (ListBuckets), a bucket without CORS and objects; other origins do not',
    async (_name, send) => {
      for (const path of ['/', '/app-cors-bare', '/app-cors-bare/some/file.txt?uploads', '/app-cors-ruled/x.txt', '/no-such-bucket/x']) {
        const res = await send(path, {
          method: 'OPTIONS',
          headers: {
            origin: app(),
            'access-control-request-method': 'PUT',
            'access-control-request-headers': 'authorization,x-amz-date,x-amz-content-sha256,x-amz-acl,content-type',
          },
        });
        expect(res.status).toBe(200);
        expect(res.headers.get('access-control-allow-origin')).toBe(app());
        expect(res.headers.get('access-control-allow-methods')).toBe('GET, PUT, POST, DELETE, HEAD');
        expect(res.headers.get('access-control-allow-headers')).toBe(
          'authorization, x-amz-date, x-amz-content-sha256, x-amz-acl, content-type',
        );
        expect(res.headers.get('access-control-expose-headers')).toContain('x-service-ipfs-hash');
        expect(res.headers.get('access-control-expose-headers')).toContain('ETag');
        expect(res.headers.get('vary')).toContain('Origin');
      }
      // Another origin: the root and a bucket without rules refuse; the ruled bucket applies its own rule.
      const root = await send('/', { method: 'OPTIONS', headers: { origin: other, 'access-control-request-method': 'GET' } });
      expect(root.status).toBe(403);
      expect(await root.text()).toContain('<Code>AccessForbidden</Code>');
      expect(
        (await send('/app-cors-bare/x', { method: 'OPTIONS', headers: { origin: other, 'access-control-request-method': 'GET' } })).status,
      ).toBe(403);
      const ruled = await send('/app-cors-ruled/x', {
        method: 'OPTIONS',
        headers: { origin: other, 'access-control-request-method': 'GET' },
      });
      expect(ruled.status).toBe(200);
      expect(ruled.headers.get('access-control-max-age')).toBe('60');
      expect(
        (await send('/app-cors-ruled/x', { method: 'OPTIONS', headers: { origin: other, 'access-control-request-method': 'PUT' } })).status,
      ).toBe(403);
      // A preflight still needs its Origin.
      expect((await send('/', { method: 'OPTIONS', headers: { 'access-control-request-method': 'GET' } })).status).toBe(400);
    },
  );

  test('actual answers to the app carry its CORS headers (ListBuckets, errors too); other origins get none where no rule allows them', async () => {
    const client = target.s3();
    // A signed ListBuckets with the app's Origin, through the SDK (which signs it).
    client.middlewareStack.add(
      (next) => async (args) => {
        (args.request as { headers: Record<string, string> }).headers.origin = app();
        return next(args);
      },
      { step: 'build' },
    );
    const { ListBucketsCommand } = await import('@aws-sdk/client-s3');
    const seen: Record<string, string>[] = [];
    client.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        seen.push((out.response as { headers: Record<string, string> }).headers);
        return out;
      },
      { step: 'deserialize' },
    );
    const listed = await client.send(new ListBucketsCommand({}));
    expect(listed.Buckets?.map((b) => b.Name)).toContain('app-cors-bare');
    expect(seen.at(-1)!['access-control-allow-origin']).toBe(app());
    expect(seen.at(-1)!['access-control-expose-headers']).toContain('x-service-ipfs-hash-v0');
    // An error answer too, so the page can read it.
    const missing = await s3('/app-cors-bare/missing.txt', { headers: { origin: app() } });
    expect(missing.status).toBe(403);
    expect(missing.headers.get('access-control-allow-origin')).toBe(app());
    const stranger = await s3('/app-cors-bare/missing.txt', { headers: { origin: other } });
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
    const ruled = await s3('/app-cors-ruled/missing.txt', { headers: { origin: other } });
    expect(ruled.headers.get('access-control-allow-origin')).toBe(other);
  });
});

describe("the app's SigV4 signer (WebCrypto) against the real S3 endpoint", () => {
  const creds = () => ({ accessKeyId: BOOT.accessKeyId, secretAccessKey: BOOT.secretAccessKey });
  const url = (path: string) => new URL(path, target.endpoints.s3);
  const signed = async (method: string, u: URL, headers: Record<string, string>, payloadHash: string, credentials = creds()) =>
    signRequest({ method, url: u, headers, payloadHash, region: 'us-east-1', credentials });

  test('a PUT of an awkward key with UNSIGNED-PAYLOAD and an ACL header, then a signed listing with query parameters', async () => {
    const key = 'web app/a b+c(1)*!~ü.txt';
    const put = url(`/default-bucket/${encodeKey(key)}`);
    const res = await fetch(put, {
      method: 'PUT',
      headers: await signed('PUT', put, { 'content-type': 'text/plain', 'x-amz-acl': 'public-read' }, UNSIGNED_PAYLOAD),
      body: 'signed in a browser',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-service-ipfs-hash')).toMatch(/^bafy/);
    const list = url(`/default-bucket?list-type=2&prefix=${encodeRfc3986('web app/')}&delimiter=%2F&ipfs-hashes=true`);
    const listed = await fetch(list, { headers: await signed('GET', list, {}, await sha256Hex('')) });
    expect(listed.status).toBe(200);
    const xml = await listed.text();
    expect(xml).toContain(`<Key>${key}</Key>`);
    expect(xml).toContain(`<IpfsHash>${res.headers.get('x-service-ipfs-hash')}</IpfsHash>`);
    // Public, as the ACL header said.
    const anon = await fetch(put);
    expect(await anon.text()).toBe('signed in a browser');
  });

  test('a body whose SHA-256 is signed (a multipart completion), as the app completes large uploads', async () => {
    const key = 'web-app/multipart.bin';
    const create = url(`/default-bucket/${encodeKey(key)}?uploads`);
    const created = await fetch(create, { method: 'POST', headers: await signed('POST', create, {}, await sha256Hex('')) });
    expect(created.status).toBe(200);
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(await created.text())![1]!;
    const part = url(`/default-bucket/${encodeKey(key)}?partNumber=1&uploadId=${encodeRfc3986(uploadId)}`);
    const sent = await fetch(part, { method: 'PUT', headers: await signed('PUT', part, {}, UNSIGNED_PAYLOAD), body: 'part one' });
    expect(sent.status).toBe(200);
    const body = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${sent.headers.get('etag')}</ETag></Part></CompleteMultipartUpload>`;
    const complete = url(`/default-bucket/${encodeKey(key)}?uploadId=${encodeRfc3986(uploadId)}`);
    const done = await fetch(complete, {
      method: 'POST',
      headers: await signed('POST', complete, { 'content-type': 'application/xml' }, await sha256Hex(body)),
      body,
    });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('<CompleteMultipartUploadResult');
  });

  test("the app's S3 URLs: path style, every key character encoded once, and an endpoint's own path (an API stage) kept", () => {
    expect(s3Url('http://127.0.0.1:4001').href).toBe('http://127.0.0.1:4001/');
    expect(s3Url('http://127.0.0.1:4001/', 'b', 'a b/c+d(1).txt').href).toBe('http://127.0.0.1:4001/b/a%20b/c%2Bd%281%29.txt');
    expect(s3Url('https://abc.execute-api.us-east-1.amazonaws.com/s3', 'b', 'k', { uploads: '' }).href).toBe(
      'https://abc.execute-api.us-east-1.amazonaws.com/s3/b/k?uploads',
    );
    expect(s3Url('https://abc.execute-api.us-east-1.amazonaws.com/s3/').href).toBe('https://abc.execute-api.us-east-1.amazonaws.com/s3/');
    expect(s3Url('http://h', 'b', undefined, { 'list-type': '2', prefix: 'a b/', 'continuation-token': 'x+y=' }).search).toBe(
      '?list-type=2&prefix=a%20b%2F&continuation-token=x%2By%3D',
    );
  });

  test('a wrong secret, a header changed after signing and a body that is not the one signed are refused', async () => {
    const u = url('/default-bucket/web-app/refused.txt');
    const wrong = await fetch(u, {
      method: 'PUT',
      headers: await signed('PUT', u, {}, UNSIGNED_PAYLOAD, { ...creds(), secretAccessKey: 'not-the-secret' }),
      body: 'x',
    });
    expect(wrong.status).toBe(403);
    expect(await wrong.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
    const headers = await signed('PUT', u, { 'x-amz-acl': 'private' }, UNSIGNED_PAYLOAD);
    const tampered = await fetch(u, { method: 'PUT', headers: { ...headers, 'x-amz-acl': 'public-read' }, body: 'x' });
    expect(tampered.status).toBe(403);
    const bodyHash = await fetch(u, {
      method: 'PUT',
      headers: await signed('PUT', u, {}, await sha256Hex('the signed body')),
      body: 'another body',
    });
    expect(bodyHash.status).toBe(400);
    expect(await bodyHash.text()).toContain('<Code>XAmzContentSHA256Mismatch</Code>');
    const head = await fetch(u, { method: 'HEAD', headers: await signed('HEAD', u, {}, await sha256Hex('')) });
    expect(head.status).toBe(404);
  });
});
