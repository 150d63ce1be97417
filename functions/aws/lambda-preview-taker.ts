/**
 * The PreviewTaker of the deploy worker in AWS: an asynchronous invocation
 * (InvocationType Event) of the preview Lambda with `{ siteId, deployId,
 * root }`. Lambda queues the event and answers 202 at once; the worker
 * never waits for the picture, and the deploy stays DEPLOYED whatever
 * becomes of it.
 */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { PreviewInput, PreviewTaker } from '../core/ports/screenshotter.js';

export class LambdaPreviewTaker implements PreviewTaker {
  readonly name: string;

  constructor(
    private readonly lambda: LambdaClient,
    private readonly functionName: string,
  ) {
    this.name = `the preview function ${functionName}`;
  }

  async deployed(deploy: PreviewInput): Promise<void> {
    const input: PreviewInput = { siteId: deploy.siteId, deployId: deploy.deployId, root: deploy.root };
    const out = await this.lambda.send(
      new InvokeCommand({
        FunctionName: this.functionName,
        InvocationType: 'Event',
        Payload: new TextEncoder().encode(JSON.stringify(input)),
      }),
    );
    if (out.StatusCode !== 202) throw new Error(`${this.name} did not take the request (status ${out.StatusCode ?? 'none'})`);
  }
}
