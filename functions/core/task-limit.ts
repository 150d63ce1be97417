/**
 * At most `max` tasks at a time, the rest waiting their turn in order; a
 * waiting task gives up (rejects with the signal's reason) when the signal
 * fires. For walks over many files (imports, checkouts, copies) that must
 * keep the disk and the CPU busy without opening every file at once.
 */
export function taskLimit(max: number, signal?: AbortSignal) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    while (running >= max) await new Promise<void>((go) => waiting.push(go));
    running++;
    try {
      // Given up inside the try, so the next waiter is still woken (and gives up in turn).
      signal?.throwIfAborted();
      return await task();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}
