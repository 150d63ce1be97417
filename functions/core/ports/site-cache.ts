/**
 * The cache in front of site addresses, and what empties it. On one machine
 * both are the local response cache (functions/local/site-cache.ts), shared
 * by the gateway, the API and the deploy worker of the one process. In AWS
 * the cache is a CloudFront distribution in front of the gateway, which the
 * gateway never consults; only its purger is called (CreateInvalidation,
 * functions/aws/cloudfront-purger.ts), and its map of site hosts
 * to site ids is kept current (a CloudFront KeyValueStore,
 * functions/aws/kvs-site-hosts.ts).
 */
import type { CID } from 'multiformats/cid';

/** How often a CDN change was already put off (0 the first time it is tried). */
export interface CdnAttempt {
  attempt?: number;
}

/**
 * Drops what a CDN holds of one site: purgeCache and every publish call it.
 * A CDN that cannot purge now (CloudFront allows 15 wildcard invalidations
 * in flight) puts the purge off itself and resolves; it rejects only when
 * it could not even do that.
 */
export interface CdnPurger {
  purgeSite(siteId: string, options?: CdnAttempt): Promise<void>;
}

/**
 * The CDN's map from a site's host label (its slug) to its id, which its
 * edge function rewrites requests by. `reconcile` makes the entry for
 * `label` agree with `siteIdNow()` (the id of the site holding that slug
 * now, read from the sites table, or undefined to remove it), reading it
 * only once the map's current version is known so that a concurrent writer
 * makes it read again rather than overwrite. Like the purger, a map that
 * cannot be written now puts the change off itself.
 */
export interface SiteHostMap {
  reconcile(label: string, siteIdNow: () => Promise<string | undefined>, options?: CdnAttempt): Promise<void>;
}

/** A CDN change put off: tried again later by the deploy worker (in AWS, a delayed message on the deploy queue). */
export type CdnRetry = { kind: 'purge'; siteId: string; attempt: number } | { kind: 'site-host'; label: string; attempt: number };

export interface CdnRetries {
  later(retry: CdnRetry, delaySeconds: number): Promise<void>;
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
  /** Parsed once when kept (not on every request), and the same instance each time: its string form is computed once too. */
  root: CID | null;
  /** For a site's own domain (keyed by the name): where it redirects and whether it is HTTPS only (core/hosting/domain-hosts.ts). */
  domain?: { redirectTo: { domain: string; secure: boolean } | null; secure: boolean };
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

/** No CDN maps hosts: the gateway reads the Host itself (the local server). */
export const noSiteHostMap: SiteHostMap = { reconcile: async () => {} };
