/**
 * Trying again, within bounds. DynamoDB cancels a transaction that collides
 * with another, refuses a plain write to an item a transaction is checking,
 * and under load hands back part of a batch unprocessed; each of these is
 * worth another try after a short pause, and none of them is worth trying
 * for ever. Every such loop in the core takes its number of tries, its
 * pauses and its idea of what is retryable from here, so a bound is never
 * forgotten and a loop that runs out says so.
 */

/** The pauses between tries (or between looks, for a wait bounded by a deadline rather than a count). */
export interface Pauses {
  /** The pause after the first failed try, in milliseconds. */
  readonly baseMs: number;
  /** How later pauses grow: doubling each time (the default) or by `baseMs` each time. */
  readonly growth?: 'exponential' | 'linear';
  /** No pause is longer than this (default: no cap). */
  readonly maxMs?: number;
  /**
   * 'full': each pause is drawn at random below its bound, so writers that
   * collided once do not collide again in step; 'none' (the default): the
   * bound itself.
   */
  readonly jitter?: 'full' | 'none';
}

export interface RetryPolicy extends Pauses {
  /** Tries in all, the first included (at least 1). */
  readonly attempts: number;
}

/** A loop that ran out of tries with work still left (a failure that was retryable is rethrown as it is). */
export class RetriesExhaustedError extends Error {
  override readonly name = 'RetriesExhaustedError';
}

/** The pause before try number `retry + 1` (so `retry` is 1 before the second try). */
export function pauseBefore(retry: number, policy: Pauses): number {
  const bound = Math.min(
    policy.maxMs ?? Infinity,
    policy.growth === 'linear' ? policy.baseMs * retry : policy.baseMs * 2 ** Math.min(retry - 1, 30),
  );
  return policy.jitter === 'full' ? Math.random() * bound : bound;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `task` (given its try number, from 1) until it returns, pausing
 * between tries; a failure `retryable` refuses, or the last try's failure,
 * is thrown as it is.
 */
export async function retry<T>(
  task: (attempt: number) => Promise<T>,
  policy: RetryPolicy & { readonly retryable?: (err: unknown) => boolean },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await task(attempt);
    } catch (err) {
      if (attempt >= policy.attempts || !(policy.retryable?.(err) ?? true)) throw err;
      await sleep(pauseBefore(attempt, policy));
    }
  }
}

/**
 * For batch calls that answer with what they left undone (BatchGetItem's
 * UnprocessedKeys, BatchWriteItem's UnprocessedItems): sends `pending`,
 * then whatever `send` hands back as left over, pausing between rounds,
 * until nothing is left (`send` returns undefined). After
 * `policy.attempts` rounds with work still left it throws
 * RetriesExhaustedError naming `what`.
 */
export async function untilNoneLeft<T>(
  pending: T,
  send: (pending: T) => Promise<T | undefined>,
  policy: RetryPolicy & { readonly what: string },
): Promise<void> {
  for (let round = 1; ; round++) {
    const left = await send(pending);
    if (left === undefined) return;
    if (round >= policy.attempts)
      throw new RetriesExhaustedError(`${policy.what}: DynamoDB left part of it unprocessed after ${round} tries`);
    await sleep(pauseBefore(round, policy));
    pending = left;
  }
}
