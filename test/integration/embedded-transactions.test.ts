/**
 * The embedded DynamoDB (embedded.ts): transactions all or nothing with
 * DynamoDB's cancellation reasons, the same answers through the HTTP
 * endpoint and the in-process transport, and item locks that keep readers
 * from ever seeing a cancelled transaction's writes.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand, TransactGetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Database } from '../../functions/core/data/dynamo.js';
import { startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';

let embedded: EmbeddedDb;
beforeAll(async () => {
  embedded = await startEmbeddedDb();
});
afterAll(async () => {
  await embedded.close();
});

describe.each([
  ['the HTTP endpoint', false],
  ['the in-process transport', true],
])('through %s', (_name, inProcess) => {
  let db: Database;
  beforeAll(() => {
    db = embedded.client(inProcess);
  });
  // Each pass writes its own items.
  const id = (name: string) => `${name}-${inProcess ? 'in' : 'http'}`;

  const T = () => db.tables.accounts;

  test('a transaction whose last condition fails applies none of its writes', async () => {
    await db.doc.send(new PutCommand({ TableName: T(), Item: { pk: id('taken'), sk: 'x', v: 'original' } }));
    const err = await db.doc
      .send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: T(), Item: { pk: id('new-1'), sk: 'x' }, ConditionExpression: 'attribute_not_exists(pk)' } },
            { Update: { TableName: T(), Key: { pk: id('taken'), sk: 'x' }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': 'changed' } } },
            { Put: { TableName: T(), Item: { pk: id('taken'), sk: 'y' } } },
            { ConditionCheck: { TableName: T(), Key: { pk: id('missing'), sk: 'x' }, ConditionExpression: 'attribute_exists(pk)' } },
          ],
        }),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransactionCanceledException);
    expect((err as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual(['None', 'None', 'None', 'ConditionalCheckFailed']);
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('new-1'), sk: 'x' } }))).Item).toBeUndefined();
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('taken'), sk: 'y' } }))).Item).toBeUndefined();
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('taken'), sk: 'x' } }))).Item?.v).toBe('original');
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('missing'), sk: 'x' } }))).Item).toBeUndefined();
  });

  test('a transaction that passes applies every write, and TransactGet reads them', async () => {
    await db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: T(), Item: { pk: id('a'), sk: '1', n: 1 }, ConditionExpression: 'attribute_not_exists(pk)' } },
          { Put: { TableName: T(), Item: { pk: id('b'), sk: '1', n: 2 } } },
          { ConditionCheck: { TableName: T(), Key: { pk: id('taken'), sk: 'x' }, ConditionExpression: 'v = :v', ExpressionAttributeValues: { ':v': 'original' } } },
        ],
      }),
    );
    const out = await db.doc.send(
      new TransactGetCommand({ TransactItems: [{ Get: { TableName: T(), Key: { pk: id('a'), sk: '1' } } }, { Get: { TableName: T(), Key: { pk: id('nope'), sk: '1' } } }, { Get: { TableName: T(), Key: { pk: id('b'), sk: '1' } } }] }),
    );
    expect(out.Responses?.map((r) => r.Item?.n)).toEqual([1, undefined, 2]);
  });

  test('two operations on one item are refused', async () => {
    const err = await db.doc
      .send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: T(), Item: { pk: id('dup'), sk: '1' } } }, { Delete: { TableName: T(), Key: { pk: id('dup'), sk: '1' } } }] }))
      .catch((e: Error) => e);
    expect((err as Error).name).toBe('ValidationException');
  });

  test('a cancellation names every item whose condition failed', async () => {
    await db.doc.send(new PutCommand({ TableName: T(), Item: { pk: id('held'), sk: 'x', v: 1 } }));
    const err = await db.doc
      .send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: T(), Item: { pk: id('held'), sk: 'x', v: 2 }, ConditionExpression: 'attribute_not_exists(pk)' } },
            { Put: { TableName: T(), Item: { pk: id('free'), sk: 'x' } } },
            { ConditionCheck: { TableName: T(), Key: { pk: id('absent'), sk: 'x' }, ConditionExpression: 'attribute_exists(pk)' } },
          ],
        }),
      )
      .catch((e: unknown) => e);
    expect((err as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual(['ConditionalCheckFailed', 'None', 'ConditionalCheckFailed']);
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('free'), sk: 'x' } }))).Item).toBeUndefined();
  });

  test('a transaction and a single write racing for one new item: exactly one wins', async () => {
    const rounds = 20;
    const wins = await Promise.all(
      Array.from({ length: rounds }, async (_, i) => {
        const Item = { pk: id(`race-${i}`), sk: 'x' };
        const outcomes = await Promise.allSettled([
          db.doc.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: T(), Item: { ...Item, by: 'tx' }, ConditionExpression: 'attribute_not_exists(pk)' } }, { Put: { TableName: T(), Item: { pk: id(`race-${i}`), sk: 'y' } } }] })),
          db.doc.send(new PutCommand({ TableName: T(), Item: { ...Item, by: 'put' }, ConditionExpression: 'attribute_not_exists(pk)' })),
        ]);
        const stored = (await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: Item.pk, sk: 'x' } }))).Item?.by;
        const winners = outcomes.map((o, j) => (o.status === 'fulfilled' ? ['tx', 'put'][j] : undefined)).filter(Boolean);
        expect(winners).toEqual([stored]);
        return winners.length;
      }),
    );
    expect(wins.reduce((a, b) => a + b, 0)).toBe(rounds);
  });

  test('readers never see the writes of a cancelled transaction', async () => {
    await db.doc.send(new PutCommand({ TableName: T(), Item: { pk: id('watched'), sk: 'x', v: 'original' } }));
    let done = false;
    const seen = new Set<string>();
    const reader = (async () => {
      while (!done) seen.add((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('watched'), sk: 'x' } }))).Item?.v);
    })();
    for (let i = 0; i < 20; i++) {
      await db.doc
        .send(
          new TransactWriteCommand({
            TransactItems: [
              { Update: { TableName: T(), Key: { pk: id('watched'), sk: 'x' }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': 'changed' } } },
              { ConditionCheck: { TableName: T(), Key: { pk: id('never'), sk: 'x' }, ConditionExpression: 'attribute_exists(pk)' } },
            ],
          }),
        )
        .catch(() => {});
    }
    done = true;
    await reader;
    expect([...seen]).toEqual(['original']);
  });

  test('single-item operations keep their own conditions and errors', async () => {
    await db.doc.send(new PutCommand({ TableName: T(), Item: { pk: id('one'), sk: 'x', n: 1 } }));
    const failed = await db.doc
      .send(new UpdateCommand({ TableName: T(), Key: { pk: id('one'), sk: 'x' }, UpdateExpression: 'SET n = :n', ConditionExpression: 'n = :old', ExpressionAttributeValues: { ':n': 3, ':old': 2 } }))
      .catch((e: Error) => e);
    expect((failed as Error).name).toBe('ConditionalCheckFailedException');
    const invalid = await db.doc.send(new PutCommand({ TableName: T(), Item: { pk: id('one') } as never })).catch((e: Error) => e);
    expect((invalid as Error).name).toBe('ValidationException');
    const missing = await db.doc.send(new GetCommand({ TableName: 'no-such-table', Key: { pk: 'a', sk: 'b' } })).catch((e: Error) => e);
    expect((missing as Error).name).toBe('ResourceNotFoundException');
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('one'), sk: 'x' } }))).Item?.n).toBe(1);
  });

  test('a memoized expression still sees each request\'s values and still refuses unused ones', async () => {
    await db.doc.send(new PutCommand({ TableName: T(), Item: { pk: id('memo'), sk: 'x', n: 5 } }));
    const bump = (max: number, extra: Record<string, unknown> = {}) =>
      db.doc.send(
        new UpdateCommand({
          TableName: T(),
          Key: { pk: id('memo'), sk: 'x' },
          UpdateExpression: 'SET n = :n',
          ConditionExpression: 'attribute_exists(pk) AND (attribute_exists(gone) OR n < :max)',
          ExpressionAttributeValues: { ':n': max + 1, ':max': max, ...extra },
        }),
      );
    await bump(6); // 5 < 6: n becomes 7
    const refused = await bump(6).catch((e: Error) => e); // 7 < 6 fails with the same expression
    expect((refused as Error).name).toBe('ConditionalCheckFailedException');
    await bump(8); // n becomes 9
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('memo'), sk: 'x' } }))).Item?.n).toBe(9);
    for (let i = 0; i < 2; i++) {
      const unused = await bump(100, { ':spare': 1 }).catch((e: Error) => e);
      expect((unused as Error).name).toBe('ValidationException');
      expect((unused as Error).message).toMatch(/unused/i);
    }
    const wrongType = await bump(100, {}).then(() => db.doc.send(new UpdateCommand({ TableName: T(), Key: { pk: id('memo'), sk: 'x' }, UpdateExpression: 'SET n = :n', ConditionExpression: 'begins_with(pk, :p)', ExpressionAttributeValues: { ':n': 1, ':p': 5 } }))).catch((e: Error) => e);
    expect((wrongType as Error).name).toBe('ValidationException');
    await db.doc.send(new UpdateCommand({ TableName: T(), Key: { pk: id('memo'), sk: 'x' }, UpdateExpression: 'SET n = :n', ConditionExpression: 'begins_with(pk, :p)', ExpressionAttributeValues: { ':n': 1, ':p': 'memo' } }));
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('memo'), sk: 'x' } }))).Item?.n).toBe(1);
  });
});
