/**
 * Preview images in AWS: the deploy worker, through its Lambda door, asks
 * the preview Lambda for a DEPLOYED deploy's picture with an asynchronous
 * Invoke (recorded with aws-sdk-client-mock: nothing of Lambda's service
 * runs here); the preview function's handler is then given that very
 * payload and runs for real: @sparticuz/chromium's Amazon Linux build,
 * unpacked into a temporary directory of this test, shoots the deploy's
 * DAG served from the stack's bucket (a bucket on Cairn's own local S3
 * endpoint) and the records are in the embedded DynamoDB, as in
 * deploy-pipeline.test.ts.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { exporter } from 'ipfs-unixfs-exporter';
import { CID } from 'multiformats/cid';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestService, type TestService } from '../support/service.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { lambdaEnv, sqsEvent, stackBucketEnv, startLambdas, type AwsLambdas } from '../support/aws-mocks.js';
import { decodePng } from '../support/png.js';
import type { Services } from '../../functions/core/services.js';
import type { Deploy } from '../../functions/core/data/deploys.js';
import { isRootPinned } from '../../functions/core/storage/pins.js';
import { listen } from '../../functions/core/http/node.js';

const BUCKET = 'cairn-preview-bucket';
const PREVIEW_FUNCTION = 'arn:aws:lambda:us-east-1:123456789012:function:cairn-preview';
const GATEWAY = 'https://gateway.example.com';

const sqs = mockClient(SQSClient);
const lambda = mockClient(LambdaClient);

let service: TestService;
let git: GitServer;
let lambdas: AwsLambdas;
let aws: Services;
let unpacked: string;
let gql: AwsLambdas['gql'];
let worker: AwsLambdas['worker'];
let preview: (event: unknown, context?: unknown) => Promise<any>;

beforeAll(async () => {
  [service, git] = await Promise.all([startTestService({ CAIRN_GC_INTERVAL: '0' }), startGitServer()]);
  // @sparticuz/chromium unpacks into the temporary directory: this test's own, removed after.
  unpacked = await mkdtemp(join(tmpdir(), 'cairn-sparticuz-'));
  const env = lambdaEnv(service, 'aws-preview-', {
    ...(await stackBucketEnv(service, BUCKET)),
    CAIRN_GATEWAY_URL: GATEWAY,
    // What the stack sets on the worker when it has a preview function.
    CAIRN_PREVIEW: 'on',
    CAIRN_PREVIEW_FUNCTION: PREVIEW_FUNCTION,
    TMPDIR: unpacked,
  });
  // The bundled Chromium, as in the function.
  lambdas = await startLambdas(env, 'aws-preview', ['CAIRN_CHROMIUM_PATH']);
  ({ aws, gql, worker } = lambdas);
  preview = ((await import('../../functions/preview/handler.js')) as any).handler;
}, 60_000);

afterAll(async () => {
  await lambdas?.close();
  await service?.close();
  await git?.close();
  if (unpacked) await rm(unpacked, { recursive: true, force: true });
});

beforeEach(() => {
  sqs.reset();
  lambda.reset();
  sqs.on(SendMessageCommand).resolves({ MessageId: randomUUID() });
  lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
});

let repos = 0;
/** A site without a build command, deployed by the worker from its SQS message. */
async function deployed(files: Record<string, string>): Promise<Deploy> {
  const repo = `acme/preview-${++repos}`;
  await git.commit(repo, files, 'the site');
  const input = { deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } } };
  const site = (await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', { input })).createSite as {
    id: string;
  };
  await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id });
  const [send] = sqs.commandCalls(SendMessageCommand);
  expect(await worker(sqsEvent(send!.args[0].input.MessageBody!))).toEqual({ batchItemFailures: [] });
  const { siteId, deployId } = JSON.parse(send!.args[0].input.MessageBody!);
  const deploy = (await aws.deploys.get(siteId, deployId))!;
  expect(deploy.status).toBe('DEPLOYED');
  return deploy;
}

/** The one asynchronous Invoke the worker made, and its payload. */
function invoked(): { input: any; payload: any } {
  const calls = lambda.commandCalls(InvokeCommand);
  expect(calls).toHaveLength(1);
  const input = calls[0]!.args[0].input;
  return { input, payload: JSON.parse(new TextDecoder().decode(input.Payload as Uint8Array)) };
}

const lambdaContext = () => ({ getRemainingTimeInMillis: () => 60_000, functionName: 'cairn-preview', awsRequestId: randomUUID() });

async function logOf(deploy: Deploy): Promise<string> {
  return (await aws.deployLogs.read(`${deploy.siteId}/${deploy.id}`)) ?? '';
}

async function bytesOf(cid: CID): Promise<Uint8Array> {
  const file = await exporter(cid, (await aws.ipfs()).blockstore);
  const parts: Uint8Array[] = [];
  for await (const chunk of (file as any).content()) parts.push(chunk);
  return new Uint8Array(Buffer.concat(parts));
}

