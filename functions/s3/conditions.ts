/**
 * Conditional requests as S3 answers them, for GetObject/HeadObject (`If-*`)
 * and CopyObject (`x-amz-copy-source-if-*`): the evaluation is the shared
 * one in core/http/conditional.ts (RFC 9110's order), with S3's weak
 * If-Match and its PreconditionFailed error.
 */
import { checkPreconditions } from '../core/http/conditional.js';
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
