/**
 * A bucket's public access block (Put/Get/DeletePublicAccessBlock) and its
 * object ownership (Put/Get/DeleteBucketOwnershipControls). What they do to
 * access is core/storage/bucket-access.ts (IgnorePublicAcls,
 * RestrictPublicBuckets, BucketOwnerEnforced), acl.ts (BlockPublicAcls,
 * ACL-setting requests under BucketOwnerEnforced) and bucket-policy.ts
 * (BlockPublicPolicy).
 *
 * In Cairn every object belongs to its bucket's owner, whoever wrote it, so
 * ObjectWriter and BucketOwnerPreferred are kept and answered but change
 * nothing; BucketOwnerEnforced turns ACLs off: they grant nothing, read as
 * the owner's FULL_CONTROL, and requests that set one other than
 * bucket-owner-full-control are AccessControlListNotSupported.
 */
import type { ObjectOwnership, PublicAccessBlock } from '../core/data/buckets.js';
import type { S3Context } from './context.js';
import { errors, S3Error } from './errors.js';
import { xmlResponse } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';

const SETTINGS = ['BlockPublicAcls', 'IgnorePublicAcls', 'BlockPublicPolicy', 'RestrictPublicBuckets'] as const;
const field = (name: (typeof SETTINGS)[number]) => (name[0]!.toLowerCase() + name.slice(1)) as keyof PublicAccessBlock;

/** A small XML body's root element, with nothing in it but `allowed` children. */
async function settingsBody(ctx: S3Context, root: string, allowed: readonly string[], arrays: string[] = []) {
  const doc = parseXmlBody(await readSmallBody(ctx, 64 * 1024), root, arrays);
  for (const name of Object.keys(doc)) if (!allowed.includes(name)) throw errors.malformedXml();
  return doc;
}

export async function putPublicAccessBlock(ctx: S3Context): Promise<Response> {
  const doc = await settingsBody(ctx, 'PublicAccessBlockConfiguration', SETTINGS);
  const block = {} as PublicAccessBlock;
  for (const name of SETTINGS) {
    const value = doc[name] ?? 'false';
    if (typeof value !== 'string' || !/^(true|false)$/i.test(value.trim())) throw errors.malformedXml();
    block[field(name)] = value.trim().toLowerCase() === 'true';
  }
  if (!(await ctx.services.buckets.setPublicAccessBlock(ctx.bucket!.name, block))) throw errors.noSuchBucket(ctx.bucket!.name);
  return new Response(null, { status: 200 });
}

export async function getPublicAccessBlock(ctx: S3Context): Promise<Response> {
  const block = ctx.bucket!.publicAccessBlock;
  if (!block) {
    throw new S3Error('NoSuchPublicAccessBlockConfiguration', 404, 'The public access block configuration was not found', {
      BucketName: ctx.bucket!.name,
    });
  }
  return xmlResponse('PublicAccessBlockConfiguration', Object.fromEntries(SETTINGS.map((name) => [name, String(block[field(name)])])));
}

export async function deletePublicAccessBlock(ctx: S3Context): Promise<Response> {
  if (!(await ctx.services.buckets.setPublicAccessBlock(ctx.bucket!.name, undefined))) throw errors.noSuchBucket(ctx.bucket!.name);
  return new Response(null, { status: 204 });
}

export const OBJECT_OWNERSHIPS: readonly ObjectOwnership[] = ['BucketOwnerEnforced', 'BucketOwnerPreferred', 'ObjectWriter'];

export async function putBucketOwnershipControls(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  const doc = await settingsBody(ctx, 'OwnershipControls', ['Rule'], ['Rule']);
  const rules = (doc.Rule as unknown[] | undefined) ?? [];
  if (rules.length !== 1) throw errors.malformedXml();
  const ownership = (rules[0] as Record<string, unknown> | undefined)?.ObjectOwnership;
  if (typeof ownership !== 'string' || !OBJECT_OWNERSHIPS.includes(ownership as ObjectOwnership)) throw errors.malformedXml();
  // As S3: ACLs go off only once the bucket's grants nobody but its owner.
  if (ownership === 'BucketOwnerEnforced' && (bucket.acl ?? 'private') !== 'private') {
    throw new S3Error(
      'InvalidBucketAclWithObjectOwnership',
      400,
      "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting",
    );
  }
  if (!(await ctx.services.buckets.setOwnership(bucket.name, ownership as ObjectOwnership))) throw errors.noSuchBucket(bucket.name);
  return new Response(null, { status: 200 });
}

export async function getBucketOwnershipControls(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  if (!bucket.ownership) {
    throw new S3Error('OwnershipControlsNotFoundError', 404, 'The bucket ownership controls were not found', { BucketName: bucket.name });
  }
  return xmlResponse('OwnershipControls', { Rule: { ObjectOwnership: bucket.ownership } });
}

export async function deleteBucketOwnershipControls(ctx: S3Context): Promise<Response> {
  if (!(await ctx.services.buckets.setOwnership(ctx.bucket!.name, undefined))) throw errors.noSuchBucket(ctx.bucket!.name);
  return new Response(null, { status: 204 });
}
