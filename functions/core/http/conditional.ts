/**
 * Conditional requests (RFC 9110 section 13) for a resource with an entity
 * tag and, optionally, a modification time: If-Match, If-Unmodified-Since,
 * If-None-Match, If-Modified-Since, evaluated in the RFC's order, and
 * If-Range for deciding whether a Range header still applies.
 */

export interface Validators {
  /** The entity tag, quoted (`"abc"`). */
  etag: string;
  lastModified?: Date;
}

/** An entity tag without W/ and quotes; clients that drop the quotes are tolerated, as S3 does. */
function opaque(tag: string): { weak: boolean; value: string } {
  const t = tag.trim();
  const weak = t.startsWith('W/');
  return { weak, value: (weak ? t.slice(2) : t).replace(/^"|"$/g, '') };
}

function matches(header: string, etag: string, strong: boolean): boolean {
  const current = opaque(etag);
  return header.split(',').some((raw) => {
    if (raw.trim() === '*') return true;
    const tag = opaque(raw);
    if (strong && (tag.weak || current.weak)) return false;
    return tag.value !== '' && tag.value === current.value;
  });
}

/** Seconds since the epoch of an HTTP-date, or undefined when it is not one. */
function httpDate(value: string | null): number | undefined {
  if (!value) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : Math.floor(t / 1000);
}

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

export interface PreconditionOptions {
  /** Prefix of the header names: '' for `If-*`, `x-amz-copy-source-` for S3 copies. */
  prefix?: string;
  /** Compare If-Match weakly (W/ ignored), as S3 does; RFC 9110 compares it strongly. */
  weakIfMatch?: boolean;
}

export interface PreconditionOutcome {
  status: 200 | 304 | 412;
  /** The header that decided a 304 or 412, as S3 names it (`If-Match`, `x-amz-copy-source-If-None-Match`, ...). */
  condition?: string;
}

/** The outcome and the header that decided it. */
export function checkPreconditions(headers: Headers, v: Validators, opts: PreconditionOptions = {}): PreconditionOutcome {
  const prefix = opts.prefix ?? '';
  const header = (name: string) => headers.get(`${prefix}${name.toLowerCase()}`);
  const decided = (status: 304 | 412, name: string): PreconditionOutcome => ({ status, condition: `${prefix}${name}` });
  const ifMatch = header('If-Match');
  if (ifMatch !== null) {
    if (!matches(ifMatch, v.etag, !opts.weakIfMatch)) return decided(412, 'If-Match');
  } else if (v.lastModified) {
    const since = httpDate(header('If-Unmodified-Since'));
    if (since !== undefined && seconds(v.lastModified) > since) return decided(412, 'If-Unmodified-Since');
  }
  const ifNoneMatch = header('If-None-Match');
  if (ifNoneMatch !== null) {
    if (matches(ifNoneMatch, v.etag, false)) return decided(304, 'If-None-Match');
  } else if (v.lastModified) {
    const since = httpDate(header('If-Modified-Since'));
    if (since !== undefined && seconds(v.lastModified) <= since) return decided(304, 'If-Modified-Since');
  }
  return { status: 200 };
}

/**
 * 200 to go on and serve, 304 Not Modified, or 412 Precondition Failed.
 * Only GET and HEAD are served here, so a matching If-None-Match is a 304.
 */
export function evaluatePreconditions(headers: Headers, v: Validators): 200 | 304 | 412 {
  return checkPreconditions(headers, v).status;
}

/** False when If-Range names another version: the Range header is then ignored and the whole body sent. */
export function rangeStillApplies(headers: Headers, v: Validators): boolean {
  const ifRange = headers.get('if-range');
  if (ifRange === null) return true;
  const value = ifRange.trim();
  if (value.startsWith('"') || value.startsWith('W/"')) return matches(value, v.etag, true) && value !== '*';
  const date = httpDate(value);
  return date !== undefined && v.lastModified !== undefined && seconds(v.lastModified) === date;
}
