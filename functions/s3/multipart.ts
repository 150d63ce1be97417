/**
 * Multipart uploads: CreateMultipartUpload, UploadPart, UploadPartCopy,
 * CompleteMultipartUpload, AbortMultipartUpload, ListParts and
 * ListMultipartUploads, with S3's rules on part numbers, order and ETags.
 *
 * Each part is imported and pinned like an object (its CID referenced while
 * the upload is open, see data/uploads.ts). Complete streams the listed
 * parts, in order, through the same import as PutObject, so the object's CID
 * is that of the whole file, exactly what `ipfs add` gives the assembled
 * bytes; its ETag is S3's multipart form. Parts smaller than 5 MiB are
 * accepted (no EntityTooSmall), so clients behind the Lambda route's request
 * limit can upload any size in small parts. A Complete retried after it
 * succeeded answers the same result again (see repeatedCompletion).
 *
 * Checksums: a part's `x-amz-checksum-*` is verified and returned. An upload
 * created with `x-amz-checksum-algorithm` gets that checksum on every part
 * (computed when the client sends none) and on the object: COMPOSITE (the
 * checksum of the parts' checksums, `-<count>`) or FULL_OBJECT (computed over
 * the assembled bytes while they stream).
 */
import { createHash } from 'node:crypto';
import { CID } from 'multiformats/cid';
import type { ObjectRecord } from '../core/data/objects.js';
import {
  COMPLETION_TTL_MS,
  MAX_PART_NUMBER,
  NoSuchUploadError,
  type ChecksumType,
  type CompletionRecord,
  type PartRecord,
  type UploadRecord,
} from '../core/data/uploads.js';
import { NoSuchBucketError } from '../core/data/objects.js';
import { newSortableId } from '../core/ids.js';
import { openFile } from '../core/ipfs/read.js';
import type { IpfsNode } from '../core/ipfs/node.js';
import { ipfsHeaders } from '../core/http/object-headers.js';
import { owner } from './buckets.js';
import {
  ALGORITHMS,
  checksumHeaders,
  checksumPlan,
  computedChecksum,
  multipartChecksum,
  uploadChecksum,
  type ChecksumAlgorithm,
  type ChecksumPlan,
} from './checksums.js';
import { ownerOf, presentedEtag, type S3Context } from './context.js';
import { checkCopyConditions, parseCopySource, readCopySource } from './copy.js';
import { errors, S3Error } from './errors.js';
import { cannedAcl, contentMd5, objectHeaders } from './request-headers.js';
import { declaredLength, payloadMode, requestBody } from './sigv4/payload.js';
import { encoding } from './list.js';
import { ingest, putRecord, type Ingested } from './store.js';
import { xmlResponse, type XmlNode } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';

/** S3's largest part. */
export const MAX_PART_SIZE = 5 * 1024 ** 3;
const MAX_LISTED = 1000;
/** A CompleteMultipartUpload body naming 10000 parts with their checksums. */
const MAX_COMPLETE_BODY = 4 * 1024 * 1024;

const checksumElement = (algorithm: string) => `Checksum${algorithm.toUpperCase()}`;

function uploadIdOf(ctx: S3Context): string {
  return ctx.s3.query.get('uploadId') ?? '';
}

async function loadUpload(ctx: S3Context): Promise<UploadRecord> {
  const uploadId = uploadIdOf(ctx);
  const upload = uploadId ? await ctx.services.uploads.get(ctx.bucket!.name, ctx.s3.key!, uploadId) : undefined;
  if (!upload) throw errors.noSuchUpload(uploadId);
  return upload;
}

function partNumberOf(ctx: S3Context): number {
  const raw = ctx.s3.query.get('partNumber') ?? '';
  const n = /^\d{1,6}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= MAX_PART_NUMBER)) {
    throw errors.invalidArgument(`Part number must be an integer between 1 and ${MAX_PART_NUMBER}, inclusive`, 'partNumber', raw);
  }
  return n;
}

/** A non-negative integer query parameter (max-parts, part-number-marker, max-uploads). */
function integerParam(ctx: S3Context, name: string, fallback: number): number {
  const raw = ctx.s3.query.get(name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > 2147483647) {
    throw errors.invalidArgument(`Provided ${name} not an integer or within integer range`, name, raw);
  }
  return Number(raw);
}

