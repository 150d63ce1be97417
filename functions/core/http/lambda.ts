/**
 * The Lambda door: API Gateway HTTP API (payload 2.0) and Lambda Function URL
 * events share one shape; this turns them into an HttpRequest, and a Response
 * back into a streamed response (or a buffered structured result), wrapped in
 * middy. API Gateway REST API events (payload 1.0) take the same door through
 * api-gateway-rest.ts.
 *
 * Two things Lambda's Node.js runtime does that this door answers for
 * (aws-lambda-nodejs-runtime-interface-client, src/HttpResponseStream.js and
 * src/ResponseStream.js; the tests' stand-in, test/support/lambda-runtime.ts,
 * behaves the same):
 * - `HttpResponseStream.from` sends the status and headers (the prelude) on
 *   the response stream's first write, not when it is called. A body that
 *   writes nothing (a zero-byte object, an empty page) would reach the
 *   client as a bare 200 without its headers, so the body always makes one
 *   write.
 * - The runtime loads the module once per container and keeps it; what the
 *   first request builds (config, clients, services) is kept with it. A
 *   build that failed is not: the next request builds again.
 */
import { Readable } from 'node:stream';
import middy from '@middy/core';
import type {
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyResult,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import { createLogger, type Logger } from '../logger.js';
import { isRestApiEvent, restToHttpRequest, toRestResult, toRestStreamingResult, type RestStreamingResult } from './api-gateway-rest.js';
import type { HttpHandler, HttpRequest } from './types.js';
import { bytesOfText, textOfBytes } from './header-bytes.js';
import { onceUntilFailure } from '../once-until-failure.js';

export function toHttpRequest(event: APIGatewayProxyEventV2): HttpRequest {
  const headers = new Headers();
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value === undefined) continue;
    try {
      // The event has the bytes' UTF-8 text; the core takes the bytes, as the node door gives them (header-bytes.ts).
      headers.set(name, bytesOfText(value));
    } catch {
      // Dropped like the node door does; signature checks fail cleanly.
    }
  }
  if (event.cookies?.length) headers.set('cookie', bytesOfText(event.cookies.join('; ')));
  const method = event.requestContext.http.method;
  let body: ReadableStream<Uint8Array> | null = null;
  if (event.body !== undefined && event.body !== null && method !== 'GET' && method !== 'HEAD') {
    const bytes = event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8');
    body = new Response(new Uint8Array(bytes)).body;
  }
  return {
    method,
    rawPath: event.rawPath || '/',
    rawQuery: event.rawQueryString ?? '',
    headers,
    body,
    signal: new AbortController().signal,
    // https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html (requestContext.http.sourceIp: the immediate TCP peer).
    remoteAddress: event.requestContext.http.sourceIp,
    // Function URLs and HTTP APIs answer HTTPS only: https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html
    secure: true,
  };
}

/** A response's headers as the event's JSON carries them: text, which the front sends as UTF-8 (header-bytes.ts). */
export function resultHeaders(response: Response): { headers: Record<string, string>; cookies: string[] } {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = textOfBytes(value);
  });
  return { headers, cookies: response.headers.getSetCookie().map(textOfBytes) };
}

export async function toLambdaResult(response: Response, method: string): Promise<APIGatewayProxyStructuredResultV2> {
  const { headers, cookies } = resultHeaders(response);
  const bytes = method === 'HEAD' || !response.body ? Buffer.alloc(0) : Buffer.from(await response.arrayBuffer());
  if (method === 'HEAD') await response.body?.cancel();
  return {
    statusCode: response.status,
    headers,
    ...(cookies.length ? { cookies } : {}),
    body: bytes.toString('base64'),
    isBase64Encoded: true,
  };
}

