/**
 * The windowed counter (functions/core/data/rate-limits.ts) that sign-in
 * failures, invitation and reset-link rates and device-code guesses are all
 * counted with, against the embedded DynamoDB, through both ways in: the
 * limit's boundary, a window's end, actions at once each counted exactly,
 * and items kept in the shapes written before the counter was shared.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Database } from '../../functions/core/data/dynamo.js';
import { WindowedCounter, type CounterFamily, type RateLimit } from '../../functions/core/data/rate-limits.js';
import { tokenDigest } from '../../functions/core/ids.js';
import { startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';

let embedded: EmbeddedDb;
beforeAll(async () => {
  embedded = await startEmbeddedDb();
});
afterAll(async () => {
  await embedded.close();
});

const FAMILY: CounterFamily = { name: 'TESTRATE', countAttribute: 'count' };
const LIMIT: RateLimit = { action: 'act', count: 3, windowSeconds: 60 };
const START = Date.parse('2026-01-01T00:00:00.000Z');
let serial = 0;
const freshKey = () => `key-${process.pid}-${++serial}`;

describe.each([
  ['the HTTP endpoint', false],
  ['the in-process transport', true],
])('through %s', (_name, inProcess) => {
  let db: Database;
  let now: number;
  let counter: WindowedCounter;
  beforeAll(() => {
    db = embedded.client(inProcess);
  });
  beforeEach(() => {
    now = START;
    counter = new WindowedCounter(db, FAMILY, () => new Date(now));
  });
  const item = async (pk: string, sk = FAMILY.name) =>
    (await db.doc.send(new GetCommand({ TableName: db.tables.accounts, Key: { pk, sk }, ConsistentRead: true }))).Item;

  test('take counts up to the limit, then refuses with the seconds left in the window and counts nothing', async () => {
    const key = freshKey();
    for (let i = 0; i < LIMIT.count; i++) {
      expect(await counter.take(LIMIT, key)).toBe(0);
      now += 1000;
    }
    expect(await counter.retryAfter([{ limit: LIMIT, key }])).toBe(LIMIT.windowSeconds - LIMIT.count);
    expect(await counter.take(LIMIT, key)).toBe(LIMIT.windowSeconds - LIMIT.count);
    expect(await item(`TESTRATE#act#${key}`)).toEqual({
      pk: `TESTRATE#act#${key}`,
      sk: 'TESTRATE',
      count: LIMIT.count,
      windowStart: START,
      expiresAt: START / 1000 + LIMIT.windowSeconds,
    });
    // Under the limit, retryAfter says go: one short of it is not locked.
    const under = freshKey();
    for (let i = 0; i < LIMIT.count - 1; i++) await counter.take(LIMIT, under);
    expect(await counter.retryAfter([{ limit: LIMIT, key: under }])).toBe(0);
  });

  test('a window ends exactly windowSeconds after it opened; the next action opens a new one from one', async () => {
    const key = freshKey();
    for (let i = 0; i < LIMIT.count; i++) await counter.take(LIMIT, key);
    now = START + LIMIT.windowSeconds * 1000 - 1;
    expect(await counter.take(LIMIT, key)).toBe(1);
    expect(await counter.retryAfter([{ limit: LIMIT, key }])).toBe(1);
    now = START + LIMIT.windowSeconds * 1000;
    expect(await counter.retryAfter([{ limit: LIMIT, key }])).toBe(0);
    expect(await counter.take(LIMIT, key)).toBe(0);
    expect(await item(`TESTRATE#act#${key}`)).toMatchObject({
      count: 1,
      windowStart: now,
      expiresAt: now / 1000 + LIMIT.windowSeconds,
    });
    // add, too, opens a new window once the old one has ended, even from over the limit.
    await counter.add([
      { limit: LIMIT, key },
      { limit: LIMIT, key },
      { limit: LIMIT, key },
      { limit: LIMIT, key },
    ]);
    expect((await item(`TESTRATE#act#${key}`))!.count).toBe(5);
    now += LIMIT.windowSeconds * 1000 + 500;
    await counter.add([{ limit: LIMIT, key }]);
    expect(await item(`TESTRATE#act#${key}`)).toMatchObject({ count: 1, windowStart: now, expiresAt: Math.ceil(now / 1000) + 60 });
  });

  test('actions at once are each counted exactly: add counts all, take exactly up to the limit', async () => {
    const added = freshKey();
    await Promise.all(Array.from({ length: 20 }, () => counter.add([{ limit: LIMIT, key: added }])));
    expect((await item(`TESTRATE#act#${added}`))!.count).toBe(20);
    // A second counter (another process) counting into the same open window.
    const other = new WindowedCounter(db, FAMILY, () => new Date(now));
    await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? counter : other).add([{ limit: LIMIT, key: added }])));
    expect((await item(`TESTRATE#act#${added}`))!.count).toBe(30);

    const limit: RateLimit = { action: 'burst', count: 7, windowSeconds: 60 };
    const taken = freshKey();
    const waits = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? counter : other).take(limit, taken)));
    expect(waits.filter((w) => w === 0)).toHaveLength(limit.count);
    expect(waits.filter((w) => w === limit.windowSeconds)).toHaveLength(20 - limit.count);
    expect((await item(`TESTRATE#burst#${taken}`))!.count).toBe(limit.count);
  });

  test('retryAfter gives the longest wait among keys at their limits; clear forgets a key; hashKey keeps only the digest', async () => {
    const strict: RateLimit = { action: 'strict', count: 1, windowSeconds: 100 };
    const loose: RateLimit = { action: 'loose', count: 2, windowSeconds: 300, hashKey: true };
    const [a, b] = [freshKey(), `${freshKey()}@example.org`];
    await counter.add([{ limit: strict, key: a }]);
    await counter.add([{ limit: loose, key: b }]);
    expect(await counter.retryAfter([])).toBe(0);
    expect(
      await counter.retryAfter([
        { limit: strict, key: a },
        { limit: loose, key: b },
      ]),
    ).toBe(100);
    now += 10_000;
    await counter.add([{ limit: loose, key: b }]);
    expect(
      await counter.retryAfter([
        { limit: strict, key: a },
        { limit: loose, key: b },
      ]),
    ).toBe(290);
    expect(await item(`TESTRATE#loose#${b}`)).toBeUndefined();
    expect((await item(`TESTRATE#loose#${tokenDigest(b)}`))!.count).toBe(2);
    await counter.clear({ limit: loose, key: b });
    expect(await item(`TESTRATE#loose#${tokenDigest(b)}`)).toBeUndefined();
    expect(
      await counter.retryAfter([
        { limit: strict, key: a },
        { limit: loose, key: b },
      ]),
    ).toBe(90);
  });

  test('a family keeps its count in its own attribute, so items written before the counter was shared read the same', async () => {
    // Sign-in failures were kept as `failures` (data/sign-in-attempts.ts); an item in that shape, four failures old.
    const signIns = new WindowedCounter(db, { name: 'SIGNIN', countAttribute: 'failures' }, () => new Date(now));
    const limit: RateLimit = { action: 'email', count: 5, windowSeconds: 900, hashKey: true };
    const email = `${freshKey()}@example.org`;
    const pk = `SIGNIN#email#${tokenDigest(email)}`;
    await db.doc.send(
      new PutCommand({
        TableName: db.tables.accounts,
        Item: { pk, sk: 'SIGNIN', failures: 4, windowStart: START - 60_000, expiresAt: (START - 60_000) / 1000 + 900 },
      }),
    );
    expect(await signIns.retryAfter([{ limit, key: email }])).toBe(0);
    await signIns.add([{ limit, key: email }]);
    expect(await signIns.retryAfter([{ limit, key: email }])).toBe(840);
    expect(await item(pk, 'SIGNIN')).toEqual({ pk, sk: 'SIGNIN', failures: 5, windowStart: START - 60_000, expiresAt: START / 1000 + 840 });
  });
});
