/**
 * The Lambda runtime stand-in (test/support/lambda-runtime.ts) and the
 * fronts that drive it (test/support/lambda-door.ts) behave as Lambda, its
 * Function URLs and API Gateway do for what the handlers depend on, and the
 * handlers' Lambda door (functions/core/http/lambda.ts) holds up under them:
 * the prelude on the first write, a failed build retried, the 6 MB event,
 * the streamed response's ceilings and timeout, each front's event shapes.
 * Every behaviour runs through each front it applies to: the Function URL
 * and the REST API stream, the HTTP API buffers.
 */
import type { Writable } from 'node:stream';
import { lambdaHttpHandler } from '../../functions/core/http/lambda.js';
import type { HttpHandler, HttpRequest } from '../../functions/core/http/types.js';
import { createLogger, type Logger } from '../../functions/core/logger.js';
import {
  invokeThrough,
  lambdaContext,
  lambdaFetch,
  restEvent,
  restFetch,
  v2Event,
  type HeaderList,
  type LambdaFn,
  type LambdaFront,
} from '../support/lambda-door.js';
import { LAMBDA_LIMITS, streamCeiling, streamRecord, withLambdaLimits } from '../support/lambda-runtime.js';

const MiB = 1024 * 1024;
const quiet: Logger = createLogger('silent');

/** The handlers' door around an HttpHandler, streaming (Function URL, REST) or buffered (HTTP API). */
function door(handler: HttpHandler, streaming = true, logger: Logger = quiet): LambdaFn {
  return lambdaHttpHandler(async () => ({ handler, logger: quiet }), { streaming, logger }) as unknown as LambdaFn;
}

type Init = { method?: string; headers?: HeaderList; body?: string | Uint8Array };
/** A request through a front, at a URL on that front's own kind of host. */
function through(front: LambdaFront, fn: LambdaFn, path: string, init: Init = {}, timeoutMs?: number): Promise<Response> {
  if (front === 'rest-api') return restFetch(fn, { timeoutMs })(`https://abc123.execute-api.us-east-1.amazonaws.com/s3${path}`, init);
  const host =
    front === 'function-url' ? 'https://abcdefghij.lambda-url.us-east-1.on.aws' : 'https://api123.execute-api.us-east-1.amazonaws.com';
  return lambdaFetch(fn, { front, timeoutMs })(`${host}${path}`, init);
}

const STREAMING_FRONTS: LambdaFront[] = ['function-url', 'rest-api'];
const ALL_FRONTS: Array<{ front: LambdaFront; streaming: boolean }> = [
  { front: 'function-url', streaming: true },
  { front: 'rest-api', streaming: true },
  { front: 'http-api', streaming: false },
];

/** Reads a body to its end or its error: how many bytes came, and whether the transfer broke. */
async function drain(res: Response): Promise<{ bytes: number; broken: boolean }> {
  let bytes = 0;
  const reader = res.body!.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes, broken: false };
      bytes += value.length;
    }
  } catch {
    return { bytes, broken: true };
  }
}

/** A body of `size` zero bytes in chunks of at most 1 MiB. */
function zeros(size: number): ReadableStream<Uint8Array> {
  let left = size;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (left <= 0) return controller.close();
      const n = Math.min(MiB, left);
      left -= n;
      controller.enqueue(new Uint8Array(n));
    },
  });
}

type StreamingLambda = (event: unknown, context: unknown) => Promise<unknown>;
type Streamify = (fn: (event: unknown, stream: Writable, context: unknown) => Promise<void>) => StreamingLambda;
const runtime = (
  globalThis as unknown as { awslambda: { streamifyResponse: Streamify; HttpResponseStream: { from(s: Writable, p: object): Writable } } }
).awslambda;

describe('the runtime stand-in sends the prelude as the real runtime does', () => {
  const prelude = { statusCode: 201, headers: { 'x-cairn': 'kept' } };

  test('HttpResponseStream.from writes nothing: a stream ended without a write loses its status and headers', async () => {
    const silent = runtime.streamifyResponse(async (_event, stream) => {
      runtime.HttpResponseStream.from(stream, prelude).end();
    }) as unknown as LambdaFn;
    const rec = streamRecord(await silent(v2Event('GET', 'https://u.lambda-url.us-east-1.on.aws/', {}), lambdaContext()));
    expect(rec).toMatchObject({ preludeLost: true, bytesWritten: 0 });
    // The Function URL answers a bare 200; API Gateway refuses a stream without its metadata.
    const url = await through('function-url', silent, '/');
    expect(url.status).toBe(200);
    expect(url.headers.get('x-cairn')).toBeNull();
    expect((await through('rest-api', silent, '/')).status).toBe(502);
  });

  test('the first write, an empty one too, sends the prelude before it; the content type is fixed from then on', async () => {
    let late: unknown;
    const writes = runtime.streamifyResponse(async (_event, stream) => {
      const out = runtime.HttpResponseStream.from(stream, prelude);
      out.write('');
      try {
        (stream as unknown as { setContentType(t: string): void }).setContentType('text/plain');
      } catch (err) {
        late = err;
      }
      out.end();
    }) as unknown as LambdaFn;
    for (const front of STREAMING_FRONTS) {
      const res = await through(front, writes, '/');
      expect([front, res.status, res.headers.get('x-cairn')]).toEqual([front, 201, 'kept']);
    }
    expect(String(late)).toMatch(/Cannot set content-type, too late/);
  });
});

