/** Coalesced consistent reads (item-reader.ts) against the embedded DynamoDB. */
import { BatchWriteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Database } from '../../functions/core/data/dynamo.js';
import { startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';

let embedded: EmbeddedDb;
let db: Database;
const calls: string[] = [];
beforeAll(async () => {
  embedded = await startEmbeddedDb();
  // Through the SDK (the HTTP endpoint), whose middleware stack the spy below sits in.
  db = embedded.client(false);
  db.client.middlewareStack.add(
    (next, context) => async (args) => {
      calls.push(context.commandName as string);
      return next(args);
    },
    { step: 'initialize' },
  );
});
afterAll(async () => {
  await embedded.close();
});
beforeEach(() => {
  calls.length = 0;
});

test('reads asked for together go out as one BatchGetItem, across tables, duplicates shared', async () => {
  const { objects, accounts } = db.tables;
  await db.doc.send(new PutCommand({ TableName: objects, Item: { pk: 'b', sk: 'one', v: 1 } }));
  await db.doc.send(new PutCommand({ TableName: objects, Item: { pk: 'b', sk: 'two', v: 2 } }));
  await db.doc.send(new PutCommand({ TableName: accounts, Item: { pk: 'AKEY#x', sk: 'AKEY', v: 3 } }));
  calls.length = 0;
  const got = await Promise.all([
    db.reader.get(objects, { pk: 'b', sk: 'one' }),
    db.reader.get(objects, { pk: 'b', sk: 'two' }),
    db.reader.get(objects, { pk: 'b', sk: 'one' }),
    db.reader.get(objects, { pk: 'b', sk: 'missing' }),
    db.reader.get(accounts, { pk: 'AKEY#x', sk: 'AKEY' }),
  ]);
  expect(got.map((i) => i?.v)).toEqual([1, 2, 1, undefined, 3]);
  expect(calls).toEqual(['BatchGetItemCommand']);
});

test('a read alone is a GetItem, and sees the latest write', async () => {
  const { objects } = db.tables;
  await db.doc.send(new PutCommand({ TableName: objects, Item: { pk: 'b', sk: 'alone', v: 'old' } }));
  await db.doc.send(new PutCommand({ TableName: objects, Item: { pk: 'b', sk: 'alone', v: 'new' } }));
  calls.length = 0;
  expect((await db.reader.get(objects, { pk: 'b', sk: 'alone' }))?.v).toBe('new');
  expect(calls).toEqual(['GetItemCommand']);
});

test('more than 100 keys are split into batches of 100', async () => {
  const { objects } = db.tables;
  const keys = Array.from({ length: 230 }, (_, i) => `many-${i}`);
  for (let i = 0; i < keys.length; i += 25) {
    await db.doc.send(
      new BatchWriteCommand({
        RequestItems: { [objects]: keys.slice(i, i + 25).map((sk, j) => ({ PutRequest: { Item: { pk: 'b', sk, n: i + j } } })) },
      }),
    );
  }
  calls.length = 0;
  const got = await Promise.all(keys.map((sk) => db.reader.get(objects, { pk: 'b', sk })));
  expect(got.map((i) => i?.n)).toEqual(keys.map((_, i) => i));
  expect(calls).toEqual(['BatchGetItemCommand', 'BatchGetItemCommand', 'BatchGetItemCommand']);
});

test('a failed batch fails every read in it', async () => {
  const results = await Promise.allSettled([
    db.reader.get('no-such-table', { pk: 'a', sk: 'b' }),
    db.reader.get(db.tables.objects, { pk: 'b', sk: 'one' }),
  ]);
  expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  expect(((results[0] as PromiseRejectedResult).reason as Error).name).toBe('ResourceNotFoundException');
});
