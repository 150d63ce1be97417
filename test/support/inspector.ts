/**
 * A child process's V8, seen through its inspector (the child started with
 * `--inspect=127.0.0.1:<port>`): a full garbage collection on demand and the
 * heap's live size after it. What a memory test needs to tell a leak (live
 * objects that keep growing) from garbage V8 has not collected yet (which
 * resident memory alone cannot).
 */
import { waitFor } from './wait.js';

export interface Inspector {
  /** Collects garbage (twice, so objects freed by finalizers go too) and answers the heap's live bytes. */
  liveHeapBytes(): Promise<number>;
  /** The value of an expression evaluated in the child (its global scope; `process.getBuiltinModule` reaches Node's modules). */
  evaluate<T = unknown>(expression: string): Promise<T>;
  close(): void;
}

export async function connectInspector(port: number): Promise<Inspector> {
  let url: string | undefined;
  await waitFor(
    async () => {
      const list = (await fetch(`http://127.0.0.1:${port}/json/list`)
        .then((r) => r.json())
        .catch(() => [])) as { webSocketDebuggerUrl?: string }[];
      url = list[0]?.webSocketDebuggerUrl;
      return url !== undefined;
    },
    { timeoutMs: 10_000, intervalMs: 100, what: `the inspector on port ${port}` },
  );
  const ws = new WebSocket(url!);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve(), { once: true });
    ws.addEventListener('error', () => reject(new Error(`cannot open the inspector at ${url}`)), { once: true });
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  ws.addEventListener('message', (event) => {
    const reply = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
    const waiter = reply.id === undefined ? undefined : pending.get(reply.id);
    if (!waiter) return;
    pending.delete(reply.id!);
    if (reply.error) waiter.reject(new Error(reply.error.message));
    else waiter.resolve(reply.result);
  });
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  return {
    async liveHeapBytes() {
      await call('HeapProfiler.collectGarbage');
      await call('HeapProfiler.collectGarbage');
      const usage = (await call('Runtime.getHeapUsage')) as { usedSize: number };
      return usage.usedSize;
    },
    async evaluate<T>(expression: string) {
      const out = (await call('Runtime.evaluate', { expression, returnByValue: true })) as {
        result: { value: T };
        exceptionDetails?: { text: string };
      };
      if (out.exceptionDetails) throw new Error(`${expression}: ${out.exceptionDetails.text}`);
      return out.result.value;
    },
    close: () => ws.close(),
  };
}
