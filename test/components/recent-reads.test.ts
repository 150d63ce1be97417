/**
 * The sites and finished deploys the stores remember for the reads that
 * show them (functions/core/data/recent-reads.ts, sites.ts, deploys.ts),
 * against the embedded DynamoDB: a read again within RECENT_READS_MS costs
 * no database call; every write path of the two stores is seen by the next
 * read in the same process at once (each test below reads first, so the
 * record is remembered, then writes, then reads); a read under way while a
 * write runs never puts the old record back; a write by another process (a
 * second pair of stores on the same tables, as another Lambda container) is
 * seen within RECENT_READS_MS; a deploy in progress is never remembered.
 */
import { randomBytes } from 'node:crypto';
import { aesSealer } from '../../functions/core/auth/secrets.js';
import type { Database } from '../../functions/core/data/dynamo.js';
import { DeployStore, type Deploy } from '../../functions/core/data/deploys.js';
import { RECENT_READS_MS, RecentReads } from '../../functions/core/data/recent-reads.js';
import { SiteStore, type NewSite, type Site } from '../../functions/core/data/sites.js';
import { newSortableId } from '../../functions/core/ids.js';
import { countingDatabase, startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';

let embedded: EmbeddedDb;
let db: Database;
const sealer = aesSealer(randomBytes(32));

beforeAll(async () => {
  embedded = await startEmbeddedDb();
  db = embedded.client(true);
});
afterAll(async () => {
  await embedded?.close();
});

/** One process's stores: the site store tells the deploy store's publications apart, as createServices wires them. */
function storesOn(database: Database) {
  const sites = new SiteStore(database, sealer);
  return { sites, deploys: new DeployStore(database, undefined, sites) };
}

let teams = 0;
const newTeam = () => `team-recent-${++teams}`;
const newSite = (teamId: string, description = 'first'): NewSite => ({
  teamId,
  createdBy: 'account-1',
  description,
  buildSettings: { environmentVariables: [] },
  deploySettings: { autoPublishing: true, prDeployPreviews: false, source: { kind: 'ipfs', cid: null } },
});
let clock = Date.UTC(2026, 0, 1);
const finished = (siteId: string, status: Deploy['status'] = 'DEPLOYED'): Deploy => {
  const at = (clock += 60_000);
  return {
    id: newSortableId(at),
    siteId,
    status,
    createdAt: new Date(at).toISOString(),
    completedAt: new Date(at + 1000).toISOString(),
    published: false,
    autoPublish: true,
    repository: { commit: 'a'.repeat(40) },
  };
};
const oneDeploy = async (deploys: DeployStore, siteId: string, deployId: string) =>
  (await deploys.getManyRecent([{ siteId, deployId }]))[0];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('read again at once: no database call for a site, a page of sites or finished deploys; then read afresh after the time', async () => {
  const c = countingDatabase(db);
  const { sites, deploys } = storesOn(c.db);
  const team = newTeam();
  const site = await sites.create(newSite(team));
  const done = [finished(site.id), finished(site.id, 'FAILED')];
  await deploys.putMany(done);
  const keys = done.map((d) => ({ siteId: site.id, deployId: d.id }));
  c.calls();
  const first = {
    site: await sites.getRecent(site.id),
    page: await sites.listRecentByTeam(team, 20),
    deploys: await deploys.getManyRecent(keys),
  };
  expect(first.page.items.map((s) => s.id)).toEqual([site.id]);
  expect(first.deploys.map((d) => d.id)).toEqual(done.map((d) => d.id));
  expect(c.calls()).toEqual({ GetCommand: 1, QueryCommand: 1, BatchGetCommand: 1 });
  const started = performance.now();
  for (let i = 0; i < 10; i++) {
    expect(await sites.getRecent(site.id)).toEqual(first.site);
    expect(await sites.listRecentByTeam(team, 20)).toBe(first.page);
    expect(await deploys.getManyRecent(keys)).toEqual(first.deploys);
  }
  if (performance.now() - started < RECENT_READS_MS) expect(c.calls()).toEqual({});
  // What is remembered is frozen: a request cannot change what the next one reads.
  expect(Object.isFrozen(first.site) && Object.isFrozen(first.site!.deploySettings.source)).toBe(true);
  expect(Object.isFrozen(first.deploys[0]!.repository)).toBe(true);

  await sleep(RECENT_READS_MS + 50);
  c.calls();
  await sites.getRecent(site.id);
  await sites.listRecentByTeam(team, 20);
  await deploys.getManyRecent(keys);
  expect(c.calls()).toEqual({ GetCommand: 1, QueryCommand: 1, BatchGetCommand: 1 });
});

test("a deploy in progress is never remembered: each read reads it, and sees its phase's moves", async () => {
  const c = countingDatabase(db);
  const { sites, deploys } = storesOn(c.db);
  const site = await sites.create(newSite(newTeam()));
  const queued = await deploys.enqueue({ siteId: site.id, autoPublish: true, repository: {} });
  c.calls();
  expect((await oneDeploy(deploys, site.id, queued.id))?.phase).toBe('queued');
  expect((await oneDeploy(deploys, site.id, queued.id))?.phase).toBe('queued');
  expect(c.calls()).toEqual({ GetCommand: 2 });
});

describe('every write of the site store is seen by the next read at once', () => {
  let sites: SiteStore;
  let deploys: DeployStore;
  let team: string;
  let site: Site;
  /** Reads the site three ways (remembering it), runs the write, and reads again. */
  async function afterWrite(write: () => Promise<unknown>) {
    await sites.getRecent(site.id);
    await sites.getRecentBySlug(site.slug);
    await sites.listRecentByTeam(team, 20);
    await write();
    const page = await sites.listRecentByTeam(team, 20);
    return { byId: await sites.getRecent(site.id), page: page.items };
  }
  beforeEach(async () => {
    ({ sites, deploys } = storesOn(db));
    team = newTeam();
    site = await sites.create(newSite(team));
  });

  test('create: the team page holds the new site', async () => {
    const { page } = await afterWrite(() => sites.create(newSite(team, 'second')));
    expect(page.map((s) => s.description)).toEqual(['first', 'second']);
  });

  test('update: the site by id, by its new slug and in the page; the old slug names nothing', async () => {
    const { byId, page } = await afterWrite(() =>
      sites.update(site.id, team, (s) => ({ ...s, name: `${s.slug}-new`, slug: `${s.slug}-new`, description: 'changed' })),
    );
    expect(byId).toMatchObject({ slug: `${site.slug}-new`, description: 'changed' });
    expect(page.map((s) => s.description)).toEqual(['changed']);
    expect((await sites.getRecentBySlug(`${site.slug}-new`))?.id).toBe(site.id);
    expect(await sites.getRecentBySlug(site.slug)).toBeUndefined();
  });

  test('setLatestDeploy and publishDeploy: the pointers, by id and in the page', async () => {
    const [a, b] = [finished(site.id), finished(site.id)];
    await deploys.putMany([a!, b!]);
    let seen = await afterWrite(() => sites.setLatestDeploy(site.id, b!.id));
    expect([seen.byId?.latestDeployId, seen.page[0]?.latestDeployId]).toEqual([b!.id, b!.id]);
    seen = await afterWrite(() => sites.publishDeploy(site.id, a!.id, { onlyIfNewer: false }));
    expect([seen.byId?.publishedDeployId, seen.page[0]?.publishedDeployId]).toEqual([a!.id, a!.id]);
  });

  test('delete: gone by id, by slug and from the page', async () => {
    const { byId, page } = await afterWrite(() => sites.delete(site.id, team));
    expect(byId).toBeUndefined();
    expect(page).toEqual([]);
    expect(await sites.getRecentBySlug(site.slug)).toBeUndefined();
  });

  test("a deploy's end that publishes it: the site's published deploy, by id and in the page", async () => {
    const queued = await deploys.enqueue({ siteId: site.id, autoPublish: true, repository: {} });
    await deploys.claim(site.id, queued.id);
    const { byId, page } = await afterWrite(() => deploys.finish(site.id, queued.id, { status: 'DEPLOYED', publish: true }));
    expect([byId?.publishedDeployId, page[0]?.publishedDeployId]).toEqual([queued.id, queued.id]);
  });

  test('a write that fails still forgets (it may have happened)', async () => {
    const { byId } = await afterWrite(() =>
      sites
        .writing(site.id, async () => {
          await db.doc.send(
            // What an ambiguous failure looks like: the write happened, the answer was lost.
            new (await import('@aws-sdk/lib-dynamodb')).UpdateCommand({
              TableName: db.tables.sites,
              Key: { pk: `SITE#${site.id}`, sk: 'SITE' },
              UpdateExpression: 'SET description = :d',
              ExpressionAttributeValues: { ':d': 'written' },
            }),
          );
          throw new Error('timed out');
        })
        .catch(() => undefined),
    );
    expect(byId?.description).toBe('written');
  });
});

describe('every write of the deploy store is seen by the next read at once', () => {
  let sites: SiteStore;
  let deploys: DeployStore;
  let site: Site;
  beforeEach(async () => {
    ({ sites, deploys } = storesOn(db));
    site = await sites.create(newSite(newTeam()));
  });
  /** Reads the deploy (remembering it when finished), runs the write, and reads it again. */
  async function afterWrite(deployId: string, write: () => Promise<unknown>) {
    await oneDeploy(deploys, site.id, deployId);
    await write();
    return oneDeploy(deploys, site.id, deployId);
  }

  test('enqueue, claim, advance, recordRemoteBuild, endRemoteBuild, requestCancel and finish', async () => {
    const id = newSortableId(Date.now() + 3_600_000);
    expect(await oneDeploy(deploys, site.id, id)).toBeUndefined();
    const queued = await deploys.enqueue({ siteId: site.id, autoPublish: true, repository: {} });
    expect((await oneDeploy(deploys, site.id, queued.id))?.phase).toBe('queued');
    expect((await afterWrite(queued.id, () => deploys.claim(site.id, queued.id)))?.phase).toBe('cloning');
    expect((await afterWrite(queued.id, () => deploys.advance(site.id, queued.id, 'building')))?.phase).toBe('building');
    const build = { id: 'build-1', startedAt: new Date().toISOString() };
    expect((await afterWrite(queued.id, () => deploys.recordRemoteBuild(site.id, queued.id, build)))?.remoteBuild?.id).toBe('build-1');
    expect((await afterWrite(queued.id, () => deploys.endRemoteBuild(site.id, queued.id, 'build-1')))?.remoteBuild?.endedAt).toBeTruthy();
    expect((await afterWrite(queued.id, () => deploys.requestCancel(site.id, queued.id, 'stop')))?.cancelRequested).toBe(true);
    const ended = await afterWrite(queued.id, () => deploys.finish(site.id, queued.id, { status: 'CANCELLED', reason: 'stop' }));
    expect(ended?.status).toBe('CANCELLED');
  });

  test('a queued deploy cancelled: CANCELLED at once', async () => {
    const queued = await deploys.enqueue({ siteId: site.id, autoPublish: true, repository: {} });
    expect((await afterWrite(queued.id, () => deploys.requestCancel(site.id, queued.id, 'stop')))?.status).toBe('CANCELLED');
  });

  test("setPreview: a finished deploy's preview image", async () => {
    const done = finished(site.id);
    await deploys.putMany([done]);
    const cid = 'QmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFbiwReogJgS1zR1n';
    const seen = await afterWrite(done.id, () => deploys.setPreview(site.id, done.id, 'https://gateway.example/ipfs/x', cid));
    expect(seen?.previewImage).toBe('https://gateway.example/ipfs/x');
  });

  test('putMany over a remembered deploy, and deleteAllOfSite', async () => {
    const done = finished(site.id);
    await deploys.putMany([done]);
    expect((await afterWrite(done.id, () => deploys.putMany([{ ...done, status: 'FAILED', reason: 'rewritten' }])))?.reason).toBe(
      'rewritten',
    );
    expect(await afterWrite(done.id, () => deploys.deleteAllOfSite(site.id))).toBeUndefined();
  });
});

/**
 * A new site's first read gets it from the database as it was ('first')
 * and waits, held, while a write of it to `description` ends; `release`
 * lets the read go on.
 */
async function readHeldAcrossWrite(description: string) {
  const c = countingDatabase(db);
  const { sites } = storesOn(c.db);
  const team = newTeam();
  const site = await sites.create(newSite(team));
  let release!: () => void;
  c.hold(`SITE#${site.id}`, new Promise<void>((r) => (release = r)));
  const reading = sites.getRecent(site.id);
  await sleep(20);
  await sites.update(site.id, team, (s) => ({ ...s, description }));
  return { sites, site, reading, release };
}

test('a read under way while a write runs answers but is not remembered: the next read sees the write', async () => {
  const { sites, site, reading, release } = await readHeldAcrossWrite('during');
  release();
  expect((await reading)?.description).toBe('first');
  expect((await sites.getRecent(site.id))?.description).toBe('during');
});

test('a read after the database took a write, before the writer heard back, does not answer the remembered record', async () => {
  const c = countingDatabase(db);
  const { sites } = storesOn(c.db);
  const team = newTeam();
  const site = await sites.create(newSite(team));
  expect((await sites.getRecent(site.id))?.description).toBe('first'); // remembered
  let release!: () => void;
  c.holdWrite(new Promise<void>((r) => (release = r)));
  const writing = sites.update(site.id, team, (s) => ({ ...s, description: 'taken' }));
  // The database has the write (another read of it, a deploy's DEPLOYED, can already see it): so must this read.
  await sleep(50);
  expect((await sites.getRecent(site.id))?.description).toBe('taken');
  release();
  await writing;
  expect((await sites.getRecent(site.id))?.description).toBe('taken');
});

test('a write by another process is seen within RECENT_READS_MS', async () => {
  expect(RECENT_READS_MS).toBeLessThanOrEqual(1000);
  const here = storesOn(db);
  const there = storesOn(db);
  const team = newTeam();
  const site = await there.sites.create(newSite(team));
  const done = finished(site.id);
  await there.deploys.putMany([done]);
  expect((await here.sites.getRecent(site.id))?.description).toBe('first');
  expect((await here.sites.listRecentByTeam(team, 20)).items).toHaveLength(1);
  expect((await oneDeploy(here.deploys, site.id, done.id))?.previewImage).toBeUndefined();
  const written = performance.now();
  await there.sites.update(site.id, team, (s) => ({ ...s, description: 'elsewhere' }));
  await there.sites.create(newSite(team, 'second'));
  await there.deploys.setPreview(site.id, done.id, 'https://gateway.example/ipfs/y', 'QmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFbiwReogJgS1zR1n');
  for (;;) {
    const seen = {
      site: (await here.sites.getRecent(site.id))?.description,
      page: (await here.sites.listRecentByTeam(team, 20)).items.length,
      preview: (await oneDeploy(here.deploys, site.id, done.id))?.previewImage,
    };
    if (seen.site === 'elsewhere' && seen.page === 2 && seen.preview) break;
    expect(performance.now() - written).toBeLessThan(RECENT_READS_MS + 200);
    await sleep(25);
  }
});

describe('shared loads and refresh ahead', () => {
  test('concurrent reads of a key not remembered share one database read: a site, a page of sites', async () => {
    const c = countingDatabase(db);
    const { sites } = storesOn(c.db);
    const team = newTeam();
    const site = await sites.create(newSite(team));
    c.calls();
    const byId = await Promise.all(Array.from({ length: 16 }, () => sites.getRecent(site.id)));
    const pages = await Promise.all(Array.from({ length: 16 }, () => sites.listRecentByTeam(team, 20)));
    expect(byId.every((s) => s?.id === site.id)).toBe(true);
    expect(pages.every((p) => p.items[0]?.id === site.id)).toBe(true);
    expect(c.calls()).toEqual({ GetCommand: 1, QueryCommand: 1 });
  });

  test('a read that starts after a write does not share a load begun before it', async () => {
    // The first read has the site as it was and waits; the write ends; a second read starts while the first still waits.
    const { sites, site, reading: before, release } = await readHeldAcrossWrite('after');
    const after = sites.getRecent(site.id);
    await sleep(20);
    release();
    expect((await before)?.description).toBe('first');
    expect((await after)?.description).toBe('after');
    expect((await sites.getRecent(site.id))?.description).toBe('after');
  });

  test('a record near the end of its time is answered at once and read again in the background, once', async () => {
    const ttl = 400;
    const c = countingDatabase(db);
    const sites = new SiteStore(c.db, sealer, undefined, ttl);
    const site = await sites.create(newSite(newTeam()));
    const first = await sites.getRecent(site.id);
    const readAt = performance.now();
    await sleep(ttl * 0.75);
    c.calls();
    const answers = await Promise.all([sites.getRecent(site.id), sites.getRecent(site.id), sites.getRecent(site.id)]);
    // Answered from memory, the same record...
    expect(answers.every((a) => a === first)).toBe(true);
    await sleep(30);
    // ...and read again once, in the background.
    expect(c.calls()).toEqual({ GetCommand: 1 });
    // Past the first read's time the refreshed record answers: no read.
    await sleep(Math.max(0, readAt + ttl + 20 - performance.now()));
    expect((await sites.getRecent(site.id))?.id).toBe(site.id);
    if (performance.now() - readAt < ttl * (1 + 2 / 3)) expect(c.calls()).toEqual({});
  });

  test('a write during the background read keeps what it read out', async () => {
    const ttl = 400;
    const c = countingDatabase(db);
    const team = newTeam();
    const sites = new SiteStore(c.db, sealer, undefined, ttl);
    const site = await sites.create(newSite(team));
    await sites.getRecent(site.id);
    await sleep(ttl * 0.75);
    let release!: () => void;
    c.hold(`SITE#${site.id}`, new Promise<void>((r) => (release = r)));
    // Answered from memory; the background read has the site as it was and waits.
    expect((await sites.getRecent(site.id))?.description).toBe('first');
    await sleep(10);
    await sites.update(site.id, team, (s) => ({ ...s, description: 'during' }));
    release();
    await sleep(20);
    expect((await sites.getRecent(site.id))?.description).toBe('during');
  });

  test('a failed load fails every read that shared it, once; it is not kept, and a failed background read is no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const reads = new RecentReads<{ n: number }>(10, undefined, 300);
      let loads = 0;
      const failing = async () => {
        loads++;
        await sleep(10);
        throw new Error('database down');
      };
      const shared = await Promise.allSettled(Array.from({ length: 5 }, () => reads.through('k', failing)));
      expect(shared.map((s) => s.status)).toEqual(Array(5).fill('rejected'));
      expect(loads).toBe(1);
      expect(reads.loadsUnderWay).toBe(0);
      expect(await reads.through('k', async () => ({ n: ++loads }))).toEqual({ n: 2 });
      await sleep(300 * 0.75);
      // Near its end: answered, and the background read fails quietly.
      expect(await reads.through('k', failing)).toEqual({ n: 2 });
      await sleep(50);
      expect(loads).toBe(3);
      expect(reads.loadsUnderWay).toBe(0);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

test('finished deploys near the end of their time are answered at once and read again in the background, once', async () => {
  const ttl = 400;
  const c = countingDatabase(db);
  const sites = new SiteStore(c.db, sealer, undefined, ttl);
  const deploys = new DeployStore(c.db, undefined, sites, ttl);
  const site = await sites.create(newSite(newTeam()));
  const done = [finished(site.id), finished(site.id)];
  await deploys.putMany(done);
  const keys = done.map((d) => ({ siteId: site.id, deployId: d.id }));
  c.calls();
  expect((await deploys.getManyRecent(keys)).map((d) => d.id)).toEqual(done.map((d) => d.id));
  expect(c.calls()).toEqual({ BatchGetCommand: 1 });
  await sleep(ttl * 0.75);
  expect((await deploys.getManyRecent(keys)).map((d) => d.id)).toEqual(done.map((d) => d.id));
  expect((await deploys.getManyRecent(keys)).map((d) => d.id)).toEqual(done.map((d) => d.id));
  await sleep(30);
  expect(c.calls()).toEqual({ BatchGetCommand: 1 });
});
