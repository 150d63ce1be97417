/**
 * `GET|HEAD /ipfs/<cid>[/path]`, the path gateway: any file or directory the
 * node holds, by CID (v0 or v1), with immutable caching. A directory serves
 * its index.html, else a generated listing; asked for without its trailing
 * slash it is a 301 to the slash form. Content is public by CID whatever the
 * ACL of the objects that hold it, as on any IPFS network. A raw block or a
 * CAR asked for by `?format=` or Accept is the trustless gateway's
 * (trustless.ts); one URL then has several representations, hence Vary.
 */
import type { HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import { parseCid } from '../core/ipfs/cid.js';
import { BadPathError, contentPath, encodePath, resolvePath } from '../core/ipfs/paths.js';
import { textResponse } from './responses.js';
import { negotiateFormat, serveTrustless } from './trustless.js';
import { fileAnswer, indexOf, isFile, listingAnswer, rootsHeader, sendAnswer } from './unixfs.js';

const IPFS_PATH = /^\/ipfs\/([^/?#]+)(\/.*)?$/;

export interface IpfsPath {
  cidText: string;
  /** The path after the CID, as sent ('' for none). */
  rest: string;
}

/** The parts of an `/ipfs/<cid>[/path]` path, or undefined for any other path. */
export function ipfsPath(rawPath: string): IpfsPath | undefined {
  const m = IPFS_PATH.exec(rawPath);
  return m ? { cidText: m[1]!, rest: m[2] ?? '' } : undefined;
}

const IMMUTABLE = 'public, max-age=29030400, immutable';

export async function serveCid(
  services: Pick<Services, 'ipfs' | 'logger' | 'objects'>,
  req: HttpRequest,
  { cidText, rest }: IpfsPath,
): Promise<Response> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(cidText);
  } catch {
    decoded = cidText;
  }
  const cid = parseCid(decoded);
  if (!cid) return textResponse(400, `Bad Request: "${decoded.slice(0, 200)}" is not a valid CID\n`);
  let path;
  try {
    path = contentPath(rest);
  } catch (err) {
    if (err instanceof BadPathError) return textResponse(400, `Bad Request: ${err.message}\n`);
    throw err;
  }
  const format = negotiateFormat(req);
  if (format.kind === 'refused') return format.response;
  const common = { 'cache-control': IMMUTABLE, 'x-ipfs-path': req.rawPath, vary: 'Accept' };
  if (format.kind !== 'deserialized') return serveTrustless(services, req, format, { cid, segments: path.segments, headers: common });
  const node = await services.ipfs();
  // The raw blockstore (no network behind it) answers a missing block at once.
  const found = await resolvePath(node.blockstore, cid, path.segments, req.signal);
  if (!found) return textResponse(404, 'Not Found: no such path under that CID\n');
  const headers: Record<string, string> = { ...common, 'x-ipfs-roots': rootsHeader(found.roots) };
  if (isFile(found)) {
    const name = path.segments.at(-1);
    let type: string | undefined;
    if (name === undefined) {
      // A bare CID has no name; an object stored with it may say its type.
      const known = cid.version === 0 || cid.code === 0x70 ? await services.objects.findByCid(cid.toV0().toString()) : undefined;
      if (known?.contentType && known.contentType !== 'binary/octet-stream') type = known.contentType;
    }
    return sendAnswer(req, await fileAnswer(node.blockstore, found.entry, { name, type, headers, signal: req.signal }));
  }
  if (found.entry.type !== 'directory')
    return textResponse(501, `Not Implemented: this gateway serves UnixFS files and directories, not a ${found.entry.type}\n`);
  const dirPath = `/ipfs/${cidText}${encodePath(path.segments, true)}`;
  if (!path.trailingSlash)
    return new Response(null, { status: 301, headers: { location: `${dirPath}${req.rawQuery ? `?${req.rawQuery}` : ''}`, ...headers } });
  const index = await indexOf(node.blockstore, found, req.signal);
  if (index) return sendAnswer(req, await fileAnswer(node.blockstore, index.entry, { name: 'index.html', headers, signal: req.signal }));
  return sendAnswer(req, await listingAnswer(node.blockstore, found, dirPath, headers, req.signal));
}
