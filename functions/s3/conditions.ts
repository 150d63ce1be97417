/**
 * Conditional requests, once for GetObject/HeadObject (`If-*`) and CopyObject
 * (`x-amz-copy-source-if-*`), with S3's precedence: If-Match over
 * If-Unmodified-Since, If-None-Match over If-Modified-Since.
 */
import { S3Error } from './errors.js';

export type ConditionOutcome = 'proceed' | 'not-modified';

const etagMatches = (header: string, etag: string) =>
  header.split(',').some((t) => {
    const v = t.trim();
    return v === '*' || v.replace(/^W\//, '').replace(/"/g, '') === etag;
  });

const failed = (condition: string) =>
  new S3Error('PreconditionFailed', 412, 'At least one of the pre-conditions you specified did not hold', { Condition: condition });

/**
 * `prefix` is '' for `If-*` or 'x-amz-copy-source-' for copies; `etag`
 * unquoted. Throws PreconditionFailed; 'not-modified' means a 304 for reads
 * (copies turn it into a 412 themselves).
 */
export function evaluateConditions(headers: Headers, prefix: string, etag: string, lastModified: string): ConditionOutcome {
  const modified = Math.floor(new Date(lastModified).getTime() / 1000);
  const date = (name: string) => {
    const v = headers.get(prefix + name);
    const t = v ? Date.parse(v) : NaN;
    return Number.isNaN(t) ? undefined : Math.floor(t / 1000);
  };
  const ifMatch = headers.get(`${prefix}if-match`);
  const ifNoneMatch = headers.get(`${prefix}if-none-match`);
  if (ifMatch !== null) {
    if (!etagMatches(ifMatch, etag)) throw failed(`${prefix}If-Match`);
  } else {
    const t = date('if-unmodified-since');
    if (t !== undefined && modified > t) throw failed(`${prefix}If-Unmodified-Since`);
  }
  if (ifNoneMatch !== null) {
    if (etagMatches(ifNoneMatch, etag)) return 'not-modified';
  } else {
    const t = date('if-modified-since');
    if (t !== undefined && modified <= t) return 'not-modified';
  }
  return 'proceed';
}

export function notModifiedAsFailure(prefix: string, headers: Headers): S3Error {
  return failed(headers.has(`${prefix}if-none-match`) ? `${prefix}If-None-Match` : `${prefix}If-Modified-Since`);
}
