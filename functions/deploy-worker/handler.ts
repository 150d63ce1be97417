/**
 * Lambda door of the deploy worker: SQS messages (deploys to run),
 * CodeBuild state changes (builds that ended) and the EventBridge Scheduler
 * tick, told apart by their shape (worker.ts). Deploys that end DEPLOYED
 * are handed to the preview function when the stack has one.
 */
import { sourceMappedStacks } from '../aws/source-mapped-stacks.js';
import middy from '@middy/core';
import type { SQSEvent } from 'aws-lambda';
import { loadConfig } from '../core/config.js';
import { createObservability, observe } from '../core/observability.js';
import { createServices, type Services } from '../core/services.js';
import { awsAdapters } from '../aws/adapters.js';
import { onceUntilFailure } from '../core/once-until-failure.js';
import { isCodeBuildStateChange } from '../aws/codebuild-runner.js';
import { awsPipeline, buildEnded, runScheduledTick, takeDeploys, type WorkerOptions } from './worker.js';
import { mirrorsIdle } from './steps/checkout/mirror-holds.js';

// Stack traces in the sources' lines, the map read only when one is printed (lib/functions.ts says why).
sourceMappedStacks();

const observability = createObservability('deploy-worker');

/** The container's services and pipeline, built on its first event; built again after a failure (see onceUntilFailure). */
const ready = onceUntilFailure(async (): Promise<{ services: Services; pipeline: WorkerOptions }> => {
  const config = loadConfig();
  const logger = observability.logger;
  const services = await createServices(config, await awsAdapters(config, logger), { logger });
  return { services, pipeline: await awsPipeline(services) };
});

const isSqsEvent = (event: unknown): event is SQSEvent =>
  Array.isArray((event as SQSEvent | null)?.Records) && (event as SQSEvent).Records.every((r) => r.eventSource === 'aws:sqs');

export const handler = observe(
  middy(async (event: unknown) => {
    const { services, pipeline } = await ready();
    if (isSqsEvent(event)) {
      const answer = await takeDeploys(pipeline, event);
      // Kept repositories still in use are let go before Lambda freezes the instance.
      await mirrorsIdle();
      return answer;
    }
    if (isCodeBuildStateChange(event)) {
      await buildEnded(pipeline, event);
      return undefined;
    }
    return runScheduledTick(services);
  }),
  observability,
);
