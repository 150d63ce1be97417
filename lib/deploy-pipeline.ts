/**
 * The deploy pipeline in AWS: an SQS queue (with a dead-letter queue) in
 * front of the deploy worker, a CodeBuild project for site builds with a
 * rule that hands their ends to the worker, the schedule of the worker's
 * tick, and the preview function the worker invokes when a deploy ends
 * DEPLOYED (lib/preview.ts). The API may enqueue deploys and stop builds.
 *
 * Made in the stack's own scope, not in a construct of their own: their
 * logical ids stay those of the stacks already deployed (a new id would
 * replace the queues, dropping the messages in them, and the project).
 */
import { ArnFormat, Duration, RemovalPolicy, Size, type Stack, Token, Validations } from 'aws-cdk-lib';
import { BuildSpec, ComputeType, LinuxBuildImage, Project } from 'aws-cdk-lib/aws-codebuild';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import {
  BUILD_QUEUED_TIMEOUT_MINUTES,
  codeBuildTimeoutMinutes,
  DEFAULT_BUILD_IMAGE,
  ecrPublicImage,
  DEPLOY_BUILDS_PREFIX,
  WORKER_TIMEOUT_MINUTES,
} from '../functions/deploy-worker/limits.js';
import { buildSecretsPrefix } from '../functions/aws/build-secrets.js';
import type { CairnData } from './data.js';
import { CairnFunction } from './functions.js';
import { acknowledgeBucketGrant, acknowledgeTableGrants, acknowledgeWildcard, nagRef } from './grant-acknowledgements.js';
import { DeployPreviews } from './preview.js';

export interface DeployPipelineProps {
  readonly data: CairnData;
  /** The functions' common environment (lib/stack-options.ts). */
  readonly environment: Record<string, string>;
  /** The GraphQL function: triggerDeploy enqueues, cancelDeploy stops a build. */
  readonly api: NodejsFunction;
  /** How many deploys run at once: the worker's SQS concurrency (at least 2). @default 2 */
  readonly concurrency?: number;
  /**
   * Concurrent executions reserved for the worker: at least `concurrency` + 2
   * (lib/stack-options.ts says what it takes of the account).
   * @default - none: the account's unreserved pool
   */
  readonly reservedConcurrency?: number;
  /** Seconds a site's build may run. @default 900 */
  readonly buildTimeoutSeconds?: number;
}

export interface DeployPipeline {
  readonly worker: NodejsFunction;
  readonly queue: Queue;
  readonly deadLetters: Queue;
  readonly buildProject: Project;
  readonly buildEnded: Rule;
  /** The key that names each deploy's secret of build variables: the worker reads it, nothing else does. */
  readonly buildSecretNamesKey: Secret;
  readonly schedule: Schedule;
  readonly previews: DeployPreviews;
}