test('after DEPLOYED the worker invokes the preview function asynchronously; its handler pins a 1280×800 picture of the DAG and sets previewImage', async () => {
  // Another origin on this machine: the page asks it for an image, which the shot must refuse.
  let beacons = 0;
  const other = createServer((_, res) => {
    beacons++;
    res.writeHead(404).end();
  });
  const otherPort = await listen(other, 0, '127.0.0.1');
  const deploy = await deployed({
    'index.html': `<!doctype html><link rel="stylesheet" href="/style.css"><body><h1>hello</h1><img src="http://127.0.0.1:${otherPort}/beacon.png"><img src="https://example.com/tracker.png"></body>`,
    'style.css': 'html, body { margin: 0; background: rgb(255, 0, 0); } h1, img { display: none; }',
  });
  const { input, payload } = invoked();
  expect(input).toMatchObject({ FunctionName: PREVIEW_FUNCTION, InvocationType: 'Event' });
  expect(payload).toEqual({ siteId: deploy.siteId, deployId: deploy.id, root: deploy.ipfsHash });
  // The worker did not wait for a picture: the deploy has none yet.
  expect(deploy.previewImage ?? null).toBeNull();

  const outcome = await preview(payload, lambdaContext());
  expect(outcome).toEqual({
    outcome: 'taken',
    previewImage: expect.stringMatching(/^https:\/\/gateway\.example\.com\/ipfs\/bafy[a-z2-7]+$/),
  });
  const done = (await aws.deploys.get(deploy.siteId, deploy.id))!;
  expect(done.status).toBe('DEPLOYED');
  expect(done.previewImage).toBe(outcome.previewImage);
  const cid = CID.parse(outcome.previewImage.slice(`${GATEWAY}/ipfs/`.length));
  expect(await isRootPinned(await aws.ipfs(), cid)).toBe(true);
  const picture = decodePng(await bytesOf(cid));
  expect([picture.width, picture.height]).toEqual([1280, 800]);
  expect(picture.pixel(640, 400)).toEqual([255, 0, 0]); // the stylesheet, by its absolute path, from the DAG
  const got = (
    await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status previewImage } }', {
      s: deploy.siteId,
      d: deploy.id,
    })
  ).getDeployById;
  expect(got).toEqual({ status: 'DEPLOYED', previewImage: outcome.previewImage });
  const log = await logOf(deploy);
  expect(log).toContain('Published');
  expect(log.trim().split('\n').at(-1)).toMatch(
    new RegExp(`Preview image \\(\\d+\\.\\d s, @sparticuz/chromium\\): ${outcome.previewImage}$`),
  );

  expect(beacons).toBe(0);
  other.close();

  // Lambda may deliver an event twice: the second finds the picture taken.
  expect(await preview(payload, lambdaContext())).toEqual({ outcome: 'skipped', why: 'the deploy has its picture already' });
}, 180_000);

test('a deploy without index.html stays DEPLOYED with no picture, and its log says why', async () => {
  const deploy = await deployed({ 'about.html': '<h1>no index</h1>' });
  const { payload } = invoked();
  expect(await preview(payload, lambdaContext())).toEqual({ outcome: 'none' });
  const done = (await aws.deploys.get(deploy.siteId, deploy.id))!;
  expect(done.status).toBe('DEPLOYED');
  expect(done.previewImage ?? null).toBeNull();
  expect((await logOf(deploy)).trim().split('\n').at(-1)).toMatch(/No preview image: the deploy has no index\.html$/);
}, 120_000);

test('a request for another root, an unknown deploy or no deploy at all takes no picture', async () => {
  const deploy = await deployed({ 'index.html': '<h1>x</h1>' });
  const { payload } = invoked();
  const other = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku';
  expect(await preview({ ...payload, root: other }, lambdaContext())).toEqual({ outcome: 'skipped', why: 'the deploy has another root' });
  expect(await preview({ ...payload, deployId: 'nope' }, lambdaContext())).toEqual({
    outcome: 'skipped',
    why: 'no such deploy (deleted meanwhile)',
  });
  expect(await preview({ hello: 'world' }, lambdaContext())).toEqual({ outcome: 'skipped', why: 'not a preview request' });
  expect((await aws.deploys.get(deploy.siteId, deploy.id))?.previewImage ?? null).toBeNull();
}, 120_000);

test('when the invocation fails the deploy is DEPLOYED all the same, and its log says there is no picture', async () => {
  lambda.on(InvokeCommand).rejects(new Error('Rate exceeded'));
  const deploy = await deployed({ 'index.html': '<h1>x</h1>' });
  expect(lambda.commandCalls(InvokeCommand)).toHaveLength(1);
  const done = (await aws.deploys.get(deploy.siteId, deploy.id))!;
  expect(done.status).toBe('DEPLOYED');
  expect(done.previewImage ?? null).toBeNull();
  expect((await logOf(deploy)).trim().split('\n').at(-1)).toMatch(/No preview image: it could not be asked for/);
});
