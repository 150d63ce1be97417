/**
 * The BuildRunner on one machine: a site's build command in a bubblewrap
 * sandbox, or (CAIRN_BUILD_SANDBOX=none) in a plain child process.
 *
 * Inside the sandbox the build sees this machine's system read-only, its
 * checkout writable at the same path (so paths in its log are the real
 * ones), a private /tmp with HOME in it, and neither the service's data
 * directory (sealed secrets, the database, other sites' checkouts) nor the
 * service user's home (cloud and registry credentials): each is an empty
 * tmpfs. Its own pid namespace means killing bwrap kills every process of
 * the build, and a process left in the background when the command exits
 * dies with it. The network is the build's own (loopback only) unless the
 * operator shares the host's (CAIRN_BUILD_NETWORK=host) so `npm install`
 * can fetch: that includes the host's loopback, where the service's ports
 * listen.
 */
import { spawn } from 'node:child_process';
import { constants as osConstants, homedir, tmpdir } from 'node:os';
import { access, mkdtemp, realpath, rm, stat } from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { BuildRefused, type BuildRequest, type BuildResult, type BuildRunner } from '../core/ports/build-runner.js';

export interface BwrapRunnerOptions {
  /** config.build.sandbox: `none` runs builds unsandboxed (the operator's explicit choice). */
  sandbox: 'bwrap' | 'none';
  /** Paths a build must neither read nor list: the service's data directory. */
  hide: string[];
  /** The bubblewrap binary, looked up on the service's PATH unless it has a slash. */
  bwrapPath?: string;
  /** Share the host's network (the caller passes config.build.network === 'host'); default true. */
  network?: boolean;
}

/** Where HOME is inside the sandbox: in the private /tmp, gone with the build. */
const SANDBOX_HOME = '/tmp/home';
/**
 * After the command exits, how long its output pipe may stay open. Only a
 * process that left the build's process group (setsid, in `none` mode) can
 * hold it; the build is over, so its output is dropped past this.
 */
const PIPE_GRACE_MS = 2000;

const REFUSAL_HINT = 'install bubblewrap (Debian: apt-get install bubblewrap) or set CAIRN_BUILD_SANDBOX=none to build without a sandbox';

export class BwrapRunner implements BuildRunner {
  readonly name: string;
  private probed?: Promise<string>;

  constructor(private readonly options: BwrapRunnerOptions) {
    this.name =
      options.sandbox === 'none' ? 'plain child process, no sandbox (CAIRN_BUILD_SANDBOX=none)' : 'bubblewrap sandbox';
  }

