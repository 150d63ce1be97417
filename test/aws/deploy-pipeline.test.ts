/**
 * The deploy pipeline as it runs in AWS, through its Lambda doors, with the
 * AWS calls recorded: SQS, CodeBuild and CloudFront are aws-sdk-client-mock
 * stand-ins (nothing of them runs here), while the records are in the embedded
 * DynamoDB and the stack's bucket is a bucket on Cairn's own local S3
 * endpoint (so blocks, deploy logs and the build files are real objects).
 * What CodeBuild would do between StartBuild and its state-change event
 * (unzip, build, upload the publish directory) is played by the test.
 * Secrets Manager's stand-in keeps its secrets, so a test sees what a build
 * was given and what is left after it.
 */
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  AccountLimitExceededException,
  CodeBuildClient,
  StartBuildCommand,
  StopBuildCommand,
  type EnvironmentVariable,
  type StartBuildCommandInput,
  type StopBuildCommandInput,
} from '@aws-sdk/client-codebuild';
import {
  CreateSecretCommand,
  DeleteSecretCommand,
  GetSecretValueCommand,
  ListSecretsCommand,
  PutSecretValueCommand,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { CloudFrontClient, CreateInvalidationCommand, type CreateInvalidationCommandInput } from '@aws-sdk/client-cloudfront';
import { mockClient } from 'aws-sdk-client-mock';
import { exporter } from 'ipfs-unixfs-exporter';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { startTestService, type TestService } from '../support/service.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import {
  lambdaEnv,
  QUEUE_URL,
  secretsManagerStandIn,
  sqsEvent,
  stackBucketEnv,
  startLambdas,
  type AwsLambdas,
} from '../support/aws-mocks.js';
import type { Services } from '../../functions/core/services.js';
import type { Deploy } from '../../functions/core/data/deploys.js';
import { runScheduledTick } from '../../functions/deploy-worker/worker.js';
import { buildEndOf, CodeBuildRunner } from '../../functions/aws/codebuild-runner.js';
import { BuildSecrets } from '../../functions/aws/build-secrets.js';
import { BuildNames } from '../../functions/aws/build-names.js';
import { sweepBuildLeftovers } from '../../functions/aws/build-leftovers.js';
import { createLogger } from '../../functions/core/logger.js';
import { newSortableId } from '../../functions/core/ids.js';

const PROJECT = 'cairn-builds';
const BUCKET = 'cairn-stack-bucket';
const DEEP_LINK = 'https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#logsV2:log-groups/log-group/cairn-builds';

const DISTRIBUTION = 'E2QWRUHEXAMPLE';

const sqs = mockClient(SQSClient);
const codeBuild = mockClient(CodeBuildClient);
const cloudFront = mockClient(CloudFrontClient);
/** The stack's key naming build secrets, as the worker is told of it, and another stack's. */
const KEY_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:BuildSecretNamesKey1A2B3C4D-AbCdEf';
const KEY = 'k'.repeat(20) + randomUUID().replace(/-/g, '');
const OTHER_KEY_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:BuildSecretNamesKey5E6F7A8B-GhIjKl';
const OTHER_KEY = 'o'.repeat(20) + randomUUID().replace(/-/g, '');
const secretsManager = secretsManagerStandIn({ [KEY_ARN]: KEY, [OTHER_KEY_ARN]: OTHER_KEY });

/** The name a deploy's secret must have with `key`: the deploy id, a hyphen, 32 characters of base64url(HMAC-SHA256(key, deploy id)). */
const secretNameOf = (deployId: string, key = KEY) =>
  `cairn/${PROJECT}/builds/${deployId}-${createHmac('sha256', key).update(deployId).digest('base64url').slice(0, 32)}`;
/** Where a deploy's build files must be with `key`: the site, then the deploy's name made as its secret's is. */
const filesOf = (siteId: string, deployId: string, key = KEY) =>
  `deploy-builds/${siteId}/${deployId}-${createHmac('sha256', key).update(deployId).digest('base64url').slice(0, 32)}/`;
/** The deploy's secret, by the name the worker gives it. */
const secretOf = (deployId: string) => secretsManager.secrets.get(secretNameOf(deployId));
/** The reads of the key's secret since the last reset. */
const keyReads = () => secretsManager.client.commandCalls(GetSecretValueCommand).filter((c) => c.args[0].input.SecretId === KEY_ARN);
/** The secrets deleted since the last reset, by name. */
const deleted = () => secretsManager.client.commandCalls(DeleteSecretCommand).map((c) => c.args[0].input.SecretId);
/** The builds started, by id: their variables, and the secrets Secrets Manager held when StartBuild was called. */
const started = new Map<string, { variables: EnvironmentVariable[]; secretsThen: Map<string, string> }>();

let service: TestService;
let git: GitServer;
let lambdas: AwsLambdas;
let aws: Services;
let bucket: S3Client;
let gql: AwsLambdas['gql'];
let worker: AwsLambdas['worker'];

beforeAll(async () => {
  [service, git] = await Promise.all([startTestService({ CAIRN_GC_INTERVAL: '0' }), startGitServer()]);
  bucket = service.s3();
  // The stack's bucket on Cairn's S3 endpoint, so blocks, logs and build files are real objects.
  const env = lambdaEnv(service, 'aws-', {
    ...(await stackBucketEnv(service, BUCKET)),
    CAIRN_BUILD_PROJECT: PROJECT,
    CAIRN_BUILD_SECRET_NAMES_KEY_ARN: KEY_ARN,
    CAIRN_BUILD_TIMEOUT: '600',
    CAIRN_CDN_DISTRIBUTION_ID: DISTRIBUTION,
  });
  lambdas = await startLambdas(env, 'aws');
  ({ aws, gql, worker } = lambdas);
}, 60_000);

afterAll(async () => {
  await lambdas?.close();
  await service?.close();
  await git?.close();
});

