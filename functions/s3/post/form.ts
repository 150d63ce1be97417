/**
 * A streaming `multipart/form-data` reader for POST Object: the fields before
 * the file are read into memory under caps (their count, each one's size,
 * their total, each part's header block), and the file's bytes are handed
 * on as they arrive, never held whole. Everything after the file is ignored,
 * as S3 ignores it.
 *
 * The body is searched for the delimiter (`\r\n--<boundary>`, at most 74
 * bytes) with Buffer.indexOf, keeping back only the delimiter's length
 * minus one between chunks, so every byte is searched a bounded number of
 * times whatever the input: the work is linear in the body.
 */
import { S3Error } from '../errors.js';

/** The limits on what precedes the file (S3 documents no figure; these fit any real policy with room to spare). */
export const FORM_LIMITS = {
  /** Fields before the file. */
  fields: 64,
  /** One field's value. */
  fieldBytes: 20 * 1024,
  /** All fields' values together. */
  totalBytes: 64 * 1024,
  /** One part's header block. */
  headerBytes: 8 * 1024,
  /** Bytes before the first boundary (RFC 2046's preamble) and after the file. */
  preambleBytes: 1024,
  epilogueBytes: 64 * 1024,
};

export const malformedPost = (why?: string) =>
  new S3Error('MalformedPOSTRequest', 400, `The body of your POST request is not well-formed multipart/form-data.${why ? ` ${why}` : ''}`);

const preDataTooLarge = () =>
  new S3Error('MaxPostPreDataLengthExceededError', 400, 'Your POST request fields preceding the upload file were too large.', {
    MaxPostPreDataLength: String(FORM_LIMITS.totalBytes),
  });

/** The boundary of a `multipart/form-data` Content-Type, or undefined when it is not one. */
export function formBoundary(contentType: string | null): string | undefined {
  if (contentType === null) return undefined;
  const [type, ...params] = contentType.split(';');
  if (type!.trim().toLowerCase() !== 'multipart/form-data') return undefined;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'boundary') continue;
    let value = param.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    // RFC 2046 §5.1.1: 1 to 70 characters, none of them a control character.
    if (value.length < 1 || value.length > 70 || /[^\x20-\x7e]/.test(value)) throw malformedPost('The boundary is invalid.');
    return value;
  }
  throw malformedPost('The Content-Type names no boundary.');
}

export interface PostFile {
  /** The file part's `filename` (what `${filename}` in the key becomes). */
  filename: string;
  /** The file part's own Content-Type, if it had one. */
  contentType?: string;
  /** The file's bytes; throws MalformedPOSTRequest if the body ends before the file's closing boundary. */
  content: AsyncIterable<Uint8Array>;
  /** Stops reading the body (the upload is refused). */
  discard(): Promise<void>;
}

export interface PostForm {
  /** The fields before the file, by lower-cased name (S3 takes form field names case-insensitively), read as UTF-8. */
  fields: Map<string, string>;
  /**
   * The same fields' values as the bytes sent, one character a byte (a
   * ByteString): what a header's value is when it reaches the S3 code
   * (core/http/header-bytes.ts), so a field that becomes a header is read
   * as that header would be.
   */
  bytes: Map<string, string>;
  file: PostFile;
}

/**
 * Reads the fields up to the file part, and returns them with the file's
 * byte stream. A form without a file part is InvalidArgument, as S3 answers
 * it.
 */
export async function readPostForm(body: ReadableStream<Uint8Array> | null, boundary: string): Promise<PostForm> {
  if (!body) throw malformedPost();
  const parts = new PartReader(body, boundary);
  try {
    return await readFields(parts);
  } catch (err) {
    await parts.cancel();
    throw err;
  }
}

