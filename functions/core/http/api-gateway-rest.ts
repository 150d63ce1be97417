/**
 * API Gateway REST API events (Lambda proxy integration, payload 1.0,
 * `APIGatewayProxyEvent`) as an HttpRequest, and a Response back as what
 * the REST API takes: the prelude of a streamed response (integration
 * `responseTransferMode: STREAM`) or a buffered proxy result.
 *
 * What differs from the HTTP API / Function URL shape (lambda.ts):
 * - Two paths. `requestContext.path` is the path the client sent, and so the
 *   one it signed: `/<stage>/bucket/key` on the API's own
 *   `execute-api` host, `/bucket/key` on a custom domain mapped with an empty
 *   base path. `path` is the same without the stage. The application routes
 *   on `path` (rawPath) and SigV4 checks `requestContext.path` (signedPath).
 *   Both keep the client's percent-encoding.
 * - No raw query string: `multiValueQueryStringParameters` holds the decoded
 *   names and values, re-encoded here (every byte but the unreserved
 *   characters, as SigV4's canonical query does, so signatures still match).
 * - Headers in `multiValueHeaders` (and `headers`, last value only).
 * - With binary media types that match every content type (the stack's
 *   REST API has them), every body arrives base64-encoded.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { HttpRequest } from './types.js';
import { bytesOfText, textOfBytes } from './header-bytes.js';

/** Whether a Lambda event is a REST API (payload 1.0) proxy event rather than payload 2.0. */
export function isRestApiEvent(event: unknown): event is APIGatewayProxyEvent {
  const e = event as { httpMethod?: unknown; version?: unknown; requestContext?: { http?: unknown } };
  return typeof e?.httpMethod === 'string' && e.version !== '2.0' && e.requestContext?.http === undefined;
}

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** Percent-encodes every byte but the unreserved characters (RFC 3986), as S3 clients encode query values. */
function encodeQueryPart(text: string): string {
  let out = '';
  for (const ch of text) {
    if (UNRESERVED.test(ch)) out += ch;
    else for (const b of Buffer.from(ch, 'utf8')) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The query string rebuilt from the event's decoded parameters. */
export function restRawQuery(event: Pick<APIGatewayProxyEvent, 'multiValueQueryStringParameters' | 'queryStringParameters'>): string {
  const multi = event.multiValueQueryStringParameters;
  const pairs: string[] = [];
  if (multi) {
    for (const [name, values] of Object.entries(multi)) {
      for (const value of values ?? []) pairs.push(`${encodeQueryPart(name)}=${encodeQueryPart(value)}`);
    }
  } else {
    for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) {
      if (value !== undefined) pairs.push(`${encodeQueryPart(name)}=${encodeQueryPart(value)}`);
    }
  }
  return pairs.join('&');
}

/**
 * The path the application sees and the path the client signed. `path` has
 * the stage taken off on the execute-api host; on a custom domain with an
 * empty base path the two are the same.
 */
export function restPaths(event: Pick<APIGatewayProxyEvent, 'path' | 'requestContext'>): { rawPath: string; signedPath: string } {
  const rawPath = event.path || '/';
  const sent = (event.requestContext as { path?: string } | undefined)?.path;
  return { rawPath, signedPath: sent || rawPath };
}

/** Headers the storage API's CloudFront Function sets (functions/cdn/s3-viewer-request.js). */
export const VIEWER_HOST = 'x-cairn-viewer-host';
export const VIEWER_AUTHORIZATION = 'x-cairn-viewer-authorization';
export const VIEWER_IP = 'x-cairn-viewer-ip';
/** The origin header the storage distribution adds to every request it sends the API (lib/part-staging.ts). */
export const EDGE_KEY = 'x-cairn-edge-key';

/** Whether the request carries the stack's edge key: only the distribution sends it. */
function fromEdge(headers: Headers, edgeKey: string | undefined): boolean {
  const sent = headers.get(EDGE_KEY);
  if (!edgeKey || sent === null) return false;
  // Digests of equal length, so the comparison takes the same time whatever was sent.
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(sent), digest(edgeKey));
}

export interface ViewerRequest {
  rawPath: string;
  signedPath: string;
  /** The viewer's address, when the distribution vouches for it (see viewerSigned). */
  viewerAddress?: string;
}

/**
 * A request that came through the storage API's CloudFront distribution was
 * signed for the distribution's host and for the path without the stage
 * (the distribution's origin path adds it): the viewer's Host and
 * Authorization, which CloudFront does not pass on as such, come in the
 * function's headers and are put back. A caller that reaches the API
 * directly with these headers only names what it signed, which must verify.
 *
 * The viewer's address is another matter: nothing verifies it, and an
 * address decides bucket policies (aws:SourceIp). So it is taken only with
 * the viewer host and the edge key the distribution adds as an origin
 * header (`edgeKey`, the stack's); without both, or when no key is
 * configured, the request's address stays the TCP peer API Gateway saw.
 * The function's and the distribution's headers are removed either way, so
 * nothing after this reads them.
 */
