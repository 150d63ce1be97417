/**
 * Drives a Lambda handler the way its three AWS fronts do, on top of the
 * runtime stand-in (lambda-runtime.ts): builds each front's event from an
 * HTTP request, invokes the handler under Lambda's limits, and turns what
 * Lambda gives back into the Response that front would send. Also S3 SDK
 * request handlers, so the same SDK calls can go through any door.
 *
 * - Function URL (payload 2.0; buffered or RESPONSE_STREAM): the streaming
 *   handlers' front (the gateway behind CloudFront).
 * - HTTP API (payload 2.0, buffered only: API Gateway streams for REST APIs
 *   alone, https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode.html):
 *   GraphQL's front.
 * - REST API (payload 1.0, integration in STREAM mode): the S3 API's front,
 *   with the stage in the path on the execute-api host and none on a custom
 *   domain, decoded query parameters, base64 bodies (binary media types).
 *
 * Event shapes, from AWS's pages:
 * - Payload 2.0 (HTTP API and Function URL alike,
 *   https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html,
 *   https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html): no
 *   multiValue fields; duplicate headers joined with commas in `headers`,
 *   duplicate query parameters joined with commas in
 *   `queryStringParameters`; `rawQueryString` as sent; every Cookie header
 *   taken out of `headers` into the `cookies` array; header names in lower
 *   case (as HTTP/2 has them).
 * - Payload 1.0 (REST,
 *   https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html):
 *   `multiValueHeaders` and `multiValueQueryStringParameters` (decoded),
 *   `headers` and `queryStringParameters` with the last value of each;
 *   Cookie stays a header.
 *
 * What a front answers when Lambda does not give it a response:
 * - A request over API Gateway's own 10 MB payload quota
 *   (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html):
 *   413 before any invocation (the stack turns REST's into S3's
 *   EntityTooLarge with a gateway response, lib/storage-api.ts; not here).
 * - An event over Lambda's 6 MB (the body base64 counts 4/3): Lambda
 *   refuses the invocation (413 RequestEntityTooLargeException). HTTP API:
 *   500 {"message":"Internal Server Error"}
 *   (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html);
 *   REST: 500 {"message": "Internal server error"}, a Lambda service
 *   exception it does not map
 *   (https://repost.aws/knowledge-center/api-gateway-internal-server-error);
 *   Function URL: Lambda's own 413 with its message (not documented for
 *   URLs; the Invoke API's answer, API_Invoke.html).
 * - A function that fails, times out before answering, or returns more
 *   than 6 MB buffered: 502 from the REST API (the integration failed) and
 *   the Function URL, 500 from the HTTP API.
 * - A streamed answer whose prelude never went out: the Function URL sends
 *   status 200 with none of the function's headers; API Gateway, which
 *   "begins the payload stream after it receives the valid metadata and
 *   delimiter" (response-transfer-mode-lambda.html), fails it with 502.
 * - A stream cut short (timeout, size): the status already sent stays, and
 *   the body ends in an error after the bytes that went out, as fetch()
 *   reports a transfer closed early.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { HttpResponse } from '@smithy/core/transport';
import { Readable } from 'node:stream';
import { isStreamingHandler, LAMBDA_LIMITS, lambdaLimits, streamRecord, type StreamRecord } from './lambda-runtime.js';

interface SmithyRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query?: Record<string, string | string[] | null>;
  headers: Record<string, string>;
  body?: unknown;
}

export type LambdaFn = (
  event: APIGatewayProxyEventV2 | APIGatewayProxyEvent,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2 | unknown>;

/** The front a request reaches the function through. */
export type LambdaFront = 'function-url' | 'http-api' | 'rest-api';

/** API Gateway's own payload quota (REST and HTTP APIs alike), checked before it invokes anything. */
export const API_GATEWAY_MAX_PAYLOAD_BYTES = 10 * 1000 * 1000;

/**
 * A Lambda context whose remaining time counts down from `timeoutMs`, which
 * the runtime stand-in takes as the function's timeout. By default
 * Lambda's longest (15 minutes), so only a test that sets one meets it.
 */
export function lambdaContext(timeoutMs = LAMBDA_LIMITS.maxTimeoutMs, requestId = 'test-request'): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    awsRequestId: requestId,
    functionName: 'test',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  } as unknown as Context;
}

/**
 * How the body is handed over: base64 (what API Gateway does for a binary
 * media type, and what this helper always did), or as text with
 * isBase64Encoded false (what an HTTP API does with an application/json body).
 */
