/**
 * git's own commands, where the machine has one: the clone step's fetches
 * (through command-line.ts, the backend over them), and the trees written
 * into a checkout or a kept repository's snapshot (checkout/trees.ts). For a
 * 2,000-file, 37 MB site, isomorphic-git's fetch and pack indexing took
 * 2.8-3.9 s inside the service (JavaScript inflate and SHA-1 on the
 * service's own event loop) and its tree writing 1.35 s; git did the same
 * in 1.2 s and 0.3-0.7 s, in processes of its own. isomorphic-git stays for
 * Lambda, which has no git binary (isomorphic.ts; index.ts chooses).
 *
 * Every command runs with an environment of its own: no system or user git
 * configuration (a helper, a proxy or an `insteadOf` of the service user's
 * must not change a deploy), never a prompt, only http(s), no redirect
 * followed, no automatic maintenance, and messages in the C locale so that
 * errors can be recognised. A fetch connects only to the addresses the
 * outbound policy checked (functions/core/net/outbound.ts): curl is handed
 * them (`http.curloptResolve`) and resolves nothing itself; a redirect
 * would lead to an address nobody checked, so none is followed.
 *
 * A private repository's token goes to git in its environment and comes
 * back through a credential helper of one line, so it is offered only when
 * the host asks (a 401), and it is never in an argument (which any process
 * may read), in the repository's configuration or in an error.
 *
 * A fetch has the same byte cap as isomorphic-git's: the pack arrives in
 * `objects/pack/tmp_pack_*`, whose size is watched while git runs (git is
 * stopped past the cap) and the new packs are measured when it ends. Small
 * fetches are kept as packs too (`fetch.unpackLimit=1`), so that nothing
 * arrives unmeasured.
 *
 * What git writes into a tree is the blobs' bytes: `$GIT_DIR/info/attributes`
 * (which outranks a repository's own .gitattributes) turns off end-of-line
 * conversion, `ident` and filters, as isomorphic-git never applied them;
 * the bytes of a blob are then the same in every tree, which is what the
 * files known from an earlier deploy (known-files.ts) rely on.
 */
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCommand } from '../../../core/run-command.js';

/** HTTP basic credentials for a private repository (the site's user name and token). */
export interface GitCredentials {
  username: string;
  password: string;
}

/** A git command that failed: its exit and what it said (never holding the token: it is not in argv or a URL). */
export class GitCommandError extends Error {
  override name = 'GitCommandError';
  constructor(
    readonly command: string,
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(`git ${command} failed (${code === null ? 'killed' : `exit ${code}`}): ${lastLines(stderr)}`);
  }
}

const lastLines = (text: string) => text.trim().split('\n').slice(-3).join(' / ');

/**
 * Settings every command gets on its command line, over the empty
 * configuration its environment leaves (see gitEnv).
 */
const SETTINGS = [
  'protocol.allow=never',
  'protocol.http.allow=always',
  'protocol.https.allow=always',
  // Not even on the first request (git's default, `initial`): curl would connect to wherever it leads, unchecked.
  // It also keeps the dumb protocol's http-alternates, which git follows only where it follows every redirect, unread.
  'http.followRedirects=false',
  // No helper of the system's or the user's; ours is added when the site has a token.
  'credential.helper=',
  'gc.auto=0',
  'maintenance.auto=false',
  'fetch.unpackLimit=1',
  'transfer.unpackLimit=1',
  'fetch.writeCommitGraph=false',
  // A kept repository damaged by a crash is fetched anew (index.ts): waiting for the disk on every file buys nothing.
  'core.fsync=none',
  'core.autocrlf=false',
  'core.symlinks=true',
  // The snapshot's files are hard-linked into each checkout, which moves their change times: git must not take that for a change.
  'core.trustctime=false',
  'advice.detachedHead=false',
].flatMap((s) => ['-c', s]);

/**
 * The credential helper: prints the site's user name and token, from git's
 * environment, when git asks for them (`get`); `store` and `erase` do nothing.
 */
const HELPER = '!f() { test "$1" = get && printf "username=%s\\npassword=%s\\n" "$CAIRN_GIT_USERNAME" "$CAIRN_GIT_PASSWORD"; }; f';

function gitEnv(options: { credentials?: GitCredentials; index?: string }): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: '/nonexistent',
    LC_ALL: 'C',
    LANG: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    ...(options.index ? { GIT_INDEX_FILE: options.index } : {}),
    ...(options.credentials ? { CAIRN_GIT_USERNAME: options.credentials.username, CAIRN_GIT_PASSWORD: options.credentials.password } : {}),
  };
}

let found: Promise<string | undefined> | undefined;

/** The git binary on the service's PATH, or undefined (Lambda has none): looked up once. */
export function findGit(): Promise<string | undefined> {
  found ??= runCommand('git', ['--version'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }).done.then(
    ({ code, stdout }) => (code === 0 && stdout.toString().startsWith('git version') ? 'git' : undefined),
    () => undefined,
  );
  return found;
}

