/**
 * A stand-in for Lambda's Node.js runtime and the Lambda service in front of
 * it, for everything Cairn's handlers depend on. Installed before every test
 * file (jest setupFiles), so handler modules find the `awslambda` global at
 * load time as they do in AWS. The doors that turn HTTP requests into events
 * (Function URL, HTTP API, REST API) are in lambda-door.ts.
 *
 * What it keeps of the real runtime (aws-lambda-nodejs-runtime-interface-client,
 * read at github.com/aws/aws-lambda-nodejs-runtime-interface-client, src/):
 * - `awslambda.streamifyResponse` marks the handler with
 *   Symbol.for('aws.lambda.runtime.handler.streaming') = 'response'
 *   (src/UserFunction.js, _loadUserApp); the runtime then calls it with
 *   (event, responseStream, context) and ignores what it returns
 *   (src/Runtime.js, handleOnceStreaming).
 * - The response stream is not a Writable but an object of bound methods
 *   over an HTTP request to the Runtime API (src/ResponseStream.js,
 *   writableStreamOnly); `setContentType` throws once a write was made.
 * - `awslambda.HttpResponseStream.from(stream, prelude)` writes nothing: it
 *   sets the content type and leaves the JSON prelude and its 8 NUL bytes
 *   to `_onBeforeFirstWrite`, which the stream's first `write` call runs
 *   (src/HttpResponseStream.js, src/ResponseStream.js). A handler that ends
 *   the stream without one write sends no status and no headers.
 * - A handler that returns before its stream has finished fails the
 *   invocation ("Response stream is not finished.", src/Runtime.js); one
 *   that throws fails it too (the error goes out as trailers).
 *
 * What it keeps of the Lambda service:
 * - An invocation's event is JSON of at most 6 MB (6,291,456 bytes): "Invocation
 *   payload (request and response): 6 MB each for request and response"
 *   (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html,
 *   where MB means 1,024 KB); beyond it Invoke answers 413
 *   RequestEntityTooLargeException, "Request must be smaller than 6291456
 *   bytes for the InvokeFunction operation"
 *   (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html). The
 *   handler gets the event as parsed JSON, never the door's object.
 * - A buffered result is at most 6 MB too; the Runtime API refuses a larger
 *   one ("Exceeded maximum allowed payload size (6291556 bytes)", what the
 *   runtime logs then).
 * - A streamed response: at most 200 MB; the first 6 MB uncapped, then at
 *   most 2 MB/s
 *   (https://docs.aws.amazon.com/lambda/latest/dg/configuration-response-streaming.html,
 *   "Bandwidth limits for response streaming"). The function's timeout
 *   bounds the whole invocation, streaming included
 *   (https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html);
 *   when it strikes, the stream is cut where it is and the client's
 *   transfer ends short (API Gateway's troubleshooting page: "curl: (18)
 *   transfer closed with outstanding read data remaining ... make sure the
 *   timeout of your integration is long enough",
 *   https://docs.aws.amazon.com/apigateway/latest/developerguide/response-streaming-troubleshoot.html).
 *
 * The bandwidth cap is kept on a clock of its own, so a test can check it
 * without waiting: each write moves the clock to at least the real time
 * elapsed, then on by the bytes past the first 6 MB at 2 MB/s. The clock
 * reaching the function's timeout cuts the stream at the byte where it did
 * (at a 60 s timeout, 6 MB + 120 MB); the real timeout (a timer) cuts a
 * stream that stalls. What happened is reported with the result
 * (`streamRecord(result)`), so tests read the figures, not just the bytes.
 */
import { Writable } from 'node:stream';

/** Lambda's figures (MB as the Lambda documentation means it: 1,024 KB). */
export const LAMBDA_LIMITS = {
  /** The largest event of a synchronous invocation. */
  requestBytes: 6 * 1024 * 1024,
  /** The largest buffered result the Runtime API takes (what it names when it refuses one). */
  bufferedResponseBytes: 6 * 1024 * 1024 + 100,
  /** The largest streamed response. */
  streamedResponseBytes: 200 * 1024 * 1024,
  /** How much of a streamed response goes out at full speed. */
  uncappedStreamBytes: 6 * 1024 * 1024,
  /** The rate of the rest. */
  cappedBytesPerSecond: 2 * 1024 * 1024,
  /** The longest timeout a function can have. */
  maxTimeoutMs: 900_000,
};
export type LambdaLimits = typeof LAMBDA_LIMITS;

