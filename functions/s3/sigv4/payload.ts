/**
 * The payload half of SigV4: what `x-amz-content-sha256` promises about the
 * body, and the decoded body stream that keeps that promise or throws.
 */
import { createHash } from 'node:crypto';
import { errors, S3Error } from '../errors.js';
import type { HttpRequest } from '../../core/http/types.js';
import type { SigningContext } from './header.js';
import { decodeAwsChunked } from './streaming.js';

export type PayloadMode =
  { kind: 'sha256'; hash: string } | { kind: 'unsigned' } | { kind: 'chunked'; signing?: SigningContext; trailer: boolean };

export function payloadMode(req: HttpRequest, signing: SigningContext | undefined): PayloadMode {
  const declared = req.headers.get('x-amz-content-sha256');
  // Framing, not a signature: an anonymous upload (to a public-read-write bucket) sends it too.
  if (declared === 'STREAMING-UNSIGNED-PAYLOAD-TRAILER') return { kind: 'chunked', trailer: true };
  if (!signing || !declared || declared === 'UNSIGNED-PAYLOAD') return { kind: 'unsigned' };
  switch (declared) {
    case 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD':
      return { kind: 'chunked', signing, trailer: false };
    case 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER':
      return { kind: 'chunked', signing, trailer: true };
  }
  if (!/^[0-9a-fA-F]{64}$/.test(declared)) {
    throw errors.invalidArgument(
      'x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-* or a SHA256 value',
      'x-amz-content-sha256',
      declared,
    );
  }
  return { kind: 'sha256', hash: declared.toLowerCase() };
}

async function* iterate(stream: ReadableStream<Uint8Array> | null): AsyncGenerator<Uint8Array> {
  if (!stream) return;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      if (value.byteLength) yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** The declared length of the decoded body, when the client gave one. */
export function declaredLength(req: HttpRequest, mode: PayloadMode): number | undefined {
  const raw = mode.kind === 'chunked' ? req.headers.get('x-amz-decoded-content-length') : req.headers.get('content-length');
  if (raw === null) return undefined;
  if (!/^\d+$/.test(raw)) throw errors.invalidArgument('invalid content length', 'content-length', raw);
  return Number(raw);
}

/**
 * The body as the client meant it: aws-chunked framing removed, chunk
 * signatures and the payload hash verified, the length checked. Errors are
 * thrown at the point they are detected, so a consumer that commits only
 * after the last byte never commits a bad body.
 *
 * `payloadHashByCaller`: the caller hashes the bytes itself (an upload's
 * hasher, off the request thread) and must check them with
 * checkPayloadHash() before it commits anything.
 */
export async function* requestBody(
  req: HttpRequest,
  mode: PayloadMode,
  trailers: Map<string, string> = new Map(),
  options: { payloadHashByCaller?: boolean } = {},
): AsyncGenerator<Uint8Array> {
  const expected = declaredLength(req, mode);
  const raw = iterate(req.body);
  const source = mode.kind === 'chunked' ? decodeAwsChunked(raw, mode.signing, trailers) : raw;
  const hash = mode.kind === 'sha256' && !options.payloadHashByCaller ? createHash('sha256') : undefined;
  let length = 0;
  try {
    for await (const chunk of source) {
      length += chunk.byteLength;
      if (expected !== undefined && length > expected) throw errors.incompleteBody();
      hash?.update(chunk);
      yield chunk;
    }
  } catch (err) {
    if (err instanceof S3Error) throw err;
    if (req.signal.aborted) throw new S3Error('RequestAborted', 400, 'The client closed the connection before the body was complete.');
    throw errors.incompleteBody();
  }
  if (expected !== undefined && length !== expected) throw errors.incompleteBody();
  if (hash) checkPayloadHash(mode, hash.digest());
}

/** The SHA-256 that `x-amz-content-sha256` promised, when it named one. */
export function promisedPayloadHash(mode: PayloadMode): string | undefined {
  return mode.kind === 'sha256' ? mode.hash : undefined;
}

/** Throws XAmzContentSHA256Mismatch unless the body's SHA-256 is the one the request promised. */
export function checkPayloadHash(mode: PayloadMode, sha256: Uint8Array): void {
  if (mode.kind !== 'sha256') return;
  const actual = Buffer.from(sha256).toString('hex');
  if (actual !== mode.hash) throw errors.contentSha256Mismatch(mode.hash, actual);
}
