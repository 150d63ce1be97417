/**
 * The service's short commands (git, and cp, find, du and tar around
 * builds), started by a small process of its own rather than by the
 * service's.
 *
 * Node starts a command by forking the process that asks (libuv's
 * uv_spawn: fork, then exec), and the fork copies the asking process's
 * page tables while that process's event loop waits. The cost grows with
 * the process: 100 spawns of `true` measured 6-8 ms of CPU each from a
 * 50 MB Node process and 26-29 ms from one of 1 GB, all of it on the
 * event loop's thread. A deploy runs dozens of commands (a clone and a
 * checkout are several git commands each, a kept tree is linked with
 * `cp -al`, a build layer is read with find and tar), and a busy service
 * is a large process: each of those was a pause for every request in
 * flight. Asked through the runner (a Node process of its own, about
 * 40 MB, started at the first command and ended after a quiet while), the
 * same 100 spawns from the 1 GB process took 1.3 ms of the service's CPU
 * and about 9 ms of the runner's each.
 *
 * The runner only starts commands and collects what they print: the
 * caller learns the command's process id as soon as it runs and signals it
 * (or its process group) itself, as it would a child of its own. A runner
 * that cannot be started, or that dies, fails the commands it held with an
 * error (never the service); the next command starts a new one. In Lambda
 * (one request per process, and memory counted per function) commands are
 * started directly.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface CommandOptions {
  cwd?: string;
  /** The command's whole environment (this process's own when left out). */
  env?: NodeJS.ProcessEnv;
  /** Written to its standard input, which is then closed. */
  input?: string | Buffer;
  /** A process group of its own, so that kill() also ends what it started (git's helpers). */
  detached?: boolean;
}

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
}

export interface RunningCommand {
  /** Settles when it has ended, with what it printed; rejects when it could not be started (ENOENT...). */
  done: Promise<CommandResult>;
  /** Sends `signal` (SIGTERM by default) to it, or to its process group when detached; once it runs, or as soon as it does. */
  kill(signal?: NodeJS.Signals): void;
}

/** Starts `file` with `args`; see the file's head for where. */
export function runCommand(file: string, args: readonly string[], options: CommandOptions = {}): RunningCommand {
  const request = {
    file,
    args: [...args],
    cwd: options.cwd ?? process.cwd(),
    env: { ...(options.env ?? process.env) },
    input: options.input ?? '',
    detached: options.detached ?? false,
  };
  return startedDirectly() ? runDirectly(request) : runner().run(request);
}

/** A command that ended other than with exit 0, or was killed. */
export class CommandError extends Error {
  override name = 'CommandError';
  constructor(
    readonly file: string,
    readonly result: CommandResult,
  ) {
    const said = result.stderr.toString('utf8').trim().split('\n').slice(-3).join(' / ');
    super(`${file} failed (${result.code === null ? `killed by ${result.signal}` : `exit ${result.code}`})${said ? `: ${said}` : ''}`);
  }
}

/**
 * Runs a command to its end: its result on exit 0, else a CommandError;
 * when `signal` aborts, the command (its group when detached) gets SIGTERM
 * and the promise rejects with the signal's reason.
 */
export async function commandOutput(
  file: string,
  args: readonly string[],
  options: CommandOptions & { signal?: AbortSignal } = {},
): Promise<CommandResult> {
  const { signal } = options;
  signal?.throwIfAborted();
  const running = runCommand(file, args, options);
  const onAbort = () => running.kill('SIGTERM');
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await running.done;
    signal?.throwIfAborted();
    if (result.code !== 0) throw new CommandError(file, result);
    return result;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

interface Request {
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  input: string | Buffer;
  detached: boolean;
}

/**
 * In Lambda (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime:
 * AWS_LAMBDA_FUNCTION_NAME is set there), read once, as this module loads: Lambda sets its runtime's
 * variables before the function's process starts. A process that sets it later for Lambda handlers it
 * loads beside a local server of its own (the tests do: both doors over the same data) is still the
 * local server's, whose commands go through the runner as they do under `npm start`.
 */
const IN_LAMBDA = Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME);
const startedDirectly = () => IN_LAMBDA || process.env.CAIRN_COMMAND_RUNNER === 'direct';

/** Sends `signal` to `pid`, or to its group; a process already gone is no error. */
function signalProcess(pid: number, group: boolean, signal: NodeJS.Signals): void {
  try {
    process.kill(group ? -pid : pid, signal);
  } catch {
    // already gone
  }
}

/** A handle whose kill() waits for the pid. */
function handle(detached: boolean): { command: Omit<RunningCommand, 'done'>; started(pid: number | undefined): void } {
  let pid: number | undefined;
  let pending: NodeJS.Signals | undefined;
  let ended = false;
  return {
    command: {
      kill(signal = 'SIGTERM') {
        if (pid !== undefined) signalProcess(pid, detached, signal);
        else if (!ended) pending = signal;
      },
    },
    started(started) {
      pid = started;
      ended = started === undefined;
      if (pid !== undefined && pending) signalProcess(pid, detached, pending);
    },
  };
}

