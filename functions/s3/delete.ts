/**
 * DeleteObject and DeleteObjects. Deleting a missing key succeeds, as in S3.
 * In a versioned bucket a delete without a version id makes a delete
 * marker; with one, it removes that version for good.
 */
import type { DeleteOutcome, Precondition } from '../core/data/objects.js';
import { isWellFormedVersionId } from '../core/data/object-versions.js';
import { writePrecondition } from './conditions.js';
import type { S3Context } from './context.js';
import { mayDeleteKey } from './access.js';
import { errors, S3Error } from './errors.js';
import { xmlResponse } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';

const MAX_DELETE = 1000;

/**
 * A bucket never versioned has only null versions (an id Cairn makes is
 * refused there as before versions existed); a versioned one takes any id
 * of the form Cairn makes.
 */
function checkVersion(ctx: S3Context, versionId: string | undefined): void {
  if (versionId === undefined || versionId === 'null') return;
  if (!ctx.bucket!.versioning || !isWellFormedVersionId(versionId)) {
    throw errors.invalidArgument('Invalid version id specified', 'versionId', versionId);
  }
}

/** Deletes as the request asks: the null version (or the object) of a bucket never versioned, a version, or with a new delete marker. */
function deleteOne(ctx: S3Context, key: string, versionId: string | undefined, precondition?: Precondition): Promise<DeleteOutcome> {
  const { objects } = ctx.services;
  const bucket = ctx.bucket!;
  if (versionId !== undefined && (bucket.versioning || versionId !== 'null'))
    return objects.deleteVersion(bucket.name, key, versionId, precondition);
  return objects.delete(bucket.name, key, precondition, bucket.versioning);
}

export async function deleteObject(ctx: S3Context): Promise<Response> {
  const versionId = ctx.s3.query.get('versionId');
  checkVersion(ctx, versionId);
  // If-Match (a conditional delete): a missing object is still a 204.
  const outcome = await deleteOne(ctx, ctx.s3.key!, versionId, writePrecondition(ctx, { deleting: true }));
  const headers: Record<string, string> = {};
  if (outcome.deleteMarker) headers['x-amz-delete-marker'] = 'true';
  if (ctx.bucket!.versioning && (outcome.versionId ?? versionId) !== undefined)
    headers['x-amz-version-id'] = (outcome.versionId ?? versionId)!;
  return new Response(null, { status: 204, headers });
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export async function deleteObjects(ctx: S3Context): Promise<Response> {
  const body = await readSmallBody(ctx);
  const doc = parseXmlBody(body, 'Delete', ['Object']);
  const objects = (doc.Object as unknown[] | undefined) ?? [];
  if (!objects.length || objects.length > MAX_DELETE) throw errors.malformedXml();
  const quiet = text(doc.Quiet)?.trim().toLowerCase() === 'true';
  const entries = objects.map((o) => {
    const obj = (o ?? {}) as Record<string, unknown>;
    const key = text(obj.Key);
    if (key === undefined || key === '') throw errors.malformedXml();
    // An entry's ETag makes its delete conditional, as If-Match does for DeleteObject.
    const etag = text(obj.ETag);
    return { key, versionId: text(obj.VersionId), conditions: etag === undefined ? undefined : { ifMatch: etag } };
  });
  type Done = { Key: string; VersionId?: string; DeleteMarker?: boolean; DeleteMarkerVersionId?: string };
  const deleted: Array<Done & { at: number }> = [];
  const failed: Array<{ Key: string; VersionId?: string; Code: string; Message: string; at: number }> = [];
  // A few at a time: each delete is its own transaction.
  const queue = entries.map((e, at) => ({ ...e, at }));
  await Promise.all(
    Array.from({ length: Math.min(8, queue.length) }, async () => {
      for (let e = queue.shift(); e; e = queue.shift()) {
        try {
          checkVersion(ctx, e.versionId);
          if (Buffer.byteLength(e.key) > 1024) throw errors.keyTooLong();
          // Each key is its own s3:DeleteObject (s3:DeleteObjectVersion with a version) to the policy and the bucket's ACL.
          if (!mayDeleteKey(ctx, ctx.bucket!, e.key, e.versionId)) throw errors.accessDenied();
          const precondition = e.conditions && writePrecondition(ctx, { deleting: true, conditions: e.conditions, key: e.key });
          const outcome = await deleteOne(ctx, e.key, e.versionId, precondition);
          deleted.push({
            Key: e.key,
            VersionId: e.versionId,
            ...(outcome.deleteMarker ? { DeleteMarker: true, DeleteMarkerVersionId: outcome.versionId } : {}),
            at: e.at,
          });
        } catch (err) {
          if (!(err instanceof S3Error)) {
            ctx.services.logger.error('DeleteObjects entry failed', { err, key: e.key });
          }
          const s3err = err instanceof S3Error ? err : errors.internal();
          failed.push({ Key: e.key, VersionId: e.versionId, Code: s3err.code, Message: s3err.message, at: e.at });
        }
      }
    }),
  );
  const byRequest = <T extends { at: number }>(a: T, b: T) => a.at - b.at;
  const without = <T extends { at: number }>({ at: _at, ...rest }: T) => rest;
  return xmlResponse('DeleteResult', {
    Deleted: quiet ? undefined : deleted.sort(byRequest).map(without),
    Error: failed.sort(byRequest).map(without),
  });
}
