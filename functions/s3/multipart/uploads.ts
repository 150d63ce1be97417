/**
 * Multipart uploads, one file per operation family beside this one:
 * create, upload-part (UploadPart, UploadPartCopy), complete, abort and
 * list (ListParts, ListMultipartUploads). This one holds what they share:
 * the upload a request names, the bytes of stored parts, and the removal of
 * an ended upload's parts.
 *
 * Each part is imported and pinned like an object (its CID referenced while
 * the upload is open, see data/uploads.ts), so Complete reads the parts back
 * from the blockstore rather than from the client.
 */
import { CID } from 'multiformats/cid';
import { NoSuchBucketError } from '../../core/data/objects.js';
import { NoSuchUploadError, type UploadRecord } from '../../core/data/uploads.js';
import type { IpfsNode } from '../../core/ipfs/node.js';
import { openFile } from '../../core/ipfs/read.js';
import type { S3Context } from '../context.js';
import { errors } from '../errors.js';

export const checksumElement = (algorithm: string) => `Checksum${algorithm.toUpperCase()}`;

export function uploadIdOf(ctx: S3Context): string {
  return ctx.s3.query.get('uploadId') ?? '';
}

export async function loadUpload(ctx: S3Context): Promise<UploadRecord> {
  const uploadId = uploadIdOf(ctx);
  const upload = uploadId ? await ctx.services.uploads.get(ctx.bucket!.name, ctx.s3.key!, uploadId) : undefined;
  if (!upload) throw errors.noSuchUpload(uploadId);
  return upload;
}

export function mapNoSuchUpload(uploadId: string) {
  return (err: unknown): never => {
    if (err instanceof NoSuchUploadError) throw errors.noSuchUpload(uploadId);
    if (err instanceof NoSuchBucketError) throw errors.noSuchBucket(err.bucket);
    throw err;
  };
}

/**
 * Removes an ended upload's parts. The upload has ended (its object is
 * committed, or it was aborted), so a failure here only delays the removal:
 * the cleanup marker stays, and garbage collection finishes the job.
 */
export async function cleanupParts(ctx: S3Context, uploadId: string): Promise<void> {
  await ctx.services.uploads.cleanup(uploadId).catch((err: unknown) => {
    ctx.services.logger.warn('multipart cleanup failed; garbage collection will finish it', { err, uploadId });
  });
  // Staged parts (AWS): what this misses, the staging prefix's lifecycle rule removes.
  await ctx.services.stagedParts?.removeAll(uploadId).catch((err: unknown) => {
    ctx.services.logger.warn('removing staged parts failed; the staging lifecycle rule will', { err, uploadId });
  });
}

/** The bytes of a stored file as an async iterable (read inside the upload gate). */
export async function* fileBytes(
  node: IpfsNode,
  cid: string,
  signal: AbortSignal,
  range?: { offset: number; length: number },
): AsyncGenerator<Uint8Array> {
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
