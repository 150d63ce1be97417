/**
 * Drives a Lambda handler the way API Gateway (payload 2.0) and Function URLs
 * do: builds the real event shape from an HTTP request and turns the
 * structured result back into a Response. Also an S3 SDK request handler, so
 * the same SDK calls can go through either door. The `rest*` variants do the
 * same with API Gateway REST API events (payload 1.0, the S3 API's door in
 * AWS): the stage in the path on the execute-api host, none on a custom
 * domain, decoded query parameters, base64 bodies.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { HttpResponse } from '@smithy/core/transport';

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
import { Readable } from 'node:stream';

export type LambdaFn = (
  event: APIGatewayProxyEventV2 | APIGatewayProxyEvent,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2 | unknown>;

const context = { awsRequestId: 'test-request', functionName: 'test', getRemainingTimeInMillis: () => 30000 } as unknown as Context;

/**
 * How the body is handed over: base64 (what API Gateway does for a binary
 * media type, and what this helper always did), or as text with
 * isBase64Encoded false (what an HTTP API does with an application/json body).
 */
export type BodyEncoding = 'base64' | 'text';

export function v2Event(
  method: string,
  url: URL | string,
  headers: Record<string, string>,
  body?: Uint8Array,
  encoding: BodyEncoding = 'base64',
): APIGatewayProxyEventV2 {
  const u = typeof url === 'string' ? new URL(url) : url;
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  lower.host ??= u.host;
  const rawPath = u.pathname;
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: u.search.replace(/^\?/, ''),
    headers: lower,
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

function toResponse(result: LambdaResult): Response {
  const body = result.body ? Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8') : null;
  const headers = new Headers();
  for (const [k, v] of Object.entries(result.headers ?? {})) headers.set(k, String(v));
  for (const [k, vs] of Object.entries(result.multiValueHeaders ?? {})) for (const v of vs) headers.append(k, String(v));
  for (const c of result.cookies ?? []) headers.append('set-cookie', c);
  const status = result.statusCode ?? 200;
  return new Response(status === 304 || status === 204 || !body?.length ? null : body, { status, headers });
}

/** fetch() through a Lambda handler; bodies base64-encoded unless `options.bodies` says 'text'. */
export function lambdaFetch(handler: LambdaFn, options: { bodies?: BodyEncoding } = {}) {
  return async (
    url: string,
    init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {},
  ): Promise<Response> => {
    const body = typeof init.body === 'string' ? Buffer.from(init.body) : init.body;
    const result = (await handler(
      v2Event(init.method ?? 'GET', url, init.headers ?? {}, body, options.bodies),
      context,
    )) as APIGatewayProxyStructuredResultV2;
    return toResponse(result);
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

/** An S3Client `requestHandler` that sends every request through the Lambda handler. */
export function lambdaRequestHandler(handler: LambdaFn) {
  return {
    async handle(request: SmithyRequest) {
      const query = Object.entries(request.query ?? {})
        .flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]))
        .map(([k, v]) => (v === null || v === undefined ? encodeURIComponent(k!) : `${encodeURIComponent(k!)}=${encodeURIComponent(v)}`))
        .join('&');
      const url = new URL(`${request.protocol}//${request.hostname}${request.port ? `:${request.port}` : ''}`);
      const event = v2Event(request.method, url, request.headers, await bodyBytes(request.body));
      event.rawPath = request.path;
      event.rawQueryString = query;
      const result = (await handler(event, context)) as APIGatewayProxyStructuredResultV2;
      const body = Buffer.from(result.body ?? '', result.isBase64Encoded ? 'base64' : 'utf8');
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(result.headers ?? {})) headers[k] = String(v);
      return { response: new HttpResponse({ statusCode: result.statusCode ?? 200, headers, body: Readable.from([body]) }) };
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

function decodeLoose(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

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
  headers: Record<string, string>,
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
  for (const [k, v] of Object.entries(headers)) add(k, v);
  if (!Object.keys(multiValueHeaders).some((k) => k.toLowerCase() === 'host')) add('Host', host);
  // What API Gateway adds; none of it is signed.
  add('X-Forwarded-For', '203.0.113.7');
  add('X-Forwarded-Port', '443');
  add('X-Forwarded-Proto', 'https');
  add('X-Amzn-Trace-Id', 'Root=1-00000000-000000000000000000000000');
  const single = Object.fromEntries(Object.entries(multiValueHeaders).map(([k, vs]) => [k, vs[vs.length - 1]!]));
  // API Gateway hands over the query decoded.
  let multiQuery: Record<string, string[]> | null = null;
  for (const part of rawQuery.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const k = decodeLoose(eq < 0 ? part : part.slice(0, eq));
    const v = eq < 0 ? '' : decodeLoose(part.slice(eq + 1));
    ((multiQuery ??= {})[k] ??= []).push(v);
  }
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
export function restFetch(handler: LambdaFn) {
  return async (
    url: string,
    init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {},
  ): Promise<Response> => {
    const body = typeof init.body === 'string' ? Buffer.from(init.body) : init.body;
    // The path and query as written, not as WHATWG URL parsing would normalise them.
    const m = /^[a-z]+:\/\/([^/?#]+)([^?#]*)(?:\?([^#]*))?/i.exec(url);
    if (!m) throw new Error(`not an absolute URL: ${url}`);
    const event = restEvent(init.method ?? 'GET', m[1]!, m[2] || '/', m[3] ?? '', init.headers ?? {}, body);
    return toResponse((await handler(event, context)) as LambdaResult);
  };
}

/** An S3Client `requestHandler` that sends every request through the handler as the REST API would (give the client REST_API_ENDPOINT). */
export function restRequestHandler(handler: LambdaFn) {
  return {
    async handle(request: SmithyRequest) {
      const query = Object.entries(request.query ?? {})
        .flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]))
        .map(([k, v]) => (v === null || v === undefined ? encodeURIComponent(k!) : `${encodeURIComponent(k!)}=${encodeURIComponent(v)}`))
        .join('&');
      const host = `${request.hostname}${request.port ? `:${request.port}` : ''}`;
      const event = restEvent(request.method, host, request.path, query, request.headers, await bodyBytes(request.body));
      const result = (await handler(event, context)) as LambdaResult;
      const body = Buffer.from(result.body ?? '', result.isBase64Encoded ? 'base64' : 'utf8');
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(result.headers ?? {})) headers[k] = String(v);
      for (const [k, vs] of Object.entries(result.multiValueHeaders ?? {})) headers[k] = vs.map(String).join(', ');
      return { response: new HttpResponse({ statusCode: result.statusCode ?? 200, headers, body: Readable.from([body]) }) };
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
  };
}
