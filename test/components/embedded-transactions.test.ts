/**
 * The embedded DynamoDB (functions/local/embedded-dynamo/engine.ts): transactions all or nothing with
 * DynamoDB's cancellation reasons, the same answers through the HTTP
 * endpoint and the in-process transport, and item locks that keep readers
 * from ever seeing a cancelled transaction's writes.
 */
import { PutItemCommand, TransactionCanceledException, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  TransactGetCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
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
            {
              Update: {
                TableName: T(),
                Key: { pk: id('taken'), sk: 'x' },
                UpdateExpression: 'SET v = :v',
                ExpressionAttributeValues: { ':v': 'changed' },
              },
            },
            { Put: { TableName: T(), Item: { pk: id('taken'), sk: 'y' } } },
            { ConditionCheck: { TableName: T(), Key: { pk: id('missing'), sk: 'x' }, ConditionExpression: 'attribute_exists(pk)' } },
          ],
        }),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransactionCanceledException);
    expect((err as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual([
      'None',
      'None',
      'None',
      'ConditionalCheckFailed',
    ]);
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
          {
            ConditionCheck: {
              TableName: T(),
              Key: { pk: id('taken'), sk: 'x' },
              ConditionExpression: 'v = :v',
              ExpressionAttributeValues: { ':v': 'original' },
            },
          },
        ],
      }),
    );
    const out = await db.doc.send(
      new TransactGetCommand({
        TransactItems: [
          { Get: { TableName: T(), Key: { pk: id('a'), sk: '1' } } },
          { Get: { TableName: T(), Key: { pk: id('nope'), sk: '1' } } },
          { Get: { TableName: T(), Key: { pk: id('b'), sk: '1' } } },
        ],
      }),
    );
    expect(out.Responses?.map((r) => r.Item?.n)).toEqual([1, undefined, 2]);
  });

  test("a transaction's Put over an item moves its index entry, and a Put into a missing table is ResourceNotFound", async () => {
    const query = async (gsi1pk: string) =>
      (
        await db.doc.send(
          new QueryCommand({
            TableName: T(),
            IndexName: 'gsi1',
            KeyConditionExpression: 'gsi1pk = :p',
            ExpressionAttributeValues: { ':p': gsi1pk },
          }),
        )
      ).Items ?? [];
    const put = (gsi1pk: string, v: number) =>
      db.doc.send(
        new TransactWriteCommand({
          TransactItems: [{ Put: { TableName: T(), Item: { pk: id('indexed'), sk: '1', gsi1pk, gsi1sk: 's', v } } }],
        }),
      );
    await put(id('idx-old'), 1);
    expect((await query(id('idx-old'))).map((i) => i.v)).toEqual([1]);
    await put(id('idx-new'), 2);
    expect(await query(id('idx-old'))).toEqual([]);
    expect((await query(id('idx-new'))).map((i) => i.v)).toEqual([2]);
    const err = await db.doc
      .send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: 'no-such-table', Item: { pk: id('x'), sk: '1' } } }] }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'ResourceNotFoundException' });
  });
  test('a transaction whose write fails while it is applied writes nothing', async () => {
    await db.doc.send(new PutCommand({ TableName: T(), Item: { pk: id('text'), sk: 'x', s: 'not a number' } }));
    const err = await db.doc
      .send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: T(), Item: { pk: id('first'), sk: 'x' } } },
            {
              Update: {
                TableName: T(),
                Key: { pk: id('text'), sk: 'x' },
                UpdateExpression: 'SET s = s + :one',
                ExpressionAttributeValues: { ':one': 1 },
              },
            },
          ],
        }),
      )
      .catch((e: Error) => e);
    expect((err as Error).name).toBe('ValidationException');
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('first'), sk: 'x' } }))).Item).toBeUndefined();
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('text'), sk: 'x' } }))).Item?.s).toBe('not a number');
  });

  test('two operations on one item are refused', async () => {
    const err = await db.doc
      .send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: T(), Item: { pk: id('dup'), sk: '1' } } },
            { Delete: { TableName: T(), Key: { pk: id('dup'), sk: '1' } } },
          ],
        }),
      )
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
    expect((err as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual([
      'ConditionalCheckFailed',
      'None',
      'ConditionalCheckFailed',
    ]);
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('free'), sk: 'x' } }))).Item).toBeUndefined();
  });

  test('a transaction and a single write racing for one new item: exactly one wins', async () => {
    const rounds = 20;
    const wins = await Promise.all(
      Array.from({ length: rounds }, async (_, i) => {
        const Item = { pk: id(`race-${i}`), sk: 'x' };
        const outcomes = await Promise.allSettled([
          db.doc.send(
            new TransactWriteCommand({
              TransactItems: [
                { Put: { TableName: T(), Item: { ...Item, by: 'tx' }, ConditionExpression: 'attribute_not_exists(pk)' } },
                { Put: { TableName: T(), Item: { pk: id(`race-${i}`), sk: 'y' } } },
              ],
            }),
          ),
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
              {
                Update: {
                  TableName: T(),
                  Key: { pk: id('watched'), sk: 'x' },
                  UpdateExpression: 'SET v = :v',
                  ExpressionAttributeValues: { ':v': 'changed' },
                },
              },
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
      .send(
        new UpdateCommand({
          TableName: T(),
          Key: { pk: id('one'), sk: 'x' },
          UpdateExpression: 'SET n = :n',
          ConditionExpression: 'n = :old',
          ExpressionAttributeValues: { ':n': 3, ':old': 2 },
        }),
      )
      .catch((e: Error) => e);
    expect((failed as Error).name).toBe('ConditionalCheckFailedException');
    const invalid = await db.doc.send(new PutCommand({ TableName: T(), Item: { pk: id('one') } as never })).catch((e: Error) => e);
    expect((invalid as Error).name).toBe('ValidationException');
    const missing = await db.doc.send(new GetCommand({ TableName: 'no-such-table', Key: { pk: 'a', sk: 'b' } })).catch((e: Error) => e);
    expect((missing as Error).name).toBe('ResourceNotFoundException');
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('one'), sk: 'x' } }))).Item?.n).toBe(1);
  });

  test("a map's members are validated as dynalite validates them, at any depth and in a transaction", async () => {
    const item = (m: Record<string, unknown>, pk = id('map')) => ({ pk: { S: pk }, sk: { S: 'x' }, m: { M: m } }) as never;
    const put = (m: Record<string, unknown>) =>
      db.client.send(new PutItemCommand({ TableName: T(), Item: item(m) })).catch((e: Error) => e);
    const notANumber = await put({ ok: { S: 'fine' }, deep: { M: { n: { N: 'abc' } } } });
    expect(notANumber).toMatchObject({
      name: 'ValidationException',
      message: expect.stringContaining('cannot be converted to a numeric value'),
    });
    const falseNull = await put({ deeper: { M: { x: { L: [{ M: { y: { NULL: false } } }] } } } });
    expect(falseNull).toMatchObject({
      name: 'ValidationException',
      message: expect.stringContaining('Null attribute value types must have the value of true'),
    });
    // A member named __proto__ (JSON allows it) is seen by dynalite's checks, not lost.
    const proto = await put(JSON.parse('{"__proto__": {"NS": []}}'));
    expect(proto).toMatchObject({ name: 'ValidationException' });
    const twoTypes = await put({ a: { S: 'x', N: '1' } });
    expect(twoTypes).toMatchObject({ name: 'ValidationException', message: expect.stringContaining('more than one datatypes') });
    const inTx = await db.client
      .send(
        new TransactWriteItemsCommand({
          TransactItems: [{ Put: { TableName: T(), Item: item({ a: { M: { b: { SS: [] } } } }, id('map-tx')) } }],
        }),
      )
      .catch((e: Error) => e);
    expect(inTx).toMatchObject({ name: 'ValidationException', message: expect.stringContaining('string set  may not be empty') });
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('map-tx'), sk: 'x' } }))).Item).toBeUndefined();
    expect(await put({ s: { S: 'kept' }, nested: { M: { n: { N: '2' }, empty: { M: {} } } } })).toMatchObject({
      $metadata: { httpStatusCode: 200 },
    });
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('map'), sk: 'x' } }))).Item?.m).toEqual({
      s: 'kept',
      nested: { n: 2, empty: {} },
    });
  });

  test("a memoized expression still sees each request's values and still refuses unused ones", async () => {
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
    const wrongType = await bump(100, {})
      .then(() =>
        db.doc.send(
          new UpdateCommand({
            TableName: T(),
            Key: { pk: id('memo'), sk: 'x' },
            UpdateExpression: 'SET n = :n',
            ConditionExpression: 'begins_with(pk, :p)',
            ExpressionAttributeValues: { ':n': 1, ':p': 5 },
          }),
        ),
      )
      .catch((e: Error) => e);
    expect((wrongType as Error).name).toBe('ValidationException');
    await db.doc.send(
      new UpdateCommand({
        TableName: T(),
        Key: { pk: id('memo'), sk: 'x' },
        UpdateExpression: 'SET n = :n',
        ConditionExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':n': 1, ':p': 'memo' },
      }),
    );
    expect((await db.doc.send(new GetCommand({ TableName: T(), Key: { pk: id('memo'), sk: 'x' } }))).Item?.n).toBe(1);
  });
});

