/**
 * Deploys, in the deploys table, under their site with time-sortable ids:
 *   SITE#<siteId> / DEPLOY#<id>   gsi1 (only while waiting for a worker): QUEUE / <id>
 * so a site's deploys are one partition, newest last: a page of them, newest
 * first, is one reverse Query from a key, however deep the page.
 */
import { BatchGetCommand, BatchWriteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { newSortableId } from '../ids.js';
import type { Database } from './dynamo.js';
import { queryAll, queryPage, type Page } from './pages.js';
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

  /** A page of the site's deploys, newest first, starting after the deploy `afterId` (exclusive). */
  async listBySite(siteId: string, limit: number, afterId?: string): Promise<Page<Deploy>> {
    const page = await queryPage(
      this.db,
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :deploy)',
        ExpressionAttributeValues: { ':pk': `SITE#${siteId}`, ':deploy': 'DEPLOY#' },
        ScanIndexForward: false,
      },
      limit,
      afterId === undefined ? undefined : { pk: `SITE#${siteId}`, sk: `DEPLOY#${afterId}` },
    );
    return { items: page.items.map(fromItem), more: page.more };
  }

  /** Several deploys by key in as few round trips as DynamoDB allows (100 keys each); missing ones are absent. */
  async getMany(keys: ReadonlyArray<{ siteId: string; deployId: string }>): Promise<Deploy[]> {
    const found: Deploy[] = [];
    for (let i = 0; i < keys.length; i += 100) {
      let request: Record<string, { Keys: Record<string, unknown>[] }> | undefined = {
        [this.table]: { Keys: keys.slice(i, i + 100).map((k) => ({ pk: `SITE#${k.siteId}`, sk: `DEPLOY#${k.deployId}` })) },
      };
      for (let attempt = 0; request && Object.keys(request).length; attempt++) {
        if (attempt > 0) await backoff(attempt);
        const out = await this.db.doc.send(new BatchGetCommand({ RequestItems: request }));
        found.push(...(out.Responses?.[this.table] ?? []).map(fromItem));
        request = out.UnprocessedKeys as typeof request;
      }
    }
    return found;
  }

  /**
   * Writes finished or historical deploys as they are, 25 to a request
   * (imports, fixtures and the benchmark's seed). Not for new deploys:
   * those go through enqueue, which never overwrites.
   */
  async putMany(deploys: readonly Deploy[]): Promise<void> {
    await this.batchWrite(
      deploys.map((deploy) => ({ PutRequest: { Item: { pk: `SITE#${deploy.siteId}`, sk: `DEPLOY#${deploy.id}`, ...deploy } } })),
    );
  }

  /** Deletes every deploy of a site (after the site itself is gone), 25 to a request. */
  async deleteAllOfSite(siteId: string): Promise<number> {
    const keys = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :deploy)',
      ExpressionAttributeValues: { ':pk': `SITE#${siteId}`, ':deploy': 'DEPLOY#' },
      ProjectionExpression: 'pk, sk',
    });
    await this.batchWrite(keys.map((Key) => ({ DeleteRequest: { Key } })));
    return keys.length;
  }

  private async batchWrite(requests: Array<Record<string, unknown>>): Promise<void> {
    for (let i = 0; i < requests.length; i += 25) {
      let pending: Record<string, unknown[]> | undefined = { [this.table]: requests.slice(i, i + 25) };
      for (let attempt = 0; pending && Object.keys(pending).length; attempt++) {
        if (attempt > 0) await backoff(attempt);
        const out = await this.db.doc.send(new BatchWriteCommand({ RequestItems: pending as never }));
        pending = out.UnprocessedItems as typeof pending;
      }
    }
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

/** DynamoDB hands back unprocessed batch items under load; retry them after a short, growing pause. */
function backoff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
}
