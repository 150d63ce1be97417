/**
 * The git backend over git's own command line (the commands are git-cli.ts's),
 * where the machine has one. A kept repository whose branch the host still
 * advertises at the commit last fetched is not fetched at all: one ref
 * listing in this process (isomorphic-git's, through the same guarded
 * client) instead of a git process to learn that nothing is new.
 */
import * as git from 'isomorphic-git';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { curlResolve } from '../../../core/net/outbound.js';
import type { FetchRequest, GitBackend, TransferOptions } from './backend.js';
import { guardedHttp, type GuardedHttp } from './http.js';
import * as cli from './git-cli.js';
import { writeTreeWithGit } from '../checkout/trees.js';

export class CommandLineGit implements GitBackend {
  private readonly transfer: GuardedHttp;
  /** curl's resolve list: git's connections go to the checked addresses only. */
  private readonly resolve: string | undefined;
  /** What git's fetches brought (the ref listing's requests are counted by `transfer`). */
  private fetched = 0;
  private overCap = false;
  /** Commits read, by id: each is read once. */
  private readonly commits = new Map<string, { tree: string; message: string }>();

  constructor(
    readonly commandLine: string,
    private readonly options: TransferOptions,
  ) {
    this.transfer = guardedHttp(options.signal, () => options.maxBytes - this.received(), options.target);
    this.resolve = curlResolve(options.target);
  }

  async unchangedHead(gitdir: string): Promise<string | undefined> {
    const { url, branch, credentials } = this.options;
    const kept = await keptHead(gitdir, branch);
    if (!kept) return undefined;
    const advertised = await git.listServerRefs({
      http: this.transfer.http,
      url,
      prefix: `refs/heads/${branch}`,
      protocolVersion: 2,
      onAuth: () => (credentials ? { username: credentials.username, password: credentials.password } : { cancel: true }),
      onAuthFailure: () => ({ cancel: true }),
    });
    return advertised.some((r) => r.ref === `refs/heads/${branch}` && r.oid === kept) ? kept : undefined;
  }

  async fetch(gitdir: string, request: FetchRequest): Promise<void> {
    const { url, branch, signal, credentials } = this.options;
    if (request.fresh) await cli.initRepository(this.commandLine, gitdir, url, branch, signal);
    try {
      this.fetched += await cli.fetchBranch(this.commandLine, {
        gitdir,
        branch,
        signal,
        credentials,
        resolve: this.resolve,
        depth: request.depth,
        remaining: this.options.maxBytes - this.received(),
        ...(request.commitsOnly ? { filter: 'tree:0' as const } : {}),
      });
    } catch (err) {
      if (err instanceof cli.FetchTooLarge) this.overCap = true;
      throw err;
    }
  }

  async head(gitdir: string): Promise<string> {
    const { oid, ...commit } = await cli.readCommit(
      this.commandLine,
      gitdir,
      `refs/remotes/origin/${this.options.branch}`,
      this.options.signal,
    );
    this.commits.set(oid, commit);
    return oid;
  }

  findCommit(gitdir: string, prefix: string): Promise<string | 'ambiguous' | undefined> {
    return cli.findCommit(this.commandLine, gitdir, prefix, this.options.signal);
  }

  async readCommit(gitdir: string, oid: string): Promise<{ tree: string; message: string }> {
    return this.commits.get(oid) ?? cli.readCommit(this.commandLine, gitdir, oid, this.options.signal);
  }

  /** `rev-list --parents` shows a shallow edge's commits without parents; the shallow file names them. */
  async parents(gitdir: string, shallow: Set<string>): Promise<Map<string, string[] | null>> {
    const { branch, signal } = this.options;
    const out = (
      await cli.git(this.commandLine, ['rev-list', '--parents', `refs/remotes/origin/${branch}`, '--'], { gitdir, signal })
    ).toString('latin1');
    const parents = new Map<string, string[] | null>();
    for (const line of out.split('\n')) {
      if (line === '') continue;
      const [oid, ...rest] = line.split(' ');
      parents.set(oid!, shallow.has(oid!) ? null : rest);
    }
    return parents;
  }

  async writeTree(gitdir: string, tree: string, into: string): Promise<void> {
    await writeTreeWithGit(this.commandLine, { gitdir, workTree: into, index: join(gitdir, 'index'), tree, signal: this.options.signal });
    await rm(join(gitdir, cli.ATTRIBUTES_FILE), { force: true });
  }

  received(): number {
    return this.fetched + this.transfer.received();
  }

  tooLarge(): boolean {
    return this.overCap || this.transfer.tooLarge();
  }
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
