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
 * dies with it.
 *
 * The network (CAIRN_BUILD_NETWORK) is the build's own, loopback only, by
 * default (`none`). With `outside` it is still the build's own, but
 * slirp4netns connects it to other machines, so `npm install` can fetch,
 * and refuses it this machine's loopback, where the service's ports listen,
 * and link-local addresses, where a cloud's metadata service hands out the
 * machine's credentials (outside-network.ts). Its way out is this machine's
 * network, so what the machine reaches on its other addresses (a port bound
 * to 0.0.0.0, the local network) the build reaches too. With
 * `host` the build shares this machine's network, loopback included: for
 * repositories the operator trusts. Without the sandbox there is no
 * network of the build's own, so `outside` is refused there.
 *
 * A checkout's files may be hard links to the kept snapshot of the
 * repository (deploy-worker/steps/checkout.ts), which no build may write
 * into. The sandbox shows the build its checkout through an overlay: what
 * it writes lands in a layer of its own, applied to the checkout when it
 * ends (deploy-worker/steps/build-layer.ts). Where this machine cannot
 * mount one (checked once, beside the first checkout), and in `none` mode,
 * the shared files are copied before the build instead.
 */
import { spawn } from 'node:child_process';
import { constants as osConstants, homedir, tmpdir } from 'node:os';
import { access, mkdir, mkdtemp, realpath, rm, stat } from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { Readable, Writable } from 'node:stream';
import { BuildRefused, type BuildRequest, type BuildResult, type BuildRunner } from '../core/ports/build-runner.js';
import type { Config } from '../core/config.js';
import { applyLayer, asServiceUser, makeLayer, overlayArgv, overlayUnavailable, removeLayer, separateFiles, type BuildLayer, type OverlayTools } from '../deploy-worker/steps/build-layer.js';
import { BLOCK_FD, closeLinkLocal, connectOutside, INFO_FD, OUTSIDE_NAMESPACES, ROUTES_FAILED } from './outside-network.js';

export interface BwrapRunnerOptions {
  /** config.build.sandbox: `none` runs builds unsandboxed (the operator's explicit choice). */
  sandbox: 'bwrap' | 'none';
  /** Paths a build must neither read nor list: the service's data directory. */
  hide: string[];
  /** The bubblewrap binary, looked up on the service's PATH unless it has a slash. */
  bwrapPath?: string;
  /**
   * config.build.network (default `none`): `none`, the build's own loopback
   * only; `host`, this machine's network; `outside`, other machines through
   * slirp4netns but not this machine's loopback (outside-network.ts).
   */
  network?: Config['build']['network'];
  /** slirp4netns, for the `outside` network: looked up on the service's PATH unless it has a slash. */
  slirp4netnsPath?: string;
  /** iproute2's ip, for the `outside` network's routes: looked up on the service's PATH unless it has a slash. */
  ipPath?: string;
  /** Show bubblewrap builds their checkout through an overlay where this machine can (default true); false: copy the checkout's shared files first. */
  overlay?: boolean;
  /**
   * Where checkouts are made (the deploy workspace): whether an overlay can
   * be mounted there is found out as soon as the runner is made, so the
   * first build does not wait for it. Without it, beside the first checkout.
   */
  workspace?: string;
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
const NETWORK_HINT = 'install slirp4netns (Debian: apt-get install slirp4netns) or set CAIRN_BUILD_NETWORK to none (no network) or host';
const IP_HINT = 'install iproute2 (Debian: apt-get install iproute2) or set CAIRN_BUILD_NETWORK to none (no network) or host';
const SLIRP_BROKEN_HINT = "slirp4netns needs /dev/net/tun, which the service's user must be able to open (Debian makes it 0666); or set CAIRN_BUILD_NETWORK to none (no network) or host";

/** What builds run in, found once per runner; `outside` only with that network. */
interface Sandbox {
  bwrap: string;
  outside?: Outside;
}

/** The programs of the `outside` network, by absolute path. */
interface Outside {
  slirp: string;
  unshare: string;
  ip: string;
}

/** argv in the `outside` network's namespaces, link-local addresses closed (outside-network.ts), running `sandboxed`. */
function inOutside({ unshare, ip }: Outside, sandboxed: string[]): string[] {
  return [unshare, ...OUTSIDE_NAMESPACES, '--', ...closeLinkLocal(ip, sandboxed)];
}

export class BwrapRunner implements BuildRunner {
  readonly name: string;
  private probed?: Promise<Sandbox>;
  private overlays?: Promise<{ tools: OverlayTools } | { unavailable: string }>;

