/**
 * The sites distribution's viewer-request function, run in Node: the code
 * exactly as the stack ships it (the FunctionCode of the synthesized
 * AWS::CloudFront::Function), loaded as the ES module CloudFront's
 * JavaScript runtime 2.0 runs, with `cloudfront`'s `kvs()` stubbed by a
 * map. Only an `export` of its handler is added to reach it.
 */
import * as fs from 'node:fs';
import * as vm from 'node:vm';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { CairnStack } from '../../lib/cairn-stack.js';

type Json = any;

const SITE = '0d9e7a4c-1f2b-4c3d-8e5f-6a7b8c9d0e1f';
const OTHER = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
const DEPLOY = '0lx2abc123abcdefghijkl';

/** The KeyValueStore as the function sees it: get() rejects for a missing key, as CloudFront's does. */
const entries = new Map<string, string>();
const gets: string[] = [];
const kvsStub = {
  get: async (key: string) => {
    gets.push(key);
    if (!entries.has(key)) throw new Error(`Key ${key} not found`);
    return entries.get(key)!;
  },
  exists: async (key: string) => entries.has(key),
};

let code: string;
let handler: (event: Json) => Promise<Json>;
let app: App;

beforeAll(async () => {
  app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new CairnStack(app, 'CairnCdn', {
    sitesDomain: 'sites.example.com',
    sitesCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
  });
  // The sites' function is the one that reads the key value store (the storage API's, s3-viewer-request.js, imports nothing).
  const fns = Object.values<Json>(Template.fromStack(stack).toJSON().Resources).filter(
    (r) => r.Type === 'AWS::CloudFront::Function' && String(r.Properties.FunctionCode).includes("from 'cloudfront'"),
  );
  // The sites distribution's, and the custom domains' (the same file, BY_DOMAIN set).
  expect(fns).toHaveLength(2);
  code = fns.find((f) => String(f.Properties.FunctionCode).includes('const BY_DOMAIN = false;')).Properties.FunctionCode;
  domainCode = fns.find((f) => String(f.Properties.FunctionCode).includes('const BY_DOMAIN = true;')).Properties.FunctionCode;
  handler = await load(code);
  domainHandler = await load(domainCode);
}, 120_000);

async function load(source: string): Promise<(event: Json) => Promise<Json>> {
  const cloudfront = new vm.SyntheticModule(['default'], function (this: vm.SyntheticModule) {
    this.setExport('default', { kvs: () => kvsStub });
  });
  const mod = new vm.SourceTextModule(`${source}\nexport { handler };\n`, { identifier: 'viewer-request.js' });
  await mod.link(async (specifier) => {
    if (specifier !== 'cloudfront') throw new Error(`the function imports ${specifier}, which CloudFront does not provide`);
    return cloudfront;
  });
  await mod.evaluate();
  return (mod.namespace as { handler: typeof handler }).handler;
}

let domainCode: string;
let domainHandler: (event: Json) => Promise<Json>;

describe("the custom domains' function (the whole Host is the key)", () => {
  test('it is the same file with BY_DOMAIN set, and nothing else changed', () => {
    expect(domainCode).toBe(code.replace('const BY_DOMAIN = false;', 'const BY_DOMAIN = true;'));
  });

  test('an active domain is rewritten to its site; its host lowercased, port and trailing dot dropped', async () => {
    entries.set('www.example.com', SITE);
    for (const host of ['www.example.com', 'WWW.Example.COM.', 'www.example.com:443']) {
      const out = await domainHandler(event(host, '/about/'));
      expect(out.uri).toBe(`/sites/${SITE}/about/`);
    }
  });

  test('a label that is a slug is not a domain: www of an unknown domain is 404, not the site whose slug is www', async () => {
    entries.set('www', OTHER);
    const out = await domainHandler(event('www.unknown.example', '/'));
    expect(out.statusCode).toBe(404);
    expect(gets).toEqual(['www.unknown.example']);
  });

  test('the pair not primary answers 301 to the primary, path and query kept', async () => {
    entries.set('example.com', '>www.example.com');
    const out = await domainHandler(
      event('example.com', '/a/b.html', { q: { value: 'x%20y' }, t: { value: '1', multiValue: [{ value: '1' }, { value: '2' }] } }),
    );
    expect(out.statusCode).toBe(301);
    expect(out.headers.location.value).toBe('https://www.example.com/a/b.html?q=x%20y&t=1&t=2');
  });

  test('a redirect entry that is not a domain, or a path that climbs, is refused', async () => {
    entries.set('bad.example.com', '>not a domain/');
    expect((await domainHandler(event('bad.example.com', '/'))).statusCode).toBe(404);
    entries.set('www.example.com', SITE);
    expect((await domainHandler(event('www.example.com', '/%2e%2e/x'))).statusCode).toBe(400);
  });
});

afterAll(() => fs.rmSync(app.outdir, { recursive: true, force: true }));

beforeEach(() => {
  entries.clear();
  gets.length = 0;
  entries.set('hidden-waterfall-6189', SITE);
  entries.set('a--b', OTHER);
});

