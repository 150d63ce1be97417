/**
 * A gateway thread (gateway-threads.ts has the why): an HTTP server on the
 * gateway's port (SO_REUSEPORT: the kernel spreads connections over the
 * threads' sockets) that answers site cache hits from its copy of the site
 * cache, as the main thread does (site-hits.ts), and relays every other
 * request to the main thread (gateway-relay.ts). Its copy is only what the
 * main thread's cache sends it, applied in order; it reads no database and
 * no blocks. It loads only the door, the hit path and their helpers.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import { createNodeServer } from '../core/http/node.js';
import { createLogger, type Logger } from '../core/logger.js';
import type { LogLevel } from '../core/config.js';
import { RelayClient, type ToThread } from './gateway-relay.js';
import { sharedNow, type CacheChange, type HitHost, type PreparedHit } from './site-cache.js';
import { siteHitAnswerer, type HitSource } from './site-hits.js';

/** What the thread is started with. */
export interface ThreadData {
  index: number;
  host: string;
  port: number;
  sites: { domain: string };
  urls: Parameters<typeof siteHitAnswerer>[1]['urls'];
  logLevel: LogLevel;
}

/** The main thread's other messages: the cache's changes, a barrier, a count, and (tests) a crash or a busy spell. */
export type Control = CacheChange | { t: 'sync'; seq: number } | { t: 'stats'; seq: number } | { t: 'throw' } | { t: 'block'; ms: number };

/** The thread's messages besides the relay's. */
export type FromThread =
  | { t: 'listening' }
  | { t: 'synced'; seq: number }
  | { t: 'stats'; seq: number; hits: number; relayed: number; kept: number }
  | { t: 'touch'; keys: string[] };

/** How many hits' keys are reported in one touch at most (the LRU's recency is a hint, not a ledger). */
const TOUCH_MAX = 10_000;
const TOUCH_EVERY_MS = 1000;

/** The thread's copy of the site cache's hits: what the main thread sent, nothing else. */
class CacheCopy implements HitSource {
  // Bounded as the main cache's host map is; an entry expires when the main thread's does (the same clock).
  private readonly hosts = new LRUCache<string, HitHost>({ max: 10_000, ttl: 1000 });
  private readonly hits = new Map<string, PreparedHit>();
  get kept(): number {
    return this.hits.size;
  }
  touched = new Set<string>();

  getHost(slug: string): HitHost | undefined {
    return this.hosts.get(slug);
  }

  preparedHit(key: string): PreparedHit | undefined {
    const hit = this.hits.get(key);
    if (hit && this.touched.size < TOUCH_MAX) this.touched.add(key);
    return hit;
  }

  apply(change: CacheChange): void {
    switch (change.t) {
      case 'host': {
        const ttl = change.expiresAt - sharedNow();
        if (ttl >= 1) this.hosts.set(change.slug, change.host, { ttl });
        else this.hosts.delete(change.slug);
        return;
      }
      case 'unhost':
        this.hosts.delete(change.slug);
        return;
      case 'hit': {
        // A Buffer arrives as a plain view: a Buffer again, over the same shared bytes.
        const body = change.hit.body;
        this.hits.set(change.key, { ...change.hit, body: Buffer.from(body.buffer, body.byteOffset, body.byteLength) });
        return;
      }
      case 'drop':
        this.hits.delete(change.key);
        return;
    }
  }
}

function run(port: NonNullable<typeof parentPort>, data: ThreadData): void {
  const logger: Logger = createLogger(data.logLevel, { fn: 'gateway', thread: data.index });
  const copy = new CacheCopy();
  const relay = new RelayClient((m, transfer) => port.postMessage(m, transfer));
  const hits = siteHitAnswerer(copy, data);
  let answered = 0;
  const counted = (req: Parameters<typeof hits>[0], res: Parameters<typeof hits>[1]) => {
    if (!hits(req, res)) return false;
    answered++;
    return true;
  };
  let relayed = 0;
  const server = createNodeServer(
    (req) => {
      relayed++;
      return relay.handler(req);
    },
    logger,
    undefined,
    counted,
  );
  server.keepAliveTimeout = 65_000;
  port.on('message', (m: ToThread | Control) => {
    switch (m.t) {
      case 'sync':
        port.postMessage({ t: 'synced', seq: m.seq } satisfies FromThread);
        return;
      case 'stats':
        port.postMessage({ t: 'stats', seq: m.seq, hits: answered, relayed, kept: copy.kept } satisfies FromThread);
        return;
      case 'throw':
        throw new Error('the gateway thread was asked to fail');
      case 'block': {
        const until = performance.now() + m.ms;
        while (performance.now() < until); // busy: neither requests nor messages are seen meanwhile
        return;
      }
      case 'host':
      case 'unhost':
      case 'hit':
      case 'drop':
        copy.apply(m);
        return;
      default:
        relay.receive(m);
    }
  });
  setInterval(() => {
    if (!copy.touched.size) return;
    port.postMessage({ t: 'touch', keys: [...copy.touched] } satisfies FromThread);
    copy.touched = new Set();
  }, TOUCH_EVERY_MS).unref();
  // reusePort: Node 22.12 and 23.1 on (https://nodejs.org/api/net.html#serverlistenoptions-callback); gateway-threads.ts checks.
  server.listen({ port: data.port, host: data.host, reusePort: true }, () => port.postMessage({ t: 'listening' } satisfies FromThread));
}

if (parentPort) run(parentPort, workerData as ThreadData);
