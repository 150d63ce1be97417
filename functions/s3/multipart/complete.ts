/**
 * CompleteMultipartUpload streams the listed parts, in order, through the
 * same import as PutObject, so the object's CID is that of the whole file,
 * exactly what `ipfs add` gives the assembled bytes; its ETag is S3's
 * multipart form, and its checksum COMPOSITE or FULL_OBJECT (see
 * checksums.ts). Every part but the last must be at least
 * `storage.minPartSize` (S3's 5 MiB by default; EntityTooSmall otherwise).
 * A Complete retried after it succeeded answers the same result again (see
 * repeatedCompletion).
 */
import { createHash } from 'node:crypto';
import type { ObjectRecord } from '../../core/data/objects.js';
import { COMPLETION_TTL_MS, MAX_PART_NUMBER, type ChecksumType, type CompletionRecord } from '../../core/data/uploads.js';
import { ipfsHeaders } from '../../core/http/object-headers.js';
import { ALGORITHMS, multipartChecksum } from '../checksums.js';
import { writePrecondition } from '../conditions.js';
import { presentedEtag, versionHeader, type S3Context } from '../context.js';
import { expirationHeaders } from '../lifecycle.js';
import { errors, S3Error } from '../errors.js';
import { ingest, putRecord } from '../store.js';
import { xmlResponse, type XmlNode } from '../xml.js';
import { parseXmlBody, readSmallBody } from '../xml-input.js';
import { adoptStagedParts } from './staged.js';
import { partLayout } from '../object-parts.js';
import { checksumElement, cleanupParts, fileBytes, uploadIdOf } from './uploads.js';

/** A CompleteMultipartUpload body naming 10000 parts with their checksums. */
const MAX_COMPLETE_BODY = 4 * 1024 * 1024;

interface RequestedPart {
  partNumber: number;
  etag: string;
  checksums: Record<string, string>;
}

function parseCompleteBody(body: Buffer): RequestedPart[] {
  const doc = parseXmlBody(body, 'CompleteMultipartUpload', ['Part']);
  const parts = (doc.Part as unknown[] | undefined) ?? [];
  if (!parts.length || parts.length > MAX_PART_NUMBER) throw errors.malformedXml();
  return parts.map((raw) => {
    const part = (raw ?? {}) as Record<string, unknown>;
    const number = typeof part.PartNumber === 'string' ? part.PartNumber.trim() : '';
    const etag = typeof part.ETag === 'string' ? part.ETag.trim() : undefined;
    if (!/^\d{1,9}$/.test(number) || etag === undefined) throw errors.malformedXml();
    const checksums: Record<string, string> = {};
    for (const algorithm of ALGORITHMS) {
      const value = part[checksumElement(algorithm)];
      if (typeof value === 'string') checksums[algorithm] = value.trim();
    }
    return { partNumber: Number(number), etag, checksums };
  });
}

const unquote = (etag: string) => etag.replace(/^"|"$/g, '').toLowerCase();

/** The part list a Complete request names, as one digest: a retry names the same parts with the same ETags. */
function partsDigest(requested: RequestedPart[]): string {
  const hash = createHash('sha256');
  for (const r of requested) hash.update(`${r.partNumber}:${unquote(r.etag)}\n`);
  return hash.digest('hex');
}

/**
 * The parts a Complete names. A part number named twice in a row is one
 * part: a client that sent a part again while the first copy was still
 * uploading lists both answers in the order they came, and the store keeps
 * the copy that finished last, whose answer is the later entry (ceph's
 * s3-tests, test_multipart_resend_first_finishes_last, which S3 passes).
 */
function readCompleteBody(ctx: S3Context): Promise<RequestedPart[]> {
  return readSmallBody(ctx, MAX_COMPLETE_BODY, { bodyChecksum: false })
    .then(parseCompleteBody)
    .then((listed) => listed.filter((r, i) => listed[i + 1]?.partNumber !== r.partNumber));
}

/**
 * A Complete of an upload that has ended: if it completed, naming the same
 * parts, within COMPLETION_TTL_MS, and its object is still the one it made,
 * the original answer again (a client retries after a lost response).
 * Otherwise NoSuchUpload, as Ceph RGW answers (check_previously_completed
 * compares the object's ETag with the one the part list makes): a different
 * part list, or an object overwritten or deleted since, is not a retry.
 */
async function repeatedCompletion(ctx: S3Context, uploadId: string, requested?: RequestedPart[]): Promise<Response> {
  const { services } = ctx;
  const bucket = ctx.bucket!.name;
  const key = ctx.s3.key!;
  const done = uploadId ? await services.uploads.completion(bucket, key, uploadId) : undefined;
  if (!done) throw errors.noSuchUpload(uploadId);
  if (partsDigest(requested ?? (await readCompleteBody(ctx))) !== done.partsDigest) throw errors.noSuchUpload(uploadId);
  const record = await services.objects.get(bucket, key);
  if (!record || record.cid !== done.cid || record.etag !== done.etag || record.lastModified !== done.lastModified)
    throw errors.noSuchUpload(uploadId);
  return completeResult(ctx, record, { algorithm: done.checksumAlgorithm, type: done.checksumType });
}

