/**
 * Site addresses: `<slug>.<sites domain>` serves the site's published
 * deploy, `<deployId>--<slug>.<sites domain>` one deploy. Resolution (host →
 * site → root CID, core/hosting/site-hosts.ts), then the path inside the
 * directory with website semantics: index.html, the slash redirect, then for
 * a path the site lacks its `_redirects` rules and its `404.html`; `_headers`
 * adds headers. Whole answers of a published site are kept in the site cache
 * (keyed by site, deploy and path) and answered again from it, ranges and
 * preconditions included.
 */
import type { Blockstore } from 'interface-blockstore';
import type { CID } from 'multiformats/cid';
import type { HttpRequest } from '../core/http/types.js';
import type { GatewayServices } from '../core/services.js';
import { BadPathError, contentPath, encodePath, resolvePath, type ContentPath, type PathEntry } from '../core/ipfs/paths.js';
import { resolveSite, type SiteTarget } from '../core/hosting/site-hosts.js';
import { siteRules } from '../core/hosting/site-rules.js';
import { matchRedirect, SiteFileError } from '../core/hosting/redirects.js';
import { headersFor } from '../core/hosting/headers.js';
import type { SiteHost } from './hosts.js';
import { textResponse } from './responses.js';
import { bytesAnswer, fileAnswer, indexOf, isFile, rootsHeader, sendAnswer, type Answer } from './unixfs.js';

/** A CDN keeps a site's answers until a purge; browsers ask again each time (and get 304s). */
const SITE_CACHE_CONTROL = 'public, max-age=0, s-maxage=31536000, must-revalidate';
/** A deploy's own address is for checking it: nothing in between keeps it as the site. */
const DEPLOY_CACHE_CONTROL = 'public, max-age=0, must-revalidate';
/**
 * A deploy address's custom 404, 410 and 451 pages (`404.html`, a 4xx rule's
 * target): the deploy's content is immutable, so its answer for a path it
 * lacks is too, and is cached as Kubo's gateway caches custom 4xx pages of
 * immutable content (boxo serve4xx: the path gateway's Cache-Control for
 * `/ipfs/`). A published site's address keeps SITE_CACHE_CONTROL: a
 * publish changes what it answers.
 */
const IMMUTABLE_CACHE_CONTROL = 'public, max-age=29030400, immutable';

const page = (title: string, text: string) =>
  `<!doctype html>\n<html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>${text}</p></body></html>\n`;

function htmlAnswer(status: number, headers: Record<string, string>, title: string, text: string): Answer {
  return bytesAnswer(status, { ...headers, 'content-type': 'text/html; charset=utf-8' }, page(title, text));
}

type Found = { kind: 'file'; entry: PathEntry; roots: CID[]; segments: string[] } | { kind: 'directory' };

/**
 * The site's own configuration at its root is not part of the site: as on
 * Netlify and Cloudflare Pages, `/_redirects` and `/_headers` answer like
 * any missing path. They stay readable as files under `/ipfs/<cid>/`.
 */
const CONFIG_FILES = new Set(['_redirects', '_headers']);

/** Nothing of a site address's "no such site" answers is kept: a site created or published a moment later must be seen at once. */
const NOT_KEPT = 'no-store';

/**
 * A file at `segments`, or a directory's index.html. A directory asked for
 * without its slash is reported as such (a 301 for a request, but an
 * internal rewrite just takes its index).
 */
async function find(
  blockstore: Blockstore,
  root: CID,
  segments: string[],
  trailingSlash: boolean,
  signal: AbortSignal,
): Promise<Found | undefined> {
  if (segments.length === 1 && CONFIG_FILES.has(segments[0]!)) return undefined;
  const found = await resolvePath(blockstore, root, segments, signal);
  if (!found) return undefined;
  if (isFile(found)) return { kind: 'file', entry: found.entry, roots: found.roots, segments };
  if (found.entry.type !== 'directory') return undefined;
  if (!trailingSlash) return { kind: 'directory' };
  const index = await indexOf(blockstore, found, signal);
  return index ? { kind: 'file', entry: index.entry, roots: found.roots, segments: [...segments, 'index.html'] } : undefined;
}

const rulesOf = <T>(rules: T | SiteFileError): T => {
  if (rules instanceof SiteFileError) throw rules;
  return rules;
};

