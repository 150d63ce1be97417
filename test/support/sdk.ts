/**
 * Fixtures for the storage SDK's tests: the SDK pointed at a test service,
 * a pass-through proxy that counts requests and can refuse some, a gateway
 * that serves wrong bytes, deterministic streams of any length, and Fleek's
 * published SDK pointed at a test service.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { createCipheriv, createHash } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, sep } from 'node:path';
import { Readable } from 'node:stream';
import { importer } from 'ipfs-unixfs-importer';
import { BlackHoleBlockstore } from 'blockstore-core/black-hole';
import { cidV0, cidV1, kuboImportOptions } from '../../functions/core/ipfs/cid.js';
import { createStorage } from '../../packages/storage-sdk/src/node.js';
import type { StorageOptions } from '../../packages/storage-sdk/src/types.js';
import { BOOT, type TestService } from './service.js';

export const CREDS = { apiKey: BOOT.accessKeyId, apiSecret: BOOT.secretAccessKey };
export const MiB = 1024 * 1024;

/** The SDK's options for a test service. */
export function optionsFor(service: TestService, extra: StorageOptions = {}): StorageOptions {
  return {
    endpoint: service.endpoints.s3,
    gatewayUrl: service.endpoints.gateway,
    publicDomain: service.config.urls.storagePublicDomain,
    ...extra,
  };
}

export function storageFor(service: TestService, extra: StorageOptions = {}) {
  return createStorage(optionsFor(service, extra));
}

