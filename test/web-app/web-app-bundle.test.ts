/**
 * The web app in the GraphQL function's Lambda bundle, built here with
 * esbuild exactly as the stack bundles the function: the bundle leaves the
 * app's build (and esbuild) out, finds the files buildWebApp made once they
 * are copied beside it (by the stack's own copy commands), and serves them
 * as they are; without them it answers 503 instead of building.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { BUNDLE_TARGET, extraFileCommands, LOCAL_ONLY_MODULES, PROJECT_ROOT, REQUIRE_BANNER } from '../../lib/functions.js';
import { buildWebApp, WEB_APP_BUNDLE_DIR } from '../../functions/web-app/build.js';
import { startTestService, type TestService } from '../support/service.js';

/** The bundled handler behind a stand-in for the HTTP API, which routes every path to it. */
const BRIDGE = `
import { createServer } from 'node:http';
const { handler } = await import(process.argv[2]);
const server = createServer(async (req, res) => {
  const url = new URL(req.url, 'http://localhost');
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(',') : v;
  const event = {
    version: '2.0', routeKey: '$default', rawPath: url.pathname, rawQueryString: url.search.slice(1), headers, isBase64Encoded: false,
    requestContext: { accountId: 'local', apiId: 'local', domainName: 'localhost', domainPrefix: 'localhost', requestId: 'r', routeKey: '$default', stage: '$default', time: '', timeEpoch: Date.now(),
      http: { method: req.method, path: url.pathname, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: headers['user-agent'] ?? '' } },
  };
  const result = await handler(event, { awsRequestId: 'r', functionName: 'graphql', getRemainingTimeInMillis: () => 29000 });
  res.writeHead(result.statusCode ?? 200, result.headers ?? {});
  res.end(result.body ? Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8') : undefined);
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
`;

let service: TestService;
let work: string;
let bundleDir: string;
let child: ChildProcess;
let base: string;
let inputs: string[];

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  work = await mkdtemp(join(tmpdir(), 'cairn-web-app-bundle-'));
  bundleDir = join(work, 'bundle');
  const result = await build({
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
    metafile: true,
    logLevel: 'silent',
  });
  inputs = Object.keys(result.metafile.inputs);
  await writeFile(join(bundleDir, 'bridge.mjs'), BRIDGE);
  child = spawn(process.execPath, [join(bundleDir, 'bridge.mjs'), join(bundleDir, 'index.mjs')], {
    cwd: bundleDir,
    env: { PATH: process.env.PATH ?? '', ...service.env, AWS_LAMBDA_FUNCTION_NAME: 'cairn-graphql', CAIRN_LOG_LEVEL: 'silent' },
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
  base = `http://127.0.0.1:${port}`;
}, 180_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill();
    });
  }
  await rm(work, { recursive: true, force: true });
  await service?.close();
});

test("the bundle leaves the app's build and esbuild out", () => {
  expect(inputs).toContain('functions/web-app/serve.ts');
  expect(inputs.filter((i) => i.includes('web-app/build') || i.includes('node_modules/esbuild') || i.includes('web-app/ui/'))).toEqual([]);
});

test('without the built files it answers 503 (it does not build); with them copied beside it, it serves them as they are', async () => {
  const missing = await fetch(`${base}/`);
  expect(missing.status).toBe(503);
  expect(await missing.text()).toContain('The web app is not available');
  // What the stack does at synth: build, then copy the files with its own commands.
  const names = buildWebApp(join(work, 'built'));
  const files = names.map((name) => ({ from: `built/${name}`, to: `${WEB_APP_BUNDLE_DIR}/${name}` }));
  execFileSync('bash', ['-c', extraFileCommands(files, work, bundleDir).join(' && ')]);
  const page = await fetch(`${base}/`);
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toBe(await readFile(join(bundleDir, WEB_APP_BUNDLE_DIR, 'index.html'), 'utf8'));
  for (const name of names.filter((n) => n !== 'index.html')) {
    const res = await fetch(`${base}/app/assets/${name}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(Buffer.from(await res.arrayBuffer()).equals(await readFile(join(bundleDir, WEB_APP_BUNDLE_DIR, name)))).toBe(true);
  }
  // Behind Lambda a PUT carries at most 4 MiB: the app is told so, and uploads larger files in parts.
  const config = (await (await fetch(`${base}/app/config.json`)).json()) as { maxPutBytes: number; graphqlPath: string };
  expect(config).toMatchObject({ graphqlPath: '/graphql', maxPutBytes: 4 * 1024 * 1024 });
}, 60_000);