function event(host: string | undefined, uri: string, querystring: Json = {}): Json {
  return {
    version: '1.0',
    context: {
      distributionDomainName: 'd111111abcdef8.cloudfront.net',
      distributionId: 'EDFDVBD6EXAMPLE',
      eventType: 'viewer-request',
      requestId: 'r',
    },
    viewer: { ip: '198.51.100.11' },
    request: { method: 'GET', uri, querystring, headers: host === undefined ? {} : { host: { value: host } }, cookies: {} },
  };
}

test('it is the file in the repository, imports only cloudfront and uses the associated store (no id in the code)', () => {
  expect(code).toBe(fs.readFileSync('functions/cdn/viewer-request.js', 'utf8'));
  expect(code.startsWith("import cf from 'cloudfront';")).toBe(true);
  expect(code).toContain('cf.kvs()');
  // The runtime takes 10 KB of code at most.
  expect(Buffer.byteLength(code)).toBeLessThan(10 * 1024);
});

test.each([
  ['hidden-waterfall-6189.sites.example.com', '/', `/sites/${SITE}/`],
  ['hidden-waterfall-6189.sites.example.com', '/about/index.html', `/sites/${SITE}/about/index.html`],
  ['Hidden-Waterfall-6189.SITES.Example.com', '/a%20b', `/sites/${SITE}/a%20b`],
  ['hidden-waterfall-6189.sites.example.com.', '/x', `/sites/${SITE}/x`],
  ['hidden-waterfall-6189.sites.example.com:443', '/x', `/sites/${SITE}/x`],
  ['HIDDEN-WATERFALL-6189.sites.example.com.:8443', '//double//slash', `/sites/${SITE}//double//slash`],
  [`${DEPLOY}--hidden-waterfall-6189.sites.example.com`, '/', `/previews/${SITE}/${DEPLOY}/`],
  [`${DEPLOY.toUpperCase()}--Hidden-Waterfall-6189.sites.example.com`, '/app.js', `/previews/${SITE}/${DEPLOY}/app.js`],
  ['a--b.sites.example.com', '/', `/sites/${OTHER}/`],
])('%s %s → %s', async (host, uri, rewritten) => {
  const out = await handler(event(host, uri));
  expect(out.statusCode).toBeUndefined();
  expect(out.uri).toBe(rewritten);
  // The host and everything else of the request are left as they came.
  expect(out.headers.host.value).toBe(host);
  expect(out.method).toBe('GET');
});

test('the query string is carried as it came', async () => {
  const querystring = { ref: { value: 'mail' }, tag: { value: 'a', multiValue: [{ value: 'a' }, { value: 'b' }] } };
  const out = await handler(event('hidden-waterfall-6189.sites.example.com', '/old', querystring));
  expect(out.uri).toBe(`/sites/${SITE}/old`);
  expect(out.querystring).toEqual(querystring);
});

test('the slug is the key looked up, once, lowercased', async () => {
  await handler(event(`${DEPLOY}--HIDDEN-waterfall-6189.Sites.example.com`, '/'));
  expect(gets).toEqual(['hidden-waterfall-6189']);
});

test.each([
  ['no-such-site.sites.example.com'],
  ['d111111abcdef8.cloudfront.net'],
  [`${DEPLOY}--no-such-site.sites.example.com`],
  ['localhost'],
  ['sites'],
  ['[::1]:443'],
  ['192.0.2.1'],
  ['-bad-.sites.example.com'],
  [''],
])('an unknown host (%s) is a 404 answered here, never kept', async (host) => {
  const out = await handler(event(host, '/'));
  expect(out.statusCode).toBe(404);
  expect(out.body).toContain('no site answers');
  expect(out.headers['cache-control'].value).toBe('no-store');
  expect(out.headers['content-type'].value).toBe('text/plain; charset=utf-8');
  expect(out.uri).toBeUndefined();
});

test('no Host header at all is a 404', async () => {
  expect((await handler(event(undefined, '/'))).statusCode).toBe(404);
});

test('a value in the store that is not a site id is not put in a path', async () => {
  entries.set('broken', '../../etc');
  expect((await handler(event('broken.sites.example.com', '/'))).statusCode).toBe(404);
});

test.each([
  ['/..'],
  ['/../x'],
  [`/../../sites/${OTHER}/secret.txt`],
  ['/a/./b'],
  ['/%2e%2e/x'],
  ['/%2E%2e/x'],
  ['/a/..%2f..%2fx'],
  ['/a/..%5cx'],
  ['/a\\..\\x'],
  ['/%2e/x'],
  ['/a%00b'],
  ['/bad%zzescape'],
])('a path that leaves the site (%s) is a 400', async (uri) => {
  const out = await handler(event('hidden-waterfall-6189.sites.example.com', uri));
  expect(out.statusCode).toBe(400);
  expect(out.uri).toBeUndefined();
});

test.each([['/...'], ['/a..b/c'], ['/.well-known/security.txt'], ['/%2e%2e%2e'], ['/.hidden']])(
  'dots inside a name (%s) are a path like any other',
  async (uri) => {
    expect((await handler(event('hidden-waterfall-6189.sites.example.com', uri))).uri).toBe(`/sites/${SITE}${uri}`);
  },
);
