/**
 * The git backend without git: isomorphic-git, in the service's own event
 * loop, where the machine has no git binary (Lambda). It holds each
 * packfile in memory while it indexes it, so a clone needs about the
 * repository's packed size in memory on top of the process: the transfer's
 * byte cap bounds that too. It cannot ask the host for commits only, so a
 * question of history gets each commit's files as well.
 */
import * as git from 'isomorphic-git';
import fs from 'node:fs';
import { dirname } from 'node:path';
import type { FetchRequest, GitBackend, TransferOptions } from './backend.js';
import { guardedHttp, type GuardedHttp } from './http.js';
import { writeTree } from '../checkout/trees.js';

export class IsomorphicGit implements GitBackend {
  readonly commandLine = undefined;
  private readonly transfer: GuardedHttp;

  constructor(private readonly options: TransferOptions) {
    this.transfer = guardedHttp(options.signal, () => options.maxBytes - this.transfer.received(), options.target);
  }

  /** isomorphic-git's fetch of an unchanged branch costs one request in this process anyway: it is not asked beforehand. */
  unchangedHead(): Promise<string | undefined> {
    return Promise.resolve(undefined);
  }

  async fetch(gitdir: string, request: FetchRequest): Promise<void> {
    const { url, branch, credentials } = this.options;
    const remote = {
      fs,
      http: this.transfer.http,
      gitdir,
      url,
      ref: branch,
      singleBranch: true,
      // Never prompt: the site's token, once, or nothing; a refused token is not offered again.
      onAuth: () => (credentials ? { username: credentials.username, password: credentials.password } : { cancel: true }),
      onAuthFailure: () => ({ cancel: true }),
    };
    if ('deepen' in request.depth) await git.fetch({ ...remote, depth: request.depth.deepen, relative: true, tags: false });
    else if (request.fresh)
      await git.clone({ ...remote, dir: dirname(gitdir), depth: request.depth.depth, noTags: true, noCheckout: true });
    else await git.fetch({ ...remote, depth: request.depth.depth, tags: false });
  }

  head(gitdir: string): Promise<string> {
    return git.resolveRef({ fs, gitdir, ref: `refs/remotes/origin/${this.options.branch}` });
  }

  async findCommit(gitdir: string, prefix: string): Promise<string | 'ambiguous' | undefined> {
    let oid: string;
    try {
      oid = await git.expandOid({ fs, gitdir, oid: prefix });
    } catch (err) {
      if (err instanceof git.Errors.NotFoundError) return undefined;
      if (err instanceof git.Errors.AmbiguousError) return 'ambiguous';
      throw err;
    }
    const { type } = await git.readObject({ fs, gitdir, oid, format: 'content' });
    // A short prefix can match a file or folder of the fetched commits before the commit itself arrives.
    return type === 'commit' ? oid : undefined;
  }

  async readCommit(gitdir: string, oid: string): Promise<{ tree: string; message: string }> {
    const { commit } = await git.readCommit({ fs, gitdir, oid });
    return { tree: commit.tree, message: commit.message };
  }

  /** Walked from the branch's head (iteratively); a parent that is not here is beyond the shallow edge. */
  async parents(gitdir: string, shallow: Set<string>): Promise<Map<string, string[] | null>> {
    const parents = new Map<string, string[] | null>();
    const stack = [await this.head(gitdir)];
    while (stack.length > 0) {
      const oid = stack.pop()!;
      if (parents.has(oid)) continue;
      if (shallow.has(oid)) {
        parents.set(oid, null);
        continue;
      }
      let read: string[];
      try {
        read = (await git.readCommit({ fs, gitdir, oid })).commit.parent;
      } catch (err) {
        if (!(err instanceof git.Errors.NotFoundError)) throw err;
        continue; // beyond the edge
      }
      parents.set(oid, read);
      stack.push(...read);
    }
    return parents;
  }

  async writeTree(gitdir: string, tree: string, into: string): Promise<void> {
    await writeTree({ gitdir, tree, into, signal: this.options.signal });
  }

  received(): number {
    return this.transfer.received();
  }

  tooLarge(): boolean {
    return this.transfer.tooLarge();
  }
}
