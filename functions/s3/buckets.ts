/** Service- and bucket-level operations. */
import { BucketExistsError, type ObjectOwnership, type StoredAcl } from '../core/data/buckets.js';
import { OBJECT_OWNERSHIPS } from './public-access.js';
import type { S3Context } from './context.js';
import { errors, S3Error } from './errors.js';
import { escapeXml, S3_NS, xmlResponse } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';
import { isValidBucketName } from './names.js';
import { aclFromHeaders } from './acl.js';

function accountOf(ctx: S3Context): string {
  if (ctx.auth.principal.kind !== 'account') throw errors.accessDenied();
  return ctx.auth.principal.accountId;
}

export async function owner(ctx: S3Context, accountId: string): Promise<{ ID: string; DisplayName: string }> {
  const account = await ctx.services.accounts.getAccount(accountId);
  return { ID: accountId, DisplayName: account?.name ?? accountId };
}

/** ListBuckets' most buckets a page (`max-buckets`: "Valid Range: Minimum value of 1. Maximum value of 10000", the ListBuckets API reference). */
const MAX_BUCKETS = 10_000;

/**
 * ListBuckets, the account's default bucket first (Fleek's storage SDK and
 * ours take the first bucket as the default), then the others by name,
 * with the paging S3 added in 2024
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListBuckets.html):
 * `max-buckets`, an opaque `continuation-token` (here the page's last
 * place in that order, base64url), `prefix` (echoed as `Prefix`),
 * `bucket-region` (every bucket is in the service's one region).
 * `ContinuationToken` comes only when more buckets follow. Without
 * `max-buckets` the answer holds every bucket, as before.
 */
export async function listBuckets(ctx: S3Context): Promise<Response> {
  const accountId = accountOf(ctx);
  const q = ctx.s3.query;
  let max = Infinity;
  if (q.has('max-buckets')) {
    const text = q.get('max-buckets')!;
    max = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
    if (!(max >= 1 && max <= MAX_BUCKETS)) {
      throw errors.invalidArgument(`Argument max-buckets must be an integer between 1 and ${MAX_BUCKETS}`, 'max-buckets', text);
    }
  }
  let after: string | undefined;
  if (q.has('continuation-token')) {
    const token = q.get('continuation-token')!;
    after = /^[A-Za-z0-9_-]{1,128}$/.test(token) ? Buffer.from(token, 'base64url').toString('utf8') : undefined;
    const name = after?.match(/^[01]#(.+)$/)?.[1];
    if (name === undefined || !isValidBucketName(name) || Buffer.from(after!).toString('base64url') !== token) {
      throw errors.invalidArgument('The continuation token provided is incorrect', 'continuation-token', token);
    }
  }
  const prefix = q.get('prefix') ?? '';
  const region = q.get('bucket-region');
  const [all, who] = await Promise.all([ctx.services.buckets.list(accountId), owner(ctx, accountId)]);
  const matching =
    region !== undefined && region !== ctx.services.config.region
      ? []
      : all
          .map((b) => ({ bucket: b, place: `${b.isDefault ? 0 : 1}#${b.name}` }))
          .filter(({ bucket, place }) => bucket.name.startsWith(prefix) && (after === undefined || place > after))
          .sort((a, b) => (a.place < b.place ? -1 : a.place > b.place ? 1 : 0));
  const page = matching.slice(0, Math.min(max, matching.length));
  return xmlResponse('ListAllMyBucketsResult', {
    Owner: who,
    Buckets: {
      Bucket: page.map(({ bucket: b }) => ({ Name: b.name, CreationDate: b.createdAt, BucketRegion: ctx.services.config.region })),
    },
    ContinuationToken: matching.length > page.length ? Buffer.from(page.at(-1)!.place).toString('base64url') : undefined,
    Prefix: q.has('prefix') ? prefix : undefined,
  });
}

export async function headBucket(ctx: S3Context): Promise<Response> {
  return new Response(null, { status: 200, headers: { 'x-amz-bucket-region': ctx.services.config.region } });
}

/** CreateBucket's `x-amz-object-ownership`: one of S3's three rules; BucketOwnerEnforced only with a private ACL, as S3 has it. */
function requestedOwnership(headers: Headers, acl: StoredAcl): ObjectOwnership | undefined {
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
  const acl = await aclFromHeaders(ctx.services, ctx.req.headers, undefined, accountId);
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
