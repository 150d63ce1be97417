/**
 * Staged parts in the stack's bucket, under `part-staging/<uploadId>/<n>`,
 * as the storage API's part-staging integration put them there
 * (lib/part-staging.ts): the body as the client sent it, the request's
 * headers as user metadata (`x-amz-meta-<name>`, which S3 answers HeadObject
 * with: https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html).
 *
 * The bucket encrypts with SSE-S3, so the ETag S3 answered the PUT with,
 * which the client was handed, is the MD5 of the stored bytes
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html, ETag).
 * Reads name that ETag (`If-Match`), so a part staged again meanwhile fails
 * the read with 412 instead of being imported under the old ETag
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { PART_STAGING_PREFIX, STAGED_HEADERS, stagedPartKey, type StagedPart, type StagedPartStore } from '../core/ports/staged-parts.js';

/** DeleteObjects takes up to 1,000 keys (https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObjects.html). */
const DELETE_BATCH = 1000;

export class StagedPartChanged extends Error {
  override name = 'StagedPartChanged';
}

export class S3StagedParts implements StagedPartStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  async get(uploadId: string, partNumber: number): Promise<StagedPart | undefined> {
    const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
    let out;
    try {
      out = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: stagedPartKey(uploadId, partNumber) }));
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return undefined;
      throw err;
    }
    const headers: Record<string, string> = {};
    // The SDK gives user metadata with its x-amz-meta- prefix taken off, names lowercased.
    for (const name of STAGED_HEADERS) {
      const value = out.Metadata?.[name];
      if (value !== undefined) headers[name] = value;
    }
    return {
      partNumber,
      etag: (out.ETag ?? '').replace(/^"|"$/g, '').toLowerCase(),
      size: out.ContentLength ?? 0,
      headers,
    };
  }

  async *read(uploadId: string, partNumber: number, etag: string, signal: AbortSignal): AsyncIterable<Uint8Array> {
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    let out;
    try {
      out = await this.s3.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: stagedPartKey(uploadId, partNumber), IfMatch: `"${etag}"` }),
        { abortSignal: signal },
      );
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.$metadata?.httpStatusCode === 412 || e.$metadata?.httpStatusCode === 404 || e.name === 'NoSuchKey') {
        throw new StagedPartChanged(`staged part ${partNumber} of ${uploadId} is no longer the one with ETag ${etag}`);
      }
      throw err;
    }
    yield* out.Body as AsyncIterable<Uint8Array>;
  }

  async removeAll(uploadId: string): Promise<void> {
    const { ListObjectsV2Command, DeleteObjectsCommand } = await import('@aws-sdk/client-s3');
    const prefix = `${PART_STAGING_PREFIX}${uploadId}/`;
    let token: string | undefined;
    // An upload has at most 10,000 parts: at most ten pages of 1,000.
    do {
      const page = await this.s3.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token, MaxKeys: DELETE_BATCH }),
      );
      const keys = (page.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
      if (keys.length) {
        const out = await this.s3.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }));
        if (out.Errors?.length)
          throw new Error(`could not remove ${out.Errors.length} staged parts of ${uploadId}: ${out.Errors[0]!.Code}`);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}
