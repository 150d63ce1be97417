/** PutObject: the body streams through MD5, the checksum and the Kubo importer into the blockstore. */
import { ipfsHeaders } from '../core/http/object-headers.js';
import { errors } from './errors.js';
import { declaredLength, payloadMode, requestBody } from './sigv4/payload.js';
import { ownerOf, presentedEtag, versionHeader, type S3Context } from './context.js';
import { checksumHeaders, checksumPlan } from './checksums.js';
import { storeObject, type Ingested } from './store.js';
import { contentMd5, objectHeaders } from './request-headers.js';
import { requestedObjectAcl } from './acl.js';
import { writePrecondition } from './conditions.js';
import { headerTags } from './tagging.js';
import { expirationHeaders } from './lifecycle.js';
import type { ObjectRecord, Tag } from '../core/data/objects.js';

/** The record of an object uploaded whole (PutObject, a POST upload): what was ingested, at the request's key, with what the request asked for. */
export function uploadedRecord(
  ctx: S3Context,
  asked: { acl: ObjectRecord['acl']; stored: ReturnType<typeof objectHeaders>; tags?: Tag[] },
): (ingested: Ingested) => ObjectRecord {
  return ({ cid, size, md5, checksums }) => ({
    bucket: ctx.s3.bucket!,
    key: ctx.s3.key!,
    cid,
    size,
    etag: md5,
    lastModified: ctx.now.toISOString(),
    acl: asked.acl,
    ownerId: ownerOf(ctx),
    checksums,
    ...asked.stored,
    ...(asked.tags?.length ? { tags: asked.tags } : {}),
  });
}

export async function putObject(ctx: S3Context): Promise<Response> {
  const { req, services } = ctx;
  const acl = await requestedObjectAcl(ctx);
  const stored = objectHeaders(req.headers);
  const tags = headerTags(req.headers);
  const expectedMd5 = contentMd5(req.headers);
  const checksum = checksumPlan(req.headers);
  const mode = payloadMode(req, ctx.auth.signing);
  if (mode.kind !== 'chunked' && req.headers.get('content-length') === null && req.body !== null) {
    throw errors.missingContentLength();
  }
  // Checked before the body is read (a refused upload reads nothing), and again against the version the write replaces.
  const precondition = writePrecondition(ctx);
  if (precondition) precondition(await services.objects.get(ctx.s3.bucket!, ctx.s3.key!));
  const trailers = new Map<string, string>();
  const { record } = await storeObject(
    services,
    {
      content: requestBody(req, mode, trailers, { payloadHashByCaller: true }),
      payload: mode,
      sizeHint: declaredLength(req, mode),
      checksum,
      trailers,
      signal: req.signal,
      verify: ({ md5 }) => {
        if (expectedMd5 !== undefined && expectedMd5 !== md5) throw errors.badDigest();
      },
    },
    uploadedRecord(ctx, { acl, stored, tags }),
    precondition,
    ctx.bucket!.versioning,
  );
  return new Response(null, {
    status: 200,
    headers: {
      etag: presentedEtag(ctx, record),
      ...ipfsHeaders(record.cid),
      ...checksumHeaders(record.checksums),
      ...versionHeader(ctx, record),
      ...expirationHeaders(ctx.bucket!, record),
    },
  });
}
