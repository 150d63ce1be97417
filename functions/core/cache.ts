/**
 * A small time-bounded cache for hot, rarely-changing lookups that every
 * request makes (an API key's caller, a bucket's record, an access key's
 * secret) and the records the GraphQL reads show (recent-reads.ts builds
 * on it). Entries live `ttlMs`, never answered past it; past `max` the
 * least recently used go first. The bookkeeping is lru-cache's; this adds
 * the read-through the stores want, with three rules:
 *
 * - **A change wins.** Every delete() or clear() (a writer in this process
 *   forgetting what it changes) moves the cache's change mark; a load that
 *   began before a change is answered to its callers but not kept, so a
 *   read that began before a write can never put the old value back.
 *   Other processes' changes are seen within `ttlMs`: nothing is kept
 *   longer.
 * - **One load per key at a time.** Concurrent through() calls for a key
 *   share one load, if no change happened between their starts (a read
 *   that starts after a change never gets what was read before it). A load
 *   is shared only while it runs; a failure fails every caller that shared
 *   it, once, and is not kept.
 * - **Refresh ahead.** A value read through() past REFRESH_AFTER of its
 *   time is answered and loaded anew in the background (one shared load,
 *   started only by a read of that key), kept by the same rules; so a key
 *   read all the time is re-read before it expires, and the concurrent
 *   requests of a busy moment never all wait on one expiry (the tail that
 *   bench:graphql showed twice a second with records kept half a second).
 *   A background load's failure is dropped: the value simply expires and
 *   the next read loads it and meets the failure.
 */
import { LRUCache } from 'lru-cache';

/**
 * Past this share of its time a value read through() is loaded anew in the
 * background. Two thirds: with the half second of the API key checks and
 * the GraphQL records, a key read all the time is read every third of a
 * second or so (1.5 times the loads of letting it expire), and a sixth of a
 * second is left for the background load, above the slowest reads the
 * GraphQL benchmark sees at 32 clients (under 100 ms), so the value is
 * rarely gone before it is back.
 */
export const REFRESH_AFTER = 2 / 3;

export interface TtlCacheOptions<V> {
  /** At most this many entries (a value counting as `sizeOf` of them). */
  max?: number;
  /** How many entries a value counts as (a page of records: one per record): 1 by default. */
  sizeOf?: (value: V) => number;
}

/** A load under way and the change mark it began at: only reads that start at the same mark share it. */
interface Flight<V> {
  mark: number;
  promise: Promise<V | undefined>;
}

export class TtlCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>> extends LRUCache<K, V> {
  /** Moved by every delete() and clear(): a load that saw it move is not kept. */
  private changes = 0;
  /** Loads under way by key: an entry lives only until its load settles. */
  private readonly loading = new Map<K, Flight<V>>();
  /** Remaining time below which a hit read through() is loaded anew in the background. */
  private readonly refreshBelowMs: number;

  constructor(ttlMs: number, options: number | TtlCacheOptions<V> = {}) {
    const { max = 10_000, sizeOf } = typeof options === 'number' ? { max: options } : options;
    super({
      ...(sizeOf ? { maxSize: max, sizeCalculation: (value: V) => Math.max(1, Math.min(max, sizeOf(value))) } : { max }),
      ttl: ttlMs,
      // An entry past its time is never answered (not even once, stale).
      allowStale: false,
      updateAgeOnGet: false,
    });
    this.refreshBelowMs = ttlMs * (1 - REFRESH_AFTER);
  }

  override delete(key: K): boolean {
    this.changes++;
    return super.delete(key);
  }

  override clear(): void {
    this.changes++;
    super.clear();
  }

  /** A change with no one key to forget (a write whose reach is not known by key). */
  changed(): void {
    this.changes++;
  }

  /** Where a read starts: keep() takes what it read only if nothing changed since. */
  mark(): number {
    return this.changes;
  }

  /** Keeps a value read since `mark`, unless the cache changed meanwhile. */
  keep(key: K, value: V, mark: number): void {
    if (mark === this.changes) this.set(key, value);
  }

