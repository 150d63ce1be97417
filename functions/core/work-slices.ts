/**
 * Long work on someone's input, cut into slices: a loop that may run long
 * (parsing a 10,000-line `_redirects`, verifying the blocks of a CAR that
 * arrived in one piece, building a long listing) calls `pause()` as it goes,
 * and every SLICE_MS of work the event loop gets a turn (setImmediate: the
 * I/O and timers waiting run first). No request may hold the loop for
 * 50 ms; a slice of 10 ms leaves room for the rest of a turn.
 */

/** Work between two turns of the event loop, at most. */
export const SLICE_MS = 10;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A pause for one loop: resolves at once (undefined: nothing to wait for)
 * until SLICE_MS have passed since the last turn, then after a turn.
 */
export function workSlices(sliceMs = SLICE_MS): () => Promise<void> | undefined {
  let start = performance.now();
  return () => {
    if (performance.now() - start < sliceMs) return undefined;
    return turn().then(() => {
      start = performance.now();
    });
  };
}
