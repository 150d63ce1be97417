/**
 * How a bucket's policy, its ACLs, its public access block and its object
 * ownership combine, as S3 combines them, for every door that reads a
 * bucket's things (the S3 API, the gateway's public URLs):
 *
 * 1. An explicit Deny in the policy refuses the request, the owner's too
 *    (the S3 door lets the owner still manage the policy itself).
 * 2. The owner may do anything else.
 * 3. Another account, or an anonymous caller, may do what a policy Allow
 *    or an ACL grant allows (decideAccess). RestrictPublicBuckets ignores
 *    a public policy's Allows for them; IgnorePublicAcls ignores an ACL's
 *    public grants, and BucketOwnerEnforced (ACLs are off) every grant.
 */
import type { AclPermission, Bucket, StoredAcl } from '../data/buckets.js';
import { aclGrants, isPublicAcl, withoutPublicGrants } from './acl.js';
import { TtlCache } from '../cache.js';
import { evaluatePolicy, isPublicPolicy, parseBucketPolicy, type BucketPolicy, type RequestFacts, type Verdict } from './bucket-policy.js';

/** Parsed policies by bucket and text: a policy is parsed once per process, not per request. */
const parsed = new TtlCache<string, { policy: BucketPolicy; isPublic: boolean }>(10 * 60_000, 1_000);

/** The bucket's parsed policy (it was checked when put), with whether it is public. */
export function bucketPolicy(bucket: Pick<Bucket, 'name' | 'policy'>): { policy: BucketPolicy; isPublic: boolean } | undefined {
  if (bucket.policy === undefined) return undefined;
  const key = `${bucket.name}\n${bucket.policy}`;
  let hit = parsed.get(key);
  if (!hit) {
    const policy = parseBucketPolicy(bucket.policy, bucket.name);
    hit = { policy, isPublic: isPublicPolicy(policy) };
    parsed.set(key, hit);
  }
  return hit;
}

/**
 * The policy's verdict on a request to this bucket, after the public access
 * block: with RestrictPublicBuckets, a public policy's Allow counts only for
 * the bucket's own account (its Deny still counts for everyone).
 */
export function policyVerdict(bucket: Bucket, facts: RequestFacts): Verdict {
  const found = bucketPolicy(bucket);
  if (!found) return 'none';
  const verdict = evaluatePolicy(found.policy, facts);
  if (verdict === 'allow' && found.isPublic && bucket.publicAccessBlock?.restrictPublicBuckets && facts.account !== bucket.accountId) {
    return 'none';
  }
  return verdict;
}

/** Whether an ACL grants anything to everyone or to every account: what S3 calls public. */
export { isPublicAcl };

/**
 * The ACL that counts for access in this bucket: ACLs are off under
 * BucketOwnerEnforced (only the owner's FULL_CONTROL), public grants are
 * dropped under IgnorePublicAcls.
 */
export function effectiveAcl(bucket: Pick<Bucket, 'ownership' | 'publicAccessBlock'>, acl: StoredAcl | undefined): StoredAcl {
  if (bucket.ownership === 'BucketOwnerEnforced') return 'private';
  if (bucket.publicAccessBlock?.ignorePublicAcls && isPublicAcl(acl)) return withoutPublicGrants(acl);
  return acl ?? 'private';
}

/** What one caller asks to do to a bucket or one of its objects, as decideAccess weighs it. */
export interface AccessQuestion {
  /** The caller's account id; undefined for an anonymous caller. */
  caller: string | undefined;
  /** The bucket policy's verdict on the request (policyVerdict). */
  verdict: Verdict;
  /** The ACL that applies (the bucket's, or the object version's), and the permission it would have to grant; none: only a policy can allow. */
  acl?: { acl: StoredAcl | undefined; permission: AclPermission };
}

/**
 * The one access decision every door makes, in S3's order: an explicit
 * Deny refuses; the bucket's owner may; a policy Allow allows; else the
 * ACL, as far as it counts here (effectiveAcl), must grant the permission
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/how-s3-evaluates-access-control.html).
 */
export function decideAccess(bucket: Bucket, q: AccessQuestion): boolean {
  if (q.verdict === 'deny') return false;
  if (q.caller !== undefined && q.caller === bucket.accountId) return true;
  if (q.verdict === 'allow') return true;
  if (!q.acl) return false;
  return aclGrants(effectiveAcl(bucket, q.acl.acl), q.caller, q.acl.permission, bucket.accountId);
}
