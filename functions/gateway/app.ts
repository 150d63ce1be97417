/**
 * The gateway: `GET|HEAD /ipfs/<cid>` for any content in the node, with
 * ranges and immutable caching. Content is public by CID, whatever the ACL
 * of the objects that hold it, as on any IPFS network.
 */
import type { HttpHandler } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import { parseRange } from '../core/http/range.js';
import { parseCid } from '../core/ipfs/cid.js';
import { isNotFound, NotAFileError, openFile } from '../core/ipfs/read.js';

const text = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers: { 'content-type': 'text/plain; charset=utf-8', ...headers } });

export function createGatewayHandler(services: Services): HttpHandler {
  const { logger } = services;
  return async (req) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return text(405, 'Method Not Allowed\n', { allow: 'GET, HEAD' });
    const m = /^\/ipfs\/([^/?#]+)\/?$/.exec(req.rawPath);
    if (!m) return text(404, 'Not Found: paths are /ipfs/<cid>\n');
    const cid = parseCid(decodeURIComponent(m[1]!));
    if (!cid) return text(400, `Bad Request: "${m[1]}" is not a valid CID\n`);
    try {
      const node = await services.ipfs();
      const file = await openFile(node.blockstore, cid, req.signal);
      const etag = `"${cid.toString()}"`;
      const headers: Record<string, string> = {
        etag,
        'cache-control': 'public, max-age=29030400, immutable',
        'accept-ranges': 'bytes',
        'x-ipfs-path': `/ipfs/${cid.toString()}`,
      };
      const known = cid.version === 0 || cid.code === 0x70 ? await services.objects.findByCid(cid.toV0().toString()) : undefined;
      headers['content-type'] = known?.contentType && known.contentType !== 'binary/octet-stream' ? known.contentType : 'application/octet-stream';
      const inm = req.headers.get('if-none-match');
      if (inm && inm.split(',').some((t) => t.trim() === etag || t.trim() === '*')) {
        return new Response(null, { status: 304, headers });
      }
      const range = parseRange(req.headers.get('range'), file.size);
      if (range === 'unsatisfiable') {
        return text(416, 'Range Not Satisfiable\n', { 'content-range': `bytes */${file.size}` });
      }
      const offset = range ? range.start : 0;
      const length = range ? range.end - range.start + 1 : file.size;
      headers['content-length'] = String(length);
      if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${file.size}`;
      const status = range ? 206 : 200;
      if (req.method === 'HEAD' || length === 0) return new Response(null, { status, headers });
      return new Response(file.stream({ offset, length }), { status, headers });
    } catch (err) {
      if (isNotFound(err)) return text(404, `Not Found: ${cid.toString()} is not held by this gateway\n`);
      if (err instanceof NotAFileError) return text(501, 'Not Implemented: directory listings are not served yet\n');
      logger.error('gateway request failed', { err, path: req.rawPath });
      return text(500, 'Internal Server Error\n');
    }
  };
}
