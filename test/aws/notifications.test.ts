/**
 * Deploy notifications as they run in AWS, with SQS recorded by
 * aws-sdk-client-mock: the GraphQL Lambda only records a delivery and puts
 * a `notification` message on the deploy queue (it never sends one itself),
 * refuses URLs that lead to private addresses (the AWS rule is on because
 * the config is a Lambda's), and the deploy worker's handler makes each
 * attempt from the queue, putting a failed one off with DelaySeconds that
 * double up to 900 s, and giving up after an hour with a log line. The
 * records are in the embedded DynamoDB.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageCommand, SQSClient, type SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, onlyError } from '../support/graphql.js';
import { lambdaEnv, QUEUE_URL, sqsEvent, startLambdas, type AwsLambdas } from '../support/aws-mocks.js';
import type { Services } from '../../functions/core/services.js';
import { NotificationDeliveryStore } from '../../functions/core/data/notification-deliveries.js';
import { parseQueueMessage, SqsDeployQueue } from '../../functions/aws/sqs-deploy-queue.js';
import { retryDelaySeconds } from '../../functions/core/hosting/notifications.js';
import { runScheduledTick, takeDeploys, type WorkerOptions } from '../../functions/deploy-worker/worker.js';

const sqs = mockClient(SQSClient);

const sent = () =>
  sqs.commandCalls(SendMessageCommand).map((c) => {
    const input = c.args[0].input as SendMessageCommandInput;
    return { queue: input.QueueUrl, body: JSON.parse(input.MessageBody!), delay: input.DelaySeconds };
  });
const notificationMessages = () => sent().filter((m) => m.body.kind === 'notification');

let service: TestService;
let lambdas: AwsLambdas;
let aws: Services;
let worker: AwsLambdas['worker'];
let receiver: Server;
let receiverPort: number;
const hits: Array<{ signature: string | undefined; delivery: string | undefined }> = [];

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off' });
  // The AWS default: private addresses refused (the suites' own default allows them).
  lambdas = await startLambdas(lambdaEnv(service, 'notify-', { CAIRN_LOG_LEVEL: 'warn', CAIRN_OUTBOUND_PRIVATE: 'refuse' }), 'notify');
  ({ aws, worker } = lambdas);
  receiver = createServer((req, res) => {
    hits.push({
      signature: req.headers['x-cairn-signature'] as string | undefined,
      delivery: req.headers['x-cairn-delivery'] as string | undefined,
    });
    req.resume();
    res.writeHead(204).end();
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  receiverPort = (receiver.address() as AddressInfo).port;
}, 60_000);

afterAll(async () => {
  await lambdas?.close();
  await service?.close();
  await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
});

beforeEach(() => {
  sqs.reset();
  sqs.on(SendMessageCommand).resolves({ MessageId: randomUUID() });
});

const gql = (query: string, variables: Record<string, unknown> = {}) => lambdas.client.gql(lambdas.account.apiKey, query, variables);
const createSite = async () =>
  dataOf(
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
      input: { deploySettings: { source: { ipfs: { cid: 'bafkqaaa' } } } },
    }),
  ).createSite as { id: string; slug: string };
const addUrl = (siteId: string, url: string, events?: string[]) =>
  gql(
    'mutation ($s: ID!, $u: String!, $e: [DeployEvent!]) { addNotificationUrl(siteId: $s, url: $u, events: $e) { notificationUrl { id } secret } }',
    { s: siteId, u: url, e: events },
  );

test('the AWS composition sends notifications through the deploy queue, and refuses private addresses', () => {
  expect(aws.notificationOutbox).toBeInstanceOf(SqsDeployQueue);
  expect(aws.config.outbound.private).toBe('refuse');
  expect(service.services.notificationOutbox.constructor.name).toBe('LocalNotificationOutbox');
});

test('queue messages: a notification names its site, URL and delivery; anything less is refused', () => {
  expect(parseQueueMessage(JSON.stringify({ kind: 'notification', siteId: 's', urlId: 'u', deliveryId: 'd' }))).toEqual({
    kind: 'notification',
    siteId: 's',
    urlId: 'u',
    deliveryId: 'd',
  });
  for (const bad of [
    { kind: 'notification', siteId: 's', urlId: 'u' },
    { kind: 'notification', siteId: 's', deliveryId: 'd' },
    { kind: 'notification', siteId: '', urlId: 'u', deliveryId: 'd' },
  ]) {
    expect(parseQueueMessage(JSON.stringify(bad))).toBeUndefined();
  }
});

test.each([
  ['http:// (https only in AWS)', 'http://8.8.8.8/hook', /https:\/\//],
  ['loopback', 'https://127.0.0.1/hook', /127\.0\.0\.1/],
  ['the metadata service', 'https://169.254.169.254/latest/meta-data/', /169\.254\.169\.254/],
  ['a VPC address', 'https://10.0.12.7/hook', /10\.0\.12\.7/],
  ['IPv6 loopback', 'https://[::1]/hook', /::1/],
  ['IPv6 unique-local', 'https://[fd00::5]/hook', /fd00::5/],
  ['localhost', 'https://localhost/hook', /localhost/],
])('the GraphQL Lambda refuses a URL to %s', async (_, url, why) => {
  const site = await createSite();
  const err = onlyError(await addUrl(site.id, url));
  expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'url' });
  expect(err.message).toMatch(why);
  expect(await aws.notificationUrls.list(site.id)).toEqual([]);
});

test('triggerDeploy through the GraphQL Lambda records the CREATED delivery and queues it; nothing is sent from the request', async () => {
  const site = await createSite();
  const url = dataOf(await addUrl(site.id, 'https://8.8.8.8/cairn-hook', ['CREATED'])).addNotificationUrl.notificationUrl;
  sqs.resetHistory();
  const deploy = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id })).triggerDeploy;
  const [delivery] = await aws.notificationDeliveries.listOfUrl(site.id, url.id, 10);
  expect(delivery).toMatchObject({ deployId: deploy.id, event: 'CREATED', status: 'PENDING', attempt: 0 });
  expect(JSON.parse(delivery!.body)).toMatchObject({
    event: 'CREATED',
    deploy: { id: deploy.id, siteId: site.id, status: 'IN_PROGRESS' },
    site: { id: site.id, slug: site.slug },
  });
  expect(sent()).toEqual([
    { queue: QUEUE_URL, body: { siteId: site.id, deployId: deploy.id }, delay: undefined },
    { queue: QUEUE_URL, body: { kind: 'notification', siteId: site.id, urlId: url.id, deliveryId: delivery!.id }, delay: 0 },
  ]);
});

test("a deploy the scheduled tick fails for running too long sends FAILED with its log's end", async () => {
  const site = await createSite();
  const url = dataOf(await addUrl(site.id, 'https://8.8.8.8/cairn-hook', ['FAILED'])).addNotificationUrl.notificationUrl;
  const deploy = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id })).triggerDeploy;
  expect(await aws.deploys.claim(site.id, deploy.id)).toBeDefined();
  sqs.resetHistory();
  const tick = await runScheduledTick(aws, 10, new Date(Date.now() + 101 * 60_000));
  expect(tick.timedOut).toContain(deploy.id);
  const [delivery] = await aws.notificationDeliveries.listOfUrl(site.id, url.id, 10);
  expect(delivery).toMatchObject({ deployId: deploy.id, event: 'FAILED', status: 'PENDING' });
  const body = JSON.parse(delivery!.body);
  expect(body.deploy).toMatchObject({ id: deploy.id, status: 'FAILED', reason: expect.stringMatching(/^timed out/) });
  expect(body.logTail.at(-1)).toMatch(/Failed: timed out/);
  expect(notificationMessages()).toEqual([
    { queue: QUEUE_URL, body: { kind: 'notification', siteId: site.id, urlId: url.id, deliveryId: delivery!.id }, delay: 0 },
  ]);
});

describe('the deploy worker takes notifications off the queue', () => {
  /** A URL recorded as if its name had resolved to a public address when added, pointing at `target` now (DNS changed). */
  async function recordedUrl(target: string) {
    const site = await createSite();
    const url = await aws.notificationUrls.add(site.id, { url: target, events: ['CREATED'], secret: 'whsec_aws' });
    return { site, url };
  }

  test('an address that turned private is not connected to: the attempt is recorded and put off, doubling, capped at 900 s', async () => {
    const { site, url } = await recordedUrl(`https://127.0.0.1:${receiverPort}/hook`);
    const delivery = await aws.notificationDeliveries.create({
      siteId: site.id,
      urlId: url.id,
      deployId: 'd1',
      event: 'CREATED',
      body: '{}',
    });
    const ref = { siteId: site.id, urlId: url.id, deliveryId: delivery.id };
    const result = await worker(sqsEvent({ kind: 'notification', ...ref }));
    expect(result).toEqual({ batchItemFailures: [] });
    expect(hits).toEqual([]);
    const after = await aws.notificationDeliveries.get(ref);
    expect(after).toMatchObject({
      status: 'PENDING',
      attempt: 1,
      statusCode: null,
      error: expect.stringMatching(/127\.0\.0\.1 is a loopback/),
    });
    expect(notificationMessages()).toEqual([{ queue: QUEUE_URL, body: { kind: 'notification', ...ref }, delay: 10 }]);
    // The message coming back when due makes the second attempt, put off twice as long.
    await aws.db.doc.send(
      new (await import('@aws-sdk/lib-dynamodb')).UpdateCommand({
        TableName: aws.config.tables.deploys,
        Key: { pk: `SITE#${site.id}`, sk: `NOTIFY#${url.id}#${delivery.id}` },
        UpdateExpression: 'SET nextAttemptAt = :now',
        ExpressionAttributeValues: { ':now': new Date().toISOString() },
      }),
    );
    sqs.resetHistory();
    await worker(sqsEvent({ kind: 'notification', ...ref }));
    expect((await aws.notificationDeliveries.get(ref))?.attempt).toBe(2);
    expect(notificationMessages().map((m) => m.delay)).toEqual([20]);
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => retryDelaySeconds(10, n))).toEqual([10, 20, 40, 80, 160, 320, 640, 900]);
  });

  test('a message that comes back before its delivery is due is put off again, without an attempt', async () => {
    const { site, url } = await recordedUrl(`https://127.0.0.1:${receiverPort}/early`);
    const delivery = await aws.notificationDeliveries.create({
      siteId: site.id,
      urlId: url.id,
      deployId: 'd1',
      event: 'CREATED',
      body: '{}',
    });
    const ref = { siteId: site.id, urlId: url.id, deliveryId: delivery.id };
    await worker(sqsEvent({ kind: 'notification', ...ref }));
    sqs.resetHistory();
    await worker(sqsEvent({ kind: 'notification', ...ref }));
    expect((await aws.notificationDeliveries.get(ref))?.attempt).toBe(1);
    const [again] = notificationMessages();
    expect(again!.delay).toBeGreaterThanOrEqual(8);
    expect(again!.delay).toBeLessThanOrEqual(10);
  });

  test('after an hour of failures the delivery is given up with a log line, and nothing more is queued', async () => {
    const { site, url } = await recordedUrl(`https://10.0.0.1:${receiverPort}/old`);
    const anHourAgo = new NotificationDeliveryStore(aws.db, () => new Date(Date.now() - 3601_000));
    const delivery = await anHourAgo.create({ siteId: site.id, urlId: url.id, deployId: 'd1', event: 'CREATED', body: '{}' });
    const ref = { siteId: site.id, urlId: url.id, deliveryId: delivery.id };
    const lines: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => (lines.push(String(chunk)), true)) as never;
    try {
      await worker(sqsEvent({ kind: 'notification', ...ref }));
    } finally {
      process.stdout.write = write;
    }
    expect(await aws.notificationDeliveries.get(ref)).toMatchObject({ status: 'FAILED', attempt: 1, nextAttemptAt: null });
    expect(notificationMessages()).toEqual([]);
    const logged = lines.map((l) => JSON.parse(l)).find((l) => /given up/.test(l.msg));
    expect(logged).toMatchObject({ level: 'warn', siteId: site.id, urlId: url.id, deliveryId: delivery.id, event: 'CREATED' });
    // A repeat of the message finds it ended: no attempt, nothing queued.
    await worker(sqsEvent({ kind: 'notification', ...ref }));
    expect((await aws.notificationDeliveries.get(ref))?.attempt).toBe(1);
  });

  test('a receiver that takes it (where private addresses are allowed) gets it signed; DELIVERED, nothing queued', async () => {
    const { site, url } = await recordedUrl(`http://127.0.0.1:${receiverPort}/ok`);
    const delivery = await aws.notificationDeliveries.create({
      siteId: site.id,
      urlId: url.id,
      deployId: 'd1',
      event: 'CREATED',
      body: '{"event":"CREATED"}',
    });
    const ref = { siteId: site.id, urlId: url.id, deliveryId: delivery.id };
    const services = { ...aws, config: { ...aws.config, outbound: { private: 'allow' as const } } };
    expect(await takeDeploys({ services } as Partial<WorkerOptions> as WorkerOptions, sqsEvent({ kind: 'notification', ...ref }))).toEqual({
      batchItemFailures: [],
    });
    expect(hits.at(-1)).toEqual({ signature: expect.stringMatching(/^t=\d+,sha256=[0-9a-f]{64}$/), delivery: delivery.id });
    expect(await aws.notificationDeliveries.get(ref)).toMatchObject({ status: 'DELIVERED', attempt: 1, statusCode: 204 });
    expect(notificationMessages()).toEqual([]);
  });

  test('a queue that refuses the retry makes the message fail, so SQS brings it back', async () => {
    const { site, url } = await recordedUrl(`https://127.0.0.1:${receiverPort}/refused`);
    const delivery = await aws.notificationDeliveries.create({
      siteId: site.id,
      urlId: url.id,
      deployId: 'd1',
      event: 'CREATED',
      body: '{}',
    });
    sqs.on(SendMessageCommand).rejects(new Error('SQS is down'));
    const event = sqsEvent({ kind: 'notification', siteId: site.id, urlId: url.id, deliveryId: delivery.id });
    expect(await worker(event)).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[0]!.messageId }] });
  });
});
