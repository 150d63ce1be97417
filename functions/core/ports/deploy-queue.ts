/**
 * How a deploy recorded as queued gets run: locally the server's own worker
 * (functions/local/deploy-queue.ts) is woken; in AWS a message goes to SQS
 * and the deploy worker Lambda takes it. The queue's truth is the deploys
 * table (a deploy is queued while its record says so); this port only says
 * "look now", so a lost wake-up delays a deploy until the next poll, never
 * loses it.
 */
import type { Deploy } from '../data/deploys.js';

export interface DeployQueue {
  /** A deploy was recorded as queued. */
  enqueued(deploy: Deploy): Promise<void>;
  /** A running deploy was asked to stop: stop its build now if this process can. */
  cancelled(deploy: Deploy): Promise<void>;
}

/** A queue that only records (the deploys table): workers find deploys by polling. */
export const pollingQueue: DeployQueue = {
  enqueued: async () => {},
  cancelled: async () => {},
};
