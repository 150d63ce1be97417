/**
 * Failed sign-ins, counted per e-mail and per client address, in the
 * accounts table, so that the limit holds across every Lambda container
 * and process at once (a count in memory would be one per container).
 *
 *   SIGNIN#email#<sha256 of the e-mail> / SIGNIN   failures, windowStart (ms), expiresAt
 *   SIGNIN#address#<address> / SIGNIN              the same
 *
 * A window opens with a failure and lasts SIGN_IN_LIMITS.windowSeconds;
 * once a key has its limit of failures in it, sign-in with that key is
 * refused for the rest of the window (the answer says how long, as
 * Retry-After), whatever the password. The e-mail is counted whether or
 * not an account has it, so being refused says nothing of whether it
 * exists; it is kept as a hash, not as an address of someone who may
 * never have signed up. `expiresAt` (epoch seconds, the table's time to
 * live) is the window's end: DynamoDB deletes the count some time after,
 * and readers ignore an ended window until then.
 */
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import { writtenIf } from './tables.js';

export const SIGN_IN_LIMITS = {
  windowSeconds: 15 * 60,
  /** Failures per e-mail in a window: someone guessing one person's password. */
  perEmail: 10,
  /** Failures per client address in a window: someone trying many e-mails (more than one person may share an address). */
  perAddress: 30,
};

/** What a count is kept by. */
export interface AttemptKey {
  scope: 'email' | 'address';
  value: string;
}

const limitOf = (key: AttemptKey) => (key.scope === 'email' ? SIGN_IN_LIMITS.perEmail : SIGN_IN_LIMITS.perAddress);

export class SignInAttemptStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  private itemKey(key: AttemptKey) {
    const value = key.scope === 'email' ? tokenDigest(key.value) : key.value;
    return { pk: `SIGNIN#${key.scope}#${value}`, sk: 'SIGNIN' };
  }

  /** Seconds until sign-in is allowed again for these keys (the longest wait among them), or 0 when it is now. */
  async retryAfter(keys: AttemptKey[]): Promise<number> {
    const now = this.now().getTime();
    const items = await Promise.all(keys.map((key) => this.db.reader.get(this.table, this.itemKey(key))));
    let wait = 0;
    items.forEach((item, i) => {
      if (!item) return;
      const end = Number(item.windowStart) + SIGN_IN_LIMITS.windowSeconds * 1000;
      if (end > now && Number(item.failures) >= limitOf(keys[i]!)) wait = Math.max(wait, Math.ceil((end - now) / 1000));
    });
    return wait;
  }

  /** Counts a failure against each key: in its open window, or in a new one. */
  async fail(keys: AttemptKey[]): Promise<void> {
    await Promise.all(keys.map((key) => this.failOne(key)));
  }

  private async failOne(key: AttemptKey): Promise<void> {
    const Key = this.itemKey(key);
    for (let attempt = 0; attempt < 5; attempt++) {
      const now = this.now().getTime();
      const cutoff = now - SIGN_IN_LIMITS.windowSeconds * 1000;
      const counted = await writtenIf(
        this.db.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key,
            UpdateExpression: 'SET failures = failures + :one',
            ConditionExpression: 'windowStart > :cutoff',
            ExpressionAttributeValues: { ':one': 1, ':cutoff': cutoff },
          }),
        ),
      );
      if (counted) return;
      // No window open: open one, unless another request opened it meanwhile (then count in that one).
      const opened = await writtenIf(
        this.db.doc.send(
          new PutCommand({
            TableName: this.table,
            Item: { ...Key, failures: 1, windowStart: now, expiresAt: Math.ceil(now / 1000) + SIGN_IN_LIMITS.windowSeconds },
            ConditionExpression: 'attribute_not_exists(pk) OR windowStart <= :cutoff',
            ExpressionAttributeValues: { ':cutoff': cutoff },
          }),
        ),
      );
      if (opened) return;
    }
  }

  /** Forgets the failures of a key (an e-mail, after its person signed in). */
  async clear(key: AttemptKey): Promise<void> {
    await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: this.itemKey(key) }));
  }
}
