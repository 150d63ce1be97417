/**
 * The GraphiQL playground: served at GET /graphql to browsers through both
 * doors; carried by the Lambda bundle (built here with esbuild exactly as the
 * stack builds it, files copied by the stack's own commands); and used in a
 * real browser (Debian's Chromium through playwright-core) with every
 * request off this machine refused, against the local server and against the
 * bundle. The page checks run against a deployed stack's endpoint too; the
 * bundle is built here and run over the local service's data, and the
 * browser refuses everything off this machine, so those stay local.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { BUNDLE_TARGET, extraFileCommands, LOCAL_ONLY_MODULES, PROJECT_ROOT, REQUIRE_BANNER } from '../../lib/functions.js';
import { PLAYGROUND_ASSETS, PLAYGROUND_BUNDLE_DIR } from '../../functions/graphql/playground-assets.js';
import { apiTarget, localDescribe, type ApiTarget } from '../support/api-target.js';
import { graphqlClient, newTeam, targetGraphqlDoors, type Door, type TeamFixture } from '../support/graphql.js';
import { doorsFor } from '../support/test-set.js';

const CHROMIUM = process.env.CAIRN_CHROMIUM ?? '/usr/bin/chromium';

let target: ApiTarget;
let account: TeamFixture;
const savedEnv = { ...process.env };
const doors = targetGraphqlDoors(() => target);

beforeAll(async () => {
  target = await apiTarget();
  account = await newTeam(graphqlClient(doors[0]!, target.endpoints.graphql), target.account, 'playground');
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

const assetUrls = (html: string) => [...html.matchAll(/(?:src|href)="(\?asset=[^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));

describe.each(doorsFor(doors))('the playground through the $name', (door: Door) => {
  const endpoint = () => target.endpoints.graphql;

  test("a browser's GET /graphql is the playground page, with a strict CSP and only this service's own files", async () => {
    const res = await door.fetch(endpoint(), { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('content-security-policy')).toContain("connect-src 'self'");
    const html = await res.text();
    expect(html).toContain('<title>Cairn GraphQL playground</title>');
    expect(html).not.toMatch(/https?:\/\//);
    const urls = assetUrls(html);
    expect(urls.map((u) => new URLSearchParams(u.slice(1)).get('asset')).sort()).toEqual(
      [...Object.keys(PLAYGROUND_ASSETS), 'start.js'].sort(),
    );
    for (const url of urls) {
      const plain = await door.fetch(`${endpoint()}${url}`, { headers: { 'accept-encoding': 'identity' } });
      expect(plain.status).toBe(200);
      expect(plain.headers.get('content-type')).toMatch(/^text\/(javascript|css); charset=utf-8$/);
      expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      const body = Buffer.from(await plain.arrayBuffer());
      expect(body.length).toBeGreaterThan(100);
      const zipped = await door.fetch(`${endpoint()}${url}`, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
      expect(zipped.headers.get('content-encoding')).toBe('gzip');
      // fetch() decodes gzip itself; the Lambda door hands the bytes over as they are.
      const zippedBody = Buffer.from(await zipped.arrayBuffer());
      expect(zippedBody.equals(body) || gunzipSync(zippedBody).equals(body)).toBe(true);
      const etag = plain.headers.get('etag')!;
      expect((await door.fetch(`${endpoint()}${url}`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    }
  });

  test("an unknown file is 404; GET with a query, or without a browser's Accept, is GraphQL as before", async () => {
    expect((await door.fetch(`${endpoint()}?asset=../../package.json`)).status).toBe(404);
    // A browser's own Accept (it takes anything, HTML first): a GraphQL GET still answers JSON.
    const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    const query = await door.fetch(`${endpoint()}?query=${encodeURIComponent('{ getCurrentTeam { id } }')}`, {
      headers: { accept: browserAccept, authorization: account.apiKey },
    });
    expect(query.status).toBe(200);
    expect(await query.json()).toEqual({ data: { getCurrentTeam: { id: account.team.id } } });
    const bare = await door.fetch(endpoint(), { headers: { accept: 'application/json' } });
    expect(bare.status).toBe(400);
  });
});

/** The GraphQL handler bundled as the stack bundles it, run behind a minimal stand-in for API Gateway (only /graphql is routed). */
interface BundleDoor {
  url: string;
  stop(): Promise<void>;
}

