/**
 * ACLs as S3 has them: an owner (in Cairn always the bucket's owner) and up
 * to 100 grants, each of one permission to a Cairn account (by its canonical
 * id, the account's id) or to one of S3's groups
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html:
 * "An ACL can have up to 100 grants"; the canned ACLs' grants are listed
 * there too). A grant by e-mail is resolved to the account's id when it is
 * written, as S3 does, so none is stored.
 *
 * Stored compactly: the canned ACL's name when the grants are exactly one
 * (which is all records written before grants existed hold), the grants
 * otherwise. This module knows nothing of requests; what a grant allows is
 * decided with the bucket's other settings in bucket-access.ts.
 */
import type { AclGrant, AclPermission, CannedAcl, StoredAcl } from '../data/buckets.js';

export type { AclGrant, AclPermission, CannedAcl, StoredAcl } from '../data/buckets.js';

export const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';
export const AUTHENTICATED_USERS = 'http://acs.amazonaws.com/groups/global/AuthenticatedUsers';
export const LOG_DELIVERY = 'http://acs.amazonaws.com/groups/s3/LogDelivery';

/** S3's limit on one ACL's grants (acl-overview.html, above). */
export const MAX_GRANTS = 100;

export const PERMISSIONS: readonly AclPermission[] = ['FULL_CONTROL', 'READ', 'WRITE', 'READ_ACP', 'WRITE_ACP'];

export const CANNED_ACLS: readonly CannedAcl[] = ['private', 'public-read', 'public-read-write', 'authenticated-read'];

/** The group grants S3 adds to the owner's FULL_CONTROL for each canned ACL. */
const GROUP_GRANTS: Record<CannedAcl, readonly AclGrant[]> = {
  private: [],
  'public-read': [{ uri: ALL_USERS, permission: 'READ' }],
  'public-read-write': [
    { uri: ALL_USERS, permission: 'READ' },
    { uri: ALL_USERS, permission: 'WRITE' },
  ],
  'authenticated-read': [{ uri: AUTHENTICATED_USERS, permission: 'READ' }],
};

/** A canned ACL's grants: the owner's FULL_CONTROL, then the groups'. */
export function cannedGrants(acl: CannedAcl, ownerId: string): AclGrant[] {
  return [{ id: ownerId, permission: 'FULL_CONTROL' }, ...GROUP_GRANTS[acl]];
}

/** The grants a stored ACL holds (a record without one is private). */
export function grantsOf(acl: StoredAcl | undefined, ownerId: string): AclGrant[] {
  if (acl === undefined) return cannedGrants('private', ownerId);
  return typeof acl === 'string' ? cannedGrants(acl, ownerId) : acl;
}

const grantText = (g: AclGrant) => `${'id' in g ? `id ${g.id}` : `uri ${g.uri}`} ${g.permission}`;

/** How an ACL is stored: the canned ACL's name when the grants are one's (in any order, repeats aside), else the grants. */
export function compactAcl(grants: readonly AclGrant[], ownerId: string): StoredAcl {
  const given = new Set(grants.map(grantText));
  for (const name of CANNED_ACLS) {
    const canned = cannedGrants(name, ownerId).map(grantText);
    if (canned.length === given.size && canned.every((g) => given.has(g))) return name;
  }
  return grants.map((g) => ({ ...g }));
}

const isPublicGrant = (g: AclGrant) => 'uri' in g && (g.uri === ALL_USERS || g.uri === AUTHENTICATED_USERS);

/** Whether an ACL grants anything to everyone or to every account: what S3 calls public. */
export function isPublicAcl(acl: StoredAcl | undefined): boolean {
  if (acl === undefined) return false;
  if (typeof acl === 'string') return acl !== 'private';
  return acl.some(isPublicGrant);
}

/** The ACL without its public grants (IgnorePublicAcls). */
export function withoutPublicGrants(acl: StoredAcl | undefined): StoredAcl {
  if (acl === undefined || typeof acl === 'string') return 'private';
  return acl.filter((g) => !isPublicGrant(g));
}

/**
 * Whether the ACL gives `permission` to this caller (an account's id, or
 * undefined for an anonymous one), directly or by FULL_CONTROL: a grant to
 * the caller's id, to AllUsers (anyone), or to AuthenticatedUsers (any
 * signed request of a Cairn account). Linear in the grants (at most 100).
 */
export function aclGrants(acl: StoredAcl | undefined, caller: string | undefined, permission: AclPermission, ownerId: string): boolean {
  for (const g of grantsOf(acl, ownerId)) {
    if (g.permission !== permission && g.permission !== 'FULL_CONTROL') continue;
    if ('id' in g ? g.id === caller : g.uri === ALL_USERS || (g.uri === AUTHENTICATED_USERS && caller !== undefined)) return true;
  }
  return false;
}
