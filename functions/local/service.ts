/**
 * The whole service on one machine: embedded DynamoDB (unless
 * DYNAMODB_ENDPOINT is set), the IPFS node under the data directory, and the
 * GraphQL API, S3 endpoint and gateway on their own loopback ports.
 */
import { access, constants, mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServerOptions as HttpsOptions } from 'node:https';
import { join } from 'node:path';
import { ConfigError, type Config } from '../core/config.js';
import { createLogger, type Logger } from '../core/logger.js';
import { createNodeServer, listen } from '../core/http/node.js';
import type { HttpHandler } from '../core/http/types.js';
import { ensureTables } from '../core/data/dynamo.js';
import { startEmbeddedDynamo, type EmbeddedDynamo } from './embedded-dynamo/database.js';
import { startHelperThread, type HelperThread } from './helper.js';
import type { FromHashThread, ToHashThread } from '../core/hashing/leaf-hasher.js';
import { createServices, type Services } from '../core/services.js';
import { localAdapters, type LocalParts } from './adapters.js';
import { bootstrapAccounts, type BootstrapResult } from '../core/bootstrap.js';
import { createS3Handler } from '../s3/app.js';
import { createGatewayHandler } from '../gateway/app.js';
import { createGraphqlDoor } from '../graphql/node-door.js';
import { collectGarbage } from '../core/storage/collect.js';
import { expireByLifecycle } from '../core/storage/lifecycle.js';
import { LocalDeployQueue } from './deploy-queue.js';
import { BwrapRunner } from './bwrap-runner.js';
import { removeOrphanedBuilds } from './build-workspace.js';
import { ChromiumScreenshotter } from './chromium-screenshotter.js';
import { LocalSiteCache } from './site-cache.js';
import { siteHitAnswerer, type FastAnswer } from './site-hits.js';
import { canSharePort, startGatewayThreads, type GatewayThreads } from './gateway-threads.js';
import { LocalNotificationOutbox } from './notification-outbox.js';
import { KEPT_REPOSITORIES } from '../deploy-worker/limits.js';
import { mirrorsIdle } from '../deploy-worker/steps/checkout/mirrors.js';
import { republishSiteNames } from '../core/hosting/ipns-names.js';
import { retryDnsLinks } from '../core/hosting/dnslink.js';

export interface LocalService {
  config: Config;
  services: Services;
  bootstrap: BootstrapResult;
  endpoints: { graphql: string; s3: string; gateway: string };
  /** The gateway's threads besides the main thread (CAIRN_GATEWAY_THREADS above 1), if any. */
  gatewayThreads?: GatewayThreads;
  stop(): Promise<void>;
}

