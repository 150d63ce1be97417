/**
 * A site's `_headers` file, in Netlify's format: a path line, then indented
 * `Name: value` lines that apply to requests for paths it matches. Paths
 * may use `*` (any characters, `/` included) and `:name` (one segment).
 * Every matching block applies; a header named in several is joined with
 * ", " as Netlify does.
 */
import { PublishDirectoryError } from '../ipfs/import-directory.js';
import { checkSize, compilePathPattern, SiteFileError } from './redirects.js';

export interface HeaderRule {
  line: number;
  path: string;
  pattern: RegExp;
  headers: Array<[name: string, value: string]>;
}

/**
 * Headers a site cannot set: hop-by-hop ones (they describe one connection,
 * and a proxy would strip them), and those the service computes itself
 * (framing, validators, the IPFS and cache headers, nosniff): a wrong
 * Content-Length or ETag from a file would corrupt responses and caches.
 */
export const PROTECTED_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'content-range',
  'accept-ranges',
  'etag',
  'last-modified',
  'date',
  'location',
  'x-ipfs-path',
  'x-ipfs-roots',
  'x-cache',
  'x-content-type-options',
]);

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * What a header value may hold: visible ASCII, spaces and tabs (RFC 9110
 * section 5.5, field-value, less obs-text). The file is read as UTF-8, so a
 * character past ASCII ('€') is no byte a header can carry as written: Node's
 * http refuses it (ERR_INVALID_CHAR, a 500 on every matching request), and
 * obs-text (0x80-0xFF) would reach browsers as Latin-1, not what the file
 * says. RFC 9110 asks new values to keep to US-ASCII; the rest is
 * percent-encoded (RFC 8187) by whoever writes the file.
 */
const FIELD_VALUE = /^[\t\x20-\x7e]*$/;

/**
 * A `_headers` line the service will not send: a site's headers must be
 * bytes HTTP can carry, and must not reach past the site's own address. At
 * publish such a line fails the deploy (the live deploy keeps serving); a
 * directory deployed by CID skips that check, so when serving the line is
 * left out instead (parseHeaders without `publish`, and headersFor).
 */
export class UnsafeHeaderLine extends PublishDirectoryError {
  override name = 'UnsafeHeaderLine';
  constructor(
    readonly line: number,
    readonly reason: string,
    readonly text: string,
  ) {
    super(`_headers line ${line}: ${reason} (${JSON.stringify(text.slice(0, 200))})`, '_headers');
  }
}

function describeChar(value: string): string {
  const bad = [...value].find((c) => !FIELD_VALUE.test(c))!;
  const code = bad.codePointAt(0)!;
  return code < 0x20 || code === 0x7f ? `the control character U+${code.toString(16).toUpperCase().padStart(4, '0')}` : `"${bad}"`;
}

/**
 * Why a header cannot be sent as the site wrote it, or undefined when it
 * can. Set-Cookie may not name a Domain: without one a cookie is host-only,
 * kept to the address that set it; with `Domain=<sites domain>` one team's
 * site would set (or overwrite, or fixate) cookies for every other team's
 * site under the same domain. No site has subdomains of its own (a deploy's
 * address `<deployId>--<slug>` is a sibling), so a Domain attribute never
 * reaches anything the site owns that host-only does not.
 */
export function unsendableHeader(name: string, value: string): string | undefined {
  if (!TOKEN.test(name)) return `"${name}" is not a valid header name`;
  if (!FIELD_VALUE.test(value)) {
    return `the value of ${name} holds ${describeChar(value)}; header values are visible ASCII (RFC 9110): percent-encode other characters`;
  }
  if (name.toLowerCase() === 'set-cookie') {
    const attributes = value
      .split(';')
      .slice(1)
      .map((a) => a.trim().split('=')[0]!.trim().toLowerCase());
    if (attributes.includes('domain')) {
      return "a cookie set by _headers stays with the site's own address: remove its Domain attribute (a cookie without one is sent only to the host that set it)";
    }
  }
  return undefined;
}

export interface ParsedHeaders {
  rules: HeaderRule[];
  /** Lines that were read but set nothing (a protected header): for the deploy log. */
  warnings: string[];
}

/**
 * `publish`: the file is being checked before a deploy is published, and
 * whatever is wrong with it fails the deploy (UnsafeHeaderLine, naming the
 * line) rather than leaving a site that answers 500 or sends unsafe headers.
 * Without it (serving a deploy's rules): an unsendable line is skipped with
 * a warning, and a file that does not parse is a SiteFileError.
 */
export function parseHeaders(text: string, options: { publish?: boolean } = {}): ParsedHeaders {
  checkSize('_headers', Buffer.byteLength(text));
  const rules: HeaderRule[] = [];
  const warnings: string[] = [];
  let current: HeaderRule | undefined;
  // Iterative and linear, at most 64 KiB (checkSize): no line costs more than its own length.
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1;
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const fail = (reason: string): never => {
      throw options.publish ? new UnsafeHeaderLine(line, reason, trimmed) : new SiteFileError('_headers', line, reason, trimmed);
    };
    if (!/^\s/.test(raw)) {
      if (!trimmed.startsWith('/'))
        fail('a rule starts with a path starting with "/" (rules for other domains are not supported); header lines are indented');
      if (/\s/.test(trimmed)) fail('a path line holds one path and nothing else');
      // Each "*" becomes ".*", and every request tries every rule: with two or
      // more, a path such as /*a*a*a*a*b backtracks polynomially in the request
      // path's length (40 characters took 7 s), blocking every site. One "*"
      // keeps a match linear in the path and the pattern.
      if (trimmed.indexOf('*') !== trimmed.lastIndexOf('*'))
        fail('a path holds at most one "*" (more would make every request slow to match)');
      const { pattern } = compilePathPattern(trimmed, { splatAnywhere: true, optionalSlash: false });
      current = { line, path: trimmed, pattern, headers: [] };
      rules.push(current);
      return;
    }
    if (!current) fail('a header line comes before any path line');
    const colon = trimmed.indexOf(':');
    if (colon <= 0) fail('a header line is "Name: value"');
    const name = trimmed.slice(0, colon).trim();
    const value = trimmed.slice(colon + 1).trim();
    const unsendable = unsendableHeader(name, value);
    if (unsendable && options.publish) fail(unsendable);
    if (unsendable) {
      warnings.push(`_headers line ${line}: ${unsendable}; the line is ignored`);
      return;
    }
    if (PROTECTED_HEADERS.has(name.toLowerCase())) {
      warnings.push(`_headers line ${line}: ${name} is set by the service and cannot be overridden; the line is ignored`);
      return;
    }
    current!.headers.push([name.toLowerCase(), value]);
  });
  return { rules, warnings };
}

/**
 * The headers `_headers` adds to a response for `path` (decoded, normalized).
 * A header that could not be sent is left out here too, whatever made the
 * rule: one bad header must cost that header, never the response (a 500).
 */
export function headersFor(rules: readonly HeaderRule[], path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rule of rules) {
    if (!rule.pattern.test(path)) continue;
    for (const [name, value] of rule.headers) {
      if (unsendableHeader(name, value)) continue;
      out[name] = out[name] === undefined ? value : `${out[name]}, ${value}`;
    }
  }
  return out;
}
