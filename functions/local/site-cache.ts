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

export class LocalSiteCache implements SiteCache {
  readonly maxEntryBytes: number;
  private readonly responses: LRUCache<string, CachedResponse & { siteId: string }>;
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
