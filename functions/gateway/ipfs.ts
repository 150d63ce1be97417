/**
 * `GET|HEAD /ipfs/<cid>`: any file the node holds, by CID (v0 or v1), with
 * immutable caching. Content is public by CID whatever the ACL of the
 * objects that hold it, as on any IPFS network.
 */
import type { HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import { parseCid } from '../core/ipfs/cid.js';
import { openFile } from '../core/ipfs/read.js';
import { serveRepresentation, textResponse } from './responses.js';

const IPFS_PATH = /^\/ipfs\/([^/?#]+)\/?$/;

/** The CID text of an `/ipfs/<cid>` path, or undefined for any other path. */
export function ipfsPathCid(rawPath: string): string | undefined {
  return IPFS_PATH.exec(rawPath)?.[1];
}

export async function serveCid(services: Services, req: HttpRequest, cidText: string): Promise<Response> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(cidText);
  } catch {
    decoded = cidText;
  }
  const cid = parseCid(decoded);
  if (!cid) return textResponse(400, `Bad Request: "${decoded.slice(0, 200)}" is not a valid CID\n`);
  const node = await services.ipfs();
  // The raw blockstore (no network behind it) answers a missing block at once.
  const file = await openFile(node.blockstore, cid, req.signal);
  const etag = `"${cid.toString()}"`;
  const headers: Record<string, string> = {
    etag,
    'cache-control': 'public, max-age=29030400, immutable',
    'x-ipfs-path': `/ipfs/${cid.toString()}`,
  };
  const known = cid.version === 0 || cid.code === 0x70 ? await services.objects.findByCid(cid.toV0().toString()) : undefined;
  headers['content-type'] = known?.contentType && known.contentType !== 'binary/octet-stream' ? known.contentType : 'application/octet-stream';
  return serveRepresentation(req, {
    size: file.size,
    headers,
    validators: { etag },
    open: async (range) => file.stream(range),
  });
}
