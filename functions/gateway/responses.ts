/** The gateway's answers: byte ranges and preconditions, and short plain-text errors a person can read. */
import { evaluatePreconditions, rangeStillApplies, type Validators } from '../core/http/conditional.js';
import { randomBytes } from 'node:crypto';
import { parseRanges } from '../core/http/range.js';
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

/** The headers of a 304 standing for an answer with `headers`. */
export function notModifiedHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of NOT_MODIFIED_HEADERS) if (headers[name] !== undefined) kept[name] = headers[name];
  return kept;
}

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
 * byte range or several (206, 416, If-Range), then the bytes, streamed.
 */
export async function serveRepresentation(req: HttpRequest, rep: Representation): Promise<Response> {
  const headers: Record<string, string> = { 'accept-ranges': 'bytes', ...rep.headers };
  const precondition = evaluatePreconditions(req.headers, rep.validators);
  if (precondition === 412) return textResponse(412, 'Precondition Failed\n');
  if (precondition === 304) return new Response(null, { status: 304, headers: notModifiedHeaders(headers) });
  const ranges = rangeStillApplies(req.headers, rep.validators) ? parseRanges(req.headers.get('range'), rep.size) : undefined;
  if (ranges === 'unsatisfiable') return rangeNotSatisfiable(rep.size);
  if (ranges && ranges.length > 1) return multipartRanges(req, rep, headers, ranges);
  const range = ranges?.[0];
  const offset = range ? range.start : 0;
  const length = range ? range.end - range.start + 1 : rep.size;
  headers['content-length'] = String(length);
  if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${rep.size}`;
  const status = range ? 206 : 200;
  if (req.method === 'HEAD' || length === 0) return new Response(null, { status, headers });
  return new Response(await rep.open({ offset, length }), { status, headers });
}

/**
 * Several ranges in one answer: 206 `multipart/byteranges` (RFC 9110
 * section 14.6), each part with the representation's Content-Type and its
 * own Content-Range, in the order asked; the path gateway spec's "Range"
 * request header names this answer. Its length is known before the first
 * byte, and each part is read from the store only when the client reads it.
 */
function multipartRanges(
  req: HttpRequest,
  rep: Representation,
  headers: Record<string, string>,
  ranges: Array<{ start: number; end: number }>,
): Response {
  const boundary = randomBytes(12).toString('hex');
  const type = headers['content-type'];
  const heads = ranges.map((r, i) =>
    Buffer.from(
      `${i === 0 ? '' : '\r\n'}--${boundary}\r\n${type ? `Content-Type: ${type}\r\n` : ''}Content-Range: bytes ${r.start}-${r.end}/${rep.size}\r\n\r\n`,
    ),
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const length = ranges.reduce((sum, r, i) => sum + heads[i]!.byteLength + (r.end - r.start + 1), tail.byteLength);
  const { 'content-type': _, 'content-range': __, ...rest } = headers;
  const answer = { ...rest, 'content-type': `multipart/byteranges; boundary=${boundary}`, 'content-length': String(length) };
  if (req.method === 'HEAD') return new Response(null, { status: 206, headers: answer });
  let part = 0;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (reader) {
          const { done, value } = await reader.read();
          if (!done) return controller.enqueue(value);
          reader = undefined;
          part++;
        }
        if (part === ranges.length) {
          controller.enqueue(tail);
          return controller.close();
        }
        const r = ranges[part]!;
        reader = (await rep.open({ offset: r.start, length: r.end - r.start + 1 })).getReader();
        return controller.enqueue(heads[part]!);
      }
    },
    async cancel(reason) {
      await reader?.cancel(reason);
    },
  });
  return new Response(body, { status: 206, headers: answer });
}
