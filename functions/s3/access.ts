/**
 * What a request is to a bucket policy (its action, resource and condition
 * values), and the access decisions the S3 operations share: may this
 * caller read this object, list this bucket, delete this key. How policy,
 * ACLs, the public access block and object ownership combine is
 * core/storage/bucket-access.ts; this file only asks it.
 *
 * The condition values come from the request as the door saw it:
 * `aws:SourceIp` is `HttpRequest.remoteAddress` (the socket's peer on the
 * node:http door; API Gateway's `requestContext.identity.sourceIp`; a
 * Function URL's `requestContext.http.sourceIp`), never X-Forwarded-For,
 * which any client can write. `aws:SecureTransport` is `HttpRequest.secure`.
 */
import type { Bucket } from '../core/data/buckets.js';
import type { ObjectRecord } from '../core/data/objects.js';
import type { AclPermission } from '../core/storage/acl.js';
import { decideAccess, policyVerdict } from '../core/storage/bucket-access.js';
import {
  existingTagContext,
  REQUEST_TAG_PREFIX,
  type ConditionContext,
  type PolicyAction,
  type Verdict,
} from '../core/storage/bucket-policy.js';
import type { Tag } from '../core/data/objects.js';
import type { S3Context } from './context.js';
import { ACCESS, type Access, type S3Op, type S3Request } from './router.js';

/** The IAM action each operation is, for a bucket policy (ListBuckets and CreateBucket are the account's, not a bucket's). */
export const POLICY_ACTION: Partial<Record<S3Op, PolicyAction>> = {
  HeadBucket: 's3:ListBucket',
  DeleteBucket: 's3:DeleteBucket',
  GetBucketLocation: 's3:GetBucketLocation',
  GetBucketVersioning: 's3:GetBucketVersioning',
  PutBucketVersioning: 's3:PutBucketVersioning',
  GetBucketAcl: 's3:GetBucketAcl',
  PutBucketAcl: 's3:PutBucketAcl',
  PutBucketCors: 's3:PutBucketCORS',
  GetBucketCors: 's3:GetBucketCORS',
  DeleteBucketCors: 's3:PutBucketCORS',
  GetBucketTagging: 's3:GetBucketTagging',
  PutBucketTagging: 's3:PutBucketTagging',
  DeleteBucketTagging: 's3:PutBucketTagging',
  PutBucketPolicy: 's3:PutBucketPolicy',
  GetBucketPolicy: 's3:GetBucketPolicy',
  DeleteBucketPolicy: 's3:DeleteBucketPolicy',
  GetBucketPolicyStatus: 's3:GetBucketPolicyStatus',
  PutPublicAccessBlock: 's3:PutBucketPublicAccessBlock',
  GetPublicAccessBlock: 's3:GetBucketPublicAccessBlock',
  DeletePublicAccessBlock: 's3:PutBucketPublicAccessBlock',
  PutBucketOwnershipControls: 's3:PutBucketOwnershipControls',
  GetBucketOwnershipControls: 's3:GetBucketOwnershipControls',
  DeleteBucketOwnershipControls: 's3:PutBucketOwnershipControls',
  // DeleteBucketLifecycle is s3:PutLifecycleConfiguration, as in S3 (API_DeleteBucketLifecycle.html).
  PutBucketLifecycleConfiguration: 's3:PutLifecycleConfiguration',
  GetBucketLifecycleConfiguration: 's3:GetLifecycleConfiguration',
  DeleteBucketLifecycle: 's3:PutLifecycleConfiguration',
  ListObjects: 's3:ListBucket',
  ListObjectsV2: 's3:ListBucket',
  ListObjectVersions: 's3:ListBucketVersions',
  ListMultipartUploads: 's3:ListBucketMultipartUploads',
  // DeleteObjects: each key is checked as s3:DeleteObject (delete.ts).
  PutObject: 's3:PutObject',
  PostObject: 's3:PutObject',
  CopyObject: 's3:PutObject',
  GetObject: 's3:GetObject',
  HeadObject: 's3:GetObject',
  DeleteObject: 's3:DeleteObject',
  GetObjectAcl: 's3:GetObjectAcl',
  GetObjectAttributes: 's3:GetObjectAttributes',
  PutObjectAcl: 's3:PutObjectAcl',
  GetObjectTagging: 's3:GetObjectTagging',
  PutObjectTagging: 's3:PutObjectTagging',
  DeleteObjectTagging: 's3:DeleteObjectTagging',
  CreateMultipartUpload: 's3:PutObject',
  UploadPart: 's3:PutObject',
  UploadPartCopy: 's3:PutObject',
  CompleteMultipartUpload: 's3:PutObject',
  AbortMultipartUpload: 's3:AbortMultipartUpload',
  ListParts: 's3:ListMultipartUploadParts',
};

