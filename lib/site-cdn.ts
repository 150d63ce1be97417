/**
 * Sites behind one CloudFront distribution: the gateway's Function URL
 * (streamed responses, so files past Lambda's 6 MB buffered limit are
 * served) as its origin, a viewer-request CloudFront Function
 * (functions/cdn/viewer-request.js) that maps each site host to
 * `/sites/<siteId>/<path>` (or `/previews/<siteId>/<deployId>/<path>`)
 * through a KeyValueStore of slug → site id, and a cache policy keyed on
 * that rewritten URI and the query string, whose TTLs come from the
 * gateway's Cache-Control (a year's `s-maxage` for a site, none for a
 * deploy's own address).
 *
 * With a sites domain and a certificate the distribution answers
 * `*.<sitesDomain>`; point that wildcard at the distribution's domain name
 * (a CNAME, or a Route 53 alias: lib/domains.ts makes one from a hosted
 * zone, and the certificate too). The certificate must be in ACM in
 * us-east-1 (CloudFront reads certificates from there only) and cover
 * `*.<sitesDomain>`. Without them the distribution has only its own
 * `*.cloudfront.net` name, under which no site host resolves.
 *
 * Everything here is synthesized offline: no lookups.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Duration, Names, Stack, Token, Validations } from 'aws-cdk-lib';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import type { aws_certificatemanager as acmRefs } from 'aws-cdk-lib/interfaces';
import {
  AllowedMethods,
  CachedMethods,
  CacheCookieBehavior,
  CacheHeaderBehavior,
  CachePolicy,
  CacheQueryStringBehavior,
  CfnConnectionGroup,
  type CfnDistribution,
  Distribution,
  Function as CloudFrontFunction,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  HttpVersion,
  KeyValueStore,
  PriceClass,
  SecurityPolicyProtocol,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { FunctionUrlOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { IFunctionUrl } from 'aws-cdk-lib/aws-lambda';
import { Construct, type IConstruct } from 'constructs';
import { PROJECT_ROOT } from './functions.js';

/** The viewer-request function's code, shipped as it is in the repository. */
export const VIEWER_REQUEST_CODE_PATH = path.join(PROJECT_ROOT, 'functions', 'cdn', 'viewer-request.js');

/**
 * The same function for the custom domains' distribution: the whole Host is
 * the key there (the file's BY_DOMAIN, set true).
 */
export function domainViewerRequestCode(): string {
  const code = fs.readFileSync(VIEWER_REQUEST_CODE_PATH, 'utf8');
  const flag = 'const BY_DOMAIN = false;';
  if (!code.includes(flag)) throw new Error(`${VIEWER_REQUEST_CODE_PATH} no longer declares "${flag}"`);
  return code.replace(flag, 'const BY_DOMAIN = true;');
}

/**
 * What the API and the deploy worker do with the custom domains' tenants
 * (functions/aws/cloudfront-tenants.ts): make one for a verified domain,
 * read it and its managed certificate, enable or disable it, delete it.
 */
export const DOMAIN_TENANT_ACTIONS = [
  'cloudfront:CreateDistributionTenant',
  'cloudfront:GetDistributionTenant',
  'cloudfront:UpdateDistributionTenant',
  'cloudfront:DeleteDistributionTenant',
  'cloudfront:GetManagedCertificateDetails',
  'cloudfront:TagResource',
];

/** What the API and the deploy worker use the KeyValueStore for: read an entry and the store's version, write one. */
export const SITE_HOSTS_WRITE_ACTIONS = [
  'cloudfront-keyvaluestore:DescribeKeyValueStore',
  'cloudfront-keyvaluestore:GetKey',
  'cloudfront-keyvaluestore:PutKey',
  'cloudfront-keyvaluestore:DeleteKey',
];

const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;
const US_EAST_1_CERTIFICATE = /^arn:aws[a-z-]*:acm:us-east-1:\d{12}:certificate\/[0-9a-zA-Z-]+$/;

/** A sites domain as given (`Sites.Example.com.` → `sites.example.com`), or an error naming what is wrong. */
export function sitesDomainOf(value: string): string {
  const domain = value.trim().toLowerCase().replace(/\.$/, '');
  if (!DOMAIN.test(domain))
    throw new Error(`sitesDomain must be a domain name like sites.example.com (no scheme, port or wildcard), got "${value}"`);
  return domain;
}

export interface SiteCdnProps {
  /** The gateway's Function URL (RESPONSE_STREAM). */
  readonly gatewayUrl: IFunctionUrl;
  /** Sites answer at `<slug>.<sitesDomain>`; needs `certificateArn` or `certificate`. */
  readonly sitesDomain?: string;
  /** An ACM certificate in us-east-1 for `*.<sitesDomain>`, by ARN. */
  readonly certificateArn?: string;
  /** The same, made by the app (lib/domains.ts). */
  readonly certificate?: acmRefs.ICertificateRef;
}

