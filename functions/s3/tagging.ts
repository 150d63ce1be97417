/**
 * Object and bucket tagging: PutObjectTagging / GetObjectTagging /
 * DeleteObjectTagging, the `x-amz-tagging` header on PutObject,
 * CreateMultipartUpload and CopyObject (with `x-amz-tagging-directive`),
 * `x-amz-tagging-count` on GetObject/HeadObject, and PutBucketTagging /
 * GetBucketTagging / DeleteBucketTagging. S3's limits
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-tagging.html):
 * at most 10 tags on an object and 50 on a bucket, keys unique, a key of
 * 1-128 Unicode characters and a value of 0-256, the `aws:` prefix
 * reserved; a breach is `InvalidTag` (400), as ceph's s3-tests check. A tag
 * set keeps the order it was given in.
 */
import type { Tag } from '../core/data/objects.js';
import { versionHeader, type S3Context } from './context.js';
import { readVersion, requestedVersion } from './versions.js';
import { errors, S3Error } from './errors.js';
import { xmlResponse } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';

export const MAX_OBJECT_TAGS = 10;
export const MAX_BUCKET_TAGS = 50;

const invalidTag = (message: string) => new S3Error('InvalidTag', 400, message);

/** Unicode characters, as S3 counts a tag's length (code points, not UTF-16 units or bytes). */
const characters = (text: string) => [...text].length;

/** Checks a tag set against S3's rules; returns it. */
export function checkedTags(tags: Tag[], max: number): Tag[] {
  if (tags.length > max) throw invalidTag(`${max === MAX_BUCKET_TAGS ? 'Bucket' : 'Object'} tags cannot be greater than ${max}`);
  const seen = new Set<string>();
  for (const { key, value } of tags) {
    if (characters(key) < 1 || characters(key) > 128) throw invalidTag('The TagKey you have provided is invalid');
    if (characters(value) > 256) throw invalidTag('The TagValue you have provided is invalid');
    if (key.toLowerCase().startsWith('aws:')) throw invalidTag('Your TagKey cannot be prefixed with aws:');
    if (seen.has(key)) throw invalidTag('Cannot provide multiple Tags with the same key');
    seen.add(key);
  }
  return tags;
}

/** `x-amz-tagging`: a URL query string (`k1=v1&k2=v2`); undefined when the header is absent. */
export function headerTags(headers: Headers): Tag[] | undefined {
  const raw = headers.get('x-amz-tagging');
  if (raw === null) return undefined;
  const tags: Tag[] = [];
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const [key, value] = eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)];
    try {
      tags.push({ key: decodeURIComponent(key.replaceAll('+', ' ')), value: decodeURIComponent(value.replaceAll('+', ' ')) });
    } catch {
      throw invalidTag('The header x-amz-tagging is not a valid URL-encoded query string');
    }
  }
  return checkedTags(tags, MAX_OBJECT_TAGS);
}

/** The tags a CopyObject gives its copy: the source's (`COPY`, the default) or its own header's (`REPLACE`). */
export function copiedTags(headers: Headers, source: Tag[] | undefined): Tag[] | undefined {
  const directive = (headers.get('x-amz-tagging-directive') ?? 'COPY').toUpperCase();
  if (directive !== 'COPY' && directive !== 'REPLACE') {
    throw errors.invalidArgument('Unknown tagging directive.', 'x-amz-tagging-directive', directive);
  }
  return directive === 'COPY' ? source : headerTags(headers);
}

/** `x-amz-tagging-count`, when the object has tags (GetObject, HeadObject). */
export function taggingCountHeader(tags: Tag[] | undefined): Record<string, string> {
  return tags?.length ? { 'x-amz-tagging-count': String(tags.length) } : {};
}

/** A `<Tagging><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tagging>` body. */
async function requestedTags(ctx: S3Context, max: number): Promise<Tag[]> {
  return parseTagging(await readSmallBody(ctx), max);
}

/** A `<Tagging>` document (a request body, or POST Object's `tagging` field), checked against S3's rules. */
export function parseTagging(body: Buffer, max: number): Tag[] {
  const doc = parseXmlBody(body, 'Tagging', ['Tag']);
  const set = doc.TagSet;
  if (set === undefined || (set !== '' && (typeof set !== 'object' || set === null))) throw errors.malformedXml();
  const entries = set === '' ? [] : (((set as Record<string, unknown>).Tag as unknown[] | undefined) ?? []);
  const tags = entries.map((entry) => {
    const { Key: key, Value: value } = (entry ?? {}) as Record<string, unknown>;
    if (typeof key !== 'string' || (value !== undefined && typeof value !== 'string')) throw errors.malformedXml();
    return { key, value: value ?? '' };
  });
  return checkedTags(tags, max);
}

const tagSet = (tags: Tag[] | undefined) => ({ TagSet: { Tag: (tags ?? []).map((t) => ({ Key: t.key, Value: t.value })) } });

export async function getObjectTagging(ctx: S3Context): Promise<Response> {
  const record = await readVersion(ctx, ctx.bucket!, ctx.s3.key!, requestedVersion(ctx));
  return xmlResponse('Tagging', tagSet(record.tags), { headers: versionHeader(ctx, record) });
}

/** Sets the tags of the version asked for (the current one without `versionId`), answering as S3 when there is none. */
async function setObjectTags(ctx: S3Context, tags: Tag[]): Promise<Record<string, string>> {
  const versionId = requestedVersion(ctx);
  const bucket = ctx.bucket!;
  if (await ctx.services.objects.setTags(bucket.name, ctx.s3.key!, tags, versionId)) {
    return versionId !== undefined
      ? versionHeader(ctx, { versionId })
      : versionHeader(ctx, await ctx.services.objects.get(bucket.name, ctx.s3.key!));
  }
  // Nothing was changed: say why, as a read of that version would.
  await readVersion(ctx, bucket, ctx.s3.key!, versionId);
  throw errors.noSuchKey(ctx.s3.key!);
}

export async function putObjectTagging(ctx: S3Context): Promise<Response> {
  requestedVersion(ctx);
  // A policy that asks about the request's tags had the body read to decide (policy-facts.ts).
  const tags = [...(ctx.policyFacts?.requestTags ?? (await requestedTags(ctx, MAX_OBJECT_TAGS)))];
  return new Response(null, { status: 200, headers: await setObjectTags(ctx, tags) });
}

export async function deleteObjectTagging(ctx: S3Context): Promise<Response> {
  return new Response(null, { status: 204, headers: await setObjectTags(ctx, []) });
}

export async function getBucketTagging(ctx: S3Context): Promise<Response> {
  const tags = ctx.bucket!.tags;
  if (!tags?.length) throw new S3Error('NoSuchTagSet', 404, 'The TagSet does not exist', { BucketName: ctx.bucket!.name });
  return xmlResponse('Tagging', tagSet(tags));
}

export async function putBucketTagging(ctx: S3Context): Promise<Response> {
  const tags = await requestedTags(ctx, MAX_BUCKET_TAGS);
  if (!(await ctx.services.buckets.setTags(ctx.bucket!.name, tags))) throw errors.noSuchBucket(ctx.bucket!.name);
  return new Response(null, { status: 204 });
}

export async function deleteBucketTagging(ctx: S3Context): Promise<Response> {
  if (!(await ctx.services.buckets.setTags(ctx.bucket!.name, undefined))) throw errors.noSuchBucket(ctx.bucket!.name);
  return new Response(null, { status: 204 });
}
