/**
 * Why a clone failed, in one line the deploy log can end with: the errors of
 * both git backends (git's messages, isomorphic-git's error classes), of
 * the transfer and of the outbound policy, made the same user-facing
 * sentences whichever backend ran. Also which failures are this machine's
 * own (a damaged kept repository, fetched anew) rather than the host's.
 */
import * as git from 'isomorphic-git';
import type { RepositoryUrl } from '../../../core/hosting/repository-url.js';
import { OutboundRefused } from '../../../core/net/outbound.js';
import { UnsafeTreeError } from '../checkout/trees.js';
import { FetchTooLarge, GitCommandError } from './git-cli.js';
import { CloneError } from './clone-error.js';

export { CloneError } from './clone-error.js';

/** What a failure is read against: the clone asked for and how its transfer ended. */
export interface CloneFailure {
  repo: RepositoryUrl;
  branch: string;
  signal: AbortSignal;
  /** Whether the site's token was offered. */
  withCredentials: boolean;
  /** The byte cap, and whether a fetch stopped at it. */
  cap: number;
  tooLarge: boolean;
}

export const ambiguous = (wanted: string) =>
  new CloneError(`commit ${wanted} is ambiguous: several objects start with it; give more of the hash`);

/** An error of this machine's copy of a repository: not the host's, the transfer's, or the commit's own. */
export function isLocalFault(err: unknown, { signal, branch }: { signal: AbortSignal; branch: string }): boolean {
  if (signal.aborted || err instanceof CloneError || err instanceof UnsafeTreeError || err instanceof OutboundRefused) return false;
  if (err instanceof FetchTooLarge) return false;
  if (err instanceof GitCommandError) return gitFailure(err) === undefined;
  const { Errors } = git;
  if (
    err instanceof Errors.HttpError ||
    err instanceof Errors.UserCanceledError ||
    err instanceof Errors.SmartHttpError ||
    err instanceof Errors.UnsafeFilepathError
  )
    return false;
  if (err instanceof Errors.NotFoundError && [branch, `refs/heads/${branch}`].includes(err.data.what)) return false;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return !(code && (code in UNREACHABLE || code === 'ECONNRESET'));
}

const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

export function explain(err: unknown, at: CloneFailure): CloneError {
  const { repo } = at;
  // isomorphic-git reports an aborted transfer in its own words (a parse error, a destroyed stream): the signal says what happened.
  if (at.signal.aborted) return new CloneError('clone cancelled');
  if (at.tooLarge) {
    return new CloneError(`${repo.cloneUrl} is larger than ${formatBytes(at.cap)}, the most Cairn downloads for one clone`);
  }
  if (err instanceof CloneError) return err;
  if (err instanceof OutboundRefused) return new CloneError(`${repo.host} is not cloned: ${err.message}`);
  if (err instanceof UnsafeTreeError) return new CloneError(err.message);
  if (err instanceof git.Errors.UnsafeFilepathError)
    return new CloneError(`the commit holds a path no checkout may have: "${err.data.filepath}"`);
  if (err instanceof GitCommandError) return gitFailure(err, at) ?? new CloneError(`clone failed: ${lastSaid(err.stderr) || err.message}`);
  const credentials = credentialsRefused(at.withCredentials, repo);
  if (err instanceof git.Errors.UserCanceledError) return new CloneError(credentials);
  if (err instanceof git.Errors.HttpError) {
    const { statusCode, statusMessage } = err.data;
    if (statusCode === 401 || statusCode === 403) return new CloneError(credentials);
    if (statusCode === 404) return new CloneError(`no repository at ${repo.cloneUrl} (HTTP 404)`);
    if (statusCode >= 300 && statusCode < 400) return new CloneError(redirected(repo, statusCode));
    return new CloneError(`${repo.host} answered HTTP ${statusCode} ${statusMessage}`.trim());
  }
  if (err instanceof git.Errors.NotFoundError && [at.branch, `refs/heads/${at.branch}`].includes(err.data.what)) {
    return new CloneError(`branch ${at.branch} not found in ${repo.cloneUrl}`);
  }
  if (err instanceof git.Errors.SmartHttpError) {
    return new CloneError(`${repo.cloneUrl} did not answer as a git repository does`);
  }
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code && code in UNREACHABLE) return new CloneError(`could not reach ${repo.host} (${UNREACHABLE[code]})`);
  if (code === 'ECONNRESET') return new CloneError(`${repo.host} closed the connection during the clone`);
  const reason = err instanceof Error ? err.message : String(err);
  return new CloneError(`clone failed: ${reason.replace(/\s+/g, ' ').trim()}`);
}

