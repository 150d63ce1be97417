/**
 * The web app on the API port, for both doors (functions/graphql/routes.ts):
 * `GET /` is its page, `/app/assets/<name>-<hash>.<ext>` its files (cached
 * for a year: a new build has new names), `/app/config.json` the public
 * endpoints it needs, `/app/settings` a redirect to its settings page. The app itself (ui/) speaks only the public GraphQL
 * API on this origin and the S3 API.
 *
 * The files come from the directory the CDK stack put beside the handler in
 * the Lambda bundle (`web-app/`, built at synth by buildWebApp), or, when
 * there is none (the local server), from an esbuild build in memory on the
 * first request; either way they are loaded once per process.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Config } from '../core/config.js';
import type { HttpRequest } from '../core/http/types.js';
import type { Logger } from '../core/logger.js';
import type { Services } from '../core/services.js';
import { webAppConfig } from './app-config.js';
import { ASSET_PATH, WEB_APP_BUNDLE_DIR } from './bundle.js';

/** `/` and everything under `/app/`: what the HTTP API routes here (`GET /`, `GET /app/{proxy+}`). */
/** The command line's login page. */
export const DEVICE_PAGE_PATH = '/app/device';

export const isWebAppPath = (rawPath: string): boolean => rawPath === '/' || rawPath.startsWith('/app/');

interface Asset {
  type: string;
  body: Uint8Array<ArrayBuffer>;
  gzip: Uint8Array<ArrayBuffer>;
  etag: string;
}

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  json: 'application/json; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  woff2: 'font/woff2',
};

function asset(name: string, body: Uint8Array): Asset {
  return {
    type: TYPES[name.slice(name.lastIndexOf('.') + 1)] ?? 'application/octet-stream',
    body: new Uint8Array(body),
    gzip: new Uint8Array(gzipSync(body, { level: 9 })),
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
  };
}

/** The Lambda bundle's prebuilt files: `web-app/` beside the bundled handler. */
export const PREBUILT_DIR = join(dirname(fileURLToPath(import.meta.url)), WEB_APP_BUNDLE_DIR);

async function readPrebuilt(dir: string): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  for (const name of await readdir(dir)) if (!name.startsWith('.')) files.set(name, await readFile(join(dir, name)));
  return files;
}

/** Built here: esbuild is a development dependency, so it is loaded by a name the Lambda bundler does not follow. */
async function buildHere(): Promise<Map<string, Uint8Array>> {
  const buildModule = './build.js';
  const { buildWebAppFiles } = (await import(buildModule)) as typeof import('./build.js');
  return buildWebAppFiles();
}

export class WebAppUnavailable extends Error {}

/** Where the app's files come from: a prebuilt directory when there is one, else a build in memory. */
export function webAppSource(dir = PREBUILT_DIR): () => Promise<Map<string, Uint8Array>> {
  return async () => {
    if (existsSync(join(dir, 'index.html'))) return readPrebuilt(dir);
    try {
      return await buildHere();
    } catch (err) {
      throw new WebAppUnavailable(`the web app's files are not in ${dir} and it could not be built here: ${(err as Error).message}`);
    }
  };
}

/** The app's pages that answer at a path of their own too (`/app/settings` -> `/#/settings`). */
const APP_PAGE_PATHS = new Set(['/app/settings']);

const NOT_FOUND_TEXT = 'Not found. The web app is at /, the GraphQL API at /graphql.\n';

function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff', ...headers },
  });
}

function originOf(url: string): string {
  return new URL(url).origin;
}

