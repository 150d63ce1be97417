/** DeleteObject and DeleteObjects. Deleting a missing key succeeds, as in S3. */
import { writePrecondition } from './conditions.js';
import type { S3Context } from './context.js';
import { isBucketOwner, verdictFor } from './access.js';
import { errors, S3Error } from './errors.js';
import { xmlResponse } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';

const MAX_DELETE = 1000;

function checkVersion(versionId: string | undefined): void {
  if (versionId !== undefined && versionId !== 'null') throw errors.invalidArgument('Invalid version id specified', 'versionId', versionId);
}

export async function deleteObject(ctx: S3Context): Promise<Response> {
  checkVersion(ctx.s3.query.get('versionId'));
  // If-Match (a conditional delete): a missing object is still a 204.
  await ctx.services.objects.delete(ctx.bucket!.name, ctx.s3.key!, writePrecondition(ctx, { deleting: true }));
  return new Response(null, { status: 204 });
}

/** Each key of a DeleteObjects is its own s3:DeleteObject to the bucket policy: the owner's unless denied, another's if allowed. */
function mayDelete(ctx: S3Context, key: string): boolean {
  const bucket = ctx.bucket!;
  const verdict = verdictFor(ctx, bucket, 's3:DeleteObject', key);
  return isBucketOwner(ctx, bucket) ? verdict !== 'deny' : verdict === 'allow';
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
  const deleted: Array<{ Key: string; VersionId?: string }> = [];
  const failed: Array<{ Key: string; Code: string; Message: string }> = [];
  // A few at a time: each delete is its own transaction.
  const queue = entries.slice();
  await Promise.all(
    Array.from({ length: Math.min(8, queue.length) }, async () => {
      for (let e = queue.shift(); e; e = queue.shift()) {
        try {
          checkVersion(e.versionId);
          if (Buffer.byteLength(e.key) > 1024) throw errors.keyTooLong();
          if (!mayDelete(ctx, e.key)) throw errors.accessDenied();
          const precondition = e.conditions && writePrecondition(ctx, { deleting: true, conditions: e.conditions, key: e.key });
          await ctx.services.objects.delete(ctx.bucket!.name, e.key, precondition);
          deleted.push({ Key: e.key, VersionId: e.versionId });
        } catch (err) {
          if (!(err instanceof S3Error)) {
            ctx.services.logger.error('DeleteObjects entry failed', { err, key: e.key });
          }
          const s3err = err instanceof S3Error ? err : errors.internal();
          failed.push({ Key: e.key, Code: s3err.code, Message: s3err.message });
        }
      }
    }),
  );
  const order = new Map(entries.map((e, i) => [e.key, i]));
  const byRequest = <T extends { Key: string }>(a: T, b: T) => order.get(a.Key)! - order.get(b.Key)!;
  return xmlResponse('DeleteResult', {
    Deleted: quiet ? undefined : deleted.sort(byRequest),
    Error: failed.sort(byRequest),
  });
}
