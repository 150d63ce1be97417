/**
 * Counts of actions in a window, in the accounts table, so a limit holds
 * across every Lambda container and process at once (as sign-in failures
 * do, sign-in-attempts.ts): invitations a team sends, password reset links
 * asked for an e-mail or from an address.
 *
 *   RATE#<action>#<key> / RATE   count, windowStart (ms), expiresAt
 *
 * A window opens with the first action and lasts the limit's seconds; an
 * action is counted only while the count is under the limit, so `take`
 * both asks and counts, in one conditional write. An e-mail is keyed by
 * its hash (never kept as the address of someone who may have no
 * account). `expiresAt` (epoch seconds, the table's time to live) is the
 * window's end; readers ignore an ended window until DynamoDB deletes it.
 */
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import { writtenIf } from './tables.js';

export interface RateLimit {
  /** What is counted (part of the key): `invite`, `reset-email`, `reset-address`. */
  action: string;
  count: number;
  windowSeconds: number;
  /** Keep the key as its SHA-256 (an e-mail). */
  hashKey?: boolean;
}

export class RateLimitStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  private itemKey(limit: RateLimit, key: string) {
    return { pk: `RATE#${limit.action}#${limit.hashKey ? tokenDigest(key) : key}`, sk: 'RATE' };
  }

  /** Counts one action under the limit: 0 when it was counted, else the seconds until the window ends (nothing counted). */
  async take(limit: RateLimit, key: string): Promise<number> {
    const Key = this.itemKey(limit, key);
    for (let attempt = 0; attempt < 5; attempt++) {
      const now = this.now().getTime();
      const cutoff = now - limit.windowSeconds * 1000;
      const counted = await writtenIf(
        this.db.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key,
            UpdateExpression: 'SET #n = #n + :one',
            ConditionExpression: 'windowStart > :cutoff AND #n < :limit',
            ExpressionAttributeNames: { '#n': 'count' },
            ExpressionAttributeValues: { ':one': 1, ':cutoff': cutoff, ':limit': limit.count },
          }),
        ),
      );
      if (counted) return 0;
      const opened = await writtenIf(
        this.db.doc.send(
          new PutCommand({
            TableName: this.table,
            Item: { ...Key, count: 1, windowStart: now, expiresAt: Math.ceil(now / 1000) + limit.windowSeconds },
            ConditionExpression: 'attribute_not_exists(pk) OR windowStart <= :cutoff',
            ExpressionAttributeValues: { ':cutoff': cutoff },
          }),
        ),
      );
      if (opened) return 0;
      // A window is open: at its limit (then say how long), or another request moved it meanwhile (then try again).
      const item = (await this.db.doc.send(new GetCommand({ TableName: this.table, Key, ConsistentRead: true }))).Item;
      if (item && Number(item.windowStart) > cutoff && Number(item.count) >= limit.count)
        return Math.max(1, Math.ceil((Number(item.windowStart) + limit.windowSeconds * 1000 - now) / 1000));
    }
    return 1;
  }
}
