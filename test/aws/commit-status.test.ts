/**
 * Commit statuses as they run in AWS, with SQS recorded by
 * aws-sdk-client-mock: the GraphQL Lambda only records a deploy's status
 * and puts a `notification` message naming it on the deploy queue (the
 * token in neither), the deploy worker's handler posts it from the queue,
 * and an API base URL that leads to a private address, or is not https, is
 * refused there (the outbound address policy): nothing is sent, nothing is
 * tried again, and the ended deploy's log says why. The records are in the
 * embedded DynamoDB; the git host's API is test/support/git-host-api.ts.
 */
import { randomUUID } from 'node:crypto';
import { SendMessageCommand, SQSClient, type SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf } from '../support/graphql.js';
import { lambdaEnv, sqsEvent, startLambdas, type AwsLambdas } from '../support/aws-mocks.js';
import { startGitHostApi, type GitHostApi } from '../support/git-host-api.js';
import type { Services } from '../../functions/core/services.js';
import { deployLogKey } from '../../functions/core/ports/log-store.js';
import { commitStatusChannel } from '../../functions/core/hosting/commit-status.js';
import { runScheduledTick, takeDeploys, type WorkerOptions } from '../../functions/deploy-worker/worker.js';

const sqs = mockClient(SQSClient);
const TOKEN = `glpat-${'K4v'.repeat(8)}${process.pid}`;
const SHA = 'c0ffee'.repeat(6) + 'abcd';

const messages = () =>
  sqs.commandCalls(SendMessageCommand).map((c) => {
    const input = c.args[0].input as SendMessageCommandInput;
    return { raw: input.MessageBody!, body: JSON.parse(input.MessageBody!), delay: input.DelaySeconds };
  });
const statusMessages = () => messages().filter((m) => m.body.kind === 'notification' && String(m.body.urlId).startsWith('commit-status:'));

let service: TestService;
let lambdas: AwsLambdas;
let aws: Services;
let api: GitHostApi;
let worker: AwsLambdas['worker'];

