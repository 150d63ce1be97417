/**
 * The HTTP seam every HTTP-facing function is written against. It is the
 * web-standard Response plus a request type of our own: S3 signatures cover
 * the path exactly as the client sent it, and WHATWG URL parsing would
 * normalise `..`, `//` and some escapes away, so the raw target is kept.
 */
export interface HttpRequest {
  method: string;
  /** The path as sent, still percent-encoded (`/bucket/a%20b`). */
  rawPath: string;
  /**
   * The path the client signed, when a proxy in front took a prefix off
   * `rawPath` (API Gateway REST's stage, `/<stage>/bucket/key`): what SigV4
   * covers. Absent, it is `rawPath`.
   */
  signedPath?: string;
  /** The query string as sent, without the `?` (may be empty). */
  rawQuery: string;
  headers: Headers;
  /** The body as a stream, or null when there is none. */
  body: ReadableStream<Uint8Array> | null;
  /** Aborted when the client goes away before the response is sent. */
  signal: AbortSignal;
  /** The client's address as the door saw it (never from a header a client writes). */
  remoteAddress?: string;
  /** Whether the request came over TLS (bucket policies' aws:SecureTransport). */
  secure?: boolean;
}

export type HttpHandler = (req: HttpRequest) => Promise<Response>;

/** Decoded query parameters; a key without `=` maps to ''. First value wins. */
export function queryParams(rawQuery: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!rawQuery) return out;
  for (const part of rawQuery.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const k = decodeQueryComponent(eq < 0 ? part : part.slice(0, eq));
    const v = eq < 0 ? '' : decodeQueryComponent(part.slice(eq + 1));
    if (!out.has(k)) out.set(k, v);
  }
  return out;
}

export function decodeQueryComponent(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, '%20'));
  } catch {
    return s;
  }
}

/** Builds a request from parts, for tests and internal callers. */
export function httpRequest(
  method: string,
  target: string,
  init: { headers?: HeadersInit; body?: Uint8Array | string | ReadableStream<Uint8Array> | null } = {},
): HttpRequest {
  const q = target.indexOf('?');
  const body = init.body ?? null;
  return {
    method,
    rawPath: q < 0 ? target : target.slice(0, q),
    rawQuery: q < 0 ? '' : target.slice(q + 1),
    headers: new Headers(init.headers),
    body:
      body === null || body instanceof ReadableStream ? body : new Response(typeof body === 'string' ? body : new Uint8Array(body)).body,
    signal: new AbortController().signal,
  };
}
