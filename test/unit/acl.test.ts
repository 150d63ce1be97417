/**
 * The ACL model (core/storage/acl.ts) and the one access decision
 * (decideAccess in core/storage/bucket-access.ts): canned ACLs as grants
 * and back, what each grant gives whom, and the order S3 weighs a policy,
 * the owner, the public access block and BucketOwnerEnforced in.
 */
import type { Bucket } from '../../functions/core/data/buckets.js';
import {
  ALL_USERS,
  AUTHENTICATED_USERS,
  aclGrants,
  cannedGrants,
  compactAcl,
  grantsOf,
  isPublicAcl,
  type AclGrant,
} from '../../functions/core/storage/acl.js';
import { decideAccess, effectiveAcl } from '../../functions/core/storage/bucket-access.js';

const OWNER = 'owner-id';
const OTHER = 'other-id';
const bucket = (extra: Partial<Bucket> = {}): Bucket => ({ name: 'b', accountId: OWNER, createdAt: '', isDefault: false, ...extra });

test("canned ACLs are S3's grants, and grants that equal one are stored as its name (in any order, repeats aside)", () => {
  expect(cannedGrants('public-read-write', OWNER)).toEqual([
    { id: OWNER, permission: 'FULL_CONTROL' },
    { uri: ALL_USERS, permission: 'READ' },
    { uri: ALL_USERS, permission: 'WRITE' },
  ]);
  expect(grantsOf(undefined, OWNER)).toEqual([{ id: OWNER, permission: 'FULL_CONTROL' }]);
  const reversed = [...cannedGrants('public-read-write', OWNER)].reverse();
  expect(compactAcl([...reversed, reversed[0]!], OWNER)).toBe('public-read-write');
  expect(compactAcl([{ id: OWNER, permission: 'FULL_CONTROL' }], OWNER)).toBe('private');
  // The owner's grant names the owner: another account's FULL_CONTROL is not private.
  const others: AclGrant[] = [{ id: OTHER, permission: 'FULL_CONTROL' }];
  expect(compactAcl(others, OWNER)).toEqual(others);
  expect(compactAcl([], OWNER)).toEqual([]);
});

test('what a grant gives: its permission or FULL_CONTROL, to its account, to anyone (AllUsers) or to any account (AuthenticatedUsers)', () => {
  const acl: AclGrant[] = [
    { id: OTHER, permission: 'READ_ACP' },
    { uri: AUTHENTICATED_USERS, permission: 'READ' },
    { id: 'third', permission: 'FULL_CONTROL' },
  ];
  expect(aclGrants(acl, OTHER, 'READ_ACP', OWNER)).toBe(true);
  expect(aclGrants(acl, OTHER, 'WRITE_ACP', OWNER)).toBe(false);
  expect(aclGrants(acl, OTHER, 'READ', OWNER)).toBe(true);
  expect(aclGrants(acl, undefined, 'READ', OWNER)).toBe(false);
  expect(aclGrants(acl, 'third', 'WRITE', OWNER)).toBe(true);
  expect(aclGrants('public-read', undefined, 'READ', OWNER)).toBe(true);
  expect(aclGrants('public-read', undefined, 'WRITE', OWNER)).toBe(false);
  expect(aclGrants('private', OTHER, 'READ', OWNER)).toBe(false);
  expect(isPublicAcl(acl)).toBe(true);
  expect(isPublicAcl([{ id: OTHER, permission: 'FULL_CONTROL' }])).toBe(false);
  expect(isPublicAcl('authenticated-read')).toBe(true);
  expect(isPublicAcl('private')).toBe(false);
});

test('decideAccess weighs as S3 does: Deny, the owner, Allow, then the ACL as far as it counts', () => {
  const acl: AclGrant[] = [
    { uri: ALL_USERS, permission: 'READ' },
    { id: OTHER, permission: 'READ' },
  ];
  const ask = (b: Bucket, caller: string | undefined, verdict: 'deny' | 'allow' | 'none') =>
    decideAccess(b, { caller, verdict, acl: { acl, permission: 'READ' } });
  expect(ask(bucket(), OWNER, 'deny')).toBe(false);
  expect(ask(bucket(), OWNER, 'none')).toBe(true);
  expect(ask(bucket(), OTHER, 'deny')).toBe(false);
  expect(ask(bucket(), 'third', 'allow')).toBe(true);
  expect(ask(bucket(), undefined, 'none')).toBe(true);
  expect(decideAccess(bucket(), { caller: OTHER, verdict: 'none' })).toBe(false);
  // IgnorePublicAcls drops the group grants, not the account's.
  const ignoring = bucket({
    publicAccessBlock: { blockPublicAcls: false, ignorePublicAcls: true, blockPublicPolicy: false, restrictPublicBuckets: false },
  });
  expect(ask(ignoring, undefined, 'none')).toBe(false);
  expect(ask(ignoring, OTHER, 'none')).toBe(true);
  expect(effectiveAcl(ignoring, acl)).toEqual([{ id: OTHER, permission: 'READ' }]);
  expect(effectiveAcl(ignoring, 'public-read')).toBe('private');
  // BucketOwnerEnforced: ACLs grant nothing; a policy still does.
  const enforced = bucket({ ownership: 'BucketOwnerEnforced' });
  expect(ask(enforced, OTHER, 'none')).toBe(false);
  expect(ask(enforced, undefined, 'none')).toBe(false);
  expect(ask(enforced, OTHER, 'allow')).toBe(true);
  expect(ask(enforced, OWNER, 'none')).toBe(true);
});
