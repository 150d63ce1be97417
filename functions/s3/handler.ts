/**
 * Lambda door of the S3-compatible API: API Gateway REST API events (the
 * stack's StorageApi, responses streamed) and HTTP API / Function URL
 * events, with the observability stack (Powertools logs with the request
 * id, the cold-start metric, the handler's trace, one line per invocation).
 */
import { sourceMappedStacks } from '../aws/source-mapped-stacks.js';
import { loadConfig } from '../core/config.js';
import { lambdaHttpHandler } from '../core/http/lambda.js';
import { createObservability, observe } from '../core/observability.js';
import { createServices } from '../core/services.js';
import { awsAdapters } from '../aws/adapters.js';
import { createS3Handler } from './app.js';

// Stack traces in the sources' lines, the map read only when one is printed (lib/functions.ts says why).
sourceMappedStacks();

const observability = createObservability('s3');

export const handler = observe(
  lambdaHttpHandler(async () => {
    const config = loadConfig();
    // Every line this function logs, createS3Handler's included, names it (fn) and its request.
    const logger = observability.logger;
    const services = await createServices(config, await awsAdapters(config, logger), { logger });
    // Requests through the storage distribution carry its edge key: then the viewer's address is the request's.
    return { handler: createS3Handler(services), logger: services.logger, edgeKey: config.edgeKey };
  }),
  observability,
);