/**
 * What an object operation naming a `versionId` is to a policy instead
 * ("Amazon S3 condition key examples" and the Service Authorization
 * Reference's S3 actions: s3:GetObjectVersion for GET and HEAD of a version,
 * s3:DeleteObjectVersion, s3:Get/PutObjectVersionAcl, s3:Get/Put/
 * DeleteObjectVersionTagging).
 */
const VERSION_ACTION: Partial<Record<S3Op, PolicyAction>> = {
  GetObject: 's3:GetObjectVersion',
  HeadObject: 's3:GetObjectVersion',
  DeleteObject: 's3:DeleteObjectVersion',
  GetObjectAcl: 's3:GetObjectVersionAcl',
  PutObjectAcl: 's3:PutObjectVersionAcl',
  GetObjectTagging: 's3:GetObjectVersionTagging',
  PutObjectTagging: 's3:PutObjectVersionTagging',
  DeleteObjectTagging: 's3:DeleteObjectVersionTagging',
};

/** The IAM action this request is to a bucket policy, its version's when it names one. */
export function policyActionFor(s3: Pick<S3Request, 'op' | 'query'>): PolicyAction | undefined {
  return (s3.query.has('versionId') ? VERSION_ACTION[s3.op] : undefined) ?? POLICY_ACTION[s3.op];
}

/** The policy's own management: the bucket's owner may always do these, whatever the policy denies, so a bad policy can be fixed. */
export const POLICY_MANAGEMENT: ReadonlySet<S3Op> = new Set(['PutBucketPolicy', 'GetBucketPolicy', 'DeleteBucketPolicy']);

/**
 * Only the bucket's owner does these, whatever a policy allows: the settings
 * that decide who else may do anything, and deleting the bucket itself.
 */
export const OWNER_ONLY: ReadonlySet<S3Op> = new Set([
  'DeleteBucket',
  'PutBucketPolicy',
  'GetBucketPolicy',
  'DeleteBucketPolicy',
  'GetBucketPolicyStatus',
  'PutPublicAccessBlock',
  'GetPublicAccessBlock',
  'DeletePublicAccessBlock',
  'PutBucketOwnershipControls',
  'GetBucketOwnershipControls',
  'DeleteBucketOwnershipControls',
]);

const LIST_OPS: ReadonlySet<S3Op> = new Set(['ListObjects', 'ListObjectsV2', 'ListObjectVersions', 'ListMultipartUploads']);

/*
 * Which action carries which S3 condition key, as S3's table has it ("Actions,
 * resources, and condition keys for Amazon S3",
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html);
 * on any other action the key is absent from the request, as in S3.
 */
/** s3:x-amz-acl and s3:x-amz-grant-*: the writes that may set an ACL (CreateBucket is the account's, not a bucket policy's). */
const ACL_KEY_ACTIONS: ReadonlySet<PolicyAction> = new Set([
  's3:PutObject',
  's3:PutObjectAcl',
  's3:PutObjectVersionAcl',
  's3:PutBucketAcl',
]);
const GRANT_HEADERS = ['read', 'write', 'read-acp', 'write-acp', 'full-control'] as const;
/**
 * s3:ExistingObjectTag/<key>: the object's reads, its ACL and its tagging;
 * not PutObject or DeleteObject ("When granting permissions for the PUT
 * Object and DELETE Object operations, this condition key is not supported",
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/tagging-and-policies.html).
 */
export const EXISTING_TAG_ACTIONS: ReadonlySet<PolicyAction> = new Set([
  's3:GetObject',
  's3:GetObjectVersion',
  's3:GetObjectAcl',
  's3:GetObjectVersionAcl',
  's3:PutObjectAcl',
  's3:PutObjectVersionAcl',
  's3:GetObjectTagging',
  's3:GetObjectVersionTagging',
  's3:PutObjectTagging',
  's3:PutObjectVersionTagging',
  's3:DeleteObjectTagging',
  's3:DeleteObjectVersionTagging',
]);
/** s3:RequestObjectTag/<key> and s3:RequestObjectTagKeys: the writes that set tags (tagging-and-policies.html, above). */
const REQUEST_TAG_ACTIONS: ReadonlySet<PolicyAction> = new Set(['s3:PutObject', 's3:PutObjectTagging', 's3:PutObjectVersionTagging']);
/** s3:VersionId: the version actions (VERSION_ACTION's), which a request naming a versionId is. */
const VERSION_ID_ACTIONS: ReadonlySet<PolicyAction> = new Set(Object.values(VERSION_ACTION));
const LIST_KEY_ACTIONS: ReadonlySet<PolicyAction> = new Set(['s3:ListBucket', 's3:ListBucketVersions', 's3:ListBucketMultipartUploads']);

