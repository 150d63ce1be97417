/**
 * How large a part may be: what the caller prefers (partSize, 5 MiB by
 * default), within what the endpoint takes in one request. Cairn's S3 API
 * says that in a header on every answer (functions/s3/app.ts,
 * MAX_REQUEST_BODY_HEADER): behind AWS Lambda 4 MiB (a 6 MB invocation
 * holding a base64 body), on one machine S3's 5 GiB. So the same SDK uploads
 * through either without being told where it runs.
 *
 * Why a header and not the alternatives: sizing by the endpoint's host name
 * misses custom domains; retrying a refused part smaller does not work on
 * AWS, where a body of about 4.5 to 10 MB is refused by Lambda before the
 * function runs and API Gateway answers a bare 5xx, indistinguishable from
 * any other failure, after the whole part was sent. A header costs nothing
 * on answers the SDK receives anyway, and one HeadBucket when it has seen
 * none yet.
 */
import { HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { CairnStorageError } from './errors.js';

/** The header Cairn's S3 API answers with its per-request body limit (the same name as functions/s3/app.ts). */
export const MAX_REQUEST_BODY_HEADER = 'x-cairn-max-request-body';

/** S3's limit on parts per upload. */
export const MAX_PARTS = 10000;

/** Body limits seen per client, from any answer (successes and S3 errors alike). */
const seenLimits = new WeakMap<S3Client, number>();
/** Clients that asked once: a server that did not say is not asked again (any later answer still teaches). */
const asked = new WeakSet<S3Client>();

/** Reads the limit off a response's headers, if the server sent one. */
/**
 * The least limit taken from a server: below it the header is ignored and
 * parts keep their size (a server that truly takes less refuses them, and
 * says so). A hostile or broken endpoint saying "1" would otherwise turn a
 * stream into one request per byte.
 */
export const MIN_HONOURED_LIMIT = 1024 * 1024;

export function noteLimit(s3: S3Client, headers: Record<string, string | undefined> | undefined): void {
  const raw = headers?.[MAX_REQUEST_BODY_HEADER];
  if (raw === undefined || !/^\d+$/.test(raw.trim())) return;
  const value = Number(raw.trim());
  if (value >= MIN_HONOURED_LIMIT && Number.isSafeInteger(value)) seenLimits.set(s3, value);
}

export function limitSeen(s3: S3Client): number | undefined {
  return seenLimits.get(s3);
}

/**
 * The endpoint's body limit: the one already seen on this client, else asked
 * for with a HeadBucket on the upload's bucket (any answer carries the
 * header, a 403 or 404 too). Undefined for servers that do not say (another
 * S3 server, an older Cairn): the caller's part size then stands.
 */
export async function endpointLimit(s3: S3Client, bucket: string): Promise<number | undefined> {
  const seen = limitSeen(s3);
  if (seen !== undefined || asked.has(s3)) return seen;
  asked.add(s3);
  // Whatever the answer, the client's middleware has read its headers; a failure here is the upload's to report.
  await s3.send(new HeadBucketCommand({ Bucket: bucket })).catch(() => undefined);
  return limitSeen(s3);
}

/**
 * The part size for one upload: the preferred size, raised when a file of
 * known size would need more than 10,000 parts, and never above the
 * endpoint's limit. A known size that cannot fit 10,000 parts of the limit
 * fails before anything is sent.
 */
export function choosePartSize(preferred: number, limit: number | undefined, total: number | undefined, operation: string): number {
  let size = preferred;
  if (total !== undefined && Math.ceil(total / size) > MAX_PARTS) size = Math.ceil(total / MAX_PARTS);
  if (limit === undefined || size <= limit) return size;
  if (total !== undefined && Math.ceil(total / limit) > MAX_PARTS) {
    throw new CairnStorageError(
      `${operation}: ${total} bytes need more than ${MAX_PARTS} parts of ${limit} bytes, the most this endpoint takes in one request`,
      { code: 'TooManyParts' },
    );
  }
  return limit;
}
