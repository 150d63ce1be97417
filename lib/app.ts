/**
 * The Cairn CDK app's stacks, from `-c cairn:*` context values (bin/app.ts
 * runs this; tests call it with an App of their own). Every value is
 * optional:
 *
 *   cairn:stackName              the stack's name (default Cairn)
 *   cairn:logLevel               debug | info | warn | error | silent
 *   cairn:graphqlIntrospection   true to answer GraphQL introspection (read by the stack)
 *   cairn:signup                 open | invite | closed: who may sign up (default invite)
 *   cairn:oidcIssuer,            sign-in with an OpenID Connect provider, and
 *   cairn:oidcClientId,            e-mail's sender (read by lib/sign-in-settings.ts;
 *   cairn:oidcName,                the client secret and SMTP URL go in a secret)
 *   cairn:mailFrom
 *   cairn:settingsSecretArn      the secret holding those two, when it is the operator's
 *   cairn:publicGatewayUrl       a public IPFS gateway users may fetch from
 *   cairn:bucketEndpointDomain   the S3 API's domain (virtual host: <bucket>.<it>)
 *   cairn:storagePublicDomain    public object URLs: <bucket>.<it>/<key>
 *   cairn:apiDomain              the GraphQL API, hooks and web app (with a hosted zone)
 *   cairn:sitesDomain            sites: <slug>.<it>
 *   cairn:hostedZoneId,          a Route 53 hosted zone holding those domains:
 *   cairn:hostedZoneName           certificates, custom domains and records are made
 *   cairn:sitesCertificateArn    without a hosted zone: an ACM certificate in
 *                                  us-east-1 for *.<sitesDomain>
 *   cairn:dnslinkZones           Route 53 hosted zones sites' DNSLink records are
 *                                  written in: example.com=Z0123456789ABC,...
 *   cairn:alarmEmail             an address subscribed to the alarm topic (read
 *                                  by lib/monitoring.ts)
 *   cairn:deployConcurrency      deploys at once (default 2, at least 2)
 *   cairn:workerConcurrency      concurrency reserved for the deploy worker
 *                                  (default none; needs an account quota of
 *                                  at least it + 100)
 *   cairn:buildTimeoutSeconds    seconds a site's build may run (default 900)
 *   cairn:region                 the stack's region, when the sites' certificate
 *                                  must be made (hosted zone and sitesDomain):
 *                                  default the CLI's (AWS_REGION, the profile's)
 *
 * Synthesis stays offline: the stack reads no account or region and looks
 * nothing up. Only a hosted zone with a sites domain makes the stack's
 * region explicit, because CloudFront's certificate must be in us-east-1:
 * in another region it is made in a second stack, `<stackName>SitesCertificate`,
 * in us-east-1, which `cdk deploy <stackName>` deploys first.
 */
import type { App, Environment } from 'aws-cdk-lib';
import { CairnStack, type CairnLogLevel } from './cairn-stack.js';
import { dnsLinkZonesOf, hostedZoneOf, SitesCertificateStack } from './domains.js';
import { sitesDomainOf } from './site-cdn.js';

const LOG_LEVELS: readonly CairnLogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

export interface CairnApp {
  readonly stack: CairnStack;
  /** The us-east-1 stack holding the sites' certificate, when the Cairn stack is elsewhere. */
  readonly sitesCertificateStack?: SitesCertificateStack;
}

/** Adds the Cairn stack (and, when needed, its sites certificate's stack) to `app`, as its context says. */
export function addCairnStacks(app: App, processEnv: NodeJS.ProcessEnv = process.env): CairnApp {
  const context = (key: string): string | undefined => {
    const value: unknown = app.node.tryGetContext(`cairn:${key}`);
    if (value === undefined || value === null || value === '') return undefined;
    return String(value);
  };

  const wholeNumber = (key: string): number | undefined => {
    const value = context(key);
    if (value !== undefined && !/^\d+$/.test(value)) throw new Error(`cairn:${key} must be a whole number, got "${value}"`);
    return value === undefined ? undefined : Number(value);
  };

  const logLevel = context('logLevel');
  if (logLevel !== undefined && !LOG_LEVELS.includes(logLevel as CairnLogLevel)) {
    throw new Error(`cairn:logLevel must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const stackName = context('stackName') ?? 'Cairn';
  const hostedZone = hostedZoneOf(context('hostedZoneId'), context('hostedZoneName'));
  const sitesDomain = context('sitesDomain');
  const sitesCertificateArn = context('sitesCertificateArn');

  let env: Environment | undefined;
  let sitesCertificateStack: SitesCertificateStack | undefined;
  if (hostedZone && sitesDomain && !sitesCertificateArn) {
    const region = context('region') ?? processEnv.CDK_DEFAULT_REGION;
    if (!region) {
      throw new Error(
        "cairn:sitesDomain with cairn:hostedZoneId: the sites' certificate is made in us-east-1, so the stack's region must be known: set AWS_REGION (or a profile's region) or -c cairn:region=<region>",
      );
    }
    env = { region, account: processEnv.CDK_DEFAULT_ACCOUNT };
    if (region !== 'us-east-1') {
      sitesCertificateStack = new SitesCertificateStack(app, `${stackName}SitesCertificate`, {
        description: `Cairn: the certificate for *.${sitesDomainOf(sitesDomain)} (CloudFront reads it from us-east-1)`,
        env: { region: 'us-east-1', account: env.account },
        hostedZone,
        sitesDomain: sitesDomainOf(sitesDomain),
      });
    }
  }

  const stack = new CairnStack(app, stackName, {
    description: 'Cairn: team web sites and S3-compatible storage on IPFS',
    env,
    crossRegionReferences: sitesCertificateStack !== undefined,
    bucketEndpointDomain: context('bucketEndpointDomain'),
    storagePublicDomain: context('storagePublicDomain'),
    apiDomain: context('apiDomain'),
    publicGatewayUrl: context('publicGatewayUrl'),
    sitesDomain,
    sitesCertificateArn,
    sitesCertificate: sitesCertificateStack?.certificate,
    hostedZoneId: hostedZone?.hostedZoneId,
    hostedZoneName: hostedZone?.zoneName,
    dnsLinkZones: dnsLinkZonesOf(context('dnslinkZones')),
    logLevel: logLevel as CairnLogLevel | undefined,
    deployConcurrency: wholeNumber('deployConcurrency'),
    workerConcurrency: wholeNumber('workerConcurrency'),
    buildTimeoutSeconds: wholeNumber('buildTimeoutSeconds'),
  });
  return { stack, sitesCertificateStack };
}
