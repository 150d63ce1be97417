/**
 * What S3 requests declare in headers, read the same by every operation
 * that takes them: the canned ACL (objects and buckets), the headers an
 * object keeps (PutObject, CopyObject, CreateMultipartUpload) and
 * Content-MD5 (any body, XML ones too).
 */
import type { ObjectRecord, CannedAcl } from '../core/data/objects.js';
import { errors } from './errors.js';

const CANNED_ACLS: readonly string[] = ['private', 'public-read', 'public-read-write', 'authenticated-read'];
/** S3's other canned ACLs: valid requests whose grantees (EC2, log delivery, a bucket owner other than the object's) Cairn has no notion of. */
const OTHER_S3_CANNED_ACLS: readonly string[] = ['aws-exec-read', 'bucket-owner-read', 'log-delivery-write'];

/** The canned ACL a request asks for (private when it names none), as buckets and objects take it. */
export function cannedAcl(headers: Headers): CannedAcl {
  for (const name of [
    'x-amz-grant-read',
    'x-amz-grant-write',
    'x-amz-grant-read-acp',
    'x-amz-grant-write-acp',
    'x-amz-grant-full-control',
  ]) {
    if (headers.has(name))
      throw errors.notImplemented(
        `${name} (Cairn supports the canned ACLs private, public-read, public-read-write and authenticated-read, sent with x-amz-acl)`,
      );
  }
  const acl = headers.get('x-amz-acl') ?? 'private';
  // The object's owner and the bucket's are one account in Cairn (objects belong to the bucket's owner), so this is private.
  if (acl === 'bucket-owner-full-control') return 'private';
  if (CANNED_ACLS.includes(acl)) return acl as CannedAcl;
  if (OTHER_S3_CANNED_ACLS.includes(acl)) {
    throw errors.notImplemented(`x-amz-acl "${acl}" (Cairn supports private, public-read, public-read-write and authenticated-read)`);
  }
  throw errors.invalidArgument(`"${acl}" is not a canned ACL.`, 'x-amz-acl', acl);
}

/** Stored headers of an object, as PutObject, CopyObject (REPLACE) and CreateMultipartUpload take them. */
export function objectHeaders(
  headers: Headers,
): Pick<
  ObjectRecord,
  'contentType' | 'cacheControl' | 'contentDisposition' | 'contentEncoding' | 'contentLanguage' | 'expires' | 'metadata'
> {
  const metadata: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (name.startsWith('x-amz-meta-')) metadata[name.slice('x-amz-meta-'.length)] = value;
  });
  // aws-chunked describes the upload's framing, not the object: it is never stored.
  const encoding = (headers.get('content-encoding') ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e && e.toLowerCase() !== 'aws-chunked')
    .join(', ');
  return {
    contentType: headers.get('content-type') || 'binary/octet-stream',
    cacheControl: headers.get('cache-control') ?? undefined,
    contentDisposition: headers.get('content-disposition') ?? undefined,
    contentEncoding: encoding || undefined,
    contentLanguage: headers.get('content-language') ?? undefined,
    expires: headers.get('expires') ?? undefined,
    metadata,
  };
}

/** Content-MD5 as hex, the form the import computes MD5 in, so the two compare as they are. */
export function contentMd5(headers: Headers): string | undefined {
  const raw = headers.get('content-md5');
  if (raw === null) return undefined;
  const bytes = Buffer.from(raw, 'base64');
  if (bytes.length !== 16 || bytes.toString('base64') !== raw.trim()) throw errors.invalidDigest();
  return bytes.toString('hex');
}
