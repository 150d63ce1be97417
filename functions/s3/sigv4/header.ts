/**
 * SigV4 in the Authorization header:
 * `AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/s3/aws4_request, SignedHeaders=a;b, Signature=<hex>`.
 */
import type { KeyObject } from 'node:crypto';
import { errors, S3Error } from '../errors.js';
import type { HttpRequest } from '../../core/http/types.js';
import { ALGORITHM, canonicalRequest, formatAmzDate, hmac, parseAmzDate, signaturesEqual, signingKey, stringToSign } from './canonical.js';

export interface Credential {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
}

export interface ParsedAuthorization {
  credential: Credential;
  signedHeaders: string[];
  signature: string;
}

/** What a verified request leaves for checking a streamed body's chunk signatures. */
export interface SigningContext {
  accessKeyId: string;
  amzDate: string;
  scope: string;
  key: KeyObject;
  seedSignature: string;
}

export const MAX_SKEW_MS = 15 * 60 * 1000;

export function parseCredential(text: string): Credential {
  const parts = text.split('/');
  if (parts.length !== 5 || parts[4] !== 'aws4_request' || !parts[0]) {
    throw errors.authorizationHeaderMalformed(`the Credential "${text}" is not <key>/<date>/<region>/s3/aws4_request`);
  }
  const [accessKeyId, date, region, service] = parts as [string, string, string, string];
  if (!/^\d{8}$/.test(date)) throw errors.authorizationHeaderMalformed(`invalid date "${date}" in the credential scope`);
  if (service !== 's3') throw errors.authorizationHeaderMalformed(`the service "${service}" is not s3`);
  return { accessKeyId, date, region, service };
}

/**
 * A credential scope names the region the request was signed for, and its
 * signing key is derived from that name; S3 serves only its own region's
 * signatures and says which region it expected, which SDKs read to correct
 * themselves. Any other region is refused before its key pair is looked up,
 * as S3 does. See "Authenticating Requests (AWS Signature Version 4)",
 * credential scope: https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-auth-using-authorization-header.html
 * and the error codes: https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html
 * SigV4A (AWS4-ECDSA-P256-SHA256, a region set) is for S3 Multi-Region
 * Access Points only; there are none here, so parseAuthorization refuses
 * its algorithm outright.
 */
export function checkHeaderRegion(credential: Credential, region: string): void {
  if (credential.region !== region) {
    throw new S3Error(
      'AuthorizationHeaderMalformed',
      400,
      `The authorization header is malformed; the region '${credential.region}' is wrong; expecting '${region}'`,
      {
        Region: region,
      },
    );
  }
}

export function parseAuthorization(value: string): ParsedAuthorization {
  if (!value.startsWith(ALGORITHM + ' ')) {
    throw new S3Error('InvalidArgument', 400, 'Unsupported Authorization Type; use AWS4-HMAC-SHA256.');
  }
  const fields = new Map<string, string>();
  for (const part of value.slice(ALGORITHM.length + 1).split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const credential = fields.get('Credential');
  const signed = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (!credential || !signed || !signature) {
    throw errors.authorizationHeaderMalformed('it needs Credential, SignedHeaders and Signature');
  }
  if (!/^[0-9a-f]{64}$/.test(signature)) throw errors.authorizationHeaderMalformed('the Signature is not 64 hex digits');
  return {
    credential: parseCredential(credential),
    signedHeaders: signed.split(';').map((h) => h.trim().toLowerCase()),
    signature,
  };
}

/** The request time from x-amz-date or Date, checked against the server clock. */
export function requestTime(req: HttpRequest, now: Date): { date: Date; amzDate: string } {
  const amz = req.headers.get('x-amz-date');
  let date: Date | undefined;
  if (amz) {
    date = parseAmzDate(amz);
  } else {
    const header = req.headers.get('date');
    date = header ? new Date(header) : undefined;
    if (date && Number.isNaN(date.getTime())) date = undefined;
  }
  if (!date) throw new S3Error('AccessDenied', 403, 'AWS authentication requires a valid Date or x-amz-date header');
  if (Math.abs(date.getTime() - now.getTime()) > MAX_SKEW_MS) {
    throw errors.requestTimeTooSkewed(formatAmzDate(date), formatAmzDate(now));
  }
  return { date, amzDate: amz ?? formatAmzDate(date) };
}

/**
 * Checks a header-signed request against the secret; throws the S3 error a
 * real S3 gives, or returns the context for chunk signatures.
 */
export function verifyHeaderSignature(req: HttpRequest, auth: ParsedAuthorization, secret: string, now: Date): SigningContext {
  if (!auth.signedHeaders.includes('host')) {
    throw errors.authorizationHeaderMalformed('SignedHeaders must include host');
  }
  const payloadHash = req.headers.get('x-amz-content-sha256');
  if (!payloadHash) {
    throw errors.invalidRequest('Missing required header for this request: x-amz-content-sha256');
  }
  const { amzDate } = requestTime(req, now);
  if (amzDate.slice(0, 8) !== auth.credential.date) {
    throw errors.authorizationHeaderMalformed(`the credential date ${auth.credential.date} does not match the request date`);
  }
  const canonical = canonicalRequest(req.method, req.signedPath ?? req.rawPath, req.rawQuery, req.headers, auth.signedHeaders, payloadHash);
  if (canonical === undefined) throw errors.signatureDoesNotMatch();
  const { date, region, service } = auth.credential;
  const scope = `${date}/${region}/${service}/aws4_request`;
  const key = signingKey(secret, date, region, service);
  const expected = hmac(key, stringToSign(amzDate, scope, canonical)).toString('hex');
  if (!signaturesEqual(expected, auth.signature)) throw errors.signatureDoesNotMatch();
  return { accessKeyId: auth.credential.accessKeyId, amzDate, scope, key, seedSignature: auth.signature };
}
