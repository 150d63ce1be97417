/**
 * Bucket CORS in a real browser (Debian's Chromium through playwright-core):
 * a page served from another origin loads the storage SDK's browser build,
 * uploads a file to Cairn and reads it back, taking the CID from the exposed
 * x-service-ipfs-hash header; the same page fails with a CORS error (and
 * stores nothing) when no rule allows its origin and method or the rules were
 * deleted, and gets no CID when the rule exposes no header.
 * Against the node:http server and against the Lambda handler (behind a
 * plain HTTP bridge, as a Function URL would put it).
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CreateBucketCommand,
  DeleteBucketCorsCommand,
  PutBucketCorsCommand,
  PutObjectCommand,
  type CORSRule,
  type S3Client,
} from '@aws-sdk/client-s3';
import { chromium, type Browser } from 'playwright-core';
import { cidForms } from '../../functions/core/ipfs/cid.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import { s3Doors } from '../support/s3-doors.js';
import type { TestService } from '../support/service.js';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { CREDS } from '../support/sdk.js';

const CHROMIUM = process.env.CAIRN_CHROMIUM ?? '/usr/bin/chromium';
const PKG = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'packages', 'storage-sdk');

let target: ApiTarget;
let service: TestService;
let browser: Browser;
let page: { origin: string; close(): Promise<void> };
let bridge: { origin: string; close(): Promise<void> };
let gatewayBridge: { origin: string; close(): Promise<void> };
const savedEnv = { ...process.env };

async function listen(server: Server): Promise<{ origin: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  return {
    origin: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The page's own origin: its HTML and the SDK's browser bundle, nothing else. */