export type LambdaHttpHandler = (
  event: APIGatewayProxyEventV2 | APIGatewayProxyEvent,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2 | APIGatewayProxyResult>;

/** What a streaming handler gives middy: the prelude fields and a body stream. */
export interface StreamingResult {
  statusCode: number;
  headers: Record<string, string>;
  cookies?: string[];
  body: ReadableStream<Uint8Array> | string;
}

export function toStreamingResult(response: Response, method: string): StreamingResult {
  const { headers, cookies } = resultHeaders(response);
  let body: StreamingResult['body'] = '';
  if (method === 'HEAD') void response.body?.cancel();
  else if (response.body) body = response.body;
  return { statusCode: response.status, headers, ...(cookies.length ? { cookies } : {}), body };
}

/**
 * A streamed body as middy pipes it into Lambda's response stream, making
 * at least one write: the runtime sends the prelude (status, headers) from
 * inside the stream's first `write` call (`_onBeforeFirstWrite`,
 * aws-lambda-nodejs-runtime-interface-client src/ResponseStream.js), and
 * an empty web stream makes none (Node drops empty chunks of a byte
 * stream), so without one the status and headers would never go out. One
 * chunk is pulled ahead at a time, as a byte stream would be.
 */
export function atLeastOneWrite(body: ReadableStream<Uint8Array> | string): Readable {
  async function* chunks(): AsyncGenerator<Uint8Array | string> {
    let wrote = false;
    if (typeof body === 'string') {
      if (body.length) yield body;
      wrote = body.length > 0;
    } else {
      const reader = body.getReader();
      let ended = false;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (!value.length) continue;
          wrote = true;
          yield value;
        }
        ended = true;
      } finally {
        // Lambda's stream went away first (a cut, a timeout): the source stops too.
        if (!ended) await reader.cancel().catch(() => undefined);
      }
    }
    if (!wrote) yield new Uint8Array(0);
  }
  return Readable.from(chunks(), { objectMode: true, highWaterMark: 1 });
}

export interface LambdaDoorOptions {
  /**
   * Stream the response (Function URL in RESPONSE_STREAM mode, REST API
   * integration in STREAM mode): bodies up to Lambda's streaming limit
   * instead of 6 MB, and memory that does not grow with the body. Needs the
   * Lambda runtime's `awslambda` global. Default: true (the S3 API and the
   * gateway stream; see lib/gateway.ts).
   */
  streaming?: boolean;
  /** Where a failed build is logged (it has no services, so no logger of its own). Default: a JSON logger on stdout. */
  logger?: Logger;
}

const INTERNAL_ERROR = { statusCode: 500, headers: { 'content-type': 'text/plain' }, body: 'Internal Server Error' };

/**
 * A Lambda handler for an HttpHandler built lazily once per container (cold
 * start), so configuration errors surface on the first request's log. A
 * build that fails is logged, that request answers 500, and the next
 * request builds again: a rejected promise kept for the container's life
 * would fail every request until Lambda recycled it, long after a
 * passing cause (a throttled secret read, a table not yet ready) was gone.
 */
export function lambdaHttpHandler(
  build: () => Promise<{ handler: HttpHandler; logger: Logger; edgeKey?: string }>,
  options: LambdaDoorOptions = {},
): LambdaHttpHandler {
  const streaming = options.streaming ?? true;
  const initLogger = options.logger ?? createLogger();
  const built = onceUntilFailure(build);
  const answer = (result: StreamingResult | RestStreamingResult | APIGatewayProxyStructuredResultV2 | APIGatewayProxyResult) =>
    streaming && typeof result.body !== 'undefined'
      ? { ...result, body: atLeastOneWrite(result.body as ReadableStream<Uint8Array> | string) }
      : result;
  const base = async (event: APIGatewayProxyEventV2 | APIGatewayProxyEvent, context: Context) => {
    let door: { handler: HttpHandler; logger: Logger; edgeKey?: string };
    try {
      door = await built();
    } catch (err) {
      initLogger.error('initialisation failed; the next request tries again', { err, requestId: context.awsRequestId });
      return answer(INTERNAL_ERROR);
    }
    const { handler, logger } = door;
    const rest = isRestApiEvent(event);
    const request = rest ? restToHttpRequest(event, { edgeKey: door.edgeKey }) : toHttpRequest(event);
    try {
      const response = await handler(request);
      if (rest) return answer(streaming ? toRestStreamingResult(response, request.method) : await toRestResult(response, request.method));
      return answer(streaming ? toStreamingResult(response, request.method) : await toLambdaResult(response, request.method));
    } catch (err) {
      logger.error('unhandled error in handler', { err, requestId: context.awsRequestId });
      return answer(INTERNAL_ERROR);
    }
  };
  return middy(base, { streamifyResponse: streaming }) as unknown as LambdaHttpHandler;
}
