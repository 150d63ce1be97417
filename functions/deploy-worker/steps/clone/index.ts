/**
 * The deploy's first step: a working tree of one commit of a site's
 * repository, fetched over HTTP(S) through a git backend (backend.ts):
 * git's command line where the machine has one (command-line.ts: several
 * times faster than isomorphic-git in the service's event loop), and
 * isomorphic-git where it has none (isomorphic.ts, Lambda), chosen once
 * here (openTransfer), with the same results and the same one-line errors
 * (errors.ts).
 *
 * Hosts refuse to send an arbitrary commit by hash (uploadpack.allowAnySHA1InWant
 * is off almost everywhere), so a deploy of an older commit clones its
 * branch at depth 1 and deepens, doubling, until the commit is there.
 *
 * isomorphic-git holds each packfile in memory while it indexes it, so a
 * clone needs about the repository's packed size in memory on top of the
 * process; `maxBytes` caps what a clone may download (git's packs are
 * measured as they arrive, git-cli.ts; isomorphic-git's responses as they
 * are read, http.ts).
 *
 * The commit's files are written by checkout/trees.ts. With mirrors (the deploy
 * worker keeps one per repository and branch), the objects are fetched into
 * the mirror, only what is new comes over the network, the tree is written
 * into the mirror's snapshot (only what changed since the last deploy of the
 * branch), and the checkout gets the snapshot's files and the repository
 * (`.git`, shallow, HEAD at the commit) as hard links: see checkout/mirrors.ts for
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
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseRepositoryUrl, RepositoryUrlError, type RepositoryUrl } from '../../../core/hosting/repository-url.js';
import { outboundRules } from '../../../core/config.js';
import { resolveOutbound, type OutboundRules, type OutboundTarget, type Resolver } from '../../../core/net/outbound.js';
import { linkTree } from '../checkout/trees.js';
import { withMirror, type SourceMirrors } from '../checkout/mirrors.js';
import type { KnownFiles } from '../checkout/known-files.js';
import type { GitBackend, TransferOptions } from './backend.js';
import { CommandLineGit } from './command-line.js';
import { IsomorphicGit } from './isomorphic.js';
import { untilAborted } from './http.js';
import { ambiguous, CloneError, credentialsRefused, explain, formatBytes, isLocalFault } from './errors.js';
import { ATTRIBUTES_FILE, findGit } from './git-cli.js';

export { CloneError } from './errors.js';

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

/**
 * The git backend for one transfer, chosen once: the binary `git` names,
 * none (`false`: isomorphic-git, as in Lambda), or git's command line when
 * the machine has one (looked up on PATH once per process).
 */
export async function openTransfer(git: string | false | undefined, options: TransferOptions): Promise<GitBackend> {
  const gitBin = git === false ? undefined : (git ?? (await findGit()));
  return gitBin ? new CommandLineGit(gitBin, options) : new IsomorphicGit(options);
}

export async function cloneRepository(request: CloneRequest): Promise<ClonedCommit> {
  const { branch, dir, signal, log } = request;
  const repo = repositoryOf(request.url);
  const wanted = request.commit === undefined ? undefined : commitPrefix(request.commit);
  const cap = request.maxBytes ?? DEFAULT_MAX_CLONE_BYTES;
  const started = Date.now();
  /** Opened once the host passed the outbound policy, before any request. */
  let backend: GitBackend | undefined;
  try {
    signal.throwIfAborted();
    const credentials = request.credentials;
    if (credentials && /[\0-\x1f\x7f]/.test(credentials.username + credentials.password))
      throw new CloneError(credentialsRefused(true, repo));
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    log(`Cloning ${repo.cloneUrl} (branch ${branch}${wanted ? `, commit ${wanted}` : ''})`);
    // A cancel does not wait for a slow name server.
    const target: OutboundTarget = await untilAborted(
      resolveOutbound(repo.cloneUrl, request.outbound ?? outboundRules(process.env), request.resolver),
      signal,
    );
    const git = await openTransfer(request.git, { url: repo.cloneUrl, branch, signal, credentials, maxBytes: cap, target });
    backend = git;

    /** Fetches the branch into `gitdir` (a new repository when `fresh`) until the wanted commit is there; returns that commit. */
    const fetchInto = async (gitdir: string, fresh: boolean): Promise<string> => {
      if (!fresh && wanted === undefined) {
        // A branch deployed again unchanged needs no fetch.
        const kept = await git.unchangedHead(gitdir);
        if (kept) return kept;
      }
      await git.fetch(gitdir, { fresh, depth: { depth: 1 } });
      const head = await git.head(gitdir);
      if (wanted === undefined) return head;
      return deepenUntilFound(
        wanted,
        request,
        gitdir,
        repo,
        async (prefix) => {
          const found = await git.findCommit(gitdir, prefix);
          if (found === 'ambiguous') throw ambiguous(prefix);
          return found;
        },
        (deepen) => git.fetch(gitdir, { depth: { deepen } }),
      );
    };
    const fetchedLine = () => log(`Fetched ${formatBytes(git.received())} in ${seconds(Date.now() - started)}`);

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
            const commit = await git.readCommit(mirror.gitdir, fetched);
            const written = await mirror.checkout(commit.tree, dir, signal, git.commandLine);
            if (written.unchanged) log(`Same files as the last deploy of this branch: ${written.reused} kept from it`);
            else if (written.reused > 0)
              log(`${written.reused} files unchanged since the last deploy of this branch, ${written.written} written`);
            // The build sees the repository too (its shallow history), as a checkout has it; without the attributes that keep git from converting what it writes.
            await linkTree(mirror.gitdir, join(dir, '.git'), signal, { count: false });
            await rm(join(dir, '.git', ATTRIBUTES_FILE), { force: true });
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
      const commit = await git.readCommit(gitdir, oid);
      message = commit.message;
      await git.writeTree(gitdir, commit.tree, dir);
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
    const error = explain(err, {
      repo,
      branch,
      signal,
      withCredentials: !!request.credentials,
      cap,
      tooLarge: backend?.tooLarge() ?? false,
    });
    // Whatever the host or a library put in a message, the token never leaves in it.
    const secret = request.credentials?.password;
    if (secret) error.message = error.message.split(secret).join('[token]');
    throw error;
  }
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

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
