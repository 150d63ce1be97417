/**
 * The deploy worker in AWS, one Lambda for three kinds of invocation:
 *
 *  - an SQS message `{ siteId, deployId }` (batch size 1): claim the deploy
 *    and run the pipeline; a build command is handed to CodeBuild and the
 *    invocation ends with the deploy still building; or a CDN change put
 *    off (`{ kind: 'purge' | 'site-host', ..., attempt }`, delayed by its
 *    back-off): try it again, which puts it off once more if it fails again;
 *    or a deploy notification (`{ kind: 'notification', ... }`): one attempt
 *    of its delivery, put off again with its back-off if it fails;
 *  - a CodeBuild state-change event: take the deploy up where the build
 *    left it (import, pin, publish), or end it with the build's failure;
 *  - the scheduled tick (every minute): end deploys running past any time a
 *    worker could still be moving them, send queued deploys whose message
 *    was lost again, remove build secrets and files left behind by builds
 *    whose end never came (build-leftovers.ts), apply the buckets' lifecycle
 *    rules (a bounded share, core/storage/lifecycle.ts) and collect garbage
 *    (in AWS the only place that does either).
 *
 * A deploy that ends DEPLOYED here (either kind of run) gets its preview
 * image from the preview Lambda, asked without waiting (WorkerOptions.previews):
 * the worker has no browser, so the pipeline's own preview step is not run
 * here but there, on the deploy's DAG (functions/preview/handler.ts).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { CollectionServices, LifecycleServices, Services, SiteEdgeServices } from '../core/services.js';
import type { Deploy } from '../core/data/deploys.js';
import { deployLogKey } from '../core/ports/log-store.js';
import { parseQueueMessage } from '../aws/sqs-deploy-queue.js';
import { retryCdnChange } from '../core/hosting/site-host-map.js';
import { notifyDeploy, sendNotification, type NotificationSendServices, type NotifyServices } from '../core/hosting/notifications.js';
import { collectGarbage, type CollectionResult } from '../core/storage/collect.js';
import { expireByLifecycle, type LifecycleResult } from '../core/storage/lifecycle.js';
import type { PreviewTaker } from '../core/ports/screenshotter.js';
import { isDetached } from '../core/ports/build-runner.js';
import { resumeDeploy, runDeploy, type PipelineOptions, type PipelineServices } from './pipeline.js';
import { buildEndOf, type CodeBuildStateChange } from '../aws/codebuild-runner.js';
import { sweepBuildLeftovers, type LeftoverSweep } from '../aws/build-leftovers.js';
import { DeployLog } from '../core/logs/deploy-log.js';
import { askForPreview } from './steps/announce.js';
import { KEPT_REPOSITORIES, runningLimitMs } from './limits.js';
import { awsBuildRunner, awsPreviewTaker } from '../aws/adapters.js';
import { republishSiteNames } from '../core/hosting/ipns-names.js';
import { retryDnsLinks } from '../core/hosting/dnslink.js';

/** What the worker's messages reach: the pipeline, a notification's delivery, a CDN change put off. */
export type WorkerServices = PipelineServices & NotificationSendServices & SiteEdgeServices;

/** The pipeline's options, and what the worker does after a run. */
export interface WorkerOptions extends PipelineOptions {
  services: WorkerServices;
  /** Asked for the picture of each deploy that ended DEPLOYED; none: no preview images. */
  previews?: PreviewTaker;
}

/** The pipeline as it runs in AWS: builds in CodeBuild, checkouts under /tmp, pictures by the preview Lambda. */
export async function awsPipeline(services: WorkerServices): Promise<WorkerOptions> {
  const { config } = services;
  const runner = await awsBuildRunner(config);
  const previews = await awsPreviewTaker(config, services.logger);
  return {
    services,
    runner,
    previews,
    workspace: join(tmpdir(), 'cairn-builds'),
    // A warm instance deploys the same repositories again: what it fetched stays in its /tmp.
    sources: {
      dir: join(tmpdir(), 'cairn-sources'),
      keep: KEPT_REPOSITORIES.lambda,
      onBackgroundError: (err) => services.logger.warn('a kept repository could not be brought up to date; it starts afresh', { err }),
    },
    buildTimeoutMs: config.build.timeoutMs,
  };
}

