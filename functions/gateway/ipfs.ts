/**
 * `GET|HEAD /ipfs/<cid>[/path]`, the path gateway: any file or directory the
 * node holds, by CID (v0 or v1), with immutable caching. A directory serves
 * its index.html, else a generated listing; asked for without its trailing
 * slash it is a 301 to the slash form. Content is public by CID whatever the
 * ACL of the objects that hold it, as on any IPFS network. A raw block or a
 * CAR asked for by `?format=` or Accept is the trustless gateway's
 * (trustless.ts); one URL then has several representations, hence Vary.
 * A path may run through dag-cbor and dag-json blocks by their links; such
 * a block, or a plain cbor or json one, at its end is codecs.ts's, as are
 * the codec formats (`format=dag-json|dag-cbor|json|cbor`) for any content.
 */
import { queryParams, type HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import { parseCid } from '../core/ipfs/cid.js';
import { BadPathError, contentPath, encodePath, resolvePath } from '../core/ipfs/paths.js';
import { checkPreconditions } from '../core/http/conditional.js';
import { CODEC_NAMES } from '../core/ipfs/ipld.js';
import { notModifiedHeaders, textResponse } from './responses.js';
import { attachment, formatUrl, negotiateFormat, remainderResponse, serveTrustless } from './trustless.js';
import { formatEtag, notAcceptable, serveCodecBlock } from './codecs.js';
import { fileAnswer, indexOf, isFile, listingAnswer, listingEtag, rootsHeader, sendAnswer } from './unixfs.js';

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
const LISTING_CACHE = 'public, max-age=604800, stale-while-revalidate=2678400';
const IDENTITY = 0x00;

/** Whether the request's Cache-Control says `only-if-cached`. */
const onlyIfCached = (req: HttpRequest) =>
  (req.headers.get('cache-control') ?? '').split(',').some((d) => d.trim().toLowerCase() === 'only-if-cached');

/**
 * `shown`: the content was reached through a name (`/ipns/<name>`, a
 * DNSLink host), so a directory's slash redirect and its listing's links
 * name it by `prefix` in place of `ipfsPrefix`.
 */
export async function serveCid(
  services: Pick<Services, 'ipfs' | 'logger' | 'objects'>,
  req: HttpRequest,
  { cidText, rest }: IpfsPath,
  shown?: { ipfsPrefix: string; prefix: string },
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
  // "only-if-cached": answer only from what this node holds, 412 otherwise
  // (path-gateway spec, Cache-Control request header). Nothing here is
  // fetched from a network, so that is whether the root block is here.
  if (onlyIfCached(req) && cid.multihash.code !== IDENTITY && !(await (await services.ipfs()).blockstore.has(cid)))
    return textResponse(412, 'Precondition Failed: Cache-Control only-if-cached, and this gateway holds no content with that CID\n');
  const common = { 'cache-control': IMMUTABLE, 'x-ipfs-path': req.rawPath, vary: 'Accept' };
  if (format.kind === 'raw' || format.kind === 'car')
    return serveTrustless(services, req, format, { cid, segments: path.segments, headers: common });
  const node = await services.ipfs();
  // The raw blockstore (no network behind it) answers a missing block at once.
  const found = await resolvePath(node.blockstore, cid, path.segments, req.signal);
  if (!found) return textResponse(404, 'Not Found: no such path under that CID\n');
  if (found.remainder) return remainderResponse(found);
  const codec = format.kind === 'codec' ? format : undefined;
  if (found.entry.type === 'object' && CODEC_NAMES[found.entry.cid.code])
    return serveCodecBlock(req, codec, { found, headers: common, trailingSlash: path.trailingSlash });
  const headers: Record<string, string> = { ...common, 'x-ipfs-roots': rootsHeader(found.roots) };
  if (codec) {
    // UnixFS content asked for as a codec: only a file of JSON, as
    // application/json (path gateway spec, application/json: "For
    // deserialized UnixFS files that represent text files with valid JSON,
    // implementations SHOULD allow serving the file content as
    // `application/json` regardless of the CID codec being `dag-pb` or
    // `raw`. SHOULD produce 406 Not Acceptable in all other cases").
    const answer =
      codec.format === 'json' && isFile(found)
        ? await fileAnswer(node.blockstore, found.entry, { headers, signal: req.signal })
        : undefined;
    if (answer?.headers['content-type'] === 'application/json') {
      const etag = formatEtag(found.entry.cid, 'application/json');
      return sendAnswer(req, {
        ...answer,
        headers: { ...answer.headers, etag, ...(codec.negotiated ? { 'content-location': formatUrl(req, 'json') } : {}) },
      });
    }
    // Accept that also takes the content itself gets it; `format=` or Accept for nothing else, a 406.
    if (!codec.orElse)
      return notAcceptable(isFile(found) ? 'a UnixFS file that is not JSON' : `UnixFS content (a ${found.entry.type})`, codec.format);
  }
  if (isFile(found)) {
    // `?filename=` names the file (its Content-Type too, by its extension) in
    // `Content-Disposition: inline`, and `?download=true` makes it an
    // attachment (path gateway spec, `filename` and `download` request query
    // parameters): the CID links of a listing name each file this way.
    const query = queryParams(req.rawQuery);
    const filename = query.get('filename') || undefined;
    const download = query.get('download') === 'true';
    const name = filename ?? path.segments.at(-1);
    if (filename || download) headers['content-disposition'] = attachment(name ?? cidText, download ? 'attachment' : 'inline');
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
  const ipfsDirPath = `/ipfs/${cidText}${encodePath(path.segments, true)}`;
  const dirPath =
    shown && ipfsDirPath.startsWith(shown.ipfsPrefix) ? `${shown.prefix}${ipfsDirPath.slice(shown.ipfsPrefix.length)}` : ipfsDirPath;
  if (!path.trailingSlash)
    return new Response(null, { status: 301, headers: { location: `${dirPath}${req.rawQuery ? `?${req.rawQuery}` : ''}`, ...headers } });
  // A directory's own CID is its ETag (path-gateway spec, ETag response
  // header): the answer is what the directory holds, whether that is its
  // index.html or a listing, so a client that has the directory's CID asks
  // If-None-Match with it and gets a 304 either way.
  const dirTag = `"${found.entry.cid.toString()}"`;
  const index = await indexOf(node.blockstore, found, req.signal);
  if (index)
    return sendAnswer(
      req,
      await fileAnswer(node.blockstore, index.entry, { name: 'index.html', headers: { ...headers, etag: dirTag }, signal: req.signal }),
    );
  // A generated listing is this gateway's HTML, which may change with the
  // gateway: cached a week and revalidated, never immutable (the spec's
  // conformance tests: none, or exactly this). Its ETag names the template.
  const listingHeaders = { ...headers, 'cache-control': LISTING_CACHE };
  if (checkPreconditions(req.headers, { etag: dirTag }).status === 304)
    return new Response(null, { status: 304, headers: notModifiedHeaders({ ...listingHeaders, etag: listingEtag(found.entry.cid) }) });
  const rootDepth = shown ? shown.prefix.split('/').filter(Boolean).length : 2;
  return sendAnswer(req, await listingAnswer(node.blockstore, found, dirPath, listingHeaders, req.signal, rootDepth));
}
