/**
 * Deliveries of deploy notifications, in the deploys table under their site:
 *
 *   SITE#<siteId> / NOTIFY#<urlId>#<deliveryId>
 *       deployId, event, body (the exact JSON sent), status, attempt, at,
 *       statusCode, error, nextAttemptAt, expiresAt (the table's TTL)
 *       gsi1: NOTIFY / <nextAttemptAt>#<deliveryId> while PENDING
 *
 * The record is the outbox: a delivery is written PENDING before anyone
 * tries to send it, so a process that dies meanwhile loses nothing (the
 * local server's loop finds it by gsi1; in AWS its queue message comes back).
 * The body is fixed when the event happens; each attempt signs it anew.
 * Under the URL's own prefix, newest last, so a URL's last deliveries are
 * one short query.
 */
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { newSortableId } from '../ids.js';
import type { Database } from './dynamo.js';
import type { DeployEvent } from './notification-urls.js';
import { DELIVERY_TTL_ATTRIBUTE } from './hook-deliveries.js';

/** Deliveries are kept for a week, then DynamoDB's TTL removes them. */
export const NOTIFICATION_TTL_SECONDS = 7 * 24 * 3600;

export type NotificationDeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED';

export interface NotificationDelivery {
  id: string;
  siteId: string;
  urlId: string;
  deployId: string;
  event: DeployEvent;
  body: string;
  status: NotificationDeliveryStatus;
  /** Attempts made so far. */
  attempt: number;
  createdAt: string;
  /** When the last attempt was made (createdAt before the first). */
  at: string;
  statusCode?: number | null;
  error?: string | null;
  /** When the next attempt is due, while PENDING. */
  nextAttemptAt?: string | null;
}

/** Where a delivery is, without its body: what a queue message names. */
export interface DeliveryRef {
  siteId: string;
  urlId: string;
  deliveryId: string;
}

const PENDING_INDEX_PK = 'NOTIFY';

export class NotificationDeliveryStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.deploys;
  }

  private key(ref: DeliveryRef) {
    return { pk: `SITE#${ref.siteId}`, sk: `NOTIFY#${ref.urlId}#${ref.deliveryId}` };
  }

  async create(init: { siteId: string; urlId: string; deployId: string; event: DeployEvent; body: string }): Promise<NotificationDelivery> {
    const now = this.now();
    const id = newSortableId(now.getTime());
    const delivery: NotificationDelivery = {
      id,
      ...init,
      status: 'PENDING',
      attempt: 0,
      createdAt: now.toISOString(),
      at: now.toISOString(),
      nextAttemptAt: now.toISOString(),
    };
    await this.db.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          ...this.key({ siteId: init.siteId, urlId: init.urlId, deliveryId: id }),
          ...delivery,
          gsi1pk: PENDING_INDEX_PK,
          gsi1sk: `${delivery.nextAttemptAt}#${id}`,
          [DELIVERY_TTL_ATTRIBUTE]: Math.floor(now.getTime() / 1000) + NOTIFICATION_TTL_SECONDS,
        },
      }),
    );
    return delivery;
  }

  async get(ref: DeliveryRef): Promise<NotificationDelivery | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: this.key(ref), ConsistentRead: true }));
    return out.Item ? deliveryOf(out.Item) : undefined;
  }

  /** Pending deliveries due by `now`, the longest due first. */
  async due(now: Date, limit: number): Promise<NotificationDelivery[]> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk <= :due',
        ExpressionAttributeValues: { ':pk': PENDING_INDEX_PK, ':due': `${now.toISOString()}#~` },
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map(deliveryOf);
  }

  /**
   * Records one attempt: DELIVERED, PENDING again until `retryAt`, or FAILED
   * (given up) when `retryAt` is null. Undefined when another attempt was
   * recorded meanwhile (a duplicate queue message): the caller drops it.
   */
  async recordAttempt(
    delivery: NotificationDelivery,
    result: { statusCode?: number; error?: string; delivered: boolean; retryAt: Date | null },
  ): Promise<NotificationDelivery | undefined> {
    const at = this.now().toISOString();
    const status: NotificationDeliveryStatus = result.delivered ? 'DELIVERED' : result.retryAt ? 'PENDING' : 'FAILED';
    const next = status === 'PENDING' ? result.retryAt!.toISOString() : null;
    const values: Record<string, unknown> = {
      ':attempt': delivery.attempt + 1,
      ':prev': delivery.attempt,
      ':pending': 'PENDING',
      ':status': status,
      ':at': at,
      ':code': result.statusCode ?? null,
      ':error': result.error ?? null,
      ':next': next,
    };
    let update = 'SET attempt = :attempt, #status = :status, #at = :at, statusCode = :code, #error = :error, nextAttemptAt = :next';
    if (next) {
      update += ', gsi1pk = :gsi1pk, gsi1sk = :gsi1sk';
      values[':gsi1pk'] = PENDING_INDEX_PK;
      values[':gsi1sk'] = `${next}#${delivery.id}`;
    } else update += ' REMOVE gsi1pk, gsi1sk';
    try {
      const out = await this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: this.key({ siteId: delivery.siteId, urlId: delivery.urlId, deliveryId: delivery.id }),
          UpdateExpression: update,
          ConditionExpression: '#status = :pending AND attempt = :prev',
          ExpressionAttributeNames: { '#status': 'status', '#at': 'at', '#error': 'error' },
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      return deliveryOf(out.Attributes!);
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return undefined;
      throw err;
    }
  }

  /** A URL's deliveries, newest first. */
  async listOfUrl(siteId: string, urlId: string, limit: number): Promise<NotificationDelivery[]> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': `SITE#${siteId}`, ':prefix': `NOTIFY#${urlId}#` },
        ScanIndexForward: false,
        Limit: limit,
        ConsistentRead: true,
      }),
    );
    return (out.Items ?? []).map(deliveryOf);
  }
}

function deliveryOf(item: Record<string, unknown>): NotificationDelivery {
  return {
    id: item.id as string,
    siteId: item.siteId as string,
    urlId: item.urlId as string,
    deployId: item.deployId as string,
    event: item.event as DeployEvent,
    body: item.body as string,
    status: item.status as NotificationDeliveryStatus,
    attempt: Number(item.attempt ?? 0),
    createdAt: item.createdAt as string,
    at: (item.at as string | undefined) ?? (item.createdAt as string),
    statusCode: typeof item.statusCode === 'number' ? item.statusCode : null,
    error: typeof item.error === 'string' ? item.error : null,
    nextAttemptAt: typeof item.nextAttemptAt === 'string' ? item.nextAttemptAt : null,
  };
}
