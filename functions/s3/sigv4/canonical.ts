/**
 * The pieces of an AWS Signature Version 4 canonical request, as S3 builds
 * them (S3 neither normalises nor double-encodes the path).
 */
import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

export const ALGORITHM = 'AWS4-HMAC-SHA256';
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** HMAC-SHA256. A KeyObject key is cheapest: for a Buffer or string, createHmac first probes whether it is one by catching an exception (about 30 µs). */
export function hmac(key: KeyObject | Uint8Array | string, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** SigV4's UriEncode: every byte but the unreserved characters as %XX (and '/' kept when asked). */
export function uriEncode(text: string, keepSlash: boolean): string {
  let out = '';
  for (const ch of text) {
    if (UNRESERVED.test(ch) || (keepSlash && ch === '/')) {
      out += ch;
    } else {
      for (const b of Buffer.from(ch, 'utf8')) out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
    }
  }
  return out;
}

function decodeLoose(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export function canonicalUri(rawPath: string): string {
  return (
    rawPath
      .split('/')
      .map((segment) => uriEncode(decodeLoose(segment), false))
      .join('/') || '/'
  );
}

/** Sorted, encoded query pairs; `omit` drops a parameter (the presigned signature itself). */
export function canonicalQuery(rawQuery: string, omit?: string): string {
  if (!rawQuery) return '';
  const pairs: Array<[string, string]> = [];
  for (const part of rawQuery.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const name = decodeLoose((eq < 0 ? part : part.slice(0, eq)).replace(/\+/g, '%20'));
    const value = eq < 0 ? '' : decodeLoose(part.slice(eq + 1).replace(/\+/g, '%20'));
    if (name === omit) continue;
    pairs.push([uriEncode(name, false), uriEncode(value, false)]);
  }
  pairs.sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

/**
 * Each signed header as `name:value`, the value trimmed and its runs of
 * spaces made one. Values are ByteStrings (header-bytes.ts), so "space" is
 * SigV4's, the bytes 0x20 and 0x09, never what a JavaScript `\s` also
 * takes: 0xA0 is a UTF-8 continuation byte (the second of "à", C3 A0).
 */
export function canonicalHeaders(headers: Headers, signed: readonly string[]): string | undefined {
  let out = '';
  for (const name of signed) {
    const value = headers.get(name);
    if (value === null) return undefined;
    out += `${name}:${value.replace(/^[ \t]+|[ \t]+$/g, '').replace(/[ \t]+/g, ' ')}\n`;
  }
  return out;
}

export function canonicalRequest(
  method: string,
  rawPath: string,
  rawQuery: string,
  headers: Headers,
  signedHeaders: readonly string[],
  payloadHash: string,
  omitQuery?: string,
): string | undefined {
  const canonical = canonicalHeaders(headers, signedHeaders);
  if (canonical === undefined) return undefined;
  return [method, canonicalUri(rawPath), canonicalQuery(rawQuery, omitQuery), canonical, signedHeaders.join(';'), payloadHash].join('\n');
}

const keyCache = new Map<string, KeyObject>();

/** The derived signing key; cached because every request of a key pair and every chunk of a streamed upload needs it. */
export function signingKey(secret: string, date: string, region: string, service: string): KeyObject {
  const id = `${secret}\0${date}\0${region}\0${service}`;
  let key = keyCache.get(id);
  if (!key) {
    key = createSecretKey(hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request'));
    if (keyCache.size > 1000) keyCache.clear();
    keyCache.set(id, key);
  }
  return key;
}

/**
 * The canonical request is hashed as the bytes the client signed: its
 * header values are ByteStrings (one character a byte, as the doors hand
 * them over; see functions/core/http/header-bytes.ts) and everything else
 * in it is ASCII, so Latin-1 gives back exactly the bytes sent, UTF-8 or
 * not (hashing its UTF-8 would turn each byte over 0x7F into two).
 */
export function stringToSign(amzDate: string, scope: string, canonicalRequestText: string): string {
  return `${ALGORITHM}\n${amzDate}\n${scope}\n${sha256Hex(Buffer.from(canonicalRequestText, 'latin1'))}`;
}

export function signaturesEqual(expected: string, provided: string): boolean {
  const a = Buffer.from(expected, 'utf8');
  const b = Buffer.from(provided, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `20130524T000000Z` → Date, or undefined when malformed. */
export function parseAmzDate(text: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return undefined;
  const d = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
  return Number.isNaN(d.getTime()) ? undefined : d;
}

export function formatAmzDate(d: Date): string {
  return d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}
