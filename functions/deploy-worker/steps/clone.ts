/**
 * The deploy's first step: a working tree of one commit of a site's
 * repository, fetched with isomorphic-git over HTTP(S) so that Lambda and
 * this machine run the same code (no git binary in Lambda).
 *
 * Hosts refuse to send an arbitrary commit by hash (uploadpack.allowAnySHA1InWant
 * is off almost everywhere), so a deploy of an older commit clones its
 * branch at depth 1 and deepens, doubling, until the commit is there.
 *
 * isomorphic-git holds each packfile in memory while it indexes it, so a
 * clone needs about the repository's packed size in memory on top of the
 * process; `maxBytes` caps what a clone may download.
 *
 * The commit's files are written by checkout.ts, not by isomorphic-git's
 * checkout. With mirrors (the deploy worker keeps one per repository and
 * branch), the objects are fetched into the mirror, only what is new comes
 * over the network, and files unchanged since the last deploy of the branch
 * are copied rather than inflated again; the checkout gets a copy of the
 * files and of the repository (`.git`, shallow, HEAD at the commit).
 *
 * Submodules are not fetched; the deploy log says so when a repository has them.
 *
 * A private repository is cloned with the site's access token as HTTP basic
 * credentials, offered only when the host asks (a 401), never put in the
 * URL, a log line or an error. Its mirror is the site's own (`mirrorScope`):
 * objects fetched with one site's token are never served to another site.
 */
import * as git from 'isomorphic-git';
import nodeHttp from 'isomorphic-git/http/node';
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';
import fs from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseRepositoryUrl, RepositoryUrlError, type RepositoryUrl } from '../../core/hosting/repository-url.js';
import { copyTreeInNode, UnsafeTreeError, withMirror, writeTree, type SourceMirrors } from './checkout.js';
import type { KnownFiles } from './known-files.js';

/** What a clone may download when the caller sets no cap: well inside a 1,769 MB Lambda. */
export const DEFAULT_MAX_CLONE_BYTES = 512 * 1024 * 1024;

export interface CloneRequest {
  /** An http(s) URL: `https://host/owner/name(.git)`. */
  url: string;
  branch: string;
  /** A full hash, or a prefix of at least 7 hex digits; the branch's head when absent. */
  commit?: string;
  /** The deploy's checkout: emptied first, so that a retried step starts clean. */
  dir: string;
  /** Aborting it (a cancelled deploy) stops the transfer at once. */
  signal: AbortSignal;
  /** One line at a time, for the deploy's log. */
  log(line: string): void;
  /** Past this many bytes downloaded the clone fails; DEFAULT_MAX_CLONE_BYTES when absent. */
  maxBytes?: number;
  /** Kept copies of repositories to fetch into and copy from; none: everything is fetched and written anew. */
  mirrors?: SourceMirrors;
  /** HTTP basic credentials for a private repository (the site's access token); none: a host that asks for credentials is refused. */
  credentials?: { username: string; password: string };
  /** Whose mirror this is, beside the URL and branch (the site, when credentials are used). */
  mirrorScope?: string;
}

export interface ClonedCommit {
  /** The full hash checked out. */
  commit: string;
  branch: string;
  /** The commit message's first line. */
  message: string;
  owner: string;
  name: string;
  /** With mirrors: the checkout's files as git wrote them, and what is known of their DAGs. */
  known?: KnownFiles;
}

/** Why a clone failed, in one line the deploy log can end with. */
export class CloneError extends Error {
  override name = 'CloneError';
}

