/** XML request bodies (CreateBucket, DeleteObjects, CompleteMultipartUpload, ACLs): read bounded, verified, parsed. */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { errors, S3Error } from './errors.js';
import type { S3Context } from './context.js';
import { payloadMode, requestBody } from './sigv4/payload.js';
import { contentMd5 } from './request-headers.js';
import { checksumPlan } from './checksums.js';
import { createHash } from 'node:crypto';

/** Request bodies: at most this much XML is read (DeleteObjects of 1000 long keys fits). */
export const MAX_XML_BODY = 2 * 1024 * 1024;

const PREDEFINED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** XML 1.0's Char production: what a character reference may name. */
function isXmlChar(code: number): boolean {
  return (
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}

/**
 * XML 1.0's references, decoded in one pass so `&amp;#34;` stays `&#34;`:
 * the five predefined entities and character references (`&#34;`,
 * `&#x22;`), which Go's encoding/xml writes for `"`, `'`, tab, newline and
 * CR (rclone, minio-go, aws-sdk-go). fast-xml-parser's default decoder
 * leaves character references as text, so a Go client's CompleteMultipartUpload
 * ETags never matched and its DeleteObjects deleted keys nobody had. Any other
 * entity (HTML's, or one a DOCTYPE declares) is not XML a client sends: MalformedXML.
 */
const xmlReferences = {
  setExternalEntities() {},
  addInputEntities() {},
  reset() {},
  setXmlVersion() {},
  decode(text: string): string {
    if (!text.includes('&')) return text;
    return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z_][\w.-]*);/g, (_match, ref: string) => {
      if (ref[0] !== '#') {
        const char = PREDEFINED[ref];
        if (char === undefined) throw errors.malformedXml();
        return char;
      }
      const code = ref[1] === 'x' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!isXmlChar(code)) throw errors.malformedXml();
      return String.fromCodePoint(code);
    });
  },
};

/**
 * Parses an XML request body that has already been read (and its payload
 * hash verified). Elements become objects; repeated elements arrays when
 * named in `arrays`; text is kept as strings, never coerced to numbers.
 */
export function parseXmlBody(body: Buffer, root: string, arrays: string[] = []): Record<string, unknown> {
  const text = body.toString('utf8');
  if (!text.trim() || XMLValidator.validate(text) !== true) throw errors.malformedXml();
  const parser = new XMLParser({
    ignoreAttributes: true,
    removeNSPrefix: true,
    parseTagValue: false,
    trimValues: false,
    processEntities: true,
    entityDecoder: xmlReferences,
    isArray: (name) => arrays.includes(name),
  });
  let doc: Record<string, unknown>;
  try {
    doc = parser.parse(text) as Record<string, unknown>;
  } catch (err) {
    throw err instanceof S3Error ? err : errors.malformedXml();
  }
  const value = doc[root];
  if (value === undefined) throw errors.malformedXml();
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

/**
 * Reads the whole (small) body, with its payload hash and Content-MD5
 * verified, and its `x-amz-checksum-*` unless `bodyChecksum` is false (in
 * CompleteMultipartUpload those headers describe the object, not the body).
 */
export async function readSmallBody(ctx: S3Context, max = MAX_XML_BODY, { bodyChecksum = true } = {}): Promise<Buffer> {
  const { req } = ctx;
  const declared = Number(req.headers.get('x-amz-decoded-content-length') ?? req.headers.get('content-length') ?? '0');
  if (declared > max) throw new S3Error('MaxMessageLengthExceeded', 400, 'Your request was too big.');
  const expectedMd5 = contentMd5(req.headers);
  const checksum = bodyChecksum ? checksumPlan(req.headers) : undefined;
  const trailers = new Map<string, string>();
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of requestBody(req, payloadMode(req, ctx.auth.signing), trailers)) {
    checksum?.update(chunk);
    length += chunk.byteLength;
    if (length > max) throw new S3Error('MaxMessageLengthExceeded', 400, 'Your request was too big.');
    chunks.push(Buffer.from(chunk));
  }
  const body = Buffer.concat(chunks);
  await checksum?.finish(trailers);
  if (expectedMd5 !== undefined && createHash('md5').update(body).digest('hex') !== expectedMd5) throw errors.badDigest();
  return body;
}