/** A redirect is not followed (where it leads was never checked): the site is to name the repository where it is. */
function redirected(repo: RepositoryUrl, statusCode: number | string): string {
  return `${repo.host} answered HTTP ${statusCode}, a redirect: Cairn does not follow redirects; set the repository URL the host redirects to`;
}

export function credentialsRefused(withCredentials: boolean, repo: RepositoryUrl): string {
  return withCredentials
    ? `authentication failed: ${repo.host} refused the site's repository access token (set a valid one with setRepositoryToken)`
    : "the repository asks for credentials; set the site's repository access token (setRepositoryToken) to clone a private repository";
}

/** git's last `fatal:` or `error:` line (what it stopped on), without the prefix. */
function lastSaid(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const said = lines.filter((l) => /^(fatal|error):/.test(l)).at(-1) ?? lines.at(-1) ?? '';
  return said.replace(/^(fatal|error):\s*/, '').replace(/\s+/g, ' ');
}

/**
 * What git's message says of the host, the network or the commit: the
 * same one-line errors as isomorphic-git's; undefined for anything else (a
 * fault of this machine's copy, which the mirror then fetches anew). Read
 * from git's C-locale messages (git-cli.ts sets LC_ALL=C) and curl's.
 */
function gitFailure(err: GitCommandError, at?: CloneFailure): CloneError | undefined {
  const said = err.stderr;
  const repo = at?.repo;
  const host = repo?.host ?? 'the host';
  const credentials = () => new CloneError(at && repo ? credentialsRefused(at.withCredentials, repo) : 'credentials refused');
  const invalid = /invalid path '(.*)'/.exec(said);
  if (invalid) return new CloneError(`the commit holds a path no checkout may have: "${invalid[1]}"`);
  if (/could not read (Username|Password)|terminal prompts disabled|Authentication failed/.test(said)) return credentials();
  const status = /The requested URL returned error: (\d{3})/.exec(said);
  if (status?.[1] === '401' || status?.[1] === '403') return credentials();
  if (/repository '.*' not found/.test(said) || status?.[1] === '404')
    return new CloneError(`no repository at ${repo?.cloneUrl ?? 'the URL'} (HTTP 404)`);
  if (status?.[1]?.startsWith('3') && repo) return new CloneError(redirected(repo, status[1]));
  if (status) return new CloneError(`${host} answered HTTP ${status[1]}`);
  if (/couldn't find remote ref/.test(said))
    return new CloneError(`branch ${at?.branch ?? ''} not found in ${repo?.cloneUrl ?? 'the repository'}`);
  const unreachable = /timed out|Timeout was reached/i.test(said)
    ? 'connection timed out'
    : /Could not resolve host/.test(said)
      ? 'no such host'
      : /No route to host/.test(said)
        ? 'host unreachable'
        : /Network is unreachable/.test(said)
          ? 'network unreachable'
          : /Failed to connect|Couldn't connect|Connection refused/.test(said)
            ? 'connection refused'
            : undefined;
  if (unreachable && /unable to access/.test(said)) return new CloneError(`could not reach ${host} (${unreachable})`);
  if (
    /Empty reply from server|Connection reset|Recv failure|transfer closed|early EOF|unexpected disconnect|the remote end hung up/.test(
      said,
    )
  ) {
    return new CloneError(`${host} closed the connection during the clone`);
  }
  if (
    /unable to access|not valid: is this a git repository|invalid server response|protocol error|bad line length|expected flush/.test(said)
  ) {
    return new CloneError(`${repo?.cloneUrl ?? 'the host'} did not answer as a git repository does`);
  }
  return undefined;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