/**
 * The request's condition values for `action` (see the header comment for
 * where the global ones come from). `existingTags`: the tags of the object
 * version the action is on, for s3:ExistingObjectTag/<key>.
 */
export function conditionContext(
  ctx: S3Context,
  action: PolicyAction,
  existingTags?: readonly Tag[],
  listing = LIST_OPS.has(ctx.s3.op),
): ConditionContext {
  const { req, s3 } = ctx;
  const principal = ctx.auth.principal;
  const out: ConditionContext = {
    'aws:securetransport': req.secure ? 'true' : 'false',
    'aws:principaltype': principal.kind === 'account' ? 'Account' : 'Anonymous',
  };
  if (req.remoteAddress) out['aws:sourceip'] = req.remoteAddress;
  const referer = req.headers.get('referer');
  if (referer !== null) out['aws:referer'] = referer;
  const agent = req.headers.get('user-agent');
  if (agent !== null) out['aws:useragent'] = agent;
  if (principal.kind === 'account') {
    out['aws:principalaccount'] = principal.accountId;
    out['aws:userid'] = principal.accountId;
  }
  if (ACL_KEY_ACTIONS.has(action)) {
    // The headers as sent (a POST's acl field is its x-amz-acl), as ceph's cases compare them: `id=<canonical id>`.
    const acl = req.headers.get('x-amz-acl');
    if (acl !== null) out['s3:x-amz-acl'] = acl;
    for (const grant of GRANT_HEADERS) {
      const value = req.headers.get(`x-amz-grant-${grant}`);
      if (value !== null) out[`s3:x-amz-grant-${grant}`] = value;
    }
  }
  if (action === 's3:PutObject') {
    const directive = req.headers.get('x-amz-metadata-directive');
    if (directive !== null) out['s3:x-amz-metadata-directive'] = directive;
    if (ctx.policyFacts?.copySource !== undefined) out['s3:x-amz-copy-source'] = ctx.policyFacts.copySource;
  }
  const requestTags = ctx.policyFacts?.requestTags;
  if (requestTags && REQUEST_TAG_ACTIONS.has(action)) {
    out['s3:requestobjecttagkeys'] = requestTags.map((t) => t.key);
    for (const t of requestTags) out[`${REQUEST_TAG_PREFIX}${t.key}`] = t.value;
  }
  if (existingTags && EXISTING_TAG_ACTIONS.has(action)) Object.assign(out, existingTagContext(existingTags));
  const versionId = s3.query.get('versionId');
  if (versionId !== undefined && VERSION_ID_ACTIONS.has(action)) out['s3:versionid'] = versionId;
  if (listing && LIST_KEY_ACTIONS.has(action)) {
    // S3 fills s3:prefix in for every listing, as '' when none is asked for.
    out['s3:prefix'] = s3.query.get('prefix') ?? '';
    const delimiter = s3.query.get('delimiter');
    if (delimiter !== undefined) out['s3:delimiter'] = delimiter;
    const maxKeys = s3.query.get('max-keys') ?? s3.query.get('max-uploads');
    if (maxKeys !== undefined) out['s3:max-keys'] = maxKeys;
  }
  return out;
}

const callerAccount = (ctx: S3Context) => (ctx.auth.principal.kind === 'account' ? ctx.auth.principal.accountId : undefined);

export const isBucketOwner = (ctx: S3Context, bucket: Bucket) => callerAccount(ctx) === bucket.accountId;

/**
 * The bucket policy's verdict on this caller doing `action` to the bucket
 * (no key) or one of its keys: with `context`, on those condition values;
 * else on the request's, with `existingTags` as the object's tags.
 */
export function verdictFor(
  ctx: S3Context,
  bucket: Bucket,
  action: PolicyAction,
  key: string | undefined,
  facts: { context?: ConditionContext; existingTags?: readonly Tag[] } = {},
): Verdict {
  // Most buckets have no policy: nothing to gather for it then.
  if (bucket.policy === undefined) return 'none';
  const account = callerAccount(ctx);
  return policyVerdict(bucket, {
    ...(account !== undefined ? { account } : {}),
    action,
    resource: key === undefined ? bucket.name : `${bucket.name}/${key}`,
    context: facts.context ?? conditionContext(ctx, action, facts.existingTags),
  });
}

