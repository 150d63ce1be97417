/**
 * What the stores remember between requests for a site's reads
 * (functions/core/data/sites.ts, ipns-records.ts), against the embedded
 * DynamoDB, with the changes made by a second store on the same tables, as
 * another process (a deploy worker, another Lambda container) makes them:
 * which site a slug names is remembered but never answered unchecked, so
 * renames, slugs taken over and deletions show at once; a site's IPNS name
 * is remembered once made, its absence for a second at most.
 */
import { randomBytes } from 'node:crypto';
import { aesSealer } from '../../functions/core/auth/secrets.js';
import type { Database } from '../../functions/core/data/dynamo.js';
import { IpnsNameStore } from '../../functions/core/data/ipns-records.js';
import { SiteStore, type NewSite } from '../../functions/core/data/sites.js';
import { newIpnsKey } from '../../functions/core/ipfs/ipns.js';
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

const TEAM = 'team-lookups';
const newSite = (slug: string): NewSite => ({
  teamId: TEAM,
  createdBy: 'account-1',
  slug,
  buildSettings: { environmentVariables: [] },
  deploySettings: { autoPublishing: true, prDeployPreviews: false, source: { kind: 'ipfs', cid: null } },
});

test('a slug read again costs one read, and a rename, a slug taken over or a deletion elsewhere shows at once', async () => {
  const { db: countedDb, gets: reads } = countingDatabase(db);
  const here = new SiteStore(countedDb, sealer);
  const there = new SiteStore(db, sealer);
  const a = await there.create(newSite('lookup-first'));

  expect((await here.getBySlug('lookup-first'))?.id).toBe(a.id);
  const before = reads();
  expect((await here.getBySlug('lookup-first'))?.id).toBe(a.id);
  expect(reads() - before).toBe(1);

  // Renamed elsewhere: the old slug names nothing, the new one the site.
  await there.update(a.id, TEAM, (site) => ({ ...site, name: 'lookup-renamed', slug: 'lookup-renamed' }));
  expect(await here.getBySlug('lookup-first')).toBeUndefined();
  expect((await here.getBySlug('lookup-renamed'))?.slug).toBe('lookup-renamed');

  // The freed slug taken by another site: it answers to it.
  const b = await there.create(newSite('lookup-first'));
  expect((await here.getBySlug('lookup-first'))?.id).toBe(b.id);

  // Renamed back and forth, then deleted.
  await there.update(b.id, TEAM, (site) => ({ ...site, name: 'lookup-other', slug: 'lookup-other' }));
  await there.update(a.id, TEAM, (site) => ({ ...site, name: 'lookup-first', slug: 'lookup-first' }));
  expect((await here.getBySlug('lookup-first'))?.id).toBe(a.id);
  await there.delete(a.id, TEAM);
  expect(await here.getBySlug('lookup-first')).toBeUndefined();
  expect(await here.getBySlug('lookup-renamed')).toBeUndefined();
});

test("a site's IPNS name is remembered once made; that it has none, for a second at most", async () => {
  const { db: countedDb, gets: reads } = countingDatabase(db);
  const here = new IpnsNameStore(countedDb, sealer);
  const there = new IpnsNameStore(db, sealer);
  const siteId = `site-${randomBytes(4).toString('hex')}`;

  expect(await here.nameOfSite(siteId)).toBeUndefined();
  const { name } = await there.siteKey(siteId, newIpnsKey);
  const made = Date.now();
  let seenAfter: number | undefined;
  while (seenAfter === undefined && Date.now() - made < 3000) {
    if ((await here.nameOfSite(siteId)) === name) seenAfter = Date.now() - made;
    else await new Promise((r) => setTimeout(r, 20));
  }
  expect(seenAfter).toBeDefined();
  expect(seenAfter!).toBeLessThan(1100);

  const before = reads();
  for (let i = 0; i < 10; i++) expect(await here.nameOfSite(siteId)).toBe(name);
  expect(reads()).toBe(before);

  // Deleted with its site, here: gone at once.
  await here.deleteOfSite(siteId);
  expect(await here.nameOfSite(siteId)).toBeUndefined();
});
