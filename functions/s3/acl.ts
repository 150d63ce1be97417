/**
 * ACLs on the wire: GetBucketAcl / GetObjectAcl, PutBucketAcl /
 * PutObjectAcl (an AccessControlPolicy body, `x-amz-acl`, or the
 * `x-amz-grant-*` headers; with `versionId`, one version's), and the ACL
 * that CreateBucket, PutObject, CopyObject and CreateMultipartUpload take
 * from their headers. The ACL model is core/storage/acl.ts; what grants
 * allow, with the policy and the public access block, is decided in
 * core/storage/bucket-access.ts.
 *
 * The S3 references: PutBucketAcl and PutObjectAcl
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketAcl.html:
 * a body or headers, never both; the grant headers' `id=`, `emailAddress=`
 * and `uri=` lists), the error list
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html:
 * MalformedACLError, UnresolvableGrantByEmailAddress, InvalidArgument,
 * AccessControlListNotSupported).
 */
import type { Bucket } from '../core/data/buckets.js';
import type { StorageServices } from '../core/services.js';
import { isPlausibleEmail, normaliseEmail } from '../core/data/people.js';
import {
  ALL_USERS,
  AUTHENTICATED_USERS,
  CANNED_ACLS,
  compactAcl,
  grantsOf,
  isPublicAcl,
  LOG_DELIVERY,
  MAX_GRANTS,
  PERMISSIONS,
  type AclGrant,
  type AclPermission,
  type CannedAcl,
  type StoredAcl,
} from '../core/storage/acl.js';
import { taskLimit } from '../core/task-limit.js';
import type { S3Op } from './router.js';
import { mayOnObject } from './access.js';
import { versionHeader, type S3Context } from './context.js';
import { errors, S3Error } from './errors.js';
import { escapeXml, S3_NS } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';
import { readVersion, requestedVersion } from './versions.js';

/** A grant as a request names it: an e-mail is resolved to its account's id before anything is stored. */
type RequestedGrant = AclGrant | { email: string; permission: AclPermission };

/** The ACL a request asks for: a canned one (with the name the request gave it), or grants. */
export type RequestedAcl = { canned: CannedAcl; name: string } | { grants: RequestedGrant[] };

const GRANT_HEADERS: ReadonlyArray<[string, AclPermission]> = [
  ['x-amz-grant-read', 'READ'],
  ['x-amz-grant-write', 'WRITE'],
  ['x-amz-grant-read-acp', 'READ_ACP'],
  ['x-amz-grant-write-acp', 'WRITE_ACP'],
  ['x-amz-grant-full-control', 'FULL_CONTROL'],
];

/** S3's other canned ACLs: valid requests whose grantees (EC2, log delivery, a bucket owner other than the object's) Cairn has no notion of. */
const OTHER_S3_CANNED_ACLS: readonly string[] = ['aws-exec-read', 'bucket-owner-read', 'log-delivery-write'];

/** A canonical id's form, checked before it is looked up (Cairn's are UUIDs; S3's 64 hex digits). */
const CANONICAL_ID = /^[A-Za-z0-9._-]{1,128}$/;
const MAX_EMAIL = 254;

const malformedAcl = () =>
  new S3Error('MalformedACLError', 400, 'The XML you provided was not well-formed or did not validate against our published schema.');
const tooManyGrants = () => new S3Error('MalformedACLError', 400, `An ACL may hold at most ${MAX_GRANTS} grants.`);
const aclsOff = () => new S3Error('AccessControlListNotSupported', 400, 'The bucket does not allow ACLs');

/** `x-amz-acl`'s canned ACL; `bucket-owner-full-control` is private in Cairn, where an object's owner is its bucket's. */
function cannedValue(value: string): CannedAcl {
  if (value === 'bucket-owner-full-control') return 'private';
  if ((CANNED_ACLS as readonly string[]).includes(value)) return value as CannedAcl;
  if (OTHER_S3_CANNED_ACLS.includes(value)) {
    throw errors.notImplemented(`x-amz-acl "${value}" (Cairn supports private, public-read, public-read-write and authenticated-read)`);
  }
  throw errors.invalidArgument(`"${value}" is not a canned ACL.`, 'x-amz-acl', value);
}

