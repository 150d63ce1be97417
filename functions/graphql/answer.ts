/**
 * What the large values of an answer (deploy logs) may take, per request and
 * for the whole process, and how they go out without holding the event loop.
 *
 * - Each request has a byte account: a log is charged its size before it is
 *   read (LogStore.readAdmitted), and past LIMITS.answerBytes the request
 *   fails with RESPONSE_TOO_LARGE, reading nothing more.
 * - All requests together hold at most LIMITS.answerBytesInFlight of large
 *   values: a request reserves its estimate (limits.ts, at most its budget)
 *   at the gate before it runs, once, so no request waits while holding
 *   bytes (two such would wait on each other), and gives them back when its
 *   answer has been written. One that cannot get them within
 *   LIMITS.answerWaitMs is SERVICE_UNAVAILABLE (HTTP 503, Retry-After).
 * - On the node:http door an answer's large values are left out of the JSON
 *   Apollo builds (a placeholder stands in each) and written in its place in
 *   64 KiB pieces, one per pull of the socket: JSON.stringify of a 16 MiB
 *   answer took 25-170 ms here and encoding it to UTF-8 as long again, each
 *   in one turn of the event loop. A log stays the bytes it was read as and
 *   each piece is escaped as bytes (escapeUtf8): made one string, a 4 MiB log costs
 *   one long turn to decode (150-280 ms on a loaded machine, for text beyond
 *   ASCII) or to flatten (30-45 ms) at its first use. The Lambda door
 *   answers one request per instance and its answer is one string anyway,
 *   so there the values are strings in place.
 */
import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import type { GraphQLError } from 'graphql';
import { graphqlError } from './errors.js';
import { LIMITS } from './limits.js';

const MiB = 1024 * 1024;
/** Bytes (or UTF-16 code units) of a large value per piece written: 64 Ki, up to 6x that once escaped (control characters). */
const PIECE = 64 * 1024;

const HEX = '0123456789abcdef';
const SHORT: Record<number, number> = { 0x08: 0x62, 0x09: 0x74, 0x0a: 0x6e, 0x0c: 0x66, 0x0d: 0x72, 0x22: 0x22, 0x5c: 0x5c };

/**
 * A piece of valid UTF-8 as the inside of a JSON string, byte for byte what
 * JSON.stringify writes: only bytes under 0x20, `"` and `\` change (no byte
 * of a multi-byte character is below 0x80). A piece with nothing to escape
 * goes as it is. Far cheaper than decoding the piece to a string, escaping
 * that and encoding it again, which is what an answer's CPU went to.
 */
function escapeUtf8(piece: Buffer): Buffer {
  let extra = 0;
  for (let i = 0; i < piece.length; i++) {
    const b = piece[i]!;
    if (b < 0x20) extra += SHORT[b] === undefined ? 5 : 1;
    else if (b === 0x22 || b === 0x5c) extra += 1;
  }
  if (extra === 0) return piece;
  const out = Buffer.allocUnsafe(piece.length + extra);
  let o = 0;
  for (let i = 0; i < piece.length; i++) {
    const b = piece[i]!;
    if (b >= 0x20 && b !== 0x22 && b !== 0x5c) {
      out[o++] = b;
      continue;
    }
    out[o++] = 0x5c;
    const short = SHORT[b];
    if (short !== undefined) out[o++] = short;
    else {
      out[o++] = 0x75; // u00XX
      out[o++] = 0x30;
      out[o++] = 0x30;
      out[o++] = HEX.charCodeAt(b >> 4);
      out[o++] = HEX.charCodeAt(b & 15);
    }
  }
  return out;
}

/** Where to end a piece of UTF-8 at or before `end`: never inside a character (at most 3 bytes back; invalid bytes are cut anywhere). */
function utf8Boundary(bytes: Uint8Array, start: number, end: number): number {
  if (end >= bytes.length) return bytes.length;
  let at = end;
  while (at > start && end - at < 3 && (bytes[at]! & 0xc0) === 0x80) at--;
  return (bytes[at]! & 0xc0) === 0x80 || at === start ? end : at;
}

