/**
 * A build's limits on this machine (config.build.limits), each kept by the
 * kernel where it can be, and watched so that the build is ended, with one
 * line naming the limit, when it is reached.
 *
 * - Processes: a cgroup's `pids.max` where the service may make one (cgroup
 *   v1's pids hierarchy, or v2 with the pids controller delegated): forks
 *   past it fail, and its `pids.events` tells the watcher, which ends the
 *   build. Otherwise RLIMIT_NPROC, set inside the sandbox (prlimit), where
 *   the build's user namespace is new, so the kernel counts the build's own
 *   processes (its ucounts are per user namespace and uid, since Linux
 *   5.14) rather than every process of the service's user. The kernel
 *   exempts the initial namespace's root from RLIMIT_NPROC: a service
 *   running as root without cgroups has no kernel-kept process limit, and
 *   says so. Without a pids cgroup the watcher counts the build's processes
 *   (and threads, as the kernel does) once a second and ends it at the
 *   limit: for root, a fork bomb has that second to grow.
 * - Memory: the cgroup's `memory.limit_in_bytes` (v1, with
 *   memory.memsw.limit_in_bytes so swap does not extend it) or `memory.max`
 *   (v2): past it the kernel's OOM killer ends a process of the build, and
 *   the cgroup's oom_kill count tells the watcher. The RAM-backed /tmp is
 *   charged to it too. Otherwise RLIMIT_DATA per process (not RLIMIT_AS:
 *   V8 and WebAssembly reserve far more address space than they use, and
 *   would fail at any useful figure).
 * - CPU time: the whole build's, from the cgroup's accounting (cpuacct.usage,
 *   cpu.stat), read by the watcher; and RLIMIT_CPU for each process in any
 *   case (SIGXCPU at the limit), which is all there is without a cgroup.
 * - Disk: what the build wrote to its workspace (the overlay's upper layer,
 *   or the checkout's growth where it writes the checkout itself) plus its
 *   /tmp. The workspace is measured with du at most 5% of the time (every
 *   second, or 20 times as long as the last du took: a cost bounded
 *   whatever the tree), so a build may pass the limit by what it writes
 *   between two measures; RLIMIT_FSIZE keeps any one file under the limit
 *   at once. /tmp is a tmpfs of CAIRN_BUILD_TMP bytes: writes past it fail
 *   with ENOSPC, and the watcher, which sees it full, ends the build.
 * - Output: counted by the runner as it passes it on (bwrap-runner.ts).
 *
 * The cgroups are made under the service's own (v1: in each hierarchy), so
 * the limits of whatever runs the service still hold over its builds, and
 * removed when the build ends. Every read is asynchronous and small: a
 * build at its limits (a fork bomb, a memory hog) costs the service's event
 * loop nothing but a few file reads a second.
 */
import { lstat, mkdir, readdir, readFile, readlink, rmdir, statfs, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join, relative } from 'node:path';
import type { BuildLimits } from '../core/config.js';
import { sleep } from '../core/retry.js';
import { runCommand } from '../core/run-command.js';

export type { BuildLimits };

type Controller = 'pids' | 'memory' | 'cpu';

/** Where one controller's cgroups are made: the service's own cgroup in that hierarchy. */
interface Hierarchy {
  version: 1 | 2;
  /** The service's cgroup directory, parent of the builds'. */
  parent: string;
}

/** What this machine lets the service use, found once per runner. */
export interface LimitSupport {
  cgroups: Partial<Record<Controller, Hierarchy>>;
  /** Whether the service's user is the initial namespace's root (exempt from RLIMIT_NPROC). */
  root: boolean;
}

/** One size as a person reads it: 3 GiB, 64 MiB, 1.5 GiB, 100 bytes. */
export function formatBytes(n: number): string {
  for (const [unit, size] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (n >= size) {
      const v = n / size;
      return `${Number.isInteger(v) ? v : v.toFixed(1)} ${unit}`;
    }
  }
  return `${n} bytes`;
}

/** The lines that end a build at each limit (the deploy log's reason). */
export const reachedLine = {
  memory: (l: BuildLimits) => `memory limit ${formatBytes(l.memoryBytes)} reached`,
  processes: (l: BuildLimits) => `process limit ${l.processes} reached`,
  cpu: (l: BuildLimits) => `CPU time limit ${l.cpuSeconds} s reached`,
  disk: (l: BuildLimits) => `disk limit ${formatBytes(l.diskBytes)} reached`,
  tmp: (l: BuildLimits) => `disk limit reached: /tmp is full at its ${formatBytes(l.tmpBytes)}`,
  output: (l: BuildLimits) => `output limit ${formatBytes(l.outputBytes)} reached`,
};

