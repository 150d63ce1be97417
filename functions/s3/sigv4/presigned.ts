/**
 * SigV4 in the query string (presigned URLs): the signature covers
 * everything but X-Amz-Signature, the payload is UNSIGNED-PAYLOAD, and the
 * URL stops working X-Amz-Expires seconds after X-Amz-Date.
 */
import { errors, S3Error } from '../errors.js';
import type { HttpRequest } from '../../core/http/types.js';
import { canonicalRequest, hmac, parseAmzDate, signaturesEqual, signingKey, stringToSign, ALGORITHM } from './canonical.js';
import { MAX_SKEW_MS, parseCredential, type Credential } from './header.js';

export interface ParsedPresign {
  credential: Credential;
  amzDate: string;
  date: Date;
  expires: number;
  signedHeaders: string[];
  signature: string;
}

const MAX_EXPIRES = 604800;

export function parsePresign(query: Map<string, string>): ParsedPresign {
  if (query.get('X-Amz-Algorithm') !== ALGORITHM) {
    throw new S3Error('AuthorizationQueryParametersError', 400, 'X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
  }
  const need = (name: string) => {
    const v = query.get(name);
    if (!v) {
      throw new S3Error(
        'AuthorizationQueryParametersError',
        400,
        'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.',
      );
    }
    return v;
  };
  const amzDate = need('X-Amz-Date');
  const date = parseAmzDate(amzDate);
  if (!date)
    throw new S3Error('AuthorizationQueryParametersError', 400, "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
  const expiresText = need('X-Amz-Expires');
  if (!/^-?\d+$/.test(expiresText)) throw new S3Error('AuthorizationQueryParametersError', 400, 'X-Amz-Expires should be a number');
  const expires = Number(expiresText);
  if (expires < 0) throw new S3Error('AuthorizationQueryParametersError', 400, 'X-Amz-Expires must be non-negative');
  // S3 documents 1 as the least X-Amz-Expires; a URL valid for no time at all is a mistake, not a URL.
  if (expires === 0) throw new S3Error('AuthorizationQueryParametersError', 400, 'X-Amz-Expires must be at least 1 (second)');
  if (expires > MAX_EXPIRES) {
    throw new S3Error('AuthorizationQueryParametersError', 400, 'X-Amz-Expires must be less than a week (in seconds) that is 604800');
  }
  const signature = need('X-Amz-Signature');
  return {
    credential: parseCredential(need('X-Amz-Credential')),
    amzDate,
    date,
    expires,
    signedHeaders: need('X-Amz-SignedHeaders')
      .split(';')
      .map((h) => h.toLowerCase()),
    signature,
  };
}

/** A presigned URL's region, checked as checkHeaderRegion does, with the error S3 gives for query-string authentication. */
export function checkPresignRegion(p: ParsedPresign, region: string): void {
  if (p.credential.region !== region) {
    throw new S3Error(
      'AuthorizationQueryParametersError',
      400,
      `Error parsing the X-Amz-Credential parameter; the region '${p.credential.region}' is wrong; expecting '${region}'`,
      { Region: region },
    );
  }
}

export function verifyPresigned(req: HttpRequest, p: ParsedPresign, secret: string, now: Date): void {
  if (p.date.getTime() - now.getTime() > MAX_SKEW_MS) {
    throw new S3Error('AccessDenied', 403, 'Request is not valid yet');
  }
  if (now.getTime() > p.date.getTime() + p.expires * 1000) {
    throw new S3Error('AccessDenied', 403, 'Request has expired', {
      'X-Amz-Expires': String(p.expires),
      Expires: new Date(p.date.getTime() + p.expires * 1000).toISOString(),
      ServerTime: now.toISOString(),
    });
  }
  if (p.amzDate.slice(0, 8) !== p.credential.date) {
    throw errors.authorizationHeaderMalformed('the credential date does not match X-Amz-Date');
  }
  const payloadHash = new URLSearchParams(req.rawQuery).get('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD';
  const canonical = canonicalRequest(
    req.method,
    req.signedPath ?? req.rawPath,
    req.rawQuery,
    req.headers,
    p.signedHeaders,
    payloadHash,
    'X-Amz-Signature',
  );
  if (canonical === undefined) throw errors.signatureDoesNotMatch();
  const { date, region, service } = p.credential;
  const scope = `${date}/${region}/${service}/aws4_request`;
  const expected = hmac(signingKey(secret, date, region, service), stringToSign(p.amzDate, scope, canonical)).toString('hex');
  if (!signaturesEqual(expected, p.signature)) throw errors.signatureDoesNotMatch();
}
