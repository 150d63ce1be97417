/**
 * How a bucket's policy, its ACLs, its public access block and its object
 * ownership combine, as S3 combines them, for every door that reads a
 * bucket's things (the S3 API, the gateway's public URLs):
 *
 * 1. An explicit Deny in the policy refuses the request, the owner's too
 *    (the S3 door lets the owner still manage the policy itself).
 * 2. The owner may do anything else.
 * 3. Another account, or an anonymous caller, may do what a policy Allow
 *    or an ACL grants. RestrictPublicBuckets ignores a public policy's
 *    Allows for them; IgnorePublicAcls makes public ACLs count as private,
 *    and so does BucketOwnerEnforced (ACLs are off) for every ACL.
 */
import type { Bucket, CannedAcl } from '../data/buckets.js';
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

/** ACLs that grant to everyone or to every account: what S3 calls public. */
export function isPublicAcl(acl: CannedAcl | undefined): boolean {
  return acl === 'public-read' || acl === 'public-read-write' || acl === 'authenticated-read';
}

/** The ACL that counts for access in this bucket: ACLs are off under BucketOwnerEnforced, public ones under IgnorePublicAcls. */
export function effectiveAcl(bucket: Pick<Bucket, 'ownership' | 'publicAccessBlock'>, acl: CannedAcl | undefined): CannedAcl {
  if (bucket.ownership === 'BucketOwnerEnforced') return 'private';
  if (bucket.publicAccessBlock?.ignorePublicAcls && isPublicAcl(acl)) return 'private';
  return acl ?? 'private';
}
