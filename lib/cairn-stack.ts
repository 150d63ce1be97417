/**
 * The Cairn stack: data (tables, block bucket, KMS key), the five functions
 * with least-privilege grants, their endpoints and the deploy pipeline,
 * each part in a file of its own:
 *
 * - lib/stack-options.ts: the deployer's options (CairnStackProps), checked,
 *   and the environment every function starts from;
 * - lib/data.ts: the tables, the block bucket and the secrets key;
 * - lib/graphql-api.ts: the GraphQL function (hooks, imports and the web app
 *   too) behind an HTTP API;
 * - lib/s3-endpoint.ts: the S3 function behind a REST API that streams to it
 *   (lib/storage-api.ts);
 * - lib/part-staging.ts: the storage API's CloudFront distribution (the
 *   S3-compatible endpoint) and its part-staging resource, which stores
 *   UploadParts over 4 MiB in the bucket around the S3 function;
 * - lib/gateway.ts: the gateway function with its Function URL, and the one
 *   CloudFront distribution in front of it that serves the sites
 *   (lib/site-cdn.ts), which publishing and purgeCache invalidate;
 * - lib/deploy-pipeline.ts: an SQS queue (with a dead-letter queue) in front
 *   of the deploy worker, a CodeBuild project for site builds with a rule
 *   that hands their ends to the worker, the schedule of the worker's tick,
 *   and the preview function the worker invokes without waiting
 *   (lib/preview.ts);
 * - lib/domains.ts: given a Route 53 hosted zone, the custom domains,
 *   certificates and records of the S3 API, public object URLs, the API and
 *   the sites; given DNSLink zones, the grant to write sites' `_dnslink`
 *   records in them;
 * - lib/sign-in-settings.ts: OpenID Connect sign-in and e-mail for the
 *   GraphQL function, from context, their secrets in Secrets Manager;
 * - lib/first-account.ts: the first account, made by the first deploy, its
 *   credentials in Secrets Manager;
 * - lib/monitoring.ts: alarms on the functions, the dead-letter queue and the
 *   APIs to an SNS topic, beside a dashboard.
 *
 * The parts are made in the stack's own scope (functions taking the stack,
 * not constructs of their own), so every resource keeps the logical id it
 * had when this constructor made it all: a deployed stack updates in place.
 * This constructor wires them: what each function is told of the others
 * (URLs, only where they create no cycle), and the outputs.
 *
 * It synthesizes offline: no context lookups, no account or region lookups.
 */
import { CfnOutput, Stack } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type { Project } from 'aws-cdk-lib/aws-codebuild';
import type { Rule } from 'aws-cdk-lib/aws-events';
import type { FunctionUrl } from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Schedule } from 'aws-cdk-lib/aws-scheduler';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { TABLES } from '../functions/core/data/tables.js';
import { CairnData, pascal } from './data.js';
import { addDeployPipeline } from './deploy-pipeline.js';
import { CairnDomains, grantDnsLinkRecords } from './domains.js';
import { FirstAccount } from './first-account.js';
import { addGateway, addSites } from './gateway.js';
import { addGraphqlApi, addGraphqlFunction } from './graphql-api.js';
import { CairnMonitoring } from './monitoring.js';
import type { DeployPreviews } from './preview.js';
import { addPartStaging, type PartStaging } from './part-staging.js';
import { addS3Endpoint } from './s3-endpoint.js';
import type { SiteCdn } from './site-cdn.js';
import { addSignInSettings, type SignInSettings } from './sign-in-settings.js';
import { functionEnvironment, stackOptionsOf, type CairnStackProps } from './stack-options.js';
import type { StreamingRestApi } from './storage-api.js';

export { tableEnvVar, type CairnLogLevel, type CairnStackProps } from './stack-options.js';

export interface CairnFunctions {
  readonly graphql: NodejsFunction;
  readonly s3: NodejsFunction;
  readonly gateway: NodejsFunction;
  readonly deployWorker: NodejsFunction;
  /** Takes the preview images of deploys (lib/preview.ts). */
  readonly preview: NodejsFunction;
}

