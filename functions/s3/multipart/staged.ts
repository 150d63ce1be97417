/**
 * Parts staged around the S3 function (core/ports/staged-parts.ts), taken
 * in at CompleteMultipartUpload: a part the Complete names whose ETag is
 * not that of a part the function stored is looked for among the staged
 * ones; a staged part with that ETag is read back and stored exactly as
 * UploadPart stores a body (storePartBody: payload hash or chunk
 * signatures, aws-chunked framing and trailers, length, Content-MD5,
 * flexible checksums), under the ETag the client was given. From there the
 * Complete goes on as for any part, so the object's CID is the one the same
 * bytes get through the function.
 *
 * The staging path's authoriser checked the request's signature and the
 * upload before the body was stored (functions/part-staging); what it could
 * not see, the body, is checked here. The read is bound to the ETag twice:
 * the store reads only the object with that ETag, and the bytes read are
 * hashed again and must give it (the staging bucket's ETags are MD5s).
 */
import { createHash } from 'node:crypto';
import type { PartRecord, UploadRecord } from '../../core/data/uploads.js';
import type { HttpRequest } from '../../core/http/types.js';
import type { StagedPart } from '../../core/ports/staged-parts.js';
import type { S3Context } from '../context.js';
import { errors, S3Error } from '../errors.js';
import { parseAuthorization, type SigningContext } from '../sigv4/header.js';
import { signingKey } from '../sigv4/canonical.js';
import { storePartBody } from './upload-part.js';

const unquote = (etag: string) => etag.replace(/^"|"$/g, '').toLowerCase();

/**
 * Stores, as parts of `upload`, the staged parts the Complete names by an
 * ETag no stored part has. `stored` (part number -> part) is updated.
 */
export async function adoptStagedParts(
  ctx: S3Context,
  upload: UploadRecord,
  requested: ReadonlyArray<{ partNumber: number; etag: string }>,
  stored: Map<number, PartRecord>,
): Promise<void> {
  const staging = ctx.services.stagedParts;
  if (!staging) return;
  for (const r of requested) {
    const etag = unquote(r.etag);
    if (stored.get(r.partNumber)?.etag === etag) continue;
    const staged = await staging.get(upload.uploadId, r.partNumber);
    // Not staged either: the Complete answers InvalidPart for it.
    if (!staged || staged.etag !== etag) continue;
    stored.set(r.partNumber, await adoptOne(ctx, upload, staged));
  }
}

async function adoptOne(ctx: S3Context, upload: UploadRecord, staged: StagedPart): Promise<PartRecord> {
  const { services } = ctx;
  const headers = new Headers(staged.headers);
  headers.set('content-length', String(staged.size));
  const bytes = services.stagedParts!.read(upload.uploadId, staged.partNumber, staged.etag, ctx.req.signal);
  const req: HttpRequest = {
    method: 'PUT',
    rawPath: ctx.req.rawPath,
    rawQuery: '',
    headers,
    body: streamOf(sameBytes(bytes, staged, upload.uploadId)),
    signal: ctx.req.signal,
  };
  try {
    return await storePartBody(ctx, async () => upload, staged.partNumber, req, await stagedSigning(ctx, headers), staged.etag);
  } catch (err) {
    if (err instanceof S3Error) {
      services.logger.info('a staged part failed its checks', { uploadId: upload.uploadId, partNumber: staged.partNumber, code: err.code });
      throw err;
    }
    throw err;
  }
}

/** An async iterable as a pulled stream (the shape a request body has). */
function streamOf(source: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const it = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await it.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await it.return?.();
    },
  });
}

/** The staged bytes, failing at their end unless they are the ones whose MD5 is the ETag the client holds. */
async function* sameBytes(bytes: AsyncIterable<Uint8Array>, staged: StagedPart, uploadId: string): AsyncGenerator<Uint8Array> {
  const md5 = createHash('md5');
  try {
    for await (const chunk of bytes) {
      md5.update(chunk);
      yield chunk;
    }
  } catch (err) {
    // Staged again since the Complete looked: the ETag the client named is gone.
    if ((err as Error).name === 'StagedPartChanged') throw errors.invalidPart(uploadId, staged.partNumber, `"${staged.etag}"`);
    throw err;
  }
  if (md5.digest('hex') !== staged.etag) throw errors.badDigest();
}

/**
 * The staged request's signing context: what a signed aws-chunked body's
 * chunk signatures chain from (its Authorization's signature the seed, its
 * date), and what makes payloadMode hold the body to a SHA-256 the
 * request promised. The authoriser verified that signature before the body
 * was staged; the key pair must still exist now.
 */
async function stagedSigning(ctx: S3Context, headers: Headers): Promise<SigningContext | undefined> {
  const authorization = headers.get('authorization');
  if (!authorization) return undefined;
  const auth = parseAuthorization(authorization);
  const key = await ctx.services.storageKeys.get(auth.credential.accessKeyId);
  const amzDate = headers.get('x-amz-date');
  if (!key || !amzDate) throw errors.signatureDoesNotMatch();
  const { date, region, service } = auth.credential;
  return {
    accessKeyId: auth.credential.accessKeyId,
    amzDate,
    scope: `${date}/${region}/${service}/aws4_request`,
    key: signingKey(key.secretAccessKey, date, region, service),
    seedSignature: auth.signature,
  };
}