/** The answer for `path` in the directory `root`, before the request's range and conditions. */
async function answerPath(
  blockstore: Blockstore,
  root: CID,
  path: ContentPath,
  rawQuery: string,
  cacheControl: string,
  signal: AbortSignal,
  /** Cache-Control of custom 4xx pages, when it differs from `cacheControl`. */
  errorPageCacheControl = cacheControl,
): Promise<Answer> {
  const rules = await siteRules(blockstore, root);
  const requested = `/${path.segments.join('/')}${path.trailingSlash && path.segments.length ? '/' : ''}`;
  const headers: Record<string, string> = {
    'cache-control': cacheControl,
    'x-content-type-options': 'nosniff',
    ...headersFor(rulesOf(rules.headers), requested),
  };
  const serve = async (found: Extract<Found, { kind: 'file' }>, status = 200) =>
    fileAnswer(blockstore, found.entry, {
      status,
      name: found.segments.at(-1) ?? 'index.html',
      headers: {
        ...headers,
        // (unless the site's _headers set one for the path)
        ...(status >= 400 && headers['cache-control'] === cacheControl ? { 'cache-control': errorPageCacheControl } : {}),
        'x-ipfs-path': `/ipfs/${root.toString()}${encodePath(found.segments)}`,
        'x-ipfs-roots': rootsHeader(found.roots),
      },
      signal,
    });
  const redirect = (status: number, location: string) =>
    htmlAnswer(
      status,
      { ...headers, location },
      'Moved',
      `This page is at <a href="${location.replace(/"/g, '%22')}">${location.replace(/</g, '&lt;')}</a>.`,
    );

  const found = await find(blockstore, root, path.segments, path.trailingSlash, signal);
  if (found?.kind === 'file') return serve(found);
  if (found?.kind === 'directory') return redirect(301, `${encodePath(path.segments, true)}${rawQuery ? `?${rawQuery}` : ''}`);

  // Rules apply only to what the site lacks. A rewrite's target is looked up once, never through the rules again.
  const match = matchRedirect(rulesOf(rules.redirects), requested, rawQuery);
  if (match && match.rule.status >= 300 && match.rule.status < 400) return redirect(match.rule.status, match.location);
  if (match) {
    let target: Found | undefined;
    try {
      const to = contentPath(match.location.replace(/[?#].*$/, ''));
      target = await find(blockstore, root, to.segments, true, signal);
    } catch (err) {
      if (!(err instanceof BadPathError)) throw err;
    }
    if (target?.kind === 'file') return serve(target, match.rule.status);
    if (match.rule.status !== 200) return htmlAnswer(match.rule.status, headers, String(match.rule.status), 'This page is not available.');
  }
  // What Netlify and Cloudflare Pages users expect, with or without a rule for it.
  const notFoundPage = await find(blockstore, root, ['404.html'], false, signal);
  if (notFoundPage?.kind === 'file') return serve(notFoundPage, 404);
  return htmlAnswer(404, headers, 'Not Found', 'This site has no page at this address.');
}

export async function serveSite(
  services: Pick<GatewayServices, 'deploys' | 'ipfs' | 'siteCache' | 'sites'>,
  req: HttpRequest,
  address: SiteHost,
): Promise<Response> {
  let path: ContentPath;
  try {
    path = contentPath(req.rawPath);
  } catch (err) {
    if (err instanceof BadPathError) return textResponse(400, `Bad Request: ${err.message}\n`);
    throw err;
  }
  return serveSiteTarget(services, req, await resolveSite(services, address), path);
}

/** Serves what a site address resolved to (a site host, the CDN's path, or a site's own domain: core/hosting/domain-hosts.ts). */
export async function serveSiteTarget(
  services: Pick<GatewayServices, 'ipfs' | 'siteCache'>,
  req: HttpRequest,
  target: SiteTarget,
  parsed?: ContentPath,
): Promise<Response> {
  let path: ContentPath;
  try {
    path = parsed ?? contentPath(req.rawPath);
  } catch (err) {
    if (err instanceof BadPathError) return textResponse(400, `Bad Request: ${err.message}\n`);
    throw err;
  }
  if (target.kind === 'unknown')
    return textResponse(404, 'Not Found: no site or deploy answers at this address\n', { 'cache-control': NOT_KEPT });
  if (target.kind === 'unpublished') {
    const answer = htmlAnswer(
      404,
      { 'cache-control': NOT_KEPT, 'x-content-type-options': 'nosniff' },
      'Nothing published yet',
      'This site exists but has no published deploy yet.',
    );
    return sendAnswer(req, answer);
  }
  const cache = target.preview ? undefined : services.siteCache;
  const key = `${target.siteId}\n${target.deployId}\n${encodePath(path.segments, path.trailingSlash)}?${req.rawQuery}`;
  const hit = cache?.getResponse(key);
  if (hit) return marked(await sendAnswer(req, bytesAnswer(hit.status, hit.headers, hit.body)), 'HIT');

  const node = await services.ipfs();
  let answer: Answer;
  try {
    answer = await answerPath(
      node.blockstore,
      target.root,
      path,
      req.rawQuery,
      target.preview ? DEPLOY_CACHE_CONTROL : SITE_CACHE_CONTROL,
      req.signal,
      target.preview ? IMMUTABLE_CACHE_CONTROL : SITE_CACHE_CONTROL,
    );
  } catch (err) {
    // The web-redirects-file spec: "the errors MUST be returned to the user with a 500 HTTP status code",
    // in Kubo's words (boxo: trouble processing _redirects file at "<path>": could not parse _redirects: ...).
    if (err instanceof SiteFileError)
      return textResponse(
        500,
        `Internal Server Error: trouble processing ${err.file} file at "/ipfs/${target.root}/${err.file}": could not parse ${err.file}: ${err.message}\n`,
        { 'cache-control': 'no-cache' },
      );
    throw err;
  }
  // Only whole GET answers are kept; a range or a 304 is then cut from the whole.
  if (cache && req.method === 'GET' && answer.size <= cache.maxEntryBytes) {
    const body = new Uint8Array(await new Response(await answer.open({ offset: 0, length: answer.size })).arrayBuffer());
    cache.setResponse(target.siteId, key, { status: answer.status, headers: answer.headers, body });
    answer = bytesAnswer(answer.status, answer.headers, body);
  }
  const response = await sendAnswer(req, answer);
  return cache ? marked(response, 'MISS') : response;
}

function marked(response: Response, state: 'HIT' | 'MISS'): Response {
  response.headers.set('x-cache', state);
  return response;
}
