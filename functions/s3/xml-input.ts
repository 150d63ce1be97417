/** XML request bodies (CreateBucket, DeleteObjects, CompleteMultipartUpload, ACLs): read bounded, verified, parsed. */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { errors, S3Error } from './errors.js';
import type { S3Context } from './context.js';
import { payloadMode, requestBody } from './sigv4/payload.js';
import { contentMd5 } from './put.js';
import { checksumPlan } from './checksums.js';
import { createHash } from 'node:crypto';

/** Request bodies: at most this much XML is read (DeleteObjects of 1000 long keys fits). */
export const MAX_XML_BODY = 2 * 1024 * 1024;


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
    isArray: (name) => arrays.includes(name),
  });
  let doc: Record<string, unknown>;
  try {
    doc = parser.parse(text) as Record<string, unknown>;
  } catch {
    throw errors.malformedXml();
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
