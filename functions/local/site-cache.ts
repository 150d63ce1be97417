/**
 * The local server's cache in front of site addresses: whole responses,
 * least recently used first out, bounded in bytes (CAIRN_SITE_CACHE_BYTES),
 * and what each site host resolved to, for a second. One instance serves
 * the gateway, the API's purgeCache and the deploy worker's publishing, so a
 * purge or a publish is seen by the next request.
 *
 * With gateway threads (gateway-threads.ts) it is also the one source of
 * their copies: every change a hit depends on (a host kept or dropped, a
 * whole 200 kept or dropped) is sent to each replica in the order it
 * happened, and a purge resolves only once every replica has confirmed it
 * applied everything sent before it. The replicas' bodies are one copy in
 * memory the threads share (web Response refuses shared memory, so the main
 * thread's general way keeps its own): a kept 200 costs twice its bytes
 * with threads, however many.
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
  /** `prepared` with its body in shared memory, as the replicas are sent it (built once for all of them). */
  replicated?: PreparedHit;
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

/** What a hit depends on in a host resolution: the site and its published deploy. */
export interface HitHost {
  siteId: string;
  deployId: string | null;
}

/** The cache's changes as its replicas apply them, in order. */
export type CacheChange =
  /** `expiresAt`: on the clock of `performance.timeOrigin + performance.now()`, the same in every thread. */
  | { t: 'host'; slug: string; host: HitHost; expiresAt: number }
  | { t: 'unhost'; slug: string }
  | { t: 'hit'; key: string; hit: PreparedHit }
  | { t: 'drop'; key: string };

/** A copy of the cache's hits elsewhere (a gateway thread). */
export interface CacheReplica {
  send(change: CacheChange): void;
  /** Resolves once the replica has applied every change sent before this call (or is gone). */
  sync(): Promise<void>;
}

/** A time every thread of the process reads alike (each thread's performance.now() starts at its own origin). */
export const sharedNow = (): number => performance.timeOrigin + performance.now();

/** A kept 200 as replicas take it, or undefined when it is no hit: its body copied once into memory the threads share. */
function replicated(kept: Kept): PreparedHit | undefined {
  if (kept.prepared === undefined) kept.prepared = prepare(kept);
  if (!kept.prepared) return undefined;
  if (!kept.replicated) {
    const body = Buffer.from(new SharedArrayBuffer(kept.prepared.body.byteLength));
    body.set(kept.prepared.body);
    kept.replicated = { ...kept.prepared, body };
  }
  return kept.replicated;
}

export class LocalSiteCache implements SiteCache {
  readonly maxEntryBytes: number;
  private readonly responses: LRUCache<string, Kept>;
  private readonly hosts = new LRUCache<string, CachedHost>({
    max: 10_000,
    ttl: HOST_TTL_MS,
    dispose: (host, slug, reason) => {
      // Replaced: the new resolution is sent after this.
      if (reason !== 'set' && !host.domain) this.send({ t: 'unhost', slug });
    },
  });
  /** Each site's response keys, so a purge drops them without scanning the whole cache. */
  private readonly keysOfSite = new Map<string, Set<string>>();
  private readonly replicas = new Set<CacheReplica>();

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
        if (value.replicated) this.send({ t: 'drop', key });
      },
    });
  }

  getHost(slug: string): CachedHost | undefined {
    return this.hosts.get(slug);
  }

  purges = 0;

  setHost(slug: string, host: CachedHost, readAt: number): void {
    if (readAt !== this.purges) return;
    this.hosts.set(slug, host);
    if (this.replicas.size && !host.domain) this.send(this.hostChange(slug, host));
  }

  private hostChange(slug: string, host: CachedHost): CacheChange {
    return {
      t: 'host',
      slug,
      host: { siteId: host.siteId, deployId: host.deployId },
      expiresAt: sharedNow() + this.hosts.getRemainingTTL(slug),
    };
  }

  private send(change: CacheChange): void {
    for (const replica of this.replicas) replica.send(change);
  }

  /**
   * Adds a replica and sends it what the cache holds now (hosts and whole
   * 200s); every later change follows. Returns its removal.
   */
  addReplica(replica: CacheReplica): () => void {
    for (const [slug, host] of this.hosts.entries()) if (!host.domain) replica.send(this.hostChange(slug, host));
    for (const [key, kept] of this.responses.entries()) {
      const hit = replicated(kept);
      if (hit) replica.send({ t: 'hit', key, hit });
    }
    this.replicas.add(replica);
    return () => void this.replicas.delete(replica);
  }

  /** Marks `keys` recently used: hits a replica answered. */
  touch(keys: Iterable<string>): void {
    for (const key of keys) this.responses.get(key);
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
    const kept: Kept = { ...response, siteId };
    this.responses.set(key, kept);
    if (!this.responses.has(key)) return false;
    const hit = this.replicas.size ? replicated(kept) : undefined;
    if (hit) this.send({ t: 'hit', key, hit });
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
    // The purge is done when no thread can answer what it dropped.
    if (this.replicas.size) await Promise.all([...this.replicas].map((r) => r.sync()));
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