beforeEach(() => {
  sqs.reset();
  codeBuild.reset();
  cloudFront.reset();
  cloudFront
    .on(CreateInvalidationCommand)
    .callsFake(() => ({ Invalidation: { Id: `I${randomUUID().slice(0, 8)}`, Status: 'InProgress' } }));
  sqs.on(SendMessageCommand).resolves({ MessageId: randomUUID() });
  secretsManager.reset();
  started.clear();
  codeBuild.on(StartBuildCommand).callsFake((input: StartBuildCommandInput) => {
    const id = `${input.projectName}:${randomUUID()}`;
    const secretsThen = new Map([...secretsManager.secrets].map(([name, secret]) => [name, secret.value]));
    started.set(id, { variables: input.environmentVariablesOverride ?? [], secretsThen });
    return { build: { id, logs: { deepLink: DEEP_LINK } } };
  });
  // StopBuild answers with the build, its variables included, as CodeBuild does.
  codeBuild.on(StopBuildCommand).callsFake((input: StopBuildCommandInput) => ({
    build: { id: input.id, buildStatus: 'STOPPED', environment: { environmentVariables: started.get(input.id!)?.variables ?? [] } },
  }));
});

let repos = 0;
async function gitSite(files: Record<string, string>, build: Record<string, unknown> = {}) {
  const repo = `acme/aws-${++repos}`;
  const commit = await git.commit(repo, files, 'the site');
  const input = {
    buildSettings: build,
    deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } },
  };
  const site = (await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', { input })).createSite as {
    id: string;
  };
  return { site, commit };
}

async function trigger(siteId: string): Promise<{ id: string; status: string }> {
  return (await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id status } }', { s: siteId })).triggerDeploy;
}

const invalidations = () =>
  cloudFront.commandCalls(CreateInvalidationCommand).map((c) => c.args[0].input as CreateInvalidationCommandInput);

/** What CodeBuild's EventBridge event says when the deploy's build ends. */
function buildEvent(deploy: Deploy, status: string, phases: Array<Record<string, unknown>> = []) {
  const id = deploy.remoteBuild!.id;
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'CodeBuild Build State Change',
    source: 'aws.codebuild',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [`arn:aws:codebuild:us-east-1:123456789012:build/${id}`],
    detail: {
      'build-status': status,
      'project-name': PROJECT,
      'build-id': `arn:aws:codebuild:us-east-1:123456789012:build/${id}`,
      'current-phase': 'COMPLETED',
      'additional-information': {
        'build-complete': true,
        source: { type: 'S3', location: `${BUCKET}/${filesOf(deploy.siteId, deploy.id)}source.zip` },
        logs: { 'group-name': '/aws/codebuild/cairn-builds', 'stream-name': id.split(':')[1], 'deep-link': DEEP_LINK },
        phases,
      },
    },
  };
}

async function keysUnder(prefix: string): Promise<string[]> {
  const out = await bucket.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!).sort();
}

async function logOf(deploy: Deploy): Promise<string> {
  return (await aws.deployLogs.read(`${deploy.siteId}/${deploy.id}`)) ?? '';
}

/** A site with a build command, triggered through the GraphQL door and taken by the worker from its SQS message: it waits for CodeBuild. */
async function handedToCodeBuild(
  build: Record<string, unknown> = {},
): Promise<{ deploy: Deploy; start: StartBuildCommandInput; commit: string }> {
  const { site, commit } = await gitSite(
    { 'app/src.txt': 'source', 'app/run.sh': 'echo ran' },
    { buildCommand: 'echo built-here > dist/x', baseDirectoryPath: 'app', publishDirectoryPath: 'dist', ...build },
  );
  const queued = await trigger(site.id);
  const [send] = sqs.commandCalls(SendMessageCommand);
  const result = await worker(sqsEvent(send!.args[0].input.MessageBody!));
  expect(result).toEqual({ batchItemFailures: [] });
  const starts = codeBuild.commandCalls(StartBuildCommand);
  expect(starts).toHaveLength(1);
  const deploy = (await aws.deploys.get(site.id, queued.id))!;
  return { deploy, start: starts[0]!.args[0].input, commit };
}

test('triggerDeploy through the GraphQL Lambda door sends the deploy to SQS, once', async () => {
  const { site } = await gitSite({ 'index.html': 'x' });
  const deploy = await trigger(site.id);
  expect(deploy.status).toBe('IN_PROGRESS');
  const sends = sqs.commandCalls(SendMessageCommand);
  expect(sends).toHaveLength(1);
  expect(sends[0]!.args[0].input.QueueUrl).toBe(QUEUE_URL);
  expect(JSON.parse(sends[0]!.args[0].input.MessageBody!)).toEqual({ siteId: site.id, deployId: deploy.id });
  expect((await aws.deploys.get(site.id, deploy.id))?.phase).toBe('queued');
});

