/** Lambda door of the S3-compatible API (Function URL / HTTP API events). */
import { loadConfig } from '../core/config.js';
import { lambdaHttpHandler } from '../core/http/lambda.js';
import { createServices } from '../core/services.js';
import { createS3Handler } from './app.js';

export const handler = lambdaHttpHandler(async () => {
  const services = await createServices(loadConfig());
  return { handler: createS3Handler(services), logger: services.logger.child({ fn: 's3' }) };
});
