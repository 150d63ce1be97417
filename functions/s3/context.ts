/** What every S3 operation handler receives. */
import type { StorageServices } from '../core/services.js';
import type { HttpRequest } from '../core/http/types.js';
import type { Authenticated } from './auth.js';
import type { S3Request } from './router.js';
import type { Bucket } from '../core/data/buckets.js';
import type { ObjectRecord } from '../core/data/objects.js';
import { cidV1 } from '../core/ipfs/cid.js';

export interface S3Context {
  services: StorageServices;
  req: HttpRequest;
  s3: S3Request;
  auth: Authenticated;
  /** The addressed bucket, checked to exist (and to be the caller's, unless the op allows public reads). */
  bucket?: Bucket;
  now: Date;
}

/**
 * The account that owns what this request writes: the bucket's owner, also
 * when a public-read-write bucket lets someone else (or no one) write, as S3
 * does with its default BucketOwnerEnforced object ownership.
 */
export function ownerOf(ctx: S3Context): string {
  return ctx.bucket!.accountId;
}

/** The quoted ETag clients see: S3's MD5 form, or the CIDv1 when CAIRN_ETAG=cid. */
export function presentedEtag(ctx: S3Context, record: Pick<ObjectRecord, 'cid' | 'etag'>): string {
  return `"${ctx.services.config.storage.etag === 'cid' ? cidV1(record.cid) : record.etag}"`;
}