describe('the door sends status and headers when the streamed body is empty', () => {
  const answers: Record<string, () => Response> = {
    'an empty stream': () => new Response(new Uint8Array(0), { status: 201, headers: { 'x-cairn': 'kept' } }),
    'an empty string': () => new Response('', { status: 201, headers: { 'x-cairn': 'kept' } }),
    'a 304 without a body': () => new Response(null, { status: 304, headers: { 'x-cairn': 'kept', etag: '"e1"' } }),
  };
  for (const { front, streaming } of ALL_FRONTS) {
    for (const [name, make] of Object.entries(answers)) {
      test(`${name} through the ${front}`, async () => {
        const fn = door(async () => make(), streaming);
        const res = await through(front, fn, '/object');
        expect(res.status).toBe(make().status);
        expect(res.headers.get('x-cairn')).toBe('kept');
        expect(await res.arrayBuffer()).toHaveProperty('byteLength', 0);
      });
    }
    test(`a HEAD of a 5-byte object through the ${front}: its headers, no body`, async () => {
      const fn = door(async () => new Response('hello', { headers: { 'content-type': 'text/plain', 'x-cairn': 'kept' } }), streaming);
      const res = await through(front, fn, '/object', { method: 'HEAD' });
      expect([res.status, res.headers.get('x-cairn'), res.headers.get('content-type')]).toEqual([200, 'kept', 'text/plain']);
    });
  }
});

describe('a failed initialisation is retried on the next request', () => {
  for (const { front, streaming } of ALL_FRONTS) {
    test(`through the ${front}`, async () => {
      const lines: string[] = [];
      let builds = 0;
      const fn = lambdaHttpHandler(
        async () => {
          builds += 1;
          if (builds === 1) throw new Error('secret not readable yet');
          return { handler: async () => new Response('ready'), logger: quiet };
        },
        { streaming, logger: createLogger('info', {}, (line) => lines.push(line)) },
      ) as unknown as LambdaFn;
      const first = await through(front, fn, '/');
      expect(first.status).toBe(500);
      expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
        expect.objectContaining({
          level: 'error',
          msg: 'initialisation failed; the next request tries again',
          err: expect.objectContaining({ message: 'secret not readable yet' }),
        }),
      ]);
      const second = await through(front, fn, '/');
      expect([second.status, await second.text()]).toEqual([200, 'ready']);
      await through(front, fn, '/');
      expect(builds).toBe(2);
    });
  }

  test('requests that shared a failed build start one new build, not one each', async () => {
    let builds = 0;
    let fail: (err: Error) => void = () => undefined;
    const fn = lambdaHttpHandler(
      () => {
        builds += 1;
        if (builds === 1) return new Promise((_resolve, reject) => (fail = reject));
        return Promise.resolve({ handler: async () => new Response('ready'), logger: quiet });
      },
      { logger: quiet },
    ) as unknown as LambdaFn;
    const waiting = [through('function-url', fn, '/'), through('function-url', fn, '/')];
    await new Promise((r) => setTimeout(r, 20));
    fail(new Error('down'));
    expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([500, 500]);
    const after = await Promise.all([through('function-url', fn, '/'), through('function-url', fn, '/')]);
    expect(after.map((r) => r.status)).toEqual([200, 200]);
    expect(builds).toBe(2);
  });
});