function runDirectly(request: Request): RunningCommand {
  const { command, started } = handle(request.detached);
  const done = new Promise<CommandResult>((resolve, reject) => {
    const child = spawn(request.file, request.args, {
      cwd: request.cwd,
      env: request.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: request.detached,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let failed = false;
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.stdin.on('error', () => undefined); // a command that exits before reading all of it
    child.once('spawn', () => started(child.pid));
    child.once('error', (e) => {
      failed = true;
      started(undefined);
      reject(e);
    });
    child.once('close', (code, signal) => {
      if (!failed) resolve({ code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err) });
    });
    child.stdin.end(request.input);
  });
  return { ...command, done };
}

/**
 * The runner process's program, sent as `node -e` source so that no file
 * has to sit beside a bundle. Messages in: `{ id, file, args, cwd, env,
 * input, detached }`. Out: `{ id, pid }` once running, then `{ id, code,
 * signal, stdout, stderr }`, or `{ id, error: { message, code } }` when it
 * could not start; the same steps as runDirectly's. It ends when the
 * service does (its channel closes).
 */
const RUNNER_SOURCE = `
const { spawn } = require('node:child_process');
process.on('message', (m) => {
  let child;
  try {
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, stdio: ['pipe', 'pipe', 'pipe'], detached: m.detached });
  } catch (e) {
    process.send({ id: m.id, error: { message: String(e && e.message), code: e && e.code } });
    return;
  }
  const out = [], err = [];
  let failed = false;
  child.stdout.on('data', (d) => out.push(d));
  child.stderr.on('data', (d) => err.push(d));
  child.stdin.on('error', () => {});
  child.once('spawn', () => process.send({ id: m.id, pid: child.pid }));
  child.once('error', (e) => {
    failed = true;
    process.send({ id: m.id, error: { message: String(e && e.message), code: e && e.code } });
  });
  child.once('close', (code, signal) => {
    if (!failed) process.send({ id: m.id, code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err) });
  });
  child.stdin.end(m.input);
});
process.on('disconnect', () => process.exit(0));
`;

/** How long the runner stays without a command before it ends. */
const RUNNER_IDLE_MS = 10_000;

interface Waiting {
  started(pid: number | undefined): void;
  resolve(result: CommandResult): void;
  reject(err: Error): void;
}

class Runner {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private idle: NodeJS.Timeout | undefined;
  private gone: Error | undefined;

  constructor(private readonly onEnd: (runner: Runner) => void) {
    this.child = spawn(process.execPath, ['-e', RUNNER_SOURCE], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      // Buffers travel as bytes, not as JSON arrays of numbers.
      serialization: 'advanced',
      // Nothing of this process's NODE_OPTIONS (loaders, heap sizes): each command gets its own environment.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    this.child.on('message', (message: RunnerMessage) => this.received(message));
    this.child.once('error', (err) => this.end(new Error(`the command runner could not be started: ${err.message}`)));
    this.child.once('exit', (code, signal) => this.end(new Error(`the command runner ended (${signal ?? `exit ${code}`})`)));
    this.quiet();
  }

  run(request: Request): RunningCommand {
    const { command, started } = handle(request.detached);
    const done = new Promise<CommandResult>((resolve, reject) => {
      if (this.gone) return reject(this.gone);
      const id = this.nextId++;
      this.waiting.set(id, { started, resolve, reject });
      this.busy();
      try {
        this.child.send({ id, ...request }, (err) => {
          if (err) this.settle(id, (w) => (w.started(undefined), w.reject(err)));
        });
      } catch (err) {
        this.settle(id, (w) => (w.started(undefined), w.reject(err as Error)));
      }
    });
    return { ...command, done };
  }

  private received(message: RunnerMessage): void {
    const w = this.waiting.get(message.id);
    if (!w) return;
    if ('pid' in message) return w.started(message.pid);
    if ('error' in message) {
      const err = Object.assign(new Error(message.error.message), message.error.code ? { code: message.error.code } : {});
      return this.settle(message.id, (w) => (w.started(undefined), w.reject(err)));
    }
    const { code, signal } = message;
    this.settle(message.id, (w) => w.resolve({ code, signal, stdout: Buffer.from(message.stdout), stderr: Buffer.from(message.stderr) }));
  }

  private settle(id: number, how: (w: Waiting) => void): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    how(w);
    if (this.waiting.size === 0) this.quiet();
  }

  /** Commands waiting: the runner's channel keeps this process alive, as a child of its own would. */
  private busy(): void {
    clearTimeout(this.idle);
    this.idle = undefined;
    this.child.ref();
    this.child.channel?.ref();
  }

  /** None waiting: nothing keeps this process alive for the runner, which ends after a quiet while. */
  private quiet(): void {
    this.child.unref();
    this.child.channel?.unref();
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.stop(), RUNNER_IDLE_MS);
    this.idle.unref();
  }

  private stop(): void {
    if (this.waiting.size > 0) return;
    this.end(new Error('the command runner was stopped'));
    try {
      this.child.disconnect();
    } catch {
      // already gone
    }
  }

  private end(err: Error): void {
    if (this.gone) return;
    this.gone = err;
    clearTimeout(this.idle);
    this.onEnd(this);
    for (const [id] of this.waiting) this.settle(id, (w) => (w.started(undefined), w.reject(err)));
  }
}

type RunnerMessage =
  | { id: number; pid: number }
  | { id: number; error: { message: string; code?: string } }
  | { id: number; code: number | null; signal: NodeJS.Signals | null; stdout: Uint8Array; stderr: Uint8Array };

let current: Runner | undefined;

function runner(): Runner {
  current ??= new Runner((ended) => {
    if (current === ended) current = undefined;
  });
  return current;
}
