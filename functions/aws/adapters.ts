/**
 * The adapters of a Lambda function, from the configuration the stack gave
 * it: SQS for the deploy queue (which also carries CDN changes put off and
 * deploy notifications), CloudFront for purges, its KeyValueStore for the
 * site host map, DynamoDB for the upload gate (many instances upload at
 * once), Route 53 for sites' DNSLink records. Each is imported only when the configuration names its resource,
 * so a function loads the SDK clients it uses and no others; a function's
 * bundle puts what is imported here in chunks of its own, read when the
 * import runs (lib/functions.ts).
 *
 * Where a resource is not named, the adapter is the one that needs none:
 * a queue of the deploys table alone, no CDN. Where the data is kept (S3
 * for blocks and deploy logs, KMS for sealing, or the data directory, which
 * is how the test/aws suites run the handlers on this machine) is the
 * configuration's choice the local server makes alike: configuredStores
 * (functions/adapters/stores.ts).
 */
import type { Config } from '../core/config.js';
import type { Logger } from '../core/logger.js';
import type { Adapters } from '../core/services.js';
import { pollingQueue, type DeployQueue } from '../core/ports/deploy-queue.js';
import { recordOnlyOutbox, type NotificationOutbox } from '../core/ports/notifications.js';
import { noCdn, noSiteHostMap, type CdnPurger, type CdnRetries, type SiteHostMap } from '../core/ports/site-cache.js';
import { inlineLeafHasher } from '../core/hashing/leaf-hasher.js';
import { configuredStores } from '../adapters/stores.js';
import { onceUntilFailure } from '../core/once-until-failure.js';
import { DynamoUploadGate } from './dynamo-gate.js';
import { BuildRefused, type BuildRunner, type DetachedBuildRunner } from '../core/ports/build-runner.js';
import type { PreviewTaker } from '../core/ports/screenshotter.js';
import type { StagedPartStore } from '../core/ports/staged-parts.js';
import { dnsLinkName, zoneOf, type DnsLinkZone } from '../core/ports/dnslink-zone.js';

export async function awsAdapters(config: Config, logger: Logger): Promise<Adapters> {
  const sqsQueue = await createSqsQueue(config);
  const cdnRetries = sqsQueue ?? noRetries(logger);
  return {
    ...(await configuredStores(config)),
    deployQueue: sqsQueue ?? pollingQueue,
    notificationOutbox: sqsQueue ?? recordOnlyOutbox,
    cdn: await createCdnPurger(config, cdnRetries, logger),
    siteHosts: await createSiteHostMap(config, cdnRetries, logger),
    // Many Lambda instances upload at once: the gate lives in DynamoDB.
    gate: (db) => new DynamoUploadGate(db, logger),
    // A Lambda instance serves one request at a time: nothing to overlap hashing with.
    leafHasher: (digests) => inlineLeafHasher(digests),
    stagedParts: await createStagedParts(config),
    edgeDomains: config.domains.tenants ? cloudFrontTenants(config, config.domains.tenants) : undefined,
    dnsLink: dnsLinkZone(config),
  };
}

/**
 * Where sites' DNSLink records are written: RFC 2136 updates when
 * CAIRN_DNSLINK_SERVER names a DNS server (as on one machine), otherwise
 * the Route 53 hosted zones CAIRN_DNSLINK_ZONES names
 * (functions/aws/route53-dnslink-zone.ts); none without zones. Whether a
 * zone holds a name is the configuration's to say; the adapter, and
 * Route 53's client, are loaded with the first write, so a function's
 * start (the GraphQL one's) never loads them.
 */
function dnsLinkZone(config: Config): DnsLinkZone | undefined {
  const { zones, hostedZoneIds, server } = config.domains.dnslink;
  if (zones.length === 0) return undefined;
  const zone = onceUntilFailure<DnsLinkZone>(async () => {
    if (server) {
      const { rfc2136Zone } = await import('../adapters/rfc2136-dnslink-zone.js');
      return rfc2136Zone(config)!;
    }
    const { Route53Client } = await import('@aws-sdk/client-route-53');
    const { Route53DnsLinkZone } = await import('./route53-dnslink-zone.js');
    // Route 53 is global: the SDK's endpoint rules send every region's calls to route53.amazonaws.com.
    return new Route53DnsLinkZone(new Route53Client({ region: config.region }), { zones, hostedZoneIds });
  });
  return {
    managesAny: true,
    manages: (domain) => zoneOf(zones, dnsLinkName(domain)) !== undefined,
    set: async (domain, path) => (await zone()).set(domain, path),
    remove: async (domain) => (await zone()).remove(domain),
  };
}

/**
 * Sites' own domains as tenants of the stack's multi-tenant distribution
 * (functions/aws/cloudfront-tenants.ts), when the stack made one; its code
 * and CloudFront's client are loaded with the first domain change.
 */
function cloudFrontTenants(config: Config, tenants: NonNullable<Config['domains']['tenants']>): NonNullable<Adapters['edgeDomains']> {
  return (parts) => {
    const adapter = onceUntilFailure(async () => {
      const { CloudFrontClient } = await import('@aws-sdk/client-cloudfront');
      const { CloudFrontTenants } = await import('./cloudfront-tenants.js');
      const { EdgeTenantStore } = await import('../core/data/edge-tenants.js');
      return new CloudFrontTenants({
        ...parts,
        cloudFront: new CloudFrontClient({ region: config.region }),
        distributionId: tenants.distributionId,
        connectionGroupId: tenants.connectionGroupId,
        tenants: new EdgeTenantStore(parts.db),
        logger: parts.logger.child({ cdn: 'cloudfront-tenants' }),
      });
    });
    // The port's calls never reject: one that could not even load is logged, and the tick tries again.
    const use = async (call: (a: Awaited<ReturnType<typeof adapter>>) => Promise<void>) => {
      try {
        await call(await adapter());
      } catch (err) {
        parts.logger.error('the CloudFront tenants could not be loaded', { err });
      }
    };
    return {
      issues: true,
      challengeAnswer: () => undefined,
      request: (siteId, domain) => use((a) => a.request(siteId, domain)),
      released: (domain) => use((a) => a.released(domain)),
      settle: () => use((a) => a.settle()),
    };
  };
}

