/**
 * The headers a stored object answers with. The S3 API (GetObject,
 * HeadObject) and the public gateway serve the same records, and a file
 * must read the same through either door.
 */
import type { ObjectRecord } from '../data/objects.js';
import { cidForms } from '../ipfs/cid.js';
import { encodeWord } from './encoded-words.js';

/** The object's CID in both forms, so a client can fetch the same bytes from any IPFS gateway. */
export function ipfsHeaders(cid: string): Record<string, string> {
  const { v1, v0 } = cidForms(cid);
  return { 'x-service-ipfs-hash': v1, 'x-service-ipfs-hash-v0': v0 };
}

/** The stored headers of an object and its validators; `etag` is the form the caller presents. */
export function objectResponseHeaders(record: ObjectRecord, etag = `"${record.etag}"`): Record<string, string> {
  const headers: Record<string, string> = {
    etag,
    'last-modified': new Date(record.lastModified).toUTCString(),
    'content-type': record.contentType,
    'accept-ranges': 'bytes',
    ...ipfsHeaders(record.cid),
  };
  if (record.cacheControl) headers['cache-control'] = record.cacheControl;
  if (record.contentDisposition) headers['content-disposition'] = record.contentDisposition;
  if (record.contentEncoding) headers['content-encoding'] = record.contentEncoding;
  if (record.contentLanguage) headers['content-language'] = record.contentLanguage;
  if (record.expires) headers['expires'] = record.expires;
  // Stored as text; answered as S3 answers it, non-ASCII as an RFC 2047 encoded-word (encoded-words.ts).
  for (const [name, value] of Object.entries(record.metadata ?? {})) headers[`x-amz-meta-${name}`] = encodeWord(value);
  return headers;
}
