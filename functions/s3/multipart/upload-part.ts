/**
 * UploadPart and UploadPartCopy, with S3's rules on part numbers. A part's
 * `x-amz-checksum-*` is verified and returned; an upload created with
 * `x-amz-checksum-algorithm` gets that checksum on every part, computed when
 * the client sends none. A part of any size is accepted here: as in S3,
 * the least part size (EntityTooSmall) is checked at CompleteMultipartUpload,
 * when it is known which part is the last.
 */
import { MAX_PART_NUMBER, type PartRecord, type UploadRecord } from '../../core/data/uploads.js';
import { checksumHeaders, checksumPlan, computedChecksum, type ChecksumAlgorithm, type ChecksumPlan } from '../checksums.js';
import type { S3Context } from '../context.js';
import { checkCopyConditions, parseCopySource, readCopySource } from '../copy.js';
import { errors } from '../errors.js';
import { contentMd5 } from '../request-headers.js';
import type { HttpRequest } from '../../core/http/types.js';
import type { SigningContext } from '../sigv4/header.js';
import { declaredLength, payloadMode, requestBody } from '../sigv4/payload.js';
import { ingest, type Ingested } from '../store.js';
import { xmlResponse, type XmlNode } from '../xml.js';
import { checksumElement, fileBytes, loadUpload, mapNoSuchUpload } from './uploads.js';

/** S3's largest part. */
export const MAX_PART_SIZE = 5 * 1024 ** 3;

function partNumberOf(ctx: S3Context): number {
  const raw = ctx.s3.query.get('partNumber') ?? '';
  const n = /^\d{1,6}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= MAX_PART_NUMBER)) {
    throw errors.invalidArgument(`Part number must be an integer between 1 and ${MAX_PART_NUMBER}, inclusive`, 'partNumber', raw);
  }
  return n;
}

/** The checksum a part gets: what the client sent, and the upload's algorithm always. */
function partChecksum(plan: ChecksumPlan | undefined, upload: UploadRecord): ChecksumPlan | undefined {
  const required = upload.checksumAlgorithm as ChecksumAlgorithm | undefined;
  if (!required) return plan;
  if (plan && plan.algorithm !== required) {
    throw errors.invalidRequest(
      `Checksum Type mismatch occurred, expected checksum Type: ${required}, actual checksum Type: ${plan.algorithm}`,
    );
  }
  return plan ?? computedChecksum(required);
}

/** Imports a part's bytes and records the part; returns the stored part. */
async function storePart(
  ctx: S3Context,
  upload: UploadRecord,
  partNumber: number,
  options: Omit<Parameters<typeof ingest>[1], 'signal' | 'maxSize'>,
  /** The part's ETag when it is not its MD5: a staged part's, as the staging store answered the client (staged.ts). */
  etag?: string,
): Promise<PartRecord> {
  return ingest(
    ctx.services,
    { ...options, signal: ctx.req.signal, maxSize: MAX_PART_SIZE },
    async ({ cid, size, md5, checksums }: Ingested) => {
      const part: PartRecord = { partNumber, cid, size, etag: etag ?? md5, lastModified: ctx.now.toISOString(), checksums };
      await ctx.services.uploads.putPart(upload, part).catch(mapNoSuchUpload(upload.uploadId));
      return part;
    },
  );
}

export async function uploadPart(ctx: S3Context): Promise<Response> {
  const part = await storePartBody(ctx, () => loadUpload(ctx), partNumberOf(ctx), ctx.req, ctx.auth.signing);
  return new Response(null, { status: 200, headers: { etag: `"${part.etag}"`, ...checksumHeaders(part.checksums) } });
}

/**
 * An UploadPart's body checked as S3 checks it (the payload hash or chunk
 * signatures, the length, Content-MD5, flexible checksums) and stored as
 * part `partNumber`. `req` is the UploadPart request: the one being
 * answered, or a staged part's read back at CompleteMultipartUpload, whose
 * ETag (`etag`) the staging store gave the client.
 */
export async function storePartBody(
  ctx: S3Context,
  uploadOf: () => Promise<UploadRecord>,
  partNumber: number,
  req: HttpRequest,
  signing: SigningContext | undefined,
  etag?: string,
): Promise<PartRecord> {
  const mode = payloadMode(req, signing);
  if (mode.kind !== 'chunked' && req.headers.get('content-length') === null && req.body !== null) {
    throw errors.missingContentLength();
  }
  const declared = declaredLength(req, mode);
  if (declared !== undefined && declared > MAX_PART_SIZE) throw errors.entityTooLarge(declared, MAX_PART_SIZE);
  const expectedMd5 = contentMd5(req.headers);
  const requested = checksumPlan(req.headers);
  const upload = await uploadOf();
  const checksum = partChecksum(requested, upload);
  const trailers = new Map<string, string>();
  return storePart(
    ctx,
    upload,
    partNumber,
    {
      content: requestBody(req, mode, trailers, { payloadHashByCaller: true }),
      payload: mode,
      sizeHint: declared,
      checksum,
      trailers,
      verify: ({ md5 }) => {
        if (expectedMd5 !== undefined && expectedMd5 !== md5) throw errors.badDigest();
      },
    },
    etag,
  );
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
