/**
 * The BuildRunner on one machine: a site's build command in a bubblewrap
 * sandbox, or (CAIRN_BUILD_SANDBOX=none) in a plain child process.
 *
 * Inside the sandbox the build sees a minimal read-only root made for it
 * (build-root.ts: the system's /usr and a synthetic /etc, nothing of the
 * service's, its data directory, /root, /home or /var), its checkout
 * writable at the same path (so paths in its log are the real ones), and a
 * private /tmp of CAIRN_BUILD_TMP bytes with HOME in it. It runs as an
 * unprivileged uid (1000) in a user namespace of its own, with no
 * capabilities. Its own pid namespace means killing bwrap kills every
 * process of the build, and a process left in the background when the
 * command exits dies with it.
 *
 * With `limits` (config.build.limits) every build, sandboxed or not, runs
 * under limits on processes, memory, CPU time, disk and output, kept by a
 * cgroup where the service may make one and rlimits otherwise
 * (build-limits.ts); the log's first line says which keeps each. The
 * build that reaches one is ended, and its result names it
 * (BuildResult.limit: "memory limit 3 GiB reached").
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
 * repository (deploy-worker/steps/checkout/), which no build may write
 * into. The sandbox shows the build its checkout through an overlay: what
 * it writes lands in a layer of its own, applied to the checkout when it
 * ends (local/build-layer.ts). Where this machine cannot
 * mount one (checked once, beside the first checkout), and in `none` mode,
 * the shared files are copied before the build instead.
 *
 * What a runner finds out about this machine (whether bubblewrap works,
 * whether an overlay mounts) it finds out once, when the first build is
 * coming: `prepare()`, which the pipeline calls as a deploy with a build
 * command starts, so the checks run beside that deploy's clone rather
 * than in its build; without it, at the first build. A service that never
 * builds never runs them: they start processes (bubblewrap, unshare,
 * mount, tar) that cost a service's start more CPU than the rest of it.
 */