/** One grantee as the headers or a body name it: checked for form here, resolved (e-mail) and checked to exist later. */
function grantee(kind: 'id' | 'emailAddress' | 'uri', value: string, permission: AclPermission): RequestedGrant {
  if (kind === 'id') {
    if (!CANONICAL_ID.test(value)) throw errors.invalidArgument('Invalid id', 'id', value.slice(0, 128));
    return { id: value, permission };
  }
  if (kind === 'emailAddress') {
    const email = normaliseEmail(value);
    if (email.length > MAX_EMAIL || !isPlausibleEmail(email)) {
      throw new S3Error('UnresolvableGrantByEmailAddress', 400, 'The email address you provided does not match any account on record.');
    }
    return { email, permission };
  }
  if (value === ALL_USERS || value === AUTHENTICATED_USERS) return { uri: value, permission };
  // S3 has the LogDelivery group for its server access logs; Cairn writes none, so a grant to it would do nothing.
  if (value === LOG_DELIVERY) throw errors.notImplemented('grants to the LogDelivery group (Cairn has no server access logging)');
  throw errors.invalidArgument('Invalid group uri', 'uri', value.slice(0, 256));
}

/**
 * One `x-amz-grant-*` header: a comma-separated list of `id="..."`,
 * `emailAddress="..."` or `uri="..."` (quotes optional), read in one pass.
 */
function headerGrants(name: string, value: string, permission: AclPermission, out: RequestedGrant[]): void {
  for (const part of value.split(',')) {
    const m = /^\s*(id|emailAddress|uri)\s*=\s*(?:"([^"]*)"|([^\s"]*))\s*$/i.exec(part);
    if (!m)
      throw errors.invalidArgument(`Invalid ${name} header: expected id="...", emailAddress="..." or uri="..."`, name, value.slice(0, 256));
    const kind = m[1]!.toLowerCase() === 'emailaddress' ? 'emailAddress' : (m[1]!.toLowerCase() as 'id' | 'uri');
    out.push(grantee(kind, m[2] ?? m[3] ?? '', permission));
    if (out.length > MAX_GRANTS) throw tooManyGrants();
  }
}

/**
 * The ACL a request's headers ask for (`x-amz-acl`, or the `x-amz-grant-*`
 * headers), or undefined when they name none. Both at once is S3's
 * InvalidRequest.
 */
export function headerAcl(headers: Headers): RequestedAcl | undefined {
  const canned = headers.get('x-amz-acl');
  const grantHeaders = GRANT_HEADERS.filter(([name]) => headers.has(name));
  if (canned !== null && grantHeaders.length) throw errors.invalidRequest('Specifying both Canned ACLs and Header Grants is not allowed');
  if (canned !== null) return { canned: cannedValue(canned), name: canned };
  if (!grantHeaders.length) return undefined;
  const grants: RequestedGrant[] = [];
  for (const [name, permission] of grantHeaders) headerGrants(name, headers.get(name)!, permission, grants);
  return { grants };
}

/** An AccessControlPolicy body's grants; its Owner, when given, must be the ACL's owner. */
function bodyAcl(body: Buffer, ownerId: string): RequestedAcl {
  const doc = parseXmlBody(body, 'AccessControlPolicy', ['Grant']);
  const ownerEl = doc.Owner;
  if (ownerEl !== undefined) {
    const id = typeof ownerEl === 'object' && ownerEl !== null ? (ownerEl as Record<string, unknown>).ID : undefined;
    if (typeof id !== 'string') throw malformedAcl();
    // An ACL cannot give its resource away: the owner stays the bucket's.
    if (id !== ownerId) throw errors.accessDenied();
  }
  const list = doc.AccessControlList;
  if (list !== undefined && list !== '' && (typeof list !== 'object' || list === null)) throw malformedAcl();
  const entries = list && typeof list === 'object' ? (((list as Record<string, unknown>).Grant as unknown[] | undefined) ?? []) : [];
  if (!Array.isArray(entries)) throw malformedAcl();
  if (entries.length > MAX_GRANTS) throw tooManyGrants();
  const grants = entries.map((entry) => {
    const { Grantee: who, Permission: permission } = (entry ?? {}) as Record<string, unknown>;
    if (typeof permission !== 'string' || !PERMISSIONS.includes(permission as AclPermission)) throw malformedAcl();
    if (typeof who !== 'object' || who === null) throw malformedAcl();
    const named = (['ID', 'EmailAddress', 'URI'] as const).filter((k) => (who as Record<string, unknown>)[k] !== undefined);
    if (named.length !== 1) throw malformedAcl();
    const value = (who as Record<string, unknown>)[named[0]!];
    if (typeof value !== 'string') throw malformedAcl();
    const kind = named[0] === 'ID' ? 'id' : named[0] === 'EmailAddress' ? 'emailAddress' : 'uri';
    return grantee(kind, value.trim(), permission as AclPermission);
  });
  return { grants };
}

/**
 * Whether a requested ACL is what BucketOwnerEnforced takes: the canned
 * `bucket-owner-full-control`, or grants of FULL_CONTROL to the owner alone
 * ("or equivalent forms of this ACL expressed in the XML format",
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/about-object-ownership.html);
 * not even `private`, as S3 refuses it there.
 */