  async run(request: BuildRequest): Promise<BuildResult> {
    const bwrap = this.options.sandbox === 'bwrap' ? await this.probe() : undefined;
    const checkout = await realpath(request.checkout);
    const cwd = resolve(checkout, request.directory);
    if (!within(checkout, cwd) || !(await isDirectory(cwd))) {
      request.onOutput(`The base directory "${request.directory}" is not a directory in the repository.\n`);
      return { outcome: 'failed' };
    }
    if (request.signal.aborted) return { outcome: 'cancelled' };

    const nodeBin = dirname(process.execPath);
    // Request variables win over these two: a site that sets HOME or PATH asked for it.
    const baseEnv = { PATH: [nodeBin, '/usr/local/bin', '/usr/bin', '/bin'].join(delimiter) };
    if (bwrap) {
      const argv = [bwrap, ...(await this.sandboxArgs(checkout, cwd, nodeBin)), '--', '/bin/sh', '-c', request.command];
      return supervise(argv, { ...baseEnv, HOME: SANDBOX_HOME, ...request.env }, undefined, request);
    }
    const home = await mkdtemp(join(tmpdir(), 'cairn-build-home-'));
    try {
      return await supervise(['/bin/sh', '-c', request.command], { ...baseEnv, HOME: home, ...request.env }, cwd, request);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }

  /** Once per runner: a bwrap that is missing or cannot make namespaces here refuses every build alike. */
  private probe(): Promise<string> {
    this.probed ??= (async () => {
      const bwrap = await findExecutable(this.options.bwrapPath ?? 'bwrap');
      if (!bwrap) throw new BuildRefused(`bubblewrap (${this.options.bwrapPath ?? 'bwrap'}) was not found: ${REFUSAL_HINT}`);
      const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-all', '--die-with-parent', '--', '/bin/sh', '-c', ':'];
      const { code, output } = await capture(bwrap, args);
      if (code !== 0) throw new BuildRefused(`bubblewrap (${bwrap}) does not work here (${output.trim() || `exit ${code}`}): ${REFUSAL_HINT}`);
      return bwrap;
    })();
    return this.probed;
  }

  private async sandboxArgs(checkout: string, cwd: string, nodeBin: string): Promise<string[]> {
    const hidden = new Set<string>(['/tmp']);
    for (const p of [...this.options.hide, homedir()]) {
      const real = await realpath(resolve(p)).catch(() => undefined);
      // Nothing to hide where nothing exists; hiding / would hide the system the build runs on.
      if (real && real !== '/') hidden.add(real);
    }
    const layers: { path: string; args: string[] }[] = [...hidden].map((p) => ({ path: p, args: ['--tmpfs', p] }));
    layers.push({ path: checkout, args: ['--bind', checkout, checkout] });
    // Node may live under a hidden path (a user's ~/.nvm, the service's own node_modules): show it again, read-only.
    const nodePrefix = dirname(await realpath(nodeBin));
    if ([...hidden].some((h) => within(h, nodePrefix))) {
      layers.push({ path: nodePrefix, args: ['--ro-bind', nodePrefix, nodePrefix] });
    }
    // A mount hides what an earlier one put beneath it: parents go first (a checkout inside the data directory stays visible).
    layers.sort((a, b) => depth(a.path) - depth(b.path));
    return [
      '--ro-bind', '/', '/',
      '--dev', '/dev',
      '--proc', '/proc',
      ...layers.flatMap((l) => l.args),
      '--dir', SANDBOX_HOME,
      '--chdir', cwd,
      '--unshare-all',
      ...(this.options.network === false ? [] : ['--share-net']),
      '--die-with-parent',
      '--new-session',
      '--cap-drop', 'ALL',
    ];
  }
}

/**
 * Runs argv with stdout and stderr on one pipe (a build log reads in the
 * order things were written), in its own process group, and ends it all on
 * time-out, cancel or the command's exit.
 */
function supervise(argv: string[], env: Record<string, string>, cwd: string | undefined, request: BuildRequest): Promise<BuildResult> {
  return new Promise<BuildResult>((settle, fail) => {
    const child = spawn('/bin/sh', ['-c', 'exec "$@" 2>&1', 'cairn-build', ...argv], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
      detached: true,
    });
    let stopped: 'timed-out' | 'cancelled' | undefined;
    let exit: BuildResult | undefined;
    let sinkError: unknown;
    const killTree = () => {
      try {
        // In bwrap mode the group is bwrap itself, whose death takes the whole pid namespace with it.
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is already empty.
      }
    };
    const stop = (why: 'timed-out' | 'cancelled') => {
      stopped ??= why;
      killTree();
    };
    const timer = setTimeout(() => stop('timed-out'), request.timeoutMs);
    const onAbort = () => stop('cancelled');
    request.signal.addEventListener('abort', onAbort, { once: true });
    if (request.signal.aborted) onAbort();
    let grace: NodeJS.Timeout | undefined;

    const decoder = new StringDecoder('utf8');
    const emit = (text: string) => {
      if (!text || sinkError !== undefined) return;
      try {
        request.onOutput(text);
      } catch (err) {
        sinkError = err;
        killTree();
      }
    };
    child.stdout.on('data', (chunk: Buffer) => emit(decoder.write(chunk)));

    child.on('error', (err) => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
      fail(err);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
      // What the command left running in the background ends with it.
      killTree();
      exit = stopped ? { outcome: stopped, signal: 'SIGKILL' } : ended(code, signal);
      grace = setTimeout(() => child.stdout.destroy(), PIPE_GRACE_MS);
    });
    child.on('close', () => {
      clearTimeout(grace);
      emit(decoder.end());
      if (sinkError !== undefined) fail(sinkError);
      else settle(exit ?? { outcome: 'failed' });
    });
  });
}

/**
 * Shells report a command killed by a signal as 128 + its number, and
 * bubblewrap passes its command's status on that way, so such a code names
 * the signal (a command may also exit 137 on its own; it is rare).
 */
function ended(code: number | null, signal: NodeJS.Signals | null): BuildResult {
  if (signal) return { outcome: 'failed', signal };
  if (code === 0) return { outcome: 'succeeded', exitCode: 0 };
  const exitCode = code ?? undefined;
  const name =
    exitCode !== undefined && exitCode > 128
      ? Object.entries(osConstants.signals).find(([, n]) => n === exitCode - 128)?.[0]
      : undefined;
  return { outcome: 'failed', exitCode, ...(name ? { signal: name } : {}) };
}

function within(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

function depth(p: string): number {
  return p.split(sep).filter(Boolean).length;
}

async function isDirectory(p: string): Promise<boolean> {
  return stat(p).then((s) => s.isDirectory(), () => false);
}

async function findExecutable(name: string): Promise<string | undefined> {
  const candidates = name.includes('/')
    ? [resolve(name)]
    : (process.env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, name));
  for (const c of candidates) {
    if (await access(c, fsConstants.X_OK).then(() => true, () => false)) return c;
  }
  return undefined;
}

function capture(file: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((settle) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env: {} });
    let output = '';
    const add = (b: Buffer) => {
      output += b.toString();
    };
    child.stdout.on('data', add);
    child.stderr.on('data', add);
    child.on('error', (err) => settle({ code: null, output: err.message }));
    child.on('close', (code) => settle({ code, output }));
  });
}