import { spawn } from 'node:child_process';
import { constants as osConstants, tmpdir } from 'node:os';
import { access, mkdir, mkdtemp, realpath, rm, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { Readable, Writable } from 'node:stream';
import { BuildRefused, type BuildRequest, type BuildResult, type BuildRunner } from '../core/ports/build-runner.js';
import type { BuildLimits, Config } from '../core/config.js';
import {
  applyLayer,
  asServiceUser,
  makeLayer,
  overlayArgv,
  overlayUnavailable,
  removeLayer,
  separateFiles,
  type OverlayTools,
} from './build-layer.js';
import { BLOCK_FD, closeLinkLocal, connectOutside, INFO_FD, OUTSIDE_NAMESPACES, ROUTES_FAILED } from './outside-network.js';
import { BUILD_GID, BUILD_HOST, BUILD_UID, rootArgs, writeBuildEtc, type BuildEtc } from './build-root.js';
import {
  BuildCgroup,
  describeLimits,
  diskUsage,
  probeLimits,
  reachedLine,
  rlimitOptions,
  sandboxInit,
  watchBuild,
  type LimitSupport,
  type WatchOptions,
} from './build-limits.js';

export interface BwrapRunnerOptions {
  /** config.build.sandbox: `none` runs builds unsandboxed (the operator's explicit choice). */
  sandbox: 'bwrap' | 'none';
  /**
   * Paths a build must neither read nor list: the service's data directory.
   * The sandbox's root holds nothing of this machine's beyond its system
   * (build-root.ts), so these are hidden with everything else; a checkout
   * inside one is shown alone, at its path.
   */
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
   * Where checkouts are made (the deploy workspace): `prepare()` finds out
   * there whether an overlay can be mounted, so the first build does not
   * wait for it. Without it, beside the first checkout.
   */
  workspace?: string;
  /**
   * config.build.limits: each build's processes, memory, CPU time, disk,
   * /tmp and output (build-limits.ts). Without them (tests of other
   * things) a build has no limits but its time limit, and a /tmp of half
   * this machine's memory, tmpfs's default.
   */
  limits?: BuildLimits;
  /** Where cgroups are mounted (default /sys/fs/cgroup); a path with none in it leaves every limit to rlimits. */
  cgroupRoot?: string;
}

/** The limits a build runs under, found once per runner: which cgroups, and prlimit for the rest. */
interface Limits {
  limits: BuildLimits;
  support: LimitSupport;
  /** util-linux prlimit, by absolute path, under /usr (the sandbox sees it there): the rlimits are set by it inside. */
  prlimit?: string;
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
const SLIRP_BROKEN_HINT =
  "slirp4netns needs /dev/net/tun, which the service's user must be able to open (Debian makes it 0666); or set CAIRN_BUILD_NETWORK to none (no network) or host";

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
  private limitSupport?: Promise<Limits>;

  constructor(private readonly options: BwrapRunnerOptions) {
    this.name =
      options.sandbox === 'none'
        ? 'plain child process, no sandbox (CAIRN_BUILD_SANDBOX=none)'
        : options.network === 'outside'
          ? 'bubblewrap sandbox, network through slirp4netns'
          : 'bubblewrap sandbox';
  }

  /** The checks `prepare()` started. */
  private early?: Promise<void>;

  /**
   * A build is coming (a deploy that has one has started): the checks the
   * first build would make (bubblewrap works here; with `workspace`,
   * whether an overlay mounts there) start now, once, in the background.
   * A refusal is not thrown here: the build hears it, as it would have.
   */
  prepare(): void {
    const { workspace } = this.options;
    if (this.options.sandbox !== 'bwrap' || this.early) return;
    // Settled either way (a refusal, a verdict): nothing here can reject unheard.
    this.early = this.probe()
      .then(async ({ bwrap }) => {
        if (!workspace) return;
        await mkdir(workspace, { recursive: true });
        await this.overlaySupport(join(workspace, 'checkout'), bwrap);
      })
      .catch(() => undefined);
  }

  /** Resolves once the checks `prepare()` started have ended, so their files are gone before the workspace is removed. */
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

    const limits = await this.limitsOf();
    if (limits) request.onOutput(`Build limits: ${describeLimits(limits.limits, limits.support, sandbox !== undefined)}\n`);
    // prlimit sets the rlimits inside the sandbox, for the command alone (build-limits.ts).
    const command = limits?.prlimit
      ? [limits.prlimit, ...rlimitOptions(limits.limits, limits.support, sandbox !== undefined), '--', '/bin/sh', '-c', request.command]
      : ['/bin/sh', '-c', request.command];
    const cgroup =
      limits && Object.keys(limits.support.cgroups).length > 0
        ? await BuildCgroup.make(limits.support, limits.limits, cgroupName(request.deployId))
        : undefined;
    try {
      return await this.runIn(request, sandbox, checkout, cwd, command, limits && { limits: limits.limits, cgroup });
    } finally {
      await cgroup?.remove();
    }
  }

  private async runIn(
    request: BuildRequest,
    sandbox: Sandbox | undefined,
    checkout: string,
    cwd: string,
    command: string[],
    guard: Guard | undefined,
  ): Promise<BuildResult> {
    const nodeBin = dirname(process.execPath);
    // Request variables win over these two: a site that sets HOME or PATH asked for it.
    const baseEnv = { PATH: [nodeBin, '/usr/local/bin', '/usr/bin', '/bin'].join(delimiter) };
    if (sandbox) {
      const { bwrap, outside } = sandbox;
      const env = { ...baseEnv, HOME: SANDBOX_HOME, ...request.env };
      const etc = await writeBuildEtc(this.options.network ?? 'none');
      try {
        const overlay = await this.overlaySupport(checkout, bwrap);
        if ('tools' in overlay) {
          const layer = await makeLayer(checkout);
          try {
            const sandboxed = [bwrap, ...(await this.sandboxArgs(checkout, cwd, nodeBin, etc)), '--', ...command];
            // The overlay's unshare makes the network namespace too: the routes are made in it, after the mount.
            const argv = overlayArgv(
              layer,
              checkout,
              outside ? closeLinkLocal(outside.ip, sandboxed) : sandboxed,
              overlay.tools,
              outside !== undefined,
            );
            if (argv) {
              // What the build writes to its checkout is the upper layer, empty to begin with.
              const result = await supervise(
                argv,
                env,
                undefined,
                request,
                outside?.slirp,
                guard && { ...guard, written: { dir: layer.upper, before: 0 }, tmp: true },
              );
              // The build ended on its own: its namespace, and the overlay with it, are gone; what it wrote joins the checkout.
              if ((result.outcome === 'succeeded' || result.outcome === 'failed') && !result.limit) await applyLayer(layer, checkout);
              return result;
            }
          } finally {
            await removeLayer(layer);
          }
        }
        if (!(await separated(checkout, request.signal))) return { outcome: 'cancelled' };
        const sandboxed = [bwrap, ...(await this.sandboxArgs(checkout, cwd, nodeBin, etc)), '--', ...command];
        const argv = outside ? inOutside(outside, sandboxed) : sandboxed;
        return await supervise(
          argv,
          env,
          undefined,
          request,
          outside?.slirp,
          guard && { ...guard, written: { dir: checkout, before: (await diskUsage(checkout)) ?? 0 }, tmp: true },
        );
      } finally {
        await etc.remove();
      }
    }
    if (!(await separated(checkout, request.signal))) return { outcome: 'cancelled' };
    const home = await mkdtemp(join(tmpdir(), 'cairn-build-home-'));
    try {
      return await supervise(
        command,
        { ...baseEnv, HOME: home, ...request.env },
        cwd,
        request,
        undefined,
        guard && { ...guard, written: { dir: checkout, before: (await diskUsage(checkout)) ?? 0 }, tmp: false },
      );
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }

  /** Once per runner, with `limits`: which cgroups this machine lets the service make, and prlimit for the rest. */
  private limitsOf(): Promise<Limits | undefined> {
    const { limits } = this.options;
    if (!limits) return Promise.resolve(undefined);
    this.limitSupport ??= (async () => {
      const [support, prlimit] = await Promise.all([probeLimits(this.options.cgroupRoot), findExecutable('prlimit')]);
      return { limits, support, prlimit };
    })();
    return this.limitSupport;
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

  /** Why builds here see a copy of their checkout's shared files rather than an overlay (after the first build, or prepare()'s checks); undefined when they see an overlay. */
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
      const args = [
        '--ro-bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--proc',
        '/proc',
        '--unshare-all',
        '--die-with-parent',
        '--',
        '/bin/sh',
        '-c',
        ':',
      ];
      const { code, output } = await capture(bwrap, args);
      if (code !== 0)
        throw new BuildRefused(`bubblewrap (${bwrap}) does not work here (${output.trim() || `exit ${code}`}): ${REFUSAL_HINT}`);
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
    if (!ip)
      throw new BuildRefused(
        `iproute2's ip (${ipNamed}) was not found, and CAIRN_BUILD_NETWORK=outside needs it to close link-local addresses (a cloud's metadata service) to builds: ${IP_HINT}`,
      );
    const outside = { slirp, unshare, ip };
    const argv = inOutside(outside, [
      bwrap,
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--unshare-all',
      ...this.networkArgs(),
      ...asServiceUser(),
      '--die-with-parent',
      '--',
      '/bin/sh',
      '-c',
      'grep -q tap0 /proc/net/dev',
    ]);
    let output = '';
    const checked = await supervise(
      argv,
      { PATH: '/usr/bin:/bin' },
      undefined,
      {
        deployId: 'slirp4netns check',
        checkout: '/',
        directory: '',
        command: '',
        env: {},
        timeoutMs: 20_000,
        signal: new AbortController().signal,
        onOutput: (text) => (output += text),
      },
      slirp,
    );
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

  /**
   * The sandbox (build-root.ts): a minimal read-only root, the checkout
   * writable, a /tmp (and /dev/shm) of their own sized by the /tmp limit,
   * the build's uid, no capabilities. The layer of an overlay build is not
   * among what it sees: it reaches it through its checkout only.
   */
  private async sandboxArgs(checkout: string, cwd: string, nodeBin: string, etc: BuildEtc): Promise<string[]> {
    const { args: root, nodePrefix } = await rootArgs(etc, nodeBin);
    const size = this.options.limits ? ['--size', String(this.options.limits.tmpBytes)] : [];
    const layers: { path: string; args: string[] }[] = [
      { path: '/tmp', args: [...size, '--tmpfs', '/tmp'] },
      { path: checkout, args: ['--bind', checkout, checkout] },
      ...(nodePrefix ? [{ path: nodePrefix, args: ['--ro-bind', nodePrefix, nodePrefix] }] : []),
    ];
    // A mount hides what an earlier one put beneath it: parents go first (a checkout, or Node, under /tmp stays visible).
    layers.sort((a, b) => depth(a.path) - depth(b.path));
    return [
      ...root,
      '--dev',
      '/dev',
      // bubblewrap's /dev is a tmpfs of its own, unbounded: shared memory gets one the size of /tmp.
      ...size,
      '--tmpfs',
      '/dev/shm',
      '--proc',
      '/proc',
      ...layers.flatMap((l) => l.args),
      '--dir',
      SANDBOX_HOME,
      // The root bubblewrap made (a tmpfs holding the mount points) and its /dev (another, unbounded) are no place to write: what a build may fill is its checkout, /tmp and /dev/shm.
      '--remount-ro',
      '/dev',
      '--remount-ro',
      '/',
      '--chdir',
      cwd,
      '--unshare-all',
      // An unprivileged uid of the build's own, in a user namespace of its own, whatever user the service is.
      '--unshare-user',
      '--uid',
      String(BUILD_UID),
      '--gid',
      String(BUILD_GID),
      '--hostname',
      BUILD_HOST,
      ...this.networkArgs(),
      '--die-with-parent',
      '--new-session',
      '--cap-drop',
      'ALL',
    ];
  }
}

/** What a build's limits need of supervise(): the limits, its cgroup, where its writes land, whether it has a /tmp of its own. */
interface Guard {
  limits: BuildLimits;
  cgroup?: BuildCgroup;
  written?: WatchOptions['written'];
  tmp?: boolean;
}

/** A cgroup's name for one build: its deploy and a random part (a deploy's id is the service's, but is kept to safe characters all the same). */
function cgroupName(deployId: string): string {
  return `cairn-build-${deployId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64)}-${randomBytes(4).toString('hex')}`;
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
function supervise(
  argv: string[],
  env: Record<string, string>,
  cwd: string | undefined,
  request: BuildRequest,
  slirp?: string,
  guard?: Guard,
): Promise<BuildResult> {
  return new Promise<BuildResult>((settle, fail) => {
    // The first process joins the build's cgroups before it makes any other: nothing of the build starts outside them.
    const cgroups = guard?.cgroup?.procsFiles() ?? [];
    const joinCgroups = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@" 2>&1';
    const child = spawn('/bin/sh', ['-c', joinCgroups, 'cairn-build', String(cgroups.length), ...cgroups, ...argv], {
      cwd,
      env,
      stdio: slirp ? ['ignore', 'pipe', 'ignore', 'pipe', 'pipe'] : ['ignore', 'pipe', 'ignore'],
      detached: true,
    });
    const link =
      slirp && child.pid
        ? connectOutside(slirp, child.pid, child.stdio[INFO_FD] as Readable, child.stdio[BLOCK_FD] as Writable)
        : undefined;
    let stopped: 'timed-out' | 'cancelled' | undefined;
    /** The limit that ended the build (build-limits.ts). */
    let limited: string | undefined;
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
      if (!limited) stopped ??= why;
      killTree();
    };
    const reached = (line: string) => {
      if (stopped || exit) return;
      limited ??= line;
      killTree();
    };
    const watch =
      guard && child.pid
        ? watchBuild({
            limits: guard.limits,
            cgroup: guard.cgroup,
            written: guard.written,
            // The build's /tmp, seen through its sandbox's first process (bubblewrap's init): once that exists.
            tmp: guard.tmp ? async () => sandboxInit(child.pid!).then((pid) => (pid ? `/proc/${pid}/root/tmp` : undefined)) : undefined,
            tree: guard.cgroup?.hasPids() ? undefined : child.pid,
            onReached: reached,
          })
        : undefined;
    let printed = 0;
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
    child.stdout!.on('data', (chunk: Buffer) => {
      if (limited) return;
      const allowed = guard ? guard.limits.outputBytes - printed : chunk.length;
      printed += chunk.length;
      emit(decoder.write(allowed < chunk.length ? chunk.subarray(0, Math.max(0, allowed)) : chunk));
      if (allowed < chunk.length) reached(reachedLine.output(guard!.limits));
    });
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
      watch?.stop();
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
      after(() => fail(err));
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
      watch?.stop();
      // What the command left running in the background ends with it.
      killTree();
      exit = limited
        ? { outcome: 'failed', signal: 'SIGKILL', limit: limited }
        : stopped
          ? { outcome: stopped, signal: 'SIGKILL' }
          : networkFailed
            ? { outcome: 'failed' }
            : ended(code, signal, guard?.limits);
      // bubblewrap's side channels have nothing more to say; only the output may linger (see PIPE_GRACE_MS).
      for (const fd of [INFO_FD, BLOCK_FD]) (child.stdio[fd] as Readable | null | undefined)?.destroy();
      grace = setTimeout(() => child.stdout!.destroy(), PIPE_GRACE_MS);
    });
    child.on('close', () => {
      clearTimeout(grace);
      if (!limited) emit(decoder.end());
      after(() => {
        if (sinkError !== undefined) return fail(sinkError);
        const result = exit ?? { outcome: 'failed' };
        // A limit the build reached as it ended (the OOM killer took its last process) is read once more.
        if (result.outcome !== 'failed' || result.limit || !watch) return settle(result);
        void watch.final().then((late) => settle(late ? { ...result, limit: late } : result));
      });
    });
  });
}

