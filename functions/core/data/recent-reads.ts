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
 *   the store ran is answered but not kept (the change mark of cache.ts), so a
 *   read that began before the write can never put the old record back;
 * - a write made by another process (in AWS another Lambda container, the
 *   deploy worker, the preview function) is seen within RECENT_READS_MS:
 *   nothing is kept longer. On one machine `npm start` is the only process
 *   that opens the data directory (LevelDB's lock; `npm run admin --local`
 *   and `npm run fsck` open it only while the service is stopped), so there
 *   every write is this process's own.
 *
 * Reads of one key at once share one load, and a record read near the end
 * of its time is answered and read anew in the background (refresh
 * ahead), by TtlCache's rules (cache.ts): nothing is answered older than
 * the time itself, and the many records read together do not all fall
 * out at one instant and send every concurrent request to the database
 * at once.
 *
 * What is kept is frozen: it is shared by every request that reads it.
 * Writers and anything that decides (conditional updates, authorisation of
 * a change) read afresh, never from here.
 */
import { TtlCache } from '../cache.js';

/** How long a record read is answered from memory at most: the API key checks' half second (API_KEY_CHECK_MS). */
export const RECENT_READS_MS = 500;

/** Freezes a plain record and everything in it (records are JSON-shaped: objects, arrays, scalars). */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

export class RecentReads<V extends object> extends TtlCache<string, V> {
  /** `max`: at most this many records (a value of several records counts as `sizeOf` of them). */
  constructor(max: number, sizeOf: (value: V) => number = () => 1, ttlMs = RECENT_READS_MS) {
    super(ttlMs, { max, sizeOf });
  }

  /** Keeps a value read since `mark` (frozen: every request that reads it shares it), unless the store wrote meanwhile. */
  override keep(key: string, value: V, mark: number): void {
    if (mark === this.mark()) super.keep(key, deepFreeze(value), mark);
  }

  /** After a write of `keys` (ended, or failed: it may have happened). */
  forget(...keys: string[]): void {
    this.changed();
    for (const key of keys) this.delete(key);
  }

  /**
   * Runs a write, forgetting `keys` ('all': everything) before it starts
   * and again once it ended, succeeded or not: a read that overlaps any
   * part of the write neither answers the old record nor is kept.
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
