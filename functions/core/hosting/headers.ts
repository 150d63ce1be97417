/**
 * A site's `_headers` file, in Netlify's format: a path line, then indented
 * `Name: value` lines that apply to requests for paths it matches. Paths
 * may use `*` (any characters, `/` included) and `:name` (one segment).
 * Every matching block applies; a header named in several is joined with
 * ", " as Netlify does.
 */
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

export interface ParsedHeaders {
  rules: HeaderRule[];
  /** Lines that were read but set nothing (a protected header): for the deploy log. */
  warnings: string[];
}

export function parseHeaders(text: string): ParsedHeaders {
  checkSize('_headers', Buffer.byteLength(text));
  const rules: HeaderRule[] = [];
  const warnings: string[] = [];
  let current: HeaderRule | undefined;
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1;
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const fail = (reason: string): never => {
      throw new SiteFileError('_headers', line, reason, trimmed);
    };
    if (!/^\s/.test(raw)) {
      if (!trimmed.startsWith('/')) fail('a rule starts with a path starting with "/" (rules for other domains are not supported); header lines are indented');
      if (/\s/.test(trimmed)) fail('a path line holds one path and nothing else');
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
    if (!TOKEN.test(name)) fail(`"${name}" is not a valid header name`);
    if (/[\0\r\n]/.test(value)) fail('a header value cannot hold control characters');
    if (PROTECTED_HEADERS.has(name.toLowerCase())) {
      warnings.push(`_headers line ${line}: ${name} is set by the service and cannot be overridden; the line is ignored`);
      return;
    }
    current!.headers.push([name.toLowerCase(), value]);
  });
  return { rules, warnings };
}

/** The headers `_headers` adds to a response for `path` (decoded, normalized). */
export function headersFor(rules: readonly HeaderRule[], path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rule of rules) {
    if (!rule.pattern.test(path)) continue;
    for (const [name, value] of rule.headers) out[name] = out[name] === undefined ? value : `${out[name]}, ${value}`;
  }
  return out;
}
