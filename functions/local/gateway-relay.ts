/**
 * An HttpHandler across threads: a gateway thread (gateway-thread.ts) hands
 * each request its copy of the site cache cannot answer to the main thread,
 * which runs the gateway's handler on it and hands the Response back. The
 * thread's door is the same node:http door as the main thread's
 * (core/http/node.ts: Expect, early answers and their lingering, aborts on
 * a client that hangs up), with this relay as its handler; so a miss is
 * answered exactly as the main thread answers it, and the handler sees the
 * client's own address and scheme (the door's, never a header's).
 *
 * Bodies both ways move a chunk per pull (the reader asks, the other side
 * reads one chunk and sends it): the backpressure of the stream being read
 * reaches the stream being written, so neither side holds more than a
 * chunk for the other. Each chunk is copied once into a buffer of its own
 * size and that buffer transferred (cloning a view would copy the whole
 * buffer beneath it, a socket's or a block's).
 */
import type { Logger } from '../core/logger.js';
import type { HttpHandler, HttpRequest } from '../core/http/types.js';

/** A chunk or the end of a body, or the reason it failed. */
type Chunk = { chunk?: Uint8Array; done?: true; error?: string };

/** From a gateway thread to the main thread. */
export type ToMain =
  | {
      t: 'req';
      id: number;
      method: string;
      rawPath: string;
      rawQuery: string;
      /** Names and values in turn. */
      headers: string[];
      remoteAddress?: string;
      secure?: boolean;
      body: boolean;
    }
  | ({ t: 'reqChunk'; id: number } & Chunk)
  | { t: 'abort'; id: number }
  | { t: 'pullRes'; id: number }
  | { t: 'cancelRes'; id: number };

/** From the main thread to a gateway thread. */
export type ToThread =
  | { t: 'res'; id: number; status: number; statusText: string; headers: string[]; body: boolean }
  | { t: 'fail'; id: number; message: string }
  | ({ t: 'resChunk'; id: number } & Chunk)
  | { t: 'pullReq'; id: number }
  | { t: 'cancelReq'; id: number };

export type Post<M> = (message: M, transfer?: ArrayBuffer[]) => void;

/** A chunk of its own, ready to transfer. */
function own(chunk: Uint8Array): Uint8Array {
  return new Uint8Array(chunk);
}

/** The next chunk of `reader` as a message, sent by `post`; true when the body is over (read to its end or failed). */
async function sendChunk(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  post: (chunk: Chunk, transfer?: ArrayBuffer[]) => void,
): Promise<boolean> {
  try {
    const { done, value } = await reader.read();
    if (done) {
      post({ done: true });
      return true;
    }
    const chunk = own(value);
    post({ chunk }, [chunk.buffer as ArrayBuffer]);
    return false;
  } catch (err) {
    post({ error: (err as Error)?.message ?? String(err) });
    return true;
  }
}

/** A body read from the other side, a chunk per pull: `ask` sends the pull; `settle` is given each answer. */
function pulledBody(ask: () => void, cancel: () => void): { stream: ReadableStream<Uint8Array>; settle(c: Chunk): void } {
  let waiting: { controller: ReadableStreamDefaultController<Uint8Array>; resolve: () => void } | undefined;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        return new Promise<void>((resolve) => {
          waiting = { controller, resolve };
          ask();
        });
      },
      cancel() {
        waiting = undefined;
        cancel();
      },
    },
    { highWaterMark: 0 },
  );
  return {
    stream,
    settle(c) {
      const w = waiting;
      if (!w) return;
      waiting = undefined;
      if (c.chunk) w.controller.enqueue(c.chunk);
      else if (c.done) w.controller.close();
      else w.controller.error(new Error(c.error ?? 'the body failed'));
      w.resolve();
    },
  };
}

function flatHeaders(headers: Headers): string[] {
  const out: string[] = [];
  headers.forEach((value, name) => {
    if (name !== 'set-cookie') out.push(name, value);
  });
  for (const cookie of headers.getSetCookie()) out.push('set-cookie', cookie);
  return out;
}

function headersOf(flat: string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < flat.length; i += 2) {
    try {
      headers.append(flat[i]!, flat[i + 1]!);
    } catch {
      // refused by Headers as the door refuses it (core/http/node.ts)
    }
  }
  return headers;
}

interface Waiting {
  resolve(response: Response): void;
  reject(err: Error): void;
  body: ReadableStreamDefaultReader<Uint8Array> | null;
  response?: ReturnType<typeof pulledBody>;
}

/** The gateway thread's side: an HttpHandler whose requests the main thread answers. `receive` takes the main thread's messages. */
export class RelayClient {
  private next = 1;
  private readonly waiting = new Map<number, Waiting>();

  constructor(private readonly post: Post<ToMain>) {}

  /** Requests not yet answered whole. */
  get inFlight(): number {
    return this.waiting.size;
  }