export const mib = (bytes: number) => `${(bytes / MiB).toFixed(bytes % MiB === 0 ? 0 : 1)} MiB`;

/**
 * A counting semaphore over bytes, first come first served: a large request
 * at the head is not overtaken forever by small ones behind it.
 */
export class ByteGate {
  private held = 0;
  private readonly waiting: Array<{ bytes: number; grant: () => void }> = [];

  constructor(readonly capacity: number) {}

  get inUse(): number {
    return this.held;
  }

  /** Takes `bytes` (at most the capacity) when free; false if that did not happen within `timeoutMs`. */
  acquire(bytes: number, timeoutMs: number): Promise<boolean> {
    const want = Math.min(bytes, this.capacity);
    if (this.waiting.length === 0 && this.held + want <= this.capacity) {
      this.held += want;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve) => {
      const entry = {
        bytes: want,
        grant: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(entry), 1);
        // The one that timed out may have been what held the others back.
        this.admit();
        resolve(false);
      }, timeoutMs);
      this.waiting.push(entry);
    });
  }

  /** Takes `bytes` only if free now (and nobody waits). */
  tryAcquire(bytes: number): boolean {
    if (this.waiting.length > 0 || this.held + bytes > this.capacity) return false;
    this.held += bytes;
    return true;
  }

  release(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
    this.admit();
  }

  private admit(): void {
    while (this.waiting.length > 0 && this.held + this.waiting[0]!.bytes <= this.capacity) {
      const next = this.waiting.shift()!;
      this.held += next.bytes;
      next.grant();
    }
  }
}

/** The process's one gate: every request of every door of this process draws on it. */
export const answerGate = new ByteGate(LIMITS.answerBytesInFlight);

export interface AnswerOptions {
  /** Whether large values go out as pieces after the JSON (the node:http door), rather than inside it. */
  stream?: boolean;
  budget?: number;
  gate?: ByteGate;
}

/** One request's account of its answer's large values. */
export class AnswerAccount {
  readonly budget: number;
  private readonly gate: ByteGate;
  /** Whether large values go out after the JSON (the door then releases them when written: body()). */
  readonly streams: boolean;
  /** Bytes held at the gate for this request. */
  private reserved = 0;
  /** Bytes of large values charged so far. */
  private charged = 0;
  /**
   * Set once the answer cannot be given (over its budget: HTTP 400; no room
   * at the gate: 503): nothing more is read, and a query's answer is this
   * error alone (the answerBytes plugin of server.ts).
   */
  failure?: { error: GraphQLError; status: number };
  /** Large values left out of the JSON, by placeholder, when streaming. */
  private readonly values = new Map<string, string | Buffer>();
  /** What placeholders carry so an answer's own text cannot pose as one; drawn when the first value is left out. */
  private nonce?: string;

  constructor(options: AnswerOptions = {}) {
    this.budget = options.budget ?? LIMITS.answerBytes;
    this.gate = options.gate ?? answerGate;
    this.streams = options.stream ?? false;
  }

  /** Holds `bytes` (the request's estimate, at most its budget) at the gate; false when they did not come in time. */
  async reserve(bytes: number, timeoutMs: number = LIMITS.answerWaitMs): Promise<boolean> {
    const want = Math.min(bytes, this.budget);
    if (want <= 0) return true;
    if (!(await this.gate.acquire(want, timeoutMs))) return false;
    this.reserved += want;
    return true;
  }

  /**
   * Charges a large value's bytes before it is read: throws RESPONSE_TOO_LARGE
   * past the budget (and from then on), SERVICE_UNAVAILABLE when the value is
   * more than was reserved and the gate has no room for the rest.
   */
  charge(bytes: number, what = 'a deploy log'): void {
    if (this.failure) throw this.failure.error;
    const total = this.charged + bytes;
    if (total > this.budget) {
      const error = graphqlError(
        'RESPONSE_TOO_LARGE',
        `The answer would be larger than the limit of ${mib(this.budget)} for large values (${what} of ${mib(bytes)} would bring it to ${mib(total)}): ask for fewer deploy logs at a time`,
        { limit: { what: 'Answer bytes', actual: total, max: this.budget } },
      );
      this.failure = { error, status: 400 };
      throw error;
    }
    if (total > this.reserved) {
      const more = total - this.reserved;
      if (!this.gate.tryAcquire(more)) {
        this.failure = { error: busy(), status: 503 };
        throw this.failure.error;
      }
      this.reserved += more;
    }
    this.charged = total;
  }

