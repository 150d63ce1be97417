/**
 * The command runner (functions/core/run-command.ts): commands start in a
 * process of its own, not by forking this one; they get their input,
 * environment and folder, give back what they printed and how they ended;
 * kill() reaches them (and their group); a runner that dies fails only
 * the commands it held, and the next command starts a new one.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { commandOutput, CommandError, runCommand } from '../../functions/core/run-command.js';
import { ROOT } from '../support/child-service.js';

/** The parent process id of `pid`, from /proc. */
const parentOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

let dir: string;
beforeAll(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'cairn-run-command-')));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('a command gets its input, environment and folder, and gives back its output, errors and exit', async () => {
  const result = await runCommand('/bin/sh', ['-c', 'cat; echo "$GREETING" in "$(pwd)"; echo oops >&2; exit 3'], {
    cwd: dir,
    env: { PATH: '/usr/bin:/bin', GREETING: 'hello' },
    input: 'from stdin\n',
  }).done;
  expect(result).toEqual({
    code: 3,
    signal: null,
    stdout: Buffer.from(`from stdin\nhello in ${dir}\n`),
    stderr: Buffer.from('oops\n'),
  });
});

test("it is started by the runner process, not by forking this one; the runner's commands share it", async () => {
  const parents = await Promise.all(
    Array.from({ length: 3 }, async () => Number((await commandOutput('/bin/sh', ['-c', 'echo $PPID'])).stdout.toString())),
  );
  expect(parents[0]).not.toBe(process.pid);
  expect(parentOf(parents[0]!)).toBe(process.pid);
  expect(new Set(parents).size).toBe(1);
  // Bytes, not text: output that is not UTF-8 arrives as it was.
  const bytes = await commandOutput('/usr/bin/printf', ['\\377\\000\\376']);
  expect([...bytes.stdout]).toEqual([0xff, 0x00, 0xfe]);
});

test('with CAIRN_COMMAND_RUNNER=direct (and in Lambda) this process starts it', async () => {
  process.env.CAIRN_COMMAND_RUNNER = 'direct';
  try {
    expect(Number((await commandOutput('/bin/sh', ['-c', 'echo $PPID'])).stdout.toString())).toBe(process.pid);
  } finally {
    delete process.env.CAIRN_COMMAND_RUNNER;
  }
});

test("in Lambda (AWS_LAMBDA_FUNCTION_NAME set when the process starts) the function's own process starts it", async () => {
  // A process of its own: this module reads the variable once, as it loads.
  const script = `
    const { commandOutput } = await import(${JSON.stringify(join(ROOT, 'functions/core/run-command.ts'))});
    const parent = Number((await commandOutput('/bin/sh', ['-c', 'echo $PPID'])).stdout.toString());
    console.log(JSON.stringify({ self: process.pid, parent }));
  `;
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/' };
  const ask = async (extra: Record<string, string>) => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { ...env, ...extra },
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as { self: number; parent: number };
  };
  const [lambda, local] = await Promise.all([ask({ AWS_LAMBDA_FUNCTION_NAME: 'cairn-s3' }), ask({})]);
  expect(lambda.parent).toBe(lambda.self);
  expect(local.parent).not.toBe(local.self);
});

test('set after this module loaded (Lambda handlers loaded beside a local server, as the tests do), commands still go through the runner', async () => {
  process.env.AWS_LAMBDA_FUNCTION_NAME = 'cairn-test';
  try {
    const parent = Number((await commandOutput('/bin/sh', ['-c', 'echo $PPID'])).stdout.toString());
    expect(parent).not.toBe(process.pid);
    expect(parentOf(parent)).toBe(process.pid);
  } finally {
    delete process.env.AWS_LAMBDA_FUNCTION_NAME;
  }
});

test('a command that cannot start rejects with its error; a failing one is a CommandError with its last words', async () => {
  await expect(runCommand(join(dir, 'no-such-command'), []).done).rejects.toMatchObject({ code: 'ENOENT' });
  const failed = await commandOutput('/bin/sh', ['-c', 'echo first >&2; echo last >&2; exit 2']).catch((e: unknown) => e);
  expect(failed).toBeInstanceOf(CommandError);
  expect((failed as Error).message).toBe('/bin/sh failed (exit 2): first / last');
});

test("kill() ends a detached command's whole group, even when asked before it has started", async () => {
  // Asked at once: the runner has not said the pid yet.
  const early = runCommand('/bin/sleep', ['30'], { detached: true });
  early.kill('SIGKILL');
  expect((await early.done).signal).toBe('SIGKILL');
  let helper = 0;
  const again = runCommand('/bin/sh', ['-c', 'sleep 30 & echo $! > pid; wait'], { detached: true, cwd: dir });
  for (const until = Date.now() + 10_000; !helper && Date.now() < until;) {
    helper = Number(readFileSync(join(dir, 'pid'), { flag: 'a+' }).toString()) || 0;
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(alive(helper)).toBe(true);
  again.kill('SIGKILL');
  expect((await again.done).signal).toBe('SIGKILL');
  for (const until = Date.now() + 5_000; alive(helper) && parentOf(helper) !== 1 && Date.now() < until;) {
    await new Promise((r) => setTimeout(r, 20));
  }
  // Killed with its group: gone (or, for a moment, a zombie its new parent reaps).
  expect(!alive(helper) || readFileSync(`/proc/${helper}/stat`, 'utf8').split(') ')[1]!.startsWith('Z')).toBe(true);
});

test('an aborted commandOutput ends the command and rejects with the reason', async () => {
  const controller = new AbortController();
  const waiting = commandOutput('/bin/sleep', ['30'], { signal: controller.signal });
  setTimeout(() => controller.abort(new Error('the deploy was cancelled')), 100);
  const started = Date.now();
  await expect(waiting).rejects.toThrow('the deploy was cancelled');
  expect(Date.now() - started).toBeLessThan(10_000);
});

test('a runner that dies fails the commands it held, and the next command starts a new one', async () => {
  const held = runCommand('/bin/sleep', ['30']);
  const runnerPid = Number((await commandOutput('/bin/sh', ['-c', 'echo $PPID'])).stdout.toString());
  process.kill(runnerPid, 'SIGKILL');
  await expect(held.done).rejects.toThrow(/the command runner ended \(SIGKILL\)/);
  held.kill('SIGKILL'); // the sleep it had started, left without a parent
  const next = Number((await commandOutput('/bin/sh', ['-c', 'echo $PPID'])).stdout.toString());
  expect(next).not.toBe(runnerPid);
  expect(parentOf(next)).toBe(process.pid);
});
