/** GetObject and HeadObject: conditional requests, ranges, and the bytes from IPFS. */
import { CID } from 'multiformats/cid';
import { objectResponseHeaders } from '../core/http/object-headers.js';
import { taggingCountHeader } from './tagging.js';
import { parseRange } from '../core/http/range.js';
import { openFile } from '../core/ipfs/read.js';
import { errors, S3Error } from './errors.js';
import type { ObjectRecord } from '../core/data/objects.js';
import { MAX_PART_NUMBER } from '../core/data/uploads.js';
import { objectPart } from './object-parts.js';
import { evaluateConditions } from './conditions.js';
import { presentedEtag, versionHeader, type S3Context } from './context.js';
import { readVersion, requestedVersion } from './versions.js';
import { mayReadObject } from './access.js';
import { checksumHeaders } from './checksums.js';
import { expirationHeaders } from './lifecycle.js';

/** Whole-object checksums do not describe a range, so S3 omits them for ranged reads. */
const range0 = (req: S3Context['req']) => req.headers.has('range');

const OVERRIDES: Record<string, string> = {
  'response-content-type': 'content-type',
  'response-content-language': 'content-language',
  'response-expires': 'expires',
  'response-cache-control': 'cache-control',
  'response-content-disposition': 'content-disposition',
  'response-content-encoding': 'content-encoding',
};

/**
 * `partNumber`: the byte range of one part of the object as it was
 * uploaded, answered 206 with its Content-Range (GetObject, "partNumber":
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html#API_GetObject_RequestSyntax).
 * An object not uploaded in parts is one part. A part past the last is
 * InvalidPartNumber (416); a Range as well is InvalidRequest.
 */
function requestedPart(ctx: S3Context, record: ObjectRecord): { start: number; end: number; checksum?: string } | undefined {
  const raw = ctx.s3.query.get('partNumber');
  if (raw === undefined) return undefined;
  if (!/^\d{1,5}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_PART_NUMBER) {
    throw errors.invalidArgument('Part number must be an integer between 1 and 10000, inclusive', 'partNumber', raw);
  }
  if (ctx.req.headers.has('range')) throw errors.invalidRequest('Cannot specify both Range header and partNumber query parameter');
  const part = objectPart(record, Number(raw));
  if (part === undefined) {
    throw new S3Error('InvalidPartNumber', 416, 'The requested partnumber is not satisfiable', {
      PartNumberRequested: raw,
      ActualPartCount: String(record.parts ?? 1),
    });
  }
  if (part === 'unknown') {
    throw errors.invalidRequest('This object was completed before Cairn kept the sizes of its parts; read it with a Range instead.');
  }
  // An empty object's one part is the whole (empty) answer.
  if (record.size === 0) return undefined;
  return { start: part.offset, end: part.offset + part.size - 1, ...(part.checksum !== undefined ? { checksum: part.checksum } : {}) };
}

/** Whether a version read by id is its key's current one (the latest, and no delete marker after it). */
async function isCurrent(ctx: S3Context, record: ObjectRecord): Promise<boolean> {
  const latest = await ctx.services.objects.get(record.bucket, record.key);
  return latest !== undefined && (latest.versionId ?? 'null') === (record.versionId ?? 'null');
}

export async function getObject(ctx: S3Context): Promise<Response> {
  const { services, req } = ctx;
  const { principal } = ctx.auth;
  const bucket = ctx.bucket!;
  // As S3: a missing key is NoSuchKey to whoever may list the bucket, and
  // AccessDenied to others, so a private bucket's keys cannot be probed.
  const record = await readVersion(ctx, bucket, ctx.s3.key!, requestedVersion(ctx));
  if (!mayReadObject(ctx, bucket, record, ctx.s3.query.has('versionId'))) throw errors.accessDenied();
  if (record.damaged) throw errors.objectDamaged(record.damaged);
  const part = requestedPart(ctx, record);

  const etag = presentedEtag(ctx, record);
  if (evaluateConditions(req.headers, '', etag.slice(1, -1), record.lastModified) === 'not-modified') {
    return new Response(null, {
      status: 304,
      headers: { etag, 'last-modified': new Date(record.lastModified).toUTCString(), ...versionHeader(ctx, record) },
    });
  }

  const headers = { ...objectResponseHeaders(record, etag), ...versionHeader(ctx, record) };
  if (record.parts) headers['x-amz-mp-parts-count'] = String(record.parts);
  // The current version's expiry (asked for by id too); a noncurrent version's is NoncurrentVersionExpiration's, which S3 does not announce.
  if (bucket.lifecycle?.rules.length && (!ctx.s3.query.has('versionId') || (await isCurrent(ctx, record))))
    Object.assign(headers, expirationHeaders(bucket, record));
  // Only to whom may read the tags (GetObjectTagging is the bucket owner's), as S3 answers it.
  if (principal.kind === 'account' && principal.accountId === bucket.accountId) Object.assign(headers, taggingCountHeader(record.tags));
  if (req.headers.get('x-amz-checksum-mode')?.toUpperCase() === 'ENABLED' && !range0(req)) {
    // A part's own checksum for a part of a multipart object (when kept: object-parts.ts), the object's otherwise.
    if (!part || !record.parts) Object.assign(headers, checksumHeaders(record.checksums));
    else {
      const algorithm = Object.keys(record.checksums ?? {})[0];
      if (algorithm && part.checksum) Object.assign(headers, checksumHeaders({ [algorithm]: part.checksum }));
    }
  }
  for (const [param, header] of Object.entries(OVERRIDES)) {
    const v = ctx.s3.query.get(param);
    if (v === undefined) continue;
    if (principal.kind !== 'account')
      throw errors.invalidRequest('Request specific response headers cannot be used for anonymous GET requests.');
    // The decoded text goes out one byte a character, as S3 sends it: what Latin-1 cannot hold is
    // S3's InvalidArgument (LocalStack's test_get_response_overrides_unicode_metadata_with_sig_s3, recorded against S3).
    if (/[^\x00-\xff]/.test(v) || /[\x00-\x08\x0a-\x1f\x7f]/.test(v))
      throw errors.invalidArgument('Header value cannot be represented using ISO-8859-1.', param, v);
    headers[header] = v;
  }
  const range = part ?? parseRange(req.headers.get('range'), record.size);
  if (range === 'unsatisfiable') throw errors.invalidRange(record.size);
  const status = range ? 206 : 200;
  const offset = range ? range.start : 0;
  const length = range ? range.end - range.start + 1 : record.size;
  headers['content-length'] = String(length);
  if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${record.size}`;
  if (req.method === 'HEAD') return new Response(null, { status, headers });

  const node = await services.ipfs();
  const file = await openFile(node.blockstore, CID.parse(record.cid), req.signal);
  return new Response(length === 0 ? null : file.stream({ offset, length }), { status, headers });
}