  /** What a resolver returns for a large value (text, or UTF-8 bytes): the text, or its placeholder when the door streams. */
  deliver(value: string | Buffer): string {
    if (!this.streams) return typeof value === 'string' ? value : value.toString('utf8');
    const token = `cairn-large-value:${(this.nonce ??= randomBytes(12).toString('hex'))}:${this.values.size}`;
    this.values.set(token, value);
    return token;
  }

  /** After execution: what was reserved and not used goes back at once. */
  settle(): void {
    if (this.reserved > this.charged) {
      this.gate.release(this.reserved - this.charged);
      this.reserved = this.charged;
    }
  }

  /** Everything back to the gate (once the answer is written, or will not be). */
  release(): void {
    this.values.clear();
    if (this.reserved > 0) this.gate.release(this.reserved);
    this.reserved = 0;
  }

  /** The answer's large values are dropped unsent (the answer became an error). */
  drop(): void {
    this.values.clear();
  }

  /**
   * The body for Apollo's JSON: the JSON itself when no value was left out
   * (everything goes back to the gate now); otherwise a stream of the JSON
   * with each placeholder replaced by its value, escaped piece by piece,
   * which gives everything back when it ends or is cancelled.
   */
  body(json: string): string | ReadableStream<Uint8Array> {
    if (this.values.size === 0) {
      this.release();
      return json;
    }
    const parts: Array<string | { value: string | Buffer }> = [];
    const placeholder = new RegExp(`"(cairn-large-value:${this.nonce}:\\d+)"`, 'g');
    let at = 0;
    for (let m = placeholder.exec(json); m; m = placeholder.exec(json)) {
      const value = this.values.get(m[1]!);
      if (value === undefined) continue;
      parts.push(json.slice(at, m.index + 1), { value });
      at = m.index + m[0].length - 1;
    }
    parts.push(json.slice(at));
    this.values.clear();
    const encoder = new TextEncoder();
    let part = 0;
    let offset = 0;
    const next = (): string | Uint8Array | undefined => {
      while (part < parts.length) {
        const current = parts[part]!;
        if (typeof current === 'string') {
          part++;
          if (current) return current;
          continue;
        }
        if (offset >= current.value.length) {
          part++;
          offset = 0;
          continue;
        }
        const value = current.value;
        const start = offset;
        let end = Math.min(offset + PIECE, value.length);
        offset = end;
        if (typeof value === 'string') {
          // Never between the two halves of a surrogate pair.
          const last = value.charCodeAt(end - 1);
          if (end < value.length && last >= 0xd800 && last <= 0xdbff) offset = --end;
          return JSON.stringify(value.slice(start, end)).slice(1, -1);
        }
        offset = end = utf8Boundary(value, start, end);
        const piece = value.subarray(start, end);
        // Invalid UTF-8 is decoded as a whole decode would (U+FFFD for what is not a character).
        return isUtf8(piece) ? escapeUtf8(piece) : JSON.stringify(piece.toString('utf8')).slice(1, -1);
      }
      return undefined;
    };
    return new ReadableStream<Uint8Array>(
      {
        pull: (controller) => {
          const piece = next();
          if (piece === undefined) {
            parts.length = 0;
            this.release();
            controller.close();
          } else controller.enqueue(typeof piece === 'string' ? encoder.encode(piece) : piece);
        },
        cancel: () => {
          parts.length = 0;
          this.release();
        },
      },
      { highWaterMark: 0 },
    );
  }
}

export const busy = () =>
  graphqlError('SERVICE_UNAVAILABLE', 'The server is busy sending other large answers (deploy logs): try again in a moment');
