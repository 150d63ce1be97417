/**
 * CopyObject: the destination references the source's CID (no bytes move,
 * the content is already pinned), with the metadata copied or replaced.
 */
import type { ObjectRecord, Tag } from '../core/data/objects.js';
import { ipfsHeaders } from '../core/http/object-headers.js';
import { cannedAcl, objectHeaders } from './request-headers.js';
import { mayListFor, mayReadObject } from './access.js';
import { ownerOf, presentedEtag, type S3Context } from './context.js';
import { errors } from './errors.js';
import { evaluateConditions, notModifiedAsFailure } from './conditions.js';
import { xmlResponse } from './xml.js';
import { commitExisting } from './store.js';
import { copiedTags } from './tagging.js';
import { isValidBucketName } from './names.js';

export interface CopySource {
  bucket: string;
  key: string;
}

/** `x-amz-copy-source`: `[/]bucket/key[?versionId=null]`, URL-encoded. */
export function parseCopySource(header: string): CopySource {
  const invalid = () =>
    errors.invalidArgument('Copy Source must mention the source bucket and key: sourcebucket/sourcekey', 'x-amz-copy-source', header);
  let raw = header.startsWith('/') ? header.slice(1) : header;
  const q = raw.indexOf('?');
  if (q >= 0) {
    const params = new URLSearchParams(raw.slice(q + 1));
    const version = params.get('versionId');
    if (version !== null && version !== 'null') throw errors.invalidArgument('Invalid version id specified', 'x-amz-copy-source', header);
    raw = raw.slice(0, q);
  }
  const slash = raw.indexOf('/');
  if (slash <= 0 || slash === raw.length - 1) throw invalid();
  let bucket: string;
  let key: string;
  try {
    bucket = decodeURIComponent(raw.slice(0, slash));
    key = decodeURIComponent(raw.slice(slash + 1));
  } catch {
    throw invalid();
  }
  if (!isValidBucketName(bucket)) throw invalid();
  if (Buffer.byteLength(key) > 1024) throw errors.keyTooLong();
  return { bucket, key };
}

/** Reads the source as the caller may: as the source bucket's policy and the object's ACL let the caller read it. */
export async function readCopySource(ctx: S3Context, source: CopySource): Promise<ObjectRecord> {
  const bucket = await ctx.services.buckets.get(source.bucket);
  if (!bucket) throw errors.noSuchBucket(source.bucket);
  const record = await ctx.services.objects.get(source.bucket, source.key);
  if (!record) {
    if (!mayListFor(ctx, bucket, source.key)) throw errors.accessDenied();
    throw errors.noSuchKey(source.key);
  }
  if (!mayReadObject(ctx, bucket, record)) throw errors.accessDenied();
  return record;
}

/** `x-amz-copy-source-if-*`: 412 when a condition fails. */
export function checkCopyConditions(ctx: S3Context, source: ObjectRecord): void {
  const prefix = 'x-amz-copy-source-';
  const etag = presentedEtag(ctx, source).slice(1, -1);
  if (evaluateConditions(ctx.req.headers, prefix, etag, source.lastModified) === 'not-modified') {
    throw notModifiedAsFailure(prefix, ctx.req.headers);
  }
}

const withTags = (tags: Tag[] | undefined) => (tags?.length ? { tags } : {});

export async function copyObject(ctx: S3Context): Promise<Response> {
  const { req } = ctx;
  const source = parseCopySource(req.headers.get('x-amz-copy-source')!);
  // A bad directive or tag set is refused before anything is read.
  copiedTags(req.headers, undefined);
  const directive = (req.headers.get('x-amz-metadata-directive') ?? 'COPY').toUpperCase();
  if (directive !== 'COPY' && directive !== 'REPLACE') {
    throw errors.invalidArgument('Unknown metadata directive.', 'x-amz-metadata-directive', directive);
  }
  const acl = cannedAcl(req.headers);
  const sameObject = source.bucket === ctx.s3.bucket && source.key === ctx.s3.key;
  if (sameObject && directive === 'COPY' && !req.headers.has('x-amz-acl')) {
    throw errors.invalidRequest(
      "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
    );
  }
  const { record } = await commitExisting(
    ctx.services,
    async () => {
      const src = await readCopySource(ctx, source);
      checkCopyConditions(ctx, src);
      return src;
    },
    (src) => ({
      ...(directive === 'COPY'
        ? {
            contentType: src.contentType,
            cacheControl: src.cacheControl,
            contentDisposition: src.contentDisposition,
            contentEncoding: src.contentEncoding,
            contentLanguage: src.contentLanguage,
            expires: src.expires,
            metadata: src.metadata,
          }
        : objectHeaders(req.headers)),
      bucket: ctx.s3.bucket!,
      key: ctx.s3.key!,
      cid: src.cid,
      size: src.size,
      etag: src.etag,
      parts: src.parts,
      checksums: src.checksums,
      ...withTags(copiedTags(req.headers, src.tags)),
      lastModified: ctx.now.toISOString(),
      acl,
      ownerId: ownerOf(ctx),
    }),
  );
  return xmlResponse(
    'CopyObjectResult',
    { LastModified: record.lastModified, ETag: presentedEtag(ctx, record) },
    { headers: ipfsHeaders(record.cid) },
  );
}