  readonly handler: HttpHandler = (req: HttpRequest) =>
    new Promise<Response>((resolve, reject) => {
      const id = this.next++;
      this.waiting.set(id, { resolve, reject, body: req.body?.getReader() ?? null });
      req.signal.addEventListener('abort', () => this.post({ t: 'abort', id }), { once: true });
      this.post({
        t: 'req',
        id,
        method: req.method,
        rawPath: req.rawPath,
        rawQuery: req.rawQuery,
        headers: flatHeaders(req.headers),
        remoteAddress: req.remoteAddress,
        secure: req.secure,
        body: req.body !== null,
      });
    });

  receive(m: ToThread): void {
    const w = this.waiting.get(m.id);
    if (!w) return; // over already (cancelled, say)
    switch (m.t) {
      case 'res': {
        const headers = headersOf(m.headers);
        if (!m.body) {
          this.waiting.delete(m.id);
          w.resolve(new Response(null, { status: m.status, statusText: m.statusText, headers }));
          return;
        }
        w.response = pulledBody(
          () => this.post({ t: 'pullRes', id: m.id }),
          () => {
            this.waiting.delete(m.id);
            this.post({ t: 'cancelRes', id: m.id });
          },
        );
        w.resolve(new Response(w.response.stream, { status: m.status, statusText: m.statusText, headers }));
        return;
      }
      case 'fail':
        this.waiting.delete(m.id);
        w.reject(new Error(`the gateway failed: ${m.message}`));
        return;
      case 'resChunk':
        if (m.done || m.error) this.waiting.delete(m.id);
        w.response?.settle(m);
        return;
      case 'pullReq':
        if (w.body) {
          const body = w.body;
          void sendChunk(body, (c, transfer) => this.post({ t: 'reqChunk', id: m.id, ...c }, transfer));
        } else this.post({ t: 'reqChunk', id: m.id, done: true });
        return;
      case 'cancelReq':
        void w.body?.cancel().catch(() => {});
        w.body = null;
        return;
    }
  }

  /** The main thread is gone: every request waiting on it fails (the door answers 500, or cuts a body short). */
  close(why: string): void {
    for (const [, w] of this.waiting) {
      w.reject(new Error(why));
      w.response?.settle({ error: why });
    }
    this.waiting.clear();
  }
}

interface Exchange {
  controller: AbortController;
  request?: ReturnType<typeof pulledBody>;
  response?: ReadableStreamDefaultReader<Uint8Array>;
  over?: boolean;
}

/** The main thread's side for one gateway thread: answers its requests with `handler`. `receive` takes the thread's messages. */
export class RelayServer {
  private readonly exchanges = new Map<number, Exchange>();

  constructor(
    private readonly handler: HttpHandler,
    private readonly post: Post<ToThread>,
    private readonly logger: Logger,
  ) {}

  receive(m: ToMain): void {
    if (m.t === 'req') return this.start(m);
    const x = this.exchanges.get(m.id);
    if (!x) return;
    switch (m.t) {
      case 'reqChunk':
        x.request?.settle(m);
        return;
      case 'abort':
        x.controller.abort(new Error('client disconnected'));
        return;
      case 'pullRes':
        if (x.response) {
          const reader = x.response;
          void sendChunk(reader, (c, transfer) => {
            if (c.done || c.error) this.end(m.id);
            this.post({ t: 'resChunk', id: m.id, ...c }, transfer);
          });
        }
        return;
      case 'cancelRes':
        void x.response?.cancel().catch(() => {});
        this.end(m.id);
        return;
    }
  }

  private start(m: Extract<ToMain, { t: 'req' }>): void {
    const { id } = m;
    const x: Exchange = { controller: new AbortController() };
    this.exchanges.set(id, x);
    if (m.body)
      x.request = pulledBody(
        () => this.post({ t: 'pullReq', id }),
        () => this.post({ t: 'cancelReq', id }),
      );
    const request: HttpRequest = {
      method: m.method,
      rawPath: m.rawPath,
      rawQuery: m.rawQuery,
      headers: headersOf(m.headers),
      body: x.request?.stream ?? null,
      signal: x.controller.signal,
      remoteAddress: m.remoteAddress,
      secure: m.secure,
    };
    this.handler(request).then(
      (response) => {
        if (x.over) return void response.body?.cancel().catch(() => {});
        const headers = flatHeaders(response.headers);
        this.post({ t: 'res', id, status: response.status, statusText: response.statusText, headers, body: response.body !== null });
        if (response.body) x.response = response.body.getReader();
        else this.end(id);
      },
      (err: unknown) => {
        this.logger.error('unhandled error in handler', { err, method: m.method, path: m.rawPath });
        this.end(id);
        this.post({ t: 'fail', id, message: 'Internal Server Error' });
      },
    );
  }

  private end(id: number): void {
    const x = this.exchanges.get(id);
    if (!x) return;
    x.over = true;
    this.exchanges.delete(id);
    // A request body nobody read to its end: the thread stops sending it.
    x.request?.settle({ error: 'answered' });
  }

  /** The thread is gone: each of its requests is aborted and its answer's body cancelled. */
  close(): void {
    for (const [id, x] of this.exchanges) {
      x.controller.abort(new Error('the gateway thread ended'));
      void x.response?.cancel().catch(() => {});
      this.end(id);
    }
  }
}
