/**
 * Counts of actions in a window, in the accounts table, so a limit holds
 * across every Lambda container and process at once (a count in memory
 * would be one per container). One counter serves every family of counts:
 *
 *   RATE#<action>#<key> / RATE                  count, windowStart (ms), expiresAt
 *       invitations a team sends, reset links asked for an e-mail or from an address (this file's store)
 *   SIGNIN#<email|address>#<key> / SIGNIN       failures, windowStart, expiresAt
 *       failed sign-ins (sign-in-attempts.ts)
 *   DEVICEGUESS#<account|address|start>#<key> / DEVICEGUESS   count, windowStart, expiresAt
 *       wrong device user codes, new device grants (device-grants.ts)
 *
 * The families differ only in their names and in the attribute that holds
 * the count (sign-in failures were kept as `failures` before this counter
 * served them, and still are, so items written before read the same).
 *
 * A window opens with the first action and lasts the limit's seconds. An
 * action is counted in one conditional write, so actions at once in many
 * processes are each counted: `take` counts one only while the count is
 * under the limit (it both asks and counts); `add` counts one whatever the
 * count (something that happened, such as a failed sign-in, after asking
 * `retryAfter`). A key kept as its hash (`hashKey`: an e-mail) is never
 * kept as the address of someone who may have no account. `expiresAt`
 * (epoch seconds, the table's time to live) is the window's end: DynamoDB
 * deletes the count some time after, and readers ignore an ended window
 * until then.
 */
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import { writtenIf } from './tables.js';

export interface RateLimit {
  /** What is counted (part of the key): `invite`, `reset-email`, `reset-address`, `email`, `start`. */
  action: string;
  count: number;
  windowSeconds: number;
  /** Keep the key as its SHA-256 (an e-mail). */
  hashKey?: boolean;
}

/** A family of counts: its items' sort key (and partition keys' first part), and the attribute the count is kept in. */
export interface CounterFamily {
  name: string;
  countAttribute: string;
}

/** One key counted under one limit. */
export interface Counted {
  limit: RateLimit;
  key: string;
}

/** Conditional writes a count may lose to other requests moving its window, before it gives up. */
const ATTEMPTS = 5;

export class WindowedCounter {
  constructor(
    private readonly db: Database,
    private readonly family: CounterFamily,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  private itemKey({ limit, key }: Counted) {
    const { name } = this.family;
    return { pk: `${name}#${limit.action}#${limit.hashKey ? tokenDigest(key) : key}`, sk: name };
  }

  /** Counts one action under the limit: 0 when it was counted, else the seconds until the window ends (nothing counted). */
  async take(limit: RateLimit, key: string): Promise<number> {
    return this.countOne({ limit, key }, true);
  }

  /** Counts one against each, whatever its count: in its open window, or in a new one. */
  async add(counts: readonly Counted[]): Promise<void> {
    await Promise.all(counts.map((counted) => this.countOne(counted, false)));
  }

  /** Seconds until these may be counted again (the longest wait among them, for those at their limit), or 0 when all may now. */
  async retryAfter(counts: readonly Counted[]): Promise<number> {
    const now = this.now().getTime();
    // Asked for in one turn of the event loop, the reads go out together (item-reader.ts).
    const items = await Promise.all(counts.map((counted) => this.db.reader.get(this.table, this.itemKey(counted))));
    let wait = 0;
    items.forEach((item, i) => {
      if (!item) return;
      const { limit } = counts[i]!;
      const end = Number(item.windowStart) + limit.windowSeconds * 1000;
      if (end > now && Number(item[this.family.countAttribute]) >= limit.count) wait = Math.max(wait, Math.ceil((end - now) / 1000));
    });
    return wait;
  }

  /** Forgets a key's count. */
  async clear(counted: Counted): Promise<void> {
    await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: this.itemKey(counted) }));
  }

  /**
   * Counts one in the open window, or opens a new one. `capped`: only
   * while under the limit; then the answer is 0 when counted, else the
   * seconds until the window ends. Uncapped, the answer is 0 (or 1 when
   * every attempt lost to other requests, which is then not counted).
   */
  private async countOne(counted: Counted, capped: boolean): Promise<number> {
    const { limit } = counted;
    const Key = this.itemKey(counted);
    const ExpressionAttributeNames = { '#n': this.family.countAttribute };
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const now = this.now().getTime();
      const cutoff = now - limit.windowSeconds * 1000;
      const inWindow = await writtenIf(
        this.db.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key,
            UpdateExpression: 'SET #n = #n + :one',
            ConditionExpression: capped ? 'windowStart > :cutoff AND #n < :limit' : 'windowStart > :cutoff',
            ExpressionAttributeNames,
            ExpressionAttributeValues: { ':one': 1, ':cutoff': cutoff, ...(capped ? { ':limit': limit.count } : {}) },
          }),
        ),
      );
      if (inWindow) return 0;
      // No window open (or, capped, one at its limit): open one, unless another request opened it meanwhile.
      const opened = await writtenIf(
        this.db.doc.send(
          new PutCommand({
            TableName: this.table,
            Item: { ...Key, [this.family.countAttribute]: 1, windowStart: now, expiresAt: Math.ceil(now / 1000) + limit.windowSeconds },
            ConditionExpression: 'attribute_not_exists(pk) OR windowStart <= :cutoff',
            ExpressionAttributeValues: { ':cutoff': cutoff },
          }),
        ),
      );
      if (opened) return 0;
      if (!capped) continue;
      // A window is open: at its limit (then say how long), or another request moved it meanwhile (then try again).
      const item = (await this.db.doc.send(new GetCommand({ TableName: this.table, Key, ConsistentRead: true }))).Item;
      if (item && Number(item.windowStart) > cutoff && Number(item[this.family.countAttribute]) >= limit.count)
        return Math.max(1, Math.ceil((Number(item.windowStart) + limit.windowSeconds * 1000 - now) / 1000));
    }
    return 1;
  }
}

/** Actions limited per key: invitations a team sends, reset links asked for. */
export class RateLimitStore extends WindowedCounter {
  constructor(db: Database, now?: () => Date) {
    super(db, { name: 'RATE', countAttribute: 'count' }, now);
  }
}