/** The most bytes a streamed response can carry before a timeout of `timeoutMs` cuts it (sent as fast as Lambda lets it). */
export function streamCeiling(timeoutMs: number, limits: LambdaLimits = LAMBDA_LIMITS): number {
  const capped = Math.floor((timeoutMs / 1000) * limits.cappedBytesPerSecond);
  return Math.min(limits.streamedResponseBytes, limits.uncappedStreamBytes + capped);
}

const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');
const STREAM_RESPONSE = 'response';
const PRELUDE_CONTENT_TYPE = 'application/vnd.awslambda.http-integration-response';
const DEFAULT_CONTENT_TYPE = 'application/octet-stream';
const DELIMITER_LEN = 8;
const RECORD = Symbol('cairn.test.lambda.stream-record');

/** What the Lambda service saw of one streamed invocation. */
export interface StreamRecord {
  /** The content type the handler set (the prelude's, when it used HttpResponseStream.from). */
  contentType: string;
  /** The prelude (statusCode, headers, cookies, multiValueHeaders), if one went out before the body. */
  prelude?: Record<string, unknown>;
  /** Whether HttpResponseStream.from was called but no write ever sent its prelude. */
  preludeLost: boolean;
  /** The body bytes that reached the client (after the prelude), up to any cut. */
  body: Buffer;
  /** Every byte of the response (prelude included) the handler wrote, delivered or not. */
  bytesWritten: number;
  /** Seconds the delivered bytes took on the bandwidth clock (the real time elapsed or more). */
  streamSeconds: number;
  /** Why the stream ended short, if it did. */
  cut?: { reason: 'timeout' | 'size'; message: string };
  /** The invocation's failure (a handler that threw, or returned before its stream finished). */
  error?: { errorType: string; errorMessage: string };
}

/** Thrown by the runtime's stream on a misuse, as the real one does (src/Errors.js). */
class InvalidStreamingOperation extends Error {
  override name = 'Runtime.InvalidStreamingOperation';
}

interface StreamState {
  limits: LambdaLimits;
  startedAt: number;
  deadlineMs: number;
  clockMs: number;
  written: number;
  delivered: Buffer[];
  deliveredBytes: number;
  contentType: string;
  usedPrelude: boolean;
  cut?: StreamRecord['cut'];
}

/** The Runtime API's side of the response: every byte the handler writes, under Lambda's ceilings. */
class RuntimeApiRequest extends Writable {
  _onBeforeFirstWrite?: (write: (chunk: Uint8Array | string) => void) => void;
  private status: 'ready' | 'write_called' = 'ready';
  constructor(readonly state: StreamState) {
    super();
  }

  setContentType(contentType: string) {
    if (this.status !== 'ready') throw new InvalidStreamingOperation('Cannot set content-type, too late.');
    this.state.contentType = contentType;
    if (contentType === PRELUDE_CONTENT_TYPE) this.state.usedPrelude = true;
  }

  // As ResponseStream.js's req.write: objects become JSON, and the first
  // call (whatever it carries, an empty chunk too) runs _onBeforeFirstWrite.
  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    if (typeof chunk !== 'string' && !Buffer.isBuffer(chunk) && (chunk as object)?.constructor !== Uint8Array)
      chunk = JSON.stringify(chunk);
    const origWrite = (ch: unknown) => super.write(ch as Uint8Array);
    if (this.status === 'ready' && typeof this._onBeforeFirstWrite === 'function') this._onBeforeFirstWrite((ch) => origWrite(ch));
    const ret = super.write(chunk as Uint8Array, encoding as BufferEncoding, callback as () => void);
    this.status = 'write_called';
    return ret;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void) {
    const s = this.state;
    if (s.cut) return done();
    s.written += chunk.length;
    const fits = this.account(chunk.length);
    if (fits > 0) {
      s.delivered.push(Buffer.from(chunk.subarray(0, fits)));
      s.deliveredBytes += fits;
    }
    if (fits < chunk.length) return done(new Error(s.cut!.message));
    done();
  }

  /** How many of the next n bytes go out before a ceiling; sets `cut` when one is reached. */
  private account(n: number): number {
    const s = this.state;
    const { uncappedStreamBytes, cappedBytesPerSecond, streamedResponseBytes } = s.limits;
    s.clockMs = Math.max(s.clockMs, performance.now() - s.startedAt);
    const uncapped = Math.max(0, Math.min(n, uncappedStreamBytes - s.deliveredBytes));
    let fits = uncapped;
    const capped = n - uncapped;
    if (capped > 0) {
      const needMs = (capped / cappedBytesPerSecond) * 1000;
      if (s.clockMs + needMs <= s.deadlineMs) {
        s.clockMs += needMs;
        fits += capped;
      } else {
        const room = Math.max(0, Math.floor(((s.deadlineMs - s.clockMs) / 1000) * cappedBytesPerSecond));
        fits += Math.min(capped, room);
        s.clockMs = s.deadlineMs;
        s.cut = { reason: 'timeout', message: `Task timed out after ${(s.deadlineMs / 1000).toFixed(2)} seconds` };
      }
    }
    if (s.deliveredBytes + fits > streamedResponseBytes) {
      fits = Math.max(0, streamedResponseBytes - s.deliveredBytes);
      s.cut = { reason: 'size', message: `Response payload size exceeded maximum allowed payload size (${streamedResponseBytes} bytes).` };
    }
    return fits;
  }
}