export class CairnStack extends Stack {
  readonly data: CairnData;
  readonly functions: CairnFunctions;
  readonly api: HttpApi;
  /** The HTTP API's base URL: `https://<apiDomain>`, or its execute-api address. */
  readonly apiUrl: string;
  /** The S3-compatible endpoint: a REST API streaming to the S3 function. */
  readonly storageApi: StreamingRestApi;
  /** The URL S3 clients are given (the `StorageEndpoint` output): the storage domain, or the distribution's address. */
  readonly storageEndpoint: string;
  /** The storage API's distribution and its part-staging resource (UploadParts over 4 MiB). */
  readonly partStaging: PartStaging;
  readonly gatewayUrl: FunctionUrl;
  readonly deployWorkerSchedule: Schedule;
  readonly deployQueue: Queue;
  readonly deployDeadLetters: Queue;
  readonly buildProject: Project;
  readonly buildEnded: Rule;
  readonly siteCdn: SiteCdn;
  readonly previews: DeployPreviews;
  /** The custom domains, with a hosted zone. */
  readonly domains?: CairnDomains;
  /** The first account, made on the first deploy; its credentials in Secrets Manager. */
  readonly firstAccount: FirstAccount;
  readonly monitoring: CairnMonitoring;
  /** OIDC sign-in and e-mail, where the context asks for them: the secret holding their secrets. */
  readonly signInSettings: SignInSettings;

  constructor(scope: Construct, id: string, props: CairnStackProps = {}) {
    super(scope, id, props);

    const data = new CairnData(this, 'Data');
    this.data = data;
    const options = stackOptionsOf(props);
    const environment = functionEnvironment(data, options, props.logLevel);

    const graphql = addGraphqlFunction(this, {
      data,
      environment,
      introspection: props.graphqlIntrospection,
      signup: props.signup,
    });
    this.signInSettings = addSignInSettings(this, graphql);
    const s3Endpoint = addS3Endpoint(this, { data, environment });
    const s3 = s3Endpoint.function;
    this.storageApi = s3Endpoint.api;
    this.partStaging = addPartStaging(this, { data, environment, storageApi: this.storageApi, s3 });
    const gateway = addGateway(this, { data, environment });
    this.gatewayUrl = gateway.url;
    const deploys = addDeployPipeline(this, {
      data,
      environment,
      api: graphql,
      concurrency: props.deployConcurrency,
      reservedConcurrency: props.workerConcurrency,
      buildTimeoutSeconds: props.buildTimeoutSeconds,
    });
    const deployWorker = deploys.worker;
    const preview = deploys.previews.function;
    this.deployQueue = deploys.queue;
    this.deployDeadLetters = deploys.deadLetters;
    this.buildProject = deploys.buildProject;
    this.buildEnded = deploys.buildEnded;
    this.deployWorkerSchedule = deploys.schedule;
    this.previews = deploys.previews;
    this.functions = { graphql, s3, gateway: gateway.function, deployWorker, preview };

    // Custom domains from the hosted zone: the S3 API's, public object URLs'
    // (the gateway behind a REST API of their own), the API's (mapped below)
    // and the sites' (lib/gateway.ts).
    if (options.hostedZone) {
      this.domains = new CairnDomains(this, 'Domains', {
        hostedZone: options.hostedZone,
        bucketEndpointDomain: options.bucketEndpointDomain,
        storagePublicDomain: options.storagePublicDomain,
        apiDomain: options.apiDomain,
        storageApi: this.storageApi,
        gateway: gateway.function,
        gatewayTimeout: gateway.timeout,
      });
    }
    // Without a storage domain, clients are given the distribution: through it, parts over 4 MiB are staged.
    this.storageEndpoint = this.domains?.storageEndpoint ?? this.partStaging.endpoint;

    const graphqlApi = addGraphqlApi(this, graphql);
    this.api = graphqlApi.api;
    // The API's address as users and git hosts see it: its custom domain where there is one.
    this.apiUrl = this.domains?.mapApi(this.api, graphqlApi.stage) ?? this.api.apiEndpoint;

    // URLs, never a function's own (a function's URL depends on the function).
    // The gateway gets none of the others: the S3 function already depends on
    // the gateway's URL, so the reverse would be a cycle.
    for (const fn of [graphql, s3, deployWorker, preview]) {
      fn.addEnvironment('CAIRN_GATEWAY_URL', this.gatewayUrl.url);
      if (!options.publicGatewayUrl) fn.addEnvironment('CAIRN_PUBLIC_GATEWAY_URL', this.gatewayUrl.url);
    }
    for (const fn of [graphql, deployWorker]) {
      fn.addEnvironment('CAIRN_STORAGE_ENDPOINT', this.storageEndpoint);
    }
    graphql.addEnvironment('CAIRN_BASE_URL', this.apiUrl);
    // The web app's origin, which the S3 API lets in for every bucket (functions/s3/cors.ts).
    s3.addEnvironment('CAIRN_BASE_URL', this.apiUrl);

    // Sites: one distribution in front of the gateway, which the API and the worker may change.
    this.siteCdn = addSites(this, {
      gatewayUrl: this.gatewayUrl,
      sitesDomain: options.sitesDomain,
      sitesCertificateArn: options.sitesCertificateArn,
      sitesCertificate: props.sitesCertificate,
      domains: this.domains,
      publishers: [graphql, deployWorker],
    });

    // Sites' DNSLink records, in the hosted zones named: written where sites publish (the API, the worker).
    for (const fn of [graphql, deployWorker]) grantDnsLinkRecords(fn, options.dnsLinkZones);

    // The first account, on the first deploy only, told the endpoints it can know now.
    this.firstAccount = new FirstAccount(this, 'FirstAccount', {
      data,
      endpoints: { storageEndpoint: this.storageEndpoint, graphqlUrl: `${this.apiUrl}/graphql`, gatewayUrl: this.gatewayUrl.url },
      logLevel: props.logLevel,
    });

    // Alarms (to one SNS topic; -c cairn:alarmEmail subscribes an address) and a dashboard.
    this.monitoring = new CairnMonitoring(this, 'Monitoring', {
      // The part-staging authoriser too: a crash or timeout of it fails every large part (a refusal is no error).
      functions: { ...this.functions, partStaging: this.partStaging.authorizerFunction },
      deployDeadLetterQueue: this.deployDeadLetters,
      httpApi: this.api,
      restApi: this.storageApi.api,
      publicObjectsApi: this.domains?.publicObjectsApi?.api,
      tables: data.tables,
    });

    this.addOutputs();
  }