  constructor(private readonly options: BwrapRunnerOptions) {
    this.name =
      options.sandbox === 'none'
        ? 'plain child process, no sandbox (CAIRN_BUILD_SANDBOX=none)'
        : options.network === 'outside'
          ? 'bubblewrap sandbox, network through slirp4netns'
          : 'bubblewrap sandbox';
    const { workspace } = options;
    if (options.sandbox === 'bwrap' && workspace) {
      // Settled either way (a refusal, a verdict): nothing here can reject unheard.
      this.early = this.probe()
        .then(async ({ bwrap }) => {
          await mkdir(workspace, { recursive: true });
          await this.overlaySupport(join(workspace, 'checkout'), bwrap);
        })
        .catch(() => undefined);
    }
  }

  /** The check made when the runner was made (with `workspace`). */
  private early?: Promise<void>;

  /** Resolves once the start-up check has ended, so its files are gone before the workspace is removed. */
  settled(): Promise<void> {
    return this.early ?? Promise.resolve();
  }

  async run(request: BuildRequest): Promise<BuildResult> {
    if (this.options.sandbox === 'none' && this.options.network === 'outside') {
      // Without a sandbox the build has this machine's network, loopback and all: refused rather than pretended.
      throw new BuildRefused('CAIRN_BUILD_NETWORK=outside needs the bubblewrap sandbox (CAIRN_BUILD_SANDBOX=bwrap)');
    }
    const sandbox = this.options.sandbox === 'bwrap' ? await this.probe() : undefined;
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
    if (sandbox) {
      const { bwrap, outside } = sandbox;
      const env = { ...baseEnv, HOME: SANDBOX_HOME, ...request.env };
      const overlay = await this.overlaySupport(checkout, bwrap);
      if ('tools' in overlay) {
        const layer = await makeLayer(checkout);
        try {
          const sandboxed = [bwrap, ...(await this.sandboxArgs(checkout, cwd, nodeBin, layer)), '--', '/bin/sh', '-c', request.command];
          // The overlay's unshare makes the network namespace too: the routes are made in it, after the mount.
          const argv = overlayArgv(layer, checkout, outside ? closeLinkLocal(outside.ip, sandboxed) : sandboxed, overlay.tools, outside !== undefined);
          if (argv) {
            const result = await supervise(argv, env, undefined, request, outside?.slirp);
            // The build ended on its own: its namespace, and the overlay with it, are gone; what it wrote joins the checkout.
            if (result.outcome === 'succeeded' || result.outcome === 'failed') await applyLayer(layer, checkout);
            return result;
          }
        } finally {
          await removeLayer(layer);
        }
      }
      if (!(await separated(checkout, request.signal))) return { outcome: 'cancelled' };
      const sandboxed = [bwrap, ...(await this.sandboxArgs(checkout, cwd, nodeBin)), '--', '/bin/sh', '-c', request.command];
      const argv = outside ? inOutside(outside, sandboxed) : sandboxed;
      return supervise(argv, env, undefined, request, outside?.slirp);
    }
    if (!(await separated(checkout, request.signal))) return { outcome: 'cancelled' };
    const home = await mkdtemp(join(tmpdir(), 'cairn-build-home-'));
    try {
      return await supervise(['/bin/sh', '-c', request.command], { ...baseEnv, HOME: home, ...request.env }, cwd, request);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }

  /** Once per runner, beside the first checkout: whether builds can see theirs through an overlay here. */
  private overlaySupport(checkout: string, bwrap: string): Promise<{ tools: OverlayTools } | { unavailable: string }> {
    this.overlays ??= (async () => {
      if (this.options.overlay === false) return { unavailable: 'turned off' };
      const [unshare, mount] = await Promise.all([findExecutable('unshare'), findExecutable('mount')]);
      if (!unshare || !mount) return { unavailable: 'util-linux unshare and mount are needed' };
      const tools = { unshare, mount };
      const why = await overlayUnavailable(dirname(checkout), bwrap, tools);
      return why === undefined ? { tools } : { unavailable: why };
    })();
    return this.overlays;
  }

  /** Why builds here see a copy of their checkout's shared files rather than an overlay (after the first build); undefined when they see an overlay. */
  async overlayUnavailable(): Promise<string | undefined> {
    await this.early;
    const support = await this.overlays;
    return support && 'unavailable' in support ? support.unavailable : undefined;
  }

  /**
   * Once per runner: a bwrap that is missing or cannot make namespaces
   * here, or for the `outside` network a slirp4netns that is missing or
   * cannot connect a sandbox, refuses every build alike.
   */
  private probe(): Promise<Sandbox> {
    this.probed ??= (async () => {
      const bwrap = await findExecutable(this.options.bwrapPath ?? 'bwrap');
      if (!bwrap) throw new BuildRefused(`bubblewrap (${this.options.bwrapPath ?? 'bwrap'}) was not found: ${REFUSAL_HINT}`);
      const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-all', '--die-with-parent', '--', '/bin/sh', '-c', ':'];
      const { code, output } = await capture(bwrap, args);
      if (code !== 0) throw new BuildRefused(`bubblewrap (${bwrap}) does not work here (${output.trim() || `exit ${code}`}): ${REFUSAL_HINT}`);
      if (this.options.network !== 'outside') return { bwrap };
      const outside = await this.probeOutside(bwrap);
      return { bwrap, outside };
    })();
    return this.probed;
  }

  /** The whole way once (namespaces, link-local routes, slirp4netns, tap0 up inside): a machine where any of it fails refuses builds rather than failing each. */
  private async probeOutside(bwrap: string): Promise<Outside> {
    const named = this.options.slirp4netnsPath ?? 'slirp4netns';
    const ipNamed = this.options.ipPath ?? 'ip';
    const [slirp, unshare, ip] = await Promise.all([findExecutable(named), findExecutable('unshare'), findExecutable(ipNamed)]);
    if (!slirp) throw new BuildRefused(`slirp4netns (${named}) was not found, and CAIRN_BUILD_NETWORK=outside needs it: ${NETWORK_HINT}`);
    if (!unshare) throw new BuildRefused(`util-linux unshare was not found, and CAIRN_BUILD_NETWORK=outside needs it: ${NETWORK_HINT}`);
    if (!ip) throw new BuildRefused(`iproute2's ip (${ipNamed}) was not found, and CAIRN_BUILD_NETWORK=outside needs it to close link-local addresses (a cloud's metadata service) to builds: ${IP_HINT}`);
    const outside = { slirp, unshare, ip };
    const argv = inOutside(outside, [bwrap, '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-all', ...this.networkArgs(), ...asServiceUser(), '--die-with-parent', '--', '/bin/sh', '-c', 'grep -q tap0 /proc/net/dev']);
    let output = '';
    const checked = await supervise(argv, { PATH: '/usr/bin:/bin' }, undefined, {
      deployId: 'slirp4netns check',
      checkout: '/',
      directory: '',
      command: '',
      env: {},
      timeoutMs: 20_000,
      signal: new AbortController().signal,
      onOutput: (text) => (output += text),
    }, slirp);
    if (checked.outcome !== 'succeeded' && output.includes(ROUTES_FAILED)) {
      throw new BuildRefused(`the outside network's routes could not be made (${output.trim().replaceAll('\n', '; ')}): ${IP_HINT}`);
    }
    if (checked.outcome !== 'succeeded') {
      const why = output.trim() || (checked.outcome === 'timed-out' ? 'no network after 20 s' : 'no tap0 in the sandbox');
      throw new BuildRefused(`slirp4netns (${slirp}) does not work here (${why}): ${SLIRP_BROKEN_HINT}`);
    }
    return outside;
  }

  /** bubblewrap's network options: its own loopback-only namespace, the host's, or (outside) the one unshare made, held until slirp4netns is up. */
  private networkArgs(): string[] {
    const network = this.options.network ?? 'none';
    if (network === 'none') return [];
    if (network === 'host') return ['--share-net'];
    return ['--share-net', '--info-fd', String(INFO_FD), '--block-fd', String(BLOCK_FD)];
  }

  private async sandboxArgs(checkout: string, cwd: string, nodeBin: string, layer?: BuildLayer): Promise<string[]> {
    const hidden = new Set<string>(['/tmp']);
    // The build's own layer is reached through the checkout only.
    if (layer) hidden.add(layer.dir);
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
      // Inside the overlay's (or the outside network's) user namespace this process is root: the build is this user again, as it is without one.
      ...(layer || this.options.network === 'outside' ? asServiceUser() : []),
      ...this.networkArgs(),
      '--die-with-parent',
      '--new-session',
      '--cap-drop', 'ALL',
    ];
  }
}

/** The checkout's shared files copied for a build that writes it directly; false when cancelled meanwhile. */
async function separated(checkout: string, signal: AbortSignal): Promise<boolean> {
  try {
    await separateFiles(checkout, signal);
    return true;
  } catch (err) {
    if (signal.aborted) return false;
    throw err;
  }
}

/**
 * Runs argv with stdout and stderr on one pipe (a build log reads in the
 * order things were written), in its own process group, and ends it all on
 * time-out, cancel or the command's exit. With `slirp` (the outside
 * network) argv is bubblewrap waiting for it, on INFO_FD and BLOCK_FD; the
 * build ends with slirp4netns gone too.
 */
function supervise(argv: string[], env: Record<string, string>, cwd: string | undefined, request: BuildRequest, slirp?: string): Promise<BuildResult> {
  return new Promise<BuildResult>((settle, fail) => {
    const child = spawn('/bin/sh', ['-c', 'exec "$@" 2>&1', 'cairn-build', ...argv], {
      cwd,
      env,
      stdio: slirp ? ['ignore', 'pipe', 'ignore', 'pipe', 'pipe'] : ['ignore', 'pipe', 'ignore'],
      detached: true,
    });
    const link = slirp && child.pid ? connectOutside(slirp, child.pid, child.stdio[INFO_FD] as Readable, child.stdio[BLOCK_FD] as Writable) : undefined;
    let stopped: 'timed-out' | 'cancelled' | undefined;
    let networkFailed = false;
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
    child.stdout!.on('data', (chunk: Buffer) => emit(decoder.write(chunk)));
    void link?.failed.then((why) => {
      if (exit || stopped) return;
      // The command is still held on BLOCK_FD: it never ran.
      networkFailed = true;
      killTree();
      emit(`${why}\n`);
    });
    // Once slirp4netns is gone: a build's end leaves nothing of it running.
    const after = (then: () => void) => void (link ? link.close().then(then) : then());

    child.on('error', (err) => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
      after(() => fail(err));
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
      // What the command left running in the background ends with it.
      killTree();
      exit = stopped ? { outcome: stopped, signal: 'SIGKILL' } : networkFailed ? { outcome: 'failed' } : ended(code, signal);
      // bubblewrap's side channels have nothing more to say; only the output may linger (see PIPE_GRACE_MS).
      for (const fd of [INFO_FD, BLOCK_FD]) (child.stdio[fd] as Readable | null | undefined)?.destroy();
      grace = setTimeout(() => child.stdout!.destroy(), PIPE_GRACE_MS);
    });
    child.on('close', () => {
      clearTimeout(grace);
      emit(decoder.end());
      after(() => {
        if (sinkError !== undefined) fail(sinkError);
        else settle(exit ?? { outcome: 'failed' });
      });
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
