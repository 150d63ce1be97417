/**
 * What a delimiter listing reads (functions/core/data/objects.ts,
 * ObjectStore.list), against the embedded DynamoDB: a Query reads, and
 * DynamoDB charges for, every item up to its Limit whether the listing
 * uses it or not, so a listing of folders must not ask for a page's worth
 * after each folder it skips. Counted here as the items the queries
 * returned and the read units the database says they consumed
 * (ReturnConsumedCapacity), beside the answer itself, which must be what
 * a listing without the skipping would give.
 */
import type { Database } from '../../functions/core/data/dynamo.js';
import { BucketStore } from '../../functions/core/data/buckets.js';
import { ObjectStore, type ListPage, type ObjectRecord } from '../../functions/core/data/objects.js';
import { VersionedObjectStore } from '../../functions/core/data/object-versions-store.js';
import { startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';

let embedded: EmbeddedDb;
let db: Database;
let objects: ObjectStore;
/** What the queries of the listing being measured returned. */
const read = { queries: 0, items: 0, units: 0 };

const BUCKET = 'listing-cost';
const FOLDERS = 24;
const PER_FOLDER = 30;
/** Keys beside the folders: one before them, a run of 101 after them. */
const RUN = Array.from({ length: 100 }, (_, i) => `q-${String(i).padStart(3, '0')}`);
const TOP_LEVEL = ['a-first', 'm-middle', ...RUN, 'z-last'];

beforeAll(async () => {
  embedded = await startEmbeddedDb();
  // Through the HTTP endpoint (the in-process transport skips the SDK's middleware): every Query this
  // client sends asks for its consumed capacity and is counted.
  db = embedded.client(false);
  db.doc.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'QueryCommand') return next(args);
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      const output = result.output as { Items?: unknown[]; ConsumedCapacity?: { CapacityUnits?: number } };
      read.queries += 1;
      read.items += output.Items?.length ?? 0;
      read.units += output.ConsumedCapacity?.CapacityUnits ?? 0;
      return result;
    },
    { step: 'initialize', name: 'countQueryReads' },
  );
  objects = new ObjectStore(db);
  await new BucketStore(db).create(BUCKET, 'account-listing', new Date().toISOString());
  const keys = [...TOP_LEVEL];
  for (let f = 0; f < FOLDERS; f++)
    for (let i = 0; i < PER_FOLDER; i++) keys.push(`folder-${String(f).padStart(2, '0')}/file-${String(i).padStart(3, '0')}.txt`);
  for (let i = 0; i < keys.length; i += 16) await Promise.all(keys.slice(i, i + 16).map((key) => objects.put(record(key))));
}, 180_000);

afterAll(async () => {
  await embedded?.close();
});

function record(key: string): ObjectRecord {
  return {
    bucket: BUCKET,
    key,
    cid: 'QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH',
    size: 0,
    etag: 'd41d8cd98f00b204e9800998ecf8427e',
    lastModified: '2026-11-29T00:00:00.000Z',
    contentType: 'text/plain',
    acl: 'private',
    ownerId: 'account-listing',
    metadata: {},
  };
}

async function measured(
  query: Parameters<ObjectStore['list']>[1],
): Promise<{ page: ListPage; queries: number; items: number; units: number }> {
  read.queries = read.items = read.units = 0;
  const page = await objects.list(BUCKET, query);
  // Every listing queries at least once: a count of none would be the counter missing the queries.
  expect(read.queries).toBeGreaterThan(0);
  return { page, ...read };
}

const names = (page: ListPage) => page.entries.map((e) => (e.kind === 'prefix' ? e.prefix : e.record.key));

