/** GetObject and HeadObject: conditional requests, ranges, and the bytes from IPFS. */
import { CID } from 'multiformats/cid';
import type { ObjectRecord } from '../core/data/objects.js';
import { parseRange } from '../core/http/range.js';
import { openFile } from '../core/ipfs/read.js';
import { errors, S3Error } from './errors.js';
import { ipfsHeaders, isOwner, type S3Context } from './context.js';

export function objectResponseHeaders(record: ObjectRecord): Record<string, string> {
  const headers: Record<string, string> = {
    etag: `"${record.etag}"`,
    'last-modified': new Date(record.lastModified).toUTCString(),
    'content-type': record.contentType,
    'accept-ranges': 'bytes',
    ...ipfsHeaders(record.cid),
  };
  if (record.cacheControl) headers['cache-control'] = record.cacheControl;
  if (record.contentDisposition) headers['content-disposition'] = record.contentDisposition;
  if (record.contentEncoding) headers['content-encoding'] = record.contentEncoding;
  if (record.contentLanguage) headers['content-language'] = record.contentLanguage;
  if (record.expires) headers['expires'] = record.expires;
  for (const [name, value] of Object.entries(record.metadata ?? {})) headers[`x-amz-meta-${name}`] = value;
  return headers;
}

const etagMatches = (header: string, etag: string) =>
  header.split(',').some((t) => {
    const v = t.trim();
    return v === '*' || v.replace(/^W\//, '').replace(/"/g, '') === etag;
  });

/** 304/412 per S3's precedence (If-Match over If-Unmodified-Since, If-None-Match over If-Modified-Since). */
function checkConditions(headers: Headers, record: ObjectRecord): Response | undefined {
  const modified = Math.floor(new Date(record.lastModified).getTime() / 1000);
  const since = (name: string) => {
    const v = headers.get(name);
    const t = v ? Date.parse(v) : NaN;
    return Number.isNaN(t) ? undefined : Math.floor(t / 1000);
  };
  const ifMatch = headers.get('if-match');
  const ifNoneMatch = headers.get('if-none-match');
  if (ifMatch !== null) {
    if (!etagMatches(ifMatch, record.etag)) throw new S3Error('PreconditionFailed', 412, 'At least one of the pre-conditions you specified did not hold', { Condition: 'If-Match' });
  } else {
    const t = since('if-unmodified-since');
    if (t !== undefined && modified > t) {
      throw new S3Error('PreconditionFailed', 412, 'At least one of the pre-conditions you specified did not hold', { Condition: 'If-Unmodified-Since' });
    }
  }
  const notModified = () => new Response(null, { status: 304, headers: { etag: `"${record.etag}"`, 'last-modified': new Date(record.lastModified).toUTCString() } });
  if (ifNoneMatch !== null) {
    if (etagMatches(ifNoneMatch, record.etag)) return notModified();
  } else {
    const t = since('if-modified-since');
    if (t !== undefined && modified <= t) return notModified();
  }
  return undefined;
}

const OVERRIDES: Record<string, string> = {
  'response-content-type': 'content-type',
  'response-content-language': 'content-language',
  'response-expires': 'expires',
  'response-cache-control': 'cache-control',
  'response-content-disposition': 'content-disposition',
  'response-content-encoding': 'content-encoding',
};

export async function getObject(ctx: S3Context): Promise<Response> {
  const { services, req } = ctx;
  const record = await services.objects.get(ctx.s3.bucket!, ctx.s3.key!);
  const owner = isOwner(ctx);
  if (!record) throw owner ? errors.noSuchKey(ctx.s3.key!) : errors.accessDenied();
  if (!owner && record.acl !== 'public-read') throw errors.accessDenied();

  const conditional = checkConditions(req.headers, record);
  if (conditional) return conditional;

  const headers = objectResponseHeaders(record);
  for (const [param, header] of Object.entries(OVERRIDES)) {
    const v = ctx.s3.query.get(param);
    if (v === undefined) continue;
    if (!owner) throw errors.invalidRequest('Request specific response headers cannot be used for anonymous GET requests.');
    headers[header] = v;
  }
  const range = parseRange(req.headers.get('range'), record.size);
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
