/**
 * The local gateway's path for site cache hits: a plain GET or HEAD of a
 * site host (`<slug>.<sites domain>`) whose host resolution and whole 200
 * answer are both in the site cache is written straight from the cache,
 * with headers built once per cached answer and the body from one Buffer.
 * Everything else (ranges, preconditions, previews, other hosts, misses,
 * 404 pages, redirects, errors) goes the general way: the request becomes an
 * HttpRequest, the gateway handler answers a Response, and the door writes
 * it. The answer is the same byte for byte but for Date (tested in
 * test/api/site-hits.test.ts); a hit skips the web Headers, Response and
 * stream objects, the abort signal and the promise chain the general way
 * costs, which were most of a hit's CPU (bench:edge).
 *
 * Coherence is the site cache's: a publish or purge drops the site's host
 * resolution and its answers, so the next request finds no host here and
 * takes the general way, which resolves the host again.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LRUCache } from 'lru-cache';
import type { Config } from '../core/config.js';
import { BadPathError, contentPath, encodePath } from '../core/ipfs/content-path.js';
import { bucketHost, siteHost } from '../gateway/hosts.js';
import type { HitHost, PreparedHit } from './site-cache.js';

/** Request headers that make an answer other than the whole 200: the general way evaluates them. */
const CONDITIONAL = ['range', 'if-match', 'if-none-match', 'if-modified-since', 'if-unmodified-since', 'if-range', 'expect'] as const;

/** The longest host or path the memos keep. */
const MEMO_KEY_LENGTH = 512;

/** A Host header's site slug, or null when the host is not a published-site address. */
type HostSlug = string | null;

/**
 * `(req, res) => boolean`: true when it answered the request, false when it
 * did nothing and the general way must.
 */
export type FastAnswer = (req: IncomingMessage, res: ServerResponse) => boolean;

/** Where hits are looked up: the site cache on the main thread, a gateway thread's copy of it elsewhere (gateway-thread.ts). */
export interface HitSource {
  getHost(slug: string): HitHost | undefined;
  preparedHit(key: string): PreparedHit | undefined;
}

export function siteHitAnswerer(cache: HitSource, config: { sites: Pick<Config['sites'], 'domain'>; urls: Config['urls'] }): FastAnswer {
  // Both memos are pure functions of what the client sent (no invalidation), bounded since clients choose
  // the keys: in count, and in size (a key past MEMO_KEY_LENGTH is worked out each time, never kept), so
  // a flood of long distinct hosts or paths holds at most about 10,000 x 512 bytes.
  const slugs = new LRUCache<string, { slug: HostSlug }>({ max: 1024 });
  const paths = new LRUCache<string, { encoded: string | null }>({ max: 10_000 });
  const slugOf = (host: string): HostSlug => {
    let memo = slugs.get(host);
    if (!memo) {
      const site = bucketHost(host, config.urls) ? undefined : siteHost(host, config.sites.domain);
      memo = { slug: site && site.deployLabel === undefined ? site.slug : null };
      if (host.length <= MEMO_KEY_LENGTH) slugs.set(host, memo);
    }
    return memo.slug;
  };
  const encodedPathOf = (rawPath: string): string | null => {
    let memo = paths.get(rawPath);
    if (!memo) {
      try {
        const path = contentPath(rawPath);
        memo = { encoded: encodePath(path.segments, path.trailingSlash) };
      } catch (err) {
        if (!(err instanceof BadPathError)) throw err;
        memo = { encoded: null }; // answered 400 the general way
      }
      if (rawPath.length <= MEMO_KEY_LENGTH) paths.set(rawPath, memo);
    }
    return memo.encoded;
  };

  return (req, res) => {
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD') return false;
    const headers = req.headers;
    const host = headers.host;
    if (!host) return false;
    for (const name of CONDITIONAL) if (headers[name] !== undefined) return false;
    const slug = slugOf(host);
    if (slug === null) return false;
    const site = cache.getHost(slug);
    if (!site?.deployId) return false;
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const encoded = encodedPathOf(q < 0 ? target : target.slice(0, q));
    if (encoded === null) return false;
    // The key serveSiteTarget keeps the answer under (functions/gateway/sites.ts).
    const hit: PreparedHit | undefined = cache.preparedHit(
      `${site.siteId}\n${site.deployId}\n${encoded}?${q < 0 ? '' : target.slice(q + 1)}`,
    );
    if (!hit) return false;
    res.writeHead(hit.status, hit.headers);
    if (method === 'HEAD') res.end();
    else res.end(hit.body);
    return true;
  };
}