/** The object the handler gets, as the runtime builds it (ResponseStream.js, writableStreamOnly). */
function writableStreamOnly(inner: RuntimeApiRequest): Writable {
  const fns = [
    'cork',
    'destroy',
    'end',
    'uncork',
    'write',
    'addListener',
    'emit',
    'eventNames',
    'getMaxListeners',
    'listenerCount',
    'listeners',
    'off',
    'on',
    'once',
    'prependListener',
    'prependOnceListener',
    'rawListeners',
    'removeAllListeners',
    'removeListener',
    'setMaxListeners',
    'setContentType',
  ] as const;
  const props = ['destroyed', 'writable', '_onBeforeFirstWrite'] as const;
  const readOnly = [
    'writableFinished',
    'writableObjectMode',
    'writableBuffer',
    'writableEnded',
    'writableNeedDrain',
    'writableHighWaterMark',
    'writableCorked',
    'writableLength',
  ] as const;
  const target = inner as unknown as Record<string, unknown>;
  const stream: Record<string, unknown> = Object.fromEntries(
    fns.map((fn) => [fn, (target[fn] as (...a: unknown[]) => unknown).bind(inner)]),
  );
  for (const prop of props) {
    Object.defineProperty(stream, prop, {
      get: () => target[prop],
      set: (value) => {
        target[prop] = value;
      },
    });
  }
  for (const prop of readOnly) Object.defineProperty(stream, prop, { get: () => target[prop] });
  return stream as unknown as Writable;
}

type StreamingHandler = (event: unknown, stream: Writable, context: unknown) => unknown;

interface TimedContext {
  getRemainingTimeInMillis?: () => number;
}

/** Runs one streamed invocation as the runtime and the service would; resolves when Lambda would be done with it. */
async function runStreaming(handler: StreamingHandler, event: unknown, context: unknown, limits: LambdaLimits): Promise<StreamRecord> {
  const remaining = (context as TimedContext | undefined)?.getRemainingTimeInMillis?.();
  const state: StreamState = {
    limits,
    startedAt: performance.now(),
    deadlineMs: Math.min(limits.maxTimeoutMs, typeof remaining === 'number' && remaining > 0 ? remaining : limits.maxTimeoutMs),
    clockMs: 0,
    written: 0,
    delivered: [],
    deliveredBytes: 0,
    contentType: DEFAULT_CONTENT_TYPE,
    usedPrelude: false,
  };
  const request = new RuntimeApiRequest(state);
  const stream = writableStreamOnly(request);
  let error: StreamRecord['error'];
  const finished = new Promise<void>((resolve) => {
    request.once('finish', resolve);
    request.once('close', resolve);
  });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), state.deadlineMs);
    timer.unref();
  });
  // A handler left running past its timeout keeps writing into a stream
  // that is gone; whatever it then throws is Lambda's to swallow, not the
  // test process's.
  const run = (async () => {
    const result = handler(event, stream, context);
    if (!(result instanceof Promise)) throw new Error('Streaming does not support non-async handlers.');
    await result;
    await Promise.race([finished, timedOut]);
    if (!request.writableFinished && !state.cut) throw new Error('Response stream is not finished.');
  })().then(
    () => 'done' as const,
    (err: unknown) => {
      if (!state.cut) error = { errorType: (err as Error)?.name ?? 'Error', errorMessage: (err as Error)?.message ?? String(err) };
      return 'done' as const;
    },
  );
  const outcome = await Promise.race([run, timedOut]);
  clearTimeout(timer);
  if (outcome === 'timeout' && !state.cut) {
    state.cut = { reason: 'timeout', message: `Task timed out after ${(state.deadlineMs / 1000).toFixed(2)} seconds` };
    state.clockMs = state.deadlineMs;
    request.destroy(new Error(state.cut.message));
  }
  return record(state, error);
}

