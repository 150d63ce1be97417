/**
 * The deploy queue in AWS: triggerDeploy sends `{ siteId, deployId }` to
 * SQS and the deploy worker Lambda takes it (functions/deploy-worker). The
 * deploys table stays the queue's truth: a message only says "claim this
 * one now", so a duplicate is refused by the claim, and a message that
 * never arrived is sent again by the worker's scheduled tick.
 *
 * A cancel of a deploy whose build runs in CodeBuild stops that build at
 * once; its state-change event then ends the deploy CANCELLED.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { CodeBuildClient } from '@aws-sdk/client-codebuild';
import type { Deploy } from '../data/deploys.js';
import type { DeployQueue } from '../ports/deploy-queue.js';

/** The body of a deploy queue message. */
export interface DeployMessage {
  siteId: string;
  deployId: string;
}

export function parseDeployMessage(body: string): DeployMessage | undefined {
  try {
    const parsed = JSON.parse(body) as Partial<DeployMessage>;
    return typeof parsed.siteId === 'string' && typeof parsed.deployId === 'string' ? { siteId: parsed.siteId, deployId: parsed.deployId } : undefined;
  } catch {
    return undefined;
  }
}

export class SqsDeployQueue implements DeployQueue {
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

  async cancelled(deploy: Deploy): Promise<void> {
    // Before its build is recorded the worker sees the cancel itself when it records it.
    if (!deploy.remoteBuild) return;
    const { StopBuildCommand } = await import('@aws-sdk/client-codebuild');
    await this.codeBuild.send(new StopBuildCommand({ id: deploy.remoteBuild.id }));
  }
}
