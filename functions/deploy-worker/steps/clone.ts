/**
 * The deploy's first step: a working tree of one commit of a site's
 * repository, fetched over HTTP(S) with git's command line where the
 * machine has one (git-cli.ts: several times faster than isomorphic-git in
 * the service's event loop), and with isomorphic-git where it has none
 * (Lambda), with the same results and the same one-line errors.
 *
 * Hosts refuse to send an arbitrary commit by hash (uploadpack.allowAnySHA1InWant
 * is off almost everywhere), so a deploy of an older commit clones its
 * branch at depth 1 and deepens, doubling, until the commit is there.
 *
 * isomorphic-git holds each packfile in memory while it indexes it, so a
 * clone needs about the repository's packed size in memory on top of the
 * process; `maxBytes` caps what a clone may download (git's packs are
 * measured as they arrive, git-cli.ts).
 *
 * The commit's files are written by checkout.ts. With mirrors (the deploy
 * worker keeps one per repository and branch), the objects are fetched into
 * the mirror, only what is new comes over the network, the tree is written
 * into the mirror's snapshot (only what changed since the last deploy of the
 * branch), and the checkout gets the snapshot's files and the repository
 * (`.git`, shallow, HEAD at the commit) as hard links: see checkout.ts for
 * why a build cannot write through them.
 *
 * Submodules are not fetched; the deploy log says so when a repository has them.
 *
 * The repository's host passes the outbound address policy
 * (functions/core/net/outbound.ts) before anything is fetched: resolved
 * once, refused where it leads to a private address and those are refused,
 * and every request of the clone, git's or isomorphic-git's, connects only
 * to the addresses checked. No redirect is followed (it would lead to an
 * address nobody checked).
 *
 * A private repository is cloned with the site's access token as HTTP basic
 * credentials, offered only when the host asks (a 401), never put in the
 * URL, an argument, a log line or an error. Its mirror is the site's own (`mirrorScope`):
 * objects fetched with one site's token are never served to another site.
 */