/**
 * The cgroup hierarchies the service may make build cgroups in, each tried
 * for real (a child made, its limit written, removed): a read-only or
 * foreign hierarchy leaves that limit to rlimits.
 */
export async function probeLimits(cgroupRoot = '/sys/fs/cgroup'): Promise<LimitSupport> {
  const root = process.getuid?.() === 0;
  const cgroups: LimitSupport['cgroups'] = {};
  const [mountinfo, own] = await Promise.all([
    readFile('/proc/self/mountinfo', 'utf8').catch(() => ''),
    readFile('/proc/self/cgroup', 'utf8').catch(() => ''),
  ]);
  const mounts = mountinfo
    .split('\n')
    .map((line) => {
      const [before, after] = line.split(' - ');
      if (!before || !after) return undefined;
      const f = before.split(' ');
      const [type, , options] = after.split(' ');
      return { root: f[3]!, point: f[4]!.replace(/\\040/g, ' '), type: type!, options: (options ?? '').split(',') };
    })
    .filter((m): m is NonNullable<typeof m> => m !== undefined && m.point.startsWith(cgroupRoot));
  const paths = own
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const first = line.indexOf(':');
      const second = line.indexOf(':', first + 1);
      return {
        controllers: line
          .slice(first + 1, second)
          .split(',')
          .filter(Boolean),
        path: line.slice(second + 1),
      };
    });
  const v1 = (controller: string): string | undefined => {
    const mount = mounts.find((m) => m.type === 'cgroup' && m.options.includes(controller));
    const path = paths.find((p) => p.controllers.includes(controller))?.path;
    if (!mount || path === undefined) return undefined;
    const rel = relative(mount.root, path);
    return rel.startsWith('..') ? undefined : join(mount.point, rel);
  };
  const v2mount = mounts.find((m) => m.type === 'cgroup2');
  const v2path = paths.find((p) => p.controllers.length === 0)?.path;
  const v2 =
    v2mount && v2path !== undefined && !relative(v2mount.root, v2path).startsWith('..')
      ? join(v2mount.point, relative(v2mount.root, v2path))
      : undefined;
  const v2controllers = v2 ? (await readFile(join(v2, 'cgroup.controllers'), 'utf8').catch(() => '')).trim().split(/\s+/) : [];

  const tries: Array<[Controller, string, string | undefined, string]> = [
    ['pids', 'pids', v1('pids'), 'pids.max'],
    ['memory', 'memory', v1('memory'), 'memory.limit_in_bytes'],
    ['cpu', 'cpuacct', v1('cpuacct'), 'cpuacct.usage'],
  ];
  await Promise.all(
    tries.map(async ([controller, , parent, file]) => {
      if (parent && (await tryCgroup(parent, file, controller !== 'cpu'))) cgroups[controller] = { version: 1, parent };
      else if (v2 && v2controllers.includes(controller)) {
        // Delegated to the service: its children get the controller only if its own cgroup.subtree_control has it (refused while the service's cgroup holds processes, cgroup v2's rule).
        await writeFile(join(v2, 'cgroup.subtree_control'), `+${controller}`).catch(() => undefined);
        const v2file = controller === 'pids' ? 'pids.max' : controller === 'memory' ? 'memory.max' : 'cpu.stat';
        if (await tryCgroup(v2, v2file, controller !== 'cpu')) cgroups[controller] = { version: 2, parent: v2 };
      }
    }),
  );
  return { cgroups, root };
}

/** Whether a child cgroup can be made under parent with `file` in it (and written, for a limit). */
async function tryCgroup(parent: string, file: string, write: boolean): Promise<boolean> {
  const dir = join(parent, `cairn-build-check-${randomBytes(4).toString('hex')}`);
  try {
    await mkdir(dir);
  } catch {
    return false;
  }
  try {
    const value = await readFile(join(dir, file), 'utf8');
    if (write) await writeFile(join(dir, file), value.trim().split('\n')[0]!);
    return true;
  } catch {
    return false;
  } finally {
    await rmdir(dir).catch(() => undefined);
  }
}

