/**
 * dag-json, dag-cbor, json and cbor blocks on `/ipfs/<cid>[/path]`, as the
 * path gateway spec has them ("Response Payload", "Accept" request header)
 * and as Kubo's gateway (boxo's handler_codec.go) answers them:
 *
 * - By default a block is sent as it is, exactly like a raw block, with its
 *   codec's Content-Type (`application/vnd.ipld.dag-json`,
 *   `application/vnd.ipld.dag-cbor`, `application/json`, `application/cbor`).
 * - A dag-json or dag-cbor block asked for by a browser (`Accept` holding
 *   `text/html`, without `?download=true`) is a generated HTML page: "If the
 *   `Accept` header includes `text/html`, implementation should return a
 *   generated HTML with an option to download DAG-JSON as-is".
 * - `format=dag-json|dag-cbor|json|cbor` (or the Accept type) returns the
 *   block when its codec is the one asked for (`json` also takes dag-json,
 *   `cbor` dag-cbor: the same bytes under the plain type, as boxo serves
 *   them); otherwise "SHOULD produce 406 Not Acceptable when the CID codec
 *   does not match": no codec conversion (IPIP-0524), which also makes a
 *   dag-pb node asked for as dag-json a 406. A UnixFS file of JSON may be
 *   asked for as `application/json` ("For deserialized UnixFS files that
 *   represent text files with valid JSON, implementations SHOULD allow
 *   serving the file content as `application/json`"): ipfs.ts serves it.
 *
 * Each representation has its own ETag, `"<cid>.<format>"` ("If a
 * response format was requested ... returned etag should be modified to
 * include it"), is immutable, takes ranges and preconditions, and is named
 * in Content-Disposition: `inline` for the JSON types, `attachment` for
 * CBOR (`?filename=` names it, `?download=true` makes it an attachment).
 */
import { createHash } from 'node:crypto';
import * as dagJson from '@ipld/dag-json';
import type { CID } from 'multiformats/cid';
import { queryParams, type HttpRequest } from '../core/http/types.js';
import { CBOR, CODEC_NAMES, DAG_CBOR, DAG_JSON, decodeIpld, isLinkingCodec, JSON_CODEC, linksIn } from '../core/ipfs/ipld.js';
import type { Resolved } from '../core/ipfs/paths.js';
import { serveRepresentation, textResponse } from './responses.js';
import { attachment, CODEC_FORMATS, formatUrl, type CodecFormat } from './trustless.js';
import { bytesAnswer, rootsHeader, sendAnswer } from './unixfs.js';

/** Each codec's own Content-Type, when nothing else is asked for. */
const CODEC_TYPES: Readonly<Record<number, string>> = {
  [DAG_JSON]: CODEC_FORMATS['dag-json'],
  [DAG_CBOR]: CODEC_FORMATS['dag-cbor'],
  [JSON_CODEC]: CODEC_FORMATS.json,
  [CBOR]: CODEC_FORMATS.cbor,
};

/** The codecs whose blocks each format returns as they are (boxo's contentTypeToRaw and contentTypeToCodec). */
const SERVES: Readonly<Record<CodecFormat, readonly number[]>> = {
  'dag-json': [DAG_JSON],
  'dag-cbor': [DAG_CBOR],
  json: [JSON_CODEC, DAG_JSON],
  cbor: [CBOR, DAG_CBOR],
};

/** How long a generated page is kept: as a generated directory listing (ipfs.ts), never immutable. */
const PAGE_CACHE = 'public, max-age=604800, stale-while-revalidate=2678400';
/** The most of a block's JSON a page shows, and of its links. */
const PAGE_PREVIEW_CHARS = 512 * 1024;
const PAGE_LINKS = 1000;

export interface CodecTarget {
  found: Resolved;
  /** Headers every `/ipfs/` answer carries (Cache-Control, X-Ipfs-Path, Vary). */
  headers: Record<string, string>;
  /** The request's path ended in `/`. */
  trailingSlash: boolean;
}

/** `"<cid>.<format>"`: boxo's getEtag, the last part of the media type after `/` or `.`. */
export const formatEtag = (cid: CID, type: string) =>
  `"${cid.toString()}.${type.slice(Math.max(type.lastIndexOf('/'), type.lastIndexOf('.')) + 1)}"`;

/** The 406 for a format the content cannot be sent as. */
export function notAcceptable(what: string, format: CodecFormat): Response {
  return textResponse(
    406,
    `Not Acceptable: format=${format} (${CODEC_FORMATS[format]}) asked for ${what}; this gateway converts no codec into another: fetch the block with ?format=raw and convert it yourself\n`,
  );
}

const acceptsHtml = (req: HttpRequest) => (req.headers.get('accept') ?? '').includes('text/html');

/**
 * Answers for a dag-json, dag-cbor, json or cbor block that a path
 * resolved to: `want` is the codec format asked for, or undefined for
 * none (a plain GET, a browser's Accept).
 */
