/**
 * A site's repository URL, read the one way both the API (when a site is
 * created) and the deploy's clone step read it, so that a URL the API
 * accepts is one the clone can fetch, and the deploy's owner/name are the
 * ones the site shows.
 */

export interface RepositoryUrl {
  /** What the clone fetches: the URL as given, without a trailing slash. */
  cloneUrl: string;
  /** `host[:port]`, for messages such as "could not reach <host>". */
  host: string;
  /** Everything before the last path segment: `owner`, or GitLab's nested `group/sub`. */
  owner: string;
  /** The last path segment, without `.git`. */
  name: string;
}

/** A URL Cairn cannot clone; the message is one line, for the user. */
export class RepositoryUrlError extends Error {
  override name = 'RepositoryUrlError';
}

/**
 * Cairn clones public repositories over HTTP(S) only: isomorphic-git, which
 * runs the same in Lambda and locally, speaks no SSH, and a file:// URL
 * would read the service's own disk.
 */
export function parseRepositoryUrl(input: string): RepositoryUrl {
  const value = input.trim();
  if (/^[^\s/:@]+@[^\s/:]+:/.test(value)) {
    throw new RepositoryUrlError(
      `"${clip(value)}" is an SSH address; Cairn clones over https:// only (use the repository's HTTPS clone URL)`,
    );
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new RepositoryUrlError(`"${clip(value)}" is not a URL; a repository URL looks like https://host/owner/name`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new RepositoryUrlError(`Cairn clones over https:// (or http://) only, not ${url.protocol.slice(0, -1)}:// ("${clip(value)}")`);
  }
  // A password in the site's settings would be stored and logged with every deploy.
  if (url.username !== '' || url.password !== '') {
    throw new RepositoryUrlError('a repository URL must not carry credentials; Cairn clones public repositories only');
  }
  // git appends /info/refs to the path: a query or fragment would land in the middle of it.
  if (url.search !== '' || url.hash !== '') {
    throw new RepositoryUrlError(`a repository URL has no query or fragment ("${clip(value)}")`);
  }
  const path = url.pathname.replace(/\/+$/, '');
  const segments = path
    .split('/')
    .filter((s) => s !== '')
    .map(decode);
  const last = segments.pop()?.replace(/\.git$/, '');
  if (!last || segments.length === 0) {
    throw new RepositoryUrlError(`"${clip(value)}" names no repository; a repository URL looks like https://host/owner/name`);
  }
  return { cloneUrl: `${url.origin}${path}`, host: url.host, owner: segments.join('/'), name: last };
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function clip(value: string): string {
  const line = value.replace(/\s+/g, ' ');
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}
