/** Lambda door of the gateway (Function URL events). */
import { loadConfig } from '../core/config.js';
import { lambdaHttpHandler } from '../core/http/lambda.js';
import { createLogger } from '../core/logger.js';
import { createServices } from '../core/services.js';
import { createGatewayHandler } from './app.js';

export const handler = lambdaHttpHandler(async () => {
  const config = loadConfig();
  // Every line this function logs, the services' included, names it.
  const services = await createServices(config, createLogger(config.logLevel, { fn: 'gateway' }));
  return { handler: createGatewayHandler(services, services.logger), logger: services.logger };
});
