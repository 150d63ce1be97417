/**
 * The DynamoDB client (embedded dynalite locally, DynamoDB in AWS) and table
 * creation from the shared definitions.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
  type GlobalSecondaryIndex,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Config } from '../config.js';
import { TABLES, indexKeys } from './tables.js';

export interface Database {
  client: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  tables: Config['tables'];
}

export function createDatabase(config: Config): Database {
  const client = new DynamoDBClient({
    region: config.region,
    ...(config.dynamodb.endpoint
      ? {
          endpoint: config.dynamodb.endpoint,
          // The embedded server ignores credentials; a local endpoint must not need real ones.
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        }
      : {}),
  });
  const doc = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  return { client, doc, tables: config.tables };
}

/** Creates every missing table (local mode; in AWS the CDK stack owns them). */
export async function ensureTables(db: Database): Promise<void> {
  for (const spec of TABLES) {
    const name = db.tables[spec.name];
    try {
      await db.client.send(new DescribeTableCommand({ TableName: name }));
      continue;
    } catch (err) {
      if (!(err instanceof ResourceNotFoundException)) throw err;
    }
    const attrs = new Set(['pk', 'sk']);
    const indexes: GlobalSecondaryIndex[] = spec.indexes.map((index) => {
      const k = indexKeys(index);
      attrs.add(k.pk).add(k.sk);
      return {
        IndexName: index,
        KeySchema: [
          { AttributeName: k.pk, KeyType: 'HASH' },
          { AttributeName: k.sk, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      };
    });
    try {
      await db.client.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [...attrs].map((a) => ({ AttributeName: a, AttributeType: 'S' })),
          KeySchema: [
            { AttributeName: 'pk', KeyType: 'HASH' },
            { AttributeName: 'sk', KeyType: 'RANGE' },
          ],
          ...(indexes.length ? { GlobalSecondaryIndexes: indexes } : {}),
        }),
      );
    } catch (err) {
      if (!(err instanceof ResourceInUseException)) throw err;
    }
  }
}
