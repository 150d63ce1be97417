/**
 * PutBucketPolicy, GetBucketPolicy, DeleteBucketPolicy and
 * GetBucketPolicyStatus. The policy language (parsing, evaluation, what is
 * public) is core/storage/bucket-policy.ts; this file is its S3 wire:
 * a refused policy is MalformedPolicy (400) with S3's message and changes
 * nothing, a public one under BlockPublicPolicy is AccessDenied. The text
 * is kept as given, so GetBucketPolicy answers it byte for byte.
 */
import { bucketPolicy, effectiveAcl, isPublicAcl } from '../core/storage/bucket-access.js';
import { isPublicPolicy, MAX_POLICY_BYTES, parseBucketPolicy, PolicyError } from '../core/storage/bucket-policy.js';
import type { S3Context } from './context.js';
import { errors, S3Error } from './errors.js';
import { xmlResponse } from './xml.js';
import { readSmallBody } from './xml-input.js';

const malformedPolicy = (message: string) => new S3Error('MalformedPolicy', 400, message);

/** The request's policy text: at most S3's 20 KB, UTF-8. */
async function policyText(ctx: S3Context): Promise<string> {
  let body: Buffer;
  try {
    body = await readSmallBody(ctx, MAX_POLICY_BYTES);
  } catch (err) {
    if (err instanceof S3Error && err.code === 'MaxMessageLengthExceeded') throw malformedPolicy('Policies must be less than 20 KB');
    throw err;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw malformedPolicy('This policy contains invalid Json');
  }
}

export async function putBucketPolicy(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  const text = await policyText(ctx);
  let isPublic: boolean;
  try {
    isPublic = isPublicPolicy(parseBucketPolicy(text, bucket.name));
  } catch (err) {
    if (err instanceof PolicyError) throw malformedPolicy(err.message);
    throw err;
  }
  if (isPublic && bucket.publicAccessBlock?.blockPublicPolicy) throw errors.accessDenied();
  if (!(await ctx.services.buckets.setPolicy(bucket.name, text))) throw errors.noSuchBucket(bucket.name);
  return new Response(null, { status: 204 });
}

export async function getBucketPolicy(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  if (bucket.policy === undefined) {
    throw new S3Error('NoSuchBucketPolicy', 404, 'The bucket policy does not exist', { BucketName: bucket.name });
  }
  return new Response(bucket.policy, { status: 200, headers: { 'content-type': 'application/json' } });
}

export async function deleteBucketPolicy(ctx: S3Context): Promise<Response> {
  if (!(await ctx.services.buckets.setPolicy(ctx.bucket!.name, undefined))) throw errors.noSuchBucket(ctx.bucket!.name);
  return new Response(null, { status: 204 });
}

/**
 * IsPublic: the policy is public (S3's definition, isPublicPolicy), or, as
 * Ceph also answers (s3-tests test_get_public_acl_bucket_policy_status), the
 * bucket's ACL is, as far as it counts (not under IgnorePublicAcls or
 * BucketOwnerEnforced).
 */
export async function getBucketPolicyStatus(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  const isPublic = (bucketPolicy(bucket)?.isPublic ?? false) || isPublicAcl(effectiveAcl(bucket, bucket.acl));
  return xmlResponse('PolicyStatus', { IsPublic: isPublic ? 'true' : 'false' });
}
