/**
 * ACLs: Cairn stores one of four canned ACLs on each object and bucket
 * (private, public-read, public-read-write, authenticated-read). Put*Acl
 * takes either the `x-amz-acl` header or an AccessControlPolicy whose
 * grants amount to one of them.
 */
import type { Bucket } from '../core/data/buckets.js';
import type { CannedAcl } from '../core/data/objects.js';
import { isPublicAcl } from '../core/storage/bucket-access.js';
import type { S3Op } from './router.js';
import type { Principal } from './auth.js';
import { owner } from './buckets.js';
import type { S3Context } from './context.js';
import { errors, S3Error } from './errors.js';
import { cannedAcl } from './request-headers.js';
import { escapeXml, S3_NS } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';

export const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';
export const AUTHENTICATED_USERS = 'http://acs.amazonaws.com/groups/global/AuthenticatedUsers';

/** The group grants S3 adds to the owner's FULL_CONTROL for each canned ACL. */
export const GROUP_GRANTS: Record<CannedAcl, ReadonlyArray<{ uri: string; permission: 'READ' | 'WRITE' }>> = {
  private: [],
  'public-read': [{ uri: ALL_USERS, permission: 'READ' }],
  'public-read-write': [
    { uri: ALL_USERS, permission: 'READ' },
    { uri: ALL_USERS, permission: 'WRITE' },
  ],
  'authenticated-read': [{ uri: AUTHENTICATED_USERS, permission: 'READ' }],
};

/**
 * Whether an ACL lets this caller read: an object's bytes, or a bucket's
 * listing. The owner always may; so may anyone for public ACLs, and any
 * Cairn key for authenticated-read.
 */
export function aclAllowsRead(acl: CannedAcl | undefined, principal: Principal, ownerId: string): boolean {
  if (principal.kind === 'account' && principal.accountId === ownerId) return true;
  if (acl === 'public-read' || acl === 'public-read-write') return true;
  return acl === 'authenticated-read' && principal.kind === 'account';
}

/** Whether a bucket's ACL lets this caller write objects into it. */
export function aclAllowsWrite(acl: CannedAcl | undefined, principal: Principal, ownerId: string): boolean {
  if (principal.kind === 'account' && principal.accountId === ownerId) return true;
  return acl === 'public-read-write';
}

/** Under BucketOwnerEnforced ACLs are off: every one reads as the owner's FULL_CONTROL alone, as S3 answers. */
const shownAcl = (bucket: Bucket, acl: CannedAcl | undefined): CannedAcl =>
  bucket.ownership === 'BucketOwnerEnforced' ? 'private' : (acl ?? 'private');

export async function getBucketAcl(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  return aclResponse(await owner(ctx, bucket.accountId), shownAcl(bucket, bucket.acl));
}

