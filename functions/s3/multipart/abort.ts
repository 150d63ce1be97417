/** AbortMultipartUpload: the upload ends first, so no Complete can use it after; its parts go then. */
import type { S3Context } from '../context.js';
import { errors } from '../errors.js';
import { cleanupParts, mapNoSuchUpload, uploadIdOf } from './uploads.js';

export async function abortMultipartUpload(ctx: S3Context): Promise<Response> {
  const uploadId = uploadIdOf(ctx);
  if (!uploadId) throw errors.noSuchUpload(uploadId);
  await ctx.services.uploads.end({ bucket: ctx.bucket!.name, key: ctx.s3.key!, uploadId }).catch(mapNoSuchUpload(uploadId));
  await cleanupParts(ctx, uploadId);
  return new Response(null, { status: 204 });
}
