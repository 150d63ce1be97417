import type { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
/**
 * The DynamoDB client (embedded dynalite locally, DynamoDB in AWS) and table
 * creation from the shared definitions.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
  ResourceInUseException,
  ResourceNotFoundException,
  type GlobalSecondaryIndex,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { marshallOptions as MarshallOptions } from '@aws-sdk/util-dynamodb';
import type { Config } from '../config.js';
import { TABLES, indexKeys } from './tables.js';
import { ItemReader } from './item-reader.js';
import { pauseBefore, sleep, type Pauses } from '../retry.js';

export interface Database {
  client: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  /** Consistent whole-item reads by key, coalesced into batches (item-reader.ts). */
  reader: ItemReader;
  tables: Config['tables'];
}

/**
 * How a client reaches a database in the same process (the local server's
 * embedded one): its request handler, and no request signing. The stores
 * send the same commands either way.
 */
export interface InProcessTransport {
  requestHandler: NonNullable<DynamoDBClientConfig['requestHandler']>;
  /** Gives the document client a `send` for item operations that skips the SDK's middleware (its cost rivals the engine's work). */
  sendDirectly?(doc: DynamoDBDocumentClient, marshallOptions: MarshallOptions): void;
}

const MARSHALL_OPTIONS = { removeUndefinedValues: true, convertClassInstanceToMap: false };

export function createDatabase(config: Config, transport?: InProcessTransport): Database {
  const client = new DynamoDBClient({
    region: config.region,
    ...(config.dynamodb.endpoint
      ? {
          endpoint: config.dynamodb.endpoint,
          // The embedded server ignores credentials; a local endpoint must not need real ones.
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        }
      : {}),
    ...(transport
      ? {
          requestHandler: transport.requestHandler,
          httpAuthSchemes: [
            {
              schemeId: 'smithy.api#noAuth',
              identityProvider: () => async () => ({}),
              signer: { sign: async (request: unknown) => request },
            },
          ],
          httpAuthSchemeProvider: () => [{ schemeId: 'smithy.api#noAuth' }],
        }
      : {}),
  } as DynamoDBClientConfig);
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: MARSHALL_OPTIONS });
  transport?.sendDirectly?.(doc, MARSHALL_OPTIONS);
  return { client, doc, reader: new ItemReader(doc), tables: config.tables };
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
  // A new table takes writes once it is ACTIVE (DynamoDB's and dynalite's CREATING state).
  for (const spec of TABLES) await untilActive(db, db.tables[spec.name]);
}

/** Looks at a new table's state 5 ms apart, doubling to 1 s (bounded by the caller's deadline, not a count). */
const ACTIVE_POLL: Pauses = { baseMs: 5, maxMs: 1000 };

async function untilActive(db: Database, name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let look = 1; ; look++) {
    const { Table } = await db.client.send(new DescribeTableCommand({ TableName: name }));
    const indexesReady = (Table?.GlobalSecondaryIndexes ?? []).every((i) => i.IndexStatus === 'ACTIVE');
    if (Table?.TableStatus === 'ACTIVE' && indexesReady) return;
    if (Date.now() > deadline) throw new Error(`table ${name} is still ${Table?.TableStatus} after ${timeoutMs / 1000} s`);
    await sleep(pauseBefore(look, ACTIVE_POLL));
  }
}

/** One write of a DynamoDB transaction, as lib-dynamodb takes it. */
export type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];
