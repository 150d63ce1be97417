/**
 * The version a request names (`versionId` on GET, HEAD, tagging, a copy's
 * source), read as S3 answers it: a malformed id is InvalidArgument, one
 * that names nothing NoSuchVersion, a delete marker 405 MethodNotAllowed;
 * without an id, the latest version, and a key whose latest is a delete
 * marker NoSuchKey, both saying so in `x-amz-delete-marker` and
 * `x-amz-version-id`. A caller who may not list the bucket learns nothing
 * of missing keys or versions (AccessDenied), as for GetObject.
 */
import type { Bucket } from '../core/data/buckets.js';
import type { ObjectRecord } from '../core/data/objects.js';
import { isWellFormedVersionId } from '../core/data/object-versions.js';
import { mayListFor } from './access.js';
import type { S3Context } from './context.js';
import { errors, S3Error } from './errors.js';

/** `versionId` from the query, checked for form; undefined when absent. */
export function requestedVersion(ctx: S3Context): string | undefined {
  const id = ctx.s3.query.get('versionId');
  if (id === undefined) return undefined;
  if (!isWellFormedVersionId(id)) throw errors.invalidVersionId(id);
  return id;
}

export async function readVersion(ctx: S3Context, bucket: Bucket, key: string, versionId: string | undefined): Promise<ObjectRecord> {
  const { objects } = ctx.services;
  // As S3: a missing key or version is told only to whoever may list the bucket (its policy or its ACL).
  const mayList = mayListFor(ctx, bucket, key);
  if (versionId === undefined) {
    const record = await objects.get(bucket.name, key);
    if (record) return record;
    if (!mayList) throw errors.accessDenied();
    const marker = bucket.versioning ? await objects.latestMarker(bucket.name, key) : undefined;
    throw errors.noSuchKey(key, marker ? { 'x-amz-delete-marker': 'true', 'x-amz-version-id': marker.versionId } : {});
  }
  const version = await objects.getVersion(bucket.name, key, versionId);
  if (!version) throw mayList ? errors.noSuchVersion(key, versionId) : errors.accessDenied();
  if (version.kind === 'marker') {
    if (!mayList) throw errors.accessDenied();
    throw new S3Error(
      'MethodNotAllowed',
      405,
      'The specified method is not allowed against this resource.',
      { Method: ctx.req.method.toUpperCase(), ResourceType: 'DeleteMarker' },
      {
        'x-amz-delete-marker': 'true',
        'x-amz-version-id': version.marker.versionId,
        'last-modified': new Date(version.marker.lastModified).toUTCString(),
      },
    );
  }
  return version.record;
}