import * as git from 'isomorphic-git';
import nodeHttp from 'isomorphic-git/http/node';
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';
import fs from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseRepositoryUrl, RepositoryUrlError, type RepositoryUrl } from '../../core/hosting/repository-url.js';
import { outboundRules } from '../../core/config.js';
import {
  curlResolve,
  OutboundRefused,
  pinnedLookup,
  resolveOutbound,
  type OutboundRules,
  type OutboundTarget,
  type Resolver,
} from '../../core/net/outbound.js';
import { linkTree, UnsafeTreeError, withMirror, writeTree, writeTreeWithGit, type SourceMirrors } from './checkout.js';
import type { KnownFiles } from './known-files.js';
import * as cli from './git-cli.js';

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
  /** git's command line to fetch and write trees with; looked up on PATH when absent; `false`: isomorphic-git only (as in Lambda). */
  git?: string | false;
  /**
   * Whether the host may be a private address (the service's config.outbound).
   * Absent: CAIRN_OUTBOUND_PRIVATE of the process's environment, by the
   * config's own reading (what every entry point's config is read from).
   */
  outbound?: OutboundRules;
  /** How the host's name is resolved (the system's resolver when absent). */
  resolver?: Resolver;
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
  const cap = request.maxBytes ?? DEFAULT_MAX_CLONE_BYTES;
  /** Where every request of this clone connects: set once the host passed the outbound policy, before any request. */
  let target: OutboundTarget | undefined;
  const transfer = guardedHttp(signal, cap, () => target);
  const started = Date.now();
  const gitBin = request.git === false ? undefined : (request.git ?? (await cli.findGit()));
  /** What git's fetches of this clone brought (isomorphic-git's requests are counted by `transfer`). */
  const byGit = { received: 0, tooLarge: false };
  const received = () => byGit.received + transfer.received();
  /** Commits read with git's command line, by id: each is read once. */
  const commits = new Map<string, { tree: string; message: string }>();
  try {
    signal.throwIfAborted();
    const credentials = request.credentials;
    if (credentials && /[\0-\x1f\x7f]/.test(credentials.username + credentials.password))
      throw new CloneError(credentialsRefused(request, repo));
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    log(`Cloning ${repo.cloneUrl} (branch ${branch}${wanted ? `, commit ${wanted}` : ''})`);
    // A cancel does not wait for a slow name server.
    target = await untilAborted(resolveOutbound(repo.cloneUrl, request.outbound ?? outboundRules(process.env), request.resolver), signal);
    const resolve = curlResolve(target);

    /** Fetches the branch into `gitdir` (a new repository when `fresh`) until the wanted commit is there; returns that commit. */
    const fetchInto = async (gitdir: string, fresh: boolean): Promise<string> => {
      const onAuth = () => (credentials ? { username: credentials.username, password: credentials.password } : { cancel: true });
      if (gitBin) {
        if (!fresh && wanted === undefined) {
          // The branch as kept against the branch as the host has it (one request or two, in this process): a branch
          // deployed again unchanged needs no fetch, and no git process to learn so.
          const kept = await keptHead(gitdir, branch);
          const advertised =
            kept &&
            (await git.listServerRefs({
              http: transfer.http,
              url: repo.cloneUrl,
              prefix: `refs/heads/${branch}`,
              protocolVersion: 2,
              onAuth,
              onAuthFailure: () => ({ cancel: true }),
            }));
          if (kept && advertised && advertised.some((r) => r.ref === `refs/heads/${branch}` && r.oid === kept)) return kept;
        }
        const fetch = async (depth: cli.FetchOptions['depth']) => {
          try {
            byGit.received += await cli.fetchBranch(gitBin, {
              gitdir,
              branch,
              signal,
              credentials,
              resolve,
              depth,
              remaining: cap - received(),
            });
          } catch (err) {
            if (err instanceof cli.FetchTooLarge) byGit.tooLarge = true;
            throw err;
          }
        };
        if (fresh) await cli.initRepository(gitBin, gitdir, repo.cloneUrl, branch, signal);
        await fetch({ depth: 1 });
        const { oid: head, ...commit } = await cli.readCommit(gitBin, gitdir, `refs/remotes/origin/${branch}`, signal);
        commits.set(head, commit);
        if (wanted === undefined) return head;
        const find = async (prefix: string) => {
          const found = await cli.findCommit(gitBin, gitdir, prefix, signal);
          if (found === 'ambiguous') throw ambiguous(prefix);
          return found;
        };
        return deepenUntilFound(wanted, request, gitdir, repo, find, (deepen) => fetch({ deepen }));
      }
      const remote = {
        fs,
        http: transfer.http,
        gitdir,
        url: repo.cloneUrl,
        ref: branch,
        singleBranch: true,
        // Never prompt: the site's token, once, or nothing; a refused token is not offered again.
        onAuth,
        onAuthFailure: () => ({ cancel: true }),
      };
      if (fresh) await git.clone({ ...remote, dir: dirname(gitdir), depth: 1, noTags: true, noCheckout: true });
      else await git.fetch({ ...remote, depth: 1, tags: false });
      const head = await git.resolveRef({ fs, gitdir, ref: `refs/remotes/origin/${branch}` });
      if (wanted === undefined) return head;
      return deepenUntilFound(
        wanted,
        request,
        gitdir,
        repo,
        (prefix) => findCommit(gitdir, prefix),
        (depth) => git.fetch({ ...remote, depth, relative: true, tags: false }),
      );
    };
    const commitOf = async (gitdir: string, oid: string): Promise<{ tree: string; message: string }> => {
      if (gitBin) return commits.get(oid) ?? cli.readCommit(gitBin, gitdir, oid, signal);
      const { commit } = await git.readCommit({ fs, gitdir, oid });
      return { tree: commit.tree, message: commit.message };
    };
    const fetchedLine = () => log(`Fetched ${formatBytes(received())} in ${seconds(Date.now() - started)}`);

    let oid: string;
    let message: string;
    let known: KnownFiles | undefined;
    const mirrors = request.mirrors;
    if (mirrors) {
      ({ oid, message, known } = await withMirror(
        mirrors,
        request.mirrorScope ? `${request.mirrorScope}\n${repo.cloneUrl}` : repo.cloneUrl,
        branch,
        async (mirror) => {
          const attempt = async (fresh: boolean) => {
            const fetched = await fetchInto(mirror.gitdir, fresh);
            fetchedLine();
            const commit = await commitOf(mirror.gitdir, fetched);
            const written = await mirror.checkout(commit.tree, dir, signal, gitBin);
            if (written.unchanged) log(`Same files as the last deploy of this branch: ${written.reused} kept from it`);
            else if (written.reused > 0)
              log(`${written.reused} files unchanged since the last deploy of this branch, ${written.written} written`);
            // The build sees the repository too (its shallow history), as a checkout has it; without the attributes that keep git from converting what it writes.
            await linkTree(mirror.gitdir, join(dir, '.git'), signal, { count: false });
            await rm(join(dir, '.git', cli.ATTRIBUTES_FILE), { force: true });
            return { oid: fetched, message: commit.message, known: written.known };
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
        },
      ));
    } else {
      const gitdir = join(dir, '.git');
      oid = await fetchInto(gitdir, true);
      fetchedLine();
      const commit = await commitOf(gitdir, oid);
      message = commit.message;
      if (gitBin) {
        await writeTreeWithGit(gitBin, { gitdir, workTree: dir, index: join(gitdir, 'index'), tree: commit.tree, signal });
        await rm(join(gitdir, cli.ATTRIBUTES_FILE), { force: true });
      } else {
        await writeTree({ gitdir, tree: commit.tree, into: dir, signal });
      }
    }
    // The checkout is of that commit, detached, whichever way its files came (HEAD may be a link to the mirror's: replaced, not written into).
    await rm(join(dir, '.git', 'HEAD'), { force: true });
    await writeFile(join(dir, '.git', 'HEAD'), `${oid}\n`);
    signal.throwIfAborted();
    message = message.split('\n', 1)[0]!.trim();
    if (await exists(join(dir, '.gitmodules'))) {
      log('Note: this repository has submodules (.gitmodules); Cairn does not fetch them, so their folders are empty');
    }
    log(`Checked out ${oid.slice(0, 7)}: ${message}`);
    return { commit: oid, branch, message, owner: repo.owner, name: repo.name, ...(known ? { known } : {}) };
  } catch (err) {
    const error = explain(err, { request, repo, tooLarge: transfer.tooLarge() || byGit.tooLarge });
    // Whatever the host or a library put in a message, the token never leaves in it.
    const secret = request.credentials?.password;
    if (secret) error.message = error.message.split(secret).join('[token]');
    throw error;
  }
}

