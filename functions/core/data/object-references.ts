/**
 * The bookkeeping that keeps blocks exactly as long as something names
 * them, in the objects table beside the object records (data/objects.ts):
 *
 *   #REF#<cidV0> / <holder>        "this holder references this CID"
 *   #GC / <cidV0>                  a CID that lost a reference: a collection candidate
 *   #GCQ / <cidV0>                 a candidate collection could not collect, set aside for the integrity check
 *
 * Holders are objects (`<bucket>/<key>`, see objectHolder in objects.ts),
 * multipart parts, deploys, previews and import pins; every store that
 * writes a record naming a CID writes its reference item (cidReference) in
 * the same transaction, and a candidate (candidateItem) when a CID loses
 * one. Only collection (storage/collect.ts) and the integrity check
 * (storage/fsck.ts) read these items back, through ObjectReferences.
 */
import { DeleteCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { uniqueToken } from '../ids.js';
import { queryAll, scanEach } from './pages.js';
import type { Database } from './dynamo.js';

/**
 * The key of the item saying "`holder` references this CID". Objects hold
 * theirs as `<bucket>/<key>` (objectHolder); other holders (multipart parts)
 * use names starting with '#', which bucket names cannot.
 */
export function cidReference(cid: string, holder: string): { pk: string; sk: string } {
  return { pk: `#REF#${cid}`, sk: holder };
}

/** The item making a CID a collection candidate (re-putting it refreshes `at`). */
export function candidateItem(cid: string) {
  return { pk: '#GC', sk: cid, at: `${new Date().toISOString()}#${uniqueToken()}` };
}

/** Collection's and the integrity check's view of the references and candidates. */
export class ObjectReferences {
  constructor(private readonly db: Database) {}

  private get table() {
    return this.db.tables.objects;
  }

  /** Whether any holder references the CID (strongly consistent). */
  async isReferenced(cid: string): Promise<boolean> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `#REF#${cid}` },
        Limit: 1,
        ConsistentRead: true,
        ProjectionExpression: 'pk',
      }),
    );
    return (out.Items?.length ?? 0) > 0;
  }

  /** Every CID some holder references, with how many holders (a full scan). */
  async referencedCids(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for await (const item of scanEach(this.db, {
      TableName: this.table,
      FilterExpression: 'begins_with(pk, :ref)',
      ExpressionAttributeValues: { ':ref': '#REF#' },
      ConsistentRead: true,
    })) {
      const cid = (item.pk as string).slice('#REF#'.length);
      out.set(cid, (out.get(cid) ?? 0) + 1);
    }
    return out;
  }

  /** Up to `limit` collection candidates, oldest CIDs first by name. */
  async candidates(limit: number): Promise<Array<{ cid: string; at: string }>> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': '#GC' },
        Limit: limit,
        ConsistentRead: true,
      }),
    );
    return (out.Items ?? []).map((i) => ({ cid: i.sk as string, at: i.at as string }));
  }

  /** Removes a candidate unless it was re-added since `at`. */
  async dropCandidate(cid: string, at: string): Promise<void> {
    await this.db.doc
      .send(
        new DeleteCommand({
          TableName: this.table,
          Key: { pk: '#GC', sk: cid },
          ConditionExpression: '#at = :at',
          ExpressionAttributeNames: { '#at': 'at' },
          ExpressionAttributeValues: { ':at': at },
        }),
      )
      .catch((err: Error) => {
        if (err.name !== 'ConditionalCheckFailedException') throw err;
      });
  }

  /**
   * Sets a candidate aside: collection could not collect it (a block of its
   * DAG is missing or unreadable), and trying again every pass would only
   * fail again. The integrity check looks at it once the storage is repaired.
   */
  async quarantineCandidate(cid: string, at: string, reason: string): Promise<void> {
    try {
      await this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: this.table, Item: { pk: '#GCQ', sk: cid, reason, at: new Date().toISOString() } } },
            {
              Delete: {
                TableName: this.table,
                Key: { pk: '#GC', sk: cid },
                ConditionExpression: '#at = :at',
                ExpressionAttributeNames: { '#at': 'at' },
                ExpressionAttributeValues: { ':at': at },
              },
            },
          ],
        }),
      );
    } catch (err) {
      // Re-added since it was read: it stays a candidate, and is tried again.
      if (!(err instanceof TransactionCanceledException)) throw err;
    }
  }

  /** The candidates collection set aside. */
  async quarantined(): Promise<Array<{ cid: string; reason: string; at: string }>> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': '#GCQ' },
      ConsistentRead: true,
    });
    return items.map((i) => ({ cid: i.sk as string, reason: i.reason as string, at: i.at as string }));
  }

  /** Makes a set-aside candidate a candidate again. */
  async requeueQuarantined(cid: string): Promise<void> {
    await this.db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: this.table, Item: candidateItem(cid) } },
          { Delete: { TableName: this.table, Key: { pk: '#GCQ', sk: cid } } },
        ],
      }),
    );
  }
}