export async function completeMultipartUpload(ctx: S3Context): Promise<Response> {
  const { req, services } = ctx;
  const askedFor = uploadIdOf(ctx);
  const upload = askedFor ? await services.uploads.get(ctx.bucket!.name, ctx.s3.key!, askedFor) : undefined;
  if (!upload) return repeatedCompletion(ctx, askedFor);
  const { uploadId } = upload;
  const requested = await readCompleteBody(ctx);
  for (let i = 1; i < requested.length; i++) {
    if (requested[i]!.partNumber <= requested[i - 1]!.partNumber) throw errors.invalidPartOrder(uploadId);
  }
  const stored = new Map((await services.uploads.allParts(uploadId)).map((p) => [p.partNumber, p]));
  await adoptStagedParts(ctx, upload, requested, stored);
  const parts = requested.map((r) => {
    const part = stored.get(r.partNumber);
    if (!part || unquote(r.etag) !== part.etag) throw errors.invalidPart(uploadId, r.partNumber, r.etag);
    for (const [algorithm, value] of Object.entries(r.checksums)) {
      if (part.checksums?.[algorithm] !== value) throw errors.invalidPart(uploadId, r.partNumber, r.etag);
    }
    return part;
  });
  // S3's least part size, checked before anything changes: the upload stays
  // as it was, for the client to send the part again larger, or abort.
  const min = services.config.storage.minPartSize;
  const small = parts.findIndex((p, i) => i < parts.length - 1 && p.size < min);
  if (small >= 0) throw errors.entityTooSmall(parts[small]!.size, min, parts[small]!.partNumber, parts[small]!.etag);
  // If-Match / If-None-Match on the object there (conditional writes): checked before the parts are read, and again
  // against the version the commit replaces; a refusal leaves the upload as it was.
  const precondition = writePrecondition(ctx);
  if (precondition) precondition(await services.objects.get(upload.bucket, upload.key));
  const etag = `${createHash('md5')
    .update(Buffer.concat(parts.map((p) => Buffer.from(p.etag, 'hex'))))
    .digest('hex')}-${parts.length}`;
  const checksum = await multipartChecksum(req.headers, upload, parts);

  const completing = ingest(
    services,
    {
      // Opened inside the gate: no collection can take a part's blocks while they stream.
      content: async () => {
        const node = await services.ipfs();
        return (async function* () {
          for (const part of parts) yield* fileBytes(node, part.cid, req.signal);
        })();
      },
      checksum: checksum.plan,
      verify: checksum.verify,
      signal: req.signal,
      sizeHint: parts.reduce((sum, p) => sum + p.size, 0),
    },
    async ({ cid, size, checksums }) => {
      const record: ObjectRecord = {
        bucket: upload.bucket,
        key: upload.key,
        cid,
        size,
        etag,
        // As in S3: a multipart object was last modified when its upload began.
        lastModified: upload.initiated,
        contentType: upload.contentType,
        cacheControl: upload.cacheControl,
        contentDisposition: upload.contentDisposition,
        contentEncoding: upload.contentEncoding,
        contentLanguage: upload.contentLanguage,
        expires: upload.expires,
        metadata: upload.metadata,
        ...(upload.tags?.length ? { tags: upload.tags } : {}),
        acl: upload.acl,
        ownerId: upload.ownerId,
        parts: parts.length,
        ...partLayout(parts, checksum.algorithm),
        checksums: checksum.composite && checksum.algorithm ? { [checksum.algorithm]: checksum.composite } : checksums,
      };
      const completion: CompletionRecord = {
        bucket: upload.bucket,
        key: upload.key,
        uploadId,
        partsDigest: partsDigest(requested),
        cid,
        etag,
        lastModified: record.lastModified,
        checksumAlgorithm: checksum.algorithm,
        checksumType: checksum.type,
        expiresAt: Date.now() + COMPLETION_TTL_MS,
      };
      // The object, the end of its upload and the record of its completion
      // commit together: a concurrent Complete or Abort makes this one
      // NoSuchUpload and changes nothing.
      await putRecord(
        services,
        record,
        { items: services.uploads.endItems(upload, completion), failed: () => errors.noSuchUpload(uploadId) },
        precondition,
        ctx.bucket!.versioning,
      );
      return record;
    },
  );
  const record = await completing.catch((err: unknown) => {
    // A concurrent Complete of the same parts won the race: its answer is this one's too.
    if (err instanceof S3Error && err.code === 'NoSuchUpload') return undefined;
    throw err;
  });
  if (!record) return repeatedCompletion(ctx, uploadId, requested);
  await cleanupParts(ctx, uploadId);
  return completeResult(ctx, record, checksum);
}

/** CompleteMultipartUpload's answer for the object an upload made. */
function completeResult(ctx: S3Context, record: ObjectRecord, checksum: { algorithm?: string; type?: ChecksumType }): Response {
  const { services } = ctx;
  const body: XmlNode = {
    Location: `${services.config.urls.storageEndpoint}/${encodeURIComponent(record.bucket)}/${record.key.split('/').map(encodeURIComponent).join('/')}`,
    Bucket: record.bucket,
    Key: record.key,
    ETag: presentedEtag(ctx, record),
  };
  // The new object's expiry, as PutObject answers it (API_CompleteMultipartUpload.html: x-amz-expiration).
  const headers: Record<string, string> = {
    ...ipfsHeaders(record.cid),
    ...versionHeader(ctx, record),
    ...expirationHeaders(ctx.bucket!, record),
  };
  if (checksum.algorithm) {
    body[checksumElement(checksum.algorithm)] = record.checksums?.[checksum.algorithm];
    body.ChecksumType = checksum.type;
    Object.assign(headers, { 'x-amz-checksum-type': checksum.type! });
  }
  return xmlResponse('CompleteMultipartUploadResult', body, { headers });
}