test("the worker given the SQS message claims the deploy and hands its build to CodeBuild with the site's settings, running nothing itself", async () => {
  const { deploy, start, commit } = await handedToCodeBuild({
    dockerImage: 'node:20-slim',
    environmentVariables: [{ name: 'GREETING', value: 'hi' }],
  });
  expect(start).toMatchObject({
    projectName: PROJECT,
    idempotencyToken: deploy.id,
    imageOverride: 'public.ecr.aws/docker/library/node:20-slim', // Docker Hub's official image, from ECR Public's mirror
    timeoutInMinutesOverride: 10,
    sourceTypeOverride: 'S3',
    sourceLocationOverride: `${BUCKET}/${filesOf(deploy.siteId, deploy.id)}source.zip`,
    artifactsOverride: {
      type: 'S3',
      location: BUCKET,
      path: filesOf(deploy.siteId, deploy.id).slice(0, -1),
      name: 'publish',
      packaging: 'NONE',
    },
  });
  expect(Object.fromEntries(start.environmentVariablesOverride!.map((v) => [v.name, v.value]))).toEqual({
    GREETING: 'hi',
    CI: 'true',
    CAIRN_DEPLOY_ID: deploy.id,
    COMMIT_REF: commit,
    BRANCH: 'main',
  });
  const spec = JSON.parse(start.buildspecOverride!);
  expect(spec.phases.build.commands).toEqual([`cd "$CODEBUILD_SRC_DIR"/'app' && sh -c 'echo built-here > dist/x'`]);
  expect(spec.artifacts).toEqual({ files: ['**/*'], 'base-directory': 'app/dist' });
  // The checkout went to the bucket as a ZIP CodeBuild can unpack.
  const dir = await mkdtemp(join(tmpdir(), 'cairn-zip-'));
  try {
    const zip = await bucket.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${filesOf(deploy.siteId, deploy.id)}source.zip` }));
    await writeFile(join(dir, 'source.zip'), await zip.Body!.transformToByteArray());
    execFileSync('unzip', ['-q', 'source.zip', '-d', 'out'], { cwd: dir });
    expect(await readFile(join(dir, 'out/app/src.txt'), 'utf8')).toBe('source');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  expect(deploy).toMatchObject({
    status: 'IN_PROGRESS',
    phase: 'building',
    remoteBuild: { id: expect.stringMatching(/^cairn-builds:/), logUrl: DEEP_LINK },
  });
  const log = await logOf(deploy);
  expect(log).toContain('Building with AWS CodeBuild: echo built-here > dist/x');
  expect(log).not.toContain('bubblewrap');
  // The same message again (SQS delivers at least once) starts nothing.
  await worker(sqsEvent(JSON.stringify({ siteId: deploy.siteId, deployId: deploy.id })));
  expect(codeBuild.commandCalls(StartBuildCommand)).toHaveLength(1);
});

test('a SUCCEEDED build event makes the worker import what the build uploaded, pin and publish it', async () => {
  const { deploy } = await handedToCodeBuild();
  const prefix = `${filesOf(deploy.siteId, deploy.id)}publish/`;
  for (const [key, body] of Object.entries({ 'index.html': '<h1>built in CodeBuild</h1>', 'assets/app.js': 'console.log(1)' })) {
    await bucket.send(new PutObjectCommand({ Bucket: BUCKET, Key: prefix + key, Body: body }));
  }
  await worker(buildEvent(deploy, 'SUCCEEDED'));
  const done = (await aws.deploys.get(deploy.siteId, deploy.id))!;
  expect(done).toMatchObject({ status: 'DEPLOYED', reason: null, phase: null, ipfsHash: expect.stringMatching(/^bafybei/) });
  const node = await aws.ipfs();
  const file = await exporter(`${done.ipfsHash}/index.html`, node.blockstore);
  const parts: Uint8Array[] = [];
  for await (const chunk of (file as any).content()) parts.push(chunk);
  expect(Buffer.concat(parts).toString()).toBe('<h1>built in CodeBuild</h1>');
  expect(
    (await gql('query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } } }', { s: deploy.siteId })).getSiteById.publishedDeploy
      .id,
  ).toBe(deploy.id);
  const log = await logOf(deploy);
  expect(log).toContain(`The build's own log: ${DEEP_LINK}`);
  expect(log).toContain('Imported 2 files');
  expect(log).toContain('Published');
  expect(await keysUnder(filesOf(deploy.siteId, deploy.id))).toEqual([]);
  // A repeated event finds the build's end taken up already.
  await worker(buildEvent(deploy, 'SUCCEEDED'));
  expect((await aws.deploys.get(deploy.siteId, deploy.id))?.completedAt).toBe(done.completedAt);
});

test.each([
  [
    'FAILED in BUILD',
    'FAILED',
    [
      {
        'phase-type': 'BUILD',
        'phase-status': 'FAILED',
        'phase-context': ['COMMAND_EXECUTION_ERROR: Error while executing command: sh -c build. Reason: exit status 3'],
      },
    ],
    'FAILED',
    /^the build command failed \(COMMAND_EXECUTION_ERROR: .*exit status 3\)$/,
  ],
  [
    'FAILED uploading artifacts',
    'FAILED',
    [{ 'phase-type': 'UPLOAD_ARTIFACTS', 'phase-status': 'FAILED', 'phase-context': ['CLIENT_ERROR: no matching artifact paths found'] }],
    'FAILED',
    /publish directory "app\/dist" does not exist after the build, or is empty/,
  ],
  [
    'TIMED_OUT',
    'TIMED_OUT',
    [{ 'phase-type': 'BUILD', 'phase-status': 'TIMED_OUT', 'phase-context': ['BUILD_TIMED_OUT'] }],
    'FAILED',
    /^the build ran past the time limit \(10 min\)/,
  ],
  ['STOPPED outside Cairn', 'STOPPED', [], 'FAILED', /stopped in AWS CodeBuild, not through Cairn/],
])("a build event %s ends the deploy with the reason and the build log's link", async (_, status, phases, ended, reason) => {
  const { deploy } = await handedToCodeBuild();
  await worker(buildEvent(deploy, status, phases));
  const done = (await aws.deploys.get(deploy.siteId, deploy.id))!;
  expect(done.status).toBe(ended);
  expect(done.reason).toMatch(reason);
  const log = await logOf(deploy);
  expect(log).toContain(DEEP_LINK);
  expect(log.trim().split('\n').at(-1)).toContain(`Failed: ${done.reason}`);
});

test('cancelDeploy stops the CodeBuild build, and its STOPPED event ends the deploy CANCELLED', async () => {
  const { deploy } = await handedToCodeBuild();
  await gql('mutation ($s: ID!, $d: ID!) { cancelDeploy(siteId: $s, deployId: $d) { id status } }', { s: deploy.siteId, d: deploy.id });
  const stops = codeBuild.commandCalls(StopBuildCommand);
  expect(stops).toHaveLength(1);
  expect(stops[0]!.args[0].input).toEqual({ id: deploy.remoteBuild!.id });
  await worker(buildEvent(deploy, 'STOPPED'));
  const done = (await aws.deploys.get(deploy.siteId, deploy.id))!;
  expect(done).toMatchObject({ status: 'CANCELLED', reason: 'cancelled by request' });
  expect((await logOf(deploy)).trim().split('\n').at(-1)).toMatch(/Cancelled: cancelled by request/);
});

test('a site without a build command is deployed by the worker alone, without CodeBuild', async () => {
  const { site } = await gitSite({ 'public/index.html': 'plain' }, { publishDirectoryPath: 'public' });
  const queued = await trigger(site.id);
  await worker(sqsEvent(JSON.stringify({ siteId: site.id, deployId: queued.id })));
  expect(codeBuild.commandCalls(StartBuildCommand)).toHaveLength(0);
  expect(await aws.deploys.get(site.id, queued.id)).toMatchObject({ status: 'DEPLOYED', reason: null });
});

test("a deploy the worker publishes invalidates its site's prefix on CloudFront, each time with its own CallerReference; one it does not publish, nothing", async () => {
  const { site } = await gitSite({ 'public/index.html': 'plain' }, { publishDirectoryPath: 'public' });
  const published = async () =>
    (await gql('query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } } }', { s: site.id })).getSiteById.publishedDeploy?.id;
  const run = async () => {
    const queued = await trigger(site.id);
    expect(await worker(sqsEvent(JSON.stringify({ siteId: site.id, deployId: queued.id })))).toEqual({ batchItemFailures: [] });
    expect((await aws.deploys.get(site.id, queued.id))?.status).toBe('DEPLOYED');
    return queued.id;
  };
  const first = await run();
  expect(await published()).toBe(first);
  const one = {
    DistributionId: DISTRIBUTION,
    InvalidationBatch: {
      CallerReference: expect.stringMatching(new RegExp(`^${site.id}/`)),
      Paths: { Quantity: 1, Items: [`/sites/${site.id}/*`] },
    },
  };
  expect(invalidations()).toEqual([one]);
  const second = await run();
  expect(await published()).toBe(second);
  expect(invalidations()).toEqual([one, one]);
  expect(new Set(invalidations().map((c) => c.InvalidationBatch!.CallerReference)).size).toBe(2);

  // Auto-publishing off: the deploy ends DEPLOYED, the site keeps serving the last one, and nothing is invalidated.
  await gql('mutation ($s: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $s, input: $input) { id } }', {
    s: site.id,
    input: { deploySettings: { autoPublishing: false } },
  });
  cloudFront.resetHistory();
  await run();
  expect(await published()).toBe(second);
  expect(invalidations()).toEqual([]);
});

test("the scheduled tick fails a deploy stuck past its time limit, stops its build and removes its secret; the build's late event removes its files", async () => {
  const { deploy } = await handedToCodeBuild({ environmentVariables: [{ name: 'TOKEN', value: `tick-${randomUUID()}`, secret: true }] });
  const early = await runScheduledTick(aws, 10, new Date(Date.now() + 60 * 60_000));
  expect(early.timedOut).not.toContain(deploy.id);
  // 10 min of build + 60 queued + two 15-minute worker turns.
  const late = await runScheduledTick(aws, 10, new Date(Date.now() + 101 * 60_000));
  expect(late.timedOut).toContain(deploy.id);
  const done = (await aws.deploys.get(deploy.siteId, deploy.id))!;
  expect(done.status).toBe('FAILED');
  expect(done.reason).toMatch(/^timed out/);
  expect(codeBuild.commandCalls(StopBuildCommand).map((c) => c.args[0].input.id)).toContain(deploy.remoteBuild!.id);
  expect((await logOf(deploy)).trim().split('\n').at(-1)).toMatch(/Failed: timed out/);
  // The build was stopped by the queue's own client, which removes nothing; the same tick's sweep then finds the deploy
  // ended and removes its secret (no build can need it), while its files wait (the worker may still read them).
  expect(late.leftovers.secrets).toEqual([secretNameOf(deploy.id)]);
  expect(secretOf(deploy.id)).toBeUndefined();
  expect(await keysUnder(filesOf(deploy.siteId, deploy.id))).not.toEqual([]);
  // Its late event changes nothing of the deploy, and removes what the build was given (the secret again: no error).
  await worker(buildEvent(deploy, 'STOPPED'));
  expect((await aws.deploys.get(deploy.siteId, deploy.id))?.status).toBe('FAILED');
  expect(deleted()).toEqual([secretNameOf(deploy.id), secretNameOf(deploy.id)]);
  expect(await keysUnder(filesOf(deploy.siteId, deploy.id))).toEqual([]);
});

test("a secret variable reaches CodeBuild through the deploy's Secrets Manager secret, never in StartBuild, stays sealed in the record, and the failure that quotes it is masked", async () => {
  const secret = `s3cr3t-${randomUUID()}`;
  const { deploy, start } = await handedToCodeBuild({
    environmentVariables: [
      { name: 'API_KEY', value: secret, secret: true },
      { name: 'GREETING', value: 'hi' },
      { name: 'PREVIEW_ONLY', value: 'p', scope: 'PREVIEWS' },
    ],
  });
  // Nothing of the value in the request CodeBuild keeps and shows (its console, BatchGetBuilds).
  expect(JSON.stringify(start)).not.toContain(secret);
  // Named by the deploy id and 32 characters only the holder of the stack's key can make: no build can guess another deploy's.
  const secretId = secretNameOf(deploy.id);
  expect(secretId).toMatch(new RegExp(`^cairn/${PROJECT}/builds/${deploy.id}-[A-Za-z0-9_-]{32}$`));
  expect(secretId).not.toBe(`cairn/${PROJECT}/builds/${deploy.id}`);
  expect(start.environmentVariablesOverride).toEqual([
    { name: 'GREETING', value: 'hi', type: 'PLAINTEXT' },
    { name: 'API_KEY', value: `${secretId}:API_KEY`, type: 'SECRETS_MANAGER' },
    { name: 'CI', value: 'true', type: 'PLAINTEXT' },
    { name: 'CAIRN_DEPLOY_ID', value: deploy.id, type: 'PLAINTEXT' },
    { name: 'COMMIT_REF', value: expect.any(String), type: 'PLAINTEXT' },
    { name: 'BRANCH', value: 'main', type: 'PLAINTEXT' },
  ]);
  // The secret held the value when the build was started, under the key its reference names.
  const [build] = [...started.values()];
  expect(JSON.parse(build!.secretsThen.get(secretId)!)).toEqual({ API_KEY: secret });
  const created = secretsManager.client.commandCalls(CreateSecretCommand);
  expect(created).toHaveLength(1);
  expect(created[0]!.args[0].input).toMatchObject({ Name: secretId, ClientRequestToken: `cairn-build-${deploy.id}` });
  // No key of the stack's: Secrets Manager's own, which the project's role uses through it.
  expect(created[0]!.args[0].input).not.toHaveProperty('KmsKeyId');
  expect(JSON.stringify(deploy)).not.toContain(secret);
  expect(deploy.build?.secretEnv).toEqual({ API_KEY: expect.any(String) });
  // The end is taken up by the worker from the event, as another Lambda invocation would: it opens the record's sealed copy to mask.
  const phases = [
    {
      'phase-type': 'BUILD',
      'phase-status': 'FAILED',
      'phase-context': [`COMMAND_EXECUTION_ERROR: Error while executing command: curl -H "key: ${secret}". Reason: exit status 22`],
    },
  ];
  await worker(buildEvent(deploy, 'FAILED', phases));
  const done = (await aws.deploys.get(deploy.siteId, deploy.id))!;
  expect(done.status).toBe('FAILED');
  expect(done.reason).toBe(
    'the build command failed (COMMAND_EXECUTION_ERROR: Error while executing command: curl -H "key: ***". Reason: exit status 22)',
  );
  const log = await logOf(deploy);
  expect(log).toContain('key: ***');
  expect(log).not.toContain(secret);
  // Gone with the build, at once: no recovery window.
  expect(secretOf(deploy.id)).toBeUndefined();
  expect(secretsManager.client.commandCalls(DeleteSecretCommand).map((c) => c.args[0].input)).toContainEqual({
    SecretId: secretId,
    ForceDeleteWithoutRecovery: true,
  });
});

/** A site with one secret variable, handed to CodeBuild: its deploy's secret is there. */
async function handedWithSecret() {
  const handed = await handedToCodeBuild({ environmentVariables: [{ name: 'API_KEY', value: `s3cr3t-${randomUUID()}`, secret: true }] });
  expect(secretOf(handed.deploy.id)).toBeDefined();
  return handed;
}

test.each([
  ['SUCCEEDED', 'DEPLOYED'],
  ['TIMED_OUT', 'FAILED'],
  ['FAULT', 'FAILED'],
])("the deploy's secret is removed when its build ends %s", async (status, ended) => {
  const { deploy } = await handedWithSecret();
  await bucket.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${filesOf(deploy.siteId, deploy.id)}publish/index.html`, Body: 'x' }));
  await worker(buildEvent(deploy, status));
  expect((await aws.deploys.get(deploy.siteId, deploy.id))?.status).toBe(ended);
  expect(secretOf(deploy.id)).toBeUndefined();
  expect(deleted()).toEqual([secretNameOf(deploy.id)]);
});

test('a build without secret variables writes and removes no secret, from its start to its end', async () => {
  const { deploy } = await handedToCodeBuild({ environmentVariables: [{ name: 'GREETING', value: 'hi' }] });
  await bucket.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${filesOf(deploy.siteId, deploy.id)}publish/index.html`, Body: 'x' }));
  await worker(buildEvent(deploy, 'SUCCEEDED'));
  expect((await aws.deploys.get(deploy.siteId, deploy.id))?.status).toBe('DEPLOYED');
  // At most the read of the key that names its files (once per container): no secret of its own, not even a deletion.
  expect(secretsManager.client.calls().filter((c) => !(c.args[0] instanceof GetSecretValueCommand))).toEqual([]);
  expect(secretsManager.client.calls().length).toBe(keyReads().length);
});