export function addDeployPipeline(stack: Stack, props: DeployPipelineProps): DeployPipeline {
  const { tables, blockBucket, secretsKey } = props.data;
  const { api } = props;
  const concurrency = Math.max(2, Math.floor(props.concurrency ?? 2));
  const buildTimeoutSeconds = Math.max(1, Math.floor(props.buildTimeoutSeconds ?? 900));
  const reserved = props.reservedConcurrency;
  // Below the queue's ceiling plus the tick and a build's end event, the
  // worker would throttle itself; refused here rather than at deploy time.
  if (reserved !== undefined && (!Number.isInteger(reserved) || reserved < concurrency + 2)) {
    throw new Error(
      `cairn:workerConcurrency (the deploy worker's reserved concurrency) must be a whole number of at least ${concurrency + 2}: cairn:deployConcurrency (${concurrency}) plus the minute's tick and a build's end event; got ${reserved}`,
    );
  }
  const worker = new CairnFunction(stack, 'DeployWorker', {
    name: 'deploy-worker',
    tracing: true,
    description: 'Cairn: deploy worker (SQS deploys, CodeBuild ends, a tick every minute)',
    memorySize: 2048,
    timeout: Duration.minutes(WORKER_TIMEOUT_MINUTES),
    // Checkouts and publish directories live under /tmp while a deploy runs.
    ephemeralStorageSize: Size.gibibytes(4),
    // None unless asked for: a reservation must leave the account 100
    // unreserved executions, which a new account's quota (as low as 10) cannot
    // (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html).
    // The queue's maxConcurrency already bounds the deploys at once.
    reservedConcurrentExecutions: reserved,
    environment: { ...props.environment, CAIRN_BUILD_TIMEOUT: String(buildTimeoutSeconds) },
  }).function;

  // Deploys: SQS in front of the worker. A message is at most a claim
  // request, so redelivery is harmless; one that keeps failing before
  // its deploy could be ended lands in the dead-letter queue.
  const deadLetters = new Queue(stack, 'DeployDeadLetters', {
    retentionPeriod: Duration.days(14),
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
  });
  const queue = new Queue(stack, 'DeployQueue', {
    // Six times the worker's timeout, as Lambda asks for SQS sources.
    visibilityTimeout: Duration.minutes(6 * WORKER_TIMEOUT_MINUTES),
    retentionPeriod: Duration.days(4),
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    deadLetterQueue: { queue: deadLetters, maxReceiveCount: 3 },
  });
  worker.addEventSource(new SqsEventSource(queue, { batchSize: 1, reportBatchItemFailures: true, maxConcurrency: concurrency }));

  const buildProject = addBuildProject(stack, props.data, buildTimeoutSeconds);
  const buildEnded = new Rule(stack, 'BuildEnded', {
    description: 'Cairn: a site build ended; the deploy worker takes its deploy up',
    eventPattern: {
      source: ['aws.codebuild'],
      detailType: ['CodeBuild Build State Change'],
      detail: {
        'project-name': [buildProject.projectName],
        'build-status': ['SUCCEEDED', 'FAILED', 'FAULT', 'STOPPED', 'TIMED_OUT'],
      },
    },
    // Throttled (by the account's concurrency, or a reserved one), an event is retried; the tick ends a deploy whose event never came.
    targets: [new LambdaFunction(worker, { retryAttempts: 20, maxEventAge: Duration.hours(2) })],
  });

  // Preview images: the worker asks, the preview function takes them (lib/preview.ts).
  const previews = new DeployPreviews(stack, 'Previews', { data: props.data, environment: props.environment, deployWorker: worker });

  // Least privilege: what the pipeline's steps use.
  tables.sites.grantReadWriteData(worker);
  // Opens a site's repository access token when its deploy clones, and its
  // IPNS key when a publish signs a record; seals that key when a site's
  // first publish makes it (core/hosting/ipns-names.ts).
  secretsKey.grantDecrypt(worker);
  secretsKey.grant(worker, 'kms:Encrypt');
  tables.deploys.grantReadWriteData(worker);
  tables.objects.grantReadWriteData(worker);
  blockBucket.grantReadWrite(worker);
  // The tick's lifecycle run (functions/core/storage/lifecycle.ts) reads the
  // buckets' rules and keeps its place in the `#LIFECYCLE` items; the object
  // deletes it makes condition-check the bucket's item. Only those items of
  // the accounts table: dynamodb:LeadingKeys bounds the partition keys
  // (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html).
  worker.addToRolePolicy(
    new PolicyStatement({
      actions: ['dynamodb:GetItem', 'dynamodb:ConditionCheckItem'],
      resources: [tables.accounts.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['BUCKET#*'] } },
    }),
  );
  worker.addToRolePolicy(
    new PolicyStatement({
      actions: ['dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
      resources: [tables.accounts.tableArn],
      conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['#LIFECYCLE'] } },
    }),
  );

  // triggerDeploy sends; cancelDeploy stops a build. The worker consumes
  // (granted with its event source), sends lost messages again, and runs builds.
  queue.grantSendMessages(api);
  queue.grantSendMessages(worker);
  api.addToRolePolicy(new PolicyStatement({ actions: ['codebuild:StopBuild'], resources: [buildProject.projectArn] }));
  worker.addToRolePolicy(
    new PolicyStatement({
      actions: ['codebuild:StartBuild', 'codebuild:StopBuild', 'codebuild:BatchGetBuilds'],
      resources: [buildProject.projectArn],
    }),
  );
  // A build's secret variables: the worker writes each deploy's secret before
  // StartBuild and deletes it when the build ends (functions/aws/build-secrets.ts),
  // under this project's prefix and nowhere else; the project's role reads them.
  worker.addToRolePolicy(
    new PolicyStatement({
      actions: ['secretsmanager:CreateSecret', 'secretsmanager:PutSecretValue', 'secretsmanager:DeleteSecret'],
      resources: [buildSecretsArn(stack, buildProject)],
    }),
  );
  // The tick removes the secrets builds left behind (functions/aws/build-leftovers.ts):
  // it lists their names under the prefix. ListSecrets takes no resource ("*",
  // https://docs.aws.amazon.com/service-authorization/latest/reference/list_awssecretsmanager.html);
  // it lists names and dates, never values, and the worker may delete only under the prefix above.
  // A statement of its own (its Sid keeps CDK from merging it with X-Ray's, which also has "*").
  worker.addToRolePolicy(new PolicyStatement({ sid: 'ListBuildSecrets', actions: ['secretsmanager:ListSecrets'], resources: ['*'] }));
  acknowledgeWildcard(
    worker,
    'Resource::*',
    "secretsmanager:ListSecrets, which takes no resource, for the tick's sweep of build secrets left behind (names and dates only; deletion is scoped to this project's prefix); besides it only X-Ray's actions, as test/infra/nag.test.ts checks",
  );
  acknowledgeWildcard(
    worker,
    buildSecretsFinding(stack, buildProject),
    "The worker creates, updates and deletes the secrets of this stack's builds (one per deploy, named by its id and a keyed hash of it) under their prefix, and no other secret",
  );
  const buildSecretNamesKey = addBuildSecretNamesKey(stack);
  // Read, and nothing else: the worker never changes or removes it.
  worker.addToRolePolicy(new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [buildSecretNamesKey.secretArn] }));
  worker.addEnvironment('CAIRN_BUILD_SECRET_NAMES_KEY_ARN', buildSecretNamesKey.secretArn);
  for (const fn of [api, worker]) fn.addEnvironment('CAIRN_DEPLOY_QUEUE_URL', queue.queueUrl);
  worker.addEnvironment('CAIRN_BUILD_PROJECT', buildProject.projectName);

  acknowledgeTableGrants(worker, [tables.sites, tables.deploys, tables.objects]);
  acknowledgeBucketGrant(worker, blockBucket, 'readWrite');
  acknowledgeWildcard(
    worker,
    `Resource::<${nagRef(previews.function)}.Arn>:*`,
    'The worker may invoke the preview function (any of its versions) and no other function',
  );

  const schedule = new Schedule(stack, 'DeployWorkerSchedule', {
    description: 'Cairn: run the deploy worker every minute',
    schedule: ScheduleExpression.rate(Duration.minutes(1)),
    // A missed run is simply picked up by the next one.
    target: new LambdaInvoke(worker, { retryAttempts: 0, maxEventAge: Duration.minutes(1) }),
  });
  // The schedule's role, which the scheduler target makes beside it at the stack's root.
  for (const role of stack.node.children.filter((c) => c.node.id.startsWith('SchedulerRoleForTarget-'))) {
    acknowledgeWildcard(
      role,
      `Resource::<${nagRef(worker)}.Arn>:*`,
      'EventBridge Scheduler may invoke the deploy worker (any of its versions) and nothing else',
    );
  }
  return { worker, queue, deadLetters, buildProject, buildEnded, buildSecretNamesKey, schedule, previews };
}

