/**
 * AWS Signature Version 4 for S3, in the browser with WebCrypto: the few
 * requests the app makes (listings, bucket and object writes, multipart)
 * signed with the storage key pair the user gave. A file's bytes go as
 * UNSIGNED-PAYLOAD (S3 accepts it over any transport; hashing a large file
 * first would read it twice).
 */

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

const encoder = new TextEncoder();

const hex = (bytes: ArrayBuffer): string => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');

export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === 'string' ? encoder.encode(data) : data;
  return hex(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
}

async function hmac(key: ArrayBuffer | Uint8Array, data: string): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return crypto.subtle.sign('HMAC', k, encoder.encode(data));
}

/** RFC 3986 encoding, as SigV4 wants it: everything but unreserved characters. */
export function encodeRfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** An object key as a URL path: each segment encoded, the slashes kept. */
export const encodeKey = (key: string): string => key.split('/').map(encodeRfc3986).join('/');

export interface SignRequest {
  method: string;
  /** The request's URL; its path must already be encoded with encodeKey (S3 signs the path as sent). */
  url: URL;
  /** Headers to sign and send (lowercase names); Host is taken from the URL. */
  headers: Record<string, string>;
  /** The payload's SHA-256 in hex, or UNSIGNED_PAYLOAD. */
  payloadHash: string;
  region: string;
  credentials: Credentials;
  now?: Date;
}

/** The headers to send with the request: the given ones plus x-amz-date, x-amz-content-sha256 and Authorization. */
export async function signRequest(req: SignRequest): Promise<Record<string, string>> {
  const now = req.now ?? new Date();
  const amzDate = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = { ...req.headers, 'x-amz-date': amzDate, 'x-amz-content-sha256': req.payloadHash };
  const signed: Record<string, string> = { host: req.url.host };
  for (const [name, value] of Object.entries(headers)) signed[name.toLowerCase()] = value.trim().replace(/\s+/g, ' ');
  const names = Object.keys(signed).sort();
  const query = [...req.url.searchParams.entries()]
    .map(([k, v]) => [encodeRfc3986(k), encodeRfc3986(v)] as const)
    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonical = [
    req.method.toUpperCase(),
    req.url.pathname || '/',
    query,
    names.map((n) => `${n}:${signed[n]}\n`).join(''),
    names.join(';'),
    req.payloadHash,
  ].join('\n');
  const scope = `${day}/${req.region}/s3/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, await sha256Hex(canonical)].join('\n');
  let key = await hmac(encoder.encode(`AWS4${req.credentials.secretAccessKey}`), day);
  for (const part of [req.region, 's3', 'aws4_request']) key = await hmac(key, part);
  const signature = hex(await hmac(key, stringToSign));
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${req.credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
  return headers;
}
