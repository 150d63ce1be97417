/**
 * The Lambda door: API Gateway HTTP API (payload 2.0) and Lambda Function URL
 * events share one shape; this turns them into an HttpRequest, and a Response
 * back into a streamed response (or a buffered structured result), wrapped in
 * middy. API Gateway REST API events (payload 1.0) take the same door through
 * api-gateway-rest.ts.
 */
import middy from '@middy/core';
import type {
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyResult,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import type { Logger } from '../logger.js';
import { isRestApiEvent, restToHttpRequest, toRestResult, toRestStreamingResult } from './api-gateway-rest.js';
import type { HttpHandler, HttpRequest } from './types.js';

export function toHttpRequest(event: APIGatewayProxyEventV2): HttpRequest {
  const headers = new Headers();
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value === undefined) continue;
    try {
      headers.set(name, value);
    } catch {
      // Dropped like the node door does; signature checks fail cleanly.
    }
  }
  if (event.cookies?.length) headers.set('cookie', event.cookies.join('; '));
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
    remoteAddress: event.requestContext.http.sourceIp,
  };
}

export async function toLambdaResult(response: Response, method: string): Promise<APIGatewayProxyStructuredResultV2> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
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
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  let body: StreamingResult['body'] = '';
  if (method === 'HEAD') void response.body?.cancel();
  else if (response.body) body = response.body;
  return { statusCode: response.status, headers, ...(cookies.length ? { cookies } : {}), body };
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
}

/**
 * A Lambda handler for an HttpHandler built lazily once per container (cold
 * start), so configuration errors surface on the first request's log.
 */
export function lambdaHttpHandler(
  build: () => Promise<{ handler: HttpHandler; logger: Logger }>,
  options: LambdaDoorOptions = {},
): LambdaHttpHandler {
  const streaming = options.streaming ?? true;
  let built: Promise<{ handler: HttpHandler; logger: Logger }> | undefined;
  const base = async (event: APIGatewayProxyEventV2 | APIGatewayProxyEvent, context: Context) => {
    built ??= build();
    const { handler, logger } = await built;
    const rest = isRestApiEvent(event);
    const request = rest ? restToHttpRequest(event) : toHttpRequest(event);
    try {
      const response = await handler(request);
      if (rest) return streaming ? toRestStreamingResult(response, request.method) : await toRestResult(response, request.method);
      return streaming ? toStreamingResult(response, request.method) : await toLambdaResult(response, request.method);
    } catch (err) {
      logger.error('unhandled error in handler', { err, requestId: context.awsRequestId });
      return { statusCode: 500, headers: { 'content-type': 'text/plain' }, body: 'Internal Server Error' };
    }
  };
  return middy(base, { streamifyResponse: streaming }) as unknown as LambdaHttpHandler;
}