/**
 * The key that makes each build secret's name unguessable
 * (functions/aws/build-secrets.ts): a build runs with the project role's
 * credentials, which read every name under the builds' prefix, so a name
 * must carry a part no build can make. Named by CloudFormation (after its
 * logical id, no `/` in it), so never under that prefix; encrypted with
 * Secrets Manager's AWS managed key, usable only by who is granted the
 * secret (https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html),
 * and only the worker is. 64 letters and digits: about 380 bits.
 */
function addBuildSecretNamesKey(stack: Stack): Secret {
  const key = new Secret(stack, 'BuildSecretNamesKey', {
    description: "Cairn: the key naming each deploy's secret of build variables (read by the deploy worker only; no user data)",
    generateSecretString: { passwordLength: 64, excludePunctuation: true },
    // It holds no user data: a stack deleted (or a first deploy rolled back)
    // leaves no build to name, and a new stack makes a key of its own.
    removalPolicy: RemovalPolicy.DESTROY,
  });
  Validations.of(key).acknowledge({
    id: 'AwsSolutions-SMG4',
    reason:
      'The key is used only to name the secrets of builds (a keyed hash of the deploy id), never to protect data; rotating it would change the names of the secrets of builds in flight, which the worker could then no longer find to remove',
  });
  return key;
}

/**
 * Builds: one CodeBuild project whose every build brings its own image,
 * environment, buildspec, source and artifacts (the worker's StartBuild
 * overrides); the project holds only the defaults and the role.
 */
