/**
 * IPNS on the gateway, from the records Cairn holds (data/ipns-records.ts):
 * a site's own, signed on each publish, and records PUT through the
 * routing API. Nothing is looked up on a network: a name without a record
 * here is a 404, as the trustless gateway spec has a gateway answer for
 * what is not in its dataset.
 *
 * - `GET|HEAD /ipns/<name>[/path]` (path gateway spec): the record's value
 *   (`/ipfs/<cid>[/path]`, or `/ipns/<name>`, followed a few levels) served
 *   as `/ipfs/` serves it, sub-paths, formats and all, but cached for the
 *   record's TTL (at most its remaining validity), not as immutable, and a
 *   directory's slash redirect staying under `/ipns/`. X-Ipfs-Path is the
 *   path asked for, X-Ipfs-Roots the CIDs it went through.
 * - `?format=ipns-record` or `Accept: application/vnd.ipfs.ipns-record` on
 *   `/ipns/<name>` (IPIP-351): the signed record itself, as boxo's gateway
 *   sends it (handler_ipns_record.go): `Content-Disposition: attachment;
 *   filename="<name>.ipns-record"`, an ETag of its bytes, `Cache-Control:
 *   public, max-age=<TTL, at most the remaining validity>`; with a path
 *   after the name, a 400.
 * - The Delegated Routing V1 HTTP API's IPNS endpoints
 *   (specs.ipfs.tech/routing/http-routing-v1): `GET /routing/v1/ipns/<name>`
 *   answers the record (`Accept` missing, a wildcard or the record's type;
 *   anything else a 406), 404 when none is held; `PUT` takes a record signed
 *   elsewhere, checked (core/ipfs/ipns.ts) and kept when its sequence is
 *   higher than the held one's. The content and peer routing endpoints are
 *   501 (Cairn does no content routing); any other path under
 *   `/routing/v1/` a 400, as the spec's error codes say.
 *
 * DNSLink names (a domain where the key goes) are resolved by their
 * `_dnslink` TXT records when CAIRN_GATEWAY_DNSLINK is on
 * (core/hosting/dnslink-resolver.ts: kept, bounded), and served as a key's
 * value is, cached for the record's TTL; with it off they are 501. The
 * content is only ever what this node holds.
 */
import { createHash } from 'node:crypto';
import { queryParams, type HttpRequest } from '../core/http/types.js';
import { checkPreconditions } from '../core/http/conditional.js';
import { readCappedBody } from '../core/http/capped-body.js';
import type { GatewayServices } from '../core/services.js';
import type { HeldIpnsRecord } from '../core/data/ipns-records.js';
import type { RateLimit } from '../core/data/rate-limits.js';
import {
  checkIpnsRecord,
  IPNS_RECORD_TYPE,
  IpnsNameError,
  IpnsRecordError,
  isDnsLinkName,
  MAX_RECORD_BYTES,
  parseIpnsName,
  type IpnsName,
} from '../core/ipfs/ipns.js';
import { dnsLinkNameOf, MAX_KEEP_S, NEGATIVE_KEEP_S, type DnsLinkAnswer, type DnsLinkResolver } from '../core/hosting/dnslink-resolver.js';
import { serveCid } from './ipfs.js';
import { attachment, parseAccept } from './trustless.js';
import { textResponse } from './responses.js';

