/**
 * A site's `_redirects` file, as the IPFS web-redirects-file spec (IPIP-0002)
 * reads it: Netlify's syntax, a subset. One rule a line, `from to [status]`;
 * `#` starts a comment line; `:name` placeholders match one path segment and
 * a trailing `*` matches the rest (`:splat` in the target). The gateway
 * consults the rules only for a path the site does not have; the first rule
 * that matches wins.
 */
import { workSlices } from '../work-slices.js';

/** The spec's limit: a larger file is refused whole rather than read in part. */
export const MAX_RULES_FILE_BYTES = 64 * 1024;

export type RedirectStatus = 200 | 301 | 302 | 303 | 307 | 308 | 404 | 410 | 451;
const STATUSES = new Set<number>([200, 301, 302, 303, 307, 308, 404, 410, 451]);

export interface RedirectRule {
  /** 1-based line in the file, for messages. */
  line: number;
  from: string;
  to: string;
  status: RedirectStatus;
  pattern: RegExp;
  /** Placeholder names in the order of the pattern's groups (`splat` for `*`). */
  names: string[];
}

/** A `_redirects` or `_headers` file that cannot be used: the site answers 500 with this message. */
export class SiteFileError extends Error {
  override name = 'SiteFileError';
  constructor(
    readonly file: '_redirects' | '_headers',
    readonly line: number | undefined,
    readonly reason: string,
    readonly text?: string,
  ) {
    super(
      line === undefined
        ? `${file}: ${reason}`
        : `${file} line ${line}: ${reason}${text === undefined ? '' : ` (${JSON.stringify(text.slice(0, 200))})`}`,
    );
  }
}

export function checkSize(file: SiteFileError['file'], bytes: number): void {
  if (bytes > MAX_RULES_FILE_BYTES) {
    throw new SiteFileError(
      file,
      undefined,
      // The web-redirects-file spec's and Kubo's wording (go-ipfs-redirects-file), then what it means here.
      `${file.slice(1)} file size cannot exceed ${MAX_RULES_FILE_BYTES} bytes: the file is ${bytes} bytes, so none of its rules apply`,
    );
  }
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A path pattern as a regular expression: `:name` segments and a final
 * `*`. Shared with `_headers`, whose `*` may also stand mid-path.
 */
export function compilePathPattern(
  from: string,
  options: { splatAnywhere: boolean; optionalSlash: boolean },
): { pattern: RegExp; names: string[] } {
  const names: string[] = [];
  let source = '';
  const segments = from.split('/').slice(1);
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '*' && last) {
      // `/blog/*` also matches `/blog`, as Netlify does.
      source = source === '' ? '(?:/(.*))?' : `${source}(?:/(.*))?`;
      names.push('splat');
      return;
    }
    if (/^:[A-Za-z_][A-Za-z0-9_]*$/.test(segment)) {
      source += '/([^/]+)';
      names.push(segment.slice(1));
      return;
    }
    if (options.splatAnywhere && segment.includes('*')) {
      source += '/' + segment.split('*').map(escapeRegExp).join('.*');
      return;
    }
    source += '/' + escapeRegExp(segment);
  });
  if (source === '') source = '/';
  return {
    pattern: new RegExp(`^${source}${options.optionalSlash && !source.endsWith('/') && !source.endsWith(')?') ? '/?' : ''}$`),
    names,
  };
}

/**
 * The rules of a `_redirects` file; throws SiteFileError at the first line
 * that stops them. Synchronous: for a file on someone's site, parse it
 * with parseRedirectsInSlices.
 */
export function parseRedirects(text: string): RedirectRule[] {
  const rules: RedirectRule[] = [];
  for (const [index, raw] of linesOf(text).entries()) {
    const rule = parseRule(raw, index + 1);
    if (rule) rules.push(rule);
  }
  return rules;
}

/**
 * parseRedirects, giving the event loop a turn every few milliseconds: a
 * 64 KiB file holds 10,000 rules, each compiled to a regular expression,
 * and the gateway or a deploy parses it while serving others.
 */
export async function parseRedirectsInSlices(text: string): Promise<RedirectRule[]> {
  const rules: RedirectRule[] = [];
  const pause = workSlices();
  for (const [index, raw] of linesOf(text).entries()) {
    const rule = parseRule(raw, index + 1);
    if (rule) rules.push(rule);
    await pause();
  }
  return rules;
}

function linesOf(text: string): string[] {
  checkSize('_redirects', Buffer.byteLength(text));
  return text.split(/\r?\n/);
}

/** One line's rule, or undefined for a blank or comment line. */
function parseRule(raw: string, line: number): RedirectRule | undefined {
  const trimmed = raw.trim();
  if (trimmed === '' || trimmed.startsWith('#')) return undefined;
  const fail = (reason: string): never => {
    throw new SiteFileError('_redirects', line, reason, trimmed);
  };
  const fields = trimmed.split(/\s+/);
  if (fields.length < 2) fail('a rule needs a source path and a target');
  if (fields.length > 3) fail('too many fields: a rule is "from to [status]" (conditions and query matching are not supported)');
  const [from, to, statusText] = fields as [string, string, string | undefined];
  if (!from.startsWith('/')) fail('the source must be a path starting with "/" (rules for other domains are not supported)');
  if (from.slice(0, -1).includes('*') || (from.endsWith('*') && !from.endsWith('/*')))
    fail('"*" may only be the last segment of the source ("/path/*")');
  if (!to.startsWith('/') && !/^https?:\/\//i.test(to)) fail('the target must be a path starting with "/" or an http(s) URL');
  let status: RedirectStatus = 301;
  if (statusText !== undefined) {
    if (statusText.endsWith('!')) fail('forced rules ("!") are not supported: rules apply only to paths the site does not have');
    if (!/^\d{3}$/.test(statusText) || !STATUSES.has(Number(statusText))) fail(`the status must be one of ${[...STATUSES].join(', ')}`);
    status = Number(statusText) as RedirectStatus;
  }
  if ((status === 200 || status === 404 || status === 410 || status === 451) && !to.startsWith('/')) {
    fail(`a ${status} rule serves a file of the site: its target must be a path (proxying another origin is not supported)`);
  }
  const { pattern, names } = compilePathPattern(from, { splatAnywhere: false, optionalSlash: true });
  return { line, from, to, status, pattern, names };
}

export interface RedirectMatch {
  rule: RedirectRule;
  /** The target with placeholders filled in, percent-encoded; for 3xx with the request's query carried over. */
  location: string;
}

/**
 * The first rule that matches `path` (decoded, normalized, starting with
 * `/`). `rawQuery` (without `?`) is carried to a redirect's target.
 */
export function matchRedirect(rules: readonly RedirectRule[], path: string, rawQuery = ''): RedirectMatch | undefined {
  for (const rule of rules) {
    const m = rule.pattern.exec(path);
    if (!m) continue;
    const values = new Map<string, string>();
    rule.names.forEach((name, i) => values.set(name, m[i + 1] ?? ''));
    let location = rule.to.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name: string) => {
      const value = values.get(name);
      if (value === undefined) return whole;
      return name === 'splat' ? value.split('/').map(encodeURIComponent).join('/') : encodeURIComponent(value);
    });
    if (rawQuery && rule.status !== 200 && rule.status !== 404 && rule.status !== 410 && rule.status !== 451) {
      const hash = location.indexOf('#');
      const [base, fragment] = hash < 0 ? [location, ''] : [location.slice(0, hash), location.slice(hash)];
      location = `${base}${base.includes('?') ? '&' : '?'}${rawQuery}${fragment}`;
    }
    return { rule, location };
  }
  return undefined;
}
