/**
 * Hosting API key checks (functions/core/data/api-keys.ts) against the
 * embedded DynamoDB: a check is remembered briefly, so a read of the key
 * is not paid by every request; a key revoked in the same process is
 * refused at once, one revoked by another process (a second store on the
 * same table, as a second Lambda container would be) within a second.
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

test('what the caller is given is its own copy', async () => {
  const store = new ApiKeyStore(db);
  const { key } = await store.create('team-copy', 'account-1', null);
  const first = (await store.caller(key))!;
  first.teamId = 'another-team';
  expect((await store.caller(key))!.teamId).toBe('team-copy');
});