const IPNS_PATH = /^\/ipns\/([^/?#]+)(\/.*)?$/;
const ROUTING_PREFIX = '/routing/v1/';
const ROUTING_IPNS = /^\/routing\/v1\/ipns\/([^/?#]+)\/?$/;
/** How many names a value is followed through: Kubo's namesys DefaultDepthLimit (boxo namesys/interface.go). */
export const MAX_NAME_HOPS = 32;

/** Records PUT from one client address in an hour (the routing API is public: this bounds what one address can store). */
export const IPNS_PUT_RATE: RateLimit = { action: 'ipns-put', count: 100, windowSeconds: 3600 };

export interface IpnsRequestPath {
  nameText: string;
  /** The path after the name, as sent ('' for none). */
  rest: string;
}

/** The parts of an `/ipns/<name>[/path]` path, or undefined for any other path. */
export function ipnsPath(rawPath: string): IpnsRequestPath | undefined {
  const m = IPNS_PATH.exec(rawPath);
  return m ? { nameText: m[1]!, rest: m[2] ?? '' } : undefined;
}

/** Whether a path is the routing API's. */
export const isRoutingPath = (rawPath: string) => rawPath.startsWith(ROUTING_PREFIX) || rawPath === '/routing/v1';

/** The routing API answers pages of every origin (the spec's "CORS and Web Browsers"). */
export const ROUTING_CORS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, PUT, OPTIONS',
  'access-control-allow-headers': 'Content-Type, Accept',
  'access-control-expose-headers': 'Content-Length, ETag, Cache-Control, Expires, Content-Disposition',
};

const decoded = (text: string) => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/** The name, or the 400/501 that says why it is not one. */
function nameOr(text: string): IpnsName | Response {
  const name = decoded(text);
  if (isDnsLinkName(name))
    return textResponse(
      501,
      `Not Implemented: "${name.slice(0, 100)}" is a DNSLink name, and this gateway resolves IPNS keys only (k51...); a site answers at its own host\n`,
    );
  try {
    return parseIpnsName(name);
  } catch (err) {
    if (err instanceof IpnsNameError) return textResponse(400, `Bad Request: "${name.slice(0, 100)}" is ${err.message}\n`);
    throw err;
  }
}

/** The record held for the name while it is valid. */
async function validRecord(services: Pick<GatewayServices, 'ipnsNames'>, name: string): Promise<HeldIpnsRecord | undefined> {
  const held = await services.ipnsNames.get(name);
  return held && held.validUntil > Date.now() ? held : undefined;
}

const noRecord = (name: string) =>
  textResponse(404, `Not Found: this gateway holds no valid IPNS record for ${name}\n`, { 'cache-control': 'public, max-age=60' });

/** Seconds a cache may keep an answer from the record: its TTL, never past its EOL (boxo: ipnsRecordMaxAge). */
function maxAgeOf(record: HeldIpnsRecord): { maxAge: number; remaining: number } {
  const remaining = Math.max(0, Math.floor((record.validUntil - Date.now()) / 1000));
  return { maxAge: Math.min(Math.floor(record.ttlMs / 1000), remaining), remaining };
}

const recordEtag = (bytes: Uint8Array) => `"${createHash('sha256').update(bytes).digest('hex').slice(0, 32)}"`;

/** Whether the request asks for the record itself: `format=ipns-record`, or the record's type first in Accept. */
function asksForRecord(req: HttpRequest): { negotiated: boolean } | undefined {
  const format = (queryParams(req.rawQuery).get('format') ?? '').toLowerCase();
  if (format === 'ipns-record') return { negotiated: false };
  if (format) return undefined;
  return parseAccept(req.headers.get('accept'))[0]?.type === IPNS_RECORD_TYPE ? { negotiated: true } : undefined;
}

function recordAnswer(req: HttpRequest, record: HeldIpnsRecord, headers: Record<string, string>): Response {
  const etag = recordEtag(record.bytes);
  const answer: Record<string, string> = { ...headers, etag };
  if (checkPreconditions(req.headers, { etag }).status === 304) return new Response(null, { status: 304, headers: answer });
  answer['content-length'] = String(record.bytes.byteLength);
  return new Response(req.method === 'HEAD' ? null : new Uint8Array(record.bytes), { status: 200, headers: answer });
}

/** How a DNSLink answer that serves nothing is told (the path gateway's error shape: text, a status). */
export function dnsLinkFault(domain: string, answer: Exclude<DnsLinkAnswer, { kind: 'link' }>): Response {
  switch (answer.kind) {
    case 'none':
      return textResponse(404, `Not Found: ${domain} has no DNSLink record (a TXT record "dnslink=/ipfs/<cid>" at _dnslink.${domain})\n`, {
        'cache-control': `public, max-age=${NEGATIVE_KEEP_S}`,
      });
    case 'invalid':
      return textResponse(502, `Bad Gateway: the DNSLink of ${domain} cannot be followed: ${answer.reason}\n`, {
        'cache-control': `public, max-age=${NEGATIVE_KEEP_S}`,
      });
    case 'failed':
      return textResponse(502, `Bad Gateway: the DNSLink of ${domain} could not be looked up: ${answer.reason.slice(0, 200)}\n`, {
        'cache-control': 'no-store',
      });
    case 'busy':
      return textResponse(503, 'Service Unavailable: this gateway is looking up too many DNSLink names; try again shortly\n', {
        'retry-after': String(answer.retryAfter),
        'cache-control': 'no-store',
      });
  }
}

/**
 * How the answer names its content: `prefix` in place of the `/ipfs/<cid>[/path]`
 * the name resolved to (`/ipns/<name>` on the path gateway, '' on a
 * DNSLink host), and the X-Ipfs-Path it reports.
 */
export interface MutableView {
  prefix: string;
  ipfsPath: string;
}

/** `GET|HEAD /ipns/<name>[/path]`; `dnsLink` when DNSLink names are resolved (CAIRN_GATEWAY_DNSLINK). */
export async function serveIpns(
  services: GatewayServices,
  req: HttpRequest,
  path: IpnsRequestPath,
  dnsLink?: DnsLinkResolver,
  view: MutableView = { prefix: `/ipns/${path.nameText}`, ipfsPath: req.rawPath },
): Promise<Response> {
  const text = decoded(path.nameText);
  if (isDnsLinkName(text)) {
    if (!dnsLink)
      return textResponse(
        501,
        `Not Implemented: "${text.slice(0, 100)}" is a DNSLink name, and this gateway resolves IPNS keys only (k51...): DNSLink names are resolved when the service runs with CAIRN_GATEWAY_DNSLINK=true; a site answers at its own host\n`,
      );
    const domain = dnsLinkNameOf(text);
    if (!domain) return textResponse(400, `Bad Request: "${text.slice(0, 100)}" is neither an IPNS name nor a valid DNSLink domain name\n`);
    if (asksForRecord(req))
      return textResponse(400, `Bad Request: ${domain} is a DNSLink name, which has no IPNS record; format=ipns-record is for IPNS keys\n`);
    return serveValue(services, req, { start: `/ipns/${domain}`, rest: path.rest, label: domain, maxAge: MAX_KEEP_S }, dnsLink, view);
  }
  const name = nameOr(path.nameText);
  if (name instanceof Response) return name;
  const wantsRecord = asksForRecord(req);
  if (wantsRecord && path.rest !== '' && path.rest !== '/')
    return textResponse(400, 'Bad Request: format=ipns-record names a record, and a record is of a name alone, not a path under it\n');
  const record = await validRecord(services, name.text);
  if (!record) return noRecord(name.text);
  const { maxAge } = maxAgeOf(record);
  if (wantsRecord) {
    const filename = queryParams(req.rawQuery).get('filename') || `${name.text}.ipns-record`;
    return recordAnswer(req, record, {
      'content-type': IPNS_RECORD_TYPE,
      'content-disposition': attachment(filename),
      'cache-control': `public, max-age=${maxAge}`,
      'x-ipfs-path': req.rawPath,
      vary: 'Accept',
      'x-content-type-options': 'nosniff',
      ...(wantsRecord.negotiated
        ? { 'content-location': `${req.rawPath}?${req.rawQuery ? `${req.rawQuery}&` : ''}format=ipns-record` }
        : {}),
    });
  }
  return serveValue(services, req, { start: record.value, rest: path.rest, label: name.text, maxAge }, dnsLink, view);
}

/**
 * Follows a name's value to `/ipfs/<cid>[/path]` and serves it: each
 * `/ipns/<name>` in front replaced by what that name points at, its path
 * kept in front of the rest (the DNSLink gateway spec's chain: `/ipns/a/pa`
 * → `/ipns/b/pb/pa` → `/ipfs/<cid>/pc/pb/pa`), IPNS keys by the records
 * held here, DNSLink names by `_dnslink` TXT records when `dnsLink` is
 * given. At most MAX_NAME_HOPS names: past that a 400, as the DNSLink
 * gateway spec has it ("a hard recursion limit (e.g. 32) and HTTP 400 Bad
 * Request error MUST be returned when the limit is reached").
 */
async function serveValue(
  services: GatewayServices,
  req: HttpRequest,
  from: { start: string; rest: string; label: string; maxAge: number },
  dnsLink: DnsLinkResolver | undefined,
  view: MutableView,
): Promise<Response> {
  let value = from.start;
  let ttlAge = from.maxAge;
  for (let hop = 0; value.startsWith('/ipns/'); hop++) {
    const next = /^\/ipns\/([^/]+)(\/.*)?$/.exec(value);
    const nextText = next ? decoded(next[1]!) : '';
    const domain = next && isDnsLinkName(nextText) && dnsLink ? dnsLinkNameOf(nextText) : undefined;
    const nextName = next && !isDnsLinkName(nextText) ? safeName(next[1]!) : undefined;
    if (!next || (!domain && !nextName))
      return textResponse(502, `Bad Gateway: ${from.label} points at ${value.slice(0, 200)}, which this gateway does not resolve\n`);
    if (hop >= MAX_NAME_HOPS)
      return textResponse(400, `Bad Request: ${from.label} goes through more than ${MAX_NAME_HOPS} names before reaching content\n`);
    let target: string;
    if (domain) {
      const answer = await dnsLink!.resolve(domain);
      if (answer.kind !== 'link') return dnsLinkFault(domain, answer);
      ttlAge = Math.min(ttlAge, answer.ttl);
      target = answer.value;
    } else {
      const nextRecord = await validRecord(services, nextName!.text);
      if (!nextRecord) return noRecord(nextName!.text);
      ttlAge = Math.min(ttlAge, maxAgeOf(nextRecord).maxAge);
      target = nextRecord.value;
    }
    value = `${target.replace(/\/$/, '')}${next[2] ?? ''}`;
  }
  const target = /^\/ipfs\/([^/]+)(\/.*)?$/.exec(value);
  if (!target) return textResponse(502, `Bad Gateway: ${from.label} points at ${value.slice(0, 200)}, which is not an /ipfs/ path\n`);
  const cidText = target[1]!;
  const valuePath = (target[2] ?? '')
    .split('/')
    .map((s) => encodeURIComponent(s))
    .join('/')
    .replace(/\/$/, '');
  const response = await serveCid(
    services,
    req,
    { cidText, rest: `${valuePath}${from.rest}` },
    { ipfsPrefix: `/ipfs/${cidText}${valuePath}`, prefix: view.prefix },
  );
  return asMutable(response, { maxAge: ttlAge, ipfsPath: view.ipfsPath });
}

function safeName(text: string): IpnsName | undefined {
  try {
    return parseIpnsName(decoded(text));
  } catch {
    return undefined;
  }
}

/**
 * An `/ipfs/` answer made an `/ipns/` one: what a name points at changes,
 * so it is cached for the record's TTL, not as immutable (the path gateway
 * spec: `/ipns/` responses' Cache-Control "SHOULD" follow the TTL; boxo's
 * contentCacheControl: `public, max-age=<ttl>`), and X-Ipfs-Path is the
 * path asked for.
 */
function asMutable(response: Response, to: { maxAge: number; ipfsPath: string }): Response {
  const headers = response.headers;
  if (headers.has('cache-control') && response.status < 400) headers.set('cache-control', `public, max-age=${to.maxAge}`);
  if (headers.has('x-ipfs-path')) headers.set('x-ipfs-path', to.ipfsPath);
  return response;
}

/** `/routing/v1/...`: the IPNS endpoints; the rest of the API is not served. */
export async function serveRouting(services: GatewayServices, req: HttpRequest): Promise<Response> {
  const m = ROUTING_IPNS.exec(req.rawPath);
  if (!m) {
    if (/^\/routing\/v1\/(providers|peers)(\/|$)/.test(req.rawPath))
      return textResponse(501, 'Not Implemented: this routing endpoint answers IPNS names only (/routing/v1/ipns/<name>)\n');
    return textResponse(400, 'Bad Request: unknown routing path; this endpoint answers /routing/v1/ipns/<name>\n');
  }
  if (req.method === 'OPTIONS') return new Response(null, { status: 200, headers: { allow: 'GET, HEAD, PUT, OPTIONS' } });
  if (req.method === 'PUT') return putRecord(services, req, m[1]!);
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return textResponse(501, `Not Implemented: ${req.method.slice(0, 20)} on an IPNS name; GET and PUT are\n`, {
      allow: 'GET, HEAD, PUT, OPTIONS',
    });
  // As boxo's server: no Accept, a wildcard or the record's type is the record; anything else a 406.
  const accept = req.headers.get('accept') ?? '';
  if (accept && !accept.includes('*/*') && !accept.includes(IPNS_RECORD_TYPE))
    return textResponse(406, `Not Acceptable: the Accept header does not take an IPNS record; retry with 'Accept: ${IPNS_RECORD_TYPE}'\n`);
  const name = nameOr(m[1]!);
  if (name instanceof Response) return name;
  const record = await validRecord(services, name.text);
  if (!record) return noRecord(name.text);
  // boxo's setIPNSCacheControl: max-age the TTL (at most what is left of the validity), stale answers only until the EOL.
  const { maxAge, remaining } = maxAgeOf(record);
  const stale = remaining - maxAge;
  return recordAnswer(req, record, {
    'content-type': IPNS_RECORD_TYPE,
    'content-disposition': attachment(`${name.text}.ipns-record`),
    'cache-control': `public, max-age=${maxAge}, stale-while-revalidate=${stale}, stale-if-error=${stale}`,
    expires: new Date(record.validUntil).toUTCString(),
    vary: 'Accept',
    'x-content-type-options': 'nosniff',
  });
}

/**
 * `PUT /routing/v1/ipns/<name>`: a record signed elsewhere. Any name is
 * taken (this is a public routing endpoint, as Kubo's delegated routers
 * are), bounded: IPNS_PUT_RATE per client address, 10 KiB a record, kept
 * at most 48 hours (data/ipns-records.ts). A Cairn site's name takes no
 * record but the ones its publishes sign.
 */
async function putRecord(services: GatewayServices, req: HttpRequest, nameText: string): Promise<Response> {
  if (!(req.headers.get('content-type') ?? '').toLowerCase().includes(IPNS_RECORD_TYPE))
    return textResponse(406, `Not Acceptable: the body must be an IPNS record; retry with 'Content-Type: ${IPNS_RECORD_TYPE}'\n`);
  const name = nameOr(nameText);
  if (name instanceof Response) return name;
  const wait = await services.rateLimits.take(IPNS_PUT_RATE, req.remoteAddress ?? 'unknown');
  if (wait > 0)
    return textResponse(429, `Too Many Requests: at most ${IPNS_PUT_RATE.count} records an hour from one address\n`, {
      'retry-after': String(wait),
    });
  const bytes = await readCappedBody(req.body, MAX_RECORD_BYTES);
  // The rest of a larger body is never read (the node:http door closes the connection after the answer).
  if (!bytes) return textResponse(400, `Bad Request: an IPNS record is at most ${MAX_RECORD_BYTES} bytes\n`);
  const held = await services.ipnsNames.get(name.text);
  if (held && Buffer.compare(Buffer.from(held.bytes), bytes) === 0) return new Response(null, { status: 200 });
  if (held?.siteId) return textResponse(400, `Bad Request: ${name.text} is a site's name here; its records are signed as it publishes\n`);
  let info;
  try {
    info = await checkIpnsRecord(name, bytes);
  } catch (err) {
    if (err instanceof IpnsRecordError) return textResponse(400, `Bad Request: ${err.message}\n`);
    throw err;
  }
  const older = () =>
    textResponse(
      400,
      `Bad Request: the record's sequence (${info.sequence}) is not higher than that of the record held for ${name.text}\n`,
    );
  if (held && info.sequence <= held.sequence) return older();
  if (!(await services.ipnsNames.put({ name: name.text, ...info }))) return older();
  return new Response(null, { status: 200 });
}
