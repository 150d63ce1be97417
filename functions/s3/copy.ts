/**
 * CopyObject: the destination references the source's CID (no bytes move,
 * the content is already pinned), with the metadata copied or replaced.
 */
import type { ObjectRecord, Tag } from '../core/data/objects.js';
import { ipfsHeaders } from '../core/http/object-headers.js';
import { objectHeaders } from './request-headers.js';
import { headerAcl, requestedObjectAcl } from './acl.js';
import { mayListFor, mayReadObject } from './access.js';
import { ownerOf, presentedEtag, versionHeader, type S3Context } from './context.js';
import { isWellFormedVersionId } from '../core/data/object-versions.js';
import { errors } from './errors.js';
import { evaluateConditions, notModifiedAsFailure, writePrecondition } from './conditions.js';
import { xmlResponse } from './xml.js';
import { commitExisting } from './store.js';
import { copiedTags } from './tagging.js';
import { isValidBucketName } from './names.js';

export interface CopySource {
  bucket: string;
  key: string;
  /** The source version (`?versionId=`); absent: the latest. */
  versionId?: string;
}

/** `x-amz-copy-source`: `[/]bucket/key[?versionId=...]`, URL-encoded. */
export function parseCopySource(header: string): CopySource {
  const invalid = () =>
    errors.invalidArgument('Copy Source must mention the source bucket and key: sourcebucket/sourcekey', 'x-amz-copy-source', header);
  let raw = header.startsWith('/') ? header.slice(1) : header;
  const q = raw.indexOf('?');
  let versionId: string | undefined;
  if (q >= 0) {
    const params = new URLSearchParams(raw.slice(q + 1));
    const version = params.get('versionId');
    if (version !== null && !isWellFormedVersionId(version)) {
      throw errors.invalidArgument('Invalid version id specified', 'x-amz-copy-source', header);
    }
    versionId = version ?? undefined;
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
  return { bucket, key, ...(versionId === undefined ? {} : { versionId }) };
}

/** Reads the source as the caller may: as the source bucket's policy and the object's ACL let the caller read it. */
export async function readCopySource(ctx: S3Context, source: CopySource): Promise<ObjectRecord> {
  const bucket = await ctx.services.buckets.get(source.bucket);
  if (!bucket) throw errors.noSuchBucket(source.bucket);
  const mayList = mayListFor(ctx, bucket, source.key);
  if (source.versionId !== undefined) {
    const version = await ctx.services.objects.getVersion(source.bucket, source.key, source.versionId);
    if (!version) throw mayList ? errors.noSuchVersion(source.key, source.versionId) : errors.accessDenied();
    if (version.kind === 'marker') {
      if (!mayList) throw errors.accessDenied();
      throw errors.invalidRequest('The source of a copy request may not specifically refer to a delete marker by version id.');
    }
    if (!mayReadObject(ctx, bucket, version.record, true)) throw errors.accessDenied();
    return version.record;
  }
  const record = await ctx.services.objects.get(source.bucket, source.key);
  if (!record) {
    if (!mayList) throw errors.accessDenied();
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
  const acl = await requestedObjectAcl(ctx);
  // Copying an older version over its key is how a version is restored: not a copy to itself.
  const sameObject = source.bucket === ctx.s3.bucket && source.key === ctx.s3.key && source.versionId === undefined;
  if (sameObject && directive === 'COPY' && headerAcl(req.headers) === undefined) {
    throw errors.invalidRequest(
      "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
    );
  }
  // The destination's own conditions (If-Match, If-None-Match: S3's
  // conditional writes take CopyObject too: "before creating it or copying
  // it to the destination bucket",
  // https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html):
  // checked before the source is read, and again by the store against the
  // version the copy replaces, as PutObject's are.
  const precondition = writePrecondition(ctx);
  if (precondition) precondition(await ctx.services.objects.get(ctx.s3.bucket!, ctx.s3.key!));
  const { record, source: copied } = await commitExisting(
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
      partSizes: src.partSizes,
      partChecksums: src.partChecksums,
      checksums: src.checksums,
      ...withTags(copiedTags(req.headers, src.tags)),
      lastModified: ctx.now.toISOString(),
      acl,
      ownerId: ownerOf(ctx),
    }),
    ctx.bucket!.versioning,
    precondition,
  );
  return xmlResponse(
    'CopyObjectResult',
    { LastModified: record.lastModified, ETag: presentedEtag(ctx, record) },
    { headers: { ...ipfsHeaders(record.cid), ...versionHeader(ctx, record), ...copySourceVersionHeader(source, copied) } },
  );
}

/** `x-amz-copy-source-version-id`: the version copied, when the source is versioned or was named by version. */
export function copySourceVersionHeader(source: CopySource, copied: ObjectRecord): Record<string, string> {
  const id = copied.versionId ?? source.versionId;
  return id === undefined ? {} : { 'x-amz-copy-source-version-id': id };
}
