/**
 * What a deployer may set on the Cairn stack (CairnStackProps, from
 * `-c cairn:*` context through lib/app.ts), checked and normalised once,
 * and the environment every function starts from: the tables' and the
 * bucket's physical names, the key, the log level and the deployer's
 * options. Each part of the stack then adds only the variables it owns
 * (a queue's URL, a distribution's id), and the stack adds the URLs where
 * they create no cycle.
 *
 * Nothing here makes a resource: a wrong option fails the synth before
 * anything is built.
 */
import type { StackProps } from 'aws-cdk-lib';
import type { aws_certificatemanager as acmRefs } from 'aws-cdk-lib/interfaces';
import { TABLES, type TableName } from '../functions/core/data/tables.js';
import type { CairnData } from './data.js';
import { checkedDnsLinkZones, domainNameOf, hostedZoneOf, type HostedZoneRef } from './domains.js';
import { sitesDomainOf } from './site-cdn.js';

export type CairnLogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface CairnStackProps extends StackProps {
  /**
   * `<bucket>.<bucketEndpointDomain>` addresses a bucket virtual-host style.
   * With `hostedZoneId`, the S3 API answers at `<bucketEndpointDomain>` and
   * `*.<bucketEndpointDomain>` (which becomes `StorageEndpoint`).
   * @default - unset: the runtime default applies and clients use path-style requests
   */
  readonly bucketEndpointDomain?: string;
  /**
   * Public object URLs are `https://<bucket>.<storagePublicDomain>/<key>`.
   * With `hostedZoneId`, the gateway answers at `*.<storagePublicDomain>`.
   * @default - unset: the runtime default applies
   */
  readonly storagePublicDomain?: string;
  /**
   * With `hostedZoneId`, the GraphQL API, the git and build hooks and the
   * web app answer at `https://<apiDomain>` (`GraphqlUrl`, `WebAppUrl` and
   * the hook URLs the API hands out say so).
   * @default - the HTTP API's own execute-api address
   */
  readonly apiDomain?: string;
  /**
   * A Route 53 hosted zone holding the domains above and `sitesDomain`:
   * the stack makes their certificates (ACM, DNS-validated), API Gateway
   * custom domains, the sites distribution's alternate name and the alias
   * records. Needs `hostedZoneName`.
   * @default - no custom domains: the AWS-generated addresses only
   */
  readonly hostedZoneId?: string;
  /** The hosted zone's domain, `example.com`. */
  readonly hostedZoneName?: string;
  /**
   * The certificate for `*.<sitesDomain>` in us-east-1, when the app makes
   * it in a stack of its own because this one is in another region
   * (bin/app.ts, lib/domains.ts `SitesCertificateStack`).
   * @default - with a hosted zone, made here (this stack must then be in us-east-1); else `sitesCertificateArn`
   */
  readonly sitesCertificate?: acmRefs.ICertificateRef;
  /**
   * A public IPFS gateway users can fetch from.
   * @default - the gateway function's URL (for every function but the gateway itself)
   */
  readonly publicGatewayUrl?: string;
  /** @default 'info' */
  readonly logLevel?: CairnLogLevel;
  /**
   * Whether the GraphQL API answers introspection (the playground's schema
   * docs and completion need it).
   * @default - the `cairn:graphqlIntrospection` context value, else off
   */
  readonly graphqlIntrospection?: boolean;
  /**
   * Who may make an account by signing up (CAIRN_SIGNUP): anyone (`open`),
   * a person holding an invitation (`invite`), or nobody (`closed`).
   * @default - the `cairn:signup` context value, else 'invite'
   */
  readonly signup?: 'open' | 'invite' | 'closed';
  /**
   * How many deploys run at once: the worker's SQS concurrency (at least 2,
   * SQS's floor). Keep it within the account's CodeBuild concurrency, which
   * can be 1 to 5 on a new account.
   * @default 2
   */
  readonly deployConcurrency?: number;
  /**
   * Concurrent executions reserved for the deploy worker (its
   * ReservedConcurrentExecutions), at least `deployConcurrency` + 2: the
   * queue's deploys, the minute's tick and a build's end event. Reserving
   * takes the account's unreserved pool, which Lambda never lets fall
   * below 100 ("You can reserve up to the Unreserved account concurrency
   * value that is shown, minus 100":
   * https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html),
   * so it needs a "Concurrent executions" quota of at least this + 100; a
   * new account's quota can be 10, where any reservation fails the deploy.
   * @default - none: the worker shares the account's unreserved pool
   */
  readonly workerConcurrency?: number;
  /**
   * Seconds a site's build may run (CAIRN_BUILD_TIMEOUT); CodeBuild takes
   * whole minutes from 5 to 480.
   * @default 900
   */
  readonly buildTimeoutSeconds?: number;
  /**
   * Sites answer at `<slug>.<sitesDomain>` and `<deployId>--<slug>.<sitesDomain>`:
   * the sites distribution gets the alternate domain `*.<sitesDomain>`
   * (point that wildcard at the `SitesCdnDomainName` output). Needs
   * `sitesCertificateArn`.
   * @default - none: the distribution has only its own `*.cloudfront.net` name
   */
  readonly sitesDomain?: string;
  /**
   * An ACM certificate for `*.<sitesDomain>`, in us-east-1 whatever the
   * stack's region (CloudFront reads certificates from there only).
   * @default - none (required with `sitesDomain`)
   */
  readonly sitesCertificateArn?: string;
  /**
   * Route 53 hosted zones Cairn writes sites' DNSLink records in
   * (`_dnslink.<domain> TXT "dnslink=/ipfs/<cid>"`, updated on every
   * publish) for the domains they hold; the API and the deploy worker may
   * change only those TXT records (lib/domains.ts `grantDnsLinkRecords`).
   * A domain in no such zone is shown the record to create.
   * @default - none: every domain is shown its record
   */
  readonly dnsLinkZones?: readonly HostedZoneRef[];
}