export type BodyEncoding = 'base64' | 'text';

/** Request headers: a record, or name/value pairs when a name repeats. */
export type HeaderList = Record<string, string> | Array<[string, string]>;

const pairsOf = (headers: HeaderList): Array<[string, string]> => (Array.isArray(headers) ? headers : Object.entries(headers));

function decodeLoose(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Decoded query parameters in order, each name with all its values. */
function queryValues(rawQuery: string): Map<string, string[]> | null {
  let out: Map<string, string[]> | null = null;
  for (const part of rawQuery.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const k = decodeLoose(eq < 0 ? part : part.slice(0, eq));
    const v = eq < 0 ? '' : decodeLoose(part.slice(eq + 1));
    out ??= new Map();
    out.set(k, [...(out.get(k) ?? []), v]);
  }
  return out;
}

/**
 * A payload 2.0 event (HTTP API or Function URL) for a request as sent:
 * lower-case header names, repeated headers joined with commas, cookies in
 * `cookies`, the query raw and decoded. The two fronts differ only in the
 * host they answer on (the URL's).
 */
export function v2Event(
  method: string,
  url: URL | string,
  headers: HeaderList,
  body?: Uint8Array,
  encoding: BodyEncoding = 'base64',
): APIGatewayProxyEventV2 {
  const u = typeof url === 'string' ? new URL(url) : url;
  const lower: Record<string, string> = {};
  const cookies: string[] = [];
  for (const [k, v] of pairsOf(headers)) {
    const name = k.toLowerCase();
    if (name === 'cookie') cookies.push(...v.split(/;\s*/).filter(Boolean));
    else lower[name] = name in lower ? `${lower[name]},${v}` : v;
  }
  lower.host ??= u.host;
  const rawPath = u.pathname;
  const rawQueryString = u.search.replace(/^\?/, '');
  const query = queryValues(rawQueryString);
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    ...(cookies.length ? { cookies } : {}),
    headers: lower,
    ...(query ? { queryStringParameters: Object.fromEntries([...query].map(([k, vs]) => [k, vs.join(',')])) } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'test',
      domainName: u.hostname,
      domainPrefix: u.hostname.split('.')[0]!,
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: lower['user-agent'] ?? 'test' },
      requestId: 'test',
      routeKey: '$default',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    body: body && body.length ? Buffer.from(body).toString(encoding === 'text' ? 'utf8' : 'base64') : undefined,
    isBase64Encoded: !!(body && body.length) && encoding === 'base64',
  } as APIGatewayProxyEventV2;
}

/** A structured result: payload 2.0's (cookies) or a REST API's (multiValueHeaders). */
type LambdaResult = APIGatewayProxyStructuredResultV2 & { multiValueHeaders?: Record<string, Array<string | number | boolean>> };

const json = (status: number, body: unknown, extra: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...extra } });

/** What a front answers when Lambda gave it no response (see the file's header). */
function frontFailure(front: LambdaFront, why: 'request-too-large' | 'function-error' | 'no-prelude'): Response {
  if (front === 'http-api') return json(500, { message: 'Internal Server Error' });
  if (front === 'rest-api') {
    const type = why === 'request-too-large' ? 'InternalServerErrorException' : 'BadGatewayException';
    return json(why === 'request-too-large' ? 500 : 502, { message: 'Internal server error' }, { 'x-amzn-errortype': type });
  }
  if (why === 'request-too-large')
    return json(413, { Message: `Request must be smaller than ${lambdaLimits().requestBytes} bytes for the InvokeFunction operation` });
  if (why === 'no-prelude') return new Response(null, { status: 200 });
  return json(502, { Message: 'Internal Server Error' });
}

/** Text as the bytes the front sends it in (UTF-8), one character a byte as a fetch() Response holds them. */
const wireBytes = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
/** Header bytes (a ByteString, as fetch() sends it) as the event's text: the front decodes them as UTF-8, invalid bytes as U+FFFD (functions/core/http/header-bytes.ts). */
const eventText = (bytes: string) => Buffer.from(bytes, 'latin1').toString('utf8');
const eventHeaders = (headers: HeaderList): Array<[string, string]> => pairsOf(headers).map(([k, v]) => [k, eventText(v)]);

