/**
 * A real git server for tests, offline: Debian's git-http-backend (the CGI
 * program that serves git's smart HTTP protocol) behind node:http, over
 * bare repositories in a temporary directory, with commits the tests make
 * (written straight into the bare repository, as git would write them;
 * git's command line once a script has needed a working copy: see
 * git-server-process.mjs). A repository whose name starts with
 * `private-` answers 401 to everyone, as a host does for a repository that
 * needs credentials; one given credentials with requireCredentials()
 * answers 401 to every request without exactly those (HTTP basic).
 *
 * The server, its CGI requests and the fixtures' git commands run in a
 * process of their own (git-server-process.mjs, whose header says why:
 * every process forked from a 1.5 GB Jest worker costs it two to three
 * times what it costs a 50 MB one); this module is the suites' handle on
 * it, over the IPC channel. So what the server counts is read with a call
 * (`await git.requests()`), answered after every request it has counted.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PROCESS = fileURLToPath(new URL('./git-server-process.mjs', import.meta.url));

export interface GitServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The clone URL of a repository: `<url>/<owner>/<name>.git`. */
  repoUrl(repo: string): string;
  /**
   * Commits `files` (path -> content; null deletes) to `branch` of `repo`
   * (created on first use, as `<owner>/<name>`), with `message`; returns the
   * commit's full hash.
   */
  commit(repo: string, files: Record<string, string | Buffer | null>, message: string, branch?: string): Promise<string>;
  /**
   * Packs `repo`'s objects into one pack (`git repack -a -d`), as a git
   * host keeps what it serves: commit() writes loose objects, which a clone
   * of a large tree pays to compress again.
   */
  pack(repo: string): Promise<void>;
  /**
   * Runs a shell script in the working copy of `repo` (created on first
   * use; `origin` is its bare repository) and returns its output: for what
   * commit() cannot make (modes, symlinks, trees git itself would refuse to
   * check out).
   */
  shell(repo: string, script: string): Promise<string>;
  /** From now on `repo` answers only requests with these HTTP basic credentials (401 to others). */
  requireCredentials(repo: string, username: string, password: string): Promise<void>;
  /** Every Authorization header the server was sent, with the path it came with. */
  authorizations(): Promise<Array<{ path: string; authorization: string }>>;
  /** How many requests the server has answered. */
  requests(): Promise<number>;
  close(): Promise<void>;
}

/** A failed fixture command, as the suite sees it: git's message, and its stderr. */
export class GitCommandError extends Error {
  constructor(
    message: string,
    readonly stderr?: string,
  ) {
    super(message);
  }
}

type Answer = { ready: string } | { id: number; value: unknown } | { id: number; error: { message: string; stderr?: string } };

export async function startGitServer(): Promise<GitServer> {
  // No Jest or TypeScript flags: a plain Node process, and only the IPC
  // channel between (its output goes to the suite's stderr).
  const child: ChildProcess = fork(PROCESS, [], {
    execArgv: [],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  let next = 0;
  let gone: Error | undefined;
  // The channel holds the suite's process open only while a call waits for
  // its answer: a suite that never closes the server does not keep Jest
  // alive, and the process ends when the channel does.
  const idle = () => {
    if (pending.size === 0) child.channel?.unref();
  };
  const url = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`the git server process exited (${signal ?? code}) before it listened`)));
    child.once('message', (answer: Answer) => resolve((answer as { ready: string }).ready));
  });
  child.removeAllListeners();
  child.unref();
  idle();
  child.on('message', (answer: Answer) => {
    if (!('id' in answer)) return;
    const call = pending.get(answer.id);
    pending.delete(answer.id);
    if ('error' in answer) call?.reject(new GitCommandError(answer.error.message, answer.error.stderr));
    else call?.resolve(answer.value);
    idle();
  });
  const fail = (err: Error) => {
    gone ??= err;
    for (const call of pending.values()) call.reject(gone);
    pending.clear();
  };
  child.on('error', fail);
  child.on('exit', (code, signal) => fail(new Error(`the git server process exited (${signal ?? code})`)));

  const call = <T>(op: string, ...args: unknown[]): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (gone) return reject(gone);
      const id = next++;
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      child.channel?.ref();
      child.send({ id, op, args }, (err) => {
        if (!err) return;
        pending.delete(id);
        reject(err);
        idle();
      });
    });

  return {
    url,
    repoUrl: (repo) => `${url}/${repo}.git`,
    commit: (repo, files, message, branch) => call('commit', repo, files, message, branch),
    pack: (repo) => call('pack', repo),
    shell: (repo, script) => call('shell', repo, script),
    requireCredentials: (repo, username, password) => call('requireCredentials', repo, username, password),
    authorizations: () => call('authorizations'),
    requests: () => call('requests'),
    async close() {
      if (gone) return;
      // Held open until the process is gone, so a script's last await (a benchmark's) sees it end.
      child.ref();
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      await call('close');
      child.disconnect();
      await exited;
    },
  };
}
