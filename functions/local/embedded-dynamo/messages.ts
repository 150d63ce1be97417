/**
 * The embedded database's messages between the service's thread
 * (database.ts) and the engine's job on the helper thread (engine-job.ts).
 * The calls made during one turn of the event loop travel as one message,
 * and so do the answers the engine has ready in one of its turns: each
 * message wakes the other thread, which costs more than the copying.
 */
export type EngineCall = { id: number; op: string; body: string };
export type EngineAnswer = { id: number; status: number; body: string };
export type ToEngine = { calls: EngineCall[] } | { close: true };
export type FromEngine = { ready: string } | { failed: string } | { answers: EngineAnswer[] } | { closed: true };

/** Collects items and hands them to `send` together, once per turn of the event loop. */
export function perTurn<T>(send: (items: T[]) => void): (item: T) => void {
  let queued: T[] = [];
  return (item) => {
    if (queued.push(item) === 1) {
      setImmediate(() => {
        const items = queued;
        queued = [];
        send(items);
      });
    }
  };
}