test("cancelDeploy stops the build; its STOPPED event ends the deploy CANCELLED and removes the deploy's secret", async () => {
  const { deploy } = await handedWithSecret();
  await gql('mutation ($s: ID!, $d: ID!) { cancelDeploy(siteId: $s, deployId: $d) { id status } }', { s: deploy.siteId, d: deploy.id });
  await worker(buildEvent(deploy, 'STOPPED'));
  expect((await aws.deploys.get(deploy.siteId, deploy.id))?.status).toBe('CANCELLED');
  expect(secretOf(deploy.id)).toBeUndefined();
  expect(deleted()).toEqual([secretNameOf(deploy.id)]);
});

test.each([
  [
    'CodeBuild refuses it (an account limit)',
    () => new AccountLimitExceededException({ message: 'Cannot have more than 1 builds in queue', $metadata: {} }),
    /^CodeBuild did not start the build: Cannot have more than 1 builds in queue$/,
  ],
  ['the call fails', () => Object.assign(new Error('connect ETIMEDOUT'), { name: 'TimeoutError' }), /an internal error stopped the deploy/],
])('when StartBuild fails (%s) the deploy fails and its secret, written just before, is removed', async (_, error, reason) => {
  codeBuild.on(StartBuildCommand).rejects(error());
  const { site } = await gitSite(
    { 'app/src.txt': 'source' },
    {
      buildCommand: 'true',
      baseDirectoryPath: 'app',
      environmentVariables: [{ name: 'API_KEY', value: `s3cr3t-${randomUUID()}`, secret: true }],
    },
  );
  const queued = await trigger(site.id);
  await worker(sqsEvent(JSON.stringify({ siteId: site.id, deployId: queued.id })));
  const done = (await aws.deploys.get(site.id, queued.id))!;
  expect(done.status).toBe('FAILED');
  expect(done.reason).toMatch(reason);
  const created = secretsManager.client.commandCalls(CreateSecretCommand).map((c) => c.args[0].input.Name);
  expect(created).toEqual([secretNameOf(queued.id)]);
  expect(deleted()).toEqual(created);
  expect(secretsManager.secrets.size).toBe(0);
});