/** `accounts` → `CAIRN_ACCOUNTS_TABLE`, the variable the runtime reads the physical name from. */
export function tableEnvVar(name: TableName): string {
  return `CAIRN_${name.toUpperCase()}_TABLE`;
}

function nonEmpty(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v === undefined || v === '' ? undefined : v;
}

/** The deployer's options, checked: domains normalised, empty strings gone. */
export interface StackOptions {
  readonly hostedZone?: HostedZoneRef;
  readonly bucketEndpointDomain?: string;
  readonly storagePublicDomain?: string;
  readonly apiDomain?: string;
  readonly publicGatewayUrl?: string;
  readonly sitesDomain?: string;
  readonly sitesCertificateArn?: string;
  /** The hosted zones sites' DNSLink records are written in (none: empty). */
  readonly dnsLinkZones: readonly HostedZoneRef[];
  /** The variables the options set in every function (`CAIRN_BUCKET_ENDPOINT_DOMAIN`, ...). */
  readonly variables: Readonly<Record<string, string>>;
}

/** Checks the props' domains and URLs; throws naming the setting that is wrong. */
export function stackOptionsOf(props: CairnStackProps): StackOptions {
  const variables: Record<string, string> = {};
  const hostedZone = hostedZoneOf(props.hostedZoneId, props.hostedZoneName);
  const domainOf = (setting: string, value: string | undefined) => {
    const v = nonEmpty(value);
    // With a hosted zone the names become certificates and records: they must be plain domain names.
    return v === undefined ? undefined : hostedZone ? domainNameOf(setting, v) : v;
  };
  const bucketEndpointDomain = domainOf('bucketEndpointDomain', props.bucketEndpointDomain);
  const storagePublicDomain = domainOf('storagePublicDomain', props.storagePublicDomain);
  const publicGatewayUrl = nonEmpty(props.publicGatewayUrl);
  if (nonEmpty(props.apiDomain) && !hostedZone)
    throw new Error('apiDomain needs hostedZoneId and hostedZoneName: its certificate and record go in that zone');
  if (bucketEndpointDomain) variables.CAIRN_BUCKET_ENDPOINT_DOMAIN = bucketEndpointDomain;
  if (storagePublicDomain) variables.CAIRN_STORAGE_PUBLIC_DOMAIN = storagePublicDomain;
  if (publicGatewayUrl) variables.CAIRN_PUBLIC_GATEWAY_URL = publicGatewayUrl;
  const sitesDomain = nonEmpty(props.sitesDomain) === undefined ? undefined : sitesDomainOf(props.sitesDomain!);
  if (sitesDomain) variables.CAIRN_SITES_DOMAIN = sitesDomain;
  return {
    hostedZone,
    bucketEndpointDomain,
    storagePublicDomain,
    // Checked after the others, as the custom domains read it (lib/domains.ts).
    apiDomain: hostedZone ? domainOf('apiDomain', props.apiDomain) : undefined,
    publicGatewayUrl,
    sitesDomain,
    sitesCertificateArn: nonEmpty(props.sitesCertificateArn),
    dnsLinkZones: checkedDnsLinkZones(props.dnsLinkZones ?? []),
    variables,
  };
}

/** What every function is given: where the data is, the log level, the deployer's options. */
export function functionEnvironment(data: CairnData, options: StackOptions, logLevel: CairnLogLevel | undefined): Record<string, string> {
  return {
    ...Object.fromEntries(TABLES.map((spec) => [tableEnvVar(spec.name), data.tables[spec.name].tableName])),
    CAIRN_BLOCK_BUCKET: data.blockBucket.bucketName,
    CAIRN_KMS_KEY_ID: data.secretsKey.keyId,
    CAIRN_LOG_LEVEL: logLevel ?? 'info',
    ...options.variables,
  };
}
