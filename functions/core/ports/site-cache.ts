/**
 * The cache in front of site addresses, and what empties it. On one machine
 * both are the local response cache (functions/local/site-cache.ts), shared
 * by the gateway, the API and the deploy worker of the one process. In AWS
 * the cache is a CDN in front of the gateway, which the gateway never
 * consults; only its purger is called (a CloudFront adapter: not built yet,
 * so nothing caches site responses there and a purge has nothing to do).
 */

/** Drops what a CDN holds of one site: purgeCache and every publish call it. */
export interface CdnPurger {
  purgeSite(siteId: string): Promise<void>;
}

/** A whole response the gateway can answer again without reading the DAG. */
export interface CachedResponse {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

/** What a site host resolved to, kept briefly so a cache hit reads no records. */
export interface CachedHost {
  siteId: string;
  /** The published deploy and its root CID, or null for a site with none. */
  deployId: string | null;
  root: string | null;
}

export interface SiteCache extends CdnPurger {
  getHost(slug: string): CachedHost | undefined;
  /** Counts purges: a resolution read before one must not be kept after it. */
  readonly purges: number;
  /** Keeps `host` unless a purge happened since `purges` was `readAt`. */
  setHost(slug: string, host: CachedHost, readAt: number): void;
  getResponse(key: string): CachedResponse | undefined;
  /** False when the response is too large to keep (it is served all the same). */
  setResponse(siteId: string, key: string, response: CachedResponse): boolean;
  /** The largest body worth reading whole to keep. */
  readonly maxEntryBytes: number;
}

/** Nothing to purge: no cache in this process or in front of it. */
export const noCdn: CdnPurger = { purgeSite: async () => {} };
