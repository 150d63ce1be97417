/**
 * The local service's helper thread (helper-thread.ts), from the service's
 * side: one thread beside the request handling, for the work that would
 * otherwise take turns from it, where each job gets a message port of its
 * own so that neither job's messages need telling apart from the other's.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';

/**
 * The thread's young-generation size. Its work is small JSON documents and
 * a few leaves at a time: a small young generation keeps the thread's
 * memory down (the 1 GiB streaming test's RSS budget counts it).
 */
const YOUNG_GENERATION_MB = 8;

/** What the thread can run (helper-thread.ts). */
export type HelperJob = 'embedded-dynamo' | 'hashing';
/** The one message the thread's own port carries: start a job, and talk to it on `port`. */
export type StartJob = { start: HelperJob; port: MessagePort; data?: unknown };

/** One job's messages, both ways (a HashChannel for the hash jobs). */
export interface JobChannel<To, From> {
  post(m: To, transfer?: ArrayBuffer[]): void;
  onMessage(fn: (m: From) => void): void;
  /** Called once if the thread dies or is closed. */
  onDown(fn: (err: Error) => void): void;
  /** Ends this job's channel; the thread goes on with the others. */
  close(): void;
}

export interface HelperThread {
  /** Starts `job` on the thread with `data` (what the job opens, say). */
  start<To, From>(job: HelperJob, data?: unknown): JobChannel<To, From>;
  close(): Promise<void>;
}

export function startHelperThread(): HelperThread {
  const worker = new Worker(new URL('./helper-thread.mjs', import.meta.url), {
    resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
  });
  let down: Error | undefined;
  const downListeners: Array<(err: Error) => void> = [];
  const ports = new Set<MessagePort>();
  const fail = (why: string) => {
    if (down) return;
    down = new Error(why);
    // An open port with a listener would keep the process alive.
    for (const port of ports) port.close();
    for (const fn of downListeners.splice(0)) fn(down);
  };
  worker.on('error', (err) => fail(`the helper thread failed: ${err.stack ?? err.message}`));
  worker.on('exit', (code) => fail(`the helper thread exited (${code})`));
  return {
    start<To, From>(job: HelperJob, data?: unknown): JobChannel<To, From> {
      const { port1, port2 } = new MessageChannel();
      worker.postMessage({ start: job, port: port2, data } satisfies StartJob, [port2]);
      ports.add(port1);
      return {
        post: (m, transfer = []) => port1.postMessage(m, transfer),
        onMessage: (fn) => port1.on('message', fn),
        onDown(fn) {
          if (down) fn(down);
          else downListeners.push(fn);
        },
        close() {
          ports.delete(port1);
          port1.close();
        },
      };
    },
    async close() {
      await worker.terminate();
    },
  };
}
