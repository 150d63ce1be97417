/**
 * The deploy worker's scheduled tick: picks up deploys waiting in the queue.
 * The build pipeline itself arrives with the deploy-pipeline issue; until
 * then a tick reports what it found.
 */
import type { Services } from '../core/services.js';

export interface TickResult {
  queued: number;
  started: string[];
}

export async function runScheduledTick(services: Services, batch = 10): Promise<TickResult> {
  const log = services.logger.child({ fn: 'deploy-worker' });
  const queued = await services.deploys.listQueued(batch);
  if (queued.length === 0) {
    log.info('no deploys waiting; nothing to do', { queued: 0 });
    return { queued: 0, started: [] };
  }
  log.info('deploys waiting', { queued: queued.length, deployIds: queued.map((d) => d.id) });
  return { queued: queued.length, started: [] };
}