export async function serveCodecBlock(
  req: HttpRequest,
  want: { format: CodecFormat; negotiated: boolean; orElse: boolean } | undefined,
  { found, headers, trailingSlash }: CodecTarget,
): Promise<Response> {
  const { entry } = found;
  const cid = entry.cid;
  const bytes = entry.bytes!;
  const query = queryParams(req.rawQuery);
  const download = query.get('download') === 'true';
  let type = CODEC_TYPES[cid.code]!;
  if (want && SERVES[want.format].includes(cid.code)) {
    type = CODEC_FORMATS[want.format];
  } else if (want && !want.orElse) {
    return notAcceptable(`a ${CODEC_NAMES[cid.code]} block`, want.format);
  } else if (isLinkingCodec(cid.code) && acceptsHtml(req) && !download) {
    return servePage(req, found, headers, trailingSlash);
  }
  const json = type.endsWith('json');
  const filename = query.get('filename') || `${cid.toString()}${json ? '.json' : '.cbor'}`;
  const etag = formatEtag(cid, type);
  return serveRepresentation(req, {
    size: bytes.byteLength,
    headers: {
      ...headers,
      'content-type': type,
      etag,
      'x-content-type-options': 'nosniff',
      'content-disposition': attachment(filename, json && !download ? 'inline' : 'attachment'),
      'x-ipfs-roots': rootsHeader(found.roots),
      ...(want?.negotiated && SERVES[want.format].includes(cid.code) ? { 'content-location': formatUrl(req, want.format) } : {}),
    },
    validators: { etag },
    open: async ({ offset, length }) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.subarray(offset, offset + length));
          controller.close();
        },
      }),
  });
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The page for a browser: the block's CID and codec, its data as DAG-JSON
 * (cut at PAGE_PREVIEW_CHARS), its links, and links to download it as it
 * is. Its ETag names the page's template (`DagIndex-<hash>_CID-<cid>`, as
 * boxo's getDagIndexEtag), and it is cached as a listing is: it is this
 * gateway's HTML, not the content. Asked for without the trailing slash,
 * a 301 to the slash form (as boxo), so relative links resolve under it.
 */
async function servePage(req: HttpRequest, found: Resolved, headers: Record<string, string>, trailingSlash: boolean): Promise<Response> {
  if (!trailingSlash)
    return new Response(null, {
      status: 301,
      headers: { ...headers, location: `${req.rawPath}/${req.rawQuery ? `?${req.rawQuery}` : ''}` },
    });
  const cid = found.entry.cid;
  const codec = CODEC_NAMES[cid.code]!;
  const value = decodeIpld(cid.code, found.entry.bytes!);
  let preview: string;
  try {
    preview = JSON.stringify(JSON.parse(new TextDecoder().decode(dagJson.encode(value))), null, 2);
  } catch (err) {
    preview = `(this block has no DAG-JSON form: ${(err as Error).message})`;
  }
  if (preview.length > PAGE_PREVIEW_CHARS) preview = `${preview.slice(0, PAGE_PREVIEW_CHARS)}\n… (cut: download the block for the rest)`;
  const links = linksIn(value);
  const rows = links
    .slice(0, PAGE_LINKS)
    .map((link) => `<li><a href="/ipfs/${escapeHtml(link.toString())}/"><code>${escapeHtml(link.toString())}</code></a></li>`);
  if (links.length > PAGE_LINKS) rows.push(`<li>… and ${links.length - PAGE_LINKS} more</li>`);
  let path: string;
  try {
    path = escapeHtml(decodeURIComponent(req.rawPath));
  } catch {
    path = escapeHtml(req.rawPath);
  }
  const own = codec === 'dag-json' ? 'dag-json' : 'dag-cbor';
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${path}</title></head><body>
<h1>${path}</h1>
<p>CID <code>${escapeHtml(cid.toString())}</code>, codec ${codec} (0x${cid.code.toString(16)}), ${found.entry.bytes!.byteLength} bytes.</p>
<p>Download it as it is: <a href="?format=${own}&amp;download=true">${own}</a> · <a href="?format=raw">raw block</a> · <a href="?format=car">CAR</a></p>
<h2>Data (as DAG-JSON)</h2>
<pre>${escapeHtml(preview)}</pre>
<h2>Links (${links.length})</h2>
<ul>
${rows.join('\n')}
</ul>
</body></html>
`;
  return sendAnswer(
    req,
    bytesAnswer(
      200,
      {
        ...headers,
        'cache-control': PAGE_CACHE,
        'content-type': 'text/html; charset=utf-8',
        etag: dagIndexEtag(cid),
        'x-ipfs-roots': rootsHeader(found.roots),
      },
      html,
    ),
  );
}

/** Names the page's template in its ETag, so a new template is not answered 304 with the old page. */
const PAGE_HASH = createHash('sha256').update(servePage.toString()).digest('hex').slice(0, 16);

/** The ETag of the generated page of the block `cid`. */
export const dagIndexEtag = (cid: CID): string => `"DagIndex-${PAGE_HASH}_CID-${cid.toString()}"`;
