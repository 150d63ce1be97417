/**
 * The gateway's public URLs, through both doors: `<bucket>.<storage public
 * domain>/<key>` and `<bucket>.<bucket endpoint domain>/<key>` (chosen by the
 * Host header) serve public-read objects and refuse private ones; `/ipfs/<cid>`
 * serves any content by CID, to pages of any origin (CORS). Against a deployed stack the public names are
 * sent as Host (and TLS server name) to CAIRN_TEST_GATEWAY_URL, which must
 * answer for them, as the stack's gateway domain does.
 */
import { createHash, randomBytes } from 'node:crypto';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { apiTarget, REMOTE, type ApiTarget } from '../support/api-target.js';
import { lambdaFetch } from '../support/lambda-door.js';
import { hostFetch } from '../support/http.js';

let target: ApiTarget;
const savedEnv = { ...process.env };

let BUCKET: string;
const PAGE = '<!doctype html><h1>Hello</h1>\n';
const BIG = randomBytes(600 * 1024); // three 256 KiB blocks
const cids: Record<string, string> = {};

async function put(key: string, body: string | Buffer, extra: Partial<ConstructorParameters<typeof PutObjectCommand>[0]> = {}) {
  let v0 = '';
  const s3 = target.s3();
  s3.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      v0 = (out.response as { headers: Record<string, string> }).headers['x-service-ipfs-hash-v0']!;
      return out;
    },
    { step: 'deserialize', name: 'captureCid' },
  );
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body, ...extra }));
  cids[key] = v0;
}