function mapNoSuchUpload(uploadId: string) {
  return (err: unknown): never => {
    if (err instanceof NoSuchUploadError) throw errors.noSuchUpload(uploadId);
    if (err instanceof NoSuchBucketError) throw errors.noSuchBucket(err.bucket);
    throw err;
  };
}

function uploadChecksumHeaders(upload: UploadRecord): Record<string, string> {
  if (!upload.checksumAlgorithm) return {};
  return { 'x-amz-checksum-algorithm': upload.checksumAlgorithm.toUpperCase(), 'x-amz-checksum-type': upload.checksumType ?? 'COMPOSITE' };
}

/** The checksum a part gets: what the client sent, and the upload's algorithm always. */
function partChecksum(plan: ChecksumPlan | undefined, upload: UploadRecord): ChecksumPlan | undefined {
  const required = upload.checksumAlgorithm as ChecksumAlgorithm | undefined;
  if (!required) return plan;
  if (plan && plan.algorithm !== required) {
    throw errors.invalidRequest(`Checksum Type mismatch occurred, expected checksum Type: ${required}, actual checksum Type: ${plan.algorithm}`);
  }
  return plan ?? computedChecksum(required);
}

/** Imports a part's bytes and records the part; returns the stored part. */
async function storePart(
  ctx: S3Context,
  upload: UploadRecord,
  partNumber: number,
  options: Omit<Parameters<typeof ingest>[1], 'signal' | 'maxSize'>,
): Promise<PartRecord> {
  return ingest(ctx.services, { ...options, signal: ctx.req.signal, maxSize: MAX_PART_SIZE }, async ({ cid, size, md5, checksums }: Ingested) => {
    const part: PartRecord = { partNumber, cid, size, etag: md5, lastModified: ctx.now.toISOString(), checksums };
    await ctx.services.uploads.putPart(upload, part).catch(mapNoSuchUpload(upload.uploadId));
    return part;
  });
}

/**
 * Removes an ended upload's parts. The upload has ended (its object is
 * committed, or it was aborted), so a failure here only delays the removal:
 * the cleanup marker stays, and garbage collection finishes the job.
 */
async function cleanupParts(ctx: S3Context, uploadId: string): Promise<void> {
  await ctx.services.uploads.cleanup(uploadId).catch((err: unknown) => {
    ctx.services.logger.warn('multipart cleanup failed; garbage collection will finish it', { err, uploadId });
  });
}

export async function createMultipartUpload(ctx: S3Context): Promise<Response> {
  const { req, services } = ctx;
  const upload: UploadRecord = {
    bucket: ctx.bucket!.name,
    key: ctx.s3.key!,
    uploadId: newSortableId(ctx.now.getTime()),
    initiated: ctx.now.toISOString(),
    acl: cannedAcl(req.headers),
    ownerId: ownerOf(ctx),
    ...objectHeaders(req.headers),
    ...uploadChecksum(req.headers),
  };
  await services.uploads.create(upload).catch(mapNoSuchUpload(upload.uploadId));
  return xmlResponse(
    'InitiateMultipartUploadResult',
    { Bucket: upload.bucket, Key: upload.key, UploadId: upload.uploadId },
    { headers: uploadChecksumHeaders(upload) },
  );
}

export async function uploadPart(ctx: S3Context): Promise<Response> {
  const { req } = ctx;
  const partNumber = partNumberOf(ctx);
  const mode = payloadMode(req, ctx.auth.signing);
  if (mode.kind !== 'chunked' && req.headers.get('content-length') === null && req.body !== null) {
    throw errors.missingContentLength();
  }
  const declared = declaredLength(req, mode);
  if (declared !== undefined && declared > MAX_PART_SIZE) throw errors.entityTooLarge(declared, MAX_PART_SIZE);
  const expectedMd5 = contentMd5(req.headers);
  const requested = checksumPlan(req.headers);
  const upload = await loadUpload(ctx);
  const checksum = partChecksum(requested, upload);
  const trailers = new Map<string, string>();
  const part = await storePart(ctx, upload, partNumber, {
    content: requestBody(req, mode, trailers, { payloadHashByCaller: true }),
    payload: mode,
    sizeHint: declared,
    checksum,
    trailers,
    verify: ({ md5 }) => {
      if (expectedMd5 !== undefined && expectedMd5 !== md5) throw errors.badDigest();
    },
  });
  return new Response(null, { status: 200, headers: { etag: `"${part.etag}"`, ...checksumHeaders(part.checksums) } });
}