test('secret variables beyond what one secret holds fail the deploy with the reason; nothing is written or started', async () => {
  const big = Array.from({ length: 5 }, (_, i) => ({ name: `CERT_${i}`, value: `${i}`.repeat(15_000), secret: true }));
  const { site } = await gitSite(
    { 'app/src.txt': 'source' },
    { buildCommand: 'true', baseDirectoryPath: 'app', environmentVariables: big },
  );
  const queued = await trigger(site.id);
  await worker(sqsEvent(JSON.stringify({ siteId: site.id, deployId: queued.id })));
  const done = (await aws.deploys.get(site.id, queued.id))!;
  expect(done.status).toBe('FAILED');
  expect(done.reason).toMatch(
    /^the site's secret variables come to 74 KiB, more than the 64 KiB a CodeBuild build can be given as secrets/,
  );
  expect(secretsManager.client.commandCalls(CreateSecretCommand)).toHaveLength(0);
  expect(codeBuild.commandCalls(StartBuildCommand)).toHaveLength(0);
});

describe('the runner started twice for one deploy (a repeated message, a retried turn)', () => {
  let checkout: string;
  beforeAll(async () => {
    checkout = await mkdtemp(join(tmpdir(), 'cairn-checkout-'));
    await writeFile(join(checkout, 'index.html'), 'x');
  });
  afterAll(() => rm(checkout, { recursive: true, force: true }));

  /** A runner as one worker container builds it: its own client, its own read of the key. */
  const runner = (keyArn = KEY_ARN) => {
    const client = new SecretsManagerClient({ region: 'us-east-1' });
    const names = new BuildNames(async () => client, keyArn);
    return new CodeBuildRunner(
      new CodeBuildClient({ region: 'us-east-1' }),
      bucket,
      BUCKET,
      PROJECT,
      names,
      new BuildSecrets(async () => client, PROJECT, names),
    );
  };
  const request = (deployId: string) => ({
    deployId,
    siteId: 'site-1',
    checkout,
    directory: '',
    command: 'true',
    publishDirectory: '',
    timeoutMs: 600_000,
    env: { API_KEY: 'the-secret-value', CI: 'true' },
    secretNames: ['API_KEY'],
  });

  test('finds its secret there and writes no second one or second version; both StartBuild requests are the same', async () => {
    const deployId = newSortableId();
    await runner().start(request(deployId));
    await runner().start(request(deployId));
    const starts = codeBuild.commandCalls(StartBuildCommand).map((c) => c.args[0].input);
    expect(starts).toHaveLength(2);
    expect(starts[1]).toEqual(starts[0]);
    expect(starts[0]!.idempotencyToken).toBe(deployId);
    expect(secretsManager.secrets.size).toBe(1);
    expect([...secretsManager.secrets.keys()]).toEqual([secretNameOf(deployId)]);
    expect([...secretOf(deployId)!.versions.keys()]).toEqual([`cairn-build-${deployId}`]);
    expect(JSON.parse(secretOf(deployId)!.value)).toEqual({ API_KEY: 'the-secret-value' });
    expect(secretsManager.client.commandCalls(PutSecretValueCommand)).toHaveLength(1);
    expect(secretsManager.client.commandCalls(DeleteSecretCommand)).toHaveLength(0);
  });

  test('stopping the build removes the secret its variables refer to; removing it again (discard) is no error', async () => {
    const deployId = newSortableId();
    const build = await runner().start(request(deployId));
    await runner().stop(build.id);
    expect(codeBuild.commandCalls(StopBuildCommand).map((c) => c.args[0].input)).toEqual([{ id: build.id }]);
    expect(secretOf(deployId)).toBeUndefined();
    await runner().discard({ siteId: 'site-1', deployId });
    expect(await keysUnder(filesOf('site-1', deployId))).toEqual([]);
    expect(deleted()).toEqual([secretNameOf(deployId), secretNameOf(deployId)]);
  });

  test('two workers with different keys name the same deploy differently; each finds its own name again', async () => {
    const deployId = newSortableId();
    const ours = await runner().start(request(deployId));
    const theirs = await runner(OTHER_KEY_ARN).start(request(deployId));
    expect([...secretsManager.secrets.keys()].sort()).toEqual([secretNameOf(deployId), secretNameOf(deployId, OTHER_KEY)].sort());
    expect(secretNameOf(deployId)).not.toBe(secretNameOf(deployId, OTHER_KEY));
    const referenced = (id: string) => started.get(id)!.variables.find((v) => v.name === 'API_KEY')!.value;
    expect(referenced(ours.id)).toBe(`${secretNameOf(deployId)}:API_KEY`);
    expect(referenced(theirs.id)).toBe(`${secretNameOf(deployId, OTHER_KEY)}:API_KEY`);
    await runner(OTHER_KEY_ARN).discard({ siteId: 'site-1', deployId, hadSecrets: true });
    expect([...secretsManager.secrets.keys()]).toEqual([secretNameOf(deployId)]);
  });

  test("one worker reads the key's secret once for several builds; a failed read is tried again by the next build", async () => {
    const one = runner();
    // The first read of the key fails (a timeout); the next ones answer as the service does (beforeEach wires the stand-in again).
    let reads = 0;
    secretsManager.client.on(GetSecretValueCommand).callsFake((input: { SecretId?: string }) => {
      if (input.SecretId !== KEY_ARN) throw new Error(`unexpected read of ${input.SecretId}`);
      if (reads++ === 0) throw Object.assign(new Error('connect ETIMEDOUT'), { name: 'TimeoutError' });
      return { ARN: KEY_ARN, SecretString: KEY };
    });
    const first = newSortableId();
    await expect(one.start(request(first))).rejects.toThrow(/ETIMEDOUT/);
    expect(codeBuild.commandCalls(StartBuildCommand)).toHaveLength(0);
    expect(secretsManager.secrets.size).toBe(0);
    const ids = [newSortableId(), newSortableId(), newSortableId()];
    for (const id of ids) await one.start(request(id));
    for (const id of ids) await one.discard({ siteId: 'site-1', deployId: id, hadSecrets: true });
    expect(keyReads()).toHaveLength(2);
    expect(deleted()).toEqual(ids.map((id) => secretNameOf(id)));
    expect(secretsManager.secrets.size).toBe(0);
  });

  test('a build without secret variables, started and discarded, reads the key once (its files are named with it) and writes no secret', async () => {
    const one = runner();
    const deployId = newSortableId();
    await one.start({ ...request(deployId), env: { CI: 'true' }, secretNames: [] });
    await one.discard({ siteId: 'site-1', deployId, hadSecrets: false });
    expect(secretsManager.client.calls().map((c) => c.args[0].constructor.name)).toEqual(['GetSecretValueCommand']);
    expect(keyReads()).toHaveLength(1);
    expect(codeBuild.commandCalls(StartBuildCommand)[0]!.args[0].input.environmentVariablesOverride).toEqual([
      { name: 'CI', value: 'true', type: 'PLAINTEXT' },
    ]);
  });

  test("the build files' prefix carries the keyed part: not the site and deploy id alone, another key's differs, and start, import and clean-up all use it", async () => {
    const deployId = newSortableId();
    const guessable = `deploy-builds/site-1/${deployId}/`;
    const ours = filesOf('site-1', deployId);
    expect(ours).toMatch(new RegExp(`^deploy-builds/site-1/${deployId}-[A-Za-z0-9_-]{32}/$`));
    expect(filesOf('site-1', deployId, OTHER_KEY)).not.toBe(ours);
    // Start: the checkout goes under the keyed prefix, and CodeBuild is told that prefix for source and artifacts.
    await runner().start({ ...request(deployId), env: { CI: 'true' }, secretNames: [] });
    await runner(OTHER_KEY_ARN).start({ ...request(deployId), env: { CI: 'true' }, secretNames: [] });
    const [mine, theirs] = codeBuild.commandCalls(StartBuildCommand).map((c) => c.args[0].input);
    expect(mine).toMatchObject({
      sourceLocationOverride: `${BUCKET}/${ours}source.zip`,
      artifactsOverride: { location: BUCKET, path: ours.slice(0, -1), name: 'publish' },
    });
    expect(theirs!.sourceLocationOverride).toBe(`${BUCKET}/${filesOf('site-1', deployId, OTHER_KEY)}source.zip`);
    expect(await keysUnder(ours)).toEqual([`${ours}source.zip`]);
    expect(await keysUnder(guessable)).toEqual([]);
    // Import: what a build wrote where the guessable name (or another key) points is not read.
    for (const key of [
      `${ours}publish/index.html`,
      `${guessable}publish/planted.html`,
      `${filesOf('site-1', deployId, OTHER_KEY)}publish/other.html`,
    ])
      await bucket.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: key }));
    const into = await mkdtemp(join(tmpdir(), 'cairn-publish-'));
    try {
      await runner().fetchOutput({ siteId: 'site-1', deployId }, join(into, 'out'), { withoutGit: true });
      expect(execFileSync('find', ['.', '-type', 'f'], { cwd: join(into, 'out'), encoding: 'utf8' }).trim()).toBe('./index.html');
      expect(await readFile(join(into, 'out/index.html'), 'utf8')).toBe(`${ours}publish/index.html`);
    } finally {
      await rm(into, { recursive: true, force: true });
    }
    // Clean-up: the keyed prefix goes, nothing else.
    await runner().discard({ siteId: 'site-1', deployId, hadSecrets: false });
    expect(await keysUnder(ours)).toEqual([]);
    expect(await keysUnder(guessable)).toEqual([`${guessable}publish/planted.html`]);
    expect(await keysUnder(filesOf('site-1', deployId, OTHER_KEY))).not.toEqual([]);
    await runner(OTHER_KEY_ARN).discard({ siteId: 'site-1', deployId, hadSecrets: false });
    await bucket.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: `${guessable}publish/planted.html` }));
  });

  test("a build's end event finds its deploy from the keyed source location; the guessable form ends no deploy", () => {
    const deployId = newSortableId();
    const event = (location: string) => ({
      source: 'aws.codebuild' as const,
      'detail-type': 'CodeBuild Build State Change' as const,
      detail: {
        'build-status': 'SUCCEEDED',
        'project-name': PROJECT,
        'build-id': `arn:aws:codebuild:us-east-1:123456789012:build/${PROJECT}:b-1`,
        'additional-information': { source: { type: 'S3', location } },
      },
    });
    expect(buildEndOf(event(`${BUCKET}/${filesOf('site-1', deployId)}source.zip`))).toMatchObject({
      siteId: 'site-1',
      deployId,
      end: { buildId: `${PROJECT}:b-1`, outcome: 'succeeded' },
    });
    expect(buildEndOf(event(`${BUCKET}/deploy-builds/site-1/${deployId}/source.zip`))).toBeUndefined();
  });

  test('without the key (CAIRN_BUILD_SECRET_NAMES_KEY_ARN unset) no build is started, nothing is uploaded, and its files are not read or removed under a guessable name', async () => {
    const deployId = newSortableId();
    const plain = { ...request(deployId), env: { CI: 'true' }, secretNames: [] };
    await expect(runner('').start(plain)).rejects.toThrow(/CAIRN_BUILD_SECRET_NAMES_KEY_ARN is unset/);
    expect(codeBuild.commandCalls(StartBuildCommand)).toHaveLength(0);
    expect(await keysUnder(`deploy-builds/site-1/${deployId}`)).toEqual([]);
    const of = { siteId: 'site-1', deployId, hadSecrets: false };
    await expect(runner('').fetchOutput(of, join(tmpdir(), `cairn-none-${deployId}`), { withoutGit: true })).rejects.toThrow(/unset/);
    await expect(runner('').discard(of)).rejects.toThrow(/unset/);
  });

  test('without the key (CAIRN_BUILD_SECRET_NAMES_KEY_ARN unset) a build with secret variables is not started, and no secret is written', async () => {
    const deployId = newSortableId();
    await expect(runner('').start(request(deployId))).rejects.toThrow(/CAIRN_BUILD_SECRET_NAMES_KEY_ARN is unset/);
    expect(codeBuild.commandCalls(StartBuildCommand)).toHaveLength(0);
    expect(secretsManager.client.commandCalls(CreateSecretCommand)).toHaveLength(0);
  });
});

