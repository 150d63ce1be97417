/**
 * The one launcher of the local service as a child process, with `npm
 * start`'s command: for measuring the server's own memory (VmHWM) apart
 * from the client's, for killing it outright and starting it again on the
 * same data, and for the benchmark.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { serviceEnv } from './service-env.js';
import { waitFor } from './wait.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The arguments `npm start` gives Node before bin/local.ts, read from
 * package.json's start script when a service is launched, so the flags are
 * written once (there) and every child service runs with exactly them.
 * Why each V8 flag:
 * - `--max-semi-space-size=4`: Node sizes the young generation from the
 *   machine's RAM: on this 24 GB host each semi-space is 64 MB, and much of
 *   it stays resident, which alone put a 1 GiB transfer at 280-330 MiB peak
 *   RSS. With the service's second thread (the embedded database) 16 MB
 *   semi-spaces peaked at 280-320 MiB; 4 MB ones peak at 220-255 MiB and
 *   stream as fast.
 * - `--external-memory-accounted-in-global-limit`: every socket read and
 *   block read allocates memory outside V8's heap, and by default each
 *   64 MB of it starts a full collection of the whole heap (about 25 ms
 *   here, with Helia, the AWS SDK and Apollo loaded): 4 to 8 per 256 MiB
 *   transferred. Counted within the heap's global limit instead, the
 *   young-generation collections free those buffers and a streamed 256 MiB
 *   costs no full collection (`--trace-gc`); a lean client reading 256 MiB
 *   spent 0.2-0.35 s of CPU with it and 0.6-1.0 s without.
 * - `--import ./bin/malloc-arenas.mjs` (first): the process runs with
 *   `MALLOC_ARENA_MAX=2` (bin/malloc-arenas.mjs re-executes itself with it
 *   set, unless the user set it): glibc's default of eight arenas per core
 *   kept freed memory of each thread apart (bin/malloc-arenas.mjs has the figures).
 * - `--initial-old-space-size=80`: the old generation's limit starts at
 *   80 MB and V8 keeps it there while less is live (about 60 MB here).
 *   Without it, V8 set the limit 10-15 MB above what was live after each
 *   full collection (`--trace-incremental-marking`), and during a 256 MiB
 *   PUT what got promoted plus the socket buffers in flight (which the
 *   global limit counts, 20-30 MB) crossed it every 0.15 s: a full
 *   collection each time, 0.25-0.6 s of V8's threads per PUT against
 *   0.04-0.18 s with a floor of 96 or 128 MB (side by side in bench:s3,
 *   both orders). 128 cost the benchmark's server 25 MiB more peak RSS
 *   than 96 for no measurable gain; 80 saved 17 MiB more with V8's threads
 *   at 0.07-0.12 s per PUT.
 * - `--no-memory-reducer`: after about 8 s without much allocation, V8's
 *   memory reducer collects the idle heap and shrinks its limits to fit
 *   what is live. The next burst of work then meets those tight limits:
 *   in the benchmark, the first 256 MiB PUT after an idle spell started a
 *   full collection every 0.2 s (`--trace-gc`: "GC in old space
 *   requested", about 3 MB promoted each time), 0.7-1.0 s of V8's threads
 *   per PUT, where the same PUT in a busy process cost 0.1 s. A server's
 *   heap (about 60 MiB here) is better kept at its working size.
 */
export function npmStartArgs(): { nodeArgs: string[]; script: string } {
  return npmScriptArgs('start');
}

/** An npm script of package.json that runs `node <flags> <script>.ts`, as its Node flags and script (to run it with an environment of the test's own). */
export function npmScriptArgs(name: string): { nodeArgs: string[]; script: string } {
  const line = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts[name] ?? '';
  const words = line.trim().split(/\s+/);
  const script = words.at(-1)!;
  if (words[0] !== 'node' || !script.endsWith('.ts'))
    throw new Error(`package.json's ${name} script is not "node <flags> <script>.ts": ${line}`);
  return { nodeArgs: words.slice(1, -1), script };
}

export interface ChildServiceOptions {
  /** More environment for the service; wins over the test defaults (serviceEnv). */
  env?: Record<string, string>;
  /** More Node flags, after `npm start`'s. */
  nodeArgs?: string[];
  /** Run on this data directory (and never remove it); by default a new temporary one, removed by stop(). */
  dataDir?: string;
  /** Keep what the service writes on stdout for log() instead of passing it through. */
  captureLog?: boolean;
}

export interface ChildService {
  child: ChildProcess;
  pid: number;
  dataDir: string;
  /** The environment it runs with (ports, data directory, account). */
  env: Record<string, string>;
  endpoints: { s3: string; gateway: string; graphql: string };
  credentials: { accessKeyId: string; secretAccessKey: string };
  s3(extra?: Partial<S3ClientConfig>): S3Client;
  /** Peak resident set size so far, in MiB (VmHWM of /proc/<pid>/status). */
  peakRssMiB(): number;
  /** What the service logged on stdout (only with `captureLog`). */
  log(): string;
  /** SIGTERM (SIGKILL after 15 s), then removes the data directory unless it was given or `keepData`. */
  stop(opts?: { keepData?: boolean }): Promise<void>;
  /** SIGKILL, as a crash or an out-of-memory kill would end it: no shutdown, connections cut, data kept. */
  kill(): Promise<void>;
  /** Once it has ended: the service again, on the same data directory and ports. */
  restart(): Promise<ChildService>;
}

