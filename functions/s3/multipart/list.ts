/** ListParts and ListMultipartUploads: up to 1,000 entries a page, rendered in slices as the object listings are (list.ts). */
import { MAX_PART_NUMBER } from '../../core/data/uploads.js';
import { owner } from '../buckets.js';
import type { S3Context } from '../context.js';
import { errors } from '../errors.js';
import { encoding, xmlResponseInSlices } from '../list.js';
import type { XmlNode } from '../xml.js';
import { abortHeaders } from '../lifecycle.js';
import { checksumElement, loadUpload } from './uploads.js';

const MAX_LISTED = 1000;

/** A non-negative integer query parameter (max-parts, part-number-marker, max-uploads). */
function integerParam(ctx: S3Context, name: string, fallback: number): number {
  const raw = ctx.s3.query.get(name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > 2147483647) {
    throw errors.invalidArgument(`Provided ${name} not an integer or within integer range`, name, raw);
  }
  return Number(raw);
}

export async function listParts(ctx: S3Context): Promise<Response> {
  const maxParts = Math.min(integerParam(ctx, 'max-parts', MAX_LISTED), MAX_LISTED);
  const marker = integerParam(ctx, 'part-number-marker', 0);
  const { encode, type } = encoding(ctx.s3.query);
  const upload = await loadUpload(ctx);
  const { parts, truncated } =
    maxParts === 0
      ? { parts: [], truncated: (await ctx.services.uploads.parts(upload.uploadId, marker, 1)).parts.length > 0 }
      : await ctx.services.uploads.parts(upload.uploadId, Math.min(marker, MAX_PART_NUMBER), maxParts);
  const who = await owner(ctx, upload.ownerId);
  // When a rule will abort the upload, ListParts says so as CreateMultipartUpload did (API_ListParts.html: x-amz-abort-date, x-amz-abort-rule-id).
  return xmlResponseInSlices(
    'ListPartsResult',
    {
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
    },
    abortHeaders(ctx.bucket!, upload),
  );
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
  const next =
    page.truncated && last
      ? last.kind === 'upload'
        ? { key: last.upload.key, uploadId: last.upload.uploadId }
        : { key: last.prefix, uploadId: '' }
      : undefined;
  return xmlResponseInSlices('ListMultipartUploadsResult', {
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