  /**
   * The remembered value, or `load()`'s, kept when defined and
   * `worthKeeping` says so. Concurrent calls for `key` with no change
   * between their starts share one load; a remembered value near the end
   * of its time is answered and loaded anew in the background.
   */
  async through(key: K, load: () => Promise<V | undefined>, worthKeeping: (value: V) => boolean = () => true): Promise<V | undefined> {
    const hit = this.get(key);
    if (hit !== undefined) {
      if (this.getRemainingTTL(key) < this.refreshBelowMs) {
        // Dropped on failure: the value expires and the next read meets it.
        this.shared(key, load, worthKeeping).catch(() => undefined);
      }
      return hit;
    }
    return this.shared(key, load, worthKeeping);
  }

  /** The load under way for `key` begun at the current change mark, or a new one. */
  private shared(key: K, load: () => Promise<V | undefined>, worthKeeping: (value: V) => boolean): Promise<V | undefined> {
    const mark = this.changes;
    const under = this.loading.get(key);
    if (under !== undefined && under.mark === mark) return under.promise;
    const promise = (async () => {
      const value = await load();
      if (value !== undefined && worthKeeping(value)) this.keep(key, value, mark);
      return value;
    })();
    this.underWay(key, { mark, promise });
    return promise;
  }

  /** Registers a key's load under way until it settles (a newer one, begun after a change, may take its place: left alone). */
  private underWay(key: K, flight: Flight<V>): void {
    const settled = () => {
      if (this.loading.get(key) === flight) this.loading.delete(key);
    };
    this.loading.set(key, flight);
    flight.promise.then(settled, settled);
  }

  /**
   * through() for a batch: the remembered values of `keys`, the others by
   * one `loadMany` of those not being loaded already (a load under way for
   * a key is joined by the rule of through()). Remembered values near their
   * end are loaded anew along with the missing ones, or in one background
   * load when none is missing. Keys absent from the answer are absent.
   */
  async throughMany(
    keys: readonly K[],
    loadMany: (keys: K[]) => Promise<Map<K, V>>,
    worthKeeping: (value: V) => boolean = () => true,
  ): Promise<Map<K, V>> {
    const found = new Map<K, V>();
    const joined: Array<Promise<void>> = [];
    const missing: K[] = [];
    const ending: K[] = [];
    const mark = this.changes;
    for (const key of new Set(keys)) {
      const hit = this.get(key);
      const under = this.loading.get(key);
      const joinable = under !== undefined && under.mark === mark;
      if (hit !== undefined) {
        found.set(key, hit);
        if (!joinable && this.getRemainingTTL(key) < this.refreshBelowMs) ending.push(key);
      } else if (joinable) {
        joined.push(
          under.promise.then((value) => {
            if (value !== undefined) found.set(key, value);
          }),
        );
      } else missing.push(key);
    }
    const loading = missing.length > 0 ? this.sharedMany([...missing, ...ending], loadMany, worthKeeping) : undefined;
    // Dropped on failure, as in through().
    if (loading === undefined && ending.length > 0) this.sharedMany(ending, loadMany, worthKeeping).catch(() => undefined);
    // Awaited together: a failure of one leaves no other unhandled.
    const [loaded] = await Promise.all([loading, Promise.all(joined)]);
    for (const key of missing) {
      const value = loaded?.get(key);
      if (value !== undefined) found.set(key, value);
    }
    return found;
  }

  /** One load of `keys`, each key's share of it registered as that key's load under way. */
  private sharedMany(keys: K[], loadMany: (keys: K[]) => Promise<Map<K, V>>, worthKeeping: (value: V) => boolean): Promise<Map<K, V>> {
    const mark = this.changes;
    const batch = (async () => {
      const values = await loadMany(keys);
      for (const [key, value] of values) if (worthKeeping(value)) this.keep(key, value, mark);
      return values;
    })();
    for (const key of keys) this.underWay(key, { mark, promise: batch.then((values) => values.get(key)) });
    return batch;
  }

  /** Loads under way (for tests: the map holds only those). */
  get loadsUnderWay(): number {
    return this.loading.size;
  }
}
