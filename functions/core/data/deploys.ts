/**
 * Deploys, in the deploys table, under their site with time-sortable ids:
 *   SITE#<siteId> / DEPLOY#<id>   gsi1 (only while waiting for a worker): QUEUE / <id>
 */
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { newSortableId } from '../ids.js';
import type { Database } from './dynamo.js';
import { withoutKeys } from './tables.js';

export type DeployStatus = 'IN_PROGRESS' | 'DEPLOYED' | 'FAILED' | 'CANCELLED';

export interface DeployRepository {
  commit?: string | null;
  branch?: string | null;
  owner?: string | null;
  name?: string | null;
  message?: string | null;
}

export interface Deploy {
  id: string;
  siteId: string;
  status: DeployStatus;
  createdAt: string;
  startedAt?: string | null;
  completedAt?: string | null;
  ipfsHash?: string | null;
  previewImage?: string | null;
  totalTime?: number | null;
  log?: string | null;
  published: boolean;
  autoPublish: boolean;
  repository: DeployRepository;
}

export class DeployStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.deploys;
  }

  /** Records a new deploy waiting for a worker. */
  async enqueue(siteId: string, init: { autoPublish: boolean; repository: DeployRepository }): Promise<Deploy> {
    const now = this.now();
    const deploy: Deploy = {
      id: newSortableId(now.getTime()),
      siteId,
      status: 'IN_PROGRESS',
      createdAt: now.toISOString(),
      published: false,
      ...init,
    };
    await this.db.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: { pk: `SITE#${siteId}`, sk: `DEPLOY#${deploy.id}`, gsi1pk: 'QUEUE', gsi1sk: deploy.id, ...deploy },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return deploy;
  }

  async get(siteId: string, deployId: string): Promise<Deploy | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `SITE#${siteId}`, sk: `DEPLOY#${deployId}` } }),
    );
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /** Deploys waiting for a worker, oldest first. */
  async listQueued(limit: number): Promise<Deploy[]> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :q',
        ExpressionAttributeValues: { ':q': 'QUEUE' },
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map(fromItem);
  }
}

function fromItem(item: Record<string, unknown>): Deploy {
  return withoutKeys<Deploy>(item);
}
