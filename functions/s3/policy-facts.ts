/**
 * The facts a bucket policy's conditions read that a request's headers do
 * not say at once: the current tags of the object it acts on
 * (`s3:ExistingObjectTag/<key>`), the tags it sets (`s3:RequestObjectTag/<key>`,
 * `s3:RequestObjectTagKeys`) and its copy source, decoded
 * (`s3:x-amz-copy-source`). Gathered once, before the request is authorised,
 * and only what the bucket's policy asks about: a bucket without a policy,
 * or whose policy names no tag key, costs no read and no parse.
 *
 * A PutObjectTagging body is read here (bounded, as the operation would read
 * it) when the policy asks about request tags: the tags it sets are then
 * ctx.policyFacts.requestTags, which the operation stores.
 */
import type { Bucket } from '../core/data/buckets.js';
import type { Tag } from '../core/data/objects.js';
import { bucketPolicy } from '../core/storage/bucket-access.js';
import type { PolicyAction } from '../core/storage/bucket-policy.js';
import { EXISTING_TAG_ACTIONS } from './access.js';
import type { PolicyFacts, S3Context } from './context.js';
import { parseCopySource } from './copy.js';
import { headerTags, MAX_OBJECT_TAGS, parseTagging } from './tagging.js';
import { readSmallBody } from './xml-input.js';
import { requestedVersion } from './versions.js';

export async function gatherPolicyFacts(ctx: S3Context, bucket: Bucket, action: PolicyAction): Promise<PolicyFacts> {
  const found = bucketPolicy(bucket);
  const facts: PolicyFacts = {};
  if (!found) return facts;
  const { req, s3 } = ctx;
  const copySource = req.headers.get('x-amz-copy-source');
  if (copySource !== null && action === 's3:PutObject') {
    let value = copySource.startsWith('/') ? copySource.slice(1) : copySource;
    try {
      const source = parseCopySource(copySource);
      value = `${source.bucket}/${source.key}${source.versionId === undefined ? '' : `?versionId=${source.versionId}`}`;
    } catch {
      // The operation refuses it with S3's error; a condition sees it as sent.
    }
    facts.copySource = value;
  }
  if (found.policy.uses.existingTags && s3.key !== undefined && EXISTING_TAG_ACTIONS.has(action)) {
    facts.existingTags = await currentTags(ctx, bucket, s3.key);
  }
  if (found.policy.uses.requestTags) {
    const tags = await requestTags(ctx);
    if (tags) facts.requestTags = tags;
  }
  return facts;
}

/** The tags of the version the request names (the current one without a versionId); none when there is no such object. */
async function currentTags(ctx: S3Context, bucket: Bucket, key: string): Promise<readonly Tag[]> {
  const versionId = requestedVersion(ctx);
  if (versionId === undefined) return (await ctx.services.objects.get(bucket.name, key))?.tags ?? [];
  const version = await ctx.services.objects.getVersion(bucket.name, key, versionId);
  return version?.kind === 'object' ? (version.record.tags ?? []) : [];
}

/** The tags the request sets, checked as the operation checks them (InvalidTag, MalformedXML); undefined when it sets none. */
async function requestTags(ctx: S3Context): Promise<readonly Tag[] | undefined> {
  switch (ctx.s3.op) {
    case 'PutObjectTagging':
      return parseTagging(await readSmallBody(ctx), MAX_OBJECT_TAGS);
    case 'PostObject':
      return ctx.post?.tags;
    case 'PutObject':
    case 'CopyObject':
    case 'CreateMultipartUpload':
      return headerTags(ctx.req.headers);
    default:
      return undefined;
  }
}
