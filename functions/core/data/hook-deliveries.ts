/**
 * Webhook deliveries already taken, in the deploys table under their site:
 *
 *   SITE#<siteId> / DELIVERY#<deliveryId>   outcome, expiresAt (epoch seconds: the table's TTL attribute)
 *
 * A git host redelivers an event it thinks was lost (and a person can press
 * "Redeliver"): the delivery id is claimed with a conditional put before
 * anything is done, so of two deliveries of the same id, even at the same
 * moment, exactly one acts. An expired record counts as absent even before
 * DynamoDB's TTL sweep removes it (the local database never sweeps).
 */
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Database } from './dynamo.js';
import { TABLES } from './tables.js';

/** How long a delivery id is remembered: GitHub and GitLab redeliver within days, not weeks. */
export const DELIVERY_TTL_SECONDS = 7 * 24 * 3600;

/** The deploys table's TTL attribute (tables.ts; lib/data.ts enables it). */
export const DELIVERY_TTL_ATTRIBUTE = TABLES.find((t) => t.name === 'deploys')!.ttlAttribute!;

export interface DeliveryOutcome {
  deployId?: string;
  ignored?: string;
}

export class HookDeliveryStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.deploys;
  }

  private key(siteId: string, deliveryId: string) {
    return { pk: `SITE#${siteId}`, sk: `DELIVERY#${deliveryId}` };
  }

  /**
   * Claims the delivery id for this request: true when it was not seen
   * before (the caller acts), false when another request has it (what it
   * did is in `previous`).
   */
  async claim(siteId: string, deliveryId: string): Promise<{ claimed: true } | { claimed: false; previous: DeliveryOutcome }> {
    const nowSeconds = Math.floor(this.now().getTime() / 1000);
    try {
      await this.db.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            ...this.key(siteId, deliveryId),
            receivedAt: this.now().toISOString(),
            [DELIVERY_TTL_ATTRIBUTE]: nowSeconds + DELIVERY_TTL_SECONDS,
          },
          ConditionExpression: 'attribute_not_exists(pk) OR #ttl < :now',
          ExpressionAttributeNames: { '#ttl': DELIVERY_TTL_ATTRIBUTE },
          ExpressionAttributeValues: { ':now': nowSeconds },
        }),
      );
      return { claimed: true };
    } catch (err) {
      if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
      const out = await this.db.doc.send(
        new GetCommand({ TableName: this.table, Key: this.key(siteId, deliveryId), ConsistentRead: true }),
      );
      const item = out.Item ?? {};
      const previous: DeliveryOutcome = {};
      if (typeof item.deployId === 'string') previous.deployId = item.deployId;
      if (typeof item.ignored === 'string') previous.ignored = item.ignored;
      return { claimed: false, previous };
    }
  }

  /** What the claimed delivery led to, for the answer to its repeats. */
  async record(siteId: string, deliveryId: string, outcome: DeliveryOutcome): Promise<void> {
    const set = Object.entries(outcome).filter(([, v]) => typeof v === 'string');
    if (set.length === 0) return;
    await this.db.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: this.key(siteId, deliveryId),
        UpdateExpression: `SET ${set.map(([n]) => `#${n} = :${n}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(set.map(([n]) => [`#${n}`, n])),
        ExpressionAttributeValues: Object.fromEntries(set.map(([n, v]) => [`:${n}`, v])),
      }),
    );
  }

  /** Lets the id go again (acting on it failed, so a redelivery should act). */
  async release(siteId: string, deliveryId: string): Promise<void> {
    await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: this.key(siteId, deliveryId) }));
  }
}