/** An AccessControlPolicy for a canned ACL: owner FULL_CONTROL, plus the group grants S3 gives that ACL. */
function aclResponse(who: { ID: string; DisplayName: string }, acl: CannedAcl): Response {
  const grants: Array<Record<string, unknown>> = [
    { Grantee: { ID: who.ID, DisplayName: who.DisplayName, '@type': 'CanonicalUser' }, Permission: 'FULL_CONTROL' },
  ];
  for (const g of GROUP_GRANTS[acl]) grants.push({ Grantee: { URI: g.uri, '@type': 'Group' }, Permission: g.permission });
  const body =
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<AccessControlPolicy xmlns="${S3_NS}">` +
    `<Owner><ID>${escapeXml(who.ID)}</ID><DisplayName>${escapeXml(who.DisplayName)}</DisplayName></Owner><AccessControlList>` +
    grants
      .map((g) => {
        const grantee = g.Grantee as Record<string, string>;
        const inner =
          grantee['@type'] === 'Group'
            ? `<URI>${grantee.URI}</URI>`
            : `<ID>${escapeXml(grantee.ID!)}</ID><DisplayName>${escapeXml(grantee.DisplayName!)}</DisplayName>`;
        return `<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="${grantee['@type']}">${inner}</Grantee><Permission>${g.Permission}</Permission></Grant>`;
      })
      .join('') +
    '</AccessControlList></AccessControlPolicy>';
  return new Response(body, { status: 200, headers: { 'content-type': 'application/xml' } });
}

/**
 * Object ACLs belong to the latest version: one asked for by `versionId` in
 * a versioned bucket is refused rather than answered with another's.
 */
function latestOnly(ctx: S3Context): void {
  const versionId = ctx.s3.query.get('versionId');
  if (versionId !== undefined && ctx.bucket!.versioning) throw errors.notImplemented('versionId on object ACLs');
}

export async function getObjectAcl(ctx: S3Context): Promise<Response> {
  latestOnly(ctx);
  const record = await ctx.services.objects.get(ctx.bucket!.name, ctx.s3.key!);
  if (!record) throw errors.noSuchKey(ctx.s3.key!);
  return aclResponse(await owner(ctx, record.ownerId), shownAcl(ctx.bucket!, record.acl));
}

const notCanned = (what: string) =>
  errors.notImplemented(
    `${what} (Cairn stores only the canned ACLs private, public-read, public-read-write and authenticated-read; send one with x-amz-acl)`,
  );

/** The canned ACL an AccessControlPolicy's grants amount to, if any. */
function aclFromPolicy(doc: Record<string, unknown>, ownerId: string): CannedAcl {
  const list = (doc.AccessControlList ?? {}) as Record<string, unknown>;
  const grants = (list.Grant as Array<Record<string, unknown>> | undefined) ?? [];
  const groups = new Set<string>();
  for (const grant of grants) {
    const grantee = (grant.Grantee ?? {}) as Record<string, unknown>;
    const permission = String(grant.Permission);
    if (typeof grantee.URI === 'string') {
      groups.add(`${grantee.URI} ${permission}`);
    } else if (grantee.ID !== ownerId || permission !== 'FULL_CONTROL') {
      throw notCanned(`a grant of ${permission} to ${String(grantee.ID ?? grantee.EmailAddress ?? 'a user')}`);
    }
  }
  for (const [acl, wanted] of Object.entries(GROUP_GRANTS) as Array<[CannedAcl, (typeof GROUP_GRANTS)[CannedAcl]]>) {
    if (wanted.length === groups.size && wanted.every((g) => groups.has(`${g.uri} ${g.permission}`))) return acl;
  }
  throw notCanned(`the group grants ${[...groups].join(', ')}`);
}

/** The ACL a Put*Acl request asks for: the canned header, or a policy body. */
async function requestedAcl(ctx: S3Context, ownerId: string): Promise<CannedAcl> {
  const { req } = ctx;
  const body = await readSmallBody(ctx);
  if (req.headers.has('x-amz-acl')) {
    if (body.length) throw errors.invalidRequest('Specify either the x-amz-acl header or an AccessControlPolicy body, not both.');
    return cannedAcl(req.headers);
  }
  if (body.length) return allowedAcl(ctx.bucket!, aclFromPolicy(parseXmlBody(body, 'AccessControlPolicy', ['Grant']), ownerId));
  cannedAcl(req.headers); // x-amz-grant-* headers alone are refused there
  throw errors.malformedXml();
}

const aclsOff = () => new S3Error('AccessControlListNotSupported', 400, 'The bucket does not allow ACLs');

/** An ACL body's ACL, if the bucket takes it: not a public one under BlockPublicAcls, only the owner's under BucketOwnerEnforced. */
function allowedAcl(bucket: Bucket, acl: CannedAcl): CannedAcl {
  if (bucket.ownership === 'BucketOwnerEnforced' && acl !== 'private') throw aclsOff();
  if (bucket.publicAccessBlock?.blockPublicAcls && isPublicAcl(acl)) throw errors.accessDenied();
  return acl;
}

/** Operations that set an ACL from the request's `x-amz-acl` or `x-amz-grant-*` headers. */
const ACL_SETTING: ReadonlySet<S3Op> = new Set(['PutObject', 'CopyObject', 'CreateMultipartUpload', 'PutBucketAcl', 'PutObjectAcl']);
const GRANT_HEADERS = [
  'x-amz-grant-read',
  'x-amz-grant-write',
  'x-amz-grant-read-acp',
  'x-amz-grant-write-acp',
  'x-amz-grant-full-control',
];

/**
 * What the bucket's settings say of the ACL a request's headers ask for,
 * before anything is read or written: under BucketOwnerEnforced only
 * `bucket-owner-full-control` (or none, for a write) is taken, anything
 * else is AccessControlListNotSupported; under BlockPublicAcls a public
 * canned ACL is AccessDenied.
 */
export function checkRequestedAcl(ctx: S3Context): void {
  const bucket = ctx.bucket;
  if (!bucket || !ACL_SETTING.has(ctx.s3.op)) return;
  const { headers } = ctx.req;
  const header = headers.get('x-amz-acl');
  if (bucket.ownership === 'BucketOwnerEnforced') {
    if (GRANT_HEADERS.some((h) => headers.has(h))) throw aclsOff();
    if (header !== null && header !== 'bucket-owner-full-control') throw aclsOff();
    const setsAcl = ctx.s3.op === 'PutBucketAcl' || ctx.s3.op === 'PutObjectAcl';
    if (setsAcl && header === null) return; // a body: allowedAcl decides once it is read
  }
  if (bucket.publicAccessBlock?.blockPublicAcls && header !== null && isPublicAcl(header as CannedAcl)) throw errors.accessDenied();
}

export async function putObjectAcl(ctx: S3Context): Promise<Response> {
  latestOnly(ctx);
  const acl = await requestedAcl(ctx, ctx.bucket!.accountId);
  if (!(await ctx.services.objects.setAcl(ctx.bucket!.name, ctx.s3.key!, acl))) throw errors.noSuchKey(ctx.s3.key!);
  return new Response(null, { status: 200 });
}

export async function putBucketAcl(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  const acl = await requestedAcl(ctx, bucket.accountId);
  if (!(await ctx.services.buckets.setAcl(bucket.name, acl))) throw errors.noSuchBucket(bucket.name);
  return new Response(null, { status: 200 });
}
