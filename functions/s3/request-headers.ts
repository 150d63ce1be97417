/**
 * What S3 requests declare in headers, read the same by every operation
 * that takes them: the headers an object keeps (PutObject, CopyObject,
 * CreateMultipartUpload) and Content-MD5 (any body, XML ones too). The
 * ACL headers are acl.ts's.
 */
import type { ObjectRecord } from '../core/data/objects.js';
import { decodeWords } from '../core/http/encoded-words.js';
import { textOfBytes } from '../core/http/header-bytes.js';
import { errors, S3Error } from './errors.js';

/**
 * User metadata is at most 2 KB, "the sum of the number of bytes in the
 * UTF-8 encoding of each key and value"
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html#UserMetadata);
 * more is S3's MetadataTooLarge
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html#ErrorCodeList).
 */
export const MAX_METADATA_BYTES = 2048;

/**
 * A user metadata value as stored: its bytes read as UTF-8 (what clients
 * send: boto3 and the AWS SDKs write a value's UTF-8; bytes that are not
 * UTF-8 are read one character a byte, Latin-1), then its RFC 2047
 * encoded-words decoded, as S3 does before storing. S3 itself reads the
 * bytes as Latin-1, so a UTF-8 "ö" comes back from it as the encoded-word
 * of "Ã¶" (MinIO's report, https://github.com/minio/minio/pull/21282); here
 * it comes back as the encoded-word of "ö", which a client that decodes
 * encoded-words turns back into what it sent.
 */
export function metadataValue(headerValue: string): string {
  return decodeWords(textOfBytes(headerValue));
}

/** Stored headers of an object, as PutObject, CopyObject (REPLACE) and CreateMultipartUpload take them. */
export function objectHeaders(
  headers: Headers,
): Pick<
  ObjectRecord,
  'contentType' | 'cacheControl' | 'contentDisposition' | 'contentEncoding' | 'contentLanguage' | 'expires' | 'metadata'
> {
  const metadata: Record<string, string> = {};
  let size = 0;
  headers.forEach((value, name) => {
    if (!name.startsWith('x-amz-meta-')) return;
    const key = name.slice('x-amz-meta-'.length);
    const text = metadataValue(value);
    metadata[key] = text;
    size += Buffer.byteLength(key) + Buffer.byteLength(text);
  });
  if (size > MAX_METADATA_BYTES) {
    throw new S3Error('MetadataTooLarge', 400, 'Your metadata headers exceed the maximum allowed metadata size.', {
      Size: String(size),
      MaxSizeAllowed: String(MAX_METADATA_BYTES),
    });
  }
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

/**
 * What a write may ask for that S3 has and Cairn does not: server-side
 * encryption (content on IPFS is public by CID: encrypt before storing),
 * object lock, website redirects, storage classes other than STANDARD.
 * Such a request is refused with S3's NotImplemented naming the header,
 * rather than stored without what it asked for. A header that asks for
 * nothing (`x-amz-object-lock-legal-hold: OFF`, an empty value) passes.
 */
const UNSUPPORTED_WRITE_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['x-amz-server-side-encryption', 'server-side encryption'],
  ['x-amz-server-side-encryption-aws-kms-key-id', 'server-side encryption with KMS keys'],
  ['x-amz-server-side-encryption-context', 'server-side encryption with KMS keys'],
  ['x-amz-server-side-encryption-bucket-key-enabled', 'S3 Bucket Keys'],
  ['x-amz-server-side-encryption-customer-algorithm', 'server-side encryption with customer-provided keys'],
  ['x-amz-server-side-encryption-customer-key', 'server-side encryption with customer-provided keys'],
  ['x-amz-copy-source-server-side-encryption-customer-algorithm', 'server-side encryption with customer-provided keys'],
  ['x-amz-object-lock-mode', 'object lock'],
  ['x-amz-object-lock-retain-until-date', 'object lock'],
  ['x-amz-object-lock-legal-hold', 'object lock legal holds'],
  ['x-amz-website-redirect-location', 'website redirect locations'],
];

/** Refuses a PutObject, CopyObject, CreateMultipartUpload, UploadPart(Copy) or POST upload that asks for one of them. */
export function checkUnsupportedWriteHeaders(headers: Headers): void {
  for (const [name, what] of UNSUPPORTED_WRITE_HEADERS) {
    const value = headers.get(name)?.trim();
    if (!value) continue;
    if (name === 'x-amz-object-lock-legal-hold' && value.toUpperCase() === 'OFF') continue;
    if (name === 'x-amz-server-side-encryption-bucket-key-enabled' && value.toLowerCase() === 'false') continue;
    throw errors.notImplemented(`${name} (${what}: Cairn does not have it; docs/storage.md lists what it leaves out)`);
  }
  const storageClass = headers.get('x-amz-storage-class')?.trim();
  if (storageClass && storageClass !== 'STANDARD') {
    throw errors.notImplemented(`x-amz-storage-class "${storageClass}" (Cairn has one storage class, STANDARD)`);
  }
}
