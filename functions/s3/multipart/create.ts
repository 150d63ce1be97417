/**
 * CreateMultipartUpload: the upload keeps the object's ACL, stored headers
 * and checksum settings until Complete gives them to the object.
 */
import type { UploadRecord } from '../../core/data/uploads.js';
import { newSortableId } from '../../core/ids.js';
import { uploadChecksum } from '../checksums.js';
import { ownerOf, type S3Context } from '../context.js';
import { objectHeaders } from '../request-headers.js';
import { requestedObjectAcl } from '../acl.js';
import { headerTags } from '../tagging.js';
import { xmlResponse } from '../xml.js';
import { mapNoSuchUpload } from './uploads.js';
import { abortHeaders } from '../lifecycle.js';

function uploadChecksumHeaders(upload: UploadRecord): Record<string, string> {
  if (!upload.checksumAlgorithm) return {};
  return { 'x-amz-checksum-algorithm': upload.checksumAlgorithm.toUpperCase(), 'x-amz-checksum-type': upload.checksumType ?? 'COMPOSITE' };
}

export async function createMultipartUpload(ctx: S3Context): Promise<Response> {
  const { req, services } = ctx;
  const upload: UploadRecord = {
    bucket: ctx.bucket!.name,
    key: ctx.s3.key!,
    uploadId: newSortableId(ctx.now.getTime()),
    initiated: ctx.now.toISOString(),
    acl: await requestedObjectAcl(ctx),
    ownerId: ownerOf(ctx),
    ...objectHeaders(req.headers),
    ...uploadChecksum(req.headers),
  };
  const tags = headerTags(req.headers);
  if (tags?.length) upload.tags = tags;
  await services.uploads.create(upload).catch(mapNoSuchUpload(upload.uploadId));
  return xmlResponse(
    'InitiateMultipartUploadResult',
    { Bucket: upload.bucket, Key: upload.key, UploadId: upload.uploadId },
    { headers: { ...uploadChecksumHeaders(upload), ...abortHeaders(ctx.bucket!, upload) } },
  );
}
