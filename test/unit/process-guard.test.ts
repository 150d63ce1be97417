/**
 * A stray rejection is logged and the process goes on (Node's default is to
 * exit: a collection's escaped rejection once became a crash loop).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../support/child-service.js';

const run = promisify(execFile);

const script = (guarded: boolean) => `
  import { createLogger } from ${JSON.stringify(join(ROOT, 'functions/core/logger.ts'))};
  import { logStrayRejections } from ${JSON.stringify(join(ROOT, 'functions/local/process-guard.ts'))};
  ${guarded ? "logStrayRejections(createLogger('error'));" : ''}
  Promise.reject(new Error('nobody handles this'));
  setTimeout(() => console.log('still running'), 200);
`;

const runScript = (guarded: boolean) =>
  run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script(guarded)], { cwd: ROOT }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
  );

test('with the guard a stray rejection is logged and the process keeps running', async () => {
  const out = await runScript(true);
  expect(out.code).toBe(0);
  const lines = out.stdout.trim().split('\n');
  expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'error', err: { message: 'nobody handles this' } });
  expect(lines).toContain('still running');
});

test('without it Node ends the process (what the guard is for)', async () => {
  const out = await runScript(false);
  expect(out.code).not.toBe(0);
  expect(out.stdout).not.toContain('still running');
});