beforeAll(async () => {
  [service, api] = await Promise.all([startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off' }), startGitHostApi()]);
  const env = lambdaEnv(service, 'status-', {
    CAIRN_LOG_LEVEL: 'warn',
    // AWS's default, said here: the local test service this suite starts allows private addresses in this process's environment.
    CAIRN_OUTBOUND_PRIVATE: 'refuse',
    // The fake API is on loopback: by http (refused in AWS), and an https address in the VPC.
    CAIRN_GIT_HOST_APIS: `git.example.org=gitlab@${api.gitlabUrl},git.example.com=github@https://10.0.0.7/api/v3`,
  });
  lambdas = await startLambdas(env, 'status');
  ({ aws, worker } = lambdas);
}, 60_000);

afterAll(async () => {
  await lambdas?.close();
  await service?.close();
  await api?.close();
});

beforeEach(() => {
  sqs.reset();
  sqs.on(SendMessageCommand).resolves({ MessageId: randomUUID() });
});

const gql = (query: string, variables: Record<string, unknown> = {}) => lambdas.client.gql(lambdas.account.apiKey, query, variables);

/** A site of `url` with a token, and a deploy of SHA triggered through the GraphQL Lambda. */
async function deployed(url: string): Promise<{ siteId: string; deployId: string }> {
  const input = { deploySettings: { source: { repository: { type: 'GIT_HOST', url, branch: 'main' } } } };
  const siteId = dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', { input })).createSite.id;
  dataOf(await gql('mutation ($s: ID!, $t: String) { setRepositoryToken(siteId: $s, token: $t) { id } }', { s: siteId, t: TOKEN }));
  sqs.resetHistory();
  const deployId = dataOf(
    await gql('mutation ($s: ID!, $c: String) { triggerDeploy(siteId: $s, commit: $c) { id } }', { s: siteId, c: SHA }),
  ).triggerDeploy.id;
  return { siteId, deployId };
}

test('triggerDeploy through the GraphQL Lambda records the pending status and queues it; nothing is posted from the request, the token in neither', async () => {
  const before = api.requests().length;
  const { siteId, deployId } = await deployed('https://git.example.org/acme/site.git');
  const [delivery] = await aws.notificationDeliveries.listOfUrl(siteId, commitStatusChannel(deployId), 10);
  expect(delivery).toMatchObject({ deployId, event: 'CREATED', status: 'PENDING', attempt: 0 });
  expect(JSON.parse(delivery!.body)).toEqual({
    kind: 'commit-status',
    repository: 'https://git.example.org/acme/site.git',
    sha: SHA,
    state: 'pending',
    context: 'cairn/deploy',
    targetUrl: `${aws.config.urls.baseUrl}/#/sites/${siteId}/deploys/${deployId}`,
    description: 'Deploy queued',
  });
  expect(statusMessages()).toEqual([
    {
      raw: expect.any(String),
      body: { kind: 'notification', siteId, urlId: commitStatusChannel(deployId), deliveryId: delivery!.id },
      delay: 0,
    },
  ]);
  for (const m of messages()) expect(m.raw).not.toContain(TOKEN);
  expect(delivery!.body).not.toContain(TOKEN);
  expect(api.requests()).toHaveLength(before);
});

test('the deploy worker posts a queued status (where private addresses are allowed), with the token in its header', async () => {
  const { siteId, deployId } = await deployed('https://git.example.org/acme/posted.git');
  const [message] = statusMessages();
  const services = { ...aws, config: { ...aws.config, outbound: { private: 'allow' as const } } };
  expect(await takeDeploys({ services } as Partial<WorkerOptions> as WorkerOptions, sqsEvent(message!.body))).toEqual({
    batchItemFailures: [],
  });
  const posted = api.requests().at(-1)!;
  expect(posted).toMatchObject({
    api: 'gitlab',
    path: `/projects/${encodeURIComponent('acme/posted')}/statuses/${SHA}`,
    body: { state: 'pending', name: 'cairn/deploy', description: 'Deploy queued' },
  });
  expect(posted.headers['private-token']).toBe(TOKEN);
  expect(await aws.notificationDeliveries.get(message!.body)).toMatchObject({ deployId, status: 'DELIVERED', attempt: 1, statusCode: 201 });
  expect(await aws.notificationDeliveries.listOfUrl(siteId, commitStatusChannel(deployId), 10)).toHaveLength(1);
});

test.each([
  [
    'an http:// API base on loopback',
    'https://git.example.org/acme/refused.git',
    /the GitLab API address http:\/\/127\.0\.0\.1:\d+\/gitlab is refused here \(url must be an https:\/\/ URL\)/,
  ],
  [
    'an https:// API base in the VPC',
    'https://git.example.com/acme/refused.git',
    /the GitHub API address https:\/\/10\.0\.0\.7\/api\/v3 is refused here \(10\.0\.0\.7 is a private address: outbound requests to private addresses are refused \(CAIRN_OUTBOUND_PRIVATE=allow allows them\)\)/,
  ],
])("the deploy worker refuses %s: nothing sent, nothing retried, the ended deploy's log says why", async (_, url, why) => {
  const before = api.requests().length;
  const { siteId, deployId } = await deployed(url);
  const [created] = statusMessages();
  sqs.resetHistory();
  expect(await worker(sqsEvent(created!.body))).toEqual({ batchItemFailures: [] });
  expect(await aws.notificationDeliveries.get(created!.body)).toMatchObject({
    status: 'FAILED',
    attempt: 1,
    statusCode: null,
    nextAttemptAt: null,
    error: expect.stringMatching(why),
  });
  expect(statusMessages()).toEqual([]);
  // Still queued: its log is the pipeline's to write, so nothing is added yet.
  expect((await aws.deployLogs.read(deployLogKey(siteId, deployId))) ?? '').not.toMatch(/Commit status not set/);

  // The deploy ends (the tick fails it for running too long): its failure status is refused too, and said once.
  expect(await aws.deploys.claim(siteId, deployId)).toBeDefined();
  const tick = await runScheduledTick(aws, 10, new Date(Date.now() + 101 * 60_000));
  expect(tick.timedOut).toContain(deployId);
  const failed = statusMessages().find((m) => m.body.urlId === commitStatusChannel(deployId));
  const delivery = await aws.notificationDeliveries.get(failed!.body);
  expect(JSON.parse(delivery!.body)).toMatchObject({ state: 'failure', description: expect.stringMatching(/^Failed: timed out/) });
  sqs.resetHistory();
  await worker(sqsEvent(failed!.body));
  expect(statusMessages()).toEqual([]);
  const log = (await aws.deployLogs.read(deployLogKey(siteId, deployId)))!.trimEnd().split('\n');
  expect(log.at(-1)).toMatch(new RegExp(`Commit status not set: ${why.source}$`));
  expect(log.filter((l) => /Commit status not set/.test(l))).toHaveLength(1);
  expect(api.requests()).toHaveLength(before);
});

test('a message naming a status of an unknown deploy is dropped, not retried', async () => {
  const result = await worker(sqsEvent({ kind: 'notification', siteId: 'nope', urlId: commitStatusChannel('nope'), deliveryId: 'nope' }));
  expect(result).toEqual({ batchItemFailures: [] });
  expect(messages()).toEqual([]);
});
