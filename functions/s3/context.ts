/** What every S3 operation handler receives. */
import type { StorageServices } from '../core/services.js';
import type { HttpRequest } from '../core/http/types.js';
import type { Authenticated } from './auth.js';
import type { S3Request } from './router.js';
import type { Bucket } from '../core/data/buckets.js';
import type { ObjectRecord, Tag } from '../core/data/objects.js';
import { cidV1 } from '../core/ipfs/cid.js';

export interface S3Context {
  services: StorageServices;
  req: HttpRequest;
  s3: S3Request;
  auth: Authenticated;
  /** The addressed bucket, checked to exist (and to be the caller's, unless the op allows public reads). */
  bucket?: Bucket;
  now: Date;
  /** A POST Object's form, beyond what its fields say as headers (post/object.ts). */
  post?: PostUpload;
  /** What the bucket policy's conditions read beyond the request's headers, gathered before it is authorised (policy-facts.ts). */
  policyFacts?: PolicyFacts;
}

/** Facts a policy condition may read that take parsing or a read to know. */
export interface PolicyFacts {
  /** The tags of the object version the request acts on (s3:ExistingObjectTag/<key>); none when it has none or does not exist. */
  existingTags?: readonly Tag[];
  /** The tags the request sets (s3:RequestObjectTag/<key>, s3:RequestObjectTagKeys): x-amz-tagging, a POST's tagging field, a PutObjectTagging body. */
  requestTags?: readonly Tag[];
  /** `x-amz-copy-source` as `bucket/key[?versionId=...]`, decoded (s3:x-amz-copy-source). */
  copySource?: string;
}

/** What a POST Object's form asks of the upload besides its headers. */
export interface PostUpload {
  /** The policy's content-length-range. */
  range?: { min: number; max: number };
  /** `success_action_status`: 200, 201 or (anything else) 204. */
  status?: string;
  /** `success_action_redirect` (or the older `redirect`): where a browser is sent after the upload. */
  redirect?: string;
  tags?: Tag[];
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

/**
 * `x-amz-version-id` for a version in a versioned bucket (`null` for the
 * null version); nothing in a bucket never versioned, whose answers stay
 * as they were.
 */
export function versionHeader(ctx: S3Context, version: { versionId?: string } | undefined): Record<string, string> {
  if (!version || (version.versionId === undefined && !ctx.bucket?.versioning)) return {};
  return { 'x-amz-version-id': version.versionId ?? 'null' };
}
