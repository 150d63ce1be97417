/**
 * The local door: mounts an HttpHandler on a node:http server, streaming
 * bodies both ways with backpressure.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions as HttpsOptions } from 'node:https';
import { lentChunks } from '../buffer-pool.js';
import type { Logger } from '../logger.js';
import type { HttpHandler, HttpRequest } from './types.js';

/**
 * `continueBody`: the client sent `Expect: 100-continue` and waits for
 * `100 Continue` before it sends the body (RFC 9110 §10.1.1); called the
 * first time the handler reads the body, so a request refused before that
 * (no such bucket, a bad signature, AccessDenied) is answered without the
 * client ever uploading it.
 */
export function toHttpRequest(req: IncomingMessage, signal: AbortSignal, continueBody?: () => void): HttpRequest {
  const target = req.url ?? '/';
  const q = target.indexOf('?');
  // Node reads each header byte as one character (Latin-1): the values are
  // the bytes the client sent, as the core takes them (header-bytes.ts).
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    try {
      headers.append(raw[i]!, raw[i + 1]!);
    } catch {
      // A header value Headers refuses (e.g. control characters) is dropped;
      // signature checks then fail cleanly rather than crashing.
    }
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  return {
    method: req.method ?? 'GET',
    rawPath: q < 0 ? target : target.slice(0, q),
    rawQuery: q < 0 ? '' : target.slice(q + 1),
    headers,
    body: hasBody ? (continueBody ? continueOnRead(requestBodyStream(req), continueBody) : requestBodyStream(req)) : null,
    signal,
    remoteAddress: req.socket.remoteAddress,
    secure: 'encrypted' in req.socket && req.socket.encrypted === true,
  };
}

/** How much of a request body may wait in the stream before the socket is paused. */
const BODY_HIGH_WATER_MARK = 256 * 1024;

/** Each request body stream's way to stop passing chunks on and discard the rest (for lingering: see `linger`). */
const discarders = new WeakMap<IncomingMessage, () => void>();

/**
 * The request body as a web stream, with backpressure (chunks are passed on
 * without copying). Unlike
 * `Readable.toWeb`, a client that hangs up mid-body errors the stream once
 * (no "controller already closed" crash), and cancelling does not destroy
 * the socket: the rest of the body is discarded so the error response can
 * still be written (the connection closes after it; see writeResponse).
 */
function requestBodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let settled = false;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const fail = (err: Error) => {
          if (settled) return;
          settled = true;
          controller.error(err);
        };
        req.on('data', (chunk: Buffer) => {
          if (settled) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 1) <= 0) req.pause();
        });
        req.on('end', () => {
          if (settled) return;
          settled = true;
          controller.close();
        });
        req.on('error', fail);
        req.on('close', () => {
          if (!req.complete) fail(new Error('client disconnected before the body was complete'));
        });
        discarders.set(req, () => {
          settled = true;
          req.resume();
        });
        req.pause();
      },
      pull() {
        req.resume();
      },
      cancel() {
        settled = true;
        req.resume(); // discard whatever is still coming
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: BODY_HIGH_WATER_MARK }),
  );
}

/**
 * The body of an `Expect: 100-continue` request: a stream that pulls only
 * when its reader reads (a high-water mark of 0), and says "continue" on
 * the first read, before it asks the socket for bytes.
 */