async function startPageServer(): Promise<{ origin: string; close(): Promise<void> }> {
  const esbuild = await import('esbuild');
  const built = await esbuild.build({
    entryPoints: [join(PKG, 'src', 'index.ts')],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    write: false,
    logLevel: 'silent',
  });
  const sdk = built.outputFiles[0]!.text;
  const html =
    '<!doctype html><title>app</title><link rel="icon" href="data:,"><script type="module">import * as cairn from "/sdk.js"; window.cairn = cairn; window.ready = true;</script>';
  return listen(
    createServer((req, res) => {
      if (req.url === '/sdk.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(sdk);
      else if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end(html);
      else res.writeHead(404).end();
    }),
  );
}

/** The Lambda handler behind HTTP: each request becomes the Function URL's event, in this process. */
async function startLambdaBridge(fn: LambdaFn): Promise<{ origin: string; close(): Promise<void> }> {
  const call = lambdaFetch(fn);
  return listen(
    createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      const response = await call(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body: Buffer.concat(chunks) });
      const out: Record<string, string> = {};
      response.headers.forEach((value, name) => (out[name] = value));
      res.writeHead(response.status, out);
      res.end(Buffer.from(await response.arrayBuffer()));
    }),
  );
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (or set CAIRN_CHROMIUM to a Chromium)`);
  target = await apiTarget();
  service = target.local!;
  [page, bridge, gatewayBridge] = await Promise.all([
    startPageServer(),
    startLambdaBridge(target.s3Lambda!),
    startLambdaBridge(target.gatewayLambda!),
  ]);
  // launch() gives every run a fresh temporary profile.
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([page?.close(), bridge?.close(), gatewayBridge?.close()]);
  process.env = savedEnv;
  await target?.close();
});

interface Outcome {
  ok: boolean;
  hash?: string;
  hashV0?: string;
  readHash?: string;
  text?: string;
  code?: string;
  message?: string;
}

/** Opens the app's page and runs upload + get of one file in it, against `endpoint`. */
async function runApp(
  endpoint: string,
  bucket: string,
  key: string,
  text: string,
): Promise<{ outcome: Outcome; consoleErrors: string[]; elsewhere: string[] }> {
  const context = await browser.newContext();
  const tab = await context.newPage();
  const consoleErrors: string[] = [];
  const elsewhere: string[] = [];
  const allowed = [page.origin, new URL(endpoint).origin];
  // Watched, not routed: Playwright answers preflights itself for routed pages, which would hide Cairn's.
  tab.on('request', (request) => {
    const target = request.url();
    if (!allowed.some((o) => target.startsWith(`${o}/`))) elsewhere.push(target);
  });
  tab.on('console', (msg) => {
    if (msg.type() === 'error') consoleErrors.push(msg.text());
  });
  try {
    await tab.goto(`${page.origin}/`);
    await tab.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    const outcome = await tab.evaluate(
      async ({ endpoint, gatewayUrl, publicDomain, creds, bucket, key, text }) => {
        type Sdk = {
          createStorage(o: object): {
            upload(p: object): Promise<{ hash: string; hashV0: string }>;
            get(p: object): Promise<{ data: Uint8Array; hash: string }>;
          };
        };
        const { createStorage } = (window as unknown as { cairn: Sdk }).cairn;
        // One attempt: a request the browser blocks is not worth retrying.
        const storage = createStorage({ endpoint, gatewayUrl, publicDomain, ...creds, clientConfig: { maxAttempts: 1 } });
        try {
          const up = await storage.upload({ bucket, key, data: text, ContentType: 'text/plain' });
          const got = await storage.get({ bucket, key, getOptions: ['data', 'hash'] });
          return { ok: true, hash: up.hash, hashV0: up.hashV0, readHash: got.hash, text: new TextDecoder().decode(got.data) };
        } catch (err) {
          const e = err as { code?: string; message?: string };
          return { ok: false, code: e.code, message: e.message };
        }
      },
      {
        endpoint,
        gatewayUrl: service.endpoints.gateway,
        publicDomain: service.config.urls.storagePublicDomain,
        creds: CREDS,
        bucket,
        key,
        text,
      },
    );
    return { outcome, consoleErrors, elsewhere };
  } finally {
    await context.close();
  }
}

const [nodeDoor, lambdaDoor] = s3Doors(() => target);

describe.each([
  { door: nodeDoor!, tag: 'n', endpoint: () => service.endpoints.s3 },
  { door: lambdaDoor!, tag: 'l', endpoint: () => bridge.origin },
])('a page on another origin, through the $door.name', ({ door, tag, endpoint }) => {
  let s3: S3Client;
  const appRule = (extra: Partial<CORSRule> = {}): CORSRule => ({
    AllowedOrigins: [page.origin],
    AllowedMethods: ['GET', 'PUT', 'HEAD'],
    AllowedHeaders: ['*'],
    ExposeHeaders: ['ETag', 'x-service-ipfs-hash', 'x-service-ipfs-hash-v0'],
    ...extra,
  });
  const bucketWith = async (name: string, rules: CORSRule[], deleted = false) => {
    await s3.send(new CreateBucketCommand({ Bucket: name }));
    await s3.send(new PutBucketCorsCommand({ Bucket: name, CORSConfiguration: { CORSRules: rules } }));
    if (deleted) await s3.send(new DeleteBucketCorsCommand({ Bucket: name }));
    return name;
  };

  beforeAll(() => {
    s3 = door.client();
  });

  test('uploads with the browser SDK and reads the file back, the CID taken from the exposed header', async () => {
    const bucket = await bucketWith(`browser-ok-${tag}`, [appRule()]);
    const { outcome, consoleErrors, elsewhere } = await runApp(endpoint(), bucket, 'notes/hello.txt', 'hello from a browser');
    const stored = await service.services.objects.get(bucket, 'notes/hello.txt');
    expect(stored).toBeDefined();
    const { v1, v0 } = cidForms(stored!.cid);
    expect(outcome).toEqual({ ok: true, hash: v1, hashV0: v0, readHash: v1, text: 'hello from a browser' });
    expect(consoleErrors).toEqual([]);
    expect(elsewhere).toEqual([]);
  }, 60_000);

  // Rules as thunks: the page's origin is known only once its server listens.
  test.each<[string, string, () => CORSRule[], boolean]>([
    ['the rule deleted (DeleteBucketCors)', 'deleted', () => [appRule()], true],
    ['rules for other origins only', 'other', () => [appRule({ AllowedOrigins: ['https://someone-else.example.com'] })], false],
    ['a rule that does not allow PUT', 'noput', () => [appRule({ AllowedMethods: ['GET', 'HEAD'] })], false],
  ])(
    'with %s the upload fails with a CORS error and stores nothing',
    async (_, slug, rules, deleted) => {
      const bucket = await bucketWith(`browser-${slug}-${tag}`, rules(), deleted);
      const { outcome, consoleErrors } = await runApp(endpoint(), bucket, 'blocked.txt', 'never stored');
      expect(outcome.ok).toBe(false);
      expect(outcome.message).toMatch(/Failed to fetch/);
      expect(consoleErrors.join('\n')).toMatch(/blocked by CORS policy/);
      expect(await service.services.objects.get(bucket, 'blocked.txt')).toBeUndefined();
    },
    60_000,
  );

  test('with a rule that exposes no header, the upload goes through but the page cannot see the CID', async () => {
    const bucket = await bucketWith(`browser-hidden-${tag}`, [appRule({ ExposeHeaders: [] })]);
    const { outcome } = await runApp(endpoint(), bucket, 'hidden.txt', 'stored, CID unseen');
    expect(outcome).toMatchObject({ ok: false, code: 'MissingHash' });
    expect(await service.services.objects.get(bucket, 'hidden.txt')).toBeDefined();
  }, 60_000);
});

describe.each([
  { name: 'node:http door', tag: 'n', gateway: () => service.endpoints.gateway },
  { name: 'Lambda door', tag: 'l', gateway: () => gatewayBridge.origin },
])('a page on another origin reads content by CID from the gateway, through the $name', ({ tag, gateway }) => {
  test('a ranged read with a header that needs a preflight: the bytes, Content-Range and the ETag', async () => {
    const s3 = nodeDoor!.client();
    const bucket = `browser-cid-${tag}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'private.txt', Body: 'content by CID is public', ACL: 'private' }));
    const { v0 } = cidForms((await service.services.objects.get(bucket, 'private.txt'))!.cid);
    const context = await browser.newContext();
    const tab = await context.newPage();
    const consoleErrors: string[] = [];
    tab.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(msg.text());
    });
    try {
      await tab.goto(`${page.origin}/`);
      const url = `${gateway()}/ipfs/${v0}`;
      const outcome = await tab.evaluate(async (url) => {
        try {
          // X-Requested-With is not CORS-safelisted: the browser asks the gateway first (OPTIONS).
          const res = await fetch(url, { headers: { range: 'bytes=8-13', 'x-requested-with': 'cairn-test' } });
          return { status: res.status, text: await res.text(), range: res.headers.get('content-range'), etag: res.headers.get('etag') };
        } catch (err) {
          return { error: String(err) };
        }
      }, url);
      expect(outcome).toEqual({ status: 206, text: 'by CID', range: 'bytes 8-13/24', etag: `"${v0}"` });
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
