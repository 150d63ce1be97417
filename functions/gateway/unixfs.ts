/**
 * Serving what a UnixFS path resolves to, for `/ipfs/` and site addresses
 * alike: a file with its type (from its name, else its first bytes) and its
 * CID as ETag, a directory's `index.html`, or a generated listing.
 */
import { createHash } from 'node:crypto';
import type { Blockstore } from 'interface-blockstore';
import type { CID } from 'multiformats/cid';
import { sniffType, SNIFF_BYTES, typeFromName } from '../core/http/content-type.js';
import type { HttpRequest } from '../core/http/types.js';
import { openFile, type FileEntry } from '../core/ipfs/read.js';
import { listDirectory, resolveUnder, type PathEntry, type Resolved } from '../core/ipfs/paths.js';
import { serveRepresentation } from './responses.js';

/** A response before the request's conditions and range are applied to it. */
export interface Answer {
  status: number;
  /** Without Content-Length, which follows from the body sent. */
  headers: Record<string, string>;
  size: number;
  open(range: { offset: number; length: number }): Promise<ReadableStream<Uint8Array>>;
}

const FILE_TYPES = new Set(['file', 'raw', 'identity']);
export const isFile = (r: Resolved | undefined): boolean => !!r && FILE_TYPES.has(r.entry.type);

/** CIDs as text, by their bytes: the same few (a site's directories and pages) are named again in every answer's headers, and base58 (a CIDv0) costs about 15 µs a CID, more than the rest of the header. */
const cidTexts = new Map<string, string>();
const CID_TEXTS_KEPT = 8192;

/** `cid.toString()`, remembered for the most recent CIDs. */
export function cidText(cid: CID): string {
  const key = Buffer.from(cid.bytes.buffer, cid.bytes.byteOffset, cid.bytes.byteLength).toString('latin1');
  let text = cidTexts.get(key);
  if (text === undefined) {
    text = cid.toString();
    if (cidTexts.size >= CID_TEXTS_KEPT) cidTexts.delete(cidTexts.keys().next().value!);
    cidTexts.set(key, text);
  }
  return text;
}

export const rootsHeader = (roots: readonly CID[]) => roots.map(cidText).join(',');

async function head(file: FileEntry): Promise<Uint8Array> {
  const bytes = await new Response(file.stream({ offset: 0, length: Math.min(SNIFF_BYTES, file.size) })).arrayBuffer();
  return new Uint8Array(bytes);
}

/** A file's answer, from the entry a path resolved to (its block is not read again): Content-Type from `type`, else `name`, else its first bytes. */
export async function fileAnswer(
  blockstore: Blockstore,
  entry: PathEntry,
  options: { status?: number; name?: string; type?: string; headers?: Record<string, string>; signal?: AbortSignal },
): Promise<Answer> {
  const cid = entry.cid;
  const file = await openFile(blockstore, entry, options.signal);
  const type =
    options.type ??
    (options.name === undefined ? undefined : typeFromName(options.name)) ??
    sniffType(await head(file), file.size <= SNIFF_BYTES);
  return {
    status: options.status ?? 200,
    headers: { 'content-type': type, etag: `"${cidText(cid)}"`, ...options.headers },
    size: file.size,
    open: async (range) => file.stream(range),
  };
}

export function bytesAnswer(status: number, headers: Record<string, string>, body: Uint8Array | string): Answer {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  return {
    status,
    headers,
    size: bytes.byteLength,
    open: async ({ offset, length }) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.subarray(offset, offset + length));
          controller.close();
        },
      }),
  };
}

/**
 * The response to GET or HEAD: a 200 honours preconditions and ranges
 * (its ETag is the validator); any other status is sent as it is.
 */
export async function sendAnswer(req: HttpRequest, answer: Answer): Promise<Response> {
  const etag = answer.headers.etag;
  if (answer.status === 200 && etag)
    return serveRepresentation(req, { size: answer.size, headers: answer.headers, validators: { etag }, open: answer.open });
  const headers = { ...answer.headers, 'content-length': String(answer.size) };
  if (req.method === 'HEAD' || answer.size === 0) return new Response(null, { status: answer.status, headers });
  return new Response(await answer.open({ offset: 0, length: answer.size }), { status: answer.status, headers });
}