export async function cloneRepository(request: CloneRequest): Promise<ClonedCommit> {
  const { branch, dir, signal, log } = request;
  const repo = repositoryOf(request.url);
  const wanted = request.commit === undefined ? undefined : commitPrefix(request.commit);
  const transfer = guardedHttp(signal, request.maxBytes ?? DEFAULT_MAX_CLONE_BYTES);
  const started = Date.now();
  try {
    signal.throwIfAborted();
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    log(`Cloning ${repo.cloneUrl} (branch ${branch}${wanted ? `, commit ${wanted}` : ''})`);
    const fetchInto = async (gitdir: string, fresh: boolean) => {
      const remote = {
        fs,
        http: transfer.http,
        gitdir,
        url: repo.cloneUrl,
        ref: branch,
        singleBranch: true,
        // Never prompt: the site's token, once, or nothing; a refused token is not offered again.
        onAuth: () => (request.credentials ? { username: request.credentials.username, password: request.credentials.password } : { cancel: true }),
        onAuthFailure: () => ({ cancel: true }),
      };
      if (fresh) await git.clone({ ...remote, dir: dirname(gitdir), depth: 1, noTags: true, noCheckout: true });
      else await git.fetch({ ...remote, depth: 1, tags: false });
      const head = await git.resolveRef({ fs, gitdir, ref: `refs/remotes/origin/${branch}` });
      if (wanted === undefined) return head;
      return deepenUntilFound(wanted, request, gitdir, repo, (depth) => git.fetch({ ...remote, depth, relative: true, tags: false }));
    };

    let oid: string;
    let tree: string;
    let known: KnownFiles | undefined;
    const mirrors = request.mirrors;
    if (mirrors) {
      ({ oid, tree, known } = await withMirror(mirrors, request.mirrorScope ? `${request.mirrorScope}\n${repo.cloneUrl}` : repo.cloneUrl, branch, async (mirror) => {
        const attempt = async (fresh: boolean) => {
          const fetched = await fetchInto(mirror.gitdir, fresh);
          log(`Fetched ${formatBytes(transfer.received())} in ${seconds(Date.now() - started)}`);
          const commitTree = (await git.readCommit({ fs, gitdir: mirror.gitdir, oid: fetched })).commit.tree;
          const written = await mirror.checkout(commitTree, dir, signal);
          if (written.unchanged) log(`Same files as the last deploy of this branch: ${written.reused} copied from it`);
          else if (written.reused > 0) log(`${written.reused} unchanged files copied from the last deploy of this branch, ${written.written} written`);
          // The build sees the repository too (its shallow history), as a checkout has it.
          await copyTreeInNode(mirror.gitdir, join(dir, '.git'), signal);
          return { oid: fetched, tree: commitTree, known: written.known };
        };
        if (!(await mirror.hasObjects())) return attempt(true);
        try {
          return await attempt(false);
        } catch (err) {
          if (!isLocalFault(err, request)) throw err;
          // What was kept is at fault, not the host: start again from nothing.
          log('The kept copy of this repository could not be used; fetching it anew');
          await mirror.reset();
          await rm(dir, { recursive: true, force: true });
          await mkdir(dir, { recursive: true });
          return attempt(true);
        }
      }));
    } else {
      oid = await fetchInto(join(dir, '.git'), true);
      log(`Fetched ${formatBytes(transfer.received())} in ${seconds(Date.now() - started)}`);
      tree = (await git.readCommit({ fs, dir, oid })).commit.tree;
      await writeTree({ gitdir: join(dir, '.git'), tree, into: dir, signal });
    }
    // The checkout is of that commit, detached, whichever way its files came.
    await writeFile(join(dir, '.git', 'HEAD'), `${oid}\n`);
    signal.throwIfAborted();
    const { commit } = await git.readCommit({ fs, dir, oid });
    const message = commit.message.split('\n', 1)[0]!.trim();
    if (await exists(join(dir, '.gitmodules'))) {
      log('Note: this repository has submodules (.gitmodules); Cairn does not fetch them, so their folders are empty');
    }
    log(`Checked out ${oid.slice(0, 7)}: ${message}`);
    return { commit: oid, branch, message, owner: repo.owner, name: repo.name, ...(known ? { known } : {}) };
  } catch (err) {
    const error = explain(err, { request, repo, tooLarge: transfer.tooLarge() });
    // Whatever the host or a library put in a message, the token never leaves in it.
    const secret = request.credentials?.password;
    if (secret) error.message = error.message.split(secret).join('[token]');
    throw error;
  }
}

/** An error of this machine's copy of a repository: not the host's, the transfer's, or the commit's own. */
function isLocalFault(err: unknown, { signal, branch }: CloneRequest): boolean {
  if (signal.aborted || err instanceof CloneError || err instanceof UnsafeTreeError) return false;
  const { Errors } = git;
  if (err instanceof Errors.HttpError || err instanceof Errors.UserCanceledError || err instanceof Errors.SmartHttpError || err instanceof Errors.UnsafeFilepathError) return false;
  if (err instanceof Errors.NotFoundError && [branch, `refs/heads/${branch}`].includes(err.data.what)) return false;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return !(code && (code in UNREACHABLE || code === 'ECONNRESET'));
}

/**
 * The branch's history arrives in doubling slices (1, 2, 4, ... commits)
 * until the commit is among them; when the history is whole (the server
 * sent the root, so .git/shallow is gone) and it is not, it is not on the branch.
 */
async function deepenUntilFound(
  wanted: string,
  { branch, log }: CloneRequest,
  gitdir: string,
  repo: RepositoryUrl,
  deepen: (depth: number) => Promise<unknown>,
): Promise<string> {
  let depth = 1;
  for (;;) {
    const oid = await findCommit(gitdir, wanted);
    if (oid) {
      if (depth > 1) log(`Found ${wanted} within the last ${depth} commits of ${branch}`);
      return oid;
    }
    if (!(await isShallow(gitdir))) {
      throw new CloneError(`commit ${wanted} not found in branch ${branch} of ${repo.cloneUrl} (searched its whole history)`);
    }
    log(`${wanted} is not in the last ${depth} commits of ${branch}; fetching ${depth} more`);
    await deepen(depth);
    depth *= 2;
  }
}