describe("Lambda's 6 MB event", () => {
  const seen: number[] = [];
  const echo: HttpHandler = async (req: HttpRequest) => {
    const size = req.body ? (await new Response(req.body).arrayBuffer()).byteLength : 0;
    seen.push(size);
    return new Response(String(size));
  };
  beforeEach(() => (seen.length = 0));

  for (const { front, streaming } of ALL_FRONTS) {
    test(`through the ${front}: 4 MiB arrive whole; 4.5 MiB (6 MiB as base64) never reach the function`, async () => {
      const fn = door(echo, streaming);
      const ok = await through(front, fn, '/up', { method: 'PUT', body: new Uint8Array(4 * MiB) });
      expect([ok.status, await ok.text()]).toEqual([200, String(4 * MiB)]);
      const big = await through(front, fn, '/up', { method: 'PUT', body: new Uint8Array(4.5 * MiB) });
      const expected = { 'function-url': 413, 'http-api': 500, 'rest-api': 500 }[front];
      expect(big.status).toBe(expected);
      if (front === 'function-url')
        expect(await big.json()).toEqual({ Message: expect.stringContaining(`${LAMBDA_LIMITS.requestBytes} bytes`) });
      else expect((await big.json()) as { message: string }).toHaveProperty('message', expect.stringMatching(/^Internal server error$/i));
      expect(seen).toEqual([4 * MiB]);
    });
  }

  test.each(['http-api', 'rest-api'] as const)("over 10 MB, the %s's own quota answers 413 before Lambda", async (front) => {
    const res = await through(front, door(echo, front === 'rest-api'), '/up', { method: 'PUT', body: new Uint8Array(10_000_001) });
    expect([res.status, await res.json()]).toEqual([413, { message: 'Request Too Large' }]);
    expect(seen).toEqual([]);
  });

  test('the handler gets the event as JSON made it, not the object the front built', async () => {
    let got: unknown;
    const spy = runtime.streamifyResponse(async (event, stream) => {
      got = event;
      runtime.HttpResponseStream.from(stream, { statusCode: 204 }).end('');
    }) as unknown as LambdaFn;
    const event = v2Event('GET', 'https://u.lambda-url.us-east-1.on.aws/a', {});
    (event as unknown as Record<string, unknown>).notJson = () => 1;
    await invokeThrough('function-url', spy, event);
    expect(got).not.toBe(event);
    expect(got).not.toHaveProperty('notJson');
  });
});