/** Peak resident set size of a process, in MiB. */
export function peakRssMiB(pid: number): number {
  return statusMiB(pid, 'VmHWM');
}

/** Resident set size of a process now, in MiB. */
export function rssMiB(pid: number): number {
  return statusMiB(pid, 'VmRSS');
}

function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} for process ${pid}`);
  return Number(m[1]) / 1024;
}

/** Polls `url` until it answers, failing early if the child exits. */
export async function waitForHttp(child: ChildProcess, name: string, url: string, timeoutMs = 60_000): Promise<void> {
  let output = '';
  child.stderr?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}) before it was ready:\n${output}`);
      return fetch(url, { signal: AbortSignal.timeout(1000) }).then(
        () => true,
        () => false,
      );
    },
    { timeoutMs, intervalMs: 200, what: () => `${name} to answer at ${url}:\n${output}` },
  );
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/**
 * `npm start`'s command (Node, its flags, bin/local.ts) as a child process
 * with exactly `env` and nothing of this process's environment (a test
 * that set AWS_LAMBDA_FUNCTION_NAME for a Lambda door must not turn the
 * child into a Lambda). process.execPath is Node 24 under npm's scripts.
 */
export function spawnService(
  env: Record<string, string>,
  opts: { nodeArgs?: string[]; stdout?: 'pipe' | 'inherit' | 'ignore' } = {},
): ChildProcess {
  const start = npmStartArgs();
  const inherited: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR']) if (process.env[name] !== undefined) inherited[name] = process.env[name]!;
  return spawn(process.execPath, [...start.nodeArgs, ...(opts.nodeArgs ?? []), join(ROOT, start.script)], {
    cwd: ROOT,
    env: { ...inherited, ...env },
    stdio: ['ignore', opts.stdout ?? 'inherit', 'pipe'],
  });
}

/** Resolves once bin/local.ts says it is running (all three servers listen); rejects if it exits first or takes over `timeoutMs`. */
function running(child: ChildProcess, timeoutMs: number): Promise<void> {
  let stderr = '';
  return new Promise<void>((resolve, reject) => {
    // A deadline, not a pause: start-up normally takes 2-5 s.
    const timer = setTimeout(() => reject(new Error(`the service did not start in ${timeoutMs} ms:\n${stderr}`)), timeoutMs);
    const onExit = (code: number | null, signal: string | null) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code ?? signal}) before it was running:\n${stderr}`));
    };
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-8000);
      if (stderr.includes('Cairn is running.')) {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve();
      }
    });
    child.once('exit', onExit);
  });
}

async function launch(env: Record<string, string>, opts: ChildServiceOptions, ownsDataDir: boolean): Promise<ChildService> {
  const child = spawnService(env, { nodeArgs: opts.nodeArgs, stdout: opts.captureLog ? 'pipe' : 'inherit' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let log = '';
  child.stdout?.on('data', (d: Buffer) => (log += d.toString()));
  const dataDir = env.CAIRN_DATA_DIR!;
  try {
    await running(child, 60_000);
  } catch (err) {
    await stopChild(child);
    if (ownsDataDir) await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const local = (port: string) => `http://127.0.0.1:${port}`;
  const endpoints = {
    s3: local(env.CAIRN_S3_PORT!),
    gateway: local(env.CAIRN_GATEWAY_PORT!),
    graphql: `${local(env.CAIRN_API_PORT!)}/graphql`,
  };
  const credentials = { accessKeyId: env.CAIRN_BOOTSTRAP_ACCESS_KEY!, secretAccessKey: env.CAIRN_BOOTSTRAP_SECRET_KEY! };
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    pid: child.pid!,
    dataDir,
    env,
    endpoints,
    credentials,
    s3: (extra = {}) => new S3Client({ endpoint: endpoints.s3, region: 'us-east-1', forcePathStyle: true, credentials, ...extra }),
    peakRssMiB: () => peakRssMiB(child.pid!),
    log: () => log,
    async stop({ keepData = false } = {}) {
      await stopChild(child);
      if (ownsDataDir && !keepData) await rm(dataDir, { recursive: true, force: true });
    },
    async kill() {
      if (!ended()) child.kill('SIGKILL');
      await exited;
    },
    async restart() {
      if (!ended()) throw new Error('restart() needs the service stopped or killed first');
      return launch(env, opts, ownsDataDir);
    },
  };
}

/** The local service as `npm start` runs it, in a child process, ready to serve. */
export async function startChildService(opts: ChildServiceOptions = {}): Promise<ChildService> {
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'cairn-child-')));
  return launch(await serviceEnv(dataDir, opts.env), opts, opts.dataDir === undefined);
}
