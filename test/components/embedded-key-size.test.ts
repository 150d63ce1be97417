/**
 * The embedded database refuses keys as DynamoDB does: a partition key past
 * 2048 bytes and a sort key past 1024, counted in UTF-8 bytes, an index's
 * keys included (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).
 * dynalite alone counted UTF-16 code units and skipped index keys, so what
 * passed here could fail in AWS. Both ways in (HTTP and in-process), and in
 * a transaction as in a single write.
 */
import { GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';

let embedded: EmbeddedDb;

beforeAll(async () => {
  embedded = await startEmbeddedDb();
});

afterAll(async () => {
  await embedded?.close();
});

const refused = async (p: Promise<unknown>) =>
  p.then(
    () => 'written',
    (err: Error) => `${err.name}: ${err.message}`,
  );

describe.each([
  ['in-process', true],
  ['HTTP', false],
])('through the %s client', (_name, inProcess) => {
  test('a sort key of 1024 bytes is taken, 1025 bytes is refused, whatever the characters', async () => {
    const db = embedded.client(inProcess);
    const table = db.tables.objects;
    const fits = 'é'.repeat(512); // 512 code units, 1024 bytes
    const over = `${'é'.repeat(512)}k`; // 513 code units, 1025 bytes
    const euro = '€'.repeat(342); // 342 code units, 1026 bytes
    expect(await refused(db.doc.send(new PutCommand({ TableName: table, Item: { pk: `b-${inProcess}`, sk: fits } })))).toBe('written');
    for (const sk of [over, euro, 'k'.repeat(1025)]) {
      expect(await refused(db.doc.send(new PutCommand({ TableName: table, Item: { pk: `b-${inProcess}`, sk } })))).toMatch(
        /^ValidationException: .*range keys has exceeded the size limit of 1024 bytes/,
      );
      expect(await refused(db.doc.send(new GetCommand({ TableName: table, Key: { pk: `b-${inProcess}`, sk } })))).toMatch(
        /^ValidationException: /,
      );
      expect(
        await refused(
          db.doc.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: table, Item: { pk: `t-${inProcess}`, sk } } }] })),
        ),
      ).toMatch(/ValidationException|TransactionCanceled/);
    }
    expect((await db.doc.send(new GetCommand({ TableName: table, Key: { pk: `t-${inProcess}`, sk: 'k' } }))).Item).toBeUndefined();
  });

  test("a partition key past 2048 bytes, and an index's sort key past 1024, are refused", async () => {
    const db = embedded.client(inProcess);
    const table = db.tables.objects;
    expect(await refused(db.doc.send(new PutCommand({ TableName: table, Item: { pk: '€'.repeat(683), sk: 'k' } })))).toMatch(
      /^ValidationException: .*hashkey has exceeded the maximum size limit of2048 bytes/,
    );
    expect(
      await refused(
        db.doc.send(new PutCommand({ TableName: table, Item: { pk: `i-${inProcess}`, sk: 'k', gsi1pk: 'x', gsi1sk: 'é'.repeat(513) } })),
      ),
    ).toMatch(/^ValidationException: /);
    expect(
      await refused(
        db.doc.send(new PutCommand({ TableName: table, Item: { pk: `i-${inProcess}`, sk: 'k', gsi1pk: 'x', gsi1sk: 'é'.repeat(512) } })),
      ),
    ).toBe('written');
  });
});
