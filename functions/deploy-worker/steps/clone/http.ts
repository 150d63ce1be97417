/**
 * isomorphic-git's HTTP client for one transfer (isomorphic.ts; command-line.ts
 * too, for its one ref listing). isomorphic-git takes no AbortSignal for
 * clone or fetch, but its HTTP client does: every request carries the
 * deploy's signal, and every response body is read under it, counted
 * against the cap. Every request connects to the checked addresses of
 * `target` only, and follows no redirect (where it leads was never checked).
 */
import nodeHttp from 'isomorphic-git/http/node';
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';
import { pinnedLookup, type OutboundTarget } from '../../../core/net/outbound.js';

export interface GuardedHttp {
  http: HttpClient;
  /** Body bytes read so far. */
  received(): number;
  /** Whether a body passed `maxBytes` (the read then failed). */
  tooLarge(): boolean;
}

/** `remaining()`: how many more bytes the transfer may read (what other fetches of it brought counted). */
export function guardedHttp(signal: AbortSignal, remaining: () => number, target: OutboundTarget): GuardedHttp {
  let received = 0;
  let overCap = false;
  async function* guarded(body: AsyncIterableIterator<Uint8Array>): AsyncIterableIterator<Uint8Array> {
    const chunks = body[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await untilAborted(chunks.next(), signal);
        if (next.done) return;
        received += next.value.byteLength;
        if (remaining() < 0) {
          overCap = true;
          throw new Error('the transfer exceeds its byte cap');
        }
        yield next.value;
      }
    } finally {
      void chunks.return?.();
    }
  }
  const http: HttpClient = {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      signal.throwIfAborted();
      // No shared agent: a kept-alive socket was connected where another clone's check said, not this one's.
      const res = await nodeHttp.request({
        ...req,
        signal,
        agent: false,
        fetchOptions: { followRedirects: false, lookup: pinnedLookup(target) },
      });
      return res.body ? { ...res, body: guarded(res.body) } : res;
    },
  };
  return { http, received: () => received, tooLarge: () => overCap };
}

/** `promise`, or the signal's reason as soon as it aborts. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
