/**
 * check-types.ts answers exactly as dynalite's own checkTypes: the same
 * checked data, the same pruning of the caller's object, the same errors,
 * for every operation's type definition, on real requests and on thousands
 * of requests with a value swapped for a wrong one anywhere.
 */
import { createRequire } from 'node:module';
import { checkTypes } from '../../functions/local/embedded-dynamo/check-types.js';

const require = createRequire(import.meta.url);
const dynalite = require('dynalite/validations') as { checkTypes: (data: unknown, types: unknown) => unknown };

const OPERATIONS = [
  'batchGetItem',
  'batchWriteItem',
  'createTable',
  'deleteItem',
  'getItem',
  'putItem',
  'query',
  'scan',
  'updateItem',
  'updateTable',
  'tagResource',
];
const types = Object.fromEntries(OPERATIONS.map((op) => [op, (require(`dynalite/validations/${op}`) as { types: unknown }).types]));

const item = {
  pk: { S: 'BUCKET#b' },
  sk: { S: 'k/1' },
  size: { N: '3000' },
  raw: { B: 'AAECAw==' },
  blobs: { BS: ['AAE=', 'AgM='] },
  nums: { NS: ['1', '2.5'] },
  strs: { SS: ['a', 'b'] },
  flag: { BOOL: true },
  nothing: { NULL: true },
  list: { L: [{ S: 'x' }, { M: { deep: { N: '1' } } }] },
  map: { M: { crc32: { S: 'w+ApQQ==' }, empty: { M: {} } } },
};

const requests: Array<[string, Record<string, unknown>]> = [
  [
    'putItem',
    {
      TableName: 'objects',
      Item: item,
      ConditionExpression: 'attribute_not_exists(pk)',
      ReturnValues: 'ALL_OLD',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      Unknown: 1,
    },
  ],
  [
    'getItem',
    {
      TableName: 'accounts',
      Key: { pk: { S: 'AKEY#K' }, sk: { S: 'AKEY' } },
      ConsistentRead: true,
      ProjectionExpression: '#p',
      ExpressionAttributeNames: { '#p': 'pk' },
    },
  ],
  [
    'deleteItem',
    {
      TableName: 'a',
      Key: { pk: { S: 'x' } },
      ConditionExpression: 'a < :v',
      ExpressionAttributeValues: { ':v': { N: '1' } },
      Expected: { a: { Exists: false } },
    },
  ],
  [
    'updateItem',
    {
      TableName: 'a',
      Key: { pk: { S: 'x' } },
      UpdateExpression: 'SET n = n + :one',
      ExpressionAttributeValues: { ':one': { N: '1' } },
      AttributeUpdates: { z: { Action: 'PUT', Value: { S: 'z' } } },
    },
  ],
  [
    'query',
    {
      TableName: 'objects',
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': { S: 'CID#x' } },
      Limit: 7.9,
      ScanIndexForward: 'no',
      ExclusiveStartKey: { pk: { S: 'a' } },
      Select: 'ALL_ATTRIBUTES',
    },
  ],
  [
    'scan',
    { TableName: 't', Segment: 1, TotalSegments: 2, ScanFilter: { a: { ComparisonOperator: 'EQ', AttributeValueList: [{ S: 'x' }] } } },
  ],
  ['batchGetItem', { RequestItems: { t: { Keys: [{ pk: { S: 'a' } }, { pk: { S: 'b' } }], ConsistentRead: 'TRUE' } } }],
  ['batchWriteItem', { RequestItems: { t: [{ PutRequest: { Item: item } }, { DeleteRequest: { Key: { pk: { S: 'x' } } } }] } }],
  [
    'createTable',
    {
      TableName: 't',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      GlobalSecondaryIndexes: [
        { IndexName: 'g', KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }], Projection: { ProjectionType: 'ALL' } },
      ],
      ProvisionedThroughput: { ReadCapacityUnits: 1, WriteCapacityUnits: 1 },
      BillingMode: 'PAY_PER_REQUEST',
    },
  ],
  ['updateTable', { TableName: 't', GlobalSecondaryIndexUpdates: [{ Delete: { IndexName: 'g' } }] }],
  ['tagResource', { ResourceArn: 'arn', Tags: [{ Key: 'k', Value: 'v' }] }],
  ['putItem', { TableName: 'objects', Item: JSON.parse('{"pk": {"S": "p"}, "m": {"M": {"__proto__": {"S": "x"}, "a": {"N": "1"}}}}') }],
];

/** Either the checked data and what is left of the input, or the error's message, status and body. */
function outcome(check: (data: unknown, types: unknown) => unknown, op: string, body: unknown) {
  const input = structuredClone(body);
  try {
    return { checked: check(input, types[op]), input };
  } catch (err) {
    const e = err as { message: string; statusCode?: number; body?: unknown };
    return { error: e.message, statusCode: e.statusCode, body: e.body, input };
  }
}

test('real requests of every operation: the same checked data and the same pruned input', () => {
  for (const [op, body] of requests) {
    const ours = outcome(checkTypes as never, op, body);
    expect(ours).toEqual(outcome(dynalite.checkTypes, op, body));
    expect(ours).toHaveProperty('checked');
  }
  const put = outcome(checkTypes as never, 'putItem', requests[0]![1]);
  expect(put.input).not.toHaveProperty('Unknown'); // pruned from the caller's object, as dynalite does
});

test('thousands of requests with one value swapped for a wrong one: the same answer every time', () => {
  let seed = 42;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const wrong: unknown[] = [
    true,
    false,
    0,
    1,
    1.5,
    -2,
    'str',
    'yes',
    'NO',
    '0',
    '',
    'AAAA',
    'AAA=',
    'AA',
    '@@@@',
    [],
    [1],
    ['a'],
    [{ S: 'x' }],
    {},
    { S: 'x' },
    { N: 1 },
    { M: [] },
    { L: {} },
    null,
  ];
  const paths = (value: unknown, at: Array<string | number> = []): Array<Array<string | number>> => {
    if (value === null || typeof value !== 'object') return [at];
    const keys = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
    return [at, ...keys.flatMap((k) => paths((value as Record<string, unknown>)[k], [...at, k]))];
  };
  let errors = 0;
  for (let n = 0; n < 4000; n++) {
    const [op, original] = requests[random(requests.length)]!;
    const body = structuredClone(original);
    const all = paths(body).filter((p) => p.length > 0);
    const path = all[random(all.length)]!;
    let holder = body as Record<string | number, unknown>;
    for (const k of path.slice(0, -1)) holder = holder[k] as Record<string | number, unknown>;
    holder[path[path.length - 1]!] = structuredClone(wrong[random(wrong.length)]);
    const ours = outcome(checkTypes as never, op, body);
    expect(ours).toEqual(outcome(dynalite.checkTypes, op, body));
    if ('error' in ours) errors++;
  }
  expect(errors).toBeGreaterThan(1000); // the swaps reach the error paths, not only the pruning
});
