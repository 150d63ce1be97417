/**
 * The local service as a child process (`node --import tsx bin/local.ts`) in
 * a temporary data directory, so a test or benchmark can measure the
 * server's own memory (VmHWM) apart from the client's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3Client } from '@aws-sdk/client-s3';
import { BOOT, serviceEnv } from './service-env.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The V8 flags `npm start` passes (package.json; local-service.test.ts
 * checks they agree).
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
 * - `--initial-old-space-size=96`: the old generation's limit starts at
 *   96 MB and V8 keeps it there while less is live (about 60 MB here).
 *   Without it, V8 set the limit 10-15 MB above what was live after each
 *   full collection (`--trace-incremental-marking`), and during a 256 MiB
 *   PUT what got promoted plus the socket buffers in flight (which the
 *   global limit counts, 20-30 MB) crossed it every 0.15 s: a full
 *   collection each time, 0.25-0.6 s of V8's threads per PUT against
 *   0.04-0.18 s with a floor of 96 or 128 MB (side by side in bench:s3,
 *   both orders). 128 cost the benchmark's server 25 MiB more peak RSS
 *   than 96 for no measurable gain.
 * - `--no-memory-reducer`: after about 8 s without much allocation, V8's
 *   memory reducer collects the idle heap and shrinks its limits to fit
 *   what is live. The next burst of work then meets those tight limits:
 *   in the benchmark, the first 256 MiB PUT after an idle spell started a
 *   full collection every 0.2 s (`--trace-gc`: "GC in old space
 *   requested", about 3 MB promoted each time), 0.7-1.0 s of V8's threads
 *   per PUT, where the same PUT in a busy process cost 0.1 s. A server's
 *   heap (about 60 MiB here) is better kept at its working size.
 */
export const LEAN_NODE_FLAGS = ['--max-semi-space-size=4', '--initial-old-space-size=96', '--external-memory-accounted-in-global-limit', '--no-memory-reducer'];

export interface ChildService {
  child: ChildProcess;
  pid: number;
  dataDir: string;
  endpoints: { s3: string; gateway: string; graphql: string };
  credentials: { accessKeyId: string; secretAccessKey: string };
  s3(): S3Client;
  /** Peak resident set size so far, in MiB (VmHWM of /proc/<pid>/status). */
  peakRssMiB(): number;
  /** What the service logged on stdout (only with `captureLog`). */
  log(): string;
  /** SIGTERM (SIGKILL after 15 s), then removes the data directory unless told to keep it. */
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

/** Peak resident set size of a process, in MiB. */
export function peakRssMiB(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmHWM for process ${pid}`);
  return Number(m[1]) / 1024;
}

/** Polls `url` until it answers, failing early if the child exits. */
export async function waitForHttp(child: ChildProcess, name: string, url: string, timeoutMs = 60_000): Promise<void> {
  let output = '';
  child.stderr?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}) before it was ready:\n${output}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`${name} was not ready after ${timeoutMs} ms:\n${output}`);
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

export async function startChildService(opts: { env?: Record<string, string>; nodeArgs?: string[]; captureLog?: boolean } = {}): Promise<ChildService> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cairn-child-'));
  const env = await serviceEnv(dataDir, opts.env);
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', 'tsx', join(ROOT, 'bin/local.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', opts.captureLog ? 'pipe' : 'inherit', 'pipe'],
  });
  let log = '';
  child.stdout?.on('data', (d: Buffer) => (log += d.toString()));
  const local = (port: string) => `http://127.0.0.1:${port}`;
  const endpoints = { s3: local(env.CAIRN_S3_PORT!), gateway: local(env.CAIRN_GATEWAY_PORT!), graphql: `${local(env.CAIRN_API_PORT!)}/graphql` };
  try {
    await waitForHttp(child, 'Cairn', endpoints.s3);
  } catch (err) {
    await stopChild(child);
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const credentials = { accessKeyId: BOOT.accessKeyId, secretAccessKey: BOOT.secretAccessKey };
  return {
    child,
    pid: child.pid!,
    dataDir,
    endpoints,
    credentials,
    s3: () => new S3Client({ endpoint: endpoints.s3, region: 'us-east-1', forcePathStyle: true, credentials }),
    peakRssMiB: () => peakRssMiB(child.pid!),
    log: () => log,
    async stop({ keepData = false } = {}) {
      await stopChild(child);
      if (!keepData) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
