/**
 * The local gateway on more than one core (CAIRN_GATEWAY_THREADS, issue 35).
 *
 * The design, and why it is this one:
 *
 * - **Threads, each with its own socket on the gateway's port.** The main
 *   thread listens with SO_REUSEPORT and so does each gateway thread
 *   (gateway-thread.ts); Linux spreads new connections over the sockets
 *   (https://nodejs.org/api/net.html#serverlistenoptions-callback, `reusePort`,
 *   Node 22.12 and 23.1 on). Worker threads cannot be handed a socket
 *   another thread accepted, and a cluster's processes would each need the
 *   database and the blockstore or a second copy of the service's modules
 *   (Helia alone is tens of MiB); a thread that loads only the door and the
 *   hit path costs a few MiB. The main thread keeps its socket, so the port
 *   is served while a thread is down.
 * - **Hits from a copy, everything else on the main thread.** A thread
 *   answers a plain GET/HEAD whose host and whole 200 are in its copy of
 *   the site cache, exactly as the main thread does (site-hits.ts); any
 *   other request is relayed to the main thread over the thread's message
 *   port and answered by the gateway's handler there (gateway-relay.ts), so
 *   the main thread stays the only one that reads the database and the
 *   blockstore, and a miss goes the general way unchanged.
 * - **Copies filled and emptied by the one cache.** The main thread's site
 *   cache sends every change a hit depends on to each thread, in order
 *   (site-cache.ts): a host kept (with its expiry) or dropped, a whole 200
 *   kept or dropped. A purge (purgeCache, a publish, a domain change: all
 *   call purgeSite) resolves only once every thread has answered a barrier
 *   sent after its drops: when the purge's caller hears back, no thread
 *   can answer the purged page. A thread that does not answer the barrier
 *   in BARRIER_MS is ended (and restarted), so a purge never waits on it
 *   for longer and never returns while it could still answer.
 * - **Nothing in a thread takes the process down.** A thread that fails is
 *   logged and started again (after a pause that doubles while it keeps
 *   failing); its requests in the main thread are aborted, and its
 *   clients' connections close with it. Each thread's heap is capped.
 *
 * One thread (the default where the machine has one core, or where Node
 * cannot share the port) is the main thread alone, as before.
 */
import { Worker } from 'node:worker_threads';
import type { HttpHandler } from '../core/http/types.js';
import type { Logger } from '../core/logger.js';
import { pauseBefore } from '../core/retry.js';
import { RelayServer, type ToMain, type ToThread } from './gateway-relay.js';
import type { Control, FromThread, ThreadData } from './gateway-thread.js';
import type { CacheReplica, LocalSiteCache } from './site-cache.js';

/** How long a purge waits for a thread to confirm; a thread that takes longer is ended. */
const BARRIER_MS = 5_000;
/** Pauses before a failed thread is started again. */
const RESTART_PAUSES = { baseMs: 100, maxMs: 30_000 } as const;
/** A thread that served this long since it started is healthy again: its next failure restarts it at once. */
const HEALTHY_MS = 60_000;
/** The thread's heap: its copy's bodies are in shared memory outside it. */
const THREAD_HEAP_MB = 64;

/** Whether this Node can share a port between threads: Linux, and Node 22.12 or 23.1 and later. */
export function canSharePort(version = process.versions.node, platform = process.platform): boolean {
  if (platform !== 'linux') return false;
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}

export interface GatewayThreadsOptions {
  /** Threads besides the main thread. */
  count: number;
  host: string;
  port: number;
  data: Omit<ThreadData, 'index' | 'host' | 'port'>;
  cache: LocalSiteCache;
  handler: HttpHandler;
  logger: Logger;
}

export interface ThreadStats {
  index: number;
  hits: number;
  relayed: number;
  /** Whole 200s in its copy. */
  kept: number;
}

class GatewayThread {
  private worker?: Worker;
  private relay?: RelayServer;
  private removeReplica?: () => void;
  private readonly barriers = new Map<number, () => void>();
  private readonly asked = new Map<number, (s: ThreadStats) => void>();
  private seq = 0;
  private failures = 0;
  private startedAt = 0;
  private restart?: NodeJS.Timeout;
  private stopping = false;
  /** Resolves when the thread listens (or has failed to). */
  ready: Promise<void> = Promise.resolve();

  constructor(
    readonly index: number,
    private readonly o: GatewayThreadsOptions,
  ) {}

