/**
 * The embedded database's LevelDB runs with LEVEL_MEMORY's caches
 * (functions/core/level-memory.ts), not classic-level's defaults: dynalite
 * opens its LevelDB itself, so engine.ts opens it first with them. What
 * shows it from outside: LevelDB writes its in-memory table to a table file
 * (`.ldb`) once it holds write_buffer_size bytes; 2 MiB of items leave none
 * under the default 4 MiB buffer, and at least one under LEVEL_MEMORY's 1 MiB.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LEVEL_MEMORY } from '../../functions/core/level-memory.js';
import { openEmbeddedDynamo, type EmbeddedEngine } from '../../functions/local/embedded-dynamo/engine.js';
import { waitFor } from '../support/wait.js';

let dir: string;
let engine: EmbeddedEngine;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-level-memory-'));
  engine = await openEmbeddedDynamo(dir);
});
afterAll(async () => {
  await engine?.close();
  await rm(dir, { recursive: true, force: true });
});

const tableFiles = async () => (await readdir(join(dir, 'dynamodb'))).filter((f) => f.endsWith('.ldb'));

test('the write buffer is LEVEL_MEMORY.writeBufferSize: 2 MiB of items reach a table file', async () => {
  expect(LEVEL_MEMORY.writeBufferSize).toBeLessThan(2 * 1024 * 1024);
  const created = await engine.execute('CreateTable', {
    TableName: 'memory',
    AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  });
  expect(created.status).toBe(200);
  // ACTIVE on the next turn (createTableMs 0), as DynamoDB's own after a while.
  await waitFor(async () => (await engine.execute('DescribeTable', { TableName: 'memory' })).json.Table?.TableStatus === 'ACTIVE');
  expect(await tableFiles()).toEqual([]);
  const value = 'x'.repeat(16 * 1024);
  for (let i = 0; i < 128; i++) {
    const put = await engine.execute('PutItem', { TableName: 'memory', Item: { pk: { S: `item-${i}` }, v: { S: value } } });
    expect(put.status).toBe(200);
  }
  // The in-memory table is written out in the background.
  await waitFor(async () => (await tableFiles()).length > 0, { timeoutMs: 10_000, intervalMs: 50, what: () => 'a LevelDB table file' });
  const item = await engine.execute('GetItem', { TableName: 'memory', Key: { pk: { S: 'item-7' } } });
  expect(item.json.Item?.v?.S).toBe(value);
});