describe("a streamed response's ceilings", () => {
  const download = (size: number) =>
    door(async () => new Response(zeros(size), { headers: { 'content-type': 'application/octet-stream' } }));

  test('the ceiling a timeout sets: the first 6 MB, then 2 MB a second', () => {
    expect(streamCeiling(60_000)).toBe(126 * MiB);
    expect(streamCeiling(900_000)).toBe(LAMBDA_LIMITS.streamedResponseBytes);
  });

  test.each(STREAMING_FRONTS)(
    'through the %s, a 20 MiB download under a 3 s timeout: status 200, at most 12 MiB, then the transfer breaks',
    async (front) => {
      const res = await through(front, download(20 * MiB), '/big', {}, 3000);
      expect(res.status).toBe(200);
      const { bytes, broken } = await drain(res);
      expect(broken).toBe(true);
      // 6 MiB, then 2 MiB/s for what is left of the timeout once they are out
      // (the real time spent getting there counts, and the prelude's bytes):
      // three seconds, so that a loaded machine still sends the first 6 MiB
      // (at a 1 s timeout it once took longer, and the function's end came first).
      expect(bytes).toBeGreaterThan(6 * MiB);
      expect(bytes).toBeLessThanOrEqual(streamCeiling(3000));
    },
  );

  test.each(STREAMING_FRONTS)('through the %s, the same download under a 20 s timeout arrives whole', async (front) => {
    const res = await through(front, download(10 * MiB), '/big', {}, 20_000);
    expect(await drain(res)).toEqual({ bytes: 10 * MiB, broken: false });
  });

  test('the record says why a stream ended short, and when', async () => {
    const rec = streamRecord(
      await download(10 * MiB)(v2Event('GET', 'https://u.lambda-url.us-east-1.on.aws/big', {}), lambdaContext(1000)),
    );
    expect(rec?.cut).toEqual({ reason: 'timeout', message: 'Task timed out after 1.00 seconds' });
    expect(rec?.streamSeconds).toBeCloseTo(1, 1);
    expect(rec?.bytesWritten).toBeGreaterThan(rec!.body.length);
  });

  test('the record says how long the stream took: 4 MiB past the first 6 at 2 MiB/s is 2 s', async () => {
    const started = performance.now();
    const rec = streamRecord(
      await download(10 * MiB)(v2Event('GET', 'https://u.lambda-url.us-east-1.on.aws/big', {}), lambdaContext(20_000)),
    );
    const realSeconds = (performance.now() - started) / 1000;
    expect(rec?.cut).toBeUndefined();
    expect(rec?.body.length).toBe(10 * MiB);
    // Two seconds on the bandwidth clock (plus the real time before the cap began), not waited for.
    expect(rec?.streamSeconds).toBeGreaterThanOrEqual(2);
    expect(rec?.streamSeconds).toBeLessThanOrEqual(2 + realSeconds);
    expect(realSeconds).toBeLessThan(rec!.streamSeconds);
  });

  test.each(STREAMING_FRONTS)('through the %s, a response past the size ceiling is cut there', async (front) => {
    const res = await withLambdaLimits({ streamedResponseBytes: 3 * MiB }, () => through(front, download(4 * MiB), '/big'));
    const { bytes, broken } = await drain(res);
    expect(broken).toBe(true);
    // The prelude counts against the ceiling too.
    expect(bytes).toBeGreaterThan(3 * MiB - 1024);
    expect(bytes).toBeLessThan(3 * MiB);
  });

  test.each(STREAMING_FRONTS)('through the %s, the function timeout cuts a stream that stalls', async (front) => {
    const stalls = door(
      async () =>
        new Response(
          new ReadableStream<Uint8Array>({
            start(controller) {
              controller.enqueue(new Uint8Array(1024));
            },
            // Never closes: the function is still "working" when its time is up.
          }),
        ),
    );
    const started = performance.now();
    const res = await through(front, stalls, '/slow', {}, 300);
    expect(res.status).toBe(200);
    expect(await drain(res)).toEqual({ bytes: 1024, broken: true });
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  test.each(STREAMING_FRONTS)('through the %s, a function that times out before it answers is a 502', async (front) => {
    const never = door(() => new Promise<Response>(() => undefined));
    expect((await through(front, never, '/', {}, 200)).status).toBe(502);
  });

  test('a buffered function past its timeout: the front answers 500 (HTTP API)', async () => {
    const slow = door(() => new Promise<Response>((resolve) => setTimeout(() => resolve(new Response('late')), 2000).unref()), false);
    expect((await through('http-api', slow, '/', {}, 200)).status).toBe(500);
  });
});

describe("each front's event shapes", () => {
  const headers: Array<[string, string]> = [
    ['X-Dup', 'a'],
    ['X-Dup', 'b'],
    ['Cookie', 'c1=one; c2=two'],
  ];
  const query = 'k=1&k=2&s=a%20b';
  const echo: HttpHandler = async (req) =>
    Response.json(
      { dup: req.headers.get('x-dup'), cookie: req.headers.get('cookie'), rawQuery: req.rawQuery },
      {
        headers: [
          ['set-cookie', 'r1=one; Path=/'],
          ['set-cookie', 'r2=two; Path=/'],
        ],
      },
    );

  test('payload 2.0 (HTTP API, Function URL): repeated headers comma-joined, cookies apart, the query raw and comma-joined', () => {
    const event = v2Event('GET', `https://u.lambda-url.us-east-1.on.aws/p?${query}`, headers);
    expect(event.headers['x-dup']).toBe('a,b');
    expect(event.headers).not.toHaveProperty('cookie');
    expect(event.cookies).toEqual(['c1=one', 'c2=two']);
    expect(event.rawQueryString).toBe(query);
    expect(event.queryStringParameters).toEqual({ k: '1,2', s: 'a b' });
    expect(event).not.toHaveProperty('multiValueHeaders');
  });

  test('payload 1.0 (REST): multiValueHeaders and multiValueQueryStringParameters, the single fields with the last value', () => {
    const event = restEvent('GET', 'abc123.execute-api.us-east-1.amazonaws.com', '/s3/p', query, headers);
    expect(event.multiValueHeaders['X-Dup']).toEqual(['a', 'b']);
    expect(event.headers['X-Dup']).toBe('b');
    expect(event.headers['Cookie']).toBe('c1=one; c2=two');
    expect(event.multiValueQueryStringParameters).toEqual({ k: ['1', '2'], s: ['a b'] });
    expect(event.queryStringParameters).toEqual({ k: '2', s: 'a b' });
    expect(event.path).toBe('/p');
    expect(event.requestContext.path).toBe('/s3/p');
  });

  for (const { front, streaming } of ALL_FRONTS) {
    test(`through the ${front}, the handler sees every header value, the cookies and the query; both cookies it sets come back`, async () => {
      const res = await through(front, door(echo, streaming), `/p?${query}`, { headers });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        dup: front === 'rest-api' ? 'a, b' : 'a,b',
        cookie: 'c1=one; c2=two',
        rawQuery: query,
      });
      expect(res.headers.getSetCookie()).toEqual(['r1=one; Path=/', 'r2=two; Path=/']);
    });
  }
});