export class SiteCdn extends Construct {
  readonly distribution: Distribution;
  /** Slug → site id, read by the viewer-request function. */
  readonly siteHosts: KeyValueStore;
  readonly viewerRequest: CloudFrontFunction;
  readonly cachePolicy: CachePolicy;
  /** The domain under which sites answer: the sites domain, or else the distribution's own. */
  readonly sitesDomain: string;
  /**
   * Sites on their own domains: a multi-tenant distribution (connection
   * mode `tenant-only`) serving exactly as `distribution` does (same
   * origin, cache policy and function, by the whole Host), a tenant per
   * domain made at run time, each with a CloudFront-managed certificate.
   */
  readonly domainsDistribution: Distribution;
  readonly domainsViewerRequest: CloudFrontFunction;
  /** The connection group tenants join; domains CNAME to its routing endpoint. */
  readonly connectionGroup: CfnConnectionGroup;

  constructor(scope: Construct, id: string, props: SiteCdnProps) {
    super(scope, id);
    const sitesDomain = props.sitesDomain === undefined ? undefined : sitesDomainOf(props.sitesDomain);
    const certificateArn = props.certificateArn?.trim() || undefined;
    if (certificateArn && props.certificate)
      throw new Error('sitesCertificateArn and a certificate made from the hosted zone cannot both be given');
    if (!sitesDomain !== !(certificateArn || props.certificate)) {
      throw new Error(
        'sitesDomain and sitesCertificateArn go together (or a hosted zone, from which the certificate is made): CloudFront serves an alternate domain only with a certificate for it',
      );
    }
    if (certificateArn && !Token.isUnresolved(certificateArn) && !US_EAST_1_CERTIFICATE.test(certificateArn)) {
      throw new Error(
        `sitesCertificateArn must be an ACM certificate in us-east-1 (CloudFront reads certificates from there only), got "${certificateArn}"`,
      );
    }

    this.siteHosts = new KeyValueStore(this, 'SiteHosts', { comment: 'Cairn: site host label (slug) -> site id' });

    this.viewerRequest = new CloudFrontFunction(this, 'ViewerRequest', {
      comment: 'Cairn: site host -> /sites/<siteId>/<path> (the cache key)',
      code: FunctionCode.fromFile({ filePath: VIEWER_REQUEST_CODE_PATH }),
      runtime: FunctionRuntime.JS_2_0,
      keyValueStore: this.siteHosts,
    });

    // The rewritten URI and the query string are the key: `_redirects`
    // carry the query to their targets, so two queries can be two answers.
    // No header or cookie is in it, or passed on: the Host must stay the
    // Function URL's own. The gateway's Cache-Control sets the TTL (default
    // 0: an answer without one is not kept).
    this.cachePolicy = new CachePolicy(this, 'SitePages', {
      comment: 'Cairn sites: keyed on the rewritten URI and query; TTL from the gateway',
      minTtl: Duration.seconds(0),
      defaultTtl: Duration.seconds(0),
      maxTtl: Duration.days(365),
      headerBehavior: CacheHeaderBehavior.none(),
      cookieBehavior: CacheCookieBehavior.none(),
      queryStringBehavior: CacheQueryStringBehavior.all(),
      enableAcceptEncodingGzip: true,
      enableAcceptEncodingBrotli: true,
    });

    this.distribution = new Distribution(this, 'Distribution', {
      comment: 'Cairn: sites',
      defaultBehavior: {
        // How long CloudFront waits for the origin to answer: its longest
        // without a quota increase. No response completion timeout, so
        // CloudFront puts no ceiling on a whole response
        // (https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_Origin.html):
        // the gateway's own timeout (15 minutes) bounds a streamed file.
        origin: new FunctionUrlOrigin(props.gatewayUrl, { readTimeout: Duration.seconds(60) }),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        cachedMethods: CachedMethods.CACHE_GET_HEAD,
        cachePolicy: this.cachePolicy,
        compress: true,
        functionAssociations: [{ function: this.viewerRequest, eventType: FunctionEventType.VIEWER_REQUEST }],
      },
      domainNames: sitesDomain ? [`*.${sitesDomain}`] : undefined,
      certificate: certificateArn ? Certificate.fromCertificateArn(this, 'Certificate', certificateArn) : props.certificate,
      minimumProtocolVersion: sitesDomain ? SecurityPolicyProtocol.TLS_V1_2_2021 : undefined,
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_ALL,
    });

    this.sitesDomain = sitesDomain ?? this.distribution.distributionDomainName;

    // Sites' own domains. A standard distribution holds 100 alternate
    // domain names and one certificate; a multi-tenant distribution holds
    // 10,000 tenants per account by default (both adjustable), each with
    // its own CloudFront-managed certificate
    // (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/cloudfront-limits.html,
    // "Quotas on multi-tenant distributions"). Aliases, price class and
    // IPv6 are not the distribution's but the connection group's
    // (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-cloudfront-distribution-distributionconfig.html).
    this.domainsViewerRequest = new CloudFrontFunction(this, 'DomainsViewerRequest', {
      comment: "Cairn: a site's own domain -> /sites/<siteId>/<path>, or 301 to its primary",
      code: FunctionCode.fromInline(domainViewerRequestCode()),
      runtime: FunctionRuntime.JS_2_0,
      keyValueStore: this.siteHosts,
    });
    this.domainsDistribution = new Distribution(this, 'DomainsDistribution', {
      comment: 'Cairn: sites on their own domains (a tenant per domain)',
      defaultBehavior: {
        origin: new FunctionUrlOrigin(props.gatewayUrl, { readTimeout: Duration.seconds(60) }),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        cachedMethods: CachedMethods.CACHE_GET_HEAD,
        cachePolicy: this.cachePolicy,
        compress: true,
        functionAssociations: [{ function: this.domainsViewerRequest, eventType: FunctionEventType.VIEWER_REQUEST }],
      },
      httpVersion: HttpVersion.HTTP2_AND_3,
    });
    const cfnDomains = this.domainsDistribution.node.defaultChild as CfnDistribution;
    cfnDomains.addPropertyOverride('DistributionConfig.ConnectionMode', 'tenant-only');
    cfnDomains.addPropertyDeletionOverride('DistributionConfig.IPV6Enabled');
    cfnDomains.addPropertyDeletionOverride('DistributionConfig.PriceClass');
    this.connectionGroup = new CfnConnectionGroup(this, 'DomainsConnectionGroup', {
      name: Names.uniqueResourceName(this, { maxLength: 64, separator: '-' }),
      enabled: true,
      ipv6Enabled: true,
    });

    // cdk-nag: the choices made for a CDN of public web sites, with why.
    Validations.of(this.distribution).acknowledge(
      { id: 'AwsSolutions-CFR1', reason: 'Sites are public pages for readers anywhere: no geographic restriction' },
      {
        id: 'AwsSolutions-CFR2',
        reason:
          "No AWS WAF web ACL by default: it would cost $5 a month plus $1 per rule and $0.60 per million requests, more than the idle stack, for read-only GET/HEAD traffic to static files. Associate one (the distribution's webAclId) if sites draw abuse",
      },
      {
        id: 'AwsSolutions-CFR3',
        reason:
          "Standard logs would need a logging bucket with ACLs (and its own findings) for data nobody here reads: the gateway logs every request that reaches the origin, and CloudFront's metrics count the rest. Turn on standard logging if per-request edge logs are wanted",
      },
    );
    Validations.of(this.domainsDistribution).acknowledge(
      { id: 'AwsSolutions-CFR1', reason: 'Sites are public pages for readers anywhere: no geographic restriction' },
      {
        id: 'AwsSolutions-CFR2',
        reason: 'No AWS WAF web ACL by default, as for the sites distribution (cost); a tenant or the distribution can take one',
      },
      {
        id: 'AwsSolutions-CFR3',
        reason: 'No standard logs, as for the sites distribution: the gateway logs every request that reaches the origin',
      },
      {
        id: 'AwsSolutions-CFR4',
        reason:
          "A tenant-only distribution has no name of its own to serve: each tenant's domain is served with its CloudFront-managed certificate",
      },
    );
    if (!sitesDomain) {
      Validations.of(this.distribution).acknowledge({
        id: 'AwsSolutions-CFR4',
        reason:
          "Without a sites domain the distribution has only CloudFront's default *.cloudfront.net certificate, whose TLS policy CloudFront sets; no site host resolves there. With a domain its minimum is TLS 1.2 (2021)",
      });
    }
  }

