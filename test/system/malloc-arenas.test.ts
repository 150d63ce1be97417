/**
 * `npm start` runs with at most two glibc malloc arenas (bin/malloc-arenas.mjs):
 * the process sets MALLOC_ARENA_MAX and replaces itself (same pid) before
 * anything loads, so the server the tests and bench:s3 measure is the one
 * with the limit; a value the user set is kept.
 */
import { readFile } from 'node:fs/promises';
import { startChildService } from '../support/child-service.js';

const environ = async (pid: number) => (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');

test('the service process runs with MALLOC_ARENA_MAX=2, in the pid its parent started', async () => {
  const service = await startChildService();
  try {
    // /proc/<pid>/environ is the environment the process image started with: the replaced one.
    expect(await environ(service.pid)).toContain('MALLOC_ARENA_MAX=2');
    const res = await fetch(`${service.endpoints.gateway}/ipfs/bafkqaaa`);
    expect(res.status).toBe(200);
  } finally {
    await service.stop();
  }
}, 60_000);

test('a MALLOC_ARENA_MAX the user set is kept as it is', async () => {
  const service = await startChildService({ env: { MALLOC_ARENA_MAX: '4' } });
  try {
    const env = await environ(service.pid);
    expect(env).toContain('MALLOC_ARENA_MAX=4');
    expect(env).not.toContain('MALLOC_ARENA_MAX=2');
  } finally {
    await service.stop();
  }
}, 60_000);