/** The prelude's or result's headers as the front answers them: the JSON's text sent as UTF-8. */
function headersOf(fields: LambdaResult): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(fields.headers ?? {})) headers.set(k, wireBytes(String(v)));
  for (const [k, vs] of Object.entries(fields.multiValueHeaders ?? {})) for (const v of vs) headers.append(k, wireBytes(String(v)));
  for (const c of fields.cookies ?? []) headers.append('set-cookie', wireBytes(c));
  return headers;
}

const noBody = (method: string, status: number) => method === 'HEAD' || status === 204 || status === 304;

/** A body that delivers `bytes`, then fails as a transfer closed early does. */
function truncatedBody(bytes: Buffer, reason: string): ReadableStream<Uint8Array> {
  let sent = bytes.length === 0;
  return new ReadableStream<Uint8Array>({
    // Erroring a stream drops what it still queues: the bytes are read first.
    pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new Uint8Array(bytes));
      } else controller.error(new TypeError('terminated', { cause: new Error(`the Lambda stream was cut: ${reason}`) }));
    },
  });
}

function streamedResponse(front: LambdaFront, method: string, rec: StreamRecord): Response {
  const broken = rec.cut?.message ?? rec.error?.errorMessage;
  // Nothing went out before the function failed or ran out of time: Lambda reports an error, not a response.
  if (!rec.prelude && !rec.body.length && (rec.error || rec.cut)) return frontFailure(front, 'function-error');
  if (rec.preludeLost || (front === 'rest-api' && !rec.prelude)) return frontFailure(front, 'no-prelude');
  const fields = (rec.prelude ?? { statusCode: 200 }) as LambdaResult;
  const status = fields.statusCode ?? 200;
  const headers = headersOf(fields);
  if (noBody(method, status)) return new Response(null, { status, headers });
  const body = broken ? truncatedBody(rec.body, broken) : rec.body.length ? new Uint8Array(rec.body) : null;
  return new Response(body, { status, headers });
}

function bufferedResponse(method: string, result: LambdaResult): Response {
  const status = result.statusCode ?? 200;
  const body = result.body ? Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8') : null;
  return new Response(noBody(method, status) || !body?.length ? null : new Uint8Array(body), { status, headers: headersOf(result) });
}

/** Races a buffered handler against its timeout; a handler still running is Lambda's to forget. */
async function callBuffered(handler: LambdaFn, event: unknown, context: Context): Promise<{ result?: unknown; failed?: boolean }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ failed: true }>((resolve) => {
    timer = setTimeout(() => resolve({ failed: true }), context.getRemainingTimeInMillis());
    timer.unref();
  });
  const run = (async () => ({ result: await handler(event as APIGatewayProxyEventV2, context) }))().catch(() => ({ failed: true }));
  try {
    return await Promise.race([run, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One request through a front: API Gateway's quota, Lambda's 6 MB event,
 * the invocation (streamed or buffered, under its timeout), and what the
 * front makes of the outcome.
 */
export async function invokeThrough(
  front: LambdaFront,
  handler: LambdaFn,
  event: APIGatewayProxyEventV2 | APIGatewayProxyEvent,
  context: Context = lambdaContext(),
): Promise<Response> {
  const method = 'httpMethod' in event ? event.httpMethod : event.requestContext.http.method;
  if (
    front !== 'function-url' &&
    event.body &&
    Buffer.byteLength(event.body, event.isBase64Encoded ? 'base64' : 'utf8') > API_GATEWAY_MAX_PAYLOAD_BYTES
  )
    return json(413, { message: 'Request Too Large' });
  const payload = JSON.stringify(event);
  if (Buffer.byteLength(payload) > lambdaLimits().requestBytes) return frontFailure(front, 'request-too-large');
  if (isStreamingHandler(handler)) {
    const rec = streamRecord(await handler(event, context));
    if (!rec) throw new Error('a streaming handler answered without the runtime stand-in');
    return streamedResponse(front, method, rec);
  }
  // The event travels from the front through Lambda's service to the
  // function's runtime, which reads it from the Runtime API and parses it
  // (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html, "Next
  // invocation"): the front's work and the runtime's are separate turns, as
  // here, so a test timing the function's event loop sees only the runtime's.
  await new Promise((resolve) => setImmediate(resolve));
  // As the runtime hands it over: parsed from the JSON Lambda was sent.
  const { result, failed } = await callBuffered(handler, JSON.parse(payload), context);
  if (failed) return frontFailure(front, 'function-error');
  const out = JSON.stringify(result ?? null);
  if (Buffer.byteLength(out) > lambdaLimits().bufferedResponseBytes) return frontFailure(front, 'function-error');
  // Posted back to the Runtime API ("Invocation response"); the front reads it in a turn of its own.
  await new Promise((resolve) => setImmediate(resolve));
  return bufferedResponse(method, JSON.parse(out) as LambdaResult);
}

/** The front a handler has by default: a Function URL if it streams, else an HTTP API. */
const defaultFront = (handler: LambdaFn): LambdaFront => (isStreamingHandler(handler) ? 'function-url' : 'http-api');

export interface LambdaFetchOptions {
  /** How bodies are handed over (base64 unless 'text'). */
  bodies?: BodyEncoding;
  /** The front (payload 2.0 either way); by default a Function URL for a streaming handler, else an HTTP API. */
  front?: 'function-url' | 'http-api';
  /** The function's timeout. */
  timeoutMs?: number;
}

/** fetch() through a Lambda handler behind a Function URL or an HTTP API. */
export function lambdaFetch(handler: LambdaFn, options: LambdaFetchOptions = {}) {
  return async (url: string, init: { method?: string; headers?: HeaderList; body?: string | Uint8Array } = {}): Promise<Response> => {
    const body = typeof init.body === 'string' ? Buffer.from(init.body) : init.body;
    const event = v2Event(init.method ?? 'GET', url, eventHeaders(init.headers ?? {}), body, options.bodies);
    return invokeThrough(options.front ?? defaultFront(handler), handler, event, lambdaContext(options.timeoutMs));
  };
}

async function bodyBytes(body: unknown): Promise<Uint8Array | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof Uint8Array) return body;
  const chunks: Buffer[] = [];
  for await (const c of body as AsyncIterable<Uint8Array | string>) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

function smithyQuery(request: SmithyRequest): string {
  return Object.entries(request.query ?? {})
    .flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]))
    .map(([k, v]) => (v === null || v === undefined ? encodeURIComponent(k!) : `${encodeURIComponent(k!)}=${encodeURIComponent(v)}`))
    .join('&');
}

