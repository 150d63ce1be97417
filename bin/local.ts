/**
 * `npm start`: the whole service on this machine, with embedded defaults.
 */
import { ConfigError, loadConfig } from '../functions/core/config.js';
import { createLogger } from '../functions/core/logger.js';
import { startLocalService } from '../functions/local/service.js';
import { logStrayRejections } from '../functions/local/process-guard.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  logStrayRejections(logger);
  const service = await startLocalService(config, logger);
  const { endpoints, bootstrap } = service;
  const lines = [
    'Cairn is running.',
    `  GraphQL API   ${endpoints.graphql}`,
    `  S3 endpoint   ${endpoints.s3}   (region ${config.region}, path-style)`,
    `  Gateway       ${endpoints.gateway}/ipfs/<cid>`,
    `  Data          ${config.dataDir}`,
  ];
  if (bootstrap.generated) {
    lines.push(
      '',
      'Default account created. These secrets are shown once; keep them:',
      `  access key id      ${bootstrap.generated.accessKeyId}`,
      `  secret access key  ${bootstrap.generated.secretAccessKey}`,
      `  API key (GraphQL)  ${bootstrap.generated.apiToken}`,
      `  default bucket     ${bootstrap.generated.name}-bucket`,
    );
  }
  if (bootstrap.welcome) {
    lines.push(
      '',
      'To sign in to the web app as the default account’s owner, open this link once and choose your e-mail and password',
      `(it works once, until ${bootstrap.welcome.expiresAt.slice(0, 16).replace('T', ' ')} UTC):`,
      `  ${bootstrap.welcome.url}`,
    );
  }
  process.stderr.write(lines.join('\n') + '\n');
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    service.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`cairn: ${err.message}\n`);
  } else {
    process.stderr.write(`cairn: failed to start: ${(err as Error)?.stack ?? err}\n`);
  }
  process.exit(1);
});
