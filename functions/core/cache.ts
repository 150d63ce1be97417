/**
 * A small time-bounded cache for hot, rarely-changing lookups (an access
 * key's secret, a bucket's owner) that every S3 request makes. Entries live
 * `ttlMs`; past `max` entries the least recently used go first. Writers in
 * the same process invalidate what they change; other processes see a
 * change within `ttlMs`. The bookkeeping is lru-cache's (as the site and
 * rules caches use); this adds the read-through the stores want.
 */
import { LRUCache } from 'lru-cache';

export class TtlCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>> extends LRUCache<K, V> {
  constructor(ttlMs: number, max = 10_000) {
    // An entry past its time is never answered (not even once, stale).
    super({ max, ttl: ttlMs, allowStale: false, updateAgeOnGet: false });
  }

  /** The cached value, or `load()`'s (cached when defined). */
  async through(key: K, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const value = await load();
    if (value !== undefined) this.set(key, value);
    return value;
  }
}
