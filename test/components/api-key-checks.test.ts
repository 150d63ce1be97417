/**
 * Hosting API key checks (functions/core/data/api-keys.ts) against the
 * embedded DynamoDB: a check is remembered briefly, so a read of the key
 * is not paid by every request; a key revoked in the same process is
 * refused at once, one revoked by another process (a second store on the
 * same table, as a second Lambda container would be) within a second; the
 * requests of one moment share one read of a key, a key in use is read
 * again before its time is up, and a check under way while the key is
 * revoked here is not kept.
 */
import type { Database } from '../../functions/core/data/dynamo.js';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { API_KEY_CHECK_MS, ApiKeyStore, apiKeyItems, newApiKeyRecord } from '../../functions/core/data/api-keys.js';
import { newApiToken } from '../../functions/core/ids.js';
import { countingDatabase, startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';

let embedded: EmbeddedDb;
let db: Database;

beforeAll(async () => {
  embedded = await startEmbeddedDb();
  db = embedded.client(true);
});
afterAll(async () => {
  await embedded?.close();
});

test('a check is remembered briefly: repeated requests with one key read it once, and again after the time', async () => {
  const { db: countedDb, gets: reads } = countingDatabase(db);
  const store = new ApiKeyStore(countedDb);
  const { apiKey, key } = await store.create('team-remembered', 'account-1', 'ci');
  const caller = { teamId: 'team-remembered', accountId: 'account-1', apiKeyId: apiKey.id };
  for (let i = 0; i < 20; i++) expect(await store.caller(key)).toEqual(caller);
  expect(reads()).toBe(1);
  // An unknown key is not remembered: each check reads.
  for (let i = 0; i < 5; i++) expect(await store.caller(`${key}x`)).toBeUndefined();
  expect(reads()).toBe(6);
  await new Promise((r) => setTimeout(r, API_KEY_CHECK_MS + 50));
  expect(await store.caller(key)).toEqual(caller);
  expect(reads()).toBe(7);
});

test('a key made elsewhere just after a check found none works at once', async () => {
  // As the first account's or a device login's transaction makes one: its items written beside other writes.
  const here = new ApiKeyStore(db);
  const key = newApiToken();
  expect(await here.caller(key)).toBeUndefined();
  const record = newApiKeyRecord(key, { teamId: 'team-new', createdBy: 'account-1', createdAt: new Date().toISOString(), name: null });
  await db.doc.send(
    new TransactWriteCommand({ TransactItems: apiKeyItems(record, key).map((Item) => ({ Put: { TableName: db.tables.accounts, Item } })) }),
  );
  expect(await here.caller(key)).toEqual({ teamId: 'team-new', accountId: 'account-1', apiKeyId: record.id });
});

test('a key revoked in this process is refused at once; by another process, within a second', async () => {
  expect(API_KEY_CHECK_MS).toBeLessThanOrEqual(1000);
  const here = new ApiKeyStore(db);
  const there = new ApiKeyStore(db);
  const { apiKey, key } = await here.create('team-revoked', 'account-1', null);
  expect(await here.caller(key)).toMatchObject({ apiKeyId: apiKey.id });
  expect(await there.caller(key)).toMatchObject({ apiKeyId: apiKey.id });

  const revokedAt = Date.now();
  await here.revoke('team-revoked', apiKey.id);
  expect(await here.caller(key)).toBeUndefined();
  // The other process remembers its check for a while, never past the second.
  let refusedAfter: number | undefined;
  while (refusedAfter === undefined && Date.now() - revokedAt < 3000) {
    if ((await there.caller(key)) === undefined) refusedAfter = Date.now() - revokedAt;
    else await new Promise((r) => setTimeout(r, 20));
  }
  expect(refusedAfter).toBeDefined();
  expect(refusedAfter!).toBeLessThan(1000);
  // And refused from then on.
  expect(await there.caller(key)).toBeUndefined();
});

test('the checks of one moment share one read; a key in use is read again before its time, so none waits on it', async () => {
  const { db: countedDb, gets: reads } = countingDatabase(db);
  const store = new ApiKeyStore(countedDb);
  const { apiKey, key } = await store.create('team-shared', 'account-1', null);
  const checks = await Promise.all(Array.from({ length: 32 }, () => store.caller(key)));
  expect(checks.every((c) => c?.apiKeyId === apiKey.id)).toBe(true);
  expect(reads()).toBe(1);
  const firstAt = Date.now();
  await new Promise((r) => setTimeout(r, API_KEY_CHECK_MS * 0.75));
  // Near its end: answered at once, and read again in the background, once.
  await Promise.all(Array.from({ length: 8 }, () => store.caller(key)));
  await new Promise((r) => setTimeout(r, 30));
  expect(reads()).toBe(2);
  // Past the first read's time the key is still known: no read waits.
  await new Promise((r) => setTimeout(r, Math.max(0, firstAt + API_KEY_CHECK_MS + 30 - Date.now())));
  expect(await store.caller(key)).toMatchObject({ apiKeyId: apiKey.id });
  if (Date.now() - firstAt < API_KEY_CHECK_MS * 1.6) expect(reads()).toBe(2);
});

test('a check under way while the key is revoked here answers as it read, but is not kept', async () => {
  const counted = countingDatabase(db);
  const store = new ApiKeyStore(counted.db);
  const { apiKey, key } = await store.create('team-racing', 'account-1', null);
  let release!: () => void;
  counted.hold('TOKEN#', new Promise<void>((r) => (release = r)));
  // The database answers this check before the revocation; the answer reaches the store after it.
  const during = store.caller(key);
  await new Promise((r) => setTimeout(r, 20));
  await store.revoke('team-racing', apiKey.id);
  // A check begun after the revocation does not share the one under way.
  const after = store.caller(key);
  release();
  expect(await during).toMatchObject({ apiKeyId: apiKey.id });
  expect(await after).toBeUndefined();
  expect(await store.caller(key)).toBeUndefined();
});

test('what the caller is given is its own copy', async () => {
  const store = new ApiKeyStore(db);
  const { key } = await store.create('team-copy', 'account-1', null);
  const first = (await store.caller(key))!;
  first.teamId = 'another-team';
  expect((await store.caller(key))!.teamId).toBe('team-copy');
});
