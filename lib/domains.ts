/**
 * Custom domains, from a Route 53 hosted zone the deployer names (context
 * `cairn:hostedZoneId` and `cairn:hostedZoneName`; imported by id, so
 * synthesis still looks nothing up):
 *
 * - `<bucketEndpointDomain>` and `*.<bucketEndpointDomain>`: the S3 API,
 *   path style and virtual-host style (`<bucket>.<bucketEndpointDomain>`).
 *   Two API Gateway regional custom domains mapped, with an empty base
 *   path, to the S3 API's stage; clients then sign `/<bucket>/<key>` on the
 *   domain, no stage.
 * - `*.<storagePublicDomain>`: public object URLs
 *   (`<bucket>.<storagePublicDomain>/<key>`), served by the gateway
 *   function through a REST API of their own that answers on that domain
 *   only (the gateway finds the bucket in the Host, which a Function URL
 *   would not pass on).
 * - `<apiDomain>`: the GraphQL API, hooks and web app (the HTTP API), an
 *   API Gateway v2 regional custom domain mapped to its default stage, so
 *   webhook and build hook URLs handed to git hosts and CI stay put.
 * - `*.<sitesDomain>`: the sites distribution's alternate name, with a
 *   certificate in us-east-1 (CloudFront reads certificates from there
 *   only): made in the stack when it is in us-east-1, else in a small
 *   us-east-1 stack of its own (`SitesCertificateStack`, which bin/app.ts
 *   adds) and passed across regions.
 *
 * The certificates are ACM's, validated by DNS records in the zone; the
 * names get Route 53 alias records (A for the API Gateway domains, which are
 * IPv4; A and AAAA for CloudFront).
 */
