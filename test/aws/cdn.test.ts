/**
 * The sites CDN as it runs in AWS, with the AWS calls recorded by
 * aws-sdk-client-mock (nothing of CloudFront, its KeyValueStore or SQS runs
 * here): the CloudFront purger (one wildcard path per site, a unique
 * CallerReference per call, TooManyInvalidationsInProgress put off on the
 * deploy queue with back-off, given up after about an hour), the
 * KeyValueStore host map (IfMatch from DescribeKeyValueStore, a stale ETag
 * read again, the sites table as the truth), and both wired through the
 * Lambda doors: the GraphQL mutations that change sites, purgeCache and
 * publishDeploy, and the deploy worker taking the retries off the queue.
 * The records are in the embedded DynamoDB.
 */
import { randomUUID } from 'node:crypto';
import {
  CloudFrontClient,
  CreateInvalidationCommand,
  TooManyInvalidationsInProgress,
  type CreateInvalidationCommandInput,
} from '@aws-sdk/client-cloudfront';
import {
  CloudFrontKeyValueStoreClient,
  ConflictException,
  DeleteKeyCommand,
  DescribeKeyValueStoreCommand,
  GetKeyCommand,
  PutKeyCommand,
} from '@aws-sdk/client-cloudfront-keyvaluestore';
import { SendMessageCommand, SQSClient, type SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { startTestService, type TestService } from '../support/service.js';
import { newAccount, onlyError } from '../support/graphql.js';
import { lambdaEnv, QUEUE_URL, sqsEvent, startLambdas, type AwsLambdas } from '../support/aws-mocks.js';
import { keyValueStoreStandIn } from '../support/key-value-store.js';
import type { Services } from '../../functions/core/services.js';
import { createLogger, type Logger } from '../../functions/core/logger.js';
import { CloudFrontPurger } from '../../functions/aws/cloudfront-purger.js';
import { KvsSiteHostMap } from '../../functions/aws/kvs-site-hosts.js';
import { CDN_RETRY_MAX_ATTEMPTS, cdnRetryDelaySeconds } from '../../functions/core/hosting/cdn-retry.js';
import { SqsDeployQueue, parseQueueMessage } from '../../functions/aws/sqs-deploy-queue.js';
import { noCdn, noSiteHostMap, type CdnRetry } from '../../functions/core/ports/site-cache.js';

const DISTRIBUTION = 'E2QWRUHEXAMPLE';
const KVS_ARN = 'arn:aws:cloudfront::123456789012:key-value-store/a1b2c3d4-5678-90ab-cdef-EXAMPLE11111';
const SITE = '0d9e7a4c-1f2b-4c3d-8e5f-6a7b8c9d0e1f';

const cloudFront = mockClient(CloudFrontClient);
const kvsStandIn = keyValueStoreStandIn(KVS_ARN);
const kvs = kvsStandIn.mock;
const sqs = mockClient(SQSClient);

/** The store as the stand-in keeps it. */
const store = kvsStandIn.store;
const getKey = kvsStandIn.getKey;

let logLines: any[] = [];
const logger: Logger = createLogger('debug', {}, (line) => logLines.push(JSON.parse(line)));
const half = () => 0.5;

const sent = (): Array<{ body: CdnRetry; delay: number | undefined }> =>
  sqs
    .commandCalls(SendMessageCommand)
    .map((c) => ({ body: JSON.parse((c.args[0].input as SendMessageCommandInput).MessageBody!), delay: c.args[0].input.DelaySeconds }));
const invalidations = () =>
  cloudFront.commandCalls(CreateInvalidationCommand).map((c) => c.args[0].input as CreateInvalidationCommandInput);
const throttled = () =>
  new TooManyInvalidationsInProgress({ message: 'Your request contains too many invalidations.', $metadata: { httpStatusCode: 400 } });

beforeEach(() => {
  cloudFront.reset();
  kvsStandIn.reset();
  sqs.reset();
  logLines = [];
  sqs.on(SendMessageCommand).resolves({ MessageId: randomUUID() });
  cloudFront
    .on(CreateInvalidationCommand)
    .callsFake(() => ({ Location: 'x', Invalidation: { Id: `I${randomUUID().slice(0, 8)}`, Status: 'InProgress' } }));
});

// ---------------------------------------------------------------- the purger

describe('CloudFrontPurger', () => {
  const queue = () => new SqsDeployQueue(new SQSClient({ region: 'us-east-1' }), QUEUE_URL, {} as never);
  const purger = () => new CloudFrontPurger(new CloudFrontClient({ region: 'us-east-1' }), DISTRIBUTION, queue(), logger, half);

  test('one invalidation of the site prefix, with a CallerReference of its own every time', async () => {
    const p = purger();
    await p.purgeSite(SITE);
    await p.purgeSite(SITE);
    const calls = invalidations();
    expect(calls).toHaveLength(2);
    for (const input of calls) {
      expect(input).toEqual({
        DistributionId: DISTRIBUTION,
        InvalidationBatch: { CallerReference: expect.any(String), Paths: { Quantity: 1, Items: [`/sites/${SITE}/*`] } },
      });
    }
    expect(calls[0]!.InvalidationBatch!.CallerReference).not.toBe(calls[1]!.InvalidationBatch!.CallerReference);
    expect(sent()).toEqual([]);
  });

  test('TooManyInvalidationsInProgress puts the purge off on the deploy queue, delayed; the call resolves', async () => {
    cloudFront.on(CreateInvalidationCommand).rejects(throttled());
    await expect(purger().purgeSite(SITE)).resolves.toBeUndefined();
    expect(sqs.commandCalls(SendMessageCommand)[0]!.args[0].input.QueueUrl).toBe(QUEUE_URL);
    expect(sent()).toEqual([{ body: { kind: 'purge', siteId: SITE, attempt: 1 }, delay: cdnRetryDelaySeconds(1, half) }]);
    expect(logLines.find((l) => l.level === 'warn')).toMatchObject({
      msg: expect.stringContaining('put off'),
      reason: 'TooManyInvalidationsInProgress',
      attempt: 1,
    });
  });

  test("the back-off doubles from 30 s to the queue's 900 s cap, with jitter, and stops after about an hour", async () => {
    cloudFront.on(CreateInvalidationCommand).rejects(throttled());
    const p = purger();
    for (let attempt = 0; attempt < CDN_RETRY_MAX_ATTEMPTS; attempt++) await p.purgeSite(SITE, { attempt });
    const delays = sent().map((m) => m.delay!);
    expect(sent().map((m) => m.body.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(delays).toEqual([26, 53, 105, 210, 420, 788, 788, 788]);
    const total = delays.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(45 * 60);
    expect(total).toBeLessThanOrEqual(60 * 60);
    for (const r of [0, 0.999]) for (let n = 1; n <= 12; n++) expect(cdnRetryDelaySeconds(n, () => r)).toBeLessThanOrEqual(900);
    expect(cdnRetryDelaySeconds(1, () => 0)).toBe(23);
    expect(cdnRetryDelaySeconds(1, () => 1)).toBe(30);
    // The last one is given up: logged as an error, nothing sent, and the call still resolves.
    sqs.resetHistory();
    await expect(p.purgeSite(SITE, { attempt: CDN_RETRY_MAX_ATTEMPTS })).resolves.toBeUndefined();
    expect(sent()).toEqual([]);
    expect(logLines.at(-1)).toMatchObject({ level: 'error', msg: expect.stringContaining('given up'), kind: 'purge', siteId: SITE });
  });

  test('any other failure is put off the same way; a queue that refuses too makes the call reject', async () => {
    cloudFront.on(CreateInvalidationCommand).rejects(Object.assign(new Error('socket hang up'), { name: 'TimeoutError' }));
    await purger().purgeSite(SITE);
    expect(sent()).toEqual([{ body: { kind: 'purge', siteId: SITE, attempt: 1 }, delay: 26 }]);
    sqs.on(SendMessageCommand).rejects(new Error('SQS is down'));
    await expect(purger().purgeSite(SITE)).rejects.toThrow('SQS is down');
  });

  test('anything but a site id is refused before CloudFront is asked', async () => {
    await expect(purger().purgeSite('*')).rejects.toThrow(/not a site id/);
    await expect(purger().purgeSite(`${SITE}/../x`)).rejects.toThrow(/not a site id/);
    expect(invalidations()).toEqual([]);
  });
});

// ---------------------------------------------------------------- the host map

describe('KvsSiteHostMap', () => {
  const map = () =>
    new KvsSiteHostMap(
      new CloudFrontKeyValueStoreClient({ region: 'us-east-1' }),
      KVS_ARN,
      new SqsDeployQueue(new SQSClient({ region: 'us-east-1' }), QUEUE_URL, {} as never),
      logger,
      half,
    );
  const puts = () => kvs.commandCalls(PutKeyCommand).map((c) => c.args[0].input);
  const deletes = () => kvs.commandCalls(DeleteKeyCommand).map((c) => c.args[0].input);

  test('a site taking a slug: PutKey of the lowercased label with the ETag DescribeKeyValueStore gave', async () => {
    kvsStandIn.version = 7;
    await map().reconcile('My-Site', async () => SITE);
    expect(puts()).toEqual([{ KvsARN: KVS_ARN, Key: 'my-site', Value: SITE, IfMatch: 'E7' }]);
    expect(kvs.commandCalls(DescribeKeyValueStoreCommand)[0]!.args[0].input).toEqual({ KvsARN: KVS_ARN });
    expect(store.get('my-site')).toBe(SITE);
  });

  test('an entry that already says so is not written again', async () => {
    store.set('my-site', SITE);
    await map().reconcile('my-site', async () => SITE);
    expect(puts()).toEqual([]);
    expect(deletes()).toEqual([]);
  });

  test('a slug no site holds any more: DeleteKey with the ETag; already gone is fine', async () => {
    store.set('old-name', SITE);
    kvsStandIn.version = 3;
    await map().reconcile('old-name', async () => undefined);
    expect(deletes()).toEqual([{ KvsARN: KVS_ARN, Key: 'old-name', IfMatch: 'E3' }]);
    expect(store.has('old-name')).toBe(false);
    kvs.resetHistory();
    await map().reconcile('old-name', async () => undefined);
    expect(deletes()).toEqual([]);
    expect(sent()).toEqual([]);
  });

  test('a stale ETag (another writer got there first) is read again, with the sites table, and written then', async () => {
    let reads = 0;
    const other = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
    // Between our DescribeKeyValueStore and our write, someone else writes.
    kvs
      .on(GetKeyCommand)
      .callsFakeOnce((input: { Key: string }) => {
        store.set('someone-else', 'x');
        kvsStandIn.version++;
        return getKey(input);
      })
      .callsFake(getKey);
    await map().reconcile('contested', async () => (++reads === 1 ? SITE : other));
    const attempts = puts();
    expect(attempts.map((p) => [p.IfMatch, p.Value])).toEqual([
      ['E1', SITE],
      ['E2', other],
    ]);
    expect(reads).toBe(2);
    expect(store.get('contested')).toBe(other);
  });

  test('a write that keeps failing is put off on the queue as a site-host retry; the call resolves', async () => {
    kvs.on(PutKeyCommand).rejects(Object.assign(new Error('denied'), { name: 'AccessDeniedException' }));
    await expect(map().reconcile('my-site', async () => SITE)).resolves.toBeUndefined();
    expect(sent()).toEqual([{ body: { kind: 'site-host', label: 'my-site', attempt: 1 }, delay: 26 }]);
    // Endless conflicts too, after a few rounds.
    sqs.resetHistory();
    kvs.on(PutKeyCommand).rejects(new ConflictException({ message: 'changed', $metadata: {} }));
    await map().reconcile('my-site', async () => SITE, { attempt: 2 });
    expect(sent()).toEqual([{ body: { kind: 'site-host', label: 'my-site', attempt: 3 }, delay: 105 }]);
    expect(kvs.commandCalls(PutKeyCommand).length).toBeGreaterThan(2);
  });

  test('a label no host can carry is left alone', async () => {
    await map().reconcile('not a slug!', async () => SITE);
    expect(kvs.calls()).toHaveLength(0);
  });
});

test('queue messages: the old deploy shape, and the two CDN retries; anything else is refused', () => {
  expect(parseQueueMessage(JSON.stringify({ siteId: 's', deployId: 'd' }))).toEqual({ kind: 'deploy', siteId: 's', deployId: 'd' });
  expect(parseQueueMessage(JSON.stringify({ kind: 'purge', siteId: SITE, attempt: 2 }))).toEqual({
    kind: 'purge',
    siteId: SITE,
    attempt: 2,
  });
  expect(parseQueueMessage(JSON.stringify({ kind: 'site-host', label: 'a', attempt: 0 }))).toEqual({
    kind: 'site-host',
    label: 'a',
    attempt: 0,
  });
  for (const bad of [
    'nope',
    '{}',
    '[]',
    'null',
    JSON.stringify({ kind: 'purge', siteId: SITE }),
    JSON.stringify({ kind: 'purge', siteId: SITE, attempt: -1 }),
    JSON.stringify({ kind: 'other', siteId: 's', deployId: 'd' }),
  ]) {
    expect(parseQueueMessage(bad)).toBeUndefined();
  }
});

// ---------------------------------------------------------------- through the Lambda doors

describe('through the Lambda doors', () => {
  let service: TestService;
  let lambdas: AwsLambdas;
  let aws: Services;
  let gql: AwsLambdas['gql'];
  let worker: AwsLambdas['worker'];

  beforeAll(async () => {
    service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
    const env = lambdaEnv(service, 'cdn-', {
      CAIRN_CDN_DISTRIBUTION_ID: DISTRIBUTION,
      CAIRN_SITE_HOSTS_KVS_ARN: KVS_ARN,
      CAIRN_LOG_LEVEL: process.env.CAIRN_TEST_LOG_LEVEL ?? 'silent',
    });
    lambdas = await startLambdas(env, 'cdn');
    ({ aws, gql, worker } = lambdas);
  }, 60_000);

  afterAll(async () => {
    await lambdas?.close();
    await service?.close();
  });

  const createSite = async (name?: string) =>
    (
      await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
        input: { ...(name ? { name } : {}), deploySettings: { source: { ipfs: { cid: 'bafkqaaa' } } } },
      })
    ).createSite as { id: string; slug: string };
  const purgeCache = (siteId: string) => gql('mutation ($s: String!) { purgeCache(input: { siteId: $s }) }', { s: siteId });
  /** A DEPLOYED deploy of the site, published through publishDeploy (which purges). */
  const publishOne = (siteId: string) => lambdas.publish(siteId, 'bafkqaaa');
  const sitePaths = (siteId: string) => ({ Quantity: 1, Items: [`/sites/${siteId}/*`] });

  test('the AWS composition picks CloudFront and the KeyValueStore; the local one neither', () => {
    // Each loads its client at its first use (functions/aws/adapters.ts); the tests below see them reach CloudFront and the store.
    expect(aws.cdn).not.toBe(noCdn);
    expect(aws.siteHosts).not.toBe(noSiteHostMap);
    expect(service.services.cdn.constructor.name).toBe('LocalSiteCache');
    expect(service.services.siteHosts).not.toBeInstanceOf(KvsSiteHostMap);
  });

  test('createSite, a rename and deleteSite keep the host map: put, move, remove', async () => {
    const site = await createSite();
    expect(store.get(site.slug)).toBe(site.id);
    const renamed = `renamed-${site.slug}`;
    await gql('mutation ($s: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $s, input: $input) { slug } }', {
      s: site.id,
      input: { name: renamed },
    });
    expect(store.get(renamed)).toBe(site.id);
    expect(store.has(site.slug)).toBe(false);
    // An update that keeps the slug reads the entry, and writes nothing when it is right.
    kvs.resetHistory();
    await gql('mutation ($s: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $s, input: $input) { slug } }', {
      s: site.id,
      input: { description: 'same name' },
    });
    expect(kvs.commandCalls(GetKeyCommand)).toHaveLength(1);
    expect(kvs.commandCalls(PutKeyCommand).length + kvs.commandCalls(DeleteKeyCommand).length).toBe(0);
    expect(await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: site.id })).toEqual({ deleteSite: true });
    expect(store.has(renamed)).toBe(false);
    for (const c of kvs.commandCalls(PutKeyCommand).concat(kvs.commandCalls(DeleteKeyCommand) as never))
      expect(c.args[0].input.IfMatch).toMatch(/^E\d+$/);
  });

  test('the store failing does not fail createSite: the site is kept and the write is put off; the worker does it from the queue', async () => {
    kvs.on(PutKeyCommand).rejects(Object.assign(new Error('Service Unavailable'), { name: 'InternalServerException', $fault: 'server' }));
    const site = await createSite();
    expect((await aws.sites.getById(site.id))?.slug).toBe(site.slug);
    expect(store.has(site.slug)).toBe(false);
    const [retry] = sent();
    expect(retry).toEqual({ body: { kind: 'site-host', label: site.slug, attempt: 1 }, delay: expect.any(Number) });
    expect(retry!.delay).toBeGreaterThanOrEqual(23);
    expect(retry!.delay).toBeLessThanOrEqual(30);
    kvsStandIn.reset();
    expect(await worker(sqsEvent(JSON.stringify(retry!.body)))).toEqual({ batchItemFailures: [] });
    expect(store.get(site.slug)).toBe(site.id);
  });

  test("purgeCache of a site with nothing published answers true and invalidates nothing; once published, it invalidates the site's prefix", async () => {
    const site = await createSite();
    expect(await purgeCache(site.id)).toEqual({ purgeCache: true });
    expect(invalidations()).toEqual([]);
    await publishOne(site.id);
    cloudFront.resetHistory();
    expect(await purgeCache(site.id)).toEqual({ purgeCache: true });
    expect(invalidations()).toEqual([
      {
        DistributionId: DISTRIBUTION,
        InvalidationBatch: { CallerReference: expect.stringMatching(new RegExp(`^${site.id}/`)), Paths: sitePaths(site.id) },
      },
    ]);
  });

  test("purgeCache of another team's site is FORBIDDEN and invalidates nothing", async () => {
    const theirs = await createSite();
    await publishOne(theirs.id);
    cloudFront.resetHistory();
    sqs.resetHistory();
    const other = await newAccount({ services: aws } as TestService, 'cdn-other');
    const refused = await lambdas.client.gql(other.apiKey, 'mutation ($s: String!) { purgeCache(input: { siteId: $s }) }', {
      s: theirs.id,
    });
    expect(onlyError(refused).extensions.code).toBe('FORBIDDEN');
    expect(invalidations()).toEqual([]);
    expect(sent()).toEqual([]);
  });

  test("deleteSite invalidates a published site's prefix once; a site that never published, nothing", async () => {
    const published = await createSite();
    await publishOne(published.id);
    cloudFront.resetHistory();
    expect(await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: published.id })).toEqual({ deleteSite: true });
    expect(invalidations().map((c) => c.InvalidationBatch!.Paths)).toEqual([sitePaths(published.id)]);
    cloudFront.resetHistory();
    const never = await createSite();
    expect(await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: never.id })).toEqual({ deleteSite: true });
    expect(invalidations()).toEqual([]);
  });

  test('purgeCache: a throttle still answers true and the worker purges from the queue', async () => {
    const site = await createSite();
    await publishOne(site.id);
    cloudFront.reset();
    cloudFront
      .on(CreateInvalidationCommand)
      .rejectsOnce(throttled())
      .resolves({ Invalidation: { Id: 'I2', Status: 'InProgress' } as never });
    sqs.resetHistory();
    expect(await purgeCache(site.id)).toEqual({ purgeCache: true });
    const [retry] = sent();
    expect(retry!.body).toEqual({ kind: 'purge', siteId: site.id, attempt: 1 });
    expect(retry!.delay).toBeGreaterThanOrEqual(23);

    // The worker takes it off the queue: it is throttled again (put off further), then it goes through.
    sqs.resetHistory();
    cloudFront.reset();
    cloudFront
      .on(CreateInvalidationCommand)
      .rejectsOnce(throttled())
      .resolves({ Invalidation: { Id: 'I3', Status: 'InProgress' } as never });
    expect(await worker(sqsEvent(JSON.stringify(retry!.body)))).toEqual({ batchItemFailures: [] });
    const [again] = sent();
    expect(again!.body).toEqual({ kind: 'purge', siteId: site.id, attempt: 2 });
    expect(again!.delay).toBeGreaterThanOrEqual(45);
    expect(again!.delay).toBeLessThanOrEqual(60);
    expect(await worker(sqsEvent(JSON.stringify(again!.body)))).toEqual({ batchItemFailures: [] });
    const calls = invalidations();
    expect(calls).toHaveLength(2);
    expect(new Set(calls.map((c) => c.InvalidationBatch!.CallerReference)).size).toBe(2);
  });

  test('a site missing from the store (made before the CDN, or its retries given up) is written again by an update or a purgeCache', async () => {
    const site = await createSite();
    store.delete(site.slug);
    await gql('mutation ($s: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $s, input: $input) { slug } }', {
      s: site.id,
      input: { description: 'touch' },
    });
    expect(store.get(site.slug)).toBe(site.id);
    store.delete(site.slug);
    expect(await purgeCache(site.id)).toEqual({ purgeCache: true });
    expect(store.get(site.slug)).toBe(site.id);
  });

  test('a retry the queue refuses too goes back to SQS as a batch failure', async () => {
    cloudFront.on(CreateInvalidationCommand).rejects(throttled());
    sqs.on(SendMessageCommand).rejects(new Error('SQS is down'));
    const event = sqsEvent(JSON.stringify({ kind: 'purge', siteId: SITE, attempt: 3 }));
    expect(await worker(event)).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[0]!.messageId }] });
  });

  test('publishDeploy (a rollback) purges the site', async () => {
    const site = await createSite();
    cloudFront.resetHistory();
    await publishOne(site.id);
    expect(invalidations().map((c) => c.InvalidationBatch!.Paths)).toEqual([sitePaths(site.id)]);
  });
});
