/**
 * What S3 requests declare in headers, read the same by every operation
 * that takes them: the headers an object keeps (PutObject, CopyObject,
 * CreateMultipartUpload) and Content-MD5 (any body, XML ones too). The
 * ACL headers are acl.ts's.
 */
import type { ObjectRecord } from '../core/data/objects.js';
import { errors } from './errors.js';

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