  private addOutputs(): void {
    const { tables, blockBucket } = this.data;
    new CfnOutput(this, 'WebAppUrl', {
      description: 'The web app: sign in with an API key',
      value: `${this.apiUrl}/`,
    });
    new CfnOutput(this, 'GraphqlUrl', {
      description: 'The GraphQL hosting API',
      value: `${this.apiUrl}/graphql`,
    });
    new CfnOutput(this, 'StorageEndpoint', {
      description: this.domains?.storageEndpoint
        ? 'The S3-compatible endpoint (path style, and virtual-host style at <bucket>.<domain>)'
        : 'The S3-compatible endpoint: the storage API behind CloudFront (path style; parts of up to 10 MB)',
      value: this.storageEndpoint,
    });
    new CfnOutput(this, 'StorageCdnUrl', {
      description: "The storage API's CloudFront distribution (path style), through which UploadParts over 4 MiB are staged",
      value: this.partStaging.endpoint,
    });
    new CfnOutput(this, 'StorageApiUrl', {
      description:
        "The storage REST API's own address, stage included (bodies of at most 4 MiB; the stage is part of the path clients sign)",
      value: this.storageApi.executeApiUrl,
    });
    new CfnOutput(this, 'GatewayUrl', {
      description: 'The IPFS gateway (/ipfs/<cid>)',
      value: this.gatewayUrl.url,
    });
    new CfnOutput(this, 'SitesDomain', {
      description: 'Sites answer at https://<slug>.<this domain> (and <deployId>--<slug>.<this domain> for one deploy)',
      value: this.siteCdn.sitesDomain,
    });
    new CfnOutput(this, 'SitesCdnDomainName', {
      description: "The sites distribution's own domain name: point *.<sitesDomain> at it (CNAME or alias)",
      value: this.siteCdn.distribution.distributionDomainName,
    });
    new CfnOutput(this, 'SitesDistributionId', {
      description: 'The CloudFront distribution in front of the sites (purgeCache invalidates /sites/<siteId>/*)',
      value: this.siteCdn.distribution.distributionId,
    });
    new CfnOutput(this, 'DeployDeadLetterQueueUrl', {
      description: 'Deploy messages the worker failed on three times',
      value: this.deployDeadLetters.queueUrl,
    });
    new CfnOutput(this, 'BlockBucketName', {
      description: 'The S3 bucket holding IPFS blocks and the datastore',
      value: blockBucket.bucketName,
    });
    for (const spec of TABLES) {
      new CfnOutput(this, `${pascal(spec.name)}TableName`, {
        description: spec.description,
        value: tables[spec.name].tableName,
      });
    }
  }
}