function ownerOnly(requested: RequestedAcl, ownerId: string): boolean {
  if ('canned' in requested) return requested.name === 'bucket-owner-full-control';
  return requested.grants.every((g) => 'id' in g && g.id === ownerId && g.permission === 'FULL_CONTROL');
}

/**
 * What the bucket's settings say of an ACL a request sets, before anything
 * is read or written: under BucketOwnerEnforced, one that grants anyone but
 * the owner is AccessControlListNotSupported; under BlockPublicAcls, a
 * public one is AccessDenied
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/access-control-block-public-access.html).
 */
export function checkAclAllowed(bucket: Bucket, requested: RequestedAcl): void {
  if (bucket.ownership === 'BucketOwnerEnforced' && !ownerOnly(requested, bucket.accountId)) throw aclsOff();
  const isPublic =
    'canned' in requested ? isPublicAcl(requested.canned) : isPublicAcl(requested.grants.filter((g): g is AclGrant => !('email' in g)));
  if (bucket.publicAccessBlock?.blockPublicAcls && isPublic) throw errors.accessDenied();
}

/**
 * A requested ACL as it is stored: e-mails resolved to their accounts'
 * ids (UnresolvableGrantByEmailAddress when none has it), ids checked to
 * name an account (InvalidArgument), then compacted (a canned ACL's name
 * when the grants are one's). At most 100 grants, so at most 100 lookups,
 * a few at a time.
 */
export async function resolveAcl(
  services: Pick<StorageServices, 'accounts' | 'people'>,
  requested: RequestedAcl,
  ownerId: string,
): Promise<StoredAcl> {
  if ('canned' in requested) return requested.canned;
  const limit = taskLimit(8);
  const ids = new Map<string, Promise<boolean>>();
  const emails = new Map<string, Promise<string | undefined>>();
  for (const g of requested.grants) {
    if ('id' in g && g.id !== ownerId && !ids.has(g.id))
      ids.set(
        g.id,
        limit(async () => (await services.accounts.getAccount(g.id)) !== undefined),
      );
    if ('email' in g && !emails.has(g.email))
      emails.set(
        g.email,
        limit(async () => (await services.people.byEmail(g.email))?.accountId),
      );
  }
  const grants: AclGrant[] = [];
  for (const g of requested.grants) {
    if ('email' in g) {
      const id = await emails.get(g.email)!;
      if (id === undefined) {
        throw new S3Error('UnresolvableGrantByEmailAddress', 400, 'The email address you provided does not match any account on record.');
      }
      grants.push({ id, permission: g.permission });
      continue;
    }
    if ('id' in g && g.id !== ownerId && !(await ids.get(g.id)!)) throw errors.invalidArgument('Invalid id', 'id', g.id);
    grants.push(g);
  }
  return compactAcl(grants, ownerId);
}

/**
 * The ACL a write's headers ask for, checked against the bucket's settings
 * and resolved as stored; private when they name none. CreateBucket passes
 * no bucket (it has no settings yet). Browser POST uploads pass their form's
 * `acl` and `x-amz-grant-*` fields as headers.
 */
export async function aclFromHeaders(
  services: Pick<StorageServices, 'accounts' | 'people'>,
  headers: Headers,
  bucket: Bucket | undefined,
  ownerId: string,
): Promise<StoredAcl> {
  const requested = headerAcl(headers);
  if (!requested) return 'private';
  if (bucket) checkAclAllowed(bucket, requested);
  return resolveAcl(services, requested, ownerId);
}

/** The ACL of what this request writes (PutObject, CopyObject, CreateMultipartUpload), from its headers. */
export function requestedObjectAcl(ctx: S3Context): Promise<StoredAcl> {
  return aclFromHeaders(ctx.services, ctx.req.headers, ctx.bucket!, ctx.bucket!.accountId);
}

/** Operations that set an ACL from the request's `x-amz-acl` or `x-amz-grant-*` headers. */
const ACL_SETTING: ReadonlySet<S3Op> = new Set(['PutObject', 'CopyObject', 'CreateMultipartUpload', 'PutBucketAcl', 'PutObjectAcl']);

/**
 * The bucket's settings against the ACL a request's headers ask for, before
 * anything is read or written (a refused PutObject reads none of its body).
 */
export function checkRequestedAcl(ctx: S3Context): void {
  const bucket = ctx.bucket;
  if (!bucket || !ACL_SETTING.has(ctx.s3.op)) return;
  const requested = headerAcl(ctx.req.headers);
  if (requested) checkAclAllowed(bucket, requested);
}

