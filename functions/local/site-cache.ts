/**
 * The local server's cache in front of site addresses: whole responses,
 * least recently used first out, bounded in bytes (CAIRN_SITE_CACHE_BYTES),
 * and what each site host resolved to, for a second. One instance serves
 * the gateway, the API's purgeCache and the deploy worker's publishing, so a
 * purge or a publish is seen by the next request.
 */
import { LRUCache } from 'lru-cache';
import type { CachedHost, CachedResponse, SiteCache } from '../core/ports/site-cache.js';

/**
 * A host resolution outlives no publish made in this process (each one
 * purges it); the second bounds how long one made elsewhere (another process
 * on the same database) goes unseen.
 */
const HOST_TTL_MS = 1000;
/** Past this a file is streamed from the DAG each time rather than crowd out many small ones. */
const MAX_ENTRY_BYTES = 4 * 1024 * 1024;
/** Keys, headers and bookkeeping, counted against the bound with the body. */
const ENTRY_OVERHEAD = 512;

const sizeOf = (key: string, r: CachedResponse) => {
  let size = ENTRY_OVERHEAD + key.length + r.body.byteLength;
  for (const [k, v] of Object.entries(r.headers)) size += k.length + v.length;
  return size;
};

/** A kept 200 as the local door writes it for a plain GET or HEAD (functions/local/site-hits.ts). */
export interface PreparedHit {
  status: number;
  /** Every header the general way sends (Date aside), X-Cache: HIT included, as writeHead takes them. */
  headers: Record<string, string>;
  body: Buffer;
}

type Kept = CachedResponse & {
  siteId: string;
  /** Built with its first hit; null when this answer is not one a hit may write directly. */
  prepared?: PreparedHit | null;
};

/**
 * The headers serveRepresentation, the HIT mark and the door's writeResponse
 * give a whole 200 (web Headers' names, values and order), built once: or
 * null for an answer that is not a validated 200 (those stay on the general
 * way, as does a Set-Cookie, which the door sends as a list).
 */
function prepare(r: CachedResponse): PreparedHit | null {
  if (r.status !== 200 || !r.headers.etag) return null;
  const headers = new Headers({ 'accept-ranges': 'bytes', ...r.headers, 'content-length': String(r.body.byteLength) });
  headers.set('x-cache', 'HIT');
  if (headers.has('set-cookie')) return null;
  const out: Record<string, string> = {};
  headers.forEach((value, name) => (out[name] = value));
  return { status: 200, headers: out, body: Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength) };
}

export class LocalSiteCache implements SiteCache {
  readonly maxEntryBytes: number;
  private readonly responses: LRUCache<string, Kept>;
  private readonly hosts = new LRUCache<string, CachedHost>({ max: 10_000, ttl: HOST_TTL_MS });
  /** Each site's response keys, so a purge drops them without scanning the whole cache. */
  private readonly keysOfSite = new Map<string, Set<string>>();

  constructor(maxBytes: number) {
    this.maxEntryBytes = Math.min(MAX_ENTRY_BYTES, Math.floor(maxBytes / 8));
    this.responses = new LRUCache({
      maxSize: maxBytes,
      maxEntrySize: this.maxEntryBytes + 64 * 1024,
      sizeCalculation: (value, key) => sizeOf(key, value),
      dispose: (value, key) => {
        const keys = this.keysOfSite.get(value.siteId);
        keys?.delete(key);
        if (keys?.size === 0) this.keysOfSite.delete(value.siteId);
      },
    });
  }

  getHost(slug: string): CachedHost | undefined {
    return this.hosts.get(slug);
  }

  purges = 0;

  setHost(slug: string, host: CachedHost, readAt: number): void {
    if (readAt === this.purges) this.hosts.set(slug, host);
  }

  getResponse(key: string): CachedResponse | undefined {
    return this.responses.get(key);
  }

  /** The kept answer under `key` ready to write, when it is a whole 200 (a hit, as getResponse counts it). */
  preparedHit(key: string): PreparedHit | undefined {
    const kept = this.responses.get(key);
    if (!kept) return undefined;
    if (kept.prepared === undefined) kept.prepared = prepare(kept);
    return kept.prepared ?? undefined;
  }

  setResponse(siteId: string, key: string, response: CachedResponse): boolean {
    if (response.body.byteLength > this.maxEntryBytes) return false;
    this.responses.set(key, { ...response, siteId });
    if (!this.responses.has(key)) return false;
    let keys = this.keysOfSite.get(siteId);
    if (!keys) this.keysOfSite.set(siteId, (keys = new Set()));
    keys.add(key);
    return true;
  }

  async purgeSite(siteId: string): Promise<void> {
    this.purges++;
    for (const key of [...(this.keysOfSite.get(siteId) ?? [])]) this.responses.delete(key);
    this.keysOfSite.delete(siteId);
    const slugs: string[] = [];
    for (const [slug, host] of this.hosts.entries()) if (host.siteId === siteId) slugs.push(slug);
    for (const slug of slugs) this.hosts.delete(slug);
  }

  /** How many answers of the site are kept (for tests). */
  entriesOf(siteId: string): number {
    return this.keysOfSite.get(siteId)?.size ?? 0;
  }

  /** Bytes held (for tests and the benchmark). */
  get size(): number {
    return this.responses.calculatedSize;
  }
}
