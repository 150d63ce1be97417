/**
 * The Cairn stack: data (tables, block bucket, KMS key), the four functions
 * with least-privilege grants, their endpoints (an HTTP API for GraphQL, a
 * REST API streaming to the S3 function for the S3-compatible endpoint
 * (lib/storage-api.ts), a Function URL for the gateway), and the
 * deploy pipeline: an SQS queue (with a dead-letter queue) in front of the
 * deploy worker, a CodeBuild project for site builds with a rule that hands
 * their ends to the worker, and the schedule of the worker's tick. Sites are
 * served through one CloudFront distribution in front of the gateway
 * (lib/site-cdn.ts), which publishing and purgeCache invalidate. Deploys
 * that end DEPLOYED get their preview image from a function of their own
 * (lib/preview.ts), which the worker invokes without waiting. Given a
 * Route 53 hosted zone, the S3 API, public object URLs and sites get their
 * custom domains, certificates and records (lib/domains.ts). The first
 * deploy makes the first account, its credentials in Secrets Manager
 * (lib/first-account.ts); alarms on the functions, the dead-letter queue
 * and the APIs go to an SNS topic, beside a dashboard (lib/monitoring.ts).
 *
 * It synthesizes offline: no context lookups, no account or region lookups.
 */
import * as path from 'node:path';
import { type CfnElement, CfnOutput, Duration, Size, Stack, type StackProps, Token, Validations } from 'aws-cdk-lib';
import { BuildSpec, ComputeType, LinuxBuildImage, Project } from 'aws-cdk-lib/aws-codebuild';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { AccessLogField, AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { CorsHttpMethod, HttpApi, HttpMethod, HttpStage, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { FunctionUrlAuthType, InvokeMode, type FunctionUrl } from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { Construct, IConstruct } from 'constructs';
import { TABLES, type TableName } from '../functions/core/data/tables.js';
import { CairnData, pascal } from './data.js';
import { PLAYGROUND_ASSETS, PLAYGROUND_BUNDLE_DIR } from '../functions/graphql/playground-assets.js';
import { CairnFunction, LAMBDA_SCHEMA_PATH, PROJECT_ROOT } from './functions.js';
import { buildWebApp, WEB_APP_BUNDLE_DIR } from '../functions/web-app/build.js';
import { REST_MAX_REQUEST_BODY, STORAGE_API_STAGE, StreamingRestApi } from './storage-api.js';
import { SiteCdn, sitesDomainOf } from './site-cdn.js';
import { CairnDomains, domainNameOf, hostedZoneOf, inZone, sitesCertificate } from './domains.js';
import { FirstAccount } from './first-account.js';
import { CairnMonitoring } from './monitoring.js';
import type { aws_certificatemanager as acmRefs } from 'aws-cdk-lib/interfaces';
import { DeployPreviews } from './preview.js';
import {
  BUILD_QUEUED_TIMEOUT_MINUTES,
  codeBuildTimeoutMinutes,
  DEFAULT_BUILD_IMAGE,
  DEPLOY_BUILDS_PREFIX,
  WORKER_TIMEOUT_MINUTES,
} from '../functions/deploy-worker/limits.js';

/** Where the synth writes the web app's files before they are copied into the GraphQL function's bundle. */
/** Helia's datastore version record: the node's datastore is under `datastore/` in the bucket (functions/core/ipfs/node.ts). */
const IPFS_DATASTORE_VERSION_KEY = 'datastore/version';
const WEB_APP_BUILD_DIR = 'cdk.out/web-app';

/** The GraphiQL playground's files, copied into the GraphQL function's bundle. */
const PLAYGROUND_FILES = Object.entries(PLAYGROUND_ASSETS).map(([name, modulePath]) => ({
  from: `node_modules/${modulePath}`,
  to: `${PLAYGROUND_BUNDLE_DIR}/${name}`,
}));

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
   * How many deploys run at once: the worker's SQS concurrency (at least 2,
   * SQS's floor). Keep it within the account's CodeBuild concurrency, which
   * can be 1 to 5 on a new account.
   * @default 2
   */
  readonly deployConcurrency?: number;
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
}

export interface CairnFunctions {
  readonly graphql: NodejsFunction;
  readonly s3: NodejsFunction;
  readonly gateway: NodejsFunction;
  readonly deployWorker: NodejsFunction;
  /** Takes the preview images of deploys (lib/preview.ts). */
  readonly preview: NodejsFunction;
}

/** `accounts` → `CAIRN_ACCOUNTS_TABLE`, the variable the runtime reads the physical name from. */
export function tableEnvVar(name: TableName): string {
  return `CAIRN_${name.toUpperCase()}_TABLE`;
}

function nonEmpty(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v === undefined || v === '' ? undefined : v;
}

export class CairnStack extends Stack {
  readonly data: CairnData;
  readonly functions: CairnFunctions;
  readonly api: HttpApi;
  /** The HTTP API's base URL: `https://<apiDomain>`, or its execute-api address. */
  readonly apiUrl: string;
  /** The S3-compatible endpoint: a REST API streaming to the S3 function. */
  readonly storageApi: StreamingRestApi;
  /** The URL S3 clients are given (the `StorageEndpoint` output). */
  readonly storageEndpoint: string;
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

  constructor(scope: Construct, id: string, props: CairnStackProps = {}) {
    super(scope, id, props);

    const data = new CairnData(this, 'Data');
    this.data = data;
    const { tables, blockBucket, secretsKey } = data;

    // Deployer options go to every function; URLs are added further down,
    // each only where it creates no cycle.
    const options: Record<string, string> = {};
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
    if (bucketEndpointDomain) options.CAIRN_BUCKET_ENDPOINT_DOMAIN = bucketEndpointDomain;
    if (storagePublicDomain) options.CAIRN_STORAGE_PUBLIC_DOMAIN = storagePublicDomain;
    if (publicGatewayUrl) options.CAIRN_PUBLIC_GATEWAY_URL = publicGatewayUrl;
    const sitesDomain = nonEmpty(props.sitesDomain) === undefined ? undefined : sitesDomainOf(props.sitesDomain!);
    if (sitesDomain) options.CAIRN_SITES_DOMAIN = sitesDomain;

    const environment: Record<string, string> = {
      ...Object.fromEntries(TABLES.map((spec) => [tableEnvVar(spec.name), tables[spec.name].tableName])),
      CAIRN_BLOCK_BUCKET: blockBucket.bucketName,
      CAIRN_KMS_KEY_ID: secretsKey.keyId,
      CAIRN_LOG_LEVEL: props.logLevel ?? 'info',
      NODE_OPTIONS: '--enable-source-maps',
      ...options,
    };

    const introspectionContext: unknown = this.node.tryGetContext('cairn:graphqlIntrospection');
    const graphqlIntrospection = props.graphqlIntrospection ?? (introspectionContext === true || introspectionContext === 'true');
    // The web app, built at synth and copied into the GraphQL function's
    // bundle, which serves it at / and /app/ (functions/web-app/serve.ts).
    const webAppFiles = buildWebApp(path.join(PROJECT_ROOT, WEB_APP_BUILD_DIR)).map((name) => ({
      from: `${WEB_APP_BUILD_DIR}/${name}`,
      to: `${WEB_APP_BUNDLE_DIR}/${name}`,
    }));
    const graphql = new CairnFunction(this, 'Graphql', {
      name: 'graphql',
      tracing: true,
      description: 'Cairn: GraphQL hosting API',
      memorySize: 512,
      timeout: Duration.seconds(29),
      environment: {
        ...environment,
        CAIRN_SCHEMA_PATH: LAMBDA_SCHEMA_PATH,
        CAIRN_GRAPHQL_PLAYGROUND_DIR: `/var/task/${PLAYGROUND_BUNDLE_DIR}`,
        CAIRN_GRAPHQL_INTROSPECTION: String(graphqlIntrospection),
      },
      extraFiles: ['schema.graphql', ...PLAYGROUND_FILES, ...webAppFiles],
    }).function;

    const s3Timeout = Duration.seconds(60);
    const s3 = new CairnFunction(this, 'S3', {
      name: 's3',
      tracing: true,
      description: 'Cairn: S3-compatible storage endpoint',
      memorySize: 1024,
      timeout: s3Timeout,
      // What one request through the REST API can carry to Lambda (lib/storage-api.ts).
      environment: { ...environment, CAIRN_MAX_REQUEST_BODY: String(REST_MAX_REQUEST_BODY) },
    }).function;

    const gatewayTimeout = Duration.seconds(60);
    const gateway = new CairnFunction(this, 'Gateway', {
      name: 'gateway',
      tracing: true,
      description: 'Cairn: IPFS gateway and public object URLs',
      memorySize: 1024,
      timeout: gatewayTimeout,
      environment,
    }).function;

    const deployConcurrency = Math.max(2, Math.floor(props.deployConcurrency ?? 2));
    const buildTimeoutSeconds = Math.max(1, Math.floor(props.buildTimeoutSeconds ?? 900));
    const deployWorker = new CairnFunction(this, 'DeployWorker', {
      name: 'deploy-worker',
      tracing: true,
      description: 'Cairn: deploy worker (SQS deploys, CodeBuild ends, a tick every minute)',
      memorySize: 2048,
      timeout: Duration.minutes(WORKER_TIMEOUT_MINUTES),
      // Checkouts and publish directories live under /tmp while a deploy runs.
      ephemeralStorageSize: Size.gibibytes(4),
      // Room beside the queue's own ceiling for the tick and CodeBuild's events.
      reservedConcurrentExecutions: deployConcurrency + 2,
      environment: { ...environment, CAIRN_BUILD_TIMEOUT: String(buildTimeoutSeconds) },
    }).function;

    // Deploys: SQS in front of the worker. A message is at most a claim
    // request, so redelivery is harmless; one that keeps failing before
    // its deploy could be ended lands in the dead-letter queue.
    this.deployDeadLetters = new Queue(this, 'DeployDeadLetters', {
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.deployQueue = new Queue(this, 'DeployQueue', {
      // Six times the worker's timeout, as Lambda asks for SQS sources.
      visibilityTimeout: Duration.minutes(6 * WORKER_TIMEOUT_MINUTES),
      retentionPeriod: Duration.days(4),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deployDeadLetters, maxReceiveCount: 3 },
    });
    deployWorker.addEventSource(
      new SqsEventSource(this.deployQueue, { batchSize: 1, reportBatchItemFailures: true, maxConcurrency: deployConcurrency }),
    );

    // Builds: one CodeBuild project whose every build brings its own
    // image, environment, buildspec, source and artifacts (the worker's
    // StartBuild overrides); the project holds only the defaults and the role.
    const buildLogs = new LogGroup(this, 'BuildLogs', { retention: RetentionDays.ONE_MONTH });
    this.buildProject = new Project(this, 'Builds', {
      description: 'Cairn: site builds (each started by the deploy worker with its own settings)',
      buildSpec: BuildSpec.fromObject({
        version: '0.2',
        phases: { build: { commands: ['echo "builds are started by the Cairn deploy worker with their own buildspec" && exit 1'] } },
      }),
      environment: { buildImage: LinuxBuildImage.fromDockerRegistry(DEFAULT_BUILD_IMAGE), computeType: ComputeType.SMALL },
      timeout: Duration.minutes(codeBuildTimeoutMinutes(buildTimeoutSeconds * 1000)),
      queuedTimeout: Duration.minutes(BUILD_QUEUED_TIMEOUT_MINUTES),
      logging: { cloudWatch: { logGroup: buildLogs } },
    });
    // A build reads its checkout and writes its publish directory under the
    // build files' prefix, and nothing else of the bucket.
    this.buildProject.addToRolePolicy(
      new PolicyStatement({
        actions: ['s3:GetObject', 's3:GetObjectVersion', 's3:PutObject'],
        resources: [blockBucket.arnForObjects(`${DEPLOY_BUILDS_PREFIX}*`)],
      }),
    );
    this.buildProject.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:GetBucketAcl', 's3:GetBucketLocation'], resources: [blockBucket.bucketArn] }),
    );
    {
      const project = this.nagRef(this.buildProject);
      const region = Token.isUnresolved(this.region) ? '<AWS::Region>' : this.region;
      const account = Token.isUnresolved(this.account) ? '<AWS::AccountId>' : this.account;
      const acknowledge = (id: string, reason: string) => Validations.of(this.buildProject).acknowledge({ id, reason });
      acknowledge(
        'AwsSolutions-CB4',
        'The project keeps nothing of its own to encrypt: a build reads its checkout from and writes its publish directory to the block bucket (S3-managed encryption, TLS only), and logs to CloudWatch Logs; a customer managed key would add $1 a month and protect nothing more',
      );
      acknowledge(
        'AwsSolutions-CB5',
        "A site's build runs in the image its settings name (dockerImage), as on Netlify; the default is the public Node image (node:slim), which builds need and CodeBuild's curated images do not carry at the same versions",
      );
      acknowledge(
        `AwsSolutions-IAM5[Resource::<${this.nagRef(blockBucket)}.Arn>/${DEPLOY_BUILDS_PREFIX}*]`,
        "A build reads and writes its own deploy's files under the build files' prefix of the block bucket, and nothing else of it",
      );
      acknowledge(
        `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:codebuild:${region}:${account}:report-group/<${project}>-*]`,
        "CodeBuild's default grant: report groups of this project only",
      );
      acknowledge(
        `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:${region}:${account}:log-group:/aws/codebuild/<${project}>:*]`,
        "CodeBuild's default grant: the log streams of this project's default log group only",
      );
    }

    this.buildEnded = new Rule(this, 'BuildEnded', {
      description: 'Cairn: a site build ended; the deploy worker takes its deploy up',
      eventPattern: {
        source: ['aws.codebuild'],
        detailType: ['CodeBuild Build State Change'],
        detail: {
          'project-name': [this.buildProject.projectName],
          'build-status': ['SUCCEEDED', 'FAILED', 'FAULT', 'STOPPED', 'TIMED_OUT'],
        },
      },
      // Throttled by the reserved concurrency, an event is retried; the tick ends a deploy whose event never came.
      targets: [new LambdaFunction(deployWorker, { retryAttempts: 20, maxEventAge: Duration.hours(2) })],
    });

    // Preview images: the worker asks, the preview function takes them (lib/preview.ts).
    this.previews = new DeployPreviews(this, 'Previews', { data, environment, deployWorker });
    const preview = this.previews.function;

    this.functions = { graphql, s3, gateway, deployWorker, preview };

    // Least privilege: each function gets exactly what it uses.
    tables.accounts.grantReadWriteData(graphql);
    tables.sites.grantReadWriteData(graphql);
    tables.deploys.grantReadWriteData(graphql);
    // The CAR import endpoint stores blocks and records import pins (functions/core/hosting/imports.ts).
    tables.objects.grantReadWriteData(graphql);
    blockBucket.grantReadWrite(graphql);
    // Sealing and opening storage secrets and site tokens is Encrypt and Decrypt, nothing more (functions/core/auth/secrets.ts).
    secretsKey.grant(graphql, 'kms:Encrypt', 'kms:Decrypt');

    tables.accounts.grantReadWriteData(s3);
    tables.objects.grantReadWriteData(s3);
    blockBucket.grantReadWrite(s3);
    secretsKey.grant(s3, 'kms:Encrypt', 'kms:Decrypt');

    // Public objects and /ipfs/ read objects; a site address reads its site,
    // then its published deploy or the deploy a preview host names
    // (functions/core/hosting/site-hosts.ts). Nothing the gateway does writes.
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

    tables.sites.grantReadWriteData(deployWorker);
    // Opens a site's repository access token when its deploy clones (never seals anything).
    secretsKey.grantDecrypt(deployWorker);
    tables.deploys.grantReadWriteData(deployWorker);
    tables.objects.grantReadWriteData(deployWorker);
    blockBucket.grantReadWrite(deployWorker);

    // triggerDeploy sends; cancelDeploy stops a build. The worker consumes
    // (granted with its event source), sends lost messages again, and runs builds.
    this.deployQueue.grantSendMessages(graphql);
    this.deployQueue.grantSendMessages(deployWorker);
    graphql.addToRolePolicy(new PolicyStatement({ actions: ['codebuild:StopBuild'], resources: [this.buildProject.projectArn] }));
    deployWorker.addToRolePolicy(
      new PolicyStatement({
        actions: ['codebuild:StartBuild', 'codebuild:StopBuild', 'codebuild:BatchGetBuilds'],
        resources: [this.buildProject.projectArn],
      }),
    );
    for (const fn of [graphql, deployWorker]) fn.addEnvironment('CAIRN_DEPLOY_QUEUE_URL', this.deployQueue.queueUrl);
    deployWorker.addEnvironment('CAIRN_BUILD_PROJECT', this.buildProject.projectName);

    // Endpoints. The S3 function verifies SigV4 itself (against the host and
    // path the client signed); the gateway is public.
    this.storageApi = new StreamingRestApi(this, 'StorageApi', {
      handler: s3,
      restApiName: `${this.stackName}-storage`,
      description: 'Cairn: S3-compatible storage endpoint',
      stageName: STORAGE_API_STAGE,
      integrationTimeout: s3Timeout,
      errorShape: 's3',
      authorization:
        "The S3 function authenticates every request itself, with S3's SigV4 (header, presigned or streaming) against the storage key pairs Cairn issues, verified against the host and path the client signed; unsigned requests get only what S3 gives anonymous callers (public-read buckets and objects)",
    });
    this.gatewayUrl = gateway.addFunctionUrl({ authType: FunctionUrlAuthType.NONE, invokeMode: InvokeMode.RESPONSE_STREAM });

    // Custom domains from the hosted zone: the S3 API's, public object URLs'
    // (the gateway behind a REST API of their own) and, below, the sites'.
    if (hostedZone) {
      this.domains = new CairnDomains(this, 'Domains', {
        hostedZone,
        bucketEndpointDomain,
        storagePublicDomain,
        apiDomain: domainOf('apiDomain', props.apiDomain),
        storageApi: this.storageApi,
        gateway,
        gatewayTimeout,
      });
    }
    this.storageEndpoint = this.domains?.storageEndpoint ?? this.storageApi.executeApiUrl;

    this.api = new HttpApi(this, 'Api', {
      apiName: `${this.stackName}-api`,
      description: 'Cairn: GraphQL hosting API',
      corsPreflight: {
        allowOrigins: ['*'],
        allowHeaders: ['authorization', 'content-type'],
        allowMethods: [CorsHttpMethod.GET, CorsHttpMethod.POST, CorsHttpMethod.OPTIONS],
        maxAge: Duration.days(1),
      },
      // Made below, with access logs (same id, so the same stage).
      createDefaultStage: false,
    });
    // One JSON line per request. The route, not the path: a build hook's
    // path is its secret (/hooks/build/<hookId>).
    const apiAccessLogs = new LogGroup(this, 'ApiAccessLogs', { retention: RetentionDays.ONE_MONTH });
    const apiStage = new HttpStage(this.api, 'DefaultStage', {
      httpApi: this.api,
      autoDeploy: true,
      accessLogSettings: {
        destination: new LogGroupLogDestination(apiAccessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: AccessLogField.contextRequestId(),
            ip: AccessLogField.contextIdentitySourceIp(),
            requestTime: AccessLogField.contextRequestTime(),
            routeKey: '$context.routeKey',
            status: AccessLogField.contextStatus(),
            protocol: AccessLogField.contextProtocol(),
            responseLength: AccessLogField.contextResponseLength(),
            responseLatency: AccessLogField.contextResponseLatency(),
            integrationLatency: AccessLogField.contextIntegrationLatency(),
            integrationError: '$context.integrationErrorMessage',
            userAgent: AccessLogField.contextIdentityUserAgent(),
          }),
        ),
      },
    });
    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'The GraphQL function authorises every request itself: API keys (Authorization header) for /graphql and /imports, signatures (HMAC with the site secret) or secret URLs for /hooks; the web app (/ and /app) is public static files. An API Gateway authorizer would only repeat the key lookup',
    });
    const graphqlIntegration = new HttpLambdaIntegration('GraphqlIntegration', graphql);
    this.api.addRoutes({
      path: '/graphql',
      methods: [HttpMethod.ANY, HttpMethod.GET],
      integration: graphqlIntegration,
    });
    // Git host webhooks (/hooks/git/<siteId>) and build hooks
    // (/hooks/build/<hookId>): the GraphQL function answers them by path.
    this.api.addRoutes({
      path: '/hooks/{proxy+}',
      // ANY, so that a GET reaches the function and is told 405, as locally.
      methods: [HttpMethod.ANY],
      integration: graphqlIntegration,
    });
    // The CAR import endpoint (/imports/...) and the web app (/ and /app/...):
    // the GraphQL function answers them by path too (functions/graphql/routes.ts).
    this.api.addRoutes({ path: '/imports/{proxy+}', methods: [HttpMethod.ANY], integration: graphqlIntegration });
    this.api.addRoutes({ path: '/', methods: [HttpMethod.GET, HttpMethod.HEAD], integration: graphqlIntegration });
    this.api.addRoutes({ path: '/app/{proxy+}', methods: [HttpMethod.GET, HttpMethod.HEAD], integration: graphqlIntegration });

    // URLs, never a function's own (a function's URL depends on the function).
    // The gateway gets none of the others: the S3 function already depends on
    // the gateway's URL, so the reverse would be a cycle.
    for (const fn of [graphql, s3, deployWorker, preview]) {
      fn.addEnvironment('CAIRN_GATEWAY_URL', this.gatewayUrl.url);
      if (!publicGatewayUrl) fn.addEnvironment('CAIRN_PUBLIC_GATEWAY_URL', this.gatewayUrl.url);
    }
    for (const fn of [graphql, deployWorker]) {
      fn.addEnvironment('CAIRN_STORAGE_ENDPOINT', this.storageEndpoint);
    }
    // The API's address as users and git hosts see it: its custom domain where there is one.
    this.apiUrl = this.domains?.mapApi(this.api, apiStage) ?? this.api.apiEndpoint;
    graphql.addEnvironment('CAIRN_BASE_URL', this.apiUrl);
    // The web app's origin, which the S3 API lets in for every bucket (functions/s3/cors.ts).
    s3.addEnvironment('CAIRN_BASE_URL', this.apiUrl);

    // Sites: one distribution in front of the gateway. purgeCache (graphql)
    // and publishing (the worker) invalidate it; where sites change
    // (graphql) and the worker's retries write its map of hosts. The
    // gateway is never told of it: the distribution depends on its URL.
    const sitesCertificateArn = nonEmpty(props.sitesCertificateArn);
    let certificate = props.sitesCertificate;
    if (sitesDomain && this.domains) {
      if (!inZone(sitesDomain, this.domains.zone.zoneName)) {
        throw new Error(
          `sitesDomain ${sitesDomain} is not in the hosted zone ${this.domains.zone.zoneName}: its records and certificate go there`,
        );
      }
      if (!certificate && !sitesCertificateArn) {
        if (this.region !== 'us-east-1') {
          throw new Error(
            'sitesDomain with a hosted zone needs its certificate in us-east-1: deploy this stack there, or let bin/app.ts make it in a us-east-1 stack (it needs the region: AWS_REGION or -c cairn:region), or give sitesCertificateArn',
          );
        }
        certificate = sitesCertificate(this, 'SitesCertificate', this.domains.zone, sitesDomain);
      }
    }
    this.siteCdn = new SiteCdn(this, 'SiteCdn', {
      gatewayUrl: this.gatewayUrl,
      sitesDomain,
      certificateArn: sitesCertificateArn,
      certificate,
    });
    if (sitesDomain && this.domains) this.domains.addSitesRecords(this.siteCdn.distribution, sitesDomain);
    for (const fn of [graphql, deployWorker]) {
      this.siteCdn.grantPurge(fn);
      this.siteCdn.grantSiteHostsWrite(fn);
      fn.addEnvironment('CAIRN_CDN_DISTRIBUTION_ID', this.siteCdn.distribution.distributionId);
      fn.addEnvironment('CAIRN_SITE_HOSTS_KVS_ARN', this.siteCdn.siteHosts.keyValueStoreArn);
      if (!sitesDomain) fn.addEnvironment('CAIRN_SITES_DOMAIN', this.siteCdn.sitesDomain);
    }

    // The first account, on the first deploy only, told the endpoints it can know now.
    this.firstAccount = new FirstAccount(this, 'FirstAccount', {
      data,
      endpoints: { storageEndpoint: this.storageEndpoint, graphqlUrl: `${this.apiUrl}/graphql`, gatewayUrl: this.gatewayUrl.url },
      logLevel: props.logLevel,
    });

    // Alarms (to one SNS topic; -c cairn:alarmEmail subscribes an address) and a dashboard.
    this.monitoring = new CairnMonitoring(this, 'Monitoring', {
      functions: { graphql, s3, gateway, deployWorker, preview },
      deployDeadLetterQueue: this.deployDeadLetters,
      httpApi: this.api,
      restApi: this.storageApi.api,
      publicObjectsApi: this.domains?.publicObjectsApi?.api,
      tables,
    });

    this.deployWorkerSchedule = new Schedule(this, 'DeployWorkerSchedule', {
      description: 'Cairn: run the deploy worker every minute',
      schedule: ScheduleExpression.rate(Duration.minutes(1)),
      // A missed run is simply picked up by the next one.
      target: new LambdaInvoke(deployWorker, { retryAttempts: 0, maxEventAge: Duration.minutes(1) }),
    });

    this.acknowledgeGrantWildcards({ graphql, s3, gateway, deployWorker, preview });

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
        : 'The S3-compatible endpoint (path style; the stage is part of the path clients sign)',
      value: this.storageEndpoint,
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

  /** `<LogicalId>` as cdk-nag writes a resource in a finding (`<DataAccountsTable816B83C6.Arn>`). */
  private nagRef(construct: IConstruct): string {
    return this.resolve(this.getLogicalId(construct.node.defaultChild as CfnElement)) as string;
  }

  /**
   * cdk-nag (AwsSolutions-IAM5) flags the wildcards CDK's own grants write:
   * a table grant covers `<table>/index/*` (the table's own indexes), a
   * bucket grant `<bucket>/*` (its objects) with `s3:GetObject*`-style
   * action groups, a function's invoke grant `<function>:*` (its versions).
   * Each is acknowledged on the one function holding it, naming the exact
   * finding, so a wildcard on anything else still fails the checks
   * (test/infra/nag.test.ts). X-Ray's `*` is acknowledged in lib/functions.ts.
   */
  private acknowledgeGrantWildcards(f: {
    graphql: IConstruct;
    s3: IConstruct;
    gateway: IConstruct;
    deployWorker: IConstruct;
    preview: IConstruct;
  }): void {
    const { tables, blockBucket } = this.data;
    const ack = (scope: IConstruct, id: string, reason: string) =>
      Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[${id}]`, reason });
    const indexes = (scope: IConstruct, granted: ITable[]) => {
      for (const table of granted) {
        ack(
          scope,
          `Resource::<${this.nagRef(table)}.Arn>/index/*`,
          "CDK's table grant covers that table's own global secondary indexes, which Cairn's queries use, and no other table",
        );
      }
    };
    const bucket = (scope: IConstruct, mode: 'read' | 'readWrite') => {
      const reason =
        mode === 'read'
          ? "CDK's read grant on the block bucket: its objects (IPFS blocks and the datastore) and listing, on that one bucket only"
          : "CDK's read/write grant on the block bucket: its objects (IPFS blocks, the datastore, deploy logs and build files), listing and aborting multipart uploads, on that one bucket only";
      ack(scope, `Resource::<${this.nagRef(blockBucket)}.Arn>/*`, reason);
      for (const action of [
        's3:GetObject*',
        's3:GetBucket*',
        's3:List*',
        ...(mode === 'readWrite' ? ['s3:DeleteObject*', 's3:Abort*'] : []),
      ]) {
        ack(scope, `Action::${action}`, reason);
      }
    };
    indexes(f.graphql, [tables.accounts, tables.sites, tables.deploys, tables.objects]);
    bucket(f.graphql, 'readWrite'); // the CAR import endpoint's blocks and import pins
    indexes(f.s3, [tables.accounts, tables.objects]);
    bucket(f.s3, 'readWrite');
    indexes(f.gateway, [tables.objects, tables.accounts, tables.sites, tables.deploys]);
    bucket(f.gateway, 'read');
    indexes(f.deployWorker, [tables.sites, tables.deploys, tables.objects]);
    bucket(f.deployWorker, 'readWrite');
    ack(
      f.deployWorker,
      `Resource::<${this.nagRef(f.preview)}.Arn>:*`,
      'The worker may invoke the preview function (any of its versions) and no other function',
    );
    indexes(f.preview, [tables.sites, tables.deploys, tables.objects]);
    bucket(f.preview, 'readWrite');
    // The schedule's role, which the scheduler target makes beside it at the stack's root.
    for (const role of this.node.children.filter((c) => c.node.id.startsWith('SchedulerRoleForTarget-'))) {
      ack(
        role,
        `Resource::<${this.nagRef(f.deployWorker)}.Arn>:*`,
        'EventBridge Scheduler may invoke the deploy worker (any of its versions) and nothing else',
      );
    }
  }
}
