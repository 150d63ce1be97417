/**
 * Drives a Lambda handler the way API Gateway (payload 2.0) and Function URLs
 * do: builds the real event shape from an HTTP request and turns the
 * structured result back into a Response. Also an S3 SDK request handler, so
 * the same SDK calls can go through either door.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
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

export type LambdaFn = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2 | unknown>;

const context = { awsRequestId: 'test-request', functionName: 'test', getRemainingTimeInMillis: () => 30000 } as unknown as Context;

export function v2Event(method: string, url: URL | string, headers: Record<string, string>, body?: Uint8Array): APIGatewayProxyEventV2 {
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
    body: body && body.length ? Buffer.from(body).toString('base64') : undefined,
    isBase64Encoded: !!(body && body.length),
  } as APIGatewayProxyEventV2;
}

function toResponse(result: APIGatewayProxyStructuredResultV2): Response {
  const body = result.body ? Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8') : null;
  const headers = new Headers();
  for (const [k, v] of Object.entries(result.headers ?? {})) headers.set(k, String(v));
  for (const c of result.cookies ?? []) headers.append('set-cookie', c);
  const status = result.statusCode ?? 200;
  return new Response(status === 304 || status === 204 || !body?.length ? null : body, { status, headers });
}

/** fetch() through a Lambda handler. */
export function lambdaFetch(handler: LambdaFn) {
  return async (url: string, init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {}): Promise<Response> => {
    const body = typeof init.body === 'string' ? Buffer.from(init.body) : init.body;
    const result = (await handler(v2Event(init.method ?? 'GET', url, init.headers ?? {}, body), context)) as APIGatewayProxyStructuredResultV2;
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