const BRIDGE = `
import { createServer } from 'node:http';
const { handler } = await import(process.argv[2]);
const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = Buffer.concat(chunks);
  const url = new URL(req.url, 'http://localhost');
  if (url.pathname !== '/graphql') { res.writeHead(404, { 'content-type': 'application/json' }); res.end('{"message":"Not Found"}'); return; }
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(',') : v;
  const event = {
    version: '2.0', routeKey: '$default', rawPath: url.pathname, rawQueryString: url.search.slice(1), headers,
    requestContext: { accountId: 'local', apiId: 'local', domainName: 'localhost', domainPrefix: 'localhost', requestId: 'r', routeKey: '$default', stage: '$default', time: '', timeEpoch: Date.now(),
      http: { method: req.method, path: url.pathname, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: headers['user-agent'] ?? '' } },
    ...(body.length ? { body: body.toString('base64'), isBase64Encoded: true } : { isBase64Encoded: false }),
  };
  const result = await handler(event, { awsRequestId: 'r', functionName: 'graphql', getRemainingTimeInMillis: () => 29000 });
  const out = result.body ? Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8') : Buffer.alloc(0);
  res.writeHead(result.statusCode ?? 200, result.headers ?? {});
  res.end(out);
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
`;

async function startBundleDoor(bundleDir: string, env: Record<string, string>): Promise<BundleDoor> {
  const child: ChildProcess = spawn(process.execPath, [join(bundleDir, 'bridge.mjs'), join(bundleDir, 'index.mjs')], {
    cwd: bundleDir,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.startsWith('{"port"'));
      if (line) resolve((JSON.parse(line) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`the bundle's bridge exited (${code}): ${stderr}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill();
      }),
  };
}

localDescribe('the Lambda bundle', () => {
  let bundleDir: string;
  let bundle: BundleDoor;
  let introspectionOff: BundleDoor;

  beforeAll(async () => {
    bundleDir = await mkdtemp(join(tmpdir(), 'cairn-graphql-bundle-'));
    await build({
      entryPoints: [join(PROJECT_ROOT, 'functions/graphql/handler.ts')],
      outfile: join(bundleDir, 'index.mjs'),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: BUNDLE_TARGET,
      mainFields: ['module', 'main'],
      banner: { js: REQUIRE_BANNER },
      external: LOCAL_ONLY_MODULES,
      minify: true,
      logLevel: 'silent',
    });
    // The stack's own copy commands, as CDK runs them after esbuild.
    const files = [
      'schema.graphql',
      ...Object.entries(PLAYGROUND_ASSETS).map(([name, p]) => ({ from: `node_modules/${p}`, to: `${PLAYGROUND_BUNDLE_DIR}/${name}` })),
    ];
    execFileSync('bash', ['-c', extraFileCommands(files, PROJECT_ROOT, bundleDir).join(' && ')]);
    await writeFile(join(bundleDir, 'bridge.mjs'), BRIDGE);
    const lambdaEnv = {
      ...target.local!.env,
      AWS_LAMBDA_FUNCTION_NAME: 'cairn-graphql',
      CAIRN_SCHEMA_PATH: join(bundleDir, 'schema.graphql'),
      CAIRN_GRAPHQL_PLAYGROUND_DIR: join(bundleDir, PLAYGROUND_BUNDLE_DIR),
      CAIRN_LOG_LEVEL: 'error',
    };
    [bundle, introspectionOff] = await Promise.all([
      startBundleDoor(bundleDir, { ...lambdaEnv, CAIRN_GRAPHQL_INTROSPECTION: 'true' }),
      startBundleDoor(bundleDir, lambdaEnv),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([bundle?.stop(), introspectionOff?.stop()]);
    await rm(bundleDir, { recursive: true, force: true });
  });

  test("carries the playground's files and serves them, outside the repository", async () => {
    const page = await fetch(bundle.url, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    for (const url of assetUrls(await page.text())) expect((await fetch(`${bundle.url}${url}`)).status).toBe(200);
  });

  test('in AWS introspection is off unless configured: refused, while queries and the playground still work', async () => {
    const introspect = await fetch(introspectionOff.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __schema { queryType { name } } }' }),
    });
    expect(introspect.status).toBe(400);
    const refused = (await introspect.json()) as { errors: Array<{ message: string; extensions: { code: string } }> };
    expect(refused.errors[0]!.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const typo = await fetch(introspectionOff.url, {
      method: 'POST',
      headers: { authorization: account.apiKey },
      body: JSON.stringify({ query: '{ getCurrentTeem { id } }' }),
    });
    expect(await typo.text()).not.toContain('Did you mean');
    const query = await fetch(introspectionOff.url, {
      method: 'POST',
      headers: { authorization: account.apiKey },
      body: JSON.stringify({ query: '{ getCurrentTeam { id } }' }),
    });
    expect(await query.json()).toEqual({ data: { getCurrentTeam: { id: account.team.id } } });
    expect((await fetch(introspectionOff.url, { headers: { accept: 'text/html' } })).status).toBe(200);
    const open = await fetch(bundle.url, { method: 'POST', body: JSON.stringify({ query: '{ __schema { queryType { name } } }' }) });
    expect(await open.json()).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
  });

  // .ci/run installs Debian's chromium; without it this test fails and says so (it is never skipped).
  const browserTest = test;

  describe('a real browser, with no way off this machine', () => {
    let browser: Browser;
    beforeAll(async () => {
      if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (or set CAIRN_CHROMIUM to a Chromium)`);
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });

    browserTest.each([
      ['the local server', () => target.endpoints.graphql],
      ['the Lambda bundle', () => bundle.url],
    ])(
      'runs a query in the playground served by %s',
      async (_, url) => {
        const context = await browser.newContext();
        const page = await context.newPage();
        const origin = new URL(url()).origin;
        const offMachine: string[] = [];
        const problems: string[] = [];
        await page.route('**/*', (route) => {
          const target = route.request().url();
          if (target.startsWith(`${origin}/`)) return route.continue();
          offMachine.push(target);
          return route.abort();
        });
        page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
        page.on('console', (msg) => {
          if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
        });
        try {
          await page.goto(url());
          // The schema arrives by introspection with no key: the docs explorer lists the operations.
          await page.locator('.graphiql-query-editor .CodeMirror').waitFor();
          await page.getByLabel('Show Documentation Explorer').click();
          await page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).click();
          await page.locator('.graphiql-doc-explorer').getByText('getDeploysBySite').first().waitFor();

          // Type the key into the Headers tab and a query into the editor, as a person would.
          await page.locator('.graphiql-editor-tool .CodeMirror').filter({ visible: true }).click();
          await page.keyboard.press('ControlOrMeta+A');
          await page.keyboard.insertText(`{ "Authorization": "${account.apiKey}" }`);
          await page.locator('.graphiql-query-editor .CodeMirror').click();
          await page.keyboard.press('ControlOrMeta+A');
          await page.keyboard.insertText('{ getCurrentTeam { id name } }');
          await page.locator('.graphiql-execute-button').click();
          const result = page.locator('.result-window');
          await result.getByText(account.team.id).waitFor({ timeout: 15_000 });
          expect(await result.innerText()).toContain(account.team.name);
          expect(offMachine).toEqual([]);
          expect(problems).toEqual([]);
        } finally {
          await context.close();
        }
      },
      60_000,
    );
  });
});