/** The page's policy: its own scripts and styles only; images from the gateways too (preview images); S3 calls to the storage endpoint. */
export function contentSecurityPolicy(config: Config): string {
  const gateways = [...new Set([originOf(config.urls.gatewayUrl), originOf(config.urls.publicGatewayUrl)])].join(' ');
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: ${gateways}`,
    `connect-src 'self' ${originOf(config.urls.storageEndpoint)}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export class WebApp {
  private files?: Promise<Map<string, Asset>>;

  constructor(
    private readonly load: () => Promise<Map<string, Uint8Array>>,
    private readonly logger?: Logger,
  ) {}

  private assets(): Promise<Map<string, Asset>> {
    if (!this.files) {
      const started = Date.now();
      this.files = this.load().then((raw) => {
        const out = new Map<string, Asset>();
        for (const [name, body] of raw) out.set(name, asset(name, body));
        this.logger?.debug('web app loaded', { files: [...out.keys()], ms: Date.now() - started });
        return out;
      });
      // A failed load is tried again by the next request.
      this.files.catch(() => (this.files = undefined));
    }
    return this.files;
  }

  async respond(config: Config, req: HttpRequest): Promise<Response> {
    const method = req.method.toUpperCase();
    if (method !== 'GET' && method !== 'HEAD')
      return text(405, 'Method not allowed: the web app answers GET and HEAD.\n', { allow: 'GET, HEAD' });
    await req.body?.cancel().catch(() => {});
    if (req.rawPath === '/app/config.json') {
      return new Response(JSON.stringify(webAppConfig(config)), {
        headers: { 'content-type': TYPES.json!, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' },
      });
    }
    // A page of the app by a path, for links made outside it (a message, the command line): the page is `/`, its route the hash.
    if (APP_PAGE_PATHS.has(req.rawPath))
      return new Response(null, {
        status: 302,
        headers: { location: `/#/${req.rawPath.slice('/app/'.length)}`, 'cache-control': 'no-cache' },
      });
    // The page is also at /app/device: RFC 8628's verification URI, which `cairn login` opens (ui/pages/DeviceLogin.tsx).
    const page = req.rawPath === '/' || req.rawPath === DEVICE_PAGE_PATH;
    const name = page ? 'index.html' : req.rawPath.startsWith(ASSET_PATH) ? req.rawPath.slice(ASSET_PATH.length) : undefined;
    if (name === undefined || name === '' || name.includes('/') || (name === 'index.html' && !page)) return text(404, NOT_FOUND_TEXT);
    let files: Map<string, Asset>;
    try {
      files = await this.assets();
    } catch (err) {
      this.logger?.error('web app unavailable', { err });
      return text(
        503,
        `The web app is not available: ${err instanceof WebAppUnavailable ? err.message : 'its files could not be loaded'}.\n`,
        { 'retry-after': '5' },
      );
    }
    const file = files.get(name);
    if (!file) return text(404, NOT_FOUND_TEXT);
    return serveFile(
      file,
      req.headers,
      name === 'index.html'
        ? {
            'cache-control': 'no-cache',
            'content-security-policy': contentSecurityPolicy(config),
            'referrer-policy': 'no-referrer',
            'x-frame-options': 'DENY',
          }
        : { 'cache-control': 'public, max-age=31536000, immutable' },
    );
  }
}

function serveFile(file: Asset, requestHeaders: Headers, extra: Record<string, string>): Response {
  const common: Record<string, string> = { etag: file.etag, vary: 'accept-encoding', 'x-content-type-options': 'nosniff', ...extra };
  const match = requestHeaders.get('if-none-match');
  if (match !== null && match.split(',').some((tag) => tag.trim().replace(/^W\//, '') === file.etag))
    return new Response(null, { status: 304, headers: common });
  const gzip = /\bgzip\b/.test(requestHeaders.get('accept-encoding') ?? '');
  const body = gzip ? file.gzip : file.body;
  return new Response(body, {
    headers: {
      ...common,
      'content-type': file.type,
      'content-length': String(body.length),
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
    },
  });
}

/** One app per process: the files are the same for every service a process runs. */
let shared: WebApp | undefined;

export async function handleWebApp(services: Pick<Services, 'config' | 'logger'>, req: HttpRequest): Promise<Response> {
  shared ??= new WebApp(webAppSource(), services.logger);
  return shared.respond(services.config, req);
}
