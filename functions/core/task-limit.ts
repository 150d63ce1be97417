/**
 * At most `max` tasks at a time, the rest waiting their turn in order; a
 * waiting task gives up (rejects with the signal's reason) when its turn
 * comes after the signal fired. For walks over many files (imports,
 * checkouts, copies) that must keep the disk and the CPU busy without
 * opening every file at once. The queue is p-limit's (the one limiter the
 * server, the CLI and the SDK share); the signal is what this adds.
 */
import pLimit from 'p-limit';

export function taskLimit(max: number, signal?: AbortSignal) {
  const limit = pLimit(max);
  return <T>(task: () => Promise<T>): Promise<T> =>
    limit(() => {
      // Given up when its turn comes, so the next waiter still gets its turn (and gives up in turn).
      signal?.throwIfAborted();
      return task();
    });
}

/**
 * Runs `fn` over items, at most `max` at once, in order of start; after a
 * failure no new item starts, and the first failure is thrown once the
 * ones running have settled (so nothing is left writing behind the caller).
 */
export async function eachLimit<T>(items: readonly T[], max: number, fn: (item: T) => Promise<void>): Promise<void> {
  const limit = pLimit(max);
  let failure: unknown;
  let failed = false;
  await Promise.all(
    items.map((item) =>
      limit(async () => {
        if (failed) return;
        try {
          await fn(item);
        } catch (err) {
          if (!failed) [failed, failure] = [true, err];
        }
      }),
    ),
  );
  if (failed) throw failure;
}