function continueOnRead(body: ReadableStream<Uint8Array>, continueBody: () => void): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!reader) {
          continueBody();
          reader = body.getReader();
        }
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel(reason) {
        return reader ? reader.cancel(reason) : body.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * Lingering close, as nginx's `lingering_close`
 * (https://nginx.org/en/docs/http/ngx_http_core_module.html#lingering_close):
 * a request answered before its body arrived (413, 400, 403) is answered
 * with `Connection: close`, and the rest of the body is read and discarded
 * for a while before the socket closes. Closing at once would make the
 * kernel answer the client's next bytes with a reset, which can destroy
 * the answer before the client reads it (it sees EPIPE or ECONNRESET
 * instead of the 413). The wait is bounded: it ends when the body ends, the
 * client pauses for LINGER_IDLE_MS, or LINGER_MAX_MS have passed.
 */
const LINGER_IDLE_MS = 1_000;
const LINGER_MAX_MS = 5_000;
/** An early answer's body is sent whole with its length (so the client has it all before the linger) up to this size. */
const EARLY_BODY_MAX = 64 * 1024;

function linger(req: IncomingMessage): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  const discard = discarders.get(req);
  if (discard) discard();
  else req.resume();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(idle);
      clearTimeout(total);
      req.off('data', onData);
      req.off('end', done);
      req.off('close', done);
      resolve();
    };
    const onData = () => idle.refresh();
    const idle = setTimeout(done, LINGER_IDLE_MS);
    const total = setTimeout(done, LINGER_MAX_MS);
    req.on('data', onData);
    req.on('end', done);
    req.on('close', done);
  });
}

/** The body's first bytes, up to `max`: all of it (`rest` undefined) or the chunks read and a reader for the rest. */
async function readSmall(
  body: ReadableStream<Uint8Array>,
  max: number,
): Promise<{ chunks: Uint8Array[]; rest?: ReadableStreamDefaultReader<Uint8Array> }> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      reader.releaseLock();
      return { chunks };
    }
    chunks.push(value);
    size += value.byteLength;
    if (size > max) return { chunks, rest: reader };
  }
}

/**
 * Writes the handler's Response. `bodySent`: whether the client may be
 * sending a body (false for an `Expect: 100-continue` request not yet told
 * to continue); an answer given before such a body arrived lingers.
 */
export async function writeResponse(res: ServerResponse, response: Response, method: string, bodySent = true): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name === 'set-cookie') return;
    headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length) headers['set-cookie'] = cookies;
  // Answered before the whole request body arrived (an early error): the
  // rest is discarded, and the connection is not reused.
  const early = !res.req.complete && res.req.method !== 'GET' && res.req.method !== 'HEAD';
  if (early) headers.connection = 'close';
  // No body: say so with Content-Length: 0, as S3 does (Node would
  // otherwise frame an empty chunked body). HEAD keeps the length it
  // announced; 204 and 304 carry none.
  const bodiless = response.status === 204 || response.status === 304 || method === 'HEAD';
  if (!response.body && !bodiless && !('content-length' in headers)) headers['content-length'] = '0';
  if (early && bodySent && method !== 'HEAD') {
    const small = response.body ? await readSmall(response.body, EARLY_BODY_MAX) : { chunks: [] };
    if (!small.rest) {
      const bytes = Buffer.concat(small.chunks);
      if (response.body) headers['content-length'] = String(bytes.byteLength);
      res.writeHead(response.status, headers);
      if (bytes.byteLength) res.write(bytes);
      else res.flushHeaders();
      await linger(res.req);
      if (!res.destroyed) res.end();
      return;
    }
    res.writeHead(response.status, headers);
    await pumpBody(res, response.body!, small.rest, small.chunks);
    return;
  }
  res.writeHead(response.status, headers);
  if (!response.body || method === 'HEAD') {
    await response.body?.cancel();
    res.end();
    return;
  }
  // Lent chunks (see buffer-pool.ts) are given back once the socket has taken them.
  const lent = lentChunks(response.body);
  if (lent) {
    await pump(res, () => lent.chunks.next(), lent.give);
    if (res.destroyed) await lent.chunks.return?.(undefined).catch(() => {});
    return;
  }
  await pumpBody(res, response.body);
}

/** Writes `head` (chunks already read from `body`), then the rest through `reader`; a body the client left is cancelled. */
async function pumpBody(
  res: ServerResponse,
  body: ReadableStream<Uint8Array>,
  reader = body.getReader(),
  head: Uint8Array[] = [],
): Promise<void> {
  for (const chunk of head) res.write(chunk);
  try {
    await pump(res, () => reader.read());
  } finally {
    reader.releaseLock();
    if (res.destroyed) await body.cancel().catch(() => {});
  }
}