/** An error of this machine's copy of a repository: not the host's, the transfer's, or the commit's own. */
function isLocalFault(err: unknown, { signal, branch }: CloneRequest): boolean {
  if (signal.aborted || err instanceof CloneError || err instanceof UnsafeTreeError || err instanceof OutboundRefused) return false;
  if (err instanceof cli.FetchTooLarge) return false;
  if (err instanceof cli.GitCommandError) return gitFailure(err) === undefined;
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
  find: (prefix: string) => Promise<string | undefined>,
  deepen: (depth: number) => Promise<unknown>,
): Promise<string> {
  let depth = 1;
  for (;;) {
    const oid = await find(wanted);
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
    if (err instanceof git.Errors.AmbiguousError) throw ambiguous(wanted);
    throw err;
  }
  const { type } = await git.readObject({ fs, gitdir, oid, format: 'content' });
  // A short prefix can match a file or folder of the fetched commits before the commit itself arrives.
  return type === 'commit' ? oid : undefined;
}

/**
 * The commit the kept repository last fetched of `branch`, from its ref's
 * file (git's fetch writes it there; no git process to ask), or undefined.
 */
async function keptHead(gitdir: string, branch: string): Promise<string | undefined> {
  // A branch name is a path here: nothing that could leave the refs folder.
  if (branch.split('/').some((part) => part === '' || part === '.' || part === '..') || /[\0\\]/.test(branch)) return undefined;
  const oid = (await readFile(join(gitdir, 'refs', 'remotes', 'origin', ...branch.split('/')), 'utf8').catch(() => '')).trim();
  return /^[0-9a-f]{40}$/.test(oid) ? oid : undefined;
}

const ambiguous = (wanted: string) => new CloneError(`commit ${wanted} is ambiguous: several objects start with it; give more of the hash`);

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
 * body is read under it, counted against the cap. Every request connects
 * to the checked addresses of `pinned()` only, and follows no redirect.
 */
function guardedHttp(signal: AbortSignal, maxBytes: number, pinned: () => OutboundTarget | undefined) {
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
      const target = pinned();
      if (!target) throw new Error('the repository host was not checked against the outbound address policy');
      // No shared agent: a kept-alive socket was connected where another clone's check said, not this one's.
      const res = await nodeHttp.request({
        ...req,
        signal,
        agent: false,
        fetchOptions: { followRedirects: false, lookup: pinnedLookup(target) },
      });
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
  if (err instanceof OutboundRefused) return new CloneError(`${repo.host} is not cloned: ${err.message}`);
  if (err instanceof UnsafeTreeError) return new CloneError(err.message);
  if (err instanceof git.Errors.UnsafeFilepathError)
    return new CloneError(`the commit holds a path no checkout may have: "${err.data.filepath}"`);
  if (err instanceof cli.GitCommandError)
    return gitFailure(err, at) ?? new CloneError(`clone failed: ${lastSaid(err.stderr) || err.message}`);
  const credentials = credentialsRefused(request, repo);
  if (err instanceof git.Errors.UserCanceledError) return new CloneError(credentials);
  if (err instanceof git.Errors.HttpError) {
    const { statusCode, statusMessage } = err.data;
    if (statusCode === 401 || statusCode === 403) return new CloneError(credentials);
    if (statusCode === 404) return new CloneError(`no repository at ${repo.cloneUrl} (HTTP 404)`);
    if (statusCode >= 300 && statusCode < 400) return new CloneError(redirected(repo, statusCode));
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

/** A redirect is not followed (where it leads was never checked): the site is to name the repository where it is. */
function redirected(repo: RepositoryUrl, statusCode: number | string): string {
  return `${repo.host} answered HTTP ${statusCode}, a redirect: Cairn does not follow redirects; set the repository URL the host redirects to`;
}

function credentialsRefused(request: CloneRequest, repo: RepositoryUrl): string {
  return request.credentials
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
function gitFailure(err: cli.GitCommandError, at?: { request: CloneRequest; repo: RepositoryUrl }): CloneError | undefined {
  const said = err.stderr;
  const request = at?.request;
  const repo = at?.repo;
  const host = repo?.host ?? 'the host';
  const credentials = () => new CloneError(request && repo ? credentialsRefused(request, repo) : 'credentials refused');
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
    return new CloneError(`branch ${request?.branch ?? ''} not found in ${repo?.cloneUrl ?? 'the repository'}`);
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