async function readFields(parts: PartReader): Promise<PostForm> {
  await parts.start();
  const fields = new Map<string, string>();
  const bytes = new Map<string, string>();
  let total = 0;
  for (;;) {
    const headers = await parts.headers();
    if (headers === undefined) throw noFile();
    const disposition = parseDisposition(headers.get('content-disposition'));
    const name = disposition.name.toLowerCase();
    if (name === 'file') {
      const type = headers.get('content-type');
      return {
        fields,
        bytes,
        file: {
          filename: disposition.filename ?? '',
          ...(type ? { contentType: type } : {}),
          content: parts.file(),
          discard: () => parts.cancel(),
        },
      };
    }
    if (fields.size >= FORM_LIMITS.fields) throw preDataTooLarge();
    const value = await parts.value(Math.min(FORM_LIMITS.fieldBytes, FORM_LIMITS.totalBytes - total));
    if (value === undefined) throw preDataTooLarge();
    total += value.length;
    if (fields.has(name))
      throw new S3Error('InvalidArgument', 400, `The POST form field ${name} was given more than once.`, { ArgumentName: name });
    fields.set(name, value.toString('utf8'));
    bytes.set(name, value.toString('latin1'));
  }
}

const noFile = () =>
  new S3Error('InvalidArgument', 400, 'POST requires exactly one file upload per request.', { ArgumentName: 'file', ArgumentValue: '0' });

/**
 * `form-data; name="key"; filename="a.txt"`: the name and the filename.
 * Browsers percent-encode `"`, CR and LF in them and leave backslashes as
 * they are (HTML's multipart/form-data encoding algorithm), so a quoted
 * value runs to the next `"`; a Windows path's backslashes separate its
 * segments.
 */
function parseDisposition(value: string | undefined): { name: string; filename?: string } {
  if (value === undefined) throw malformedPost('A part has no Content-Disposition.');
  const params = new Map<string, string>();
  const re = /;\s*([^=;\s]+)\s*=\s*(?:"([^"]*)"|([^;]*))/g;
  const semi = value.indexOf(';');
  if ((semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase() !== 'form-data') {
    throw malformedPost('A part is not form-data.');
  }
  for (const m of value.slice(semi < 0 ? value.length : semi).matchAll(re)) {
    const name = m[1]!.toLowerCase();
    if (!params.has(name)) params.set(name, m[2] ?? m[3]!.trim());
  }
  const name = params.get('name');
  if (name === undefined) throw malformedPost('A part has no name.');
  const filename = params.get('filename');
  // Only the last path segment: some browsers send the path the file came from.
  return {
    name,
    ...(filename !== undefined ? { filename: filename.slice(Math.max(filename.lastIndexOf('/'), filename.lastIndexOf('\\')) + 1) } : {}),
  };
}

const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

