/** PutObject: the body streams through MD5 and the Kubo importer into the blockstore. */
import { createHash } from 'node:crypto';
import type { ObjectRecord, CannedAcl } from '../core/data/objects.js';
import { importFile, pinFile } from '../core/ipfs/import.js';
import { errors, S3Error } from './errors.js';
import { payloadMode, requestBody } from './sigv4/payload.js';
import { ipfsHeaders, type S3Context } from './context.js';

const CANNED_ACLS: readonly string[] = ['private', 'public-read'];

export function cannedAcl(headers: Headers): CannedAcl {
  const acl = headers.get('x-amz-acl') ?? 'private';
  if (!CANNED_ACLS.includes(acl)) {
    throw errors.notImplemented(`x-amz-acl "${acl}" (Cairn supports private and public-read)`);
  }
  return acl as CannedAcl;
}

/** Stored headers of an object, as PutObject, CopyObject (REPLACE) and CreateMultipartUpload take them. */
export function objectHeaders(headers: Headers): Pick<
  ObjectRecord,
  'contentType' | 'cacheControl' | 'contentDisposition' | 'contentEncoding' | 'contentLanguage' | 'expires' | 'metadata'
> {
  const metadata: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (name.startsWith('x-amz-meta-')) metadata[name.slice('x-amz-meta-'.length)] = value;
  });
  // aws-chunked describes the upload's framing, not the object: it is never stored.
  const encoding = (headers.get('content-encoding') ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e && e.toLowerCase() !== 'aws-chunked')
    .join(', ');
  return {
    contentType: headers.get('content-type') || 'binary/octet-stream',
    cacheControl: headers.get('cache-control') ?? undefined,
    contentDisposition: headers.get('content-disposition') ?? undefined,
    contentEncoding: encoding || undefined,
    contentLanguage: headers.get('content-language') ?? undefined,
    expires: headers.get('expires') ?? undefined,
    metadata,
  };
}

function contentMd5(headers: Headers): string | undefined {
  const raw = headers.get('content-md5');
  if (raw === null) return undefined;
  const bytes = Buffer.from(raw, 'base64');
  if (bytes.length !== 16 || bytes.toString('base64') !== raw.trim()) throw errors.invalidDigest();
  return bytes.toString('hex');
}

export async function putObject(ctx: S3Context): Promise<Response> {
  const { req, services } = ctx;
  const bucket = ctx.s3.bucket!;
  const key = ctx.s3.key!;
  const acl = cannedAcl(req.headers);
  const stored = objectHeaders(req.headers);
  const expectedMd5 = contentMd5(req.headers);
  const mode = payloadMode(req, ctx.auth.signing);
  if (mode.kind !== 'chunked' && req.headers.get('content-length') === null && req.body !== null) {
    throw errors.missingContentLength();
  }

  const md5 = createHash('md5');
  async function* hashed() {
    for await (const chunk of requestBody(req, mode)) {
      md5.update(chunk);
      yield chunk;
    }
  }
  const node = await services.ipfs();
  const { cid, size } = await importFile(node.blockstore, hashed());
  const etag = md5.digest('hex');
  if (expectedMd5 !== undefined && expectedMd5 !== etag) throw errors.badDigest();
  if (req.signal.aborted) throw new S3Error('RequestAborted', 400, 'The client closed the connection.');

  await pinFile(node, cid);
  const owner = ctx.auth.principal.kind === 'account' ? ctx.auth.principal.accountId : ctx.bucket!.accountId;
  const record: ObjectRecord = {
    bucket,
    key,
    cid: cid.toString(),
    size,
    etag,
    lastModified: ctx.now.toISOString(),
    acl,
    ownerId: owner,
    ...stored,
  };
  await services.objects.put(record);
  return new Response(null, {
    status: 200,
    headers: { etag: `"${etag}"`, ...ipfsHeaders(record.cid) },
  });
}
