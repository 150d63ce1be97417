/**
 * aws-chunked bodies: `<hex size>[;chunk-signature=<sig>]\r\n<data>\r\n`
 * repeated, a zero-size chunk, then optional trailing headers and a blank
 * line. The framing is decoded here and never stored. Signed chunks chain
 * from the seed signature; each is verified as soon as its data has passed.
 */
import { createHash, type Hash } from 'node:crypto';
import { S3Error, errors } from '../errors.js';
import { EMPTY_SHA256, hmac, sha256Hex, signaturesEqual } from './canonical.js';
import type { SigningContext } from './header.js';

const MAX_LINE = 4096;
const CRLF = Buffer.from('\r\n');

const malformed = (why: string) => new S3Error('IncompleteBody', 400, `The aws-chunked request body is malformed: ${why}`);

class ByteQueue {
  private chunks: Buffer[] = [];
  length = 0;
  push(chunk: Uint8Array) {
    const b = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.chunks.push(b);
    this.length += b.length;
  }
  /** Index of CRLF within the first `limit` bytes, or -1. */
  indexOfCrlf(limit: number): number {
    const head = this.peek(Math.min(limit, this.length));
    return head.indexOf(CRLF);
  }
  peek(n: number): Buffer {
    if (this.chunks.length === 1 || n <= (this.chunks[0]?.length ?? 0)) return this.chunks[0]!.subarray(0, n);
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined.subarray(0, n);
  }
  take(n: number): Buffer {
    const out = this.peek(n);
    const first = this.chunks[0]!;
    if (n === first.length) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    this.length -= n;
    return Buffer.from(out);
  }
  /** Takes up to n bytes without copying across chunk boundaries. */
  takeSome(n: number): Buffer {
    const first = this.chunks[0]!;
    const k = Math.min(n, first.length);
    const out = first.subarray(0, k);
    if (k === first.length) this.chunks.shift();
    else this.chunks[0] = first.subarray(k);
    this.length -= k;
    return out;
  }
}

export async function* decodeAwsChunked(
  source: AsyncIterable<Uint8Array>,
  signing: SigningContext | undefined,
  trailers: Map<string, string>,
): AsyncGenerator<Uint8Array> {
  const queue = new ByteQueue();
  const it = source[Symbol.asyncIterator]();
  let ended = false;
  const fill = async (): Promise<boolean> => {
    if (ended) return false;
    const next = await it.next();
    if (next.done) {
      ended = true;
      return false;
    }
    queue.push(next.value);
    return true;
  };
  const readLine = async (): Promise<string> => {
    for (;;) {
      const at = queue.length ? queue.indexOfCrlf(MAX_LINE + 2) : -1;
      if (at >= 0) {
        const line = queue.take(at).toString('latin1');
        queue.take(2);
        return line;
      }
      if (queue.length > MAX_LINE) throw malformed('a chunk header line is too long');
      if (!(await fill())) throw errors.incompleteBody();
    }
  };
  let previous = signing?.seedSignature;
  for (;;) {
    const header = await readLine();
    const semi = header.indexOf(';');
    const sizeText = (semi < 0 ? header : header.slice(0, semi)).trim();
    if (!/^[0-9a-fA-F]{1,16}$/.test(sizeText)) throw malformed(`bad chunk size "${sizeText.slice(0, 32)}"`);
    const size = parseInt(sizeText, 16);
    let claimed: string | undefined;
    if (semi >= 0) {
      const ext = header.slice(semi + 1).trim();
      if (!ext.startsWith('chunk-signature=')) throw malformed('unknown chunk extension');
      claimed = ext.slice('chunk-signature='.length);
    }
    if (signing && !claimed) throw errors.signatureDoesNotMatch();
    const hash: Hash | undefined = signing ? createHash('sha256') : undefined;
    let remaining = size;
    while (remaining > 0) {
      if (!queue.length && !(await fill())) throw errors.incompleteBody();
      const piece = queue.takeSome(remaining);
      remaining -= piece.length;
      hash?.update(piece);
      yield piece;
    }
    if (signing && hash) {
      const toSign = ['AWS4-HMAC-SHA256-PAYLOAD', signing.amzDate, signing.scope, previous, EMPTY_SHA256, hash.digest('hex')].join('\n');
      const expected = hmac(signing.key, toSign).toString('hex');
      if (!signaturesEqual(expected, claimed!)) throw errors.signatureDoesNotMatch();
      previous = expected;
    }
    if (size === 0) break;
    while (queue.length < 2) if (!(await fill())) throw errors.incompleteBody();
    if (!queue.take(2).equals(CRLF)) throw malformed('chunk data is not followed by CRLF');
  }
  // Trailing headers (possibly none), ended by an empty line or the end of the body.
  for (;;) {
    if (!queue.length && !(await fill())) return;
    const line = await readLine();
    if (line === '') return;
    const colon = line.indexOf(':');
    if (colon <= 0) throw malformed('bad trailing header');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'x-amz-trailer-signature' && signing) {
      const canonicalTrailers = [...trailers].map(([k, v]) => `${k}:${v}\n`).join('');
      const toSign = ['AWS4-HMAC-SHA256-TRAILER', signing.amzDate, signing.scope, previous, sha256Hex(canonicalTrailers)].join('\n');
      if (!signaturesEqual(hmac(signing.key, toSign).toString('hex'), value)) throw errors.signatureDoesNotMatch();
      continue;
    }
    trailers.set(name, value);
  }
}