/**
 * Writes chunks from `next` with backpressure, then ends the response. With
 * `give`, each chunk is handed to it once written (the write's callback),
 * never before; a chunk whose write failed is not.
 */
async function pump(
  res: ServerResponse,
  next: () => Promise<{ done?: boolean; value?: Uint8Array }>,
  give?: (chunk: Uint8Array) => void,
): Promise<void> {
  try {
    for (;;) {
      const { done, value } = await next();
      // Gone meanwhile (the client hung up while the next chunk was read): stop here.
      if (done || !value || res.destroyed) break;
      const more = give ? res.write(value, (err) => err || give(value)) : res.write(value);
      if (!more) {
        await drained(res);
        if (res.destroyed) break;
      }
    }
    if (!res.destroyed) res.end();
  } catch (err) {
    // Headers are out; the only honest signal left is to cut the connection.
    res.destroy(err as Error);
  }
}

/** Until the response can take more (or is gone: at once if it is already). */
function drained(res: ServerResponse): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const go = () => {
      res.off('drain', go);
      res.off('close', go);
      resolve();
    };
    res.on('drain', go);
    res.on('close', go);
  });
}

/**
 * The handler on a node:http server, or on a node:https one given `tls` (the
 * gateway's HTTPS listener: certificates by SNI). `first`, when given, sees
 * each request before the handler and answers it itself when it can
 * (returning true): the local gateway's site cache hits
 * (functions/local/site-hits.ts).
 */
export function createNodeServer(
  handler: HttpHandler,
  logger: Logger,
  tls?: HttpsOptions,
  first?: (req: IncomingMessage, res: ServerResponse) => boolean,
): Server {
  const serve = (req: IncomingMessage, res: ServerResponse, expectsContinue = false) => {
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort(new Error('client disconnected'));
    });
    let continued = false;
    const continueBody = () => {
      if (res.headersSent || res.destroyed) return;
      res.writeContinue();
      continued = true;
    };
    const request = toHttpRequest(req, controller.signal, expectsContinue ? continueBody : undefined);
    handler(request)
      .then((response) => writeResponse(res, response, request.method, !expectsContinue || continued))
      .catch((err: unknown) => {
        logger.error('unhandled error in handler', { err, method: req.method, url: req.url });
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('Internal Server Error');
        } else {
          res.destroy();
        }
      });
  };
  // An HTTPS server is an HTTP server over TLS: the same events, timeouts and close methods.
  const listener = first
    ? (req: IncomingMessage, res: ServerResponse) => {
        try {
          if (first(req, res)) return;
        } catch (err) {
          logger.error('the fast path failed; answered the general way', { err, method: req.method, url: req.url });
          if (res.headersSent) return void res.destroy();
        }
        serve(req, res);
      }
    : (req: IncomingMessage, res: ServerResponse) => serve(req, res);
  const server = tls ? (createHttpsServer(tls, listener) as unknown as Server) : createServer(listener);
  // With a listener, Node no longer answers `Expect: 100-continue` with 100
  // at once (https://nodejs.org/api/http.html#event-checkcontinue): the
  // handler decides, and a refused request's body is never sent.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => serve(req, res, true));
  // Node answers 417 to an Expect other than 100-continue (an empty one
  // too) before the handler sees the request; S3 ignores such a header, and
  // clients that send one expect their request to go through.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => serve(req, res));
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0; // large uploads may legitimately take long
  return server;
}

/** `reusePort`: other sockets (the gateway's threads) may listen on the same port (Linux; core of local/gateway-threads.ts). */
export function listen(server: Server, port: number, host: string, reusePort = false): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, ...(reusePort ? { reusePort } : {}) }, () => {
      server.off('error', reject);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr ? addr.port : port);
    });
  });
}
