/**
 * The object store's listings (ObjectStore.list, VersionedObjectStore's
 * listVersions) against the plain reference of test/support/listing-model.ts
 * over random buckets, against the embedded DynamoDB: every combination of
 * prefix, delimiter, marker (after a key, at a key, longer than any key)
 * and max-keys answers what the reference answers, pages followed marker to
 * marker add up to the whole listing, and each listing reads a number of
 * items bounded by what it returns, not by the bucket (counted from the
 * queries' ScannedCount).
 */
import type { Database } from '../../functions/core/data/dynamo.js';
import { BucketStore } from '../../functions/core/data/buckets.js';
import { prefixSuccessor, type ListPage, type ObjectRecord } from '../../functions/core/data/objects.js';
import { VersionedObjectStore, type VersionListPage } from '../../functions/core/data/object-versions-store.js';
import { startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';
import {
  expectedObjects,
  expectedVersions,
  headOf,
  objectEntry,
  prefixEntry,
  randomKeys,
  randomMarker,
  randomSource,
  versionEntry,
  type ModelPage,
  type ModelQuery,
  type ModelVersion,
  type Random,
} from '../support/listing-model.js';

/** One to four UTF-8 bytes; U+E000 sorts after a surrogate pair in UTF-16 and before it in UTF-8. */
const ALPHABET = ['a', 'b', 'c', 'x', '0', '-', '.', ' ', '~', 'é', '中', '😀', '\ue000', '\uffff'];
const DELIMITERS = [undefined, '/', '/', '/', '-', 'a', 'ab', 'é', '😀', '\uffff', 'long/'];
const MAX_KEYS = [1, 2, 3, 5, 8, 9, 50, 101, 1000];
/** Each test's limit: hundreds of listings, on a machine that may be shared. */
const LONG = 300_000;

let embedded: EmbeddedDb;
let db: Database;
let objects: VersionedObjectStore;
let buckets: BucketStore;
/** Items the objects table's queries read (ScannedCount) while a listing runs. */
const read = { queries: 0, items: 0 };

const PLAIN = 'reference-plain';
const VERSIONED = 'reference-versions';
let plainKeys: string[] = [];
/** The versioned bucket's keys and their versions, newest first. */
const versions = new Map<string, ModelVersion[]>();

beforeAll(async () => {
  embedded = await startEmbeddedDb();
  // Through the HTTP endpoint (the in-process transport skips the SDK's middleware), every Query counted.
  db = embedded.client(false);
  db.doc.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === 'QueryCommand') {
        read.queries += 1;
        read.items += (result.output as { ScannedCount?: number }).ScannedCount ?? 0;
      }
      return result;
    },
    { step: 'initialize', name: 'countQueryReads' },
  );
  objects = new VersionedObjectStore(db);
  buckets = new BucketStore(db);
  const random = randomSource(35);

  await buckets.create(PLAIN, 'account-reference', new Date().toISOString());
  plainKeys = randomKeys(random, ALPHABET, 500);
  await inBatches(plainKeys, (key) => objects.put(record(PLAIN, key)));

  // Keys written before versioning (their null versions), then versions and delete markers, then some
  // writes and deletes while suspended (each replaces the key's null version).
  await buckets.create(VERSIONED, 'account-reference', new Date().toISOString());
  const keys = randomKeys(random, ALPHABET, 200);
  const before = keys.filter((_, i) => i % 3 === 0);
  await inBatches(before, async (key) => {
    await objects.put(record(VERSIONED, key));
    versions.set(key, [{ versionId: 'null', marker: false }]);
  });
  await buckets.setVersioning(VERSIONED, 'Enabled');
  // One key's writes in order, keys side by side.
  const ops = Array.from({ length: 400 }, () => ({ key: random.pick(keys), remove: random.next() < 0.25 }));
  await inBatches([...new Set(ops.map((o) => o.key))], async (key) => {
    for (const op of ops.filter((o) => o.key === key)) {
      const list = versions.get(key) ?? [];
      versions.set(key, list);
      if (op.remove) {
        const out = await objects.delete(VERSIONED, key, undefined, 'Enabled');
        list.unshift({ versionId: out.versionId!, marker: true });
      } else {
        const out = await objects.put(record(VERSIONED, key), { versioning: 'Enabled' });
        list.unshift({ versionId: out.versionId!, marker: false });
      }
    }
  });
  await buckets.setVersioning(VERSIONED, 'Suspended');
  await inBatches(
    keys.filter((_, i) => i % 7 === 0),
    async (key) => {
      const list = (versions.get(key) ?? []).filter((v) => v.versionId !== 'null');
      const remove = random.next() < 0.3;
      if (remove) await objects.delete(VERSIONED, key, undefined, 'Suspended');
      else await objects.put(record(VERSIONED, key), { versioning: 'Suspended' });
      versions.set(key, [{ versionId: 'null', marker: remove }, ...list]);
    },
  );
}, 600_000);