/**
 * Runs the deploys the messages name. A message whose deploy is no longer
 * queued (taken already, cancelled, a repeat) is done with; one that failed
 * before its deploy could be ended goes back to the queue, and to the
 * dead-letter queue after a few tries. A CDN change is tried again; one
 * that could not even be put off again goes back to the queue likewise.
 */
export async function takeDeploys(pipeline: WorkerOptions, event: SQSEvent): Promise<SQSBatchResponse> {
  const { services } = pipeline;
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    const parsed = parseQueueMessage(record.body);
    if (!parsed) {
      services.logger.warn('a deploy queue message that names no deploy; dropped', { messageId: record.messageId });
      continue;
    }
    if (parsed.kind === 'notification') {
      const ref = { siteId: parsed.siteId, urlId: parsed.urlId, deliveryId: parsed.deliveryId };
      await sendNotification(services, ref).catch((err: unknown) => {
        services.logger.error('a deploy notification could not be attempted; the queue tries again', { ...ref, err });
        batchItemFailures.push({ itemIdentifier: record.messageId });
      });
      continue;
    }
    if (parsed.kind !== 'deploy') {
      await retryCdnChange(services, parsed).catch((err: unknown) => {
        services.logger.error('a CDN change could not be tried again nor put off', { ...parsed, err });
        batchItemFailures.push({ itemIdentifier: record.messageId });
      });
      continue;
    }
    const message = { siteId: parsed.siteId, deployId: parsed.deployId };
    try {
      const claimed = await services.deploys.claim(message.siteId, message.deployId);
      if (!claimed) {
        services.logger.info('deploy no longer queued; nothing to do', { ...message });
        continue;
      }
      await askForPreview(pipeline.services, pipeline.previews, await runDeploy(pipeline, claimed, new AbortController().signal));
    } catch (err) {
      services.logger.error('a deploy message could not be handled', { ...message, err });
      batchItemFailures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures };
}

/** A CodeBuild build ended: the deploy it built goes on (or ends) from there. */
export async function buildEnded(pipeline: WorkerOptions, event: CodeBuildStateChange): Promise<Deploy | undefined> {
  const { services } = pipeline;
  const ended = buildEndOf(event);
  if (!ended) {
    services.logger.info('a CodeBuild event that ends no deploy build; ignored', {
      buildId: event.detail['build-id'],
      status: event.detail['build-status'],
    });
    return undefined;
  }
  const deploy = await services.deploys.get(ended.siteId, ended.deployId);
  if (!deploy || deploy.status !== 'IN_PROGRESS') {
    // Its deploy ended without it (timed out by the tick, cancelled as it started): its secret and files go now.
    if (isDetached(pipeline.runner))
      await pipeline.runner
        .discard({
          siteId: ended.siteId,
          deployId: ended.deployId,
          hadSecrets: deploy && Object.keys(deploy.build?.secretEnv ?? {}).length > 0,
        })
        .catch((err: unknown) => services.logger.warn("could not remove a build's secret and files", { deployId: ended.deployId, err }));
    return undefined;
  }
  const done = await resumeDeploy(pipeline, deploy, ended.end);
  await askForPreview(services, pipeline.previews, done);
  return done;
}

export interface TickResult {
  queued: number;
  /** Queued deploys whose message was sent again. */
  requeued: string[];
  /** Deploys ended FAILED for running too long. */
  timedOut: string[];
  collected: CollectionResult;
  /** What the buckets' lifecycle rules expired; undefined when the run failed (it goes on at the next tick). */
  lifecycle?: LifecycleResult;
  /** Build secrets and files left behind, removed. */
  leftovers: LeftoverSweep;
  /** Sites' IPNS records signed again (core/hosting/ipns-names.ts). */
  republished: number;
  /** DNSLink records written again after a failed write (core/hosting/dnslink.ts). */
  dnsLinks: number;
}

/** A queued deploy this old has surely lost its message (the worker takes one within seconds). */
const LOST_MESSAGE_MS = 5 * 60_000;

