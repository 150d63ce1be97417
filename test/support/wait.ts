/**
 * Waiting for a condition instead of for a fixed time: a fixed sleep is
 * either too short on a loaded machine (a flaky test) or too long on an
 * idle one (a slow suite). A poll with a deadline goes on as soon as the
 * condition holds and fails, saying what it waited for, when it never does.
 */

export interface WaitOptions {
  /** How long to poll before failing (default 10 s). */
  timeoutMs?: number;
  /** Pause between polls (default 20 ms). */
  intervalMs?: number;
  /** What is awaited, for the failure message (or a function that says what was last seen). */
  what?: string | (() => string);
}

/**
 * Polls `condition` until it returns a truthy value, and returns that value.
 * An error the condition throws ends the wait at once (a child that exited
 * will not start answering).
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 10_000, intervalMs = 20, what = 'the condition' } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() >= deadline) throw new Error(`gave up after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