  /** CreateInvalidation on this distribution only (purgeCache and publishing). */
  grantPurge(grantee: IGrantable): Grant {
    return this.distribution.grantCreateInvalidation(grantee);
  }

  /**
   * Make, follow and let go of the custom domains' tenants: on this
   * distribution and connection group, and the account's tenants, whose
   * ids are made at run time (a tenant's ARN names no distribution).
   */
  grantDomainTenants(grantee: IGrantable & IConstruct): Grant {
    const stack = Stack.of(this);
    const tenants = stack.formatArn({ service: 'cloudfront', region: '', resource: 'distribution-tenant', resourceName: '*' });
    const partition = Token.isUnresolved(stack.partition) ? '<AWS::Partition>' : stack.partition;
    const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
    Validations.of(grantee).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:${partition}:cloudfront::${account}:distribution-tenant/*]`,
      reason:
        "Domain tenants are made at run time, one per verified domain, so their ids (the ARN's last part) are not known at deploy time; the actions are the tenants' own (create, get, update, delete, their managed certificate), and creating one also needs this distribution and connection group",
    });
    return Grant.addToPrincipal({
      grantee,
      actions: DOMAIN_TENANT_ACTIONS,
      resourceArns: [this.domainsDistribution.distributionArn, this.connectionGroup.attrArn, tenants],
    });
  }

  /** Read and write this KeyValueStore's entries (where sites change, and the worker's retries). */
  grantSiteHostsWrite(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({ grantee, actions: SITE_HOSTS_WRITE_ACTIONS, resourceArns: [this.siteHosts.keyValueStoreArn] });
  }
}