/** Display names of the accounts an ACL names, looked up a few at a time (at most 101). */
async function displayNames(ctx: S3Context, ids: string[]): Promise<Map<string, { ID: string; DisplayName: string }>> {
  const limit = taskLimit(8);
  const unique = [...new Set(ids)];
  const found = await Promise.all(
    unique.map((id) => limit(async () => ({ ID: id, DisplayName: (await ctx.services.accounts.getAccount(id))?.name ?? id }))),
  );
  return new Map(found.map((who) => [who.ID, who]));
}

/** An AccessControlPolicy: the owner, and each grant (CanonicalUser with its display name, or Group). */
async function aclResponse(ctx: S3Context, ownerId: string, acl: StoredAcl, headers: Record<string, string> = {}): Promise<Response> {
  const grants = grantsOf(acl, ownerId);
  const names = await displayNames(ctx, [ownerId, ...grants.flatMap((g) => ('id' in g ? [g.id] : []))]);
  const who = names.get(ownerId)!;
  const body =
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<AccessControlPolicy xmlns="${S3_NS}">` +
    `<Owner><ID>${escapeXml(who.ID)}</ID><DisplayName>${escapeXml(who.DisplayName)}</DisplayName></Owner><AccessControlList>` +
    grants
      .map((g) => {
        const [type, inner] =
          'id' in g
            ? ['CanonicalUser', `<ID>${escapeXml(g.id)}</ID><DisplayName>${escapeXml(names.get(g.id)!.DisplayName)}</DisplayName>`]
            : ['Group', `<URI>${escapeXml(g.uri)}</URI>`];
        return `<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="${type}">${inner}</Grantee><Permission>${g.permission}</Permission></Grant>`;
      })
      .join('') +
    '</AccessControlList></AccessControlPolicy>';
  return new Response(body, { status: 200, headers: { 'content-type': 'application/xml', ...headers } });
}

/** Under BucketOwnerEnforced ACLs are off: every one reads as the owner's FULL_CONTROL alone, as S3 answers. */
const shownAcl = (bucket: Bucket, acl: StoredAcl | undefined): StoredAcl =>
  bucket.ownership === 'BucketOwnerEnforced' ? 'private' : (acl ?? 'private');

export async function getBucketAcl(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  return aclResponse(ctx, bucket.accountId, shownAcl(bucket, bucket.acl));
}

/** The object version a GetObjectAcl or PutObjectAcl names, if the caller may do that to its ACL (READ_ACP or WRITE_ACP). */
async function aclTarget(ctx: S3Context, permission: 'READ_ACP' | 'WRITE_ACP') {
  const bucket = ctx.bucket!;
  const versionId = requestedVersion(ctx);
  const record = await readVersion(ctx, bucket, ctx.s3.key!, versionId);
  if (!mayOnObject(ctx, bucket, record, permission)) throw errors.accessDenied();
  return { record, versionId };
}

export async function getObjectAcl(ctx: S3Context): Promise<Response> {
  const { record } = await aclTarget(ctx, 'READ_ACP');
  return aclResponse(ctx, record.ownerId, shownAcl(ctx.bucket!, record.acl), versionHeader(ctx, record));
}

/** The ACL a Put*Acl request asks for: `x-amz-acl`, the grant headers, or a policy body (never both kinds). */
async function requestedAcl(ctx: S3Context, bucket: Bucket): Promise<StoredAcl> {
  const body = await readSmallBody(ctx, 256 * 1024);
  const fromHeaders = headerAcl(ctx.req.headers);
  if (fromHeaders && body.length) throw new S3Error('UnexpectedContent', 400, 'This request does not support content');
  const requested = fromHeaders ?? (body.length ? bodyAcl(body, bucket.accountId) : undefined);
  if (!requested)
    throw new S3Error('MissingSecurityHeader', 400, 'Your request was missing a required header', { MissingHeaderName: 'x-amz-acl' });
  checkAclAllowed(bucket, requested);
  return resolveAcl(ctx.services, requested, bucket.accountId);
}

export async function putObjectAcl(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  const { record, versionId } = await aclTarget(ctx, 'WRITE_ACP');
  const acl = await requestedAcl(ctx, bucket);
  if (!(await ctx.services.objects.setAcl(bucket.name, ctx.s3.key!, acl, versionId))) throw errors.noSuchKey(ctx.s3.key!);
  return new Response(null, { status: 200, headers: versionHeader(ctx, record) });
}

export async function putBucketAcl(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  const acl = await requestedAcl(ctx, bucket);
  if (!(await ctx.services.buckets.setAcl(bucket.name, acl))) throw errors.noSuchBucket(bucket.name);
  return new Response(null, { status: 200 });
}