export interface RunOptions {
  gitdir: string;
  signal: AbortSignal;
  workTree?: string;
  index?: string;
  credentials?: GitCredentials;
  /** curl's resolve list for the remote's host (outbound.ts's curlResolve): where its connections go. */
  resolve?: string;
  /** Bytes written to the command's standard input. */
  input?: string;
  /** Called every 100 ms while the command runs; returning true stops it (SIGKILL to its whole process group). */
  watch?: () => Promise<boolean> | boolean;
}

/**
 * Runs `git <args>` on `gitdir`; resolves with its standard output, or
 * rejects with a GitCommandError (or the signal's reason once aborted: the
 * command and everything it started are killed at once).
 */
export function git(gitBin: string, args: string[], options: RunOptions): Promise<Buffer> {
  const { signal } = options;
  if (signal.aborted) return Promise.reject(signal.reason);
  const argv = [
    ...SETTINGS,
    ...(options.credentials ? ['-c', `credential.helper=${HELPER}`] : []),
    ...(options.resolve ? ['-c', `http.curloptResolve=${options.resolve}`] : []),
    '--git-dir',
    options.gitdir,
    ...(options.workTree ? ['--work-tree', options.workTree] : []),
    ...args,
  ];
  // Its own process group: git starts helpers (git-remote-http, index-pack) that must end with it.
  const running = runCommand(gitBin, argv, { env: gitEnv(options), input: options.input ?? '', detached: true });
  let stopped = false;
  const kill = () => {
    stopped = true;
    running.kill('SIGKILL');
  };
  signal.addEventListener('abort', kill, { once: true });
  let watching = false;
  const timer = options.watch
    ? setInterval(() => {
        if (watching || stopped) return;
        watching = true;
        Promise.resolve(options.watch!())
          .then(
            (stop) => {
              if (stop) kill();
            },
            () => undefined,
          )
          .finally(() => (watching = false));
      }, 100)
    : undefined;
  const ended = () => {
    clearInterval(timer);
    signal.removeEventListener('abort', kill);
  };
  return running.done.then(
    ({ code, stdout, stderr }) => {
      ended();
      // Whatever it left behind in its group ends with it.
      kill();
      if (signal.aborted) throw signal.reason;
      if (code === 0) return stdout;
      throw new GitCommandError(args.find((a) => !a.startsWith('-')) ?? 'command', code, stderr.toString('utf8').slice(-8000));
    },
    (err: unknown) => {
      ended();
      throw err;
    },
  );
}

