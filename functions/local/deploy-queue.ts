/**
 * The deploy worker of the local server: runs queued deploys in order,
 * CAIRN_BUILD_CONCURRENCY at a time, in this process. The deploys table is
 * the queue (a restart loses nothing queued); triggerDeploy wakes the
 * worker at once and a poll catches anything a wake-up missed. At start,
 * deploys a previous process was running end FAILED ("interrupted by a
 * restart"): their builds died with it.
 */
import type { Deploy } from '../core/data/deploys.js';
import type { DeployQueue } from '../core/ports/deploy-queue.js';
import type { Logger } from '../core/logger.js';
import { runDeploy, type PipelineOptions } from '../deploy-worker/pipeline.js';
import { DeployLog } from '../core/logs/deploy-log.js';
import { deployLogKey } from '../core/ports/log-store.js';
import { notifyDeploy } from '../core/hosting/notifications.js';
import { Poller } from './poller.js';

const POLL_MS = 2000;

export class LocalDeployQueue implements DeployQueue {
  private readonly running = new Map<string, { siteId: string; controller: AbortController; done: Promise<unknown> }>();
  private readonly poller = new Poller(
    () => this.pump(),
    (err) => this.logger.error('the deploy queue could not look for work; it looks again shortly', { err }),
  );

  /** Set by start: the services are built with this queue in them, so it gets them after. */
  private pipeline?: PipelineOptions;

  constructor(
    private readonly concurrency: number,
    private readonly logger: Logger,
  ) {}

  /** Ends what a previous process left running, then takes queued deploys through `pipeline`. */
  async start(pipeline: PipelineOptions): Promise<void> {
    this.pipeline = pipeline;
    const { deploys } = pipeline.services;
    for (const deploy of await deploys.listRunning()) {
      const ended = await deploys.finish(deploy.siteId, deploy.id, { status: 'FAILED', reason: 'interrupted by a restart of the service' });
      if (ended) {
        const log = await DeployLog.continued(pipeline.services.deployLogs, deployLogKey(deploy.siteId, deploy.id), this.logger);
        log.line('Failed: interrupted by a restart of the service');
        await log.close();
        // The log's last line first, then the team is told (recorded only: never fails the start).
        await notifyDeploy(pipeline.services, 'FAILED', ended);
      }
    }
    this.poller.start(POLL_MS);
  }

  async enqueued(): Promise<void> {
    // Before start the deploy waits in the table; start's first look finds it.
    if (this.pipeline) this.poller.wake();
  }

  async cancelled(deploy: Deploy): Promise<void> {
    this.running.get(deploy.id)?.controller.abort();
  }

  private async pump(): Promise<void> {
    const pipeline = this.pipeline;
    if (!pipeline) return;
    const { deploys } = pipeline.services;
    // Cancels asked through another process reach a running build here.
    for (const [id, run] of this.running) {
      const deploy = await deploys.get(run.siteId, id);
      // A deploy that ended DEPLOYED is still taking its preview image; one
      // cancelled, ended otherwise, or deleted with its site stops.
      const stop = deploy?.status === 'IN_PROGRESS' ? deploy.cancelRequested === true : deploy?.status !== 'DEPLOYED';
      if (stop) run.controller.abort();
    }
    const free = this.concurrency - this.running.size;
    if (free <= 0) return;
    for (const queued of await deploys.listQueued(free + this.running.size + 10)) {
      if (this.running.size >= this.concurrency) break;
      if (this.running.has(queued.id)) continue;
      const claimed = await deploys.claim(queued.siteId, queued.id);
      if (!claimed) continue;
      const controller = new AbortController();
      const done = runDeploy(pipeline, claimed, controller.signal)
        .catch((err: unknown) => this.logger.error('a deploy ended on an unexpected error', { deployId: claimed.id, err }))
        .finally(() => {
          this.running.delete(claimed.id);
          this.poller.wake();
        });
      this.running.set(claimed.id, { siteId: claimed.siteId, controller, done });
    }
  }

  /** Stops taking work and cancels what runs (they end CANCELLED... or FAILED at the next start if the process dies first). */
  async stop(): Promise<void> {
    await this.poller.stop();
    for (const run of this.running.values()) run.controller.abort();
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }
}
