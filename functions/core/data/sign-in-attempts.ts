/**
 * Failed sign-ins, counted per e-mail and per client address, in the
 * accounts table, so that the limit holds across every Lambda container
 * and process at once (a count in memory would be one per container).
 *
 *   SIGNIN#email#<sha256 of the e-mail> / SIGNIN   failures, windowStart (ms), expiresAt
 *   SIGNIN#address#<address> / SIGNIN              the same
 *
 * A window opens with a failure and lasts SIGN_IN_LIMITS.windowSeconds;
 * once a key has its limit of failures in it, sign-in with that key is
 * refused for the rest of the window (the answer says how long, as
 * Retry-After), whatever the password. The e-mail is counted whether or
 * not an account has it, so being refused says nothing of whether it
 * exists; it is kept as a hash, not as an address of someone who may
 * never have signed up. `expiresAt` (epoch seconds, the table's time to
 * live) is the window's end: DynamoDB deletes the count some time after,
 * and readers ignore an ended window until then. The counting is
 * rate-limits.ts's windowed counter.
 */
import type { Database } from './dynamo.js';
import { WindowedCounter, type Counted, type RateLimit } from './rate-limits.js';

export const SIGN_IN_LIMITS = {
  windowSeconds: 15 * 60,
  /** Failures per e-mail in a window: someone guessing one person's password. */
  perEmail: 10,
  /** Failures per client address in a window: someone trying many e-mails (more than one person may share an address). */
  perAddress: 30,
};

/** What a count is kept by. */
export interface AttemptKey {
  scope: 'email' | 'address';
  value: string;
}

const LIMITS: Record<AttemptKey['scope'], RateLimit> = {
  email: { action: 'email', count: SIGN_IN_LIMITS.perEmail, windowSeconds: SIGN_IN_LIMITS.windowSeconds, hashKey: true },
  address: { action: 'address', count: SIGN_IN_LIMITS.perAddress, windowSeconds: SIGN_IN_LIMITS.windowSeconds },
};

const counted = (key: AttemptKey): Counted => ({ limit: LIMITS[key.scope], key: key.value });

export class SignInAttemptStore {
  private readonly counter: WindowedCounter;

  constructor(db: Database, now?: () => Date) {
    // `failures`: the attribute these counts were kept in before the counter was shared.
    this.counter = new WindowedCounter(db, { name: 'SIGNIN', countAttribute: 'failures' }, now);
  }

  /** Seconds until sign-in is allowed again for these keys (the longest wait among them), or 0 when it is now. */
  retryAfter(keys: AttemptKey[]): Promise<number> {
    return this.counter.retryAfter(keys.map(counted));
  }

  /** Counts a failure against each key: in its open window, or in a new one. */
  fail(keys: AttemptKey[]): Promise<void> {
    return this.counter.add(keys.map(counted));
  }

  /** Forgets the failures of a key (an e-mail, after its person signed in). */
  clear(key: AttemptKey): Promise<void> {
    return this.counter.clear(counted(key));
  }
}