/** Which mechanism keeps each limit, for the build's log. */
export function describeLimits(limits: BuildLimits, support: LimitSupport, sandboxed: boolean): string {
  const via = (c: Controller) => (support.cgroups[c] ? `cgroup v${support.cgroups[c]!.version}` : undefined);
  const processes =
    via('pids') ??
    (!sandboxed || support.root
      ? `counted every second, no kernel limit: ${sandboxed ? 'RLIMIT_NPROC does not bind root' : 'without the sandbox RLIMIT_NPROC would count the service user'}`
      : 'RLIMIT_NPROC, counted every second');
  return [
    `memory ${formatBytes(limits.memoryBytes)} (${via('memory') ?? 'RLIMIT_DATA, per process'})`,
    `processes ${limits.processes} (${processes})`,
    `CPU time ${limits.cpuSeconds} s (${via('cpu') ? `${via('cpu')}, all processes` : 'RLIMIT_CPU, per process'})`,
    `disk ${formatBytes(limits.diskBytes)} (workspace${sandboxed ? ' and /tmp' : ''}, measured; RLIMIT_FSIZE per file)`,
    ...(sandboxed ? [`/tmp ${formatBytes(limits.tmpBytes)} (tmpfs)`] : []),
    `output ${formatBytes(limits.outputBytes)}`,
  ].join(', ');
}

/**
 * The rlimits for the build's command, as prlimit's options: set inside
 * the sandbox, so that they hold for the build's processes only and a new
 * user namespace counts its processes (see the top of this file).
 */
export function rlimitOptions(limits: BuildLimits, support: LimitSupport, sandboxed: boolean): string[] {
  const options = [`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 5}`, `--fsize=${limits.diskBytes}`];
  if (!support.cgroups.memory) options.push(`--data=${limits.memoryBytes}`);
  if (!support.cgroups.pids && sandboxed) options.push(`--nproc=${limits.processes}`);
  return options;
}

/** One build's cgroups: joined by the build's first process, read by the watcher, removed at its end. */
export class BuildCgroup {
  private constructor(
    private readonly dirs: Partial<Record<Controller, { version: 1 | 2; dir: string }>>,
    private readonly limits: BuildLimits,
  ) {}

