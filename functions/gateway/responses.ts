/** The gateway's answers: byte ranges and preconditions, and short plain-text errors a person can read. */
import { evaluatePreconditions, rangeStillApplies, type Validators } from '../core/http/conditional.js';
import { parseRange } from '../core/http/range.js';
import type { HttpRequest } from '../core/http/types.js';

export function textResponse(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff', ...headers },
  });
}

/** 416 for a Range that starts past the end. */
export function rangeNotSatisfiable(size: number): Response {
  return textResponse(416, 'Range Not Satisfiable\n', { 'content-range': `bytes */${size}` });
}

/** Headers a 304 repeats from the 200 it stands for (RFC 9110 section 15.4.5). */
const NOT_MODIFIED_HEADERS = ['etag', 'last-modified', 'cache-control', 'expires', 'content-location', 'vary', 'x-ipfs-path'];

export interface Representation {
  size: number;
  /** The headers of a full 200 answer (without Content-Length). */
  headers: Record<string, string>;
  validators: Validators;
  /** Opens the bytes `[offset, offset + length)`; called only when a body is sent. */
  open(range: { offset: number; length: number }): Promise<ReadableStream<Uint8Array>>;
}

/**
 * Answers GET or HEAD for one representation: preconditions (304, 412), a
 * single byte range (206, 416, If-Range), then the bytes, streamed.
 */
export async function serveRepresentation(req: HttpRequest, rep: Representation): Promise<Response> {
  const headers: Record<string, string> = { 'accept-ranges': 'bytes', ...rep.headers };
  const precondition = evaluatePreconditions(req.headers, rep.validators);
  if (precondition === 412) return textResponse(412, 'Precondition Failed\n');
  if (precondition === 304) {
    const kept: Record<string, string> = {};
    for (const name of NOT_MODIFIED_HEADERS) if (headers[name] !== undefined) kept[name] = headers[name];
    return new Response(null, { status: 304, headers: kept });
  }
  const range = rangeStillApplies(req.headers, rep.validators) ? parseRange(req.headers.get('range'), rep.size) : undefined;
  if (range === 'unsatisfiable') return rangeNotSatisfiable(rep.size);
  const offset = range ? range.start : 0;
  const length = range ? range.end - range.start + 1 : rep.size;
  headers['content-length'] = String(length);
  if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${rep.size}`;
  const status = range ? 206 : 200;
  if (req.method === 'HEAD' || length === 0) return new Response(null, { status, headers });
  return new Response(await rep.open({ offset, length }), { status, headers });
}
