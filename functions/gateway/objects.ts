/**
 * A file at its public URL (`<bucket>.<storage public domain>/<key>`) or its
 * bucket-specific address (`<bucket>.<bucket endpoint domain>/<key>`):
 * public-read objects are served with their stored headers; private ones
 * are refused (403) and unknown ones are 404. The same bytes stay readable
 * by CID under `/ipfs/`, whatever the ACL.
 */
import { CID } from 'multiformats/cid';
import { objectResponseHeaders } from '../core/http/object-headers.js';
import type { HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import { openFile } from '../core/ipfs/read.js';
import type { BucketHost } from './hosts.js';
import { serveRepresentation, textResponse } from './responses.js';

const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const MAX_KEY_BYTES = 1024;

const notFound = () => textResponse(404, 'Not Found\n');

export async function serveObject(services: Pick<Services, 'ipfs' | 'objects'>, req: HttpRequest, host: BucketHost): Promise<Response> {
  if (!BUCKET_NAME.test(host.bucket)) return notFound();
  let key: string;
  try {
    key = decodeURIComponent(req.rawPath.slice(1));
  } catch {
    return textResponse(400, 'Bad Request: the path is not valid percent-encoded UTF-8\n');
  }
  if (key === '' || Buffer.byteLength(key) > MAX_KEY_BYTES) return notFound();
  const record = await services.objects.get(host.bucket, key);
  if (!record) return notFound();
  if (record.acl !== 'public-read' && record.acl !== 'public-read-write') return textResponse(403, 'Forbidden: this object is private\n');
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