  /** Made with the limits written; a cgroup that cannot be made leaves its limit to rlimits for this build. */
  static async make(support: LimitSupport, limits: BuildLimits, name: string): Promise<BuildCgroup> {
    const dirs: Partial<Record<Controller, { version: 1 | 2; dir: string }>> = {};
    const made = new Map<string, { version: 1 | 2; dir: string }>();
    const cgroup = new BuildCgroup(dirs, limits);
    try {
      for (const [controller, h] of Object.entries(support.cgroups) as Array<[Controller, Hierarchy]>) {
        const dir = join(h.parent, name);
        // cgroup v2: one directory holds every controller.
        let entry = made.get(dir);
        if (!entry) {
          await mkdir(dir);
          entry = { version: h.version, dir };
          made.set(dir, entry);
        }
        dirs[controller] = entry;
        if (controller === 'pids') await writeFile(join(dir, 'pids.max'), String(limits.processes));
        if (controller === 'memory' && h.version === 1) {
          await writeFile(join(dir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
          await writeFile(join(dir, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes)).catch(() => undefined); // without swap accounting there is nothing to bound
        }
        if (controller === 'memory' && h.version === 2) {
          await writeFile(join(dir, 'memory.max'), String(limits.memoryBytes));
          await writeFile(join(dir, 'memory.swap.max'), '0').catch(() => undefined);
        }
      }
      return cgroup;
    } catch (err) {
      await cgroup.remove();
      throw err;
    }
  }

  /** Whether the process limit is this cgroup's (else rlimits keep it, and the watcher counts). */
  hasPids(): boolean {
    return this.dirs.pids !== undefined;
  }

  /** The files the build's first process writes its pid into, before it makes any other. */
  procsFiles(): string[] {
    return [...new Set(Object.values(this.dirs).map((d) => join(d!.dir, 'cgroup.procs')))];
  }

  /** Which of the cgroup's limits the build has reached, if any. */
  async reached(): Promise<string | undefined> {
    const { pids, memory, cpu } = this.dirs;
    if (pids && count(await read(join(pids.dir, 'pids.events')), 'max') > 0) return reachedLine.processes(this.limits);
    if (memory) {
      const events = await read(join(memory.dir, memory.version === 1 ? 'memory.oom_control' : 'memory.events'));
      if (count(events, 'oom_kill') > 0) return reachedLine.memory(this.limits);
    }
    if (cpu) {
      const seconds =
        cpu.version === 1
          ? Number((await read(join(cpu.dir, 'cpuacct.usage'))).trim() || 0) / 1e9
          : count(await read(join(cpu.dir, 'cpu.stat')), 'usage_usec') / 1e6;
      if (seconds >= this.limits.cpuSeconds) return reachedLine.cpu(this.limits);
    }
    return undefined;
  }

  /** The build's processes still running, from its cgroup. */
  async members(): Promise<number[]> {
    const files = this.procsFiles();
    if (files.length === 0) return [];
    return (await read(files[0]!)).split('\n').filter(Boolean).map(Number);
  }

  /**
   * Removed once empty. A process that left the build's process group
   * (setsid, without the sandbox's pid namespace) is still in its cgroup:
   * it is killed here, and removal tried again for a while.
   */
  async remove(): Promise<void> {
    for (const pid of await this.members()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    for (const dir of new Set(Object.values(this.dirs).map((d) => d!.dir))) {
      for (let tries = 0; ; tries++) {
        const gone = await rmdir(dir).then(
          () => true,
          (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
        );
        if (gone || tries >= 50) break;
        await sleep(100);
      }
    }
  }
}

async function read(file: string): Promise<string> {
  return readFile(file, 'utf8').catch(() => '');
}

/** `key N` in a cgroup's flat-keyed file. */
function count(text: string, key: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${key} `));
  return line ? Number(line.slice(key.length + 1)) || 0 : 0;
}

/** Bytes used by the tree at dir (blocks, as du counts them: what the disk holds), or undefined if it cannot be read. */
export function diskUsage(dir: string): Promise<number | undefined> {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' };
  // du says how far it got even when some folder was unreadable (exit 1): that much is written at least.
  return runCommand('du', ['-s', '-x', '-B1', dir], { env }).done.then(
    ({ stdout }) => {
      const n = Number.parseInt(stdout.toString(), 10);
      return Number.isFinite(n) ? n : undefined;
    },
    () => undefined,
  );
}

/** statfs's f_type for tmpfs (linux/magic.h). */
const TMPFS_MAGIC = 0x01021994;

/**
 * What the build's /tmp holds, once `path` (the sandbox's /tmp through its
 * first process's /proc root) is that tmpfs. While bubblewrap is still
 * making the sandbox, that process already is in its own pid namespace but
 * its root is not yet the sandbox's: the path shows the machine's own /tmp
 * (seen here: one reading in thirty, polling through twenty sandboxes'
 * starts), and the machine's whole disk counted against the build's disk
 * limit once ended a loaded machine's builds at once. So only a tmpfs no
 * larger than the build's is read; anything else is not yet the build's.
 */
export async function sandboxTmpUse(path: string, limits: BuildLimits): Promise<{ used: number; free: number } | undefined> {
  const s = await statfs(path).catch(() => undefined);
  if (!s || s.type !== TMPFS_MAGIC || s.blocks * s.bsize > limits.tmpBytes + s.bsize) return undefined;
  return { used: (s.blocks - s.bfree) * s.bsize, free: s.bavail * s.bsize };
}

/**
 * The first process under `pid` in another pid namespace than this one's:
 * bubblewrap's init inside the sandbox, whose root is the build's.
 */
export async function sandboxInit(pid: number): Promise<number | undefined> {
  const ours = await readlink('/proc/self/ns/pid').catch(() => undefined);
  const queue = [pid];
  for (let seen = 0; queue.length > 0 && seen < 64; seen++) {
    const at = queue.shift()!;
    const ns = await readlink(`/proc/${at}/ns/pid`).catch(() => undefined);
    if (ns && ours && ns !== ours) return at;
    const tasks = await readdir(`/proc/${at}/task`).catch(() => [] as string[]);
    for (const t of tasks) {
      const children = await readFile(`/proc/${at}/task/${t}/children`, 'utf8').catch(() => '');
      queue.push(...children.split(' ').filter(Boolean).map(Number));
    }
  }
  return undefined;
}

/** Whether path exists (for the sandbox's /tmp through /proc). */
export async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/** How often the cgroup's counters and /tmp are read (a few small files: cheap). */
const WATCH_MS = 250;
/** du runs at most this share of the time (see the top of this file), and at most once a second. */
const DU_SHARE = 0.05;
const DU_MIN_MS = 1000;
/** A /tmp with less than this free is full: tmpfs fills to the page, and a write that does not fit fails. */
const TMP_FULL_BYTES = 64 * 1024;
/** How often a build without a pids cgroup has its processes counted (a read or two per process: up to the limit's worth). */
const COUNT_MS = 1000;

/**
 * The tasks (threads, which RLIMIT_NPROC and pids.max count too) of the
 * tree under pid, itself included, read from /proc; the walk stops at
 * `stop`, so it costs at most the limit's worth of reads.
 */
export async function countTasks(pid: number, stop: number): Promise<number> {
  let tasks = 0;
  const queue = [pid];
  while (queue.length > 0 && tasks < stop) {
    const at = queue.shift()!;
    const threads = await readdir(`/proc/${at}/task`).catch(() => [] as string[]);
    tasks += threads.length;
    for (const t of threads) {
      const children = await readFile(`/proc/${at}/task/${t}/children`, 'utf8').catch(() => '');
      queue.push(...children.split(' ').filter(Boolean).map(Number));
    }
  }
  return tasks;
}

export interface BuildWatch {
  /** Stops watching (the build has ended). */
  stop(): void;
  /** Read once more after the build's end: a limit it reached as it ended (an OOM kill of its last process). */
  final(): Promise<string | undefined>;
}

export interface WatchOptions {
  limits: BuildLimits;
  cgroup?: BuildCgroup;
  /** Where the build's workspace writes land, and how much was there before it ran. */
  written?: { dir: string; before: number };
  /** The build's /tmp as this process can see it, once the sandbox exists. */
  tmp?: () => Promise<string | undefined>;
  /** Without a pids cgroup: the build's first process, whose tree is counted against the process limit (see countTasks). */
  tree?: number;
  onReached(line: string): void;
}

export function watchBuild(options: WatchOptions): BuildWatch {
  const { limits, cgroup, written, tmp } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let duNext = 0;
  let workspaceBytes = 0;
  let duRunning: Promise<void> | undefined;
  let tmpPath: string | undefined;
  let countNext = 0;

  const check = async (): Promise<string | undefined> => {
    const fromCgroup = await cgroup?.reached();
    if (fromCgroup) return fromCgroup;
    if (options.tree !== undefined && Date.now() >= countNext) {
      // Without a pids cgroup nothing else tells that forks fail at RLIMIT_NPROC (or, for root, that there are too many): counted, once a second.
      countNext = Date.now() + COUNT_MS;
      if ((await countTasks(options.tree, limits.processes)) >= limits.processes) return reachedLine.processes(limits);
    }
    let tmpUsed = 0;
    if (tmp) {
      tmpPath ??= await tmp();
      const seen = tmpPath ? await sandboxTmpUse(tmpPath, limits) : undefined;
      if (seen) {
        if (seen.free < TMP_FULL_BYTES) return reachedLine.tmp(limits);
        tmpUsed = seen.used;
      }
    }
    if (written && !duRunning && Date.now() >= duNext) {
      const started = Date.now();
      duRunning = diskUsage(written.dir).then((bytes) => {
        if (bytes !== undefined) workspaceBytes = Math.max(0, bytes - written.before);
        duNext = Date.now() + Math.max(DU_MIN_MS, (Date.now() - started) / DU_SHARE);
        duRunning = undefined;
      });
      // The first measure is awaited, later ones not: a slow du never holds up the other limits.
      if (duNext === 0) await duRunning;
    }
    if (workspaceBytes + tmpUsed >= limits.diskBytes) return reachedLine.disk(limits);
    return undefined;
  };

  const tick = () => {
    timer = setTimeout(() => {
      void check().then(
        (line) => {
          if (stopped) return;
          if (line) {
            stopped = true;
            options.onReached(line);
          } else tick();
        },
        () => (stopped ? undefined : tick()),
      );
    }, WATCH_MS);
  };
  tick();

  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
    async final() {
      return cgroup?.reached().catch(() => undefined);
    },
  };
}