function addBuildProject(stack: Stack, data: CairnData, buildTimeoutSeconds: number): Project {
  const { blockBucket } = data;
  const buildLogs = new LogGroup(stack, 'BuildLogs', { retention: RetentionDays.ONE_MONTH });
  const project = new Project(stack, 'Builds', {
    description: 'Cairn: site builds (each started by the deploy worker with its own settings)',
    buildSpec: BuildSpec.fromObject({
      version: '0.2',
      phases: { build: { commands: ['echo "builds are started by the Cairn deploy worker with their own buildspec" && exit 1'] } },
    }),
    environment: { buildImage: LinuxBuildImage.fromDockerRegistry(ecrPublicImage(DEFAULT_BUILD_IMAGE)), computeType: ComputeType.SMALL },
    timeout: Duration.minutes(codeBuildTimeoutMinutes(buildTimeoutSeconds * 1000)),
    queuedTimeout: Duration.minutes(BUILD_QUEUED_TIMEOUT_MINUTES),
    logging: { cloudWatch: { logGroup: buildLogs } },
  });
  // A build reads its checkout and writes its publish directory under the
  // build files' prefix, and nothing else of the bucket. The grant must cover
  // every deploy's files (it cannot name one build); each deploy's part of the
  // prefix carries a keyed hash no build can make, and the role may not list
  // the bucket (functions/aws/build-names.ts).
  project.addToRolePolicy(
    new PolicyStatement({
      actions: ['s3:GetObject', 's3:GetObjectVersion', 's3:PutObject'],
      resources: [blockBucket.arnForObjects(`${DEPLOY_BUILDS_PREFIX}*`)],
    }),
  );
  project.addToRolePolicy(
    new PolicyStatement({ actions: ['s3:GetBucketAcl', 's3:GetBucketLocation'], resources: [blockBucket.bucketArn] }),
  );
  // A build's secret variables, which CodeBuild reads with the project's role
  // ("the build project's service role must allow the
  // secretsmanager:GetSecretValue action",
  // https://docs.aws.amazon.com/codebuild/latest/userguide/create-project-cli.html).
  // The secrets are encrypted with Secrets Manager's AWS managed key, which the
  // role may use through Secrets Manager without a kms:Decrypt of its own
  // (https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html).
  project.addToRolePolicy(
    new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [buildSecretsArn(stack, project)] }),
  );

  const ref = nagRef(project);
  // Each part as CDK writes it: a token while unknown, a literal once known (a
  // stack with a region, under cdk.json's enablePartitionLiterals, has `arn:aws:`).
  const partition = Token.isUnresolved(stack.partition) ? '<AWS::Partition>' : stack.partition;
  const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
  const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
  const acknowledge = (id: string, reason: string) => Validations.of(project).acknowledge({ id, reason });
  acknowledge(
    'AwsSolutions-CB4',
    'The project keeps nothing of its own to encrypt: a build reads its checkout from and writes its publish directory to the block bucket (S3-managed encryption, TLS only), and logs to CloudWatch Logs; a customer managed key would add $1 a month and protect nothing more',
  );
  acknowledge(
    'AwsSolutions-CB5',
    "A site's build runs in the image its settings name (dockerImage), as on Netlify; the default is the public Node image (node:slim, from ECR Public), which builds need and CodeBuild's curated images do not carry at the same versions",
  );
  acknowledge(
    `AwsSolutions-IAM5[Resource::<${nagRef(blockBucket)}.Arn>/${DEPLOY_BUILDS_PREFIX}*]`,
    "A build reads and writes its own deploy's files under the build files' prefix of the block bucket, and nothing else of it",
  );
  acknowledge(
    `AwsSolutions-IAM5[${buildSecretsFinding(stack, project)}]`,
    "A build reads its own deploy's secret variables, under the prefix of this project's build secrets, and no other secret",
  );
  acknowledge(
    `AwsSolutions-IAM5[Resource::arn:${partition}:codebuild:${region}:${account}:report-group/<${ref}>-*]`,
    "CodeBuild's default grant: report groups of this project only",
  );
  acknowledge(
    `AwsSolutions-IAM5[Resource::arn:${partition}:logs:${region}:${account}:log-group:/aws/codebuild/<${ref}>:*]`,
    "CodeBuild's default grant: the log streams of this project's default log group only",
  );
  return project;
}

/** Every secret of the project's builds (`cairn/<project>/builds/*`; Secrets Manager adds six characters of its own to each ARN). */
function buildSecretsArn(stack: Stack, project: Project): string {
  return stack.formatArn({
    service: 'secretsmanager',
    resource: 'secret',
    resourceName: `${buildSecretsPrefix(project.projectName)}*`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}

/** That resource as cdk-nag names it in an IAM5 finding. */
function buildSecretsFinding(stack: Stack, project: Project): string {
  const partition = Token.isUnresolved(stack.partition) ? '<AWS::Partition>' : stack.partition;
  const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
  const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
  return `Resource::arn:${partition}:secretsmanager:${region}:${account}:secret:${buildSecretsPrefix(`<${nagRef(project)}>`)}*`;
}