import { Duration, Stack, type StackProps } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { BasePathMapping, DomainName, EndpointType, SecurityPolicy } from 'aws-cdk-lib/aws-apigateway';
import {
  ApiMapping,
  DomainName as HttpDomainName,
  SecurityPolicy as HttpSecurityPolicy,
  type IHttpApi,
  type IStage,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { Certificate, CertificateValidation } from 'aws-cdk-lib/aws-certificatemanager';
import type { IDistribution } from 'aws-cdk-lib/aws-cloudfront';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { AaaaRecord, ARecord, HostedZone, RecordTarget, type IHostedZone } from 'aws-cdk-lib/aws-route53';
import { ApiGatewayDomain, ApiGatewayv2DomainProperties, CloudFrontTarget } from 'aws-cdk-lib/aws-route53-targets';
import { Construct } from 'constructs';
import { StreamingRestApi } from './storage-api.js';

const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;
const ZONE_ID = /^Z[A-Z0-9]{1,31}$/;

/** A domain as given (`S3.Example.com.` → `s3.example.com`), or an error naming the setting. */
export function domainNameOf(setting: string, value: string): string {
  const domain = value.trim().toLowerCase().replace(/\.$/, '');
  if (!DOMAIN.test(domain))
    throw new Error(`${setting} must be a domain name like s3.example.com (no scheme, port or wildcard), got "${value}"`);
  return domain;
}

/** Whether `domain` is in the zone `zoneName` (a subdomain of it, or the zone's own name). */
export function inZone(domain: string, zoneName: string): boolean {
  return domain === zoneName || domain.endsWith(`.${zoneName}`);
}

export interface HostedZoneRef {
  /** The hosted zone's id, `Z...`. */
  readonly hostedZoneId: string;
  /** Its domain, `example.com`. */
  readonly zoneName: string;
}

/** A hosted zone reference checked (both parts, the id's form), the name normalised. */
export function hostedZoneOf(id: string | undefined, name: string | undefined): HostedZoneRef | undefined {
  const zoneId = id?.trim() || undefined;
  const zoneName = name?.trim() || undefined;
  if (!zoneId && !zoneName) return undefined;
  if (!zoneId || !zoneName)
    throw new Error('hostedZoneId and hostedZoneName go together: the zone is imported by id, its name says which domains it holds');
  const hostedZoneId = zoneId.replace(/^\/?hostedzone\//, '');
  if (!ZONE_ID.test(hostedZoneId))
    throw new Error(`hostedZoneId must be a Route 53 hosted zone id like Z0123456789ABCDEFGHIJ, got "${id}"`);
  return { hostedZoneId, zoneName: domainNameOf('hostedZoneName', zoneName) };
}

/**
 * The hosted zones sites' DNSLink records are written in, as the
 * `cairn:dnslinkZones` context gives them (`example.com=Z0123456789ABC`,
 * separated by commas), checked; each needs its id, which the grant
 * names. Undefined or empty: none.
 */
export function dnsLinkZonesOf(raw: string | undefined): HostedZoneRef[] {
  const entries = (raw ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  return checkedDnsLinkZones(
    entries.map((entry) => {
      const [name, id] = entry.split('=', 2);
      if (!id) throw new Error(`dnslinkZones: each zone needs its hosted zone id, as example.com=Z0123456789ABC; got "${entry}"`);
      return { zoneName: name!, hostedZoneId: id };
    }),
  );
}

/** The zones checked (each id's form, each name a domain), names normalised, none twice. */
export function checkedDnsLinkZones(zones: readonly HostedZoneRef[]): HostedZoneRef[] {
  const checked = zones.map((z) => hostedZoneOf(z.hostedZoneId, z.zoneName)!);
  const names = checked.map((z) => z.zoneName);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new Error(`dnslinkZones names ${twice} twice`);
  return checked;
}

/**
 * Lets `fn` write sites' DNSLink records in `zones` and tells it which
 * (CAIRN_DNSLINK_ZONES, functions/aws/route53-dnslink-zone.ts): on those
 * hosted zones only, ChangeResourceRecordSets limited by Route 53's
 * condition keys to TXT records named `_dnslink.<zone>` or
 * `_dnslink.*.<zone>` and to UPSERT and DELETE, and
 * ListResourceRecordSets, which a DELETE needs to repeat the current set
 * (https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/specifying-conditions-route53.html:
 * the keys' values are normalised, lower case, no trailing dot, the
 * actions and types upper case; its examples use ForAllValues, which
 * holds for every change of a batch). ForAllValues also holds where a
 * key is absent, so each key must be present (Null false)
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html).
 * Nothing when no zone is given.
 */
export function grantDnsLinkRecords(
  fn: IFunction & { addEnvironment(key: string, value: string): unknown },
  zones: readonly HostedZoneRef[],
): void {
  if (zones.length === 0) return;
  const stack = Stack.of(fn);
  const arns = zones.map((z) =>
    stack.formatArn({ service: 'route53', region: '', account: '', resource: 'hostedzone', resourceName: z.hostedZoneId }),
  );
  const keys = {
    names: 'route53:ChangeResourceRecordSetsNormalizedRecordNames',
    types: 'route53:ChangeResourceRecordSetsRecordTypes',
    actions: 'route53:ChangeResourceRecordSetsActions',
  };
  fn.addToRolePolicy(
    new PolicyStatement({
      sid: 'WriteDnsLinkRecords',
      actions: ['route53:ChangeResourceRecordSets'],
      resources: arns,
      conditions: {
        'ForAllValues:StringLike': { [keys.names]: zones.flatMap((z) => [`_dnslink.${z.zoneName}`, `_dnslink.*.${z.zoneName}`]) },
        'ForAllValues:StringEquals': { [keys.types]: ['TXT'], [keys.actions]: ['UPSERT', 'DELETE'] },
        Null: { [keys.names]: 'false', [keys.types]: 'false', [keys.actions]: 'false' },
      },
    }),
  );
  fn.addToRolePolicy(new PolicyStatement({ sid: 'ReadDnsLinkRecords', actions: ['route53:ListResourceRecordSets'], resources: arns }));
  fn.addEnvironment('CAIRN_DNSLINK_ZONES', zones.map((z) => `${z.zoneName}=${z.hostedZoneId}`).join(','));
}

function importZone(scope: Construct, ref: HostedZoneRef): IHostedZone {
  return HostedZone.fromHostedZoneAttributes(scope, 'Zone', { hostedZoneId: ref.hostedZoneId, zoneName: ref.zoneName });
}

/** The certificate for `*.<sitesDomain>` CloudFront needs, validated in the zone; its stack must be in us-east-1. */
export function sitesCertificate(scope: Construct, id: string, zone: IHostedZone, sitesDomain: string): Certificate {
  return new Certificate(scope, id, {
    domainName: `*.${sitesDomain}`,
    // A Name tag's value may not hold `*` or `,`.
    certificateName: `Cairn sites ${sitesDomain}`,
    validation: CertificateValidation.fromDns(zone),
  });
}

export interface SitesCertificateStackProps extends StackProps {
  readonly hostedZone: HostedZoneRef;
  readonly sitesDomain: string;
}

/**
 * The sites' certificate, in us-east-1, for a Cairn stack in another
 * region: the stack takes `certificate` across regions
 * (`crossRegionReferences`, both stacks).
 */
export class SitesCertificateStack extends Stack {
  readonly certificate: Certificate;

  constructor(scope: Construct, id: string, props: SitesCertificateStackProps) {
    super(scope, id, { ...props, crossRegionReferences: true });
    if (props.env?.region !== 'us-east-1')
      throw new Error('the sites certificate stack must be in us-east-1 (CloudFront reads certificates from there only)');
    this.certificate = sitesCertificate(this, 'SitesCertificate', importZone(this, props.hostedZone), props.sitesDomain);
  }
}

export interface CairnDomainsProps {
  readonly hostedZone: HostedZoneRef;
  /** The S3 API at `<domain>` and `<bucket>.<domain>`. */
  readonly bucketEndpointDomain?: string;
  /** Public object URLs at `<bucket>.<domain>/<key>`. */
  readonly storagePublicDomain?: string;
  /** The GraphQL API, hooks and web app at `https://<domain>` (mapped by `mapApi`). */
  readonly apiDomain?: string;
  readonly storageApi: StreamingRestApi;
  /** The gateway function, which serves public object URLs. */
  readonly gateway: IFunction;
  readonly gatewayTimeout: Duration;
}

export class CairnDomains extends Construct {
  readonly zone: IHostedZone;
  /** The regional certificate of the API Gateway domains (the S3 API's and the public objects'). */
  readonly apiCertificate?: Certificate;
  /** `<bucketEndpointDomain>` and `*.<bucketEndpointDomain>`, mapped to the S3 API. */
  readonly storageDomains: DomainName[] = [];
  /** The REST API in front of the gateway for `*.<storagePublicDomain>`. */
  readonly publicObjectsApi?: StreamingRestApi;
  readonly publicObjectsDomain?: DomainName;
  /** `https://<bucketEndpointDomain>`, when there is one. */
  readonly storageEndpoint?: string;
  private readonly apiDomain?: string;

  constructor(scope: Construct, id: string, props: CairnDomainsProps) {
    super(scope, id);
    const { zoneName } = props.hostedZone;
    for (const [setting, domain] of [
      ['bucketEndpointDomain', props.bucketEndpointDomain],
      ['storagePublicDomain', props.storagePublicDomain],
      ['apiDomain', props.apiDomain],
    ] as const) {
      if (domain !== undefined && !inZone(domain, zoneName))
        throw new Error(`${setting} ${domain} is not in the hosted zone ${zoneName}: its records and certificate go there`);
    }
    this.zone = importZone(this, props.hostedZone);

    const names = [
      ...(props.bucketEndpointDomain ? [props.bucketEndpointDomain, `*.${props.bucketEndpointDomain}`] : []),
      ...(props.storagePublicDomain ? [`*.${props.storagePublicDomain}`] : []),
      ...(props.apiDomain ? [props.apiDomain] : []),
    ];
    this.apiDomain = props.apiDomain;
    if (names.length === 0) return;
    this.apiCertificate = new Certificate(this, 'ApiCertificate', {
      domainName: names[0]!,
      subjectAlternativeNames: names.slice(1),
      certificateName: `Cairn APIs ${names.map((n) => n.replace(/^\*\./, '')).join(' ')}`,
      validation: CertificateValidation.fromDns(this.zone),
    });
    const domain = (cid: string, name: string) =>
      new DomainName(this, cid, {
        domainName: name,
        certificate: this.apiCertificate!,
        endpointType: EndpointType.REGIONAL,
        securityPolicy: SecurityPolicy.TLS_1_2,
      });
    const record = (cid: string, name: string, target: DomainName) =>
      new ARecord(this, cid, { zone: this.zone, recordName: name, target: RecordTarget.fromAlias(new ApiGatewayDomain(target)) });

    if (props.bucketEndpointDomain) {
      const d = props.bucketEndpointDomain;
      const apex = domain('StorageDomain', d);
      const wildcard = domain('StorageWildcardDomain', `*.${d}`);
      for (const [cid, target] of [
        ['StorageMapping', apex],
        ['StorageWildcardMapping', wildcard],
      ] as const) {
        // An empty base path: clients sign `/<bucket>/<key>`, as on S3.
        new BasePathMapping(this, cid, { domainName: target, restApi: props.storageApi.api, stage: props.storageApi.stage });
      }
      record('StorageRecord', d, apex);
      record('StorageWildcardRecord', `*.${d}`, wildcard);
      this.storageDomains.push(apex, wildcard);
      this.storageEndpoint = `https://${d}`;
    }

    if (props.storagePublicDomain) {
      const d = props.storagePublicDomain;
      this.publicObjectsApi = new StreamingRestApi(this, 'PublicObjects', {
        handler: props.gateway,
        restApiName: `${Stack.of(this).stackName}-public-objects`,
        description: `Cairn: public object URLs, <bucket>.${d}/<key> (the gateway)`,
        stageName: 'public',
        integrationTimeout: props.gatewayTimeout,
        errorShape: 'text',
        authorization:
          'Public object URLs are public by design: the gateway function serves an object only when its ACL is public-read, and 403 otherwise',
        logsRoleFrom: props.storageApi,
        // Reached by its domain only: the gateway reads the bucket from the Host.
        disableExecuteApiEndpoint: true,
      });
      this.publicObjectsDomain = domain('PublicObjectsDomain', `*.${d}`);
      new BasePathMapping(this, 'PublicObjectsMapping', {
        domainName: this.publicObjectsDomain,
        restApi: this.publicObjectsApi.api,
        stage: this.publicObjectsApi.stage,
      });
      record('PublicObjectsRecord', `*.${d}`, this.publicObjectsDomain);
    }
  }

  /**
   * `<apiDomain>` to the HTTP API's default stage, with its alias record;
   * the API's base URL (`https://<apiDomain>`), or undefined without one.
   */
  mapApi(api: IHttpApi, stage: IStage): string | undefined {
    if (!this.apiDomain) return undefined;
    const domainName = new HttpDomainName(this, 'ApiDomain', {
      domainName: this.apiDomain,
      certificate: this.apiCertificate!,
      securityPolicy: HttpSecurityPolicy.TLS_1_2,
    });
    new ApiMapping(this, 'ApiMapping', { api, domainName, stage });
    new ARecord(this, 'ApiRecord', {
      zone: this.zone,
      recordName: this.apiDomain,
      target: RecordTarget.fromAlias(new ApiGatewayv2DomainProperties(domainName.regionalDomainName, domainName.regionalHostedZoneId)),
    });
    return `https://${this.apiDomain}`;
  }

  /** `*.<sitesDomain>` (A and AAAA) to the sites distribution. */
  addSitesRecords(distribution: IDistribution, sitesDomain: string): void {
    if (!inZone(sitesDomain, this.zone.zoneName))
      throw new Error(`sitesDomain ${sitesDomain} is not in the hosted zone ${this.zone.zoneName}: its records and certificate go there`);
    const target = RecordTarget.fromAlias(new CloudFrontTarget(distribution));
    new ARecord(this, 'SitesRecord', { zone: this.zone, recordName: `*.${sitesDomain}`, target });
    new AaaaRecord(this, 'SitesIpv6Record', { zone: this.zone, recordName: `*.${sitesDomain}`, target });
  }
}