describe('what builds left behind, swept by the tick', () => {
  /** CAIRN_BUILD_TIMEOUT=600: files wait 10 min of build + 60 queued + two 15-minute worker turns, and one turn more. */
  const BOUND_MS = 115 * 60_000;
  /** ...and secrets only until no build can read them: the writing worker turn, 60 min queued and the 10-minute build. */
  const SECRET_BOUND_MS = 85 * 60_000;
  const logger = createLogger('error');
  const listCalls = () => secretsManager.client.commandCalls(ListSecretsCommand).map((c) => c.args[0].input);
  const at = (ms: number) => new Date(Date.now() + ms);
  const ourFiles = (swept: string[], prefixes: string[]) => swept.filter((key) => prefixes.some((prefix) => key.startsWith(prefix)));

  /** What a worker that died after CreateSecret leaves: a secret and a checkout, for a deploy the tables do not know. */
  async function leftFor(siteId: string, deployId: string): Promise<void> {
    secretsManager.secrets.set(secretNameOf(deployId), { value: '{"API_KEY":"x"}', versions: new Map(), created: new Date() });
    await bucket.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${filesOf(siteId, deployId)}source.zip`, Body: 'zip' }));
  }

  test("a secret goes once its deploy ended or is unknown, a running deploy's once no build can read it, another stack's never; files wait for the bound", async () => {
    const running = (await handedWithSecret()).deploy;
    sqs.resetHistory();
    codeBuild.resetHistory();
    const ended = (await handedWithSecret()).deploy;
    // Ended without its build's end event (the tick stops a stuck build with the queue's client, which removes nothing).
    await aws.deploys.finish(ended.siteId, ended.id, { status: 'FAILED', reason: 'timed out' });
    const unknown = newSortableId();
    await leftFor('site-gone', unknown);
    const otherStack = `cairn/other-project/builds/${newSortableId()}-${'x'.repeat(32)}`;
    secretsManager.secrets.set(otherStack, { value: '{}', versions: new Map(), created: new Date() });
    secretsManager.client.resetHistory();
    const ours = [filesOf(running.siteId, running.id), filesOf(ended.siteId, ended.id), filesOf('site-gone', unknown)];

    // Within the settling margin nothing goes: the running index may not show a deploy just claimed.
    const settling = await sweepBuildLeftovers(aws, logger, at(60_000));
    expect(settling.secrets).toEqual([]);
    expect(secretsManager.secrets.size).toBe(4);

    // Past it, the ended and the unknown deploys' secrets go; the running one's stays, and every file (the worker may still read them).
    const soon = await sweepBuildLeftovers(aws, logger, at(6 * 60_000));
    expect(soon.secrets.sort()).toEqual([secretNameOf(ended.id), secretNameOf(unknown)].sort());
    expect(soon.failed).toEqual([]);
    expect([...secretsManager.secrets.keys()].sort()).toEqual([secretNameOf(running.id), otherStack].sort());
    expect(ourFiles(soon.files, ours)).toEqual([]);

    // Just before no build can read it, the running deploy's secret stays; just after, it goes (its end event is what it waits for).
    expect((await sweepBuildLeftovers(aws, logger, at(SECRET_BOUND_MS - 60_000))).secrets).toEqual([]);
    const unreadable = await sweepBuildLeftovers(aws, logger, at(SECRET_BOUND_MS + 60_000));
    expect(unreadable.secrets).toEqual([secretNameOf(running.id)]);
    expect([...secretsManager.secrets.keys()]).toEqual([otherStack]);
    expect(ourFiles(unreadable.files, ours)).toEqual([]);

    // Files past the bound go when their deploy ended or is unknown; a running deploy's stay.
    const late = await sweepBuildLeftovers(aws, logger, at(BOUND_MS + 60_000));
    expect(late.files).toEqual(
      expect.arrayContaining([`${filesOf(ended.siteId, ended.id)}source.zip`, `${filesOf('site-gone', unknown)}source.zip`]),
    );
    expect(await keysUnder(filesOf(ended.siteId, ended.id))).toEqual([]);
    expect(await keysUnder(filesOf('site-gone', unknown))).toEqual([]);
    expect(await keysUnder(filesOf(running.siteId, running.id))).toEqual([`${filesOf(running.siteId, running.id)}source.zip`]);
    // One page each time (all there is), of this project's secrets, the oldest first; never the key's secret, never a value.
    const page = { Filters: [{ Key: 'name', Values: [`cairn/${PROJECT}/builds/`] }], SortOrder: 'asc', MaxResults: 100 };
    expect(listCalls()).toEqual([page, page, page, page, page]);
    expect(keyReads()).toHaveLength(0);
    expect(deleted().sort()).toEqual([...soon.secrets, ...unreadable.secrets].sort());
  });

  test('the tick removes the secret of a deploy it ended at once, its files once past the bound; a failing listing is logged and the tick goes on', async () => {
    const { deploy } = await handedWithSecret();
    const ending = await runScheduledTick(aws, 10, at(101 * 60_000));
    expect(ending.timedOut).toContain(deploy.id);
    expect(ending.leftovers.secrets).toEqual([secretNameOf(deploy.id)]);
    expect(secretOf(deploy.id)).toBeUndefined();
    expect(await keysUnder(filesOf(deploy.siteId, deploy.id))).not.toEqual([]);
    const later = await runScheduledTick(aws, 10, at(BOUND_MS + 60_000));
    expect(later.leftovers.secrets).toEqual([]);
    expect(await keysUnder(filesOf(deploy.siteId, deploy.id))).toEqual([]);

    await leftFor('site-gone', newSortableId());
    secretsManager.client.on(ListSecretsCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    const failing = await runScheduledTick(aws, 10, at(BOUND_MS + 60_000));
    expect(failing.leftovers.secrets).toEqual([]);
    expect(secretsManager.secrets.size).toBe(1);
    // The files' sweep is not held up by the secrets'.
    expect(failing.leftovers.files).toHaveLength(1);
  });

  test('bounded per tick: at most 50 removals over at most 5 pages; one that fails is reported, not fatal, and does not hide the rest', async () => {
    const names: string[] = [];
    for (let i = 0; i < 130; i++) {
      const deployId = newSortableId();
      names.push(secretNameOf(deployId));
      secretsManager.secrets.set(secretNameOf(deployId), {
        value: '{}',
        versions: new Map(),
        created: new Date(Date.now() - (200 - i) * 1000),
      });
    }
    // The oldest fails each time (no permission on it, say).
    const stuck = names[0]!;
    secretsManager.client
      .on(DeleteSecretCommand, { SecretId: stuck })
      .rejects(Object.assign(new Error('not allowed'), { name: 'AccessDeniedException' }));
    const first = await sweepBuildLeftovers(aws, logger, at(6 * 60_000));
    expect(first.failed).toEqual([stuck]);
    expect(first.secrets).toEqual(names.slice(1, 50));
    const second = await sweepBuildLeftovers(aws, logger, at(6 * 60_000));
    expect(second.failed).toEqual([stuck]);
    expect(second.secrets).toEqual(names.slice(50, 99));
    const third = await sweepBuildLeftovers(aws, logger, at(6 * 60_000));
    expect(third.secrets).toEqual(names.slice(99));
    expect([...secretsManager.secrets.keys()]).toEqual([stuck]);
    // Each sweep read on past the first page when it had removals left, never more than five pages.
    expect(listCalls().length).toBeLessThanOrEqual(15);
  });
});