/** The SDK's view of a front's Response: headers joined, the body as a Node stream (which fails where the Response's does). */
function toSmithyResponse(response: Response): { response: HttpResponse } {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const body = response.body ? Readable.fromWeb(response.body as import('node:stream/web').ReadableStream) : Readable.from([]);
  return { response: new HttpResponse({ statusCode: response.status, headers, body }) };
}

/** An S3Client `requestHandler` that sends every request through the handler behind a Function URL (or an HTTP API). */
export function lambdaRequestHandler(handler: LambdaFn, options: Omit<LambdaFetchOptions, 'bodies'> = {}) {
  return {
    async handle(request: SmithyRequest) {
      const url = new URL(`${request.protocol}//${request.hostname}${request.port ? `:${request.port}` : ''}`);
      const event = v2Event(request.method, url, request.headers, await bodyBytes(request.body));
      event.rawPath = request.path;
      event.requestContext.http.path = request.path;
      event.rawQueryString = smithyQuery(request);
      const query = queryValues(event.rawQueryString);
      if (query) event.queryStringParameters = Object.fromEntries([...query].map(([k, vs]) => [k, vs.join(',')]));
      return toSmithyResponse(
        await invokeThrough(options.front ?? defaultFront(handler), handler, event, lambdaContext(options.timeoutMs)),
      );
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
  };
}

// ------------------------------------------------ API Gateway REST (payload 1.0)

/** The stage of the test REST API, and the execute-api endpoint clients are given (as the stack's StorageEndpoint output is). */
export const REST_STAGE = 's3';
export const REST_API_ENDPOINT = `https://cairntest01.execute-api.us-east-1.amazonaws.com/${REST_STAGE}`;

const EXECUTE_API_HOST = /^[a-z0-9]+\.execute-api\.[a-z0-9-]+\.amazonaws\.com$/;

/**
 * The REST API event for a request as the client sent it: `host` and the
 * path exactly as signed (still percent-encoded), the raw query. On an
 * execute-api host the first path segment is the stage, which `path` loses
 * and `requestContext.path` keeps; on any other host (a custom domain mapped
 * with an empty base path) the two are the same.
 */
export function restEvent(
  method: string,
  host: string,
  sentPath: string,
  rawQuery: string,
  headers: HeaderList,
  body?: Uint8Array,
): APIGatewayProxyEvent {
  const hostname = host.replace(/:\d+$/, '');
  let stage = REST_STAGE;
  let path = sentPath || '/';
  if (EXECUTE_API_HOST.test(hostname)) {
    const m = /^\/([^/]+)(\/.*)?$/.exec(sentPath);
    if (!m) throw new Error(`an execute-api request names its stage first: ${sentPath}`);
    stage = m[1]!;
    path = m[2] || '/';
  }
  const multiValueHeaders: Record<string, string[]> = {};
  const add = (k: string, v: string) => {
    const existing = Object.keys(multiValueHeaders).find((x) => x.toLowerCase() === k.toLowerCase());
    (multiValueHeaders[existing ?? k] ??= []).push(v);
  };
  for (const [k, v] of pairsOf(headers)) add(k, v);
  if (!Object.keys(multiValueHeaders).some((k) => k.toLowerCase() === 'host')) add('Host', host);
  // What API Gateway adds; none of it is signed.
  add('X-Forwarded-For', '203.0.113.7');
  add('X-Forwarded-Port', '443');
  add('X-Forwarded-Proto', 'https');
  add('X-Amzn-Trace-Id', 'Root=1-00000000-000000000000000000000000');
  const single = Object.fromEntries(Object.entries(multiValueHeaders).map(([k, vs]) => [k, vs[vs.length - 1]!]));
  // API Gateway hands over the query decoded.
  const query = queryValues(rawQuery);
  const multiQuery = query ? Object.fromEntries(query) : null;
  const proxy = path === '/' ? null : decodeLoose(path.slice(1));
  return {
    resource: proxy === null ? '/' : '/{proxy+}',
    path,
    httpMethod: method,
    headers: single,
    multiValueHeaders,
    queryStringParameters: multiQuery ? Object.fromEntries(Object.entries(multiQuery).map(([k, vs]) => [k, vs[vs.length - 1]!])) : null,
    multiValueQueryStringParameters: multiQuery,
    pathParameters: proxy === null ? null : { proxy },
    stageVariables: null,
    requestContext: {
      accountId: '123456789012',
      apiId: hostname.split('.')[0]!,
      domainName: hostname,
      domainPrefix: hostname.split('.')[0]!,
      httpMethod: method,
      path: sentPath || '/',
      protocol: 'HTTP/1.1',
      requestId: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
      requestTimeEpoch: Date.now(),
      resourceId: 'abc123',
      resourcePath: proxy === null ? '/' : '/{proxy+}',
      stage,
      identity: { sourceIp: '203.0.113.7', userAgent: single['user-agent'] ?? null } as APIGatewayProxyEvent['requestContext']['identity'],
      authorizer: null,
    },
    // Binary media types */*: every body arrives base64-encoded.
    body: body && body.length ? Buffer.from(body).toString('base64') : null,
    isBase64Encoded: !!(body && body.length),
  } as APIGatewayProxyEvent;
}

/** fetch() through a Lambda handler as the REST API invokes it: the URL is what the client sent (and signed). */
export function restFetch(handler: LambdaFn, options: { timeoutMs?: number } = {}) {
  return async (url: string, init: { method?: string; headers?: HeaderList; body?: string | Uint8Array } = {}): Promise<Response> => {
    const body = typeof init.body === 'string' ? Buffer.from(init.body) : init.body;
    // The path and query as written, not as WHATWG URL parsing would normalise them.
    const m = /^[a-z]+:\/\/([^/?#]+)([^?#]*)(?:\?([^#]*))?/i.exec(url);
    if (!m) throw new Error(`not an absolute URL: ${url}`);
    const event = restEvent(init.method ?? 'GET', m[1]!, m[2] || '/', m[3] ?? '', eventHeaders(init.headers ?? {}), body);
    return invokeThrough('rest-api', handler, event, lambdaContext(options.timeoutMs));
  };
}

/** An S3Client `requestHandler` that sends every request through the handler as the REST API would (give the client REST_API_ENDPOINT). */
export function restRequestHandler(handler: LambdaFn, options: { timeoutMs?: number } = {}) {
  return {
    async handle(request: SmithyRequest) {
      const host = `${request.hostname}${request.port ? `:${request.port}` : ''}`;
      const event = restEvent(request.method, host, request.path, smithyQuery(request), request.headers, await bodyBytes(request.body));
      return toSmithyResponse(await invokeThrough('rest-api', handler, event, lambdaContext(options.timeoutMs)));
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
  };
}
