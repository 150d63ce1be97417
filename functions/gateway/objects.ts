/**
 * A file at its public URL (`<bucket>.<storage public domain>/<key>`) or its
 * bucket-specific address (`<bucket>.<bucket endpoint domain>/<key>`): an
 * anonymous GetObject. Served with its stored headers when the bucket
 * policy allows it, or says nothing and the object's ACL grants AllUsers
 * READ (as far as its ACL counts: not under IgnorePublicAcls or
 * BucketOwnerEnforced; core/storage/bucket-access.ts decides); refused
 * (403) when the policy denies it or the ACL does not grant it;
 * unknown ones are 404. The policy's conditions see the address the door
 * saw (never X-Forwarded-For), the Referer, and whether it came over TLS.
 * The same bytes stay readable by CID under `/ipfs/`, whatever the ACL.
 */
import { CID } from 'multiformats/cid';
import { objectResponseHeaders } from '../core/http/object-headers.js';
import type { HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import { openFile } from '../core/ipfs/read.js';
import { decideAccess, policyVerdict } from '../core/storage/bucket-access.js';
import { existingTagContext, type RequestFacts } from '../core/storage/bucket-policy.js';
import type { BucketHost } from './hosts.js';
import { serveRepresentation, textResponse } from './responses.js';

const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const MAX_KEY_BYTES = 1024;

const notFound = () => textResponse(404, 'Not Found\n');

/** What an anonymous request to the gateway is to a bucket policy's conditions. */
function anonymousContext(req: HttpRequest): RequestFacts['context'] {
  const context: RequestFacts['context'] = { 'aws:securetransport': req.secure ? 'true' : 'false', 'aws:principaltype': 'Anonymous' };
  if (req.remoteAddress) context['aws:sourceip'] = req.remoteAddress;
  const referer = req.headers.get('referer');
  if (referer !== null) context['aws:referer'] = referer;
  const agent = req.headers.get('user-agent');
  if (agent !== null) context['aws:useragent'] = agent;
  return context;
}

export async function serveObject(
  services: Pick<Services, 'ipfs' | 'objects' | 'buckets'>,
  req: HttpRequest,
  host: BucketHost,
): Promise<Response> {
  if (!BUCKET_NAME.test(host.bucket)) return notFound();
  let key: string;
  try {
    key = decodeURIComponent(req.rawPath.slice(1));
  } catch {
    return textResponse(400, 'Bad Request: the path is not valid percent-encoded UTF-8\n');
  }
  if (key === '' || Buffer.byteLength(key) > MAX_KEY_BYTES) return notFound();
  const [bucket, record] = await Promise.all([services.buckets.get(host.bucket), services.objects.get(host.bucket, key)]);
  if (!bucket || !record) return notFound();
  // The object's tags are its s3:ExistingObjectTag/<key> values, as on the S3 API's GetObject.
  const context = { ...anonymousContext(req), ...existingTagContext(record.tags ?? []) };
  const verdict = policyVerdict(bucket, { action: 's3:GetObject', resource: `${bucket.name}/${key}`, context });
  const open = decideAccess(bucket, { caller: undefined, verdict, acl: { acl: record.acl, permission: 'READ' } });
  if (!open) return textResponse(403, 'Forbidden: this object is private\n');
  const headers = objectResponseHeaders(record);
  headers['x-ipfs-path'] = `/ipfs/${record.cid}`;
  return serveRepresentation(req, {
    size: record.size,
    headers,
    validators: { etag: `"${record.etag}"`, lastModified: new Date(record.lastModified) },
    open: async (range) => {
      const node = await services.ipfs();
      const file = await openFile(node.blockstore, CID.parse(record.cid), req.signal);
      return file.stream(range);
    },
  });
}