test('a listing of folders reads a few items per folder, not a page per folder', async () => {
  const { page, queries, items, units } = await measured({ delimiter: '/', maxKeys: 1000 });
  const folders = Array.from({ length: FOLDERS }, (_, f) => `folder-${String(f).padStart(2, '0')}/`);
  expect(names(page)).toEqual(['a-first', ...folders, ...TOP_LEVEL.slice(1)]);
  expect(page.truncated).toBe(false);
  // The first query (100 items) reaches into the first folder; then one query per folder, 8 items each;
  // the run of 102 objects after the last folder in queries of 8, 16, 32 and 64 items.
  expect(queries).toBeLessThanOrEqual(1 + FOLDERS + 4);
  expect(items).toBeLessThanOrEqual(100 + FOLDERS * 8 + 8 + 16 + 32 + 64);
  // A page's Limit after each folder read about 9,000 items of the bucket's 823.
  expect(items).toBeLessThan(FOLDERS * PER_FOLDER);
  // Consistent reads: a read unit per 4 KB of items read, at least one per query.
  expect(units).toBeGreaterThanOrEqual(queries);
  expect(units).toBeLessThanOrEqual(queries * 3);
});

test('a listing of versions with a delimiter reads a few items per folder too', async () => {
  const versions = new VersionedObjectStore(db);
  read.queries = read.items = read.units = 0;
  const page = await versions.listVersions(BUCKET, { delimiter: '/', maxKeys: 1000 });
  const folders = Array.from({ length: FOLDERS }, (_, f) => `folder-${String(f).padStart(2, '0')}/`);
  expect(page.entries.map((e) => (e.kind === 'prefix' ? e.prefix : e.version.kind === 'object' ? e.version.record.key : ''))).toEqual([
    'a-first',
    ...folders,
    ...TOP_LEVEL.slice(1),
  ]);
  // The current records read as list() reads them; the versioned keys' anchors (none here) in one query more.
  expect(read.queries).toBeLessThanOrEqual(1 + FOLDERS + 4 + 1);
  expect(read.items).toBeLessThanOrEqual(100 + FOLDERS * 8 + 8 + 16 + 32 + 64);
  // A page's Limit after each folder read every item of the bucket in the first query.
  expect(read.items).toBeLessThan(FOLDERS * PER_FOLDER);
});

test('the objects in one folder are read with the page at once', async () => {
  const { page, queries } = await measured({ prefix: 'folder-03/', delimiter: '/', maxKeys: 1000 });
  expect(names(page)).toEqual(Array.from({ length: PER_FOLDER }, (_, i) => `folder-03/file-${String(i).padStart(3, '0')}.txt`));
  expect(queries).toBe(1);
});

test('pages and markers are as before: max-keys cuts the page, the next starts after it', async () => {
  const first = await measured({ delimiter: '/', maxKeys: 5 });
  expect(names(first.page)).toEqual(['a-first', 'folder-00/', 'folder-01/', 'folder-02/', 'folder-03/']);
  expect(first.page.truncated).toBe(true);
  const next = await measured({ delimiter: '/', maxKeys: 1000, startAt: 'folder-04/' });
  expect(names(next.page)[0]).toBe('folder-04/');
  expect(names(next.page).at(-1)).toBe('z-last');
  expect(next.page.entries).toHaveLength(FOLDERS - 4 + TOP_LEVEL.length - 1);
  const cut = await measured({ delimiter: '/', maxKeys: FOLDERS + 50 });
  expect(names(cut.page).at(-1)).toBe(RUN[47]);
  expect(cut.page.truncated).toBe(true);
  // A plain listing (no delimiter) still asks for the page at once.
  const plain = await measured({ maxKeys: 1000 });
  expect(plain.page.entries).toHaveLength(FOLDERS * PER_FOLDER + TOP_LEVEL.length);
  expect(plain.queries).toBe(1);
  // With a delimiter no folder in sight, a run of objects: 100, 200, 400 items a query.
  const flat = await measured({ prefix: 'folder-', delimiter: '#', maxKeys: 699 });
  expect(flat.page.entries).toHaveLength(699);
  expect(flat.page.truncated).toBe(true);
  expect(flat.queries).toBe(3);
});
