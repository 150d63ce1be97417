/**
 * The gateway and the sites in front of it: the gateway function (/ipfs/,
 * public object URLs, site hosts) with a streaming Function URL, and the
 * one CloudFront distribution that serves every site from it
 * (lib/site-cdn.ts), with its certificate and records when the stack has a
 * hosted zone (lib/domains.ts). The API and the deploy worker may purge the
 * distribution and write its map of hosts; the gateway is never told of it,
 * since the distribution depends on the gateway's URL.
 *
 * Made in the stack's own scope, not in a construct of their own: their
 * logical ids stay those of the stacks already deployed (a new id would
 * replace the distribution and the Function URL).
 */
import type { Duration, Stack } from 'aws-cdk-lib';
import type { aws_certificatemanager as acmRefs } from 'aws-cdk-lib/interfaces';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type FunctionUrl, FunctionUrlAuthType, InvokeMode } from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { CairnData } from './data.js';
import { type CairnDomains, inZone, sitesCertificate } from './domains.js';
import { CairnFunction } from './functions.js';
import { acknowledgeBucketGrant, acknowledgeTableGrants } from './grant-acknowledgements.js';
import { SiteCdn } from './site-cdn.js';
import { STREAMING_TIMEOUT } from './storage-api.js';

/** Helia's datastore version record: the node's datastore is under `datastore/` in the bucket (functions/core/ipfs/node.ts). */
const IPFS_DATASTORE_VERSION_KEY = 'datastore/version';

export interface GatewayProps {
  readonly data: CairnData;
  /** The functions' common environment (lib/stack-options.ts). */
  readonly environment: Record<string, string>;
}

export interface Gateway {
  readonly function: NodejsFunction;
  /** Public, streamed: the sites distribution's origin and the `GatewayUrl` output. */
  readonly url: FunctionUrl;
  /** How long the function may take: the public objects' REST API waits as long (lib/domains.ts). */
  readonly timeout: Duration;
}

/** The gateway function (`Gateway`), its grants (reads, and the routing API's IPNS records) and its Function URL. */
export function addGateway(stack: Stack, props: GatewayProps): Gateway {
  const { tables, blockBucket } = props.data;
  // A streamed answer lasts as long as the function may run, through the
  // Function URL as through the public objects' REST API (lib/storage-api.ts):
  // Lambda's longest, 15 minutes.
  const timeout = STREAMING_TIMEOUT;
  const gateway = new CairnFunction(stack, 'Gateway', {
    name: 'gateway',
    tracing: true,
    description: 'Cairn: IPFS gateway and public object URLs',
    memorySize: 1024,
    timeout,
    environment: props.environment,
  }).function;

  // Public objects and /ipfs/ read objects; a site address reads its site,
  // then its published deploy or the deploy a preview host names
  // (functions/core/hosting/site-hosts.ts); /ipns/ and the routing API read
  // IPNS records (in the sites table).
  tables.objects.grantReadData(gateway);
  tables.accounts.grantReadData(gateway);
  tables.sites.grantReadData(gateway);
  tables.deploys.grantReadData(gateway);
  blockBucket.grantRead(gateway);
  // Helia records its datastore's version (`datastore/version`) when its
  // node first starts on a bucket without one. On a fresh stack the gateway
  // may start first; a node that cannot start would fail every request of
  // its container. That one object is all the gateway writes.
  gateway.addToRolePolicy(
    new PolicyStatement({ actions: ['s3:PutObject'], resources: [blockBucket.arnForObjects(IPFS_DATASTORE_VERSION_KEY)] }),
  );
  // The routing API's `PUT /routing/v1/ipns/<name>` (functions/gateway/ipns.ts)
  // stores a record signed elsewhere, and counts it against its sender's
  // address: the one kind of item each table lets it write, by partition key
  // (dynamodb:LeadingKeys, "ForAllValues:StringLike" as the developer guide's
  // fine-grained access control examples have it:
  // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html).
  gateway.addToRolePolicy(
    new PolicyStatement({
      actions: ['dynamodb:PutItem'],
      resources: [tables.sites.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['IPNS#*'] } },
    }),
  );
  gateway.addToRolePolicy(
    new PolicyStatement({
      actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
      resources: [tables.accounts.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['RATE#ipns-put#*'] } },
    }),
  );
  acknowledgeTableGrants(gateway, [tables.objects, tables.accounts, tables.sites, tables.deploys]);
  acknowledgeBucketGrant(gateway, blockBucket, 'read');

  // Public: the gateway serves only what is public (or content-addressed).
  const url = gateway.addFunctionUrl({ authType: FunctionUrlAuthType.NONE, invokeMode: InvokeMode.RESPONSE_STREAM });
  return { function: gateway, url, timeout };
}

