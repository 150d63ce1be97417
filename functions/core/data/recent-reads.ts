/**
 * Records remembered between requests for the reads that only show them
 * (the GraphQL API's sites and finished deploys), so the web app's page of
 * sites does not carry the same items out of the database on every
 * request. The stores' writes forget what they change; the rule is the API
 * key checks' (api-keys.ts):
 *
 * - a write made by this process is seen by its next read at once: every
 *   write of a store forgets the records it touched once the write has
 *   ended (failed or not), and a read that was under way while any write of
 *   the store ran is answered but not kept (the write counter below), so a
 *   read that began before the write can never put the old record back;
 * - a write made by another process (in AWS another Lambda container, the
 *   deploy worker, the preview function) is seen within RECENT_READS_MS:
 *   nothing is kept longer. On one machine `npm start` is the only process
 *   that opens the data directory (LevelDB's lock; `npm run admin --local`
 *   and `npm run fsck` open it only while the service is stopped), so there
 *   every write is this process's own.
 *
 * Reads of one key at once share one load (through): a caller joins a load
 * under way only if no write of the store happened since that load began
 * (the same write counter), so a read that starts after a write never gets
 * what was read before it. A load is shared only while it runs: it is
 * dropped from the map when it settles, and a failure fails every caller
 * that shared it once and is not kept.
 *
 * A record read through() and older than REFRESH_AFTER of its time is
 * answered from memory and read anew in the background (one shared load per
 * key at a time, started only by a read of that key), kept by the same rule;
 * so a key read all the time is re-read before it expires, and the many
 * records read together do not all fall out at one instant and send every
 * concurrent request to the database at once. Nothing is answered older
 * than the time itself; a background load's failure is dropped (the record
 * simply expires, and the next read loads it and meets the failure).
 *
 * What is kept is frozen: it is shared by every request that reads it.
 * Writers and anything that decides (conditional updates, authorisation of
 * a change) read afresh, never from here.
 */
import { LRUCache } from 'lru-cache';

/** How long a record read is answered from memory at most: the API key checks' half second (API_KEY_CHECK_MS). */
export const RECENT_READS_MS = 500;

/** Freezes a plain record and everything in it (records are JSON-shaped: objects, arrays, scalars). */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

/**
 * Past this share of its time a record read through() is re-read in the
 * background. Two thirds: with the half second that is a read every third
 * of a second or so for a key read all the time (1.5 times the database
 * reads of letting it expire), and leaves a sixth of a second for the
 * background load, above the slowest reads the GraphQL benchmark sees at 32
 * clients (under 100 ms), so the record is rarely gone before it is back.
 */
export const REFRESH_AFTER = 2 / 3;

/** A load under way and the write mark it began at: only reads that start at the same mark share it. */
interface Flight<V> {
  mark: number;
  promise: Promise<V | undefined>;
}

export class RecentReads<V extends object> {
  private readonly entries: LRUCache<string, V>;
  /** Bumped by every write of the store (forget, clear): a read that saw it change is not kept. */
  private writes = 0;
  /** Loads under way by key (through): an entry lives only until its load settles. */
  private readonly loading = new Map<string, Flight<V>>();
  /** Remaining time below which a hit is re-read in the background. */
  private readonly refreshBelowMs: number;

  /** `max`: at most this many records (a value of several records counts as `sizeOf` of them). */
  constructor(max: number, sizeOf: (value: V) => number = () => 1, ttlMs = RECENT_READS_MS) {
    this.entries = new LRUCache<string, V>({
      maxSize: max,
      sizeCalculation: (value) => Math.max(1, Math.min(max, sizeOf(value))),
      ttl: ttlMs,
      // Past its time an entry is never answered, not even once.
      allowStale: false,
      updateAgeOnGet: false,
    });
    this.refreshBelowMs = ttlMs * (1 - REFRESH_AFTER);
  }

  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  /** Where a read starts: keep() takes what it read only if no write happened since. */
  mark(): number {
    return this.writes;
  }

  /** Keeps a value read since `mark` (frozen), unless the store wrote meanwhile. */
  keep(key: string, value: V, mark: number): void {
    if (mark === this.writes) this.entries.set(key, deepFreeze(value));
  }

