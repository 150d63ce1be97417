/**
 * The composition root shared by every entry point: builds the stores, the
 * sealer and (lazily) the IPFS node from one Config. Each door calls this
 * once per process (a Lambda container, or the local server).
 */
import { join } from 'node:path';
import type { Config } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { createDatabase, type Database, type InProcessTransport } from './data/dynamo.js';
import { AccountStore } from './data/accounts.js';
import { TeamStore } from './data/teams.js';
import { ApiKeyStore } from './data/api-keys.js';
import { StorageKeyStore } from './data/storage-keys.js';
import { SigningKeyStore } from './data/signing-keys.js';
import { BucketStore } from './data/buckets.js';
import { ObjectStore } from './data/objects.js';
import { UploadStore } from './data/uploads.js';
import { SiteStore } from './data/sites.js';
import { DeployStore } from './data/deploys.js';
import { SiteSecretStore } from './data/site-secrets.js';
import { HookDeliveryStore } from './data/hook-deliveries.js';
import { NotificationUrlStore } from './data/notification-urls.js';
import { NotificationDeliveryStore } from './data/notification-deliveries.js';
import { recordOnlyOutbox, type NotificationOutbox } from './ports/notifications.js';
import { createSealer } from '../aws/kms-sealer.js';
import { createIpfsNode, type IpfsNode } from './ipfs/node.js';
import type { UploadGate } from './ports/upload-gate.js';
import { LocalUploadGate } from '../local/upload-gate.js';
import { DynamoUploadGate } from '../aws/dynamo-gate.js';
import type { DigestName } from './hashing/digests.js';
import type { LogStore } from './ports/log-store.js';
import { pollingQueue, type DeployQueue } from './ports/deploy-queue.js';
import { noCdn, noSiteHostMap, type CdnPurger, type CdnRetries, type SiteCache, type SiteHostMap } from './ports/site-cache.js';
import { FileLogStore } from '../local/file-log-store.js';
import { inlineLeafHasher, ownHashThread, RemoteHashing, type HashChannel, type LeafHasher } from './hashing/leaf-hasher.js';

export interface Services {
  config: Config;
  logger: Logger;
  db: Database;
  accounts: AccountStore;
  /** Teams and their members. */
  teams: TeamStore;
  /** Teams' keys for the GraphQL API. */
  apiKeys: ApiKeyStore;
  /** Accounts' key pairs for the S3 API. */
  storageKeys: StorageKeyStore;
  /** Keys the service signs its own tokens with. */
  signingKeys: SigningKeyStore;
  buckets: BucketStore;
  objects: ObjectStore;
  /** Multipart uploads and their parts (in the objects table). */
  uploads: UploadStore;
  sites: SiteStore;
  deploys: DeployStore;
  /** Sites' webhook secrets, repository tokens (both sealed) and build hooks. */
  siteSecrets: SiteSecretStore;
  /** Git host webhook deliveries already taken (so a redelivery acts once). */
  hookDeliveries: HookDeliveryStore;
  /** Sites' deploy notification URLs (their signing secrets sealed). */
  notificationUrls: NotificationUrlStore;
  /** Deploy notifications recorded, pending or done (the outbox's truth). */
  notificationDeliveries: NotificationDeliveryStore;
  /** Gets recorded notifications sent: the local server's loop, or the deploy queue in AWS (set by the entry point; recording only by default). */
  notificationOutbox: NotificationOutbox;
  /** The IPFS node, started on first use (the GraphQL function never needs one). */
  ipfs(): Promise<IpfsNode>;
  /** Uploads hold it shared from import to commit; garbage collection holds it alone. */
  gate: UploadGate;
  /** Hashes an upload's leaves and computes `digests` over its bytes: on the hash thread when it is large and the server local. */
  leafHasher(digests: readonly DigestName[], sizeHint?: number): LeafHasher;
  /** Deploy logs (outside the deploys table: a log outgrows an item). */
  deployLogs: LogStore;
  /** Gets queued deploys run: the local server's worker, or SQS in AWS (set by the entry point; polling only by default). */
  deployQueue: DeployQueue;
  /**
   * The response cache the gateway answers site addresses from: the local
   * server's (set by its entry point); none in a Lambda, where a CDN in
   * front caches and this process could never see another one's purge.
   */
  siteCache?: SiteCache;
  /** What publishing and purgeCache empty of a site (the local cache, or a CDN). */
  cdn: CdnPurger;
  /** The CDN's map of site hosts to site ids, kept current where sites change (a CloudFront KeyValueStore in AWS; none locally). */
  siteHosts: SiteHostMap;
  close(): Promise<void>;
}

/**
 * Uploads at least this large are hashed on the hash thread (local server).
 * Smaller ones gain little: a client that sends them in parallel (multipart
 * parts of 4-5 MiB) keeps the cores busy anyway, and leaves away to the
 * other thread cannot be reused meanwhile, so each upload holds more buffers.
 */
export const HASH_THREAD_MIN_BYTES = 8 * 1024 * 1024;

export interface ServiceOptions {
  /** Reach the embedded database in this process directly (the local service). */
  dynamo?: InProcessTransport;
  /** A thread that hashes large uploads (the local service's helper thread); without one, the process starts its own when needed. */
  hashing?: HashChannel;
}

/** One RemoteHashing per channel: its job numbers are its own. */
const remotes = new WeakMap<HashChannel, RemoteHashing>();
function remoteFor(channel: HashChannel): RemoteHashing {
  let remote = remotes.get(channel);
  if (!remote) remotes.set(channel, (remote = new RemoteHashing(channel)));
  return remote;
}