describe('the in-process client answers as the SDK does over HTTP', () => {
  let http: Database;
  let direct: Database;
  beforeAll(() => {
    http = embedded.client(false);
    direct = embedded.client(true);
  });
  const T = () => http.tables.objects;
  const item = (pk: string) => ({
    pk,
    sk: 'k',
    gsi1pk: `g-${pk}`,
    gsi1sk: '1',
    text: 'héllo',
    n: 42.5,
    big: 12345678901,
    yes: true,
    nothing: null,
    bytes: new Uint8Array([0, 1, 2, 250]),
    byteSets: new Set([new Uint8Array([7]), new Uint8Array([8, 9])]),
    list: ['a', 1, { deep: [false] }],
    map: { a: { b: 'c' } },
    strings: new Set(['x', 'y']),
    numbers: new Set([1, 2]),
    skipped: undefined,
  });

  test('items of every attribute type, written and read either way, come back the same', async () => {
    await http.doc.send(new PutCommand({ TableName: T(), Item: item('via-http') }));
    await direct.doc.send(new PutCommand({ TableName: T(), Item: item('via-direct') }));
    for (const pk of ['via-http', 'via-direct']) {
      const a = await http.doc.send(new GetCommand({ TableName: T(), Key: { pk, sk: 'k' } }));
      const b = await direct.doc.send(new GetCommand({ TableName: T(), Key: { pk, sk: 'k' } }));
      expect(b.Item).toEqual(a.Item);
      expect(b.Item?.bytes).toBeInstanceOf(Uint8Array);
      expect(b.Item?.strings).toEqual(new Set(['x', 'y']));
      expect(b.$metadata.httpStatusCode).toBe(200);
    }
    const { pk: _, ...rest } = (await direct.doc.send(new GetCommand({ TableName: T(), Key: { pk: 'via-direct', sk: 'k' } }))).Item!;
    const { pk: __, skipped, ...expected } = item('via-direct');
    expect(rest).toEqual({ ...expected, gsi1pk: 'g-via-direct' });
  });

  test('queries (through an index too), batch reads, updates and deletes answer alike', async () => {
    const both = async (send: (db: Database) => Promise<Record<string, unknown>>) => {
      const [a, b] = [await send(http), await send(direct)];
      delete a.$metadata;
      delete b.$metadata;
      expect(b).toEqual(a);
      return b;
    };
    await http.doc.send(new PutCommand({ TableName: T(), Item: item('q') }));
    const byIndex = await both((db) =>
      db.doc.send(
        new QueryCommand({
          TableName: T(),
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :p',
          ExpressionAttributeValues: { ':p': 'g-q' },
        }),
      ),
    );
    expect(byIndex.Count).toBe(1);
    await both((db) =>
      db.doc.send(
        new QueryCommand({ TableName: T(), KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'q' }, Limit: 1 }),
      ),
    );
    await both((db) =>
      db.doc.send(
        new BatchGetCommand({
          RequestItems: {
            [T()]: {
              Keys: [
                { pk: 'q', sk: 'k' },
                { pk: 'none', sk: 'k' },
              ],
            },
          },
        }),
      ),
    );
    const updated = await both((db) =>
      db.doc.send(
        new UpdateCommand({
          TableName: T(),
          Key: { pk: 'q', sk: 'k' },
          UpdateExpression: 'SET n = :n',
          ExpressionAttributeValues: { ':n': 7 },
          ReturnValues: 'UPDATED_NEW',
        }),
      ),
    );
    expect(updated.Attributes).toEqual({ n: 7 });
    await http.doc.send(new PutCommand({ TableName: T(), Item: item('gone') }));
    const deleted = await direct.doc.send(new DeleteCommand({ TableName: T(), Key: { pk: 'gone', sk: 'k' }, ReturnValues: 'ALL_OLD' }));
    expect(deleted.Attributes?.text).toBe('héllo');
    expect(
      (
        await http.doc.send(
          new QueryCommand({
            TableName: T(),
            IndexName: 'gsi1',
            KeyConditionExpression: 'gsi1pk = :p',
            ExpressionAttributeValues: { ':p': 'g-gone' },
          }),
        )
      ).Count,
    ).toBe(0);
  });

  test("errors are the SDK's exception classes with the same fields", async () => {
    await http.doc.send(new PutCommand({ TableName: T(), Item: { pk: 'held', sk: 'k', v: 1 } }));
    const cancel = (db: Database) =>
      db.doc
        .send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: T(),
                  Item: { pk: 'held', sk: 'k' },
                  ConditionExpression: 'attribute_not_exists(pk)',
                  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
                },
              },
            ],
          }),
        )
        .then(
          () => undefined,
          (e: unknown) => e as TransactionCanceledException,
        );
    const [a, b] = [(await cancel(http))!, (await cancel(direct))!];
    expect(b).toBeInstanceOf(TransactionCanceledException);
    expect(b.name).toBe(a.name);
    expect(b.message).toBe(a.message);
    expect(b.CancellationReasons).toEqual(a.CancellationReasons);
    expect(b.CancellationReasons?.[0]?.Item).toEqual({ pk: { S: 'held' }, sk: { S: 'k' }, v: { N: '1' } });
    expect(b.$metadata.httpStatusCode).toBe(400);
    const invalid = (db: Database) =>
      db.doc.send(new GetCommand({ TableName: T(), Key: { pk: 'x' } as never })).then(
        () => new Error('no error'),
        (e: Error) => e,
      );
    const [c, d] = [await invalid(http), await invalid(direct)];
    expect(d.name).toBe('ValidationException');
    expect(d.message).toBe(c.message);
  });
});