  /**
   * The remembered value, or `load()`'s, kept when `worthKeeping` says so.
   * Concurrent calls for `key` with no write between their starts share one
   * load; a remembered value near the end of its time is answered and read
   * anew in the background.
   */
  async through(key: string, load: () => Promise<V | undefined>, worthKeeping: (value: V) => boolean = () => true): Promise<V | undefined> {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      if (this.entries.getRemainingTTL(key) < this.refreshBelowMs) {
        // Dropped on failure: the record expires and the next read meets it.
        this.shared(key, load, worthKeeping).catch(() => undefined);
      }
      return hit;
    }
    return this.shared(key, load, worthKeeping);
  }

  /** The load under way for `key` begun at the current write mark, or a new one. */
  private shared(key: string, load: () => Promise<V | undefined>, worthKeeping: (value: V) => boolean): Promise<V | undefined> {
    const mark = this.writes;
    const under = this.loading.get(key);
    if (under !== undefined && under.mark === mark) return under.promise;
    const promise = (async () => {
      const value = await load();
      if (value !== undefined && worthKeeping(value)) this.keep(key, value, mark);
      return value;
    })();
    const flight: Flight<V> = { mark, promise };
    // A newer load (begun after a write) may have taken the key's place: leave it.
    const settled = () => {
      if (this.loading.get(key) === flight) this.loading.delete(key);
    };
    this.loading.set(key, flight);
    promise.then(settled, settled);
    return promise;
  }

  /**
   * through() for a batch: the remembered values of `keys`, the others by
   * one `loadMany` of those not being loaded already (a load under way for
   * a key is joined by the rule of through()). Remembered values near their
   * end are read anew along with the missing ones, or in one background
   * load when none is missing. Keys absent from the answer map are absent.
   */
  async throughMany(
    keys: readonly string[],
    loadMany: (keys: string[]) => Promise<Map<string, V>>,
    worthKeeping: (value: V) => boolean = () => true,
  ): Promise<Map<string, V>> {
    const found = new Map<string, V>();
    const joined: Array<Promise<void>> = [];
    const missing: string[] = [];
    const ending: string[] = [];
    const mark = this.writes;
    for (const key of new Set(keys)) {
      const hit = this.entries.get(key);
      const under = this.loading.get(key);
      const joinable = under !== undefined && under.mark === mark;
      if (hit !== undefined) {
        found.set(key, hit);
        if (!joinable && this.entries.getRemainingTTL(key) < this.refreshBelowMs) ending.push(key);
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
  private sharedMany(
    keys: string[],
    loadMany: (keys: string[]) => Promise<Map<string, V>>,
    worthKeeping: (value: V) => boolean,
  ): Promise<Map<string, V>> {
    const mark = this.writes;
    const batch = (async () => {
      const values = await loadMany(keys);
      for (const [key, value] of values) if (worthKeeping(value)) this.keep(key, value, mark);
      return values;
    })();
    for (const key of keys) {
      const flight: Flight<V> = { mark, promise: batch.then((values) => values.get(key)) };
      const settled = () => {
        if (this.loading.get(key) === flight) this.loading.delete(key);
      };
      this.loading.set(key, flight);
      flight.promise.then(settled, settled);
    }
    return batch;
  }

  /** Loads under way (for tests: the map holds only those). */
  get loadsUnderWay(): number {
    return this.loading.size;
  }

  /** After a write of `keys` (ended, or failed: it may have happened). */
  forget(...keys: string[]): void {
    this.writes++;
    for (const key of keys) this.entries.delete(key);
  }

  /** After a write whose reach is not known by key (a listing changed). */
  clear(): void {
    this.writes++;
    this.entries.clear();
  }

  /**
   * Runs a write, forgetting `keys` before it starts and again once it
   * ended, succeeded or not: a read that overlaps any part of the write
   * neither answers the old record nor is kept.
   */
  async writing<T>(keys: string[] | 'all', write: () => Promise<T>): Promise<T> {
    const drop = () => (keys === 'all' ? this.clear() : this.forget(...keys));
    // Forgotten before the write too: the database takes it before the
    // writer hears back, and a read in between (of the deploy the same
    // transaction ends, say) must not meet the old record here.
    drop();
    try {
      return await write();
    } finally {
      drop();
    }
  }
}