export function viewerSigned(headers: Headers, paths: { rawPath: string; signedPath: string }, edgeKey?: string): ViewerRequest {
  const host = headers.get(VIEWER_HOST);
  const address = headers.get(VIEWER_IP);
  const vouched = host !== null && fromEdge(headers, edgeKey);
  headers.delete(VIEWER_IP);
  headers.delete(EDGE_KEY);
  if (host === null) return paths;
  const authorization = headers.get(VIEWER_AUTHORIZATION);
  headers.delete(VIEWER_HOST);
  headers.delete(VIEWER_AUTHORIZATION);
  headers.set('host', host);
  if (authorization !== null) headers.set('authorization', authorization);
  const viewer = { rawPath: paths.rawPath, signedPath: paths.rawPath };
  return vouched && address !== null && isIP(address) !== 0 ? { ...viewer, viewerAddress: address } : viewer;
}

export interface RestRequestOptions {
  /** The stack's edge key (CAIRN_EDGE_KEY): with it, the viewer's address of a request from the distribution is taken. */
  edgeKey?: string;
}

export function restToHttpRequest(event: APIGatewayProxyEvent, options: RestRequestOptions = {}): HttpRequest {
  const headers = new Headers();
  const add = (name: string, value: string) => {
    try {
      // Text in the event, bytes in the core, as in lambda.ts (header-bytes.ts).
      headers.append(name, bytesOfText(value));
    } catch {
      // A value Headers refuses is dropped, as the other doors do; signature checks then fail cleanly.
    }
  };
  if (event.multiValueHeaders && Object.keys(event.multiValueHeaders).length) {
    for (const [name, values] of Object.entries(event.multiValueHeaders)) for (const value of values ?? []) add(name, value);
  } else {
    for (const [name, value] of Object.entries(event.headers ?? {})) if (value !== undefined) add(name, value);
  }
  const method = event.httpMethod.toUpperCase();
  let body: ReadableStream<Uint8Array> | null = null;
  if (event.body !== undefined && event.body !== null && method !== 'GET' && method !== 'HEAD') {
    const bytes = event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8');
    // API Gateway has the whole body before it invokes: when the client sent
    // none (chunked), its length is known here, so size limits still apply.
    if (!headers.has('content-length')) headers.set('content-length', String(bytes.length));
    body = new Response(new Uint8Array(bytes)).body;
  }
  const { rawPath, signedPath, viewerAddress } = viewerSigned(headers, restPaths(event), options.edgeKey);
  return {
    method,
    rawPath,
    ...(signedPath !== rawPath ? { signedPath } : {}),
    rawQuery: restRawQuery(event),
    headers,
    body,
    signal: new AbortController().signal,
    // The TCP peer API Gateway saw, not a header: https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html ($context.identity.sourceIp);
    // through the storage distribution that is CloudFront's, so the viewer's address it vouches for (viewerSigned).
    remoteAddress: viewerAddress ?? event.requestContext?.identity?.sourceIp ?? undefined,
    // API Gateway endpoints are HTTPS only: https://docs.aws.amazon.com/apigateway/latest/developerguide/data-protection-encryption.html
    secure: true,
  };
}

/** A response's headers as a REST API result carries them: one value each, and every Set-Cookie in multiValueHeaders. */
function restHeaders(response: Response): { headers: Record<string, string>; multiValueHeaders?: Record<string, string[]> } {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = textOfBytes(value);
  });
  const cookies = response.headers.getSetCookie().map(textOfBytes);
  return cookies.length ? { headers, multiValueHeaders: { 'set-cookie': cookies } } : { headers };
}

/** What a streaming handler gives middy for a REST API: the prelude's fields (statusCode, headers, multiValueHeaders) and the body. */
export interface RestStreamingResult {
  statusCode: number;
  headers: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
  body: ReadableStream<Uint8Array> | string;
}

export function toRestStreamingResult(response: Response, method: string): RestStreamingResult {
  let body: RestStreamingResult['body'] = '';
  if (method === 'HEAD') void response.body?.cancel();
  else if (response.body) body = response.body;
  return { statusCode: response.status, ...restHeaders(response), body };
}

export async function toRestResult(response: Response, method: string): Promise<APIGatewayProxyResult> {
  const bytes = method === 'HEAD' || !response.body ? Buffer.alloc(0) : Buffer.from(await response.arrayBuffer());
  if (method === 'HEAD') await response.body?.cancel();
  return { statusCode: response.status, ...restHeaders(response), body: bytes.toString('base64'), isBase64Encoded: true };
}
