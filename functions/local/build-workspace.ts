/**
 * The deploy workspace (`<data directory>/builds`) at start-up: what a
 * process that stopped mid-deploy left there is removed.
 *
 * Each deploy turn makes its own directory there (pipeline.ts, workDir:
 * `<deploy id>-XXXXXX`, holding its checkout and, beside it, its build's
 * overlay layer, build-layer.ts) and removes it when the turn ends; the
 * runner's start-up check leaves `.cairn-overlay-check-*` likewise. A
 * crash, a kill or a power cut ends the turn without that, and nothing
 * else would ever remove those checkouts and layers: a build's gigabytes
 * stay on disk for good. At start-up no deploy of this data directory is
 * running (the embedded database admits one process; the queue has not
 * started), so none of it is owned and all of it goes. The kept repository
 * mirrors and snapshots that make the next deploy fast live in a directory
 * of their own (`<data directory>/sources`, checkout.ts) and are not
 * touched.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { removeTree } from './build-layer.js';
import type { Logger } from '../core/logger.js';

/** Removes every entry of the workspace (see above); returns how many there were. A failure is logged, never thrown: the service starts all the same. */
export async function removeOrphanedBuilds(workspace: string, logger: Logger): Promise<number> {
  const entries = await readdir(workspace).catch(() => [] as string[]);
  let removed = 0;
  for (const name of entries) {
    try {
      // A build may have left folders without its owner's rights (chmod 000): opened first, as a layer is.
      await removeTree(join(workspace, name));
      removed++;
    } catch (err) {
      logger.warn('could not remove what a stopped deploy left in the workspace', { path: join(workspace, name), err });
    }
  }
  if (removed > 0) logger.info('removed what stopped deploys left in the build workspace', { workspace, removed });
  return removed;
}