/** The directory's index.html, if it has one (looked up in the directory's block already read). */
export async function indexOf(blockstore: Blockstore, dir: Resolved, signal?: AbortSignal): Promise<Resolved | undefined> {
  const index = await resolveUnder(blockstore, dir, ['index.html'], signal);
  return index && isFile(index) ? { entry: index.entry, roots: dir.roots } : undefined;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A path segment as it reads: decoded, or as it is if it is not valid percent-encoding. */
function segmentName(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return encoded;
  }
}

/**
 * `/ipfs/<cid>/a/b/` as Kubo's listing heads it (boxo's Breadcrumbs): `ipfs`
 * as text, then each segment a link to the directory it names, the CID to
 * the content root.
 */
function breadcrumbs(segments: string[]): string {
  return segments
    .map((seg, i) => {
      const name = escapeHtml(segmentName(seg));
      return i === 0 ? `/${name}` : `/<a href="${escapeHtml(`/${segments.slice(0, i + 1).join('/')}/`)}">${name}</a>`;
    })
    .join('');
}

/**
 * A listing of a directory without index.html, as path gateways generate
 * one, with the links of Kubo's (boxo's directory template): the path as
 * breadcrumbs, `..` to the parent below the content root, and for each
 * entry its name linking to its path, its CID linking to
 * `/ipfs/<cid>?filename=<name>` (the content by itself, saved under its
 * name), and its size (a file's bytes). Every name is HTML-escaped and
 * percent-encoded in links. The page is built in one pass over the
 * entries: linear in the directory's size.
 */
export async function listingAnswer(
  blockstore: Blockstore,
  dir: Resolved,
  requestPath: string,
  headers: Record<string, string>,
  signal?: AbortSignal,
  /** Segments of `requestPath` that name the content root (`/ipfs/<cid>`: 2; '' on a DNSLink host: 0). */
  rootDepth = 2,
): Promise<Answer> {
  const entries = await listDirectory(blockstore, dir.entry, signal);
  const base = requestPath.endsWith('/') ? requestPath : `${requestPath}/`;
  const segments = base.split('/').filter(Boolean);
  const rows: string[] = [];
  // Kubo's back link: none at the content root (`/ipfs/<cid>/`), the parent directory below it.
  if (segments.length > rootDepth) {
    const parent = segments.slice(0, -1);
    rows.push(`<tr><td><a href="${escapeHtml(`/${parent.join('/')}${parent.length ? '/' : ''}`)}">..</a></td><td></td><td></td></tr>`);
  }
  for (const e of entries) {
    const isDir = e.type === 'directory';
    const href = `${base}${encodeURIComponent(e.name)}${isDir ? '/' : ''}`;
    const cid = cidText(e.cid);
    const cidHref = `/ipfs/${cid}?filename=${encodeURIComponent(e.name)}`;
    const size = isDir ? '' : String(e.size);
    rows.push(
      `<tr><td><a href="${escapeHtml(href)}">${escapeHtml(e.name)}${isDir ? '/' : ''}</a></td><td>${size}</td><td><a href="${escapeHtml(cidHref)}"><code>${cid}</code></a></td></tr>`,
    );
  }
  const title = escapeHtml(segmentName(requestPath));
  const root = cidText(dir.entry.cid);
  const html = `<!doctype html>\n<html><head><meta charset="utf-8"><title>Index of ${title}</title></head><body>\n<h1>Index of ${breadcrumbs(segments)}</h1>\n<p><a href="/ipfs/${root}/"><code>${root}</code></a></p>\n<table>\n<tr><th>Name</th><th>Size</th><th>CID</th></tr>\n${rows.join('\n')}\n</table>\n</body></html>\n`;
  return bytesAnswer(200, { ...headers, 'content-type': 'text/html; charset=utf-8', etag: listingEtag(dir.entry.cid) }, html);
}

/** Names the listing's template in its ETag, so a new template is not answered 304 with the old page. */
const LISTING_HASH = createHash('sha256').update(listingAnswer.toString()).digest('hex').slice(0, 16);

/** The ETag of the generated listing of the directory `cid`. */
export const listingEtag = (cid: CID): string => `"DirIndex-${LISTING_HASH}_CID-${cid.toString()}"`;
