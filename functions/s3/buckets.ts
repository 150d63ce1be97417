/** Service- and bucket-level operations. */
import { BucketExistsError, type CannedAcl, type ObjectOwnership } from '../core/data/buckets.js';
import { OBJECT_OWNERSHIPS } from './public-access.js';
import type { S3Context } from './context.js';
import { errors, S3Error } from './errors.js';
import { escapeXml, S3_NS, xmlResponse } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';
import { isValidBucketName } from './names.js';
import { cannedAcl } from './request-headers.js';

function accountOf(ctx: S3Context): string {
  if (ctx.auth.principal.kind !== 'account') throw errors.accessDenied();
  return ctx.auth.principal.accountId;
}

export async function owner(ctx: S3Context, accountId: string): Promise<{ ID: string; DisplayName: string }> {
  const account = await ctx.services.accounts.getAccount(accountId);
  return { ID: accountId, DisplayName: account?.name ?? accountId };
}

export async function listBuckets(ctx: S3Context): Promise<Response> {
  const accountId = accountOf(ctx);
  const [buckets, who] = await Promise.all([ctx.services.buckets.list(accountId), owner(ctx, accountId)]);
  return xmlResponse('ListAllMyBucketsResult', {
    Owner: who,
    Buckets: { Bucket: buckets.map((b) => ({ Name: b.name, CreationDate: b.createdAt })) },
  });
}

export async function headBucket(ctx: S3Context): Promise<Response> {
  return new Response(null, { status: 200, headers: { 'x-amz-bucket-region': ctx.services.config.region } });
}

/** CreateBucket's `x-amz-object-ownership`: one of S3's three rules; BucketOwnerEnforced only with a private ACL, as S3 has it. */
function requestedOwnership(headers: Headers, acl: CannedAcl): ObjectOwnership | undefined {
  const value = headers.get('x-amz-object-ownership');
  if (value === null) return undefined;
  if (!OBJECT_OWNERSHIPS.includes(value as ObjectOwnership)) {
    throw errors.invalidArgument('Invalid x-amz-object-ownership header', 'x-amz-object-ownership', value);
  }
  if (value === 'BucketOwnerEnforced' && acl !== 'private') {
    throw new S3Error(
      'InvalidBucketAclWithObjectOwnership',
      400,
      "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting",
    );
  }
  return value as ObjectOwnership;
}

export async function createBucket(ctx: S3Context): Promise<Response> {
  const accountId = accountOf(ctx);
  const name = ctx.s3.bucket!;
  if (!isValidBucketName(name)) throw errors.invalidBucketName(name);
  const acl = cannedAcl(ctx.req.headers);
  const ownership = requestedOwnership(ctx.req.headers, acl);
  const body = await readSmallBody(ctx);
  if (body.length) {
    const config = parseXmlBody(body, 'CreateBucketConfiguration');
    const constraint = typeof config.LocationConstraint === 'string' ? config.LocationConstraint : '';
    const region = ctx.services.config.region;
    if (constraint && constraint !== region && !(region === 'us-east-1' && constraint === 'US')) {
      throw new S3Error(
        'IllegalLocationConstraintException',
        400,
        `The ${constraint} location constraint is incompatible for the region specific endpoint this request was sent to.`,
      );
    }
  }
  try {
    await ctx.services.buckets.create(name, accountId, ctx.now.toISOString(), acl, ownership);
  } catch (err) {
    if (err instanceof BucketExistsError) {
      // S3's legacy behaviour in us-east-1: re-creating a bucket you own
      // succeeds. AWS documents it as resetting the bucket's ACL; Cairn's
      // buckets are always private, so the bucket is left exactly as it was.
      if (err.ownedByCaller && ctx.services.config.region === 'us-east-1')
        return new Response(null, { status: 200, headers: { location: `/${name}` } });
      throw err.ownedByCaller
        ? new S3Error(
            'BucketAlreadyOwnedByYou',
            409,
            'Your previous request to create the named bucket succeeded and you already own it.',
            { BucketName: name },
          )
        : new S3Error(
            'BucketAlreadyExists',
            409,
            'The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.',
            { BucketName: name },
          );
    }
    throw err;
  }
  return new Response(null, { status: 200, headers: { location: `/${name}` } });
}

export async function deleteBucket(ctx: S3Context): Promise<Response> {
  const { services } = ctx;
  const bucket = ctx.bucket!;
  if (bucket.isDefault) {
    throw new S3Error('InvalidBucketState', 409, "An account's default bucket cannot be deleted.", { BucketName: bucket.name });
  }
  // Unfinished multipart uploads do not keep a bucket: AWS deletes it and
  // its uploads with it, and so do Ceph RGW and Scality CloudServer for
  // compatibility (ceph/ceph#15630, scality/cloudserver#1591).
  let ended: string[] = [];
  const deleted = await services.buckets
    .deleteIfEmpty(
      bucket.name,
      async () => !(await services.objects.hasObjects(bucket.name)),
      async () => {
        const end = await services.uploads.endAllItems(bucket.name);
        ended = end.uploadIds;
        return end.items;
      },
    )
    .catch((err: Error) => {
      if (err.name === 'ConditionalCheckFailedException') throw errors.noSuchBucket(bucket.name);
      throw err;
    });
  if (!deleted) throw new S3Error('BucketNotEmpty', 409, 'The bucket you tried to delete is not empty', { BucketName: bucket.name });
  for (const uploadId of ended) {
    // Each ended upload left a cleanup marker: a failure here only leaves its parts to garbage collection.
    await services.uploads.cleanup(uploadId).catch((err: unknown) => {
      services.logger.warn('multipart cleanup failed; garbage collection will finish it', { err, uploadId });
    });
  }
  return new Response(null, { status: 204 });
}

export async function getBucketLocation(ctx: S3Context): Promise<Response> {
  const region = ctx.services.config.region;
  // us-east-1 is S3's "no constraint": an empty element.
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<LocationConstraint xmlns="${S3_NS}">${region === 'us-east-1' ? '' : escapeXml(region)}</LocationConstraint>`;
  return new Response(body, { status: 200, headers: { 'content-type': 'application/xml' } });
}

export async function getBucketVersioning(ctx: S3Context): Promise<Response> {
  // A bucket never versioned answers an empty configuration, as S3 does.
  const state = ctx.bucket!.versioning;
  return xmlResponse('VersioningConfiguration', state ? { Status: state } : {});
}

/**
 * PutBucketVersioning: `Enabled` or `Suspended` (a bucket never versioned
 * can be suspended too; none can go back to never versioned). Cairn has no
 * MFA devices, so `MfaDelete` `Enabled` is NotImplemented; `Disabled`, the
 * only state there is, is accepted.
 */
export async function putBucketVersioning(ctx: S3Context): Promise<Response> {
  const doc = parseXmlBody(await readSmallBody(ctx), 'VersioningConfiguration');
  const status = doc.Status;
  const mfa = doc.MfaDelete;
  if (status !== undefined && status !== 'Enabled' && status !== 'Suspended') throw errors.malformedXml();
  if (mfa !== undefined && mfa !== 'Enabled' && mfa !== 'Disabled') throw errors.malformedXml();
  if (mfa === 'Enabled') throw errors.notImplemented('MfaDelete');
  if (status !== undefined && !(await ctx.services.buckets.setVersioning(ctx.bucket!.name, status))) {
    throw errors.noSuchBucket(ctx.bucket!.name);
  }
  return new Response(null, { status: 200 });
}
