/**
 * The deploy queue in AWS: triggerDeploy sends `{ siteId, deployId }` to
 * SQS and the deploy worker Lambda takes it (functions/deploy-worker). The
 * deploys table stays the queue's truth: a message only says "claim this
 * one now", so a duplicate is refused by the claim, and a message that
 * never arrived is sent again by the worker's scheduled tick.
 *
 * A cancel of a deploy whose build runs in CodeBuild stops that build at
 * once; its state-change event then ends the deploy CANCELLED.
 *
 * The same queue carries the CDN changes put off (ports/site-cache.ts
 * `CdnRetries`): a purge CloudFront refused (15 wildcard invalidations in
 * flight at most) or a host-map write that failed, as a message delayed by
 * its back-off (cdn-retry.ts), which the worker tries again.
 *
 * And deploy notifications (ports/notifications.ts): `{ kind: 'notification',
 * siteId, urlId, deliveryId }`, delayed by the delivery's back-off; the
 * worker makes the attempt (hosting/notifications.ts sendNotification).
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { CodeBuildClient } from '@aws-sdk/client-codebuild';
import type { Deploy } from '../core/data/deploys.js';
import type { DeployQueue } from '../core/ports/deploy-queue.js';
import type { CdnRetries, CdnRetry } from '../core/ports/site-cache.js';
import type { NotificationOutbox } from '../core/ports/notifications.js';
import type { DeliveryRef } from '../core/data/notification-deliveries.js';
import { SQS_MAX_DELAY_SECONDS } from '../core/hosting/cdn-retry.js';

/** The body of a deploy queue message (no `kind`: the shape messages had before the queue carried anything else). */
export interface DeployMessage {
  siteId: string;
  deployId: string;
}

/** Any message on the deploy queue: a deploy to run, or a CDN change to try again. */
export type QueueMessage = ({ kind: 'deploy' } & DeployMessage) | CdnRetry | ({ kind: 'notification' } & DeliveryRef);

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const isAttempt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

export function parseQueueMessage(body: string): QueueMessage | undefined {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (!parsed || typeof parsed !== 'object') return undefined;
  const { kind, siteId, deployId, label, attempt, urlId, deliveryId } = parsed;
  if ((kind === undefined || kind === 'deploy') && isString(siteId) && isString(deployId)) return { kind: 'deploy', siteId, deployId };
  if (kind === 'purge' && isString(siteId) && isAttempt(attempt)) return { kind, siteId, attempt };
  if (kind === 'site-host' && isString(label) && isAttempt(attempt)) return { kind, label, attempt };
  if (kind === 'notification' && isString(siteId) && isString(urlId) && isString(deliveryId)) return { kind, siteId, urlId, deliveryId };
  return undefined;
}

export function parseDeployMessage(body: string): DeployMessage | undefined {
  const message = parseQueueMessage(body);
  return message?.kind === 'deploy' ? { siteId: message.siteId, deployId: message.deployId } : undefined;
}

export class SqsDeployQueue implements DeployQueue, CdnRetries, NotificationOutbox {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly codeBuild: CodeBuildClient,
  ) {}

  async enqueued(deploy: Deploy): Promise<void> {
    const { SendMessageCommand } = await import('@aws-sdk/client-sqs');
    const message: DeployMessage = { siteId: deploy.siteId, deployId: deploy.id };
    await this.sqs.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(message) }));
  }

  async later(retry: CdnRetry, delaySeconds: number): Promise<void> {
    const { SendMessageCommand } = await import('@aws-sdk/client-sqs');
    const DelaySeconds = Math.max(0, Math.min(SQS_MAX_DELAY_SECONDS, Math.round(delaySeconds)));
    await this.sqs.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(retry), DelaySeconds }));
  }

  async queued(delivery: DeliveryRef, delaySeconds: number): Promise<void> {
    const { SendMessageCommand } = await import('@aws-sdk/client-sqs');
    const DelaySeconds = Math.max(0, Math.min(SQS_MAX_DELAY_SECONDS, Math.round(delaySeconds)));
    const message = { kind: 'notification', siteId: delivery.siteId, urlId: delivery.urlId, deliveryId: delivery.deliveryId };
    await this.sqs.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(message), DelaySeconds }));
  }

  async cancelled(deploy: Deploy): Promise<void> {
    // Before its build is recorded the worker sees the cancel itself when it records it.
    if (!deploy.remoteBuild) return;
    const { StopBuildCommand } = await import('@aws-sdk/client-codebuild');
    await this.codeBuild.send(new StopBuildCommand({ id: deploy.remoteBuild.id }));
  }
}