afterAll(async () => {
  await embedded?.close();
});

async function inBatches<T>(items: T[], write: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += 16) await Promise.all(items.slice(i, i + 16).map(write));
}

function record(bucket: string, key: string): ObjectRecord {
  return {
    bucket,
    key,
    cid: 'QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH',
    size: 0,
    etag: 'd41d8cd98f00b204e9800998ecf8427e',
    lastModified: new Date().toISOString(),
    contentType: 'text/plain',
    acl: 'private',
    ownerId: 'account-reference',
    metadata: {},
  };
}

const objectPage = (page: ListPage): ModelPage => ({
  entries: page.entries.map((e) => (e.kind === 'object' ? objectEntry(e.record.key) : prefixEntry(e.prefix))),
  truncated: page.truncated,
});

const versionPage = (page: VersionListPage): ModelPage => ({
  entries: page.entries.map((e) =>
    e.kind === 'prefix'
      ? prefixEntry(e.prefix)
      : e.version.kind === 'object'
        ? versionEntry(e.version.record.key, e.version.record.versionId ?? 'null', e.isLatest, false)
        : versionEntry(e.version.marker.key, e.version.marker.versionId, e.isLatest, true),
  ),
  truncated: page.truncated,
});

/**
 * The most items a listing may read for what it returns: a first query of a
 * hundred, and for each entry a few (a common prefix: the query after it,
 * of 8; an object: its own item, and the growing queries' overshoot past
 * the page's end or into the next common prefix, at most twice the run).
 * A listing that asked for a page's worth after each common prefix reads
 * up to 1,000 per prefix.
 */
function readBound(page: ModelPage, partitions: number): number {
  const prefixes = page.entries.filter((e) => e.startsWith('P ')).length;
  const others = page.entries.length - prefixes;
  return partitions * (100 + 16 * prefixes + 3 * (others + 1));
}

function randomQuery(random: Random, keys: readonly string[]): ModelQuery {
  const q: ModelQuery = { maxKeys: random.next() < 0.2 ? 1 + random.int(1000) : random.pick(MAX_KEYS) };
  const roll = random.next();
  if (roll < 0.4) q.prefix = headOf(random, random.pick(keys));
  else if (roll < 0.5) q.prefix = random.pick(ALPHABET);
  const delimiter = random.pick(DELIMITERS);
  if (delimiter !== undefined) q.delimiter = delimiter;
  const marker = random.next();
  if (marker < 0.3) q.after = randomMarker(random, keys, ALPHABET);
  else if (marker < 0.5) q.startAt = randomMarker(random, keys, ALPHABET);
  return q;
}

/** Where the next page starts after this one's last entry, as the S3 API's markers and tokens say it. */
function nextFrom(last: string): Partial<ModelQuery> {
  if (last.startsWith('P ')) return { startAt: prefixSuccessor(last.slice(2)) ?? '\u{10ffff}' };
  if (last.startsWith('K ')) return { after: last.slice(2) };
  const [, key, versionId] = /^V (.*) (\S+) (?:latest|old) (?:marker|object)$/s.exec(last)!;
  return { after: key, afterVersion: versionId };
}

