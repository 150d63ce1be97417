/**
 * Lifecycle rules (PutBucketLifecycleConfiguration) and the expiry run's
 * place in each bucket. The rules live on the bucket's item (buckets.ts),
 * read with the bucket; beside them, in the accounts table, one small item
 * per bucket that has rules tells the run (core/storage/lifecycle.ts) where
 * to go:
 *
 *   #LIFECYCLE / <bucket>   token (a new one at every Put), cursor (where the pass stopped), doneDay, touchedAt
 *
 * The item is written in the same transaction as the rules, so a bucket
 * with rules always has one. A bucket deleted (or made again) leaves it
 * behind: the run finds no rules on the bucket and drops it. Every write
 * of the run is conditioned on the token, so a configuration put while a
 * pass is under way starts a new pass instead of being overwritten with
 * the old one's cursor.
 */
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { queryEach } from './pages.js';
import type { Database } from './dynamo.js';

/** One tag, as on objects and buckets (buckets.ts has the same shape; kept here so this file imports nothing). */
export interface LifecycleTag {
  key: string;
  value: string;
}

/** A rule's `<Filter>` as it was given, so GetBucketLifecycleConfiguration answers the same shape. */
export interface LifecycleFilter {
  prefix?: string;
  tag?: LifecycleTag;
  and?: { prefix?: string; tags: LifecycleTag[]; sizeGreaterThan?: number; sizeLessThan?: number };
  sizeGreaterThan?: number;
  sizeLessThan?: number;
}

export interface LifecycleRule {
  id: string;
  status: 'Enabled' | 'Disabled';
  /** The deprecated rule-level `<Prefix>` (then there is no filter). */
  prefix?: string;
  filter?: LifecycleFilter;
  expiration?: { days?: number; date?: string; expiredObjectDeleteMarker?: boolean };
  noncurrentExpiration?: { noncurrentDays: number; newerNoncurrentVersions?: number };
  abortAfterDays?: number;
}

export interface BucketLifecycle {
  rules: LifecycleRule[];
  /** `x-amz-transition-default-minimum-object-size`, kept and answered (Cairn has no transitions for it to change). */
  minimumObjectSize: string;
}

/** Where a bucket's pass stopped: in its versions (after this key's version) or in its multipart uploads. */
export type LifecycleCursor =
  | {
      phase: 'versions';
      key: string;
      versionId: string;
      /** The last version read's time: when the next (older) version of the same key became noncurrent. */
      newerModified: string;
      /** Noncurrent versions of this key read so far (NewerNoncurrentVersions keeps the newest ones). */
      noncurrent: number;
    }
  | { phase: 'uploads'; key: string; uploadId: string };

export interface LifecycleRun {
  bucket: string;
  token: string;
  cursor?: LifecycleCursor;
  /** The UTC day (YYYY-MM-DD) of the last finished pass: the next starts on a later day. */
  doneDay?: string;
  /** When the run last worked on this bucket (ms): the buckets waited on longest go first. */
  touchedAt?: number;
}

const PK = '#LIFECYCLE';

/** The run item as PutBucketLifecycleConfiguration writes it: a new token, no cursor, no pass done. */
export function lifecycleRunItem(tableName: string, bucket: string, token: string) {
  return { Put: { TableName: tableName, Item: { pk: PK, sk: bucket, token } } };
}

export function lifecycleRunKey(bucket: string) {
  return { pk: PK, sk: bucket };
}

export class LifecycleRuns {
  constructor(private readonly db: Database) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /** Every bucket with rules (and those whose rules went, until the run drops them). */
  async *all(): AsyncGenerator<LifecycleRun> {
    for await (const item of queryEach(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': PK },
      ConsistentRead: true,
    })) {
      yield {
        bucket: item.sk as string,
        token: String(item.token ?? ''),
        ...(item.cursor ? { cursor: item.cursor as LifecycleCursor } : {}),
        ...(typeof item.doneDay === 'string' ? { doneDay: item.doneDay } : {}),
        ...(typeof item.touchedAt === 'number' ? { touchedAt: item.touchedAt } : {}),
      };
    }
  }

  /** Saves where the pass stopped (no cursor and a day: the pass is done); false when the rules changed meanwhile. */
  async save(run: LifecycleRun): Promise<boolean> {
    const values: Record<string, unknown> = { ':t': run.token, ':at': run.touchedAt ?? Date.now() };
    const set = ['touchedAt = :at'];
    const remove: string[] = [];
    if (run.cursor) {
      set.push('#cursor = :c');
      values[':c'] = run.cursor;
    } else remove.push('#cursor');
    if (run.doneDay) {
      set.push('doneDay = :d');
      values[':d'] = run.doneDay;
    }
    try {
      await this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: lifecycleRunKey(run.bucket),
          UpdateExpression: `SET ${set.join(', ')}${remove.length ? ` REMOVE ${remove.join(', ')}` : ''}`,
          ConditionExpression: 'attribute_exists(pk) AND #token = :t',
          // Both are DynamoDB reserved words.
          ExpressionAttributeNames: { '#token': 'token', '#cursor': 'cursor' },
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return false;
      throw err;
    }
  }

  /** Drops the item of a bucket that has no rules any more (unless they were put again since it was read). */
  async drop(run: Pick<LifecycleRun, 'bucket' | 'token'>): Promise<void> {
    try {
      await this.db.doc.send(
        new DeleteCommand({
          TableName: this.table,
          Key: lifecycleRunKey(run.bucket),
          ConditionExpression: '#token = :t',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':t': run.token },
        }),
      );
    } catch (err) {
      if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    }
  }
}