/**
 * Whether the caller may list the bucket, as a GET of a missing key asks
 * (NoSuchKey to whoever may, AccessDenied to others): the policy's
 * s3:ListBucket with s3:prefix set to that key, as S3 evaluates it, or a
 * READ grant in the bucket's ACL.
 */
export function mayListFor(ctx: S3Context, bucket: Bucket, key: string): boolean {
  const verdict =
    bucket.policy === undefined
      ? 'none'
      : verdictFor(ctx, bucket, 's3:ListBucket', undefined, {
          context: { ...conditionContext(ctx, 's3:ListBucket', undefined, false), 's3:prefix': key },
        });
  return decideAccess(bucket, { caller: callerAccount(ctx), verdict, acl: { acl: bucket.acl, permission: 'READ' } });
}

/**
 * Whether the caller may read this object of this bucket: a policy's
 * verdict on s3:GetObject (s3:GetObjectVersion when the request names a
 * version), or a READ grant in that version's ACL.
 */
export function mayReadObject(
  ctx: S3Context,
  bucket: Bucket,
  record: Pick<ObjectRecord, 'key' | 'acl' | 'tags'>,
  byVersion = false,
): boolean {
  const verdict = verdictFor(ctx, bucket, byVersion ? 's3:GetObjectVersion' : 's3:GetObject', record.key, {
    existingTags: record.tags ?? [],
  });
  return decideAccess(bucket, { caller: callerAccount(ctx), verdict, acl: { acl: record.acl, permission: 'READ' } });
}

/**
 * Whether the caller may read or write this object version's ACL
 * (GetObjectAcl, PutObjectAcl): the policy's verdict on the request's
 * action, or a READ_ACP / WRITE_ACP grant in that version's ACL.
 */
export function mayOnObject(
  ctx: S3Context,
  bucket: Bucket,
  record: Pick<ObjectRecord, 'key' | 'acl' | 'tags'>,
  permission: 'READ_ACP' | 'WRITE_ACP',
): boolean {
  const action = policyActionFor(ctx.s3);
  const verdict = action ? verdictFor(ctx, bucket, action, record.key, { existingTags: record.tags ?? [] }) : 'none';
  return decideAccess(bucket, { caller: callerAccount(ctx), verdict, acl: { acl: record.acl, permission } });
}

/**
 * The bucket permission an ACL must grant another caller for each kind of
 * operation (router.ts ACCESS), as S3 maps ACL permissions to operations
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html#permissions):
 * READ lists, WRITE puts and deletes objects, READ_ACP and WRITE_ACP read
 * and write the bucket's ACL. Object ACLs are weighed in their operations.
 */
export const BUCKET_PERMISSION: Partial<Record<Access, AclPermission>> = {
  'bucket-read': 'READ',
  'bucket-write': 'WRITE',
  'bucket-read-acp': 'READ_ACP',
  'bucket-write-acp': 'WRITE_ACP',
};

/** Whether the bucket's ACL lets this (not owning) caller do this operation; a versioned delete is the bucket owner's, or a policy's, only. */
export function bucketAclAllows(ctx: S3Context, bucket: Bucket, verdict: Verdict): boolean {
  const permission = BUCKET_PERMISSION[ACCESS[ctx.s3.op]];
  // "When the grantee is the bucket owner, granting WRITE permission in a bucket ACL allows the
  // s3:DeleteObjectVersion action" (acl-overview.html, above): no one else's WRITE does.
  const byAcl = permission !== undefined && !(ctx.s3.op === 'DeleteObject' && ctx.s3.query.has('versionId'));
  return decideAccess(bucket, { caller: callerAccount(ctx), verdict, ...(byAcl ? { acl: { acl: bucket.acl, permission } } : {}) });
}

/** Whether one key of a DeleteObjects may go: s3:DeleteObject (s3:DeleteObjectVersion with a version), or the bucket's WRITE grant for a plain delete. */
export function mayDeleteKey(ctx: S3Context, bucket: Bucket, key: string, versionId: string | undefined): boolean {
  const verdict = verdictFor(ctx, bucket, versionId === undefined ? 's3:DeleteObject' : 's3:DeleteObjectVersion', key);
  return decideAccess(bucket, {
    caller: callerAccount(ctx),
    verdict,
    ...(versionId === undefined ? { acl: { acl: bucket.acl, permission: 'WRITE' as const } } : {}),
  });
}
