/**
 * The worker's scheduled tick: picks up deploys waiting in the queue, and
 * collects the garbage of deleted objects (in AWS the only place that runs
 * it; the local server has its own timer). The build pipeline itself arrives
 * with the deploy-pipeline issue; until then a tick reports what it found.
 */
import type { Services } from '../core/services.js';
import { collectGarbage, type CollectionResult } from '../core/storage/collect.js';

export interface TickResult {
  queued: number;
  started: string[];
  collected: CollectionResult;
}

export async function runScheduledTick(services: Services, batch = 10): Promise<TickResult> {
  const log = services.logger.child({ fn: 'deploy-worker' });
  const queued = await services.deploys.listQueued(batch);
  if (queued.length === 0) log.info('no deploys waiting; nothing to do', { queued: 0 });
  else log.info('deploys waiting', { queued: queued.length, deployIds: queued.map((d) => d.id) });
  const collected = await collectGarbage({ ...services, logger: log });
  return { queued: queued.length, started: [], collected };
}