async function listenLocal(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

export interface Refusal {
  status: number;
  code: string;
  message?: string;
}

export interface Proxy {
  url: string;
  /** Every request seen, as "METHOD /path?query". */
  requests: string[];
  count(pred: (method: string, url: URL) => boolean): number;
  close(): Promise<void>;
}

/**
 * A pass-through HTTP proxy in front of `target`. `refuse` may answer a
 * request itself with an S3 error (after reading its body, as a server does).
 * The Host header goes through unchanged, so SigV4 signatures still verify.
 */
export async function startProxy(
  target: string,
  refuse?: (method: string, url: URL) => Refusal | undefined,
  /** Rewrites the body of the responses it returns a function for (responses are not signed). */
  rewrite?: (method: string, url: URL) => ((body: string) => string) | undefined,
): Promise<Proxy> {
  const upstream = new URL(target);
  const requests: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    const refusal = refuse?.(req.method ?? 'GET', url);
    if (refusal) {
      req.resume();
      req.on('end', () => {
        const body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${refusal.code}</Code><Message>${refusal.message ?? 'refused by the test proxy'}</Message></Error>`;
        res.writeHead(refusal.status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      });
      return;
    }
    const out = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        const edit = rewrite?.(req.method ?? 'GET', url);
        if (!edit) {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        up.on('data', (c: Buffer) => chunks.push(c));
        up.on('end', () => {
          const body = Buffer.from(edit(Buffer.concat(chunks).toString('utf8')));
          const headers = { ...up.headers, 'content-length': String(body.length) };
          delete headers['transfer-encoding'];
          res.writeHead(up.statusCode ?? 502, headers);
          res.end(body);
        });
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  const url = await listenLocal(server);
  return {
    url,
    requests,
    count: (pred) =>
      requests.filter((r) => {
        const [method, path] = r.split(' ');
        return pred(method!, new URL(path!, 'http://proxy'));
      }).length,
    close: () => closeServer(server),
  };
}

/** A gateway that answers every /ipfs/<cid> with `body`, whatever the CID: tampering, unless `body` is right. */
export async function startGatewayServing(body: Uint8Array): Promise<{ url: string; hits: () => number; close(): Promise<void> }> {
  let hits = 0;
  const server = createServer((req, res) => {
    if (!req.url?.startsWith('/ipfs/')) {
      res.writeHead(404).end();
      return;
    }
    hits++;
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.byteLength });
    res.end(body);
  });
  const url = await listenLocal(server);
  return { url, hits: () => hits, close: () => closeServer(server) };
}

/** Deterministic pseudo-random bytes (Kubo's ChaCha20 reader), `size` bytes in `chunk`-byte pieces, lazily. */
export function* generatedChunks(seed: string, size: number, chunk = 64 * 1024): Generator<Buffer> {
  const cipher = createCipheriv('chacha20', createHash('sha256').update(seed).digest(), Buffer.alloc(16));
  const zeros = Buffer.alloc(chunk);
  for (let left = size; left > 0; left -= chunk) {
    yield cipher.update(left >= chunk ? zeros : zeros.subarray(0, left));
  }
}

/** A Node Readable of unknown length over generatedChunks; `failAfter` bytes makes it error there. */
export function generatedStream(seed: string, size: number, options: { failAfter?: number; chunk?: number } = {}): Readable {
  const { failAfter, chunk } = options;
  async function* gen() {
    let sent = 0;
    for (const c of generatedChunks(seed, size, chunk)) {
      if (failAfter !== undefined && sent + c.length > failAfter) throw new Error('the source broke');
      sent += c.length;
      yield c;
    }
  }
  return Readable.from(gen(), { objectMode: false });
}

/** The CIDs Kubo gives generatedChunks(seed, size), computed with the server's own import options. */
export async function expectedCids(seed: string, size: number): Promise<{ hash: string; hashV0: string }> {
  let root;
  for await (const entry of importer(
    [{ content: generatedChunks(seed, size, 1024 * 1024) }],
    new BlackHoleBlockstore(),
    kuboImportOptions(),
  ))
    root = entry.cid;
  return { hash: cidV1(root!), hashV0: cidV0(root!) };
}

export interface FleekSdk {
  upload(p: Record<string, unknown>): Promise<{ hash: string; hashV0: string; key: string; bucket: string; publicUrl: string }>;
  streamUpload(p: Record<string, unknown>): Promise<{ hash: string; hashV0: string; key: string; bucket: string; publicUrl: string }>;
  get(p: Record<string, unknown>): Promise<Record<string, unknown>>;
  deleteFile(p: Record<string, unknown>): Promise<{ key: string; bucket: string }>;
  listFiles(p: Record<string, unknown>): Promise<Array<Record<string, unknown>>>;
  listBuckets(p: Record<string, unknown>): Promise<Array<{ name: string }>>;
  getFileFromHash(p: Record<string, unknown>): Promise<unknown>;
}

/**
 * Drops Fleek's SDK from Node's require cache, which test files run in the
 * same Jest worker share: the next loader then reads its own config.js values.
 */
export function unloadFleek(): void {
  const require = createRequire(import.meta.url);
  const dir = dirname(require.resolve('@fleekhq/fleek-storage-js/package.json')) + sep;
  for (const loaded of Object.keys(require.cache)) {
    if (loaded.startsWith(dir) && !loaded.slice(dir.length).includes('node_modules')) delete require.cache[loaded];
  }
}

/**
 * Fleek's published SDK (CommonJS) pointed at a test service: its endpoints
 * are constants in config.js that its modules read when first loaded, so they
 * are set before the SDK itself is loaded (from a clean require cache).
 */
export function loadFleek(service: TestService): FleekSdk {
  process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = '1';
  unloadFleek();
  const require = createRequire(import.meta.url);
  const config = require('@fleekhq/fleek-storage-js/config.js') as { storageEndpoint: string; ipfsGateway: string };
  config.storageEndpoint = service.endpoints.s3;
  config.ipfsGateway = `${service.endpoints.gateway}/ipfs`;
  return require('@fleekhq/fleek-storage-js') as FleekSdk;
}

/** V8's full collection, for measuring what is live (the flag exposes `gc` in contexts made after it is set). */
function fullGc(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

/**
 * The growth of this process's memory while `work` runs, sampled every
 * 25 ms: `rss` and `arrayBuffers` at their peaks, garbage included (how much
 * of it there is depends on when V8 collects), and `liveArrayBuffers`, the
 * peak of what a full collection leaves, sampled every 400 ms: the memory
 * the work actually holds.
 */
export async function peakMemoryGrowth<T>(
  work: () => Promise<T>,
): Promise<{ result: T; rss: number; arrayBuffers: number; liveArrayBuffers: number }> {
  const gc = fullGc();
  gc();
  const start = process.memoryUsage();
  let rss = 0;
  let arrayBuffers = 0;
  let liveArrayBuffers = 0;
  const sample = () => {
    const m = process.memoryUsage();
    rss = Math.max(rss, m.rss - start.rss);
    arrayBuffers = Math.max(arrayBuffers, m.arrayBuffers - start.arrayBuffers);
  };
  const sampleLive = () => {
    gc();
    liveArrayBuffers = Math.max(liveArrayBuffers, process.memoryUsage().arrayBuffers - start.arrayBuffers);
  };
  const timer = setInterval(sample, 25);
  const liveTimer = setInterval(sampleLive, 400);
  try {
    const result = await work();
    sample();
    return { result, rss, arrayBuffers, liveArrayBuffers };
  } finally {
    clearInterval(timer);
    clearInterval(liveTimer);
  }
}
