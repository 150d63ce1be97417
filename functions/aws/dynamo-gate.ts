/**
 * The upload gate across many processes (Lambda instances in AWS), in the
 * objects table. Each upload announces itself with a marker item, then reads
 * the collection lock; a collection takes the lock, then reads the markers.
 * Both reads are strongly consistent, so of an upload and a collection that
 * overlap at least one sees the other and steps back: a collection never
 * runs while an upload is between import and commit.
 *
 *   #INFLIGHT / <id>   an upload in flight      expiresAt: when a crashed one stops counting
 *   #GCLOCK / LOCK     the collection lock      expiresAt: likewise
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import type { Database } from '../core/data/dynamo.js';
import type { Logger } from '../core/logger.js';
import { GateBusyError, type UploadGate } from '../core/ports/upload-gate.js';
import { sleep } from '../core/retry.js';

/** An upload counts as in flight for at most this long (Lambda's 15-minute limit). */
const UPLOAD_TTL_MS = 15 * 60 * 1000;
/** A collection holds the lock for at most this long. */
const LOCK_TTL_MS = 5 * 60 * 1000;

export class DynamoUploadGate implements UploadGate {
  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
    private readonly options: { waitMs?: number; pollMs?: number } = {},
  ) {}

  private get table() {
    return this.db.tables.objects;
  }

  private async lockHeld(): Promise<boolean> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: { pk: '#GCLOCK', sk: 'LOCK' }, ConsistentRead: true }));
    return out.Item !== undefined && (out.Item.expiresAt as number) > Date.now();
  }

  async enterShared(): Promise<() => void> {
    const id = `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
    const key = { pk: '#INFLIGHT', sk: id };
    const deadline = Date.now() + (this.options.waitMs ?? 60_000);
    for (;;) {
      await this.db.doc.send(new PutCommand({ TableName: this.table, Item: { ...key, expiresAt: Date.now() + UPLOAD_TTL_MS } }));
      if (!(await this.lockHeld())) break;
      // A collection is running: step back and wait for it.
      await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: key }));
      if (Date.now() > deadline) throw new GateBusyError('garbage collection is holding the upload gate');
      await sleep(this.options.pollMs ?? 250);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: key })).catch((err: unknown) => {
        this.logger.warn('could not clear an upload marker; it expires by itself', { err });
      });
    };
  }

  async withExclusive<T>(fn: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const holder = randomBytes(8).toString('hex');
    try {
      await this.db.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { pk: '#GCLOCK', sk: 'LOCK', holder, expiresAt: now + LOCK_TTL_MS },
          ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
          ExpressionAttributeValues: { ':now': now },
        }),
      );
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') throw new GateBusyError('another collection holds the lock');
      throw err;
    }
    try {
      const inflight = await this.db.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk',
          FilterExpression: 'expiresAt > :now',
          ExpressionAttributeValues: { ':pk': '#INFLIGHT', ':now': Date.now() },
          ConsistentRead: true,
          Limit: 100,
        }),
      );
      if ((inflight.Items?.length ?? 0) > 0 || inflight.LastEvaluatedKey) throw new GateBusyError('uploads are in flight');
      return await fn();
    } finally {
      await this.db.doc
        .send(
          new DeleteCommand({
            TableName: this.table,
            Key: { pk: '#GCLOCK', sk: 'LOCK' },
            ConditionExpression: 'holder = :h',
            ExpressionAttributeValues: { ':h': holder },
          }),
        )
        .catch(() => {});
    }
  }

  /** Not tracked across processes; 0 means "unknown here". */
  get uploadsInFlight(): number {
    return 0;
  }
}