async function checkDataDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
  } catch (err) {
    throw new ConfigError(
      'CAIRN_DATA_DIR',
      `"${dir}" is not a writable directory (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}

async function serve(
  name: string,
  variable: string,
  handler: HttpHandler,
  port: number,
  host: string,
  logger: Logger,
  tls?: HttpsOptions,
  first?: FastAnswer,
  reusePort = false,
): Promise<Server> {
  const server = createNodeServer(handler, logger.child({ fn: name }), tls, first);
  try {
    await listen(server, port, host, reusePort);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(
      variable,
      code === 'EADDRINUSE' ? `port ${port} on ${host} is already in use` : `cannot listen on ${host}:${port} (${code ?? err})`,
    );
  }
  return server;
}

export interface LocalStorage {
  config: Config;
  services: Services;
  embedded?: EmbeddedDynamo;
  close(): Promise<void>;
}

/**
 * The data directory opened for this process: the embedded DynamoDB (unless
 * DYNAMODB_ENDPOINT is set), the tables and the IPFS node. The server runs
 * on it, with its own worker, outbox and cache as `parts`; offline tools
 * (the integrity check) give none.
 */
export async function openLocalStorage(config: Config, logger: Logger, parts: Omit<LocalParts, 'hashing'> = {}): Promise<LocalStorage> {
  await checkDataDir(config.dataDir);
  let embedded: EmbeddedDynamo | undefined;
  let helper: HelperThread | undefined;
  const cfg: Config = { ...config };
  if (!cfg.dynamodb.endpoint) {
    helper = startHelperThread();
    try {
      embedded = await startEmbeddedDynamo(helper, cfg.dataDir, '127.0.0.1');
    } catch (err) {
      await helper.close();
      // LevelDB admits one opener: the usual cause is a Cairn already running on this directory.
      throw new ConfigError(
        'CAIRN_DATA_DIR',
        `cannot open the database in "${cfg.dataDir}": is it in use by another Cairn process? Stop that first. (${(err as Error).message.split('\n')[0]})`,
      );
    }
    cfg.dynamodb = { ...cfg.dynamodb, endpoint: embedded.endpoint };
  }
  let services: Services | undefined;
  const close = async () => {
    await services?.close();
    await embedded?.close();
    await helper?.close();
  };
  try {
    // Without the embedded database the process hashes on a thread of its own, started only if needed (adapters.ts).
    const hashing = helper?.start<ToHashThread, FromHashThread>('hashing');
    services = await createServices(cfg, await localAdapters(cfg, { ...parts, hashing }), { logger, dynamo: embedded?.transport });
    await ensureTables(services.db);
    await services.ipfs();
    return { config: cfg, services, embedded, close };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}

export async function startLocalService(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<LocalService> {
  // Built before the services, which hold them, and started once the data directory is this process's.
  const deploys = new LocalDeployQueue(config.build.concurrency, logger.child({ fn: 'deploys' }));
  const notifications = new LocalNotificationOutbox(logger.child({ fn: 'notifications' }));
  const siteCache = new LocalSiteCache(config.sites.cacheBytes);
  // Imported only when ACME is configured: acme-client (with node-forge, axios
  // and the x509 libraries) is 8 MB of heap a server without it never uses.
  const certificates = config.domains.acme
    ? new (await import('./acme-certificates.js')).AcmeCertificates(config.domains.acme, logger.child({ fn: 'certificates' }))
    : undefined;
  const storage = await openLocalStorage(config, logger, {
    deployQueue: deploys,
    notificationOutbox: notifications,
    siteCache,
    domainCertificates: certificates,
  });
  const { config: cfg, services } = storage;
  const servers: Server[] = [];
  const screenshotter = cfg.preview.enabled ? new ChromiumScreenshotter(cfg.preview.chromiumPath) : undefined;
  // What a process stopped mid-deploy left in the workspace goes before anything is made there (the runner's check, the queue's deploys).
  await removeOrphanedBuilds(join(cfg.dataDir, 'builds'), logger.child({ fn: 'deploys' }));
  const runner = new BwrapRunner({
    sandbox: cfg.build.sandbox,
    hide: [cfg.dataDir],
    network: cfg.build.network,
    workspace: join(cfg.dataDir, 'builds'),
    limits: cfg.build.limits,
  });
  let collector: NodeJS.Timeout | undefined;
  let republisher: NodeJS.Timeout | undefined;
  let collecting: Promise<unknown> = Promise.resolve();
  let gatewayThreads: GatewayThreads | undefined;
  const stop = async () => {
    await gatewayThreads?.stop();
    clearInterval(collector);
    clearInterval(republisher);
    await collecting;
    await deploys.stop();
    await mirrorsIdle();
    await runner.settled();
    await notifications.stop();
    await certificates?.stop();
    await screenshotter?.close();
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.closeAllConnections();
            s.close(() => resolve());
          }),
      ),
    );
    await storage.close();
  };
  try {
    const bootstrap = await bootstrapAccounts(services);
    await deploys.start({
      services,
      runner,
      // Inside the data directory: the sandbox hides the rest of it from the build.
      workspace: join(cfg.dataDir, 'builds'),
      sources: {
        dir: join(cfg.dataDir, 'sources'),
        keep: KEPT_REPOSITORIES.local,
        onBackgroundError: (err) => logger.warn('a kept repository could not be brought up to date; it starts afresh', { err }),
      },
      buildTimeoutMs: cfg.build.timeoutMs,
      screenshotter,
      previewTimeoutMs: cfg.preview.timeoutMs,
    });
    notifications.start(services);
    certificates?.start(services);
    const { host, ports } = cfg;
    // A POST to /graphql is answered before the handler's web objects are made (node-door.ts).
    const api = createGraphqlDoor(services);
    servers.push(await serve('graphql', 'CAIRN_API_PORT', api.handler, ports.api, host, logger, undefined, api.fastPath));
    servers.push(await serve('s3', 'CAIRN_S3_PORT', createS3Handler(services), ports.s3, host, logger));
    const gateway = createGatewayHandler(services);
    // Site cache hits are written from the cache before the handler sees them (site-hits.ts).
    const hits = siteHitAnswerer(siteCache, cfg);
    // And on more cores, by threads sharing the port (gateway-threads.ts).
    let threads = cfg.sites.gatewayThreads;
    if (threads > 1 && !canSharePort()) {
      logger.info('the gateway runs on one thread: sharing its port needs Linux and Node 22.12 or later', { node: process.version });
      threads = 1;
    }
    const gatewayServer = await serve('gateway', 'CAIRN_GATEWAY_PORT', gateway, ports.gateway, host, logger, undefined, hits, threads > 1);
    servers.push(gatewayServer);
    if (threads > 1) {
      gatewayThreads = startGatewayThreads({
        count: threads - 1,
        host,
        port: (gatewayServer.address() as AddressInfo).port,
        data: { sites: { domain: cfg.sites.domain }, urls: cfg.urls, logLevel: cfg.logLevel },
        cache: siteCache,
        handler: gateway,
        logger: logger.child({ fn: 'gateway' }),
      });
      await gatewayThreads.ready();
    }
    // Sites' own domains over HTTPS, each with its certificate (none without ACME: every handshake is refused).
    if (cfg.domains.httpsPort !== undefined) {
      const refuse = (_name: string, callback: (err: Error | null) => void) => callback(new Error('no certificate for this name'));
      servers.push(
        await serve(
          'gateway-https',
          'CAIRN_HTTPS_PORT',
          gateway,
          cfg.domains.httpsPort,
          host,
          logger,
          {
            SNICallback: certificates?.sniCallback ?? refuse,
          },
          hits,
        ),
      );
    }
    const gcEvery = cfg.storage.gcIntervalSeconds;
    if (gcEvery > 0) {
      const running = services;
      let busy = false;
      collector = setInterval(() => {
        // A collection slower than the interval is not started twice over.
        if (busy) return;
        busy = true;
        // Lifecycle rules first, so what they expire is collected in the same round.
        collecting = expireByLifecycle(running, { dayMs: cfg.storage.lifecycleDaySeconds * 1000 })
          .catch((err: unknown) => logger.error('the lifecycle run failed; tried again at the next interval', { err }))
          .then(() => collectGarbage(running))
          .catch((err: unknown) => logger.error('garbage collection failed; tried again at the next interval', { err }))
          .finally(() => (busy = false));
      }, gcEvery * 1000);
      collector.unref();
    }
    // Sites' IPNS records are signed again every 4 hours (a record is valid 48), and failed DNSLink writes retried: checked each minute, as the AWS tick does.
    let republishing = false;
    republisher = setInterval(() => {
      if (republishing) return;
      republishing = true;
      republishSiteNames(services)
        .catch((err: unknown) => logger.warn('signing site IPNS records again failed; tried again in a minute', { err }))
        // DNSLink records whose write failed, written again (retryDnsLinks logs each failure itself).
        .then(() => retryDnsLinks(services))
        .catch((err: unknown) => logger.warn('writing DNSLink records again failed; tried again in a minute', { err }))
        .finally(() => (republishing = false));
    }, 60_000);
    republisher.unref();
    return {
      config: cfg,
      services,
      bootstrap,
      endpoints: {
        graphql: `${cfg.urls.baseUrl}/graphql`,
        s3: cfg.urls.storageEndpoint,
        gateway: cfg.urls.gatewayUrl,
      },
      gatewayThreads,
      stop,
    };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}