/** The storage API's staged parts, when the stack stages parts (the S3 function reads them at CompleteMultipartUpload). */
async function createStagedParts(config: Config): Promise<StagedPartStore | undefined> {
  if (!config.partStagingBucket) return undefined;
  const { S3Client } = await import('@aws-sdk/client-s3');
  const { S3StagedParts } = await import('./s3-staged-parts.js');
  return new S3StagedParts(new S3Client({ region: config.region }), config.partStagingBucket);
}

/**
 * SQS when the stack gave a queue (the deploy queue, which also carries CDN
 * changes put off); otherwise the deploys table alone is the queue.
 */
async function createSqsQueue(config: Config): Promise<(DeployQueue & CdnRetries & NotificationOutbox) | undefined> {
  if (!config.deployQueueUrl) return undefined;
  const { SQSClient } = await import('@aws-sdk/client-sqs');
  const { CodeBuildClient } = await import('@aws-sdk/client-codebuild');
  const { SqsDeployQueue } = await import('./sqs-deploy-queue.js');
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

/** CloudFront invalidations when the stack gave a distribution (the client loaded with the first purge); otherwise nothing. */
async function createCdnPurger(config: Config, retries: CdnRetries, logger: Logger): Promise<CdnPurger> {
  const distributionId = config.cdn.distributionId;
  if (!distributionId) return noCdn;
  // Built on its first use: a function that never purges never loads CloudFront's client (about 220 KB of bundled code).
  const purger = onceUntilFailure(async () => {
    const { CloudFrontClient } = await import('@aws-sdk/client-cloudfront');
    const { CloudFrontPurger } = await import('./cloudfront-purger.js');
    return new CloudFrontPurger(
      new CloudFrontClient({ region: config.region }),
      distributionId,
      retries,
      logger.child({ cdn: 'cloudfront' }),
    );
  });
  return { purgeSite: async (siteId, options) => (await purger()).purgeSite(siteId, options) };
}

/**
 * The distribution's KeyValueStore when the stack gave one (the client
 * loaded with the first change); otherwise no map (the gateway reads the
 * Host itself).
 */
async function createSiteHostMap(config: Config, retries: CdnRetries, logger: Logger): Promise<SiteHostMap> {
  const kvsArn = config.cdn.siteHostsKvsArn;
  if (!kvsArn) return noSiteHostMap;
  const map = onceUntilFailure(async () => {
    const { CloudFrontKeyValueStoreClient } = await import('@aws-sdk/client-cloudfront-keyvaluestore');
    const { KvsSiteHostMap } = await import('./kvs-site-hosts.js');
    return new KvsSiteHostMap(new CloudFrontKeyValueStoreClient({ region: config.region }), kvsArn, retries, logger.child({ cdn: 'kvs' }));
  });
  return { reconcile: async (label, siteIdNow, options) => (await map()).reconcile(label, siteIdNow, options) };
}

/** Without a CodeBuild project (a misconfigured stack) a build command fails its deploy with this. */
const noBuilds: BuildRunner = {
  name: 'no build runner',
  run: async () => {
    throw new BuildRefused('builds are not set up here (CAIRN_BUILD_PROJECT is unset): only sites without a build command deploy');
  },
};

/** The deploy worker's build runner: CodeBuild when the stack gave a project (builds run detached), otherwise one that refuses builds. */
export async function awsBuildRunner(config: Config): Promise<BuildRunner | DetachedBuildRunner> {
  if (!config.build.codeBuildProject || !config.blockBucket) return noBuilds;
  const { CodeBuildClient } = await import('@aws-sdk/client-codebuild');
  const { S3Client } = await import('@aws-sdk/client-s3');
  const { CodeBuildRunner } = await import('./codebuild-runner.js');
  const { BuildSecrets } = await import('./build-secrets.js');
  const { BuildNames } = await import('./build-names.js');
  // Secrets Manager's client is loaded, and the key naming builds read, with the first build.
  const secretsManager = onceUntilFailure(async () => {
    const { SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
    return new SecretsManagerClient({ region: config.region });
  });
  const names = new BuildNames(secretsManager, config.build.secretNamesKeyArn);
  return new CodeBuildRunner(
    new CodeBuildClient({ region: config.region }),
    new S3Client({ region: config.region }),
    config.blockBucket,
    config.build.codeBuildProject,
    names,
    new BuildSecrets(secretsManager, config.build.codeBuildProject, names),
  );
}

/** The preview function, when previews are on and the stack named it; none otherwise (no preview images). */
export async function awsPreviewTaker(config: Config, logger: Logger): Promise<PreviewTaker | undefined> {
  if (!config.preview.enabled) return undefined;
  if (!config.preview.functionName) {
    logger.warn('CAIRN_PREVIEW is on but CAIRN_PREVIEW_FUNCTION is unset: no preview images');
    return undefined;
  }
  const { LambdaClient } = await import('@aws-sdk/client-lambda');
  const { LambdaPreviewTaker } = await import('./lambda-preview-taker.js');
  return new LambdaPreviewTaker(new LambdaClient({ region: config.region }), config.preview.functionName);
}