/** `x-amz-copy-source-range: bytes=first-last`, both offsets required. */
function parseCopyRange(header: string): { first: number; last: number } {
  const m = /^bytes=(\d+)-(\d+)$/.exec(header.trim());
  if (!m) {
    throw errors.invalidArgument(
      'The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy',
      'x-amz-copy-source-range',
      header,
    );
  }
  return { first: Number(m[1]), last: Number(m[2]) };
}

/** The bytes of a stored file as an async iterable (read inside the upload gate). */
async function* fileBytes(node: IpfsNode, cid: string, signal: AbortSignal, range?: { offset: number; length: number }): AsyncGenerator<Uint8Array> {
  const file = await openFile(node.blockstore, CID.parse(cid), signal);
  const reader = file.stream(range).getReader();
  let done = false;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) {
        done = true;
        return;
      }
      yield next.value;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

export async function uploadPartCopy(ctx: S3Context): Promise<Response> {
  const { req, services } = ctx;
  const partNumber = partNumberOf(ctx);
  const source = parseCopySource(req.headers.get('x-amz-copy-source')!);
  const rangeHeader = req.headers.get('x-amz-copy-source-range');
  const range = rangeHeader === null ? undefined : parseCopyRange(rangeHeader);
  const upload = await loadUpload(ctx);
  const checksum = partChecksum(undefined, upload);
  const part = await storePart(ctx, upload, partNumber, {
    checksum,
    sizeHint: range ? range.last - range.first + 1 : undefined,
    // Opened inside the gate: the source's blocks cannot be collected while they are copied.
    content: async () => {
      const src = await readCopySource(ctx, source);
      checkCopyConditions(ctx, src);
      if (range && (range.first > range.last || range.last >= src.size)) throw errors.invalidRange(src.size);
      const length = range ? range.last - range.first + 1 : src.size;
      if (length > MAX_PART_SIZE) throw errors.entityTooLarge(length, MAX_PART_SIZE);
      const node = await services.ipfs();
      return fileBytes(node, src.cid, req.signal, range ? { offset: range.first, length } : undefined);
    },
  });
  const sums: XmlNode = {};
  for (const [algorithm, value] of Object.entries(part.checksums ?? {})) sums[checksumElement(algorithm)] = value;
  return xmlResponse('CopyPartResult', { ETag: `"${part.etag}"`, LastModified: part.lastModified, ...sums });
}

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

function readCompleteBody(ctx: S3Context): Promise<RequestedPart[]> {
  return readSmallBody(ctx, MAX_COMPLETE_BODY, { bodyChecksum: false }).then(parseCompleteBody);
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
  if (!record || record.cid !== done.cid || record.etag !== done.etag || record.lastModified !== done.lastModified) throw errors.noSuchUpload(uploadId);
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
  const parts = requested.map((r) => {
    const part = stored.get(r.partNumber);
    if (!part || unquote(r.etag) !== part.etag) throw errors.invalidPart(uploadId, r.partNumber, r.etag);
    for (const [algorithm, value] of Object.entries(r.checksums)) {
      if (part.checksums?.[algorithm] !== value) throw errors.invalidPart(uploadId, r.partNumber, r.etag);
    }
    return part;
  });
  const etag = `${createHash('md5').update(Buffer.concat(parts.map((p) => Buffer.from(p.etag, 'hex')))).digest('hex')}-${parts.length}`;
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
        acl: upload.acl,
        ownerId: upload.ownerId,
        parts: parts.length,
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
      await putRecord(services, record, { items: services.uploads.endItems(upload, completion), failed: () => errors.noSuchUpload(uploadId) });
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
  const headers: Record<string, string> = { ...ipfsHeaders(record.cid) };
  if (checksum.algorithm) {
    body[checksumElement(checksum.algorithm)] = record.checksums?.[checksum.algorithm];
    body.ChecksumType = checksum.type;
    Object.assign(headers, { 'x-amz-checksum-type': checksum.type! });
  }
  return xmlResponse('CompleteMultipartUploadResult', body, { headers });
}

export async function abortMultipartUpload(ctx: S3Context): Promise<Response> {
  const uploadId = uploadIdOf(ctx);
  if (!uploadId) throw errors.noSuchUpload(uploadId);
  await ctx.services.uploads.end({ bucket: ctx.bucket!.name, key: ctx.s3.key!, uploadId }).catch(mapNoSuchUpload(uploadId));
  await cleanupParts(ctx, uploadId);
  return new Response(null, { status: 204 });
}