  start(): void {
    const { o, index } = this;
    const logger = o.logger.child({ thread: index });
    const data: ThreadData = { ...o.data, index, host: o.host, port: o.port };
    const worker = new Worker(new URL('./gateway-thread.mjs', import.meta.url), {
      workerData: data,
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB, maxYoungGenerationSizeMb: 8 },
    });
    this.worker = worker;
    this.startedAt = Date.now();
    const relay = new RelayServer(o.handler, (m: ToThread, transfer) => worker.postMessage(m, transfer), logger);
    this.relay = relay;
    let listening!: () => void;
    this.ready = new Promise((resolve) => (listening = resolve));
    // Registered before any message can reach the thread: the copy starts with what the cache holds, then every change.
    const replica: CacheReplica = {
      send: (change) => worker.postMessage(change satisfies Control),
      sync: () => this.barrier(worker),
    };
    this.removeReplica = o.cache.addReplica(replica);
    worker.on('message', (m: ToMain | FromThread) => {
      switch (m.t) {
        case 'listening':
          logger.debug('gateway thread listening');
          listening();
          return;
        case 'synced':
          this.barriers.get(m.seq)?.();
          return;
        case 'stats':
          this.asked.get(m.seq)?.({ index, hits: m.hits, relayed: m.relayed, kept: m.kept });
          return;
        case 'touch':
          o.cache.touch(m.keys);
          return;
        default:
          relay.receive(m);
      }
    });
    // The error is the thread's, rebuilt here: its stack as text, whatever realm rebuilt it.
    worker.on('error', (err) => logger.error('a gateway thread failed; it is started again', { err: String(err?.stack ?? err) }));
    worker.on('exit', (code) => {
      listening();
      this.down();
      if (this.stopping) return;
      if (Date.now() - this.startedAt > HEALTHY_MS) this.failures = 0;
      const pause = this.failures ? pauseBefore(this.failures, RESTART_PAUSES) : 0;
      this.failures++;
      logger.warn('a gateway thread ended; it is started again', { code, inMs: Math.round(pause) });
      this.restart = setTimeout(() => this.start(), pause);
      this.restart.unref();
    });
  }

  /** The thread is gone: it is no replica any more, its barriers pass (it answers nothing), its requests end. */
  private down(): void {
    this.removeReplica?.();
    this.removeReplica = undefined;
    for (const pass of this.barriers.values()) pass();
    this.barriers.clear();
    this.relay?.close();
    this.relay = undefined;
    this.worker = undefined;
  }

  /** Resolves when the thread has applied every change sent before it, or is gone. */
  private barrier(worker: Worker): Promise<void> {
    if (this.worker !== worker) return Promise.resolve();
    const seq = ++this.seq;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.o.logger.error('a gateway thread did not confirm a purge in time; it is ended', { thread: this.index, ms: BARRIER_MS });
        // The barrier passes once it has exited (down()), never while it may still answer.
        void worker.terminate();
      }, BARRIER_MS);
      this.barriers.set(seq, () => {
        clearTimeout(timer);
        this.barriers.delete(seq);
        resolve();
      });
      worker.postMessage({ t: 'sync', seq } satisfies Control);
    });
  }

  stats(): Promise<ThreadStats | undefined> {
    const worker = this.worker;
    if (!worker) return Promise.resolve(undefined);
    const seq = ++this.seq;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.asked.delete(seq);
        resolve(undefined);
      }, BARRIER_MS);
      this.asked.set(seq, (s) => {
        clearTimeout(timer);
        this.asked.delete(seq);
        resolve(s);
      });
      worker.postMessage({ t: 'stats', seq } satisfies Control);
    });
  }

  /** Makes the thread throw an uncaught error, or keep busy for `ms` (for the tests of failures and purges). */
  test(m: Extract<Control, { t: 'throw' | 'block' }>): void {
    this.worker?.postMessage(m satisfies Control);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restart);
    const worker = this.worker;
    if (worker) await worker.terminate();
    this.down();
  }
}

export interface GatewayThreads {
  /** The threads besides the main thread, as started (one may be restarting). */
  readonly count: number;
  /** Each running thread's counts (hits it answered, requests it relayed). */
  stats(): Promise<ThreadStats[]>;
  /** Makes thread `index` fail (tests). */
  fail(index: number): void;
  /** Keeps thread `index` busy for `ms`, deaf to requests and messages (tests). */
  block(index: number, ms: number): void;
  /** Resolves once every thread listens (a restarted one included). */
  ready(): Promise<void>;
  stop(): Promise<void>;
}

export function startGatewayThreads(o: GatewayThreadsOptions): GatewayThreads {
  const threads = Array.from({ length: o.count }, (_, i) => new GatewayThread(i + 1, o));
  for (const t of threads) t.start();
  return {
    count: threads.length,
    async stats() {
      return (await Promise.all(threads.map((t) => t.stats()))).filter((s): s is ThreadStats => s !== undefined);
    },
    fail: (index) => threads[index - 1]?.test({ t: 'throw' }),
    block: (index, ms) => threads[index - 1]?.test({ t: 'block', ms }),
    ready: async () => void (await Promise.all(threads.map((t) => t.ready))),
    stop: async () => void (await Promise.all(threads.map((t) => t.stop()))),
  };
}