function record(state: StreamState, error: StreamRecord['error']): StreamRecord {
  const all = Buffer.concat(state.delivered);
  const base = {
    contentType: state.contentType,
    bytesWritten: state.written,
    // A cut stream ended when the clock reached the deadline; a whole one when the last byte was out or the handler was done, whichever came later.
    streamSeconds: (state.cut ? state.clockMs : Math.max(state.clockMs, performance.now() - state.startedAt)) / 1000,
    ...(state.cut ? { cut: state.cut } : {}),
    ...(error ? { error } : {}),
  };
  if (!state.usedPrelude) return { ...base, preludeLost: false, body: all };
  // The service reads the prelude off the front of the stream: JSON, then 8 NUL bytes.
  const split = all.indexOf(Buffer.alloc(DELIMITER_LEN));
  if (split < 0) return { ...base, preludeLost: true, body: Buffer.alloc(0) };
  const prelude = JSON.parse(all.subarray(0, split).toString('utf8')) as Record<string, unknown>;
  return { ...base, prelude, preludeLost: false, body: all.subarray(split + DELIMITER_LEN) };
}

/** The record of a streamed invocation, kept with the result a test got from calling the handler. */
export function streamRecord(result: unknown): StreamRecord | undefined {
  return (result as Record<symbol, StreamRecord> | null)?.[RECORD];
}

/** Whether a handler is one the runtime would call with a response stream. */
export function isStreamingHandler(fn: unknown): boolean {
  return (fn as Record<symbol, unknown> | null)?.[STREAMING] === STREAM_RESPONSE;
}

/** The limits a test runs the stand-in under: Lambda's, unless a test lowers one to reach it cheaply. */
let activeLimits: LambdaLimits = LAMBDA_LIMITS;
export async function withLambdaLimits<T>(limits: Partial<LambdaLimits>, run: () => Promise<T>): Promise<T> {
  const before = activeLimits;
  activeLimits = { ...LAMBDA_LIMITS, ...limits };
  try {
    return await run();
  } finally {
    activeLimits = before;
  }
}
export const lambdaLimits = (): LambdaLimits => activeLimits;

/**
 * What a streamified handler answers when a test calls it as (event,
 * context): the structured result the Function URL makes of the stream
 * (the prelude's fields, the body base64), with the whole record kept
 * under a symbol (`streamRecord`). No prelude: status 200 and no headers,
 * which is what reaches a client when the prelude never went out.
 */
function structured(rec: StreamRecord): Record<string, unknown> {
  const fields = rec.prelude ?? { statusCode: 200 };
  const out: Record<string, unknown> = { ...fields, body: rec.body.toString('base64'), isBase64Encoded: true };
  Object.defineProperty(out, RECORD, { value: rec, enumerable: false });
  return out;
}

const awslambda = {
  streamifyResponse(handler: StreamingHandler, _options?: { highWaterMark?: number }) {
    const invoke = async (event: unknown, context: unknown) => {
      // The event crosses the service as JSON (Runtime.js: JSON.parse(bodyJson)).
      const parsed: unknown = JSON.parse(JSON.stringify(event ?? null));
      return structured(await runStreaming(handler, parsed, context, activeLimits));
    };
    Object.assign(invoke, { [STREAMING]: STREAM_RESPONSE });
    return invoke;
  },
  HttpResponseStream: {
    // As src/HttpResponseStream.js: no write here; the prelude waits for the first write.
    from(underlyingStream: Writable, prelude: Record<string, unknown>): Writable {
      const stream = underlyingStream as Writable & {
        setContentType(type: string): void;
        _onBeforeFirstWrite?: (write: (chunk: Uint8Array | string) => void) => void;
      };
      stream.setContentType(PRELUDE_CONTENT_TYPE);
      const metadataPrelude = JSON.stringify(prelude);
      stream._onBeforeFirstWrite = (write) => {
        write(metadataPrelude);
        write(new Uint8Array(DELIMITER_LEN));
      };
      return stream;
    },
  },
};

(globalThis as Record<string, unknown>).awslambda = awslambda;
