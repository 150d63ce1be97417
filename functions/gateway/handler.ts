/** Lambda door of the gateway (Function URL events). */
import { loadConfig } from '../core/config.js';
import { lambdaHttpHandler } from '../core/http/lambda.js';
import { createServices } from '../core/services.js';
import { createGatewayHandler } from './app.js';

export const handler = lambdaHttpHandler(async () => {
  const services = await createServices(loadConfig());
  return { handler: createGatewayHandler(services), logger: services.logger.child({ fn: 'gateway' }) };
});