export interface SitesProps {
  readonly gatewayUrl: FunctionUrl;
  /** Normalised (lib/stack-options.ts). */
  readonly sitesDomain?: string;
  readonly sitesCertificateArn?: string;
  /** Made by the app in us-east-1 when the stack is elsewhere (lib/app.ts). */
  readonly sitesCertificate?: acmRefs.ICertificateRef;
  /** With a hosted zone: the sites' certificate (in us-east-1) and records come from it. */
  readonly domains?: CairnDomains;
  /** The functions that purge the distribution and write its map of hosts (the API and the deploy worker). */
  readonly publishers: readonly NodejsFunction[];
}

/** The sites distribution (`SiteCdn`), its certificate and records from the hosted zone, and who may change it. */
export function addSites(stack: Stack, props: SitesProps): SiteCdn {
  const { sitesDomain, sitesCertificateArn, domains } = props;
  let certificate = props.sitesCertificate;
  if (sitesDomain && domains) {
    if (!inZone(sitesDomain, domains.zone.zoneName)) {
      throw new Error(
        `sitesDomain ${sitesDomain} is not in the hosted zone ${domains.zone.zoneName}: its records and certificate go there`,
      );
    }
    if (!certificate && !sitesCertificateArn) {
      if (stack.region !== 'us-east-1') {
        throw new Error(
          'sitesDomain with a hosted zone needs its certificate in us-east-1: deploy this stack there, or let bin/app.ts make it in a us-east-1 stack (it needs the region: AWS_REGION or -c cairn:region), or give sitesCertificateArn',
        );
      }
      certificate = sitesCertificate(stack, 'SitesCertificate', domains.zone, sitesDomain);
    }
  }
  const siteCdn = new SiteCdn(stack, 'SiteCdn', {
    gatewayUrl: props.gatewayUrl,
    sitesDomain,
    certificateArn: sitesCertificateArn,
    certificate,
  });
  if (sitesDomain && domains) domains.addSitesRecords(siteCdn.distribution, sitesDomain);
  // purgeCache (the API) and publishing (the worker) invalidate the
  // distribution; where sites change (the API) and the worker's retries
  // write its map of hosts.
  for (const fn of props.publishers) {
    siteCdn.grantPurge(fn);
    siteCdn.grantSiteHostsWrite(fn);
    fn.addEnvironment('CAIRN_CDN_DISTRIBUTION_ID', siteCdn.distribution.distributionId);
    fn.addEnvironment('CAIRN_SITE_HOSTS_KVS_ARN', siteCdn.siteHosts.keyValueStoreArn);
    // Sites' own domains: tenants of the multi-tenant distribution (the API verifies, the worker's tick follows).
    siteCdn.grantDomainTenants(fn);
    fn.addEnvironment('CAIRN_DOMAIN_DISTRIBUTION_ID', siteCdn.domainsDistribution.distributionId);
    fn.addEnvironment('CAIRN_DOMAIN_CONNECTION_GROUP_ID', siteCdn.connectionGroup.attrId);
    fn.addEnvironment('CAIRN_DOMAIN_TARGET', siteCdn.connectionGroup.attrRoutingEndpoint);
    if (!sitesDomain) fn.addEnvironment('CAIRN_SITES_DOMAIN', siteCdn.sitesDomain);
  }
  return siteCdn;
}
