/**
 * Conditional requests as S3 answers them, for GetObject/HeadObject (`If-*`)
 * and CopyObject (`x-amz-copy-source-if-*`): the evaluation is the shared
 * one in core/http/conditional.ts (RFC 9110's order), with S3's weak
 * If-Match and its PreconditionFailed error.
 */
import { checkPreconditions } from '../core/http/conditional.js';
import type { ObjectRecord, Precondition } from '../core/data/objects.js';
import { presentedEtag, type S3Context } from './context.js';
import { S3Error } from './errors.js';

export type ConditionOutcome = 'proceed' | 'not-modified';

const failed = (condition: string) =>
  new S3Error('PreconditionFailed', 412, 'At least one of the pre-conditions you specified did not hold', { Condition: condition });

/**
 * `prefix` is '' for `If-*` or 'x-amz-copy-source-' for copies; `etag`
 * unquoted. Throws PreconditionFailed; 'not-modified' means a 304 for reads
 * (copies turn it into a 412 themselves).
 */
export function evaluateConditions(headers: Headers, prefix: string, etag: string, lastModified: string): ConditionOutcome {
  const outcome = checkPreconditions(headers, { etag: `"${etag}"`, lastModified: new Date(lastModified) }, { prefix, weakIfMatch: true });
  if (outcome.status === 412) throw failed(outcome.condition!);
  return outcome.status === 304 ? 'not-modified' : 'proceed';
}

export function notModifiedAsFailure(prefix: string, headers: Headers): S3Error {
  return failed(headers.has(`${prefix}if-none-match`) ? `${prefix}If-None-Match` : `${prefix}If-Modified-Since`);
}

/**
 * The conditions of a write or a delete on the object it would replace
 * (S3's conditional writes: PutObject and CompleteMultipartUpload take
 * `If-None-Match` and `If-Match`, DeleteObject `If-Match`, DeleteObjects
 * an `ETag` per object). Each value is `*` or an ETag, quoted or not.
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
 */
export interface WriteConditions {
  ifMatch?: string;
  ifNoneMatch?: string;
}

export function writeConditions(headers: Headers): WriteConditions | undefined {
  const ifMatch = headers.get('if-match') ?? undefined;
  const ifNoneMatch = headers.get('if-none-match') ?? undefined;
  return ifMatch === undefined && ifNoneMatch === undefined ? undefined : { ifMatch, ifNoneMatch };
}

const unquoted = (etag: string) => etag.trim().replace(/^"(.*)"$/, '$1');
const matches = (condition: string, etag: string) => condition.trim() === '*' || unquoted(condition) === etag;

/**
 * Throws S3's answer when the object there now (its ETag as presented,
 * unquoted; undefined when there is none) fails `conditions`. A write whose
 * If-Match finds no object is NoSuchKey (404); a delete of a missing object
 * succeeds whatever its If-Match (as ceph's s3-tests and S3 answer).
 */
export function checkWriteConditions(
  conditions: WriteConditions,
  current: string | undefined,
  what: { key: string; deleting?: boolean },
): void {
  const { ifMatch, ifNoneMatch } = conditions;
  if (ifMatch !== undefined) {
    if (current === undefined) {
      if (!what.deleting) throw new S3Error('NoSuchKey', 404, 'The specified key does not exist.', { Key: what.key });
    } else if (!matches(ifMatch, current)) throw failed('If-Match');
  }
  if (ifNoneMatch !== undefined && current !== undefined && matches(ifNoneMatch, current)) throw failed('If-None-Match');
}

/** The request's write conditions on its object as a store precondition, or undefined when it has none. */
export function writePrecondition(
  ctx: S3Context,
  options: { deleting?: boolean; conditions?: WriteConditions; key?: string } = {},
): Precondition | undefined {
  const conditions = options.conditions ?? writeConditions(ctx.req.headers);
  if (!conditions) return undefined;
  const key = options.key ?? ctx.s3.key!;
  return (current: ObjectRecord | undefined) =>
    checkWriteConditions(conditions, current && presentedEtag(ctx, current).slice(1, -1), { key, deleting: options.deleting });
}
