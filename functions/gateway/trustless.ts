/**
 * The trustless gateway's response types on `/ipfs/<cid>[/path]`, as the
 * IPFS HTTP gateway specs (trustless-gateway, path-gateway) define them:
 * a raw block (`?format=raw`, `Accept: application/vnd.ipld.raw`), bytes a
 * client checks against the CID it asked for (or, with a path, the block
 * the path reaches), and a CARv1 stream
 * (`?format=car`, `Accept: application/vnd.ipld.car`) of the blocks that
 * prove the path, then the blocks of `dag-scope` (block, entity, all) or of
 * `entity-bytes` at its end, depth first, each block once (`dups=n`, the
 * default) or each time the walk meets it (`dups=y`, IPIP-412). The CAR is
 * written as the blocks are read, so a large DAG never sits in memory; a
 * block missing mid-way ends the stream with an error (the client sees a
 * truncated CAR, as the spec has it), a missing root is a 404 before any.
 *
 * Everything is read from the node's raw blockstore: no network behind it.
 */
import { createHash } from 'node:crypto';
import { CarWriter } from '@ipld/car';
import { exporter } from 'ipfs-unixfs-exporter';
import type { Blockstore } from 'interface-blockstore';
import type { CID } from 'multiformats/cid';
import { evaluatePreconditions } from '../core/http/conditional.js';
import { queryParams, type HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import { isNotFound } from '../core/ipfs/read.js';
import { resolvePath, type Resolved } from '../core/ipfs/paths.js';
import { decodeFileNode } from '../core/ipfs/unixfs-file.js';
import { CBOR, DAG_CBOR, DAG_JSON, JSON_CODEC } from '../core/ipfs/ipld.js';
import { blockKey, readBlock, walkDag } from '../core/storage/dag-walk.js';
import { serveRepresentation, textResponse } from './responses.js';
import { rootsHeader } from './unixfs.js';

const RAW_TYPE = 'application/vnd.ipld.raw';
const CAR_TYPE = 'application/vnd.ipld.car';
/**
 * The CAR variants written here, said in full as the spec asks ("MUST always
 * respond with a Content-Type header that includes information about all
 * supported and known parameters"): depth first, without or with duplicates.
 */
const carContentType = (dups: boolean) => `${CAR_TYPE}; version=1; order=dfs; dups=${dups ? 'y' : 'n'}`;
/** Values of the CAR parameters a request may ask for that the variants above satisfy (`unk`: any order will do). */
const CAR_CHOICES: Record<string, readonly string[]> = { version: ['1'], order: ['dfs', 'unk'], dups: ['n', 'y'] };
/**
 * The most blocks a `dups=y` CAR repeats. A few blocks linked many times
 * over make a walk of repeats exponentially longer than the DAG (a node
 * linking one child 174 times, ten levels deep); past this many the stream
 * ends, cut short, as for a missing block: the 200 and its headers are
 * gone by then, and the trustless gateway spec has a gateway that cannot
 * finish a CAR "terminate the stream (potentially with an incomplete
 * CAR)", which clients "MUST verify" and treat "as retrieval failures".
 * The body never ends cleanly (the connection is cut, or the Lambda
 * stream ends in an error), so no client takes it for the whole DAG; it
 * can ask again with `dups=n`. A million repeated 256 KiB leaves are
 * 244 GiB. Identity blocks count (the walk meets them) though no CAR
 * holds them.
 */
export const MAX_REPEATED_BLOCKS = 1_000_000;

/** A `dups=y` CAR past MAX_REPEATED_BLOCKS: the request's own size, not a fault of the gateway. */
class RepeatLimitError extends Error {
  override name = 'RepeatLimitError';
}
/** Gateway response types of the specs this gateway does not produce: asked for alone, a 406. */
const UNSERVED_TYPES = new Set(['application/x-tar', 'application/vnd.ipfs.ipns-record']);
/**
 * The path gateway's codec response types (its "Accept" request header),
 * by the `format=` value that names each: the block itself, when its codec
 * is the one asked for (codecs.ts).
 */
export const CODEC_FORMATS = {
  'dag-json': 'application/vnd.ipld.dag-json',
  'dag-cbor': 'application/vnd.ipld.dag-cbor',
  json: 'application/json',
  cbor: 'application/cbor',
} as const;
export type CodecFormat = keyof typeof CODEC_FORMATS;
const CODEC_BY_TYPE = new Map(Object.entries(CODEC_FORMATS).map(([format, type]) => [type as string, format as CodecFormat]));
const SERVED = `this gateway serves ${RAW_TYPE} (format=raw), ${carContentType(false)} or dups=y (format=car), dag-json, dag-cbor, json and cbor blocks as they are (format=dag-json, dag-cbor, json, cbor), and files and directories themselves`;

const DAG_PB = 0x70;
const RAW = 0x55;
const IDENTITY = 0x00;

/** Blocks read ahead of the CAR writer. */
const READ_AHEAD = 8;

export type TrustlessFormat = {
  kind: 'raw' | 'car';
  /** Chosen by Accept alone: the answer names its `?format=` URL in Content-Location. */ negotiated: boolean;
  /** A CAR that repeats each block as often as the walk meets it (`dups=y`). */
  dups?: boolean;
};

/** A codec's response type: the block as it is, when its codec is the one asked for. */
export type CodecRequest = {
  kind: 'codec';
  format: CodecFormat;
  /** Chosen by Accept alone (the answer names its `?format=` URL in Content-Location). */
  negotiated: boolean;
  /** The Accept header also takes the file or directory itself, should the codec not match. */
  orElse: boolean;
};

export type Negotiation = TrustlessFormat | CodecRequest | { kind: 'deserialized' } | { kind: 'refused'; response: Response };

export interface MediaRange {
  type: string;
  params: Map<string, string>;
}

/** The media ranges of an Accept header, most preferred first, without those refused (q=0). */
export function parseAccept(header: string | null): MediaRange[] {
  if (!header) return [];
  const ranges: Array<MediaRange & { q: number; at: number }> = [];
  header.split(',').forEach((part, at) => {
    const [type, ...rest] = part.split(';');
    const params = new Map<string, string>();
    for (const p of rest) {
      const eq = p.indexOf('=');
      if (eq > 0)
        params.set(
          p.slice(0, eq).trim().toLowerCase(),
          p
            .slice(eq + 1)
            .trim()
            .replace(/^"(.*)"$/, '$1'),
        );
    }
    const q = params.has('q') ? Number(params.get('q')) : 1;
    params.delete('q');
    const name = type!.trim().toLowerCase();
    if (name && q > 0) ranges.push({ type: name, params, q, at });
  });
  return ranges.sort((a, b) => b.q - a.q || a.at - b.at);
}

/** The CAR parameter asked for (the `car-*` query parameter first, then the Accept one) that this gateway cannot honour. */
function carParameterUnmet(query: Map<string, string>, accepted: Map<string, string>): string | undefined {
  for (const [name, choices] of Object.entries(CAR_CHOICES)) {
    const value = query.get(`car-${name}`) ?? accepted.get(name);
    if (value !== undefined && !choices.includes(value.toLowerCase())) return `${name}=${value}`;
  }
  return undefined;
}

/**
 * Whether the CAR asked for repeats blocks: `car-dups` in the query first
 * ("In case both are present in the request, the URL query parameter SHOULD
 * take precedence"), then the Accept type's `dups`; `n` when neither says
 * ("a Gateway should respond with `dups=n` if it has control over the
 * duplicate status").
 */
function carDups(query: Map<string, string>, accepted: Map<string, string>): boolean {
  return (query.get('car-dups') ?? accepted.get('dups') ?? 'n').toLowerCase() === 'y';
}

const refused = (status: 400 | 406, message: string): Negotiation => ({
  kind: 'refused',
  response: textResponse(status, `${status === 400 ? 'Bad Request' : 'Not Acceptable'}: ${message}; ${SERVED}\n`),
});

/**
 * What an `/ipfs/` request asks for: `format` first (the specs' rule when
 * both are present), else the most preferred Accept type that can be met.
 * An unknown `format` is a 400; an Accept that names only response types
 * this gateway cannot produce is a 406; any other Accept (a browser's, a
 * wildcard) gets the file or directory itself. A codec's type (`format=
 * dag-json|dag-cbor|json|cbor` or its media type) is a CodecRequest, which
 * the content it reaches decides (codecs.ts).
 */
export function negotiateFormat(req: HttpRequest): Negotiation {
  const query = queryParams(req.rawQuery);
  const accept = parseAccept(req.headers.get('accept'));
  const format = (query.get('format') ?? '').toLowerCase();
  const carQueryUnmet = () => carParameterUnmet(query, new Map());
  if (format === 'raw') return { kind: 'raw', negotiated: false };
  if (format === 'car') {
    const unmet = carQueryUnmet();
    if (unmet) return refused(400, `car-${unmet} is not a CAR this gateway writes`);
    const cars = accept.filter((m) => m.type === CAR_TYPE);
    const met = cars.find((m) => !carParameterUnmet(query, m.params));
    if (cars.length > 0 && !met) {
      return refused(406, `the Accept header asks for a CAR with ${carParameterUnmet(query, cars[0]!.params)}`);
    }
    return { kind: 'car', negotiated: false, dups: carDups(query, met?.params ?? new Map()) };
  }
  if (Object.hasOwn(CODEC_FORMATS, format)) return { kind: 'codec', format: format as CodecFormat, negotiated: false, orElse: false };
  if (format) return refused(400, `format=${format.slice(0, 50)} is not served here`);
  let unmet: string | undefined;
  for (const [at, m] of accept.entries()) {
    if (m.type === RAW_TYPE) return { kind: 'raw', negotiated: true };
    const codec = CODEC_BY_TYPE.get(m.type);
    if (codec) {
      const orElse = accept.slice(at + 1).some((later) => !isGatewayType(later.type));
      return { kind: 'codec', format: codec, negotiated: true, orElse };
    }
    if (m.type === CAR_TYPE) {
      const queryUnmet = carQueryUnmet();
      if (queryUnmet) return refused(400, `car-${queryUnmet} is not a CAR this gateway writes`);
      const paramUnmet = carParameterUnmet(query, m.params);
      if (!paramUnmet) return { kind: 'car', negotiated: true, dups: carDups(query, m.params) };
      unmet ??= `${CAR_TYPE}; ${paramUnmet}`;
    } else if (UNSERVED_TYPES.has(m.type)) {
      unmet ??= m.type;
    } else {
      return { kind: 'deserialized' };
    }
  }
  if (unmet) return refused(406, `the Accept header asks only for what this gateway cannot produce (${unmet.slice(0, 100)})`);
  return { kind: 'deserialized' };
}

/** A media type that names one of the gateway's own response types, not a file's. */
const isGatewayType = (type: string) => type === RAW_TYPE || type === CAR_TYPE || CODEC_BY_TYPE.has(type) || UNSERVED_TYPES.has(type);

/** `attachment` (or `inline`) with the name, in ASCII and (when it is not ASCII) RFC 8187 UTF-8 too. */
export function attachment(name: string, disposition: 'attachment' | 'inline' = 'attachment'): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const header = `${disposition}; filename="${ascii}"`;
  return ascii === name ? header : `${header}; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** The request's URL with `format=` added, for Content-Location when Accept alone chose the format. */
export function formatUrl(req: HttpRequest, format: string): string {
  return `${req.rawPath}?${req.rawQuery ? `${req.rawQuery}&` : ''}format=${format}`;
}

function bytesStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}

export interface TrustlessTarget {
  cid: CID;
  /** The decoded path segments after the CID. */
  segments: string[];
  /** Headers every `/ipfs/` answer carries (Cache-Control, X-Ipfs-Path, Vary). */
  headers: Record<string, string>;
}

export async function serveTrustless(
  services: Pick<Services, 'ipfs' | 'logger'>,
  req: HttpRequest,
  format: TrustlessFormat,
  target: TrustlessTarget,
): Promise<Response> {
  return format.kind === 'raw' ? serveRawBlock(services, req, format, target) : serveCar(services, req, format, target);
}

/** What `segments` under `root` reach, or the 404 that says which part is missing: the root's block, or the path. */
async function resolvedOr404(blockstore: Blockstore, root: CID, segments: string[], signal: AbortSignal): Promise<Resolved | Response> {
  let found: Resolved | undefined;
  try {
    found = await resolvePath(blockstore, root, segments, signal);
  } catch (err) {
    if (isNotFound(err)) return textResponse(404, 'Not Found: this gateway holds no content with that CID\n');
    throw err;
  }
  if (found?.remainder) return remainderResponse(found);
  return found ?? textResponse(404, 'Not Found: no such path under that CID\n');
}

/**
 * A path that ends inside a dag-cbor or dag-json block's own data: "pathing
 * into IPLD Kind other than Link (CID) is not supported at the moment.
 * Implementations should return HTTP 501 Not Implemented when fully
 * resolved content path has any remainder left" (path gateway spec).
 */
export function remainderResponse(found: Resolved): Response {
  const rest = found.remainder!.map(encodeURIComponent).join('/');
  return textResponse(
    501,
    `Not Implemented: "${rest.slice(0, 200)}" is data inside the block ${found.entry.cid}, not a link; reading IPLD kinds other than links is not implemented: try /ipfs/${found.entry.cid} instead\n`,
  );
}

async function serveRawBlock(
  services: Pick<Services, 'ipfs' | 'logger'>,
  req: HttpRequest,
  format: TrustlessFormat,
  { cid: root, segments, headers }: TrustlessTarget,
): Promise<Response> {
  // With a path, the answer is the block the path reaches (path-gateway
  // spec, "format" request query parameter: the response type applies to
  // the content path's terminal element); X-Ipfs-Roots names every block on
  // the way, so a client can ask for them too and verify the path.
  let cid = root;
  let roots = [root];
  if (segments.length > 0) {
    const found = await resolvedOr404((await services.ipfs()).blockstore, root, segments, req.signal);
    if (found instanceof Response) return found;
    cid = found.entry.cid;
    roots = found.roots;
  }
  let bytes: Uint8Array;
  if (cid.multihash.code === IDENTITY) {
    bytes = cid.multihash.digest;
  } else {
    const node = await services.ipfs();
    try {
      bytes = await readBlock(node.blockstore, cid, req.signal);
    } catch (err) {
      if (isNotFound(err)) return textResponse(404, 'Not Found: this gateway holds no block with that CID\n');
      throw err;
    }
  }
  const text = cid.toString();
  const etag = `"${text}.raw"`;
  const filename = queryParams(req.rawQuery).get('filename');
  return serveRepresentation(req, {
    size: bytes.byteLength,
    headers: {
      ...headers,
      'content-type': RAW_TYPE,
      etag,
      'x-content-type-options': 'nosniff',
      'content-disposition': attachment(filename || `${text}.bin`),
      'x-ipfs-roots': rootsHeader(roots),
      ...(format.negotiated ? { 'content-location': formatUrl(req, 'raw') } : {}),
    },
    validators: { etag },
    open: async ({ offset, length }) => bytesStream(bytes.subarray(offset, offset + length)),
  });
}

type DagScope = 'block' | 'entity' | 'all';

interface EntityBytes {
  /** As sent (it names the variant in the ETag). */
  text: string;
  from: number;
  /** Inclusive; '*' for the end. */
  to: number | '*';
}

/** `dag-scope` and `entity-bytes`, or why they cannot be honoured. */
function carScope(query: Map<string, string>): { scope: DagScope; bytes?: EntityBytes } | { error: string } {
  const scope = query.get('dag-scope');
  if (scope !== undefined && scope !== 'block' && scope !== 'entity' && scope !== 'all')
    return { error: `dag-scope is block, entity or all, not "${scope.slice(0, 50)}"` };
  const range = query.get('entity-bytes');
  if (range === undefined) return { scope: scope ?? 'all' };
  const m = /^(-?\d{1,16}):(-?\d{1,16}|\*)$/.exec(range);
  if (!m) return { error: `entity-bytes is from:to (integers, negative from the end, to may be *), not "${range.slice(0, 50)}"` };
  if (scope !== undefined && scope !== 'entity') return { error: 'entity-bytes implies dag-scope=entity' };
  return { scope: 'entity', bytes: { text: range, from: Number(m[1]), to: m[2] === '*' ? '*' : Number(m[2]) } };
}

/** The bytes `[start, end)` of an entity of `size` bytes that `entity-bytes` names, 'none' for none of them, 'outside' when it lies wholly outside them. */
function byteSpan(bytes: EntityBytes, size: number): { start: number; end: number } | 'none' | 'outside' {
  if (size === 0) return 'none';
  const start = bytes.from < 0 ? Math.max(0, size + bytes.from) : bytes.from;
  const last = bytes.to === '*' ? size - 1 : bytes.to < 0 ? size + bytes.to : Math.min(bytes.to, size - 1);
  if (start >= size || last < 0) return 'outside';
  if (last < start) return 'none';
  return { start, end: last + 1 };
}

/**
 * The blockstore as the exporter sees it while it resolves a path or lists
 * a directory, noting every block it reads, in order: exactly the blocks a
 * client needs to follow the same steps (directories, HAMT shards on the
 * way, the entry at the end). Identity CIDs are answered from the CID.
 */
function recording(blockstore: Blockstore): { store: Blockstore; reads: CID[] } {
  const reads: CID[] = [];
  const store = new Proxy(blockstore, {
    get(target, prop) {
      if (prop === 'get') {
        return (cid: CID, options?: { signal?: AbortSignal }) => {
          if (cid.multihash.code === IDENTITY) {
            return (async function* () {
              yield cid.multihash.digest;
            })();
          }
          reads.push(cid);
          return target.get(cid, options);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store, reads };
}

/** A directory's own blocks: its node and, for a HAMT, every shard below it, parents first (the exporter's listing reads just those). */
async function* directoryBlocks(blockstore: Blockstore, dir: CID, signal: AbortSignal): AsyncGenerator<CID> {
  const { store, reads } = recording(blockstore);
  const entry = await exporter(dir, store, { signal });
  if (entry.type === 'directory' && entry.unixfs.type === 'hamt-sharded-directory') {
    for await (const _ of entry.entries({ signal })) {
      // each shard is read once as the listing comes to it
    }
  }
  const seen = new Set<string>();
  for (const cid of reads) {
    const key = blockKey(cid);
    if (!seen.has(key)) {
      seen.add(key);
      yield cid;
    }
  }
}

/**
 * The blocks of a UnixFS file a client needs to verify bytes `[start, end)`:
 * the nodes whose span meets the range, depth first. Where a child lies
 * wholly inside the range its whole DAG is needed, and walkDag gives it;
 * only the (at most two per level) nodes on the range's edges are decoded
 * here, by their UnixFS block sizes. walkDag alone cannot do this: it visits
 * each block once, and a block repeated in a file (a run of equal chunks)
 * may be wanted at one offset and not at another.
 */
async function* fileRangeBlocks(
  blockstore: Blockstore,
  root: CID,
  start: number,
  end: number,
  signal: AbortSignal,
  repeats?: (cid: CID) => void,
): AsyncGenerator<CID> {
  const sent = new Set<string>();
  const whole = new Set<string>();
  /** A block the first time, or every time when `repeats` (dups=y) counts the repeats. */
  function* once(cid: CID): Generator<CID> {
    const key = blockKey(cid);
    if (!sent.has(key)) {
      sent.add(key);
      yield cid;
    } else if (repeats) {
      repeats(cid);
      yield cid;
    }
  }
  async function* visit(cid: CID, at: number): AsyncGenerator<CID> {
    yield* once(cid);
    if (cid.code !== DAG_PB || cid.multihash.code === IDENTITY) return;
    const node = decodeFileNode(await readBlock(blockstore, cid, signal));
    let position = at + (node.data?.length ?? 0);
    for (const link of node.links) {
      if (position >= end) break;
      const next = position + link.fileSize;
      if (next > start) {
        if (position >= start && next <= end) {
          const key = blockKey(link.cid);
          if (repeats || !whole.has(key)) {
            for await (const block of walkDag(blockstore, link.cid, { signal, duplicates: !!repeats })) yield* once(block);
            whole.add(key);
          }
        } else {
          yield* visit(link.cid, position);
        }
      }
      position = next;
    }
  }
  yield* visit(root, 0);
}

/** Each CID with its block's bytes, read a few blocks ahead of the consumer. */
async function* withBytes(
  blockstore: Blockstore,
  cids: AsyncIterable<CID>,
  signal: AbortSignal,
): AsyncGenerator<{ cid: CID; bytes: Uint8Array }> {
  const pending: Array<{ cid: CID; bytes: Promise<Uint8Array> }> = [];
  try {
    for await (const cid of cids) {
      const bytes = readBlock(blockstore, cid, signal);
      bytes.catch(() => {}); // awaited in order below; an early failure must not be unhandled
      pending.push({ cid, bytes });
      if (pending.length >= READ_AHEAD) {
        const head = pending.shift()!;
        yield { cid: head.cid, bytes: await head.bytes };
      }
    }
  } catch (err) {
    // The walk failed (a missing block, the dups=y limit): what it gave before still goes out, so a cut CAR
    // holds every block up to the cut.
    if (!signal.aborted) for (const head of pending) yield { cid: head.cid, bytes: await head.bytes };
    throw err;
  }
  for (const head of pending) yield { cid: head.cid, bytes: await head.bytes };
}

/** The path's blocks, then the scope's, without identity blocks (the spec excludes them) or a path block twice. */
async function* carBlocks(path: CID[], scope: AsyncIterable<CID> | Iterable<CID>): AsyncGenerator<CID> {
  const pathKeys = new Set<string>();
  for (const cid of path) {
    const key = blockKey(cid);
    if (cid.multihash.code === IDENTITY || pathKeys.has(key)) continue;
    pathKeys.add(key);
    yield cid;
  }
  for await (const cid of scope) if (cid.multihash.code !== IDENTITY && !pathKeys.has(blockKey(cid))) yield cid;
}

/**
 * A CARv1 of the blocks, written as the consumer reads (the writer waits for
 * each chunk to be taken). A failure mid-way errors the stream, which the
 * doors turn into a cut-off body; a consumer that goes away stops the reads.
 */
function carStream(
  root: CID,
  blocks: (signal: AbortSignal) => AsyncIterable<CID>,
  blockstore: Blockstore,
  signal: AbortSignal,
  onError: (err: unknown) => void,
): ReadableStream<Uint8Array> {
  const stop = new AbortController();
  const reads = AbortSignal.any([signal, stop.signal]);
  const { writer, out } = CarWriter.create([root]);
  const chunks = out[Symbol.asyncIterator]();
  let started = false;
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (!started) {
          started = true;
          void (async () => {
            try {
              for await (const block of withBytes(blockstore, blocks(reads), reads)) await writer.put(block);
              await writer.close();
            } catch (err) {
              if (!reads.aborted) onError(err);
              try {
                controller.error(err);
              } catch {
                // already closed or errored
              }
            }
          })();
        }
        return chunks.next().then(
          (next) => {
            try {
              if (next.done) controller.close();
              else controller.enqueue(next.value);
            } catch {
              // the stream was errored by the writer meanwhile
            }
          },
          (err: unknown) => controller.error(err),
        );
      },
      cancel() {
        stop.abort();
      },
    },
    { highWaterMark: 0 },
  );
}

const CAN_WALK = new Set([DAG_PB, RAW, DAG_CBOR, DAG_JSON, CBOR, JSON_CODEC]);

async function serveCar(
  services: Pick<Services, 'ipfs' | 'logger'>,
  req: HttpRequest,
  format: TrustlessFormat,
  { cid, segments, headers }: TrustlessTarget,
): Promise<Response> {
  const query = queryParams(req.rawQuery);
  const asked = carScope(query);
  if ('error' in asked) return textResponse(400, `Bad Request: ${asked.error}\n`);
  const node = await services.ipfs();
  const path = recording(node.blockstore);
  const found = await resolvedOr404(path.store, cid, segments, req.signal);
  if (found instanceof Response) return found;
  const { entry } = found;
  const terminal = entry.cid;
  let scope = asked.scope;
  let span: { start: number; end: number } | undefined;
  if (asked.bytes && (entry.type === 'file' || entry.type === 'raw' || entry.type === 'identity')) {
    const named = byteSpan(asked.bytes, Number(entry.size));
    if (named === 'outside')
      return textResponse(400, `Bad Request: entity-bytes=${asked.bytes.text} lies outside the ${entry.size} bytes of ${terminal}\n`);
    if (named === 'none') scope = 'block';
    else span = named;
  }
  if (scope === 'all' && !CAN_WALK.has(terminal.code) && terminal.multihash.code !== IDENTITY) {
    return textResponse(
      501,
      `Not Implemented: this gateway walks dag-pb, raw, dag-cbor, dag-json, cbor and json DAGs, not codec 0x${terminal.code.toString(16)}; ask for dag-scope=block\n`,
    );
  }

  const dups = !!format.dups;
  const contentType = carContentType(dups);
  const variant = JSON.stringify([cid.toString(), segments, scope, asked.bytes?.text ?? '', contentType]);
  const etag = `W/"${terminal.toString()}.${createHash('sha256').update(variant).digest('hex').slice(0, 16)}.car"`;
  const filename = query.get('filename');
  const answer: Record<string, string> = {
    ...headers,
    'content-type': contentType,
    etag,
    'x-content-type-options': 'nosniff',
    'content-disposition': attachment(filename || `${terminal.toString()}.car`),
    'x-ipfs-roots': rootsHeader(found.roots),
    'accept-ranges': 'none',
    ...(format.negotiated ? { 'content-location': formatUrl(req, 'car') } : {}),
  };
  const precondition = evaluatePreconditions(req.headers, { etag });
  if (precondition === 412) return textResponse(412, 'Precondition Failed\n');
  if (precondition === 304) {
    const kept: Record<string, string> = {};
    for (const name of ['etag', 'cache-control', 'x-ipfs-path', 'x-ipfs-roots', 'vary', 'content-location'])
      if (answer[name] !== undefined) kept[name] = answer[name];
    return new Response(null, { status: 304, headers: kept });
  }
  if (req.method === 'HEAD') return new Response(null, { status: 200, headers: answer });

  // dups=y: every block as often as the walk meets it, up to MAX_REPEATED_BLOCKS repeats.
  let repeated = 0;
  const onRepeat = dups
    ? (again: CID) => {
        if (++repeated > MAX_REPEATED_BLOCKS)
          throw new RepeatLimitError(
            `more than ${MAX_REPEATED_BLOCKS} repeated blocks under ${terminal} (at ${again}): the CAR is cut short`,
          );
      }
    : undefined;
  const walk = { duplicates: dups, onRepeat };
  const scoped = (signal: AbortSignal): AsyncIterable<CID> | Iterable<CID> => {
    if (scope === 'block') return [terminal];
    if (scope === 'all') return walkDag(node.blockstore, terminal, { signal, ...walk });
    // A directory's own node and shards: the listing meets each once.
    if (entry.type === 'directory') return directoryBlocks(node.blockstore, terminal, signal);
    if (entry.type === 'file' && span) return fileRangeBlocks(node.blockstore, terminal, span.start, span.end, signal, onRepeat);
    if (entry.type === 'file') return walkDag(node.blockstore, terminal, { signal, ...walk });
    // A raw block, a symlink, a dag-cbor or dag-json document: "For all
    // queries that reference non-UnixFS data, `entity` is equivalent to
    // `block`" (trustless gateway spec, dag-scope).
    return [terminal];
  };
  const logger = services.logger.child({ fn: 'gateway' });
  const body = carStream(
    terminal,
    (signal) => carBlocks(path.reads, scoped(signal)),
    node.blockstore,
    req.signal,
    (err) =>
      err instanceof RepeatLimitError
        ? logger.warn('CAR stream cut short at the dups=y limit', { message: err.message, path: req.rawPath })
        : logger.error('CAR stream cut short', { err, path: req.rawPath, query: req.rawQuery }),
  );
  return new Response(body, { status: 200, headers: answer });
}
