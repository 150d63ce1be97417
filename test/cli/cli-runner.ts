/**
 * The `cairn` command line as its users run it, with a home and config
 * directory of its own and nothing of this process's environment but PATH:
 *
 * - `run` and `json`: the program bin/cairn.ts runs (functions/cli/program.ts's
 *   runCli), in this process, given that environment, the home as its
 *   working directory and its own stdin, stdout and stderr. A start of the
 *   binary costs about 0.6 s of CPU (tsx and the modules), which over the
 *   command line's suites was about a minute of the everyday run.
 * - `run(..., { binary: true })` and `json(..., { binary: true })`, `start`
 *   and `runInTerminal`: bin/cairn.mjs in a child process (under this Node,
 *   which is npm's Node 24), or inside a pseudo-terminal (Debian's
 *   `script`), where it draws its progress bars. Each command family keeps
 *   tests that run the binary; the full run (CAIRN_TEST_SET=full, what CI
 *   runs) runs every command through it.
 */
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestService } from '../support/service.js';
import { FULL_RUN } from '../support/test-set.js';

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const BIN = join(ROOT, 'bin', 'cairn.mjs');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliUser {
  /** Its own home; the config directory is `<home>/.config/cairn` (XDG_CONFIG_HOME unset). */
  home: string;
  configPath: string;
  env: Record<string, string>;
  run(args: string[], options?: RunOptions): Promise<CliResult>;
  /** Starts it without waiting: what it has printed so far, and its end. */
  start(
    args: string[],
    options?: { env?: Record<string, string>; timeoutMs?: number },
  ): { output(): { stdout: string; stderr: string }; done: Promise<CliResult> };
  /** Runs it and parses stdout as the one JSON value --json prints, failing loudly otherwise. */
  json<T = any>(args: string[], options?: Omit<RunOptions, 'input' | 'timeoutMs'>): Promise<T>;
  /** Runs it in a pseudo-terminal: stdout and stderr are both the terminal, as for a person. */
  runInTerminal(
    args: string[],
    options?: { env?: Record<string, string>; timeoutMs?: number; columns?: number },
  ): Promise<{ code: number | null; output: string }>;
  cleanup(): Promise<void>;
}

export interface RunOptions {
  env?: Record<string, string>;
  input?: string;
  cwd?: string;
  timeoutMs?: number;
  /** Runs bin/cairn.mjs in a child process rather than the program in this process. */
  binary?: boolean;
}

/** runCli in this process, with the run's environment, directory and streams; `what` names it in a timeout. */
async function runHere(args: string[], env: Record<string, string>, cwd: string, input: string, timeoutMs: number): Promise<CliResult> {
  const { runCli } = await import('../../functions/cli/program.js');
  const printed = { stdout: '', stderr: '' };
  const to = (name: 'stdout' | 'stderr') =>
    new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        printed[name] += chunk.toString();
        done();
      },
    });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new Error(`cairn ${args.join(' ')} did not end in ${timeoutMs} ms:\nstdout: ${printed.stdout}\nstderr: ${printed.stderr}`)),
      timeoutMs,
    );
  });
  try {
    const stdin = Readable.from(input ? [Buffer.from(input)] : []);
    const code = await Promise.race([runCli(args, { streams: { stdout: to('stdout'), stderr: to('stderr'), stdin }, env, cwd }), timeout]);
    return { code, ...printed };
  } finally {
    clearTimeout(timer);
  }
}

function collect(child: ReturnType<typeof spawn>, timeoutMs: number, what: string): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not end in ${timeoutMs} ms:\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export async function newCliUser(extraEnv: Record<string, string> = {}): Promise<CliUser> {
  const home = await mkdtemp(join(tmpdir(), 'cairn-cli-home-'));
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: tmpdir(), ...extraEnv };
  const user: CliUser = {
    home,
    configPath: join(home, '.config', 'cairn', 'config.json'),
    env,
    async run(args, options = {}) {
      if (!options.binary && !FULL_RUN) {
        return runHere(args, { ...env, ...options.env }, options.cwd ?? home, options.input ?? '', options.timeoutMs ?? 90_000);
      }
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: options.cwd ?? home,
        env: { ...env, ...options.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      child.stdin!.end(options.input ?? '');
      return collect(child, options.timeoutMs ?? 90_000, `cairn ${args.join(' ')}`);
    },
    start(args, options = {}) {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: home,
        env: { ...env, ...options.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const seen = { stdout: '', stderr: '' };
      child.stdout!.on('data', (d: Buffer) => (seen.stdout += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (seen.stderr += d.toString()));
      return { output: () => ({ ...seen }), done: collect(child, options.timeoutMs ?? 90_000, `cairn ${args.join(' ')}`) };
    },
    async json(args, options = {}) {
      const result = await user.run([...args, '--json'], options);
      if (result.code !== 0) throw new Error(`cairn ${args.join(' ')} --json exited ${result.code}: ${result.stderr}`);
      try {
        return JSON.parse(result.stdout);
      } catch {
        throw new Error(`cairn ${args.join(' ')} --json printed no JSON value: ${result.stdout}`);
      }
    },
    async runInTerminal(args, options = {}) {
      // `script` gives the command a pseudo-terminal and copies what it draws to our stdout.
      const command = `stty cols ${options.columns ?? 120} rows 40 2>/dev/null; exec ${[process.execPath, BIN, ...args].map(quote).join(' ')}`;
      const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
        cwd: home,
        env: { ...env, TERM: 'xterm', ...options.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const result = await collect(child, options.timeoutMs ?? 90_000, `cairn ${args.join(' ')} in a terminal`);
      return { code: result.code, output: result.stdout + result.stderr };
    },
    cleanup: () => rm(home, { recursive: true, force: true }),
  };
  return user;
}

/** The arguments that log a user in to a test service, with its three endpoints. */
export function loginArgs(service: TestService, apiKey: string): string[] {
  return [
    'login',
    '--api-key',
    apiKey,
    '--api-url',
    service.endpoints.graphql.replace(/\/graphql$/, ''),
    '--storage-endpoint',
    service.endpoints.s3,
    '--gateway-url',
    service.endpoints.gateway,
  ];
}

/** Text without the terminal's control sequences (colours, cursor moves), as a person reads it. */
export const plain = (text: string) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