async function findCommit(gitdir: string, wanted: string): Promise<string | undefined> {
  let oid: string;
  try {
    oid = await git.expandOid({ fs, gitdir, oid: wanted });
  } catch (err) {
    if (err instanceof git.Errors.NotFoundError) return undefined;
    if (err instanceof git.Errors.AmbiguousError) {
      throw new CloneError(`commit ${wanted} is ambiguous: several objects start with it; give more of the hash`);
    }
    throw err;
  }
  const { type } = await git.readObject({ fs, gitdir, oid, format: 'content' });
  // A short prefix can match a file or folder of the fetched commits before the commit itself arrives.
  return type === 'commit' ? oid : undefined;
}

async function isShallow(gitdir: string): Promise<boolean> {
  const shallow = await readFile(join(gitdir, 'shallow'), 'utf8').catch(() => '');
  return shallow.trim() !== '';
}

function repositoryOf(url: string): RepositoryUrl {
  try {
    return parseRepositoryUrl(url);
  } catch (err) {
    if (err instanceof RepositoryUrlError) throw new CloneError(err.message);
    throw err;
  }
}

function commitPrefix(commit: string): string {
  const hash = commit.trim().toLowerCase();
  if (!/^[0-9a-f]{7,40}$/.test(hash)) {
    throw new CloneError(`"${commit.slice(0, 60)}" is not a commit hash (7 to 40 hex digits)`);
  }
  return hash;
}

/**
 * isomorphic-git takes no AbortSignal for clone or fetch, but its HTTP
 * client does: every request carries the deploy's signal, and every response
 * body is read under it, counted against the cap.
 */
function guardedHttp(signal: AbortSignal, maxBytes: number) {
  let received = 0;
  let overCap = false;
  async function* guarded(body: AsyncIterableIterator<Uint8Array>): AsyncIterableIterator<Uint8Array> {
    const chunks = body[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await untilAborted(chunks.next(), signal);
        if (next.done) return;
        received += next.value.byteLength;
        if (received > maxBytes) {
          overCap = true;
          throw new Error('clone exceeds its byte cap');
        }
        yield next.value;
      }
    } finally {
      void chunks.return?.();
    }
  }
  const http: HttpClient = {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      signal.throwIfAborted();
      const res = await nodeHttp.request({ ...req, signal });
      return res.body ? { ...res, body: guarded(res.body) } : res;
    },
  };
  return { http, received: () => received, tooLarge: () => overCap };
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

function explain(err: unknown, at: { request: CloneRequest; repo: RepositoryUrl; tooLarge: boolean }): CloneError {
  const { request, repo } = at;
  // isomorphic-git reports an aborted transfer in its own words (a parse error, a destroyed stream): the signal says what happened.
  if (request.signal.aborted) return new CloneError('clone cancelled');
  if (at.tooLarge) {
    const cap = formatBytes(request.maxBytes ?? DEFAULT_MAX_CLONE_BYTES);
    return new CloneError(`${repo.cloneUrl} is larger than ${cap}, the most Cairn downloads for one clone`);
  }
  if (err instanceof CloneError) return err;
  if (err instanceof UnsafeTreeError) return new CloneError(err.message);
  if (err instanceof git.Errors.UnsafeFilepathError) return new CloneError(`the commit holds a path no checkout may have: "${err.data.filepath}"`);
  const credentials = request.credentials
    ? `authentication failed: ${repo.host} refused the site's repository access token (set a valid one with setRepositoryToken)`
    : "the repository asks for credentials; set the site's repository access token (setRepositoryToken) to clone a private repository";
  if (err instanceof git.Errors.UserCanceledError) return new CloneError(credentials);
  if (err instanceof git.Errors.HttpError) {
    const { statusCode, statusMessage } = err.data;
    if (statusCode === 401 || statusCode === 403) return new CloneError(credentials);
    if (statusCode === 404) return new CloneError(`no repository at ${repo.cloneUrl} (HTTP 404)`);
    return new CloneError(`${repo.host} answered HTTP ${statusCode} ${statusMessage}`.trim());
  }
  if (err instanceof git.Errors.NotFoundError && [request.branch, `refs/heads/${request.branch}`].includes(err.data.what)) {
    return new CloneError(`branch ${request.branch} not found in ${repo.cloneUrl}`);
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

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