/** The process's own hash thread, for services given none (started on first use, and again if it died). */
let ownHashing: RemoteHashing | undefined;
function processHashing(): RemoteHashing {
  if (!ownHashing || ownHashing.dead) ownHashing = new RemoteHashing(ownHashThread());
  return ownHashing;
}

export async function createServices(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
  options: ServiceOptions = {},
): Promise<Services> {
  const db = createDatabase(config, options.dynamo);
  const given = options.hashing ? remoteFor(options.hashing) : undefined;
  const remote = () => (given && !given.dead ? given : processHashing());
  const sealer = await createSealer(config);
  const storageKeys = new StorageKeyStore(db, sealer);
  const apiKeys = new ApiKeyStore(db);
  let node: Promise<IpfsNode> | undefined;
  const sqsQueue = await createSqsQueue(config);
  const cdnRetries = sqsQueue ?? noRetries(logger);
  return {
    config,
    logger,
    db,
    accounts: new AccountStore(db, storageKeys),
    teams: new TeamStore(db, apiKeys),
    apiKeys,
    storageKeys,
    signingKeys: new SigningKeyStore(db, sealer),
    buckets: new BucketStore(db),
    objects: new ObjectStore(db),
    uploads: new UploadStore(db),
    sites: new SiteStore(db, sealer),
    deploys: new DeployStore(db),
    siteSecrets: new SiteSecretStore(db, sealer),
    hookDeliveries: new HookDeliveryStore(db),
    notificationUrls: new NotificationUrlStore(db, sealer),
    notificationDeliveries: new NotificationDeliveryStore(db),
    notificationOutbox: sqsQueue ?? recordOnlyOutbox,
    deployLogs: await createLogStore(config),
    deployQueue: sqsQueue ?? pollingQueue,
    cdn: await createCdnPurger(config, cdnRetries, logger),
    siteHosts: await createSiteHostMap(config, cdnRetries, logger),
    ipfs: () =>
      (node ??= config.blockBucket
        ? import('../aws/s3-ipfs-stores.js').then((m) => m.createS3IpfsNode(config.blockBucket!, config.region))
        : createIpfsNode(config)),
    // Many Lambda instances upload at once in AWS; locally one process owns the data.
    gate: config.runtime === 'aws' ? new DynamoUploadGate(db, logger) : new LocalUploadGate(),
    // A Lambda instance serves one request at a time: nothing to overlap with.
    leafHasher: (digests, sizeHint) =>
      config.runtime === 'local' && sizeHint !== undefined && sizeHint >= HASH_THREAD_MIN_BYTES
        ? remote().hasher(digests)
        : inlineLeafHasher(digests),
    async close() {
      if (node) await (await node).stop();
      db.client.destroy();
    },
  };
}

/**
 * SQS when the stack gave a queue (the deploy queue, which also carries CDN
 * changes put off); otherwise the deploys table alone is the queue (the
 * local server sets its own worker).
 */
async function createSqsQueue(config: Config): Promise<(DeployQueue & CdnRetries & NotificationOutbox) | undefined> {
  if (!config.deployQueueUrl) return undefined;
  const { SQSClient } = await import('@aws-sdk/client-sqs');
  const { CodeBuildClient } = await import('@aws-sdk/client-codebuild');
  const { SqsDeployQueue } = await import('../aws/sqs-deploy-queue.js');
  return new SqsDeployQueue(
    new SQSClient({ region: config.region }),
    config.deployQueueUrl,
    new CodeBuildClient({ region: config.region }),
  );
}

/** Without a queue a CDN change that failed cannot be put off: it is logged and left to the next change. */
function noRetries(logger: Logger): CdnRetries {
  return {
    later: async (retry) => {
      logger.error('a CDN change failed and there is no queue to try it again from (CAIRN_DEPLOY_QUEUE_URL is unset)', { ...retry });
    },
  };
}

/** CloudFront invalidations when the stack gave a distribution; otherwise nothing (the local server sets its own cache). */
async function createCdnPurger(config: Config, retries: CdnRetries, logger: Logger): Promise<CdnPurger> {
  if (!config.cdn.distributionId) return noCdn;
  const { CloudFrontClient } = await import('@aws-sdk/client-cloudfront');
  const { CloudFrontPurger } = await import('../aws/cloudfront-purger.js');
  return new CloudFrontPurger(
    new CloudFrontClient({ region: config.region }),
    config.cdn.distributionId,
    retries,
    logger.child({ cdn: 'cloudfront' }),
  );
}

/** The distribution's KeyValueStore when the stack gave one; otherwise no map (the gateway reads the Host itself). */
async function createSiteHostMap(config: Config, retries: CdnRetries, logger: Logger): Promise<SiteHostMap> {
  if (!config.cdn.siteHostsKvsArn) return noSiteHostMap;
  const { CloudFrontKeyValueStoreClient } = await import('@aws-sdk/client-cloudfront-keyvaluestore');
  const { KvsSiteHostMap } = await import('../aws/kvs-site-hosts.js');
  return new KvsSiteHostMap(
    new CloudFrontKeyValueStoreClient({ region: config.region }),
    config.cdn.siteHostsKvsArn,
    retries,
    logger.child({ cdn: 'kvs' }),
  );
}

/** The stack's bucket in AWS, files under the data directory otherwise. */
async function createLogStore(config: Config): Promise<LogStore> {
  if (config.blockBucket) {
    const { S3Client } = await import('@aws-sdk/client-s3');
    const { S3LogStore } = await import('../aws/s3-log-store.js');
    return new S3LogStore(new S3Client({ region: config.region }), config.blockBucket);
  }
  return new FileLogStore(join(config.dataDir, 'deploy-logs'));
}
