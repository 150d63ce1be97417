/**
 * Lambda REQUEST authoriser of the storage API's part-staging resource
 * (lib/part-staging.ts): authorize.ts decides; this answers API Gateway in
 * an authoriser's output shape, a policy on the method the request is for
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-lambda-authorizer-output.html).
 * Its result is never cached (every signature differs), so each part is
 * one invocation. A refusal is a Deny, which API Gateway answers with its
 * ACCESS_DENIED gateway response (S3 XML `AccessDenied`, 403, the stack's);
 * the S3 error it stands for is logged and carried in the context.
 */
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { sourceMappedStacks } from '../aws/source-mapped-stacks.js';
import { awsAdapters } from '../aws/adapters.js';
import { loadConfig } from '../core/config.js';
import { createObservability } from '../core/observability.js';
import { createServices, type StorageServices } from '../core/services.js';
import { decideStaging, type StagingDecision } from './authorize.js';

sourceMappedStacks();

const observability = createObservability('part-staging');
let services: Promise<StorageServices> | undefined;

export function policyOf(decision: StagingDecision, methodArn: string): APIGatewayAuthorizerResult {
  const statement = { Action: 'execute-api:Invoke', Effect: decision.allow ? ('Allow' as const) : ('Deny' as const), Resource: methodArn };
  return {
    principalId: decision.allow ? decision.accountId : 'refused',
    policyDocument: { Version: '2012-10-17', Statement: [statement] },
    context: decision.allow
      ? { uploadId: decision.uploadId, partNumber: decision.partNumber }
      : { code: decision.error.code, message: decision.error.message },
  };
}

export async function handler(event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  services ??= (async () => {
    const config = loadConfig();
    return createServices(config, await awsAdapters(config, observability.logger), { logger: observability.logger });
  })().catch((err: unknown) => {
    services = undefined;
    throw err;
  });
  const decision = await decideStaging(await services, event, new Date());
  if (!decision.allow) observability.logger.info('part staging refused', { code: decision.error.code, path: event.path });
  return policyOf(decision, event.methodArn);
}