export async function listParts(ctx: S3Context): Promise<Response> {
  const maxParts = Math.min(integerParam(ctx, 'max-parts', MAX_LISTED), MAX_LISTED);
  const marker = integerParam(ctx, 'part-number-marker', 0);
  const { encode, type } = encoding(ctx.s3.query);
  const upload = await loadUpload(ctx);
  const { parts, truncated } = maxParts === 0
    ? { parts: [], truncated: (await ctx.services.uploads.parts(upload.uploadId, marker, 1)).parts.length > 0 }
    : await ctx.services.uploads.parts(upload.uploadId, Math.min(marker, MAX_PART_NUMBER), maxParts);
  const who = await owner(ctx, upload.ownerId);
  return xmlResponse('ListPartsResult', {
    Bucket: upload.bucket,
    Key: encode(upload.key),
    UploadId: upload.uploadId,
    PartNumberMarker: marker,
    NextPartNumberMarker: parts.length ? parts.at(-1)!.partNumber : undefined,
    MaxParts: maxParts,
    IsTruncated: truncated,
    Part: parts.map((p) => {
      const node: XmlNode = { PartNumber: p.partNumber, LastModified: p.lastModified, ETag: `"${p.etag}"`, Size: p.size };
      for (const [algorithm, value] of Object.entries(p.checksums ?? {})) node[checksumElement(algorithm)] = value;
      return node;
    }),
    Initiator: who,
    Owner: who,
    StorageClass: 'STANDARD',
    ChecksumAlgorithm: upload.checksumAlgorithm?.toUpperCase(),
    ChecksumType: upload.checksumAlgorithm ? upload.checksumType : undefined,
    EncodingType: type,
  });
}

export async function listMultipartUploads(ctx: S3Context): Promise<Response> {
  const q = ctx.s3.query;
  const maxUploads = Math.min(integerParam(ctx, 'max-uploads', MAX_LISTED), MAX_LISTED);
  const { encode, type } = encoding(ctx.s3.query);
  const prefix = q.get('prefix') ?? '';
  const delimiter = q.get('delimiter') || undefined;
  const keyMarker = q.get('key-marker') ?? '';
  // S3 ignores an upload-id-marker without a key-marker.
  const uploadIdMarker = keyMarker ? (q.get('upload-id-marker') ?? '') : '';
  const page = await ctx.services.uploads.list(ctx.bucket!.name, {
    prefix,
    delimiter,
    keyMarker,
    uploadIdMarker: uploadIdMarker || undefined,
    maxUploads,
  });
  const uploads = page.entries.flatMap((e) => (e.kind === 'upload' ? [e.upload] : []));
  const prefixes = page.entries.flatMap((e) => (e.kind === 'prefix' ? [e.prefix] : []));
  const owners = new Map<string, { ID: string; DisplayName: string }>();
  for (const u of uploads) if (!owners.has(u.ownerId)) owners.set(u.ownerId, await owner(ctx, u.ownerId));
  const last = page.entries.at(-1);
  const next = page.truncated && last
    ? last.kind === 'upload'
      ? { key: last.upload.key, uploadId: last.upload.uploadId }
      : { key: last.prefix, uploadId: '' }
    : undefined;
  return xmlResponse('ListMultipartUploadsResult', {
    Bucket: ctx.bucket!.name,
    KeyMarker: encode(keyMarker),
    UploadIdMarker: uploadIdMarker,
    NextKeyMarker: next ? encode(next.key) : undefined,
    NextUploadIdMarker: next ? next.uploadId : undefined,
    Delimiter: delimiter !== undefined ? encode(delimiter) : undefined,
    Prefix: encode(prefix),
    MaxUploads: maxUploads,
    IsTruncated: page.truncated,
    Upload: uploads.map((u) => ({
      Key: encode(u.key),
      UploadId: u.uploadId,
      Initiator: owners.get(u.ownerId),
      Owner: owners.get(u.ownerId),
      StorageClass: 'STANDARD',
      Initiated: u.initiated,
      ChecksumAlgorithm: u.checksumAlgorithm?.toUpperCase(),
      ChecksumType: u.checksumAlgorithm ? u.checksumType : undefined,
    })),
    CommonPrefixes: prefixes.map((p) => ({ Prefix: encode(p) })),
    EncodingType: type,
  });
}
