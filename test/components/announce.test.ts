/**
 * The announce step (functions/deploy-worker/steps/announce.ts) on its own,
 * with a real service: a deploy the publish step ended DEPLOYED is said in
 * its log to be live or not (and why not), its notifications are recorded
 * (SUCCEEDED, then PUBLISHED only when it went live), and its log is
 * written whole before the step returns.
 */
import { startTestService, type TestService } from '../support/service.js';
import { newAccount } from '../support/graphql.js';
import { announce } from '../../functions/deploy-worker/steps/announce.js';
import { DeployLog } from '../../functions/core/logs/deploy-log.js';
import { deployLogKey } from '../../functions/core/ports/log-store.js';
import type { Site } from '../../functions/core/data/sites.js';

const CID = 'bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi';

let service: TestService;
let site: Site;
let urlId: string;

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  const owner = await newAccount(service, 'announcer');
  site = await service.services.sites.create({
    teamId: owner.team.id,
    createdBy: owner.account.id,
    buildSettings: { environmentVariables: [] },
    deploySettings: { autoPublishing: true, prDeployPreviews: false, source: { kind: 'ipfs' } },
  });
  // Nothing listens there: only the recorded deliveries are read.
  urlId = (
    await service.services.notificationUrls.add(site.id, {
      url: 'http://127.0.0.1:9/hook',
      events: ['SUCCEEDED', 'PUBLISHED'],
      secret: 'whsec_test',
    })
  ).id;
});

afterAll(async () => {
  await service?.close();
});

/** A deploy of the site ended DEPLOYED (published or not), as the publish step leaves it, with its log. */
async function ended(options: { publish: boolean; preview?: boolean }) {
  const { deploys, deployLogs, logger } = service.services;
  const queued = await deploys.enqueue({
    siteId: site.id,
    autoPublish: true,
    repository: {},
    source: { kind: 'ipfs', cid: CID },
    ...(options.preview ? { preview: true } : {}),
  });
  expect(await deploys.claim(site.id, queued.id)).toBeDefined();
  const done = await deploys.finish(site.id, queued.id, { status: 'DEPLOYED', ipfsHash: CID, publish: options.publish });
  const log = new DeployLog(deployLogs, deployLogKey(site.id, queued.id), logger);
  log.line('Pinned');
  return { done: done!, log };
}

const linesOf = async (deployId: string) =>
  ((await service.services.deployLogs.read(deployLogKey(site.id, deployId))) ?? '')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.replace(/^\S+\s+/, ''));

const eventsOf = async (deployId: string) =>
  (await service.services.notificationDeliveries.listOfUrl(site.id, urlId, 50))
    .filter((d) => d.deployId === deployId)
    .map((d) => d.event)
    .reverse();

test('a deploy that went live: the log says so, SUCCEEDED then PUBLISHED are recorded', async () => {
  const { done, log } = await ended({ publish: true });
  expect(done.publishedNow).toBe(true);
  const announced = await announce(service.services, { deploy: done, published: true, log });
  expect(announced).toEqual(done);
  expect((await linesOf(done.id)).slice(-2)).toEqual(['Pinned', 'Published: the site now serves this deploy']);
  expect(await eventsOf(done.id)).toEqual(['SUCCEEDED', 'PUBLISHED']);
});

test("a deploy not published: the publish step's reason is its line, and only SUCCEEDED is recorded", async () => {
  const { done, log } = await ended({ publish: false });
  const why = 'Not published: 1234567 is older than the published 89abcde; publishDeploy it to roll back';
  await announce(service.services, { deploy: done, published: false, notPublished: why, log });
  expect((await linesOf(done.id)).at(-1)).toBe(why);
  expect(await eventsOf(done.id)).toEqual(['SUCCEEDED']);

  const other = await ended({ publish: false });
  await announce(service.services, { deploy: other.done, published: false, log: other.log });
  expect((await linesOf(other.done.id)).at(-1)).toBe('Auto-publishing is off: not published (publishDeploy publishes it)');
});

test('a preview deploy says it is a preview, whatever reason the publish step gave', async () => {
  const { done, log } = await ended({ publish: false, preview: true });
  await announce(service.services, { deploy: done, published: false, notPublished: 'something else', log });
  expect((await linesOf(done.id)).at(-1)).toBe('A preview: not published');
  expect(await eventsOf(done.id)).toEqual(['SUCCEEDED']);
});

test('a URL added after the deploy went live, before its notifications were recorded, hears nothing of it', async () => {
  const { done, log } = await ended({ publish: true });
  // As on a busy machine: someone adds a URL between the publishing write and the announcement.
  await new Promise((r) => setTimeout(r, 5));
  const late = await service.services.notificationUrls.add(site.id, {
    url: 'http://127.0.0.1:9/late',
    events: ['SUCCEEDED', 'PUBLISHED'],
    secret: 'whsec_late',
  });
  await announce(service.services, { deploy: done, published: true, log });
  expect(await eventsOf(done.id)).toEqual(['SUCCEEDED', 'PUBLISHED']);
  const heardLate = (await service.services.notificationDeliveries.listOfUrl(site.id, late.id, 50)).filter((d) => d.deployId === done.id);
  expect(heardLate).toEqual([]);
  // The next deploy, after it was added, it hears.
  const next = await ended({ publish: true });
  await announce(service.services, { deploy: next.done, published: true, log: next.log });
  const heardNext = (await service.services.notificationDeliveries.listOfUrl(site.id, late.id, 50)).filter(
    (d) => d.deployId === next.done.id,
  );
  expect(heardNext.map((d) => d.event).reverse()).toEqual(['SUCCEEDED', 'PUBLISHED']);
  await service.services.notificationUrls.remove(site.id, late.id);
});