/** What the minute's tick reads and writes: queued and running deploys, the queue, a stuck deploy's log and notifications, collection, sites' IPNS records, DNSLink records to write again. */
export type TickServices = CollectionServices &
  LifecycleServices &
  NotifyServices &
  Pick<
    Services,
    'config' | 'deployLogs' | 'deployQueue' | 'deploys' | 'dnsLink' | 'domainCertificates' | 'domains' | 'ipnsNames' | 'logger' | 'sites'
  >;

export async function runScheduledTick(services: TickServices, batch = 10, now = new Date()): Promise<TickResult> {
  const log = services.logger.child({ fn: 'deploy-worker' });
  const timedOut = await endStuckDeploys(services, now);
  const queued = await services.deploys.listQueued(batch);
  const requeued: string[] = [];
  for (const deploy of queued) {
    if (now.getTime() - Date.parse(deploy.createdAt) < LOST_MESSAGE_MS) continue;
    // A message for a deploy already taken is refused by the claim: sending again is safe.
    await services.deployQueue.enqueued(deploy).then(
      () => requeued.push(deploy.id),
      (err: unknown) => log.warn('could not send a queued deploy again', { deployId: deploy.id, err }),
    );
  }
  if (queued.length) log.info('deploys waiting', { queued: queued.length, requeued });
  else log.info('no deploys waiting; nothing to do', { queued: 0 });
  // After endStuckDeploys: a deploy it just ended no longer keeps its build's secret and files.
  const leftovers = await sweepBuildLeftovers(services, log, now);
  // Before collection, so the blocks of what expires are collected in this tick.
  const dayMs = services.config.storage.lifecycleDaySeconds * 1000;
  const lifecycle = await expireByLifecycle({ ...services, logger: log }, { now, dayMs }).catch((err: unknown) => {
    log.error('the lifecycle run failed; tried again at the next tick', { err });
    return undefined;
  });
  const collected = await collectGarbage({ ...services, logger: log });
  const republished = await republishSiteNames({ ...services, logger: log }, now);
  // Sites' own domains waiting on the CDN (AWS: certificates being issued, tenants being let go).
  await services.domainCertificates.settle?.();
  const dnsLinks = await retryDnsLinks({ ...services, logger: log }, now).catch((err: unknown) => {
    log.warn('writing DNSLink records again failed; tried again at the next tick', { err });
    return 0;
  });
  return { queued: queued.length, requeued, timedOut, collected, leftovers, republished, dnsLinks, ...(lifecycle ? { lifecycle } : {}) };
}

/**
 * Running deploys past their time limit end FAILED ("timed out"), their
 * CodeBuild build stopped: the Lambda that moved them was stopped, or the
 * build's event never came.
 */
async function endStuckDeploys(
  services: NotifyServices & Pick<Services, 'config' | 'deployLogs' | 'deployQueue' | 'deploys' | 'logger'>,
  now: Date,
): Promise<string[]> {
  const ended: string[] = [];
  for (const deploy of await services.deploys.listRunning()) {
    const limit = runningLimitMs(services.config.build.timeoutMs, !!deploy.remoteBuild);
    const since = Date.parse(deploy.startedAt ?? deploy.createdAt);
    if (now.getTime() - since <= limit) continue;
    const reason = `timed out: running for more than ${Math.round(limit / 60_000)} min`;
    if (deploy.remoteBuild && !deploy.remoteBuild.endedAt) {
      await services.deployQueue
        .cancelled(deploy)
        .catch((err: unknown) => services.logger.warn('could not stop the build of a timed-out deploy', { deployId: deploy.id, err }));
    }
    const done = await services.deploys.finish(deploy.siteId, deploy.id, { status: 'FAILED', reason });
    if (!done) continue;
    const log = await DeployLog.continued(services.deployLogs, deployLogKey(deploy.siteId, deploy.id), services.logger);
    log.line(`Failed: ${reason}`);
    await log.close();
    await notifyDeploy(services, 'FAILED', done);
    ended.push(deploy.id);
  }
  return ended;
}
