/** Lambda door of the gateway (Function URL events), streaming, with the observability stack. */
import { sourceMappedStacks } from '../aws/source-mapped-stacks.js';
import { loadConfig } from '../core/config.js';
import { lambdaHttpHandler } from '../core/http/lambda.js';
import { createObservability, observe } from '../core/observability.js';
import { createServices } from '../core/services.js';
import { awsAdapters } from '../aws/adapters.js';
import { createGatewayHandler } from './app.js';

// Stack traces in the sources' lines, the map read only when one is printed (lib/functions.ts says why).
sourceMappedStacks();

const observability = createObservability('gateway');

export const handler = observe(
  lambdaHttpHandler(async () => {
    const config = loadConfig();
    // Every line this function logs, the services' included, names it (fn) and its request.
    const logger = observability.logger;
    const services = await createServices(config, await awsAdapters(config, logger), { logger });
    return { handler: createGatewayHandler(services, services.logger), logger: services.logger };
  }),
  observability,
);