beforeAll(async () => {
  target = await apiTarget();
  BUCKET = target.account.bucket;
  if (!target.domains.storagePublic || !target.domains.bucketEndpoint) {
    throw new Error(
      'CAIRN_TEST_STORAGE_PUBLIC_DOMAIN and CAIRN_TEST_BUCKET_ENDPOINT_DOMAIN must be set for the gateway suite against a deployed stack',
    );
  }
  await put('site/index.html', PAGE, {
    ACL: 'public-read',
    ContentType: 'text/html; charset=utf-8',
    CacheControl: 'max-age=60',
    ContentDisposition: 'inline',
    Metadata: { team: 'docs' },
  });
  await put('data/big.bin', BIG, { ACL: 'public-read', ContentType: 'application/octet-stream' });
  await put('dir/hello wörld.txt', 'spaces and umlauts', { ACL: 'public-read', ContentType: 'text/plain' });
  await put('secret.txt', 'not for you', { ACL: 'private', ContentType: 'text/plain' });
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

type Init = { method?: string; headers?: Record<string, string> };
type Fetch = (url: string, init?: Init) => Promise<Response>;
const doors: Array<{ name: string; fetch: Fetch }> = REMOTE
  ? [{ name: 'deployed endpoint', fetch: (url, init) => hostFetch(url, init) }]
  : [
      { name: 'node:http door', fetch: (url, init) => hostFetch(url, init) },
      { name: 'Lambda door', fetch: (url, init) => lambdaFetch(target.gatewayLambda!)(url, init) },
    ];

describe.each(doors)('gateway public URLs through the $name', ({ fetch }) => {
  const hosts = () => ({
    'public URL': `${BUCKET}.${target.domains.storagePublic}`,
    'bucket-specific address': `${BUCKET}.${target.domains.bucketEndpoint}`,
  });
  const get = (host: string, path: string, init: Init = {}) =>
    fetch(`${target.endpoints.gateway}${path}`, { ...init, headers: { host, ...init.headers } });
  const publicHost = () => hosts()['public URL'];

  test('a public-read object is served at its public URL and its bucket-specific address, with its stored headers', async () => {
    const stored = await target.s3().send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'site/index.html' }));
    await target.whenLocal(async (service) => {
      const record = (await service.services.objects.get(BUCKET, 'site/index.html'))!;
      expect(record.cid).toBe(cids['site/index.html']);
      expect(new Date(record.lastModified).toUTCString()).toBe(stored.LastModified!.toUTCString());
    });
    for (const host of Object.values(hosts())) {
      const res = await get(host, '/site/index.html');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(PAGE);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('max-age=60');
      expect(res.headers.get('content-disposition')).toBe('inline');
      expect(res.headers.get('x-amz-meta-team')).toBe('docs');
      expect(res.headers.get('etag')).toBe(`"${createHash('md5').update(PAGE).digest('hex')}"`);
      expect(res.headers.get('last-modified')).toBe(stored.LastModified!.toUTCString());
      expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(PAGE)));
      expect(res.headers.get('accept-ranges')).toBe('bytes');
      expect(res.headers.get('x-service-ipfs-hash-v0')).toBe(cids['site/index.html']);
      expect(res.headers.get('x-ipfs-path')).toBe(`/ipfs/${cids['site/index.html']}`);
    }
  });

  test('a multi-block object comes back whole, and a percent-encoded key is decoded', async () => {
    const big = await get(publicHost(), '/data/big.bin');
    expect(big.status).toBe(200);
    expect(Buffer.from(await big.arrayBuffer()).equals(BIG)).toBe(true);
    const spaced = await get(publicHost(), `/${encodeURIComponent('dir/hello wörld.txt').replace(/%2F/g, '/')}`);
    expect(spaced.status).toBe(200);
    expect(await spaced.text()).toBe('spaces and umlauts');
  });

  test('a private object is 403 at both addresses, and its bytes stay public by CID', async () => {
    for (const host of Object.values(hosts())) {
      const res = await get(host, '/secret.txt');
      expect(res.status).toBe(403);
      expect(await res.text()).not.toContain('not for you');
      expect((await get(host, '/secret.txt', { method: 'HEAD' })).status).toBe(403);
    }
    const byCid = await fetch(`${target.endpoints.gateway}/ipfs/${cids['secret.txt']}`);
    expect(byCid.status).toBe(200);
    expect(await byCid.text()).toBe('not for you');
  });

  test('an unknown key, an unknown bucket and an invalid bucket name are 404', async () => {
    expect((await get(publicHost(), '/no/such/key')).status).toBe(404);
    expect((await get(publicHost(), '/')).status).toBe(404);
    const domain = target.domains.storagePublic;
    expect((await get(`no-such-bucket.${domain}`, '/site/index.html')).status).toBe(404);
    expect((await get(`Bad_Bucket.${domain}`, '/site/index.html')).status).toBe(404);
    expect((await get(publicHost(), `/${'k'.repeat(1100)}`)).status).toBe(404);
  });

  test('a Range gets 206 and the slice, across a block boundary; past the end is 416', async () => {
    const res = await get(publicHost(), '/data/big.bin', { headers: { range: 'bytes=262100-262299' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 262100-262299/${BIG.length}`);
    expect(res.headers.get('content-length')).toBe('200');
    expect(Buffer.from(await res.arrayBuffer()).equals(BIG.subarray(262100, 262300))).toBe(true);
    const suffix = await get(publicHost(), '/data/big.bin', { headers: { range: 'bytes=-10' } });
    expect(Buffer.from(await suffix.arrayBuffer()).equals(BIG.subarray(BIG.length - 10))).toBe(true);
    const past = await get(publicHost(), '/data/big.bin', { headers: { range: `bytes=${BIG.length}-` } });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${BIG.length}`);
  });

  test('If-Range with another ETag ignores the Range and sends the whole object', async () => {
    const res = await get(publicHost(), '/site/index.html', { headers: { range: 'bytes=0-3', 'if-range': '"0123"' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(PAGE);
    const etag = res.headers.get('etag')!;
    const same = await get(publicHost(), '/site/index.html', { headers: { range: 'bytes=0-3', 'if-range': etag } });
    expect(same.status).toBe(206);
    expect(await same.text()).toBe(PAGE.slice(0, 4));
  });

  test('HEAD answers the headers of a GET and no body', async () => {
    const res = await get(publicHost(), '/data/big.bin', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(BIG.length));
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{32}"$/);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  test('conditional requests: If-None-Match and If-Modified-Since give 304, a failed If-Match 412', async () => {
    const first = await get(publicHost(), '/site/index.html');
    const etag = first.headers.get('etag')!;
    const lastModified = first.headers.get('last-modified')!;
    const notModified = await get(publicHost(), '/site/index.html', { headers: { 'if-none-match': etag } });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get('etag')).toBe(etag);
    expect(notModified.headers.get('cache-control')).toBe('max-age=60');
    expect((await notModified.arrayBuffer()).byteLength).toBe(0);
    expect((await get(publicHost(), '/site/index.html', { headers: { 'if-none-match': '"other"' } })).status).toBe(200);
    expect((await get(publicHost(), '/site/index.html', { headers: { 'if-modified-since': lastModified } })).status).toBe(304);
    expect((await get(publicHost(), '/site/index.html', { headers: { 'if-match': '"other"' } })).status).toBe(412);
    expect((await get(publicHost(), '/site/index.html', { headers: { 'if-match': etag } })).status).toBe(200);
    expect(
      (await get(publicHost(), '/site/index.html', { headers: { 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' } })).status,
    ).toBe(412);
  });

  test('other methods are 405', async () => {
    const res = await get(publicHost(), '/site/index.html', { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
  });

  test('/ipfs/<cid>: a malformed CID is 400, an unknown one 404 at once; HEAD and If-None-Match work', async () => {
    const gateway = target.endpoints.gateway;
    expect((await fetch(`${gateway}/ipfs/not-a-cid`)).status).toBe(400);
    expect((await fetch(`${gateway}/ipfs/Qm${'1'.repeat(44)}`)).status).toBe(400);
    const started = Date.now();
    for (const unknown of [
      'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o',
      'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy',
    ]) {
      expect((await fetch(`${gateway}/ipfs/${unknown}`)).status).toBe(404);
    }
    expect(Date.now() - started).toBeLessThan(2000);
    const cid = cids['data/big.bin']!;
    const head = await fetch(`${gateway}/ipfs/${cid}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(BIG.length));
    expect(head.headers.get('etag')).toBe(`"${cid}"`);
    expect((await head.arrayBuffer()).byteLength).toBe(0);
    const cached = await fetch(`${gateway}/ipfs/${cid}`, { headers: { 'if-none-match': `"${cid}"` } });
    expect(cached.status).toBe(304);
    expect(cached.headers.get('cache-control')).toContain('immutable');
  });

  // gateway-conformance TestCors (tests/path_gateway_cors_test.go; the gateway specs say nothing of CORS): a GET and an
  // OPTIONS of /ipfs/ have Access-Control-Allow-Origin "*", Allow-Methods GET, HEAD, OPTIONS, Allow-Headers Content-Type,
  // Range, User-Agent, X-Requested-With, and expose Content-Range, Content-Length, X-Ipfs-Path, X-Ipfs-Roots.
  test('/ipfs/ answers pages of any origin: a preflight, and CORS headers on every answer, errors too', async () => {
    const gateway = target.endpoints.gateway;
    const cid = cids['data/big.bin']!;
    const origin = { origin: 'https://app.example' };
    const preflight = await fetch(`${gateway}/ipfs/${cid}`, {
      method: 'OPTIONS',
      headers: { ...origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'range' },
    });
    expect(preflight.status).toBe(200);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, HEAD, OPTIONS');
    expect(preflight.headers.get('access-control-allow-headers')?.split(', ')).toEqual(
      expect.arrayContaining(['Content-Type', 'Range', 'User-Agent', 'X-Requested-With']),
    );
    const answers = {
      206: await fetch(`${gateway}/ipfs/${cid}`, { headers: { ...origin, range: 'bytes=0-9' } }),
      304: await fetch(`${gateway}/ipfs/${cid}`, { headers: { ...origin, 'if-none-match': `"${cid}"` } }),
      400: await fetch(`${gateway}/ipfs/not-a-cid`, { headers: origin }),
      404: await fetch(`${gateway}/ipfs/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy`, { headers: origin }),
      405: await fetch(`${gateway}/ipfs/${cid}`, { method: 'DELETE', headers: origin }),
    };
    for (const [status, res] of Object.entries(answers)) {
      expect([status, res.status]).toEqual([status, Number(status)]);
      expect([status, res.headers.get('access-control-allow-origin')]).toEqual([status, '*']);
    }
    // A page reads what it needs of a partial answer only if the headers are exposed.
    const exposed = answers[206].headers.get('access-control-expose-headers')!.toLowerCase().split(', ');
    expect(exposed).toEqual(expect.arrayContaining(['content-range', 'content-length', 'etag', 'x-ipfs-path', 'x-ipfs-roots']));
    expect(answers[206].headers.get('content-range')).toBe(`bytes 0-9/${BIG.length}`);
    expect(answers[405].headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    // Public object URLs are not content by CID: they do not answer every origin.
    const object = await get(publicHost(), '/site/index.html', { headers: origin });
    expect(object.status).toBe(200);
    expect(object.headers.get('access-control-allow-origin')).toBeNull();
    expect((await get(publicHost(), '/site/index.html', { method: 'OPTIONS', headers: origin })).status).toBe(405);
  });
});
