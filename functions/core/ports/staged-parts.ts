/**
 * Parts a multipart upload received around the S3 function. Behind Lambda a
 * request body reaches the function base64-encoded inside an invocation of
 * at most 6 MB, so the S3 clients' default part sizes (5 to 8 MiB) cannot
 * come through it. In AWS such an UploadPart is routed at the edge to an
 * API Gateway S3 integration that stores the body as it came, with the
 * request's signing and checksum headers as the object's metadata, under
 * `part-staging/<uploadId>/<partNumber>` in the stack's bucket (docs/aws.md,
 * "Parts above 4 MiB"). CompleteMultipartUpload then reads such a part back,
 * verifies it as UploadPart would have, and imports it like any other.
 *
 * One machine takes S3's sizes in the function itself and has none.
 */

/** What the store kept of one staged part: its ETag as the client got it, size, and the request headers kept with it. */
export interface StagedPart {
  partNumber: number;
  /** The ETag the staging store answered the client with, unquoted, lowercase. */
  etag: string;
  /** Bytes as stored (aws-chunked framing included when the client sent it). */
  size: number;
  /** The UploadPart request's headers kept with the part (lowercase names, see STAGED_HEADERS). */
  headers: Record<string, string>;
}

/**
 * The request headers kept with a staged part, each as the metadata entry
 * `x-amz-meta-<name>`: what checking the body needs (its promised hash,
 * framing, length, MD5, checksums) and the signature its chunk signatures
 * chain from.
 */
export const STAGED_HEADERS = [
  'authorization',
  'x-amz-date',
  'x-amz-content-sha256',
  'content-encoding',
  'x-amz-decoded-content-length',
  'content-md5',
  'x-amz-trailer',
  'x-amz-sdk-checksum-algorithm',
  'x-amz-checksum-crc32',
  'x-amz-checksum-crc32c',
  'x-amz-checksum-crc64nvme',
  'x-amz-checksum-sha1',
  'x-amz-checksum-sha256',
] as const;

/** The key prefix every staged part lives under; the stack's lifecycle rule on it removes what no upload ended. */
export const PART_STAGING_PREFIX = 'part-staging/';

export function stagedPartKey(uploadId: string, partNumber: number): string {
  return `${PART_STAGING_PREFIX}${uploadId}/${partNumber}`;
}

export interface StagedPartStore {
  /** The part last staged under this number, if any. */
  get(uploadId: string, partNumber: number): Promise<StagedPart | undefined>;
  /** Its bytes, only while they are still the ones with `etag` (a part staged again meanwhile fails the read). */
  read(uploadId: string, partNumber: number, etag: string, signal: AbortSignal): AsyncIterable<Uint8Array>;
  /** Removes every part staged for the upload. */
  removeAll(uploadId: string): Promise<void>;
}
