/** Lambda door of the S3-compatible API (Function URL / HTTP API events). */
import { loadConfig } from '../core/config.js';
import { lambdaHttpHandler } from '../core/http/lambda.js';
import { createLogger } from '../core/logger.js';
import { createServices } from '../core/services.js';
import { createS3Handler } from './app.js';

export const handler = lambdaHttpHandler(async () => {
  const config = loadConfig();
  // Every line this function logs, createS3Handler's included, names it.
  const services = await createServices(config, createLogger(config.logLevel, { fn: 's3' }));
  return { handler: createS3Handler(services), logger: services.logger };
});