/** A config file value, quoted as git reads it. */
function quoted(value: string): string {
  if (/[\0-\x1f\x7f]/.test(value)) throw new Error(`a git setting cannot hold control characters: ${JSON.stringify(value)}`);
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/**
 * Makes `gitdir` an empty repository whose `origin` is `url` and fetches
 * `branch` into `refs/remotes/origin/<branch>` (as isomorphic-git's clone
 * leaves one, so that a build's `git remote get-url origin` works).
 */
export async function initRepository(gitBin: string, gitdir: string, url: string, branch: string, signal: AbortSignal): Promise<void> {
  await rm(gitdir, { recursive: true, force: true });
  await git(gitBin, ['init', '--quiet', '--bare', '--template='], { gitdir, signal });
  await writeFile(
    join(gitdir, 'config'),
    [
      '[core]',
      '\trepositoryformatversion = 0',
      '\tfilemode = true',
      '\tbare = false',
      '\tlogallrefupdates = false',
      '[remote "origin"]',
      `\turl = ${quoted(url)}`,
      `\tfetch = ${quoted(`+refs/heads/${branch}:refs/remotes/origin/${branch}`)}`,
      '',
    ].join('\n'),
  );
  await mkdir(join(gitdir, 'info'), { recursive: true });
  await writeFile(join(gitdir, 'info', 'attributes'), '* -text -eol -ident -filter -working-tree-encoding\n');
}

/** The attributes file initRepository writes: a checkout's `.git` leaves it out (its builds see the repository's own). */
export const ATTRIBUTES_FILE = join('info', 'attributes');

export interface FetchOptions {
  gitdir: string;
  branch: string;
  signal: AbortSignal;
  credentials?: GitCredentials;
  /** The remote's host pinned to its checked addresses (outbound.ts's curlResolve); none for an address literal. */
  resolve?: string;
  /** `--depth=1`, or `--deepen=<n>` commits more. */
  depth: { depth: number } | { deepen: number };
  /** Past this many bytes (counting earlier fetches of the same clone) the fetch is stopped and fails. */
  remaining: number;
  /** `--filter=<spec>` (`tree:0`: commits only, for a question of history); a host that does not filter sends everything. */
  filter?: 'tree:0';
}

/** Thrown when a fetch passed its byte cap (the new packs are removed first). */
export class FetchTooLarge extends Error {
  override name = 'FetchTooLarge';
}

/** Fetches the branch from origin; returns the bytes that arrived (the new packs' sizes). */
export async function fetchBranch(gitBin: string, options: FetchOptions): Promise<number> {
  const { gitdir, branch, signal } = options;
  const packs = join(gitdir, 'objects', 'pack');
  const before = new Set(await readdir(packs).catch(() => [] as string[]));
  let overCap = false;
  const inFlight = async () => {
    let bytes = 0;
    for (const name of await readdir(packs).catch(() => [] as string[])) {
      if (name.startsWith('tmp_pack_') || (name.endsWith('.pack') && !before.has(name)))
        bytes += (await stat(join(packs, name)).catch(() => undefined))?.size ?? 0;
    }
    return bytes;
  };
  const depth = 'depth' in options.depth ? `--depth=${options.depth.depth}` : `--deepen=${options.depth.deepen}`;
  try {
    await git(
      gitBin,
      [
        'fetch',
        '--quiet',
        '--no-tags',
        '--no-write-fetch-head',
        depth,
        ...(options.filter ? [`--filter=${options.filter}`] : []),
        'origin',
        `+refs/heads/${branch}:refs/remotes/origin/${branch}`,
      ],
      {
        gitdir,
        signal,
        credentials: options.credentials,
        resolve: options.resolve,
        watch: async () => (overCap = (await inFlight()) > options.remaining),
      },
    );
  } catch (err) {
    if (overCap && !signal.aborted) {
      await removeNewPacks(packs, before);
      throw new FetchTooLarge();
    }
    throw err;
  }
  const received = await inFlight();
  if (received > options.remaining) {
    // It arrived whole between two looks: it is still over the cap, and must not be kept for the next deploy either.
    await removeNewPacks(packs, before);
    throw new FetchTooLarge();
  }
  return received;
}

async function removeNewPacks(packs: string, before: Set<string>): Promise<void> {
  for (const name of await readdir(packs).catch(() => [] as string[])) {
    if (!before.has(name)) await rm(join(packs, name), { force: true });
  }
}

/** A commit's id, tree and message, by id or ref. */
export async function readCommit(
  gitBin: string,
  gitdir: string,
  rev: string,
  signal: AbortSignal,
): Promise<{ oid: string; tree: string; message: string }> {
  const out = (await git(gitBin, ['log', '-1', '--no-walk', '--format=%H%x00%T%x00%B', rev, '--'], { gitdir, signal })).toString('utf8');
  const [oid, tree, message] = out.split('\0');
  if (!oid || !tree) throw new Error(`git log printed no commit for ${rev}`);
  return { oid, tree, message: message ?? '' };
}

/**
 * The commit whose id starts with `prefix`, if it is here: undefined when
 * no object starts with it, or only an object that is not a commit (a
 * short prefix can match a file of the fetched commits before the commit
 * itself arrives). Several objects: `ambiguous`.
 */
export async function findCommit(
  gitBin: string,
  gitdir: string,
  prefix: string,
  signal: AbortSignal,
): Promise<string | 'ambiguous' | undefined> {
  if (prefix.length === 40) {
    const type = await git(gitBin, ['cat-file', '-t', prefix], { gitdir, signal }).then(
      (b) => b.toString().trim(),
      () => undefined,
    );
    return type === 'commit' ? prefix : undefined;
  }
  const matches = (await git(gitBin, ['rev-parse', `--disambiguate=${prefix}`], { gitdir, signal }).catch(() => Buffer.alloc(0)))
    .toString()
    .split('\n')
    .filter(Boolean);
  if (matches.length > 1) return 'ambiguous';
  if (matches.length === 0) return undefined;
  const type = (await git(gitBin, ['cat-file', '-t', matches[0]!], { gitdir, signal })).toString().trim();
  return type === 'commit' ? matches[0] : undefined;
}

/** Every entry of a tree, recursively, folders included: [mode, type, object id, path]. */
export async function listTree(
  gitBin: string,
  gitdir: string,
  tree: string,
  signal: AbortSignal,
): Promise<Array<[mode: string, type: string, oid: string, path: string]>> {
  const out = await git(gitBin, ['ls-tree', '-r', '-t', '-z', '--full-tree', tree], { gitdir, signal });
  const entries: Array<[string, string, string, string]> = [];
  let at = 0;
  while (at < out.length) {
    const end = out.indexOf(0, at);
    const line = out.subarray(at, end < 0 ? out.length : end);
    at = end < 0 ? out.length : end + 1;
    const tab = line.indexOf(9);
    const [mode, type, oid] = line.subarray(0, tab).toString('latin1').split(' ');
    entries.push([mode!, type!, oid!, line.subarray(tab + 1).toString('utf8')]);
  }
  return entries;
}

/**
 * Writes the tree into `workTree` with git's index at `index`: all of it
 * when `from` is absent (workTree empty or missing), else only what differs
 * from the tree `from`, which the index and the work tree hold (git removes
 * a changed file and creates it anew, never writing into the old one, so a
 * hard link to the old file keeps the old bytes).
 */
export async function checkoutTree(
  gitBin: string,
  options: { gitdir: string; workTree: string; index: string; tree: string; from?: string; signal: AbortSignal },
): Promise<void> {
  const { gitdir, workTree, index, tree, from, signal } = options;
  await mkdir(workTree, { recursive: true });
  const args = from ? ['read-tree', '-m', '-u', from, tree] : ['read-tree', '--reset', '-u', tree];
  await git(gitBin, args, { gitdir, workTree, index, signal });
}
