/**
 * The interactive playground: GraphiQL, served by the API itself at
 * `GET /graphql` to browsers (Accept: text/html, no `query` parameter),
 * entirely from this service's own copies of GraphiQL and React, so it
 * works with no internet access. Its files are `GET /graphql?asset=<name>`
 * on the same route (API Gateway routes only /graphql), versioned by
 * content hash and cached for a year.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { queryParams } from '../core/http/types.js';
import { PLAYGROUND_ASSETS, type PlaygroundAssetName } from './playground-assets.js';

export interface PlaygroundOptions {
  enabled: boolean;
  /** A directory holding the files flat (the Lambda bundle's `playground/`); node_modules when unset. */
  dir?: string;
}

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
  version: string;
}

/** Starts GraphiQL: the endpoint is this page's own path; the key goes in the Headers tab. */
const START_SCRIPT = `(function () {
  var fetcher = GraphiQL.createFetcher({ url: window.location.pathname });
  var defaultQuery = [
    '# Cairn GraphQL playground',
    '#',
    '# Put your API key in the Headers tab below:',
    '#   { "Authorization": "<your API key>" }',
    '# then run a query with the play button or Ctrl-Enter.',
    '',
    '{',
    '  getCurrentTeam {',
    '    id',
    '    name',
    '  }',
    '}',
    '',
  ].join('\\n');
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: defaultQuery,
      defaultHeaders: '{\\n  "Authorization": ""\\n}',
      defaultEditorToolsVisibility: 'headers',
      shouldPersistHeaders: false,
    }),
  );
})();
`;

const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** node_modules above this file (the repository's, when running from source). */
function nodeModules(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'node_modules');
    if (existsSync(join(candidate, PLAYGROUND_ASSETS['graphiql.min.js']))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('the playground files are missing: set CAIRN_GRAPHQL_PLAYGROUND_DIR');
    dir = parent;
  }
}

function makeAsset(name: string, body: Buffer): Asset {
  return {
    type: TYPES[name.slice(name.lastIndexOf('.') + 1)] ?? 'application/octet-stream',
    body,
    gzip: gzipSync(body),
    version: createHash('sha256').update(body).digest('hex').slice(0, 16),
  };
}

export class Playground {
  private assets?: Promise<Map<string, Asset>>;

  constructor(private readonly options: PlaygroundOptions) {}

  /** Loaded on first use, then kept: a Lambda container reads the files once. */
  private load(): Promise<Map<string, Asset>> {
    this.assets ??= (async () => {
      const map = new Map<string, Asset>();
      for (const [name, modulePath] of Object.entries(PLAYGROUND_ASSETS) as Array<[PlaygroundAssetName, string]>) {
        const path = this.options.dir ? join(this.options.dir, name) : join(nodeModules(), modulePath);
        map.set(name, makeAsset(name, await readFile(path)));
      }
      map.set('start.js', makeAsset('start.js', Buffer.from(START_SCRIPT)));
      return map;
    })();
    this.assets.catch(() => (this.assets = undefined));
    return this.assets;
  }

  /** The playground's answer to a request, or undefined when the request is not for it. */
  async respond(req: { method: string; rawQuery: string; headers: Headers }): Promise<Response | undefined> {
    if (req.method !== 'GET' && req.method !== 'HEAD') return undefined;
    const query = queryParams(req.rawQuery);
    const assetName = query.get('asset');
    if (assetName !== undefined) {
      if (!this.options.enabled) return notFound();
      const asset = (await this.load()).get(assetName);
      return asset ? serveAsset(asset, query.get('v'), req.headers) : notFound();
    }
    if (!this.options.enabled || query.has('query') || !(req.headers.get('accept') ?? '').includes('text/html')) return undefined;
    return new Response(page(await this.load()), {
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-cache',
        'content-security-policy': CSP,
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      },
    });
  }
}

function notFound(): Response {
  return new Response('Not found\n', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } });
}

function serveAsset(asset: Asset, version: string | undefined, headers: Headers): Response {
  const etag = `"${asset.version}"`;
  const common: Record<string, string> = {
    etag,
    vary: 'accept-encoding',
    'x-content-type-options': 'nosniff',
    // A versioned URL never changes; an unversioned one is revalidated.
    'cache-control': version === asset.version ? 'public, max-age=31536000, immutable' : 'no-cache',
  };
  if (headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers: common });
  const gzip = /\bgzip\b/.test(headers.get('accept-encoding') ?? '');
  const body = gzip ? asset.gzip : asset.body;
  return new Response(new Uint8Array(body), {
    headers: {
      ...common,
      'content-type': asset.type,
      'content-length': String(body.length),
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
    },
  });
}

function page(assets: Map<string, Asset>): string {
  // Relative URLs (`?asset=...`) resolve against this page's own path, wherever the API is mounted.
  const url = (name: string) => `?asset=${encodeURIComponent(name)}&amp;v=${assets.get(name)!.version}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cairn GraphQL playground</title>
<link rel="stylesheet" href="${url('graphiql.min.css')}">
<style>html, body { margin: 0; height: 100%; } #graphiql { height: 100vh; }</style>
</head>
<body>
<div id="graphiql">Loading the playground…</div>
<script src="${url('react.production.min.js')}"></script>
<script src="${url('react-dom.production.min.js')}"></script>
<script src="${url('graphiql.min.js')}"></script>
<script src="${url('start.js')}"></script>
</body>
</html>
`;
}