/**
 * Shells report a command killed by a signal as 128 + its number, and
 * bubblewrap passes its command's status on that way, so such a code names
 * the signal (a command may also exit 137 on its own; it is rare).
 */
function ended(code: number | null, signal: NodeJS.Signals | null, limits?: BuildLimits): BuildResult {
  if (signal) return { outcome: 'failed', signal };
  if (code === 0) return { outcome: 'succeeded', exitCode: 0 };
  const exitCode = code ?? undefined;
  const name =
    exitCode !== undefined && exitCode > 128 ? Object.entries(osConstants.signals).find(([, n]) => n === exitCode - 128)?.[0] : undefined;
  // The rlimits end a process with their own signals (build-limits.ts): the command itself, or the sandbox's prlimit in its place.
  const limit =
    limits && name === 'SIGXCPU' ? reachedLine.cpu(limits) : limits && name === 'SIGXFSZ' ? reachedLine.disk(limits) : undefined;
  return { outcome: 'failed', exitCode, ...(name ? { signal: name } : {}), ...(limit ? { limit } : {}) };
}

function within(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

function depth(p: string): number {
  return p.split(sep).filter(Boolean).length;
}

async function isDirectory(p: string): Promise<boolean> {
  return stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

async function findExecutable(name: string): Promise<string | undefined> {
  const candidates = name.includes('/')
    ? [resolve(name)]
    : (process.env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((d) => join(d, name));
  for (const c of candidates) {
    if (
      await access(c, fsConstants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return c;
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
