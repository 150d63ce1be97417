/**
 * The deploy workspace at start-up: what a process stopped mid-deploy left
 * there (checkouts, build layers, folders a build locked) is removed when
 * the service starts, and the kept repository mirrors are not.
 */
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeOrphanedBuilds } from '../../functions/local/build-workspace.js';
import { createLogger } from '../../functions/core/logger.js';

/** A data directory as a crash mid-deploy leaves it, with a kept mirror beside the workspace. */
async function crashedDataDir(): Promise<{ dataDir: string; builds: string; orphans: string[]; mirrorHead: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cairn-orphans-'));
  const builds = join(dataDir, 'builds');
  // A deploy turn's directory: its checkout, and its build's layer with folders the build made unreadable and unwritable.
  const turn = join(builds, 'dep-1-AbC123');
  await mkdir(join(turn, 'checkout', 'dist'), { recursive: true });
  await writeFile(join(turn, 'checkout', 'dist', 'index.html'), 'built');
  const locked = join(turn, 'checkout.layer-XyZ', 'upper', 'node_modules', 'locked');
  await mkdir(locked, { recursive: true });
  await writeFile(join(locked, 'file'), 'x');
  await chmod(locked, 0o000);
  await chmod(join(turn, 'checkout.layer-XyZ', 'upper'), 0o500);
  // The runner's check of the sandbox (a deploy's, before its build), cut short.
  await mkdir(join(builds, '.cairn-overlay-check-old', 'lower'), { recursive: true });
  // A kept mirror (checkout.ts), in the sources directory beside the workspace.
  const mirrorHead = join(dataDir, 'sources', 'example.com-site-main', 'git', 'HEAD');
  await mkdir(join(mirrorHead, '..'), { recursive: true });
  await writeFile(mirrorHead, 'ref: refs/heads/main\n');
  return { dataDir, builds, orphans: ['dep-1-AbC123', '.cairn-overlay-check-old'], mirrorHead };
}

test('removeOrphanedBuilds removes every entry of the workspace, locked folders included, and says how many', async () => {
  const { dataDir, builds, mirrorHead } = await crashedDataDir();
  try {
    const lines: string[] = [];
    const logger = createLogger('info', {}, (line) => lines.push(line));
    expect(await removeOrphanedBuilds(builds, logger)).toBe(2);
    expect(await readdir(builds)).toEqual([]);
    expect(await readFile(mirrorHead, 'utf8')).toBe('ref: refs/heads/main\n');
    expect(lines.join('\n')).toMatch(/removed what stopped deploys left/);
    // No workspace yet (a first start): nothing to do, nothing thrown.
    expect(await removeOrphanedBuilds(join(dataDir, 'none-here'), logger)).toBe(0);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('orphaned deploy workspaces are gone after start; a kept mirror stays', async () => {
  const { dataDir, builds, orphans, mirrorHead } = await crashedDataDir();
  try {
    // Imported here: the whole service (Helia and all) is loaded for this test alone.
    const { startTestService } = await import('../support/service.js');
    const service = await startTestService({}, dataDir);
    try {
      const left = await readdir(builds).catch(() => [] as string[]);
      for (const name of orphans) expect(left).not.toContain(name);
      expect(await readFile(mirrorHead, 'utf8')).toBe('ref: refs/heads/main\n');
    } finally {
      await service.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