async function measured<T>(run: () => Promise<T>): Promise<{ page: T; items: number }> {
  read.queries = read.items = 0;
  const page = await run();
  // Every listing queries: a count of none would be the counter missing them.
  expect(read.queries).toBeGreaterThan(0);
  return { page, items: read.items };
}

test(
  'ListObjects: random prefixes, delimiters, markers and page sizes answer as the reference, reading a bounded number of items',
  async () => {
    const random = randomSource(3501);
    const over: unknown[] = [];
    for (let i = 0; i < 250; i++) {
      const q = randomQuery(random, plainKeys);
      const { page, items } = await measured(() => objects.list(PLAIN, q));
      const expected = expectedObjects(plainKeys, q);
      expect({ q, ...objectPage(page) }).toEqual({ q, ...expected });
      const bound = readBound(expected, 1);
      if (items > bound) over.push({ q, items, bound });
    }
    expect(over).toEqual([]);
  },
  LONG,
);

test(
  'ListObjects: pages followed marker to marker are the whole listing, once',
  async () => {
    const random = randomSource(3502);
    for (let i = 0; i < 20; i++) {
      const base = randomQuery(random, plainKeys);
      delete base.after;
      delete base.startAt;
      const maxKeys = random.pick([1, 3, 7, 40, 333]);
      const whole = expectedObjects(plainKeys, { ...base, maxKeys: 100_000 }).entries;
      const seen: string[] = [];
      let q: ModelQuery = { ...base, maxKeys };
      for (;;) {
        const page = objectPage(await objects.list(PLAIN, q));
        seen.push(...page.entries);
        if (!page.truncated) break;
        expect(page.entries).toHaveLength(maxKeys);
        q = { ...base, maxKeys, ...nextFrom(page.entries.at(-1)!) };
      }
      expect({ base, seen }).toEqual({ base, seen: whole });
    }
  },
  LONG,
);

test(
  'ListObjectVersions: random prefixes, delimiters, key markers and page sizes answer as the reference',
  async () => {
    const random = randomSource(3503);
    const over: unknown[] = [];
    const keys = [...versions.keys()];
    for (let i = 0; i < 80; i++) {
      const q = randomQuery(random, keys);
      const { page, items } = await measured(() => objects.listVersions(VERSIONED, q));
      const expected = expectedVersions(versions, q);
      expect({ q, ...versionPage(page) }).toEqual({ q, ...expected });
      // Two partitions read side by side (current records and the keys' anchors), and each key's versions.
      const keysListed = new Set(expected.entries.filter((e) => e.startsWith('V ')).map((e) => e.split(' ')[1])).size;
      const bound = readBound(expected, 2) + 2 * keysListed;
      if (items > bound) over.push({ q, items, bound });
    }
    expect(over).toEqual([]);
  },
  LONG,
);

test(
  'ListObjectVersions: pages followed key and version marker to marker are the whole listing, once',
  async () => {
    const random = randomSource(3504);
    const keys = [...versions.keys()];
    for (let i = 0; i < 6; i++) {
      const base = randomQuery(random, keys);
      delete base.after;
      delete base.startAt;
      const maxKeys = random.pick([9, 60, 333]);
      const whole = expectedVersions(versions, { ...base, maxKeys: 100_000 }).entries;
      const seen: string[] = [];
      let q: ModelQuery = { ...base, maxKeys };
      for (;;) {
        const page = versionPage(await objects.listVersions(VERSIONED, q));
        seen.push(...page.entries);
        if (!page.truncated) break;
        expect(page.entries).toHaveLength(maxKeys);
        q = { ...base, maxKeys, ...nextFrom(page.entries.at(-1)!) };
      }
      expect({ base, seen }).toEqual({ base, seen: whole });
    }
  },
  LONG,
);

test('a never-versioned bucket lists each object as its null version', async () => {
  const q = { delimiter: '/', maxKeys: 1000 };
  const page = versionPage(await objects.listVersions(PLAIN, q));
  const expected = expectedVersions(new Map(plainKeys.map((k) => [k, [{ versionId: 'null', marker: false }]])), q);
  expect(page).toEqual(expected);
});
