/** The embedded DynamoDB's transactions: all or nothing, with DynamoDB's cancellation reasons. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand, TransactGetCommand } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../functions/core/data/embedded.js';
import { createDatabase, ensureTables, type Database } from '../../functions/core/data/dynamo.js';
import { loadConfig } from '../../functions/core/config.js';

let dir: string;
let dynamo: EmbeddedDynamo;
let db: Database;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-tx-'));
  dynamo = await startEmbeddedDynamo(dir);
  db = createDatabase(loadConfig({ DYNAMODB_ENDPOINT: dynamo.endpoint, CAIRN_DATA_DIR: dir }));
  await ensureTables(db);
});
afterAll(async () => {
  db.client.destroy();
  await dynamo.close();
  await rm(dir, { recursive: true, force: true });
});

const T = () => db.tables.accounts;

test('a transaction whose last condition fails applies none of its writes', async () => {
  await db.doc.send(new PutCommand({ TableName: T(), Item: { pk: 'taken', sk: 'x', v: 'original' } }));
  const err = await db.doc
    .send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: T(), Item: { pk: 'new-1', sk: 'x' }, ConditionExpression: 'attribute_not_exists(pk)' } },
          { Update: { TableName: T(), Key: { pk: 'taken', sk: 'x' }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': 'changed' } } },
          { Put: { TableName: T(), Item: { pk: 'taken', sk: 'y' } } },
          { ConditionCheck: { TableName: T(), Key: { pk: 'missing', sk: 'x' }, ConditionExpression: 'attribute_exists(pk)' } },
        ],
      }),
    )
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(TransactionCanceledException);
  expect((err as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual(['None', 'None', 'None', 'ConditionalCheckFailed']);
  expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: 'new-1', sk: 'x' } }))).Item).toBeUndefined();
  expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: 'taken', sk: 'y' } }))).Item).toBeUndefined();
  expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: 'taken', sk: 'x' } }))).Item?.v).toBe('original');
  expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: 'missing', sk: 'x' } }))).Item).toBeUndefined();
});

test('a transaction that passes applies every write, and TransactGet reads them', async () => {
  await db.doc.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: T(), Item: { pk: 'a', sk: '1', n: 1 }, ConditionExpression: 'attribute_not_exists(pk)' } },
        { Put: { TableName: T(), Item: { pk: 'b', sk: '1', n: 2 } } },
        { ConditionCheck: { TableName: T(), Key: { pk: 'taken', sk: 'x' }, ConditionExpression: 'v = :v', ExpressionAttributeValues: { ':v': 'original' } } },
      ],
    }),
  );
  const out = await db.doc.send(
    new TransactGetCommand({ TransactItems: [{ Get: { TableName: T(), Key: { pk: 'a', sk: '1' } } }, { Get: { TableName: T(), Key: { pk: 'nope', sk: '1' } } }, { Get: { TableName: T(), Key: { pk: 'b', sk: '1' } } }] }),
  );
  expect(out.Responses?.map((r) => r.Item?.n)).toEqual([1, undefined, 2]);
});

test('two operations on one item are refused', async () => {
  const err = await db.doc
    .send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: T(), Item: { pk: 'dup', sk: '1' } } }, { Delete: { TableName: T(), Key: { pk: 'dup', sk: '1' } } }] }))
    .catch((e: Error) => e);
  expect((err as Error).name).toBe('ValidationException');
});
