/**
 * What the clone step and the publish step's history question (ancestry.ts)
 * ask of git, behind one interface with two implementations: git's command
 * line where the machine has one (command-line.ts: several times faster, in
 * processes of its own) and isomorphic-git where it has none (Lambda),
 * chosen once per transfer (openTransfer, index.ts). Both give the same
 * answers and fail with errors that errors.ts turns into the same one-line
 * messages.
 *
 * A backend is one transfer from one repository's branch: every request it
 * makes connects to the addresses the outbound policy checked (`target`),
 * follows no redirect, runs under the deploy's signal, and counts against
 * one byte cap (`received`, `tooLarge`).
 */
import type { OutboundTarget } from '../../../core/net/outbound.js';
import type { GitCredentials } from './git-cli.js';

export interface TransferOptions {
  /** The repository's http(s) clone URL. */
  url: string;
  branch: string;
  signal: AbortSignal;
  /** Offered only when the host asks (a 401); none: a host that asks is refused. */
  credentials?: GitCredentials;
  /** Past this many bytes fetched (all fetches of the transfer together) a fetch fails. */
  maxBytes: number;
  /** Where the host's name resolved, checked against the outbound policy: every connection goes there. */
  target: OutboundTarget;
}

export interface FetchRequest {
  /** Makes `gitdir` a new repository of the URL first (whatever was there goes). */
  fresh?: boolean;
  /** The branch's last `depth` commits, or `deepen` commits more than the repository has. */
  depth: { depth: number } | { deepen: number };
  /** Commits only, no trees or files (a question of history); a host or backend that cannot filter sends everything. */
  commitsOnly?: boolean;
}

export interface GitBackend {
  /** git's binary when this backend is git's command line: trees are then written with it too (checkout/trees.ts, checkout/mirrors.ts). */
  readonly commandLine: string | undefined;
  /**
   * The branch's head as `gitdir` last fetched it, when the host still
   * advertises that commit (a branch deployed again unchanged: no fetch
   * needed); undefined when unknown or moved.
   */
  unchangedHead(gitdir: string): Promise<string | undefined>;
  /** Fetches the branch into `refs/remotes/origin/<branch>` of `gitdir`. */
  fetch(gitdir: string, request: FetchRequest): Promise<void>;
  /** The commit `refs/remotes/origin/<branch>` points at. */
  head(gitdir: string): Promise<string>;
  /** The commit whose id starts with `prefix`, if it is here (another kind of object is not); `ambiguous` when several objects match. */
  findCommit(gitdir: string, prefix: string): Promise<string | 'ambiguous' | undefined>;
  readCommit(gitdir: string, oid: string): Promise<{ tree: string; message: string }>;
  /** Every fetched commit of the branch with its parents (null: at the shallow edge, parents not fetched). */
  parents(gitdir: string, shallow: Set<string>): Promise<Map<string, string[] | null>>;
  /** Writes the commit tree `tree` into the empty or missing `into`. */
  writeTree(gitdir: string, tree: string, into: string): Promise<void>;
  /** Bytes fetched so far by this transfer. */
  received(): number;
  /** Whether a fetch stopped at the byte cap. */
  tooLarge(): boolean;
}
