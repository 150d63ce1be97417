/**
 * A request path made safe: decoded once, `.`, `..` and empty segments
 * resolved lexically so nothing climbs above the root. Plain string work,
 * apart from the DAG walk in paths.ts, so that what imports it alone (the
 * gateway threads' hit path, local/site-hits.ts) loads no IPFS module: each
 * gateway thread is another heap holding whatever it imports.
 */
export interface ContentPath {
  /** Decoded segments, none empty, `.` or `..`. */
  segments: string[];
  /** Whether the request ended in `/` (a directory asked for as one). */
  trailingSlash: boolean;
}

export class BadPathError extends Error {
  override name = 'BadPathError';
}

/**
 * Decodes a raw (percent-encoded) path. `%2F` becomes a separator like `/`
 * (a UnixFS name cannot hold one), and `..` (`%2e%2e` too) stops at the
 * root, as a browser resolves it. NUL and malformed escapes are refused.
 */
export function contentPath(rawPath: string): ContentPath {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    throw new BadPathError('the path is not valid percent-encoded UTF-8');
  }
  if (decoded.includes('\0')) throw new BadPathError('the path holds a NUL character');
  const segments: string[] = [];
  for (const part of decoded.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') segments.pop();
    else segments.push(part);
  }
  return { segments, trailingSlash: decoded.endsWith('/') || decoded.endsWith('/.') || decoded.endsWith('/..') };
}

/** The path as a URL path again, each segment percent-encoded. */
export function encodePath(segments: readonly string[], trailingSlash = false): string {
  const body = segments.map((s) => encodeURIComponent(s)).join('/');
  if (body === '') return '/';
  return `/${body}${trailingSlash ? '/' : ''}`;
}
