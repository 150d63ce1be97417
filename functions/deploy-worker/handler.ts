/** Lambda door of the deploy worker, invoked on a schedule by EventBridge Scheduler. */
import middy from '@middy/core';
import { loadConfig } from '../core/config.js';
import { createServices, type Services } from '../core/services.js';
import { runScheduledTick, type TickResult } from './worker.js';

let services: Promise<Services> | undefined;

export const handler = middy(async (): Promise<TickResult> => {
  services ??= createServices(loadConfig());
  return runScheduledTick(await services);
});