/** The body as a sequence of parts: a small buffer over the stream's reader. */
class PartReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  /** `\r\n--<boundary>`: what ends every part. */
  private readonly delimiter: Buffer;
  private buf: Buffer = Buffer.alloc(0);
  private ended = false;
  /** Set once the closing delimiter (`--<boundary>--`) was read. */
  private closed = false;

  constructor(body: ReadableStream<Uint8Array>, boundary: string) {
    this.reader = body.getReader();
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
  }

  /** Appends the next chunk; false once the body has ended. */
  private async more(): Promise<boolean> {
    if (this.ended) return false;
    const { done, value } = await this.reader.read().catch((err: unknown) => {
      throw err instanceof S3Error ? err : new S3Error('IncompleteBody', 400, 'The request body ended before it was complete.');
    });
    if (done) {
      this.ended = true;
      return false;
    }
    const chunk = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    return true;
  }

  /** Finds `needle` in the buffer, reading more while it is not there and the buffer stays under `limit`; -1 past it. */
  private async find(needle: Buffer, limit: number): Promise<number> {
    let from = 0;
    for (;;) {
      const at = this.buf.indexOf(needle, from);
      if (at >= 0) return at <= limit ? at : -1;
      if (this.buf.length > limit + needle.length) return -1;
      from = Math.max(0, this.buf.length - needle.length + 1);
      if (!(await this.more())) throw malformedPost('The body ended before its closing boundary.');
    }
  }

  /** Skips the preamble and the first boundary (which has no CRLF before it when there is no preamble). */
  async start(): Promise<void> {
    // Seen as a delimiter whose CRLF is the body's start.
    this.buf = Buffer.from(CRLF);
    const at = await this.find(this.delimiter, FORM_LIMITS.preambleBytes + CRLF.length);
    if (at < 0) throw malformedPost('The body does not start with its boundary.');
    this.consume(at + this.delimiter.length);
  }

  /** Stops reading: the rest of the body is not wanted. */
  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {});
  }

  private consume(n: number): void {
    this.buf = this.buf.subarray(n);
  }

  /** After a delimiter: `--` closes the body, CRLF opens the next part. */
  private async afterDelimiter(): Promise<void> {
    while (this.buf.length < 2) if (!(await this.more())) throw malformedPost('The body ended after a boundary.');
    if (this.buf[0] === 0x2d && this.buf[1] === 0x2d) {
      this.closed = true;
      return;
    }
    // Transport padding (spaces, tabs) may follow a boundary before its CRLF (RFC 2046).
    const eol = await this.find(CRLF, 256);
    if (eol < 0 || /[^ \t]/.test(this.buf.subarray(0, eol).toString('latin1'))) throw malformedPost('A boundary is followed by garbage.');
    this.consume(eol + CRLF.length);
  }

  /** The next part's headers (lower-cased names), or undefined when the body closed. */
  async headers(): Promise<Map<string, string> | undefined> {
    await this.afterDelimiter();
    if (this.closed) return undefined;
    const map = new Map<string, string>();
    // A part with no headers at all: its blank line comes at once.
    while (this.buf.length < 2) if (!(await this.more())) throw malformedPost('The body ended inside a part.');
    if (this.buf[0] === 0x0d && this.buf[1] === 0x0a) {
      this.consume(2);
      return map;
    }
    const end = await this.find(HEADER_END, FORM_LIMITS.headerBytes);
    if (end < 0) throw malformedPost("A part's headers are too large.");
    for (const line of this.buf.subarray(0, end).toString('utf8').split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw malformedPost('A part has a malformed header.');
      const name = line.slice(0, colon).trim().toLowerCase();
      if (!map.has(name)) map.set(name, line.slice(colon + 1).trim());
    }
    this.consume(end + HEADER_END.length);
    return map;
  }

  /** A field's value, up to `max` bytes; undefined when it is longer. */
  async value(max: number): Promise<Buffer | undefined> {
    const at = await this.find(this.delimiter, max);
    if (at < 0) return undefined;
    const value = Buffer.from(this.buf.subarray(0, at));
    this.consume(at + this.delimiter.length);
    return value;
  }

  /**
   * The file's bytes as they arrive, up to its delimiter; then whatever
   * follows (parts S3 ignores) is discarded, up to a bound.
   */
  async *file(): AsyncGenerator<Uint8Array> {
    const keep = this.delimiter.length - 1;
    try {
      for (;;) {
        const at = this.buf.indexOf(this.delimiter);
        if (at >= 0) {
          if (at > 0) yield this.buf.subarray(0, at);
          this.consume(at + this.delimiter.length);
          break;
        }
        if (this.buf.length > keep) {
          const out = this.buf.subarray(0, this.buf.length - keep);
          this.buf = Buffer.from(this.buf.subarray(this.buf.length - keep));
          yield out;
        }
        if (!(await this.more())) throw malformedPost("The body ended before the file's closing boundary.");
      }
      await this.skipRest();
    } finally {
      this.reader.releaseLock();
    }
  }

  /** Reads (and drops) what follows the file, so the client's request is read whole; too much is not waited for. */
  private async skipRest(): Promise<void> {
    let skipped = 0;
    this.buf = Buffer.alloc(0);
    while (await this.more()) {
      skipped += this.buf.length;
      this.buf = Buffer.alloc(0);
      if (skipped > FORM_LIMITS.epilogueBytes) {
        await this.reader.cancel().catch(() => {});
        return;
      }
    }
  }
}
