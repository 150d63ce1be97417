/**
 * Who is asking: a verified key pair's account, or nobody (anonymous).
 */
import type { StorageKeyStore } from '../core/data/storage-keys.js';
import type { HttpRequest } from '../core/http/types.js';
import { errors, S3Error } from './errors.js';
import { checkHeaderRegion, parseAuthorization, verifyHeaderSignature, type SigningContext } from './sigv4/header.js';
import { checkPresignRegion, parsePresign, verifyPresigned } from './sigv4/presigned.js';

export type Principal = { kind: 'account'; accountId: string; accessKeyId: string } | { kind: 'anonymous' };

export interface Authenticated {
  principal: Principal;
  /** Present for header-signed requests: streamed chunk signatures chain from it. */
  signing?: SigningContext;
}

export async function authenticate(
  req: HttpRequest,
  query: Map<string, string>,
  storageKeys: StorageKeyStore,
  now: Date,
  /** The service's own region (config.region): the only one a credential scope may name. */
  region: string,
): Promise<Authenticated> {
  const header = req.headers.get('authorization');
  if (header) {
    if (header.startsWith('AWS ')) {
      throw new S3Error('InvalidRequest', 400, 'Signature Version 2 is not supported; use AWS4-HMAC-SHA256 (Signature Version 4).');
    }
    const auth = parseAuthorization(header);
    // Streamed chunk signatures chain from this scope, so checking it here covers aws-chunked bodies too.
    checkHeaderRegion(auth.credential, region);
    const key = await storageKeys.get(auth.credential.accessKeyId);
    if (!key) throw errors.invalidAccessKeyId(auth.credential.accessKeyId);
    const signing = verifyHeaderSignature(req, auth, key.secretAccessKey, now);
    return { principal: { kind: 'account', accountId: key.accountId, accessKeyId: auth.credential.accessKeyId }, signing };
  }
  if (query.has('X-Amz-Algorithm') || query.has('X-Amz-Signature')) {
    const presign = parsePresign(query);
    checkPresignRegion(presign, region);
    const key = await storageKeys.get(presign.credential.accessKeyId);
    if (!key) throw errors.invalidAccessKeyId(presign.credential.accessKeyId);
    verifyPresigned(req, presign, key.secretAccessKey, now);
    return { principal: { kind: 'account', accountId: key.accountId, accessKeyId: presign.credential.accessKeyId } };
  }
  if (query.has('AWSAccessKeyId')) {
    throw new S3Error('InvalidRequest', 400, 'Signature Version 2 is not supported; use AWS4-HMAC-SHA256 (Signature Version 4).');
  }
  return { principal: { kind: 'anonymous' } };
}
