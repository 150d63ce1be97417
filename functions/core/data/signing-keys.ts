/**
 * Keys the service signs its own tokens with (pagination tokens, say), in
 * the accounts table:
 *
 *   SIGNINGKEY#<purpose> / SIGNINGKEY  a random key, sealed like the storage secrets
 */
import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { SecretSealer } from '../auth/secrets.js';
import type { Database } from './dynamo.js';

export class SigningKeyStore {
  private readonly opened = new Map<string, Promise<Buffer>>();

  constructor(
    private readonly db: Database,
    private readonly sealer: SecretSealer,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /**
   * A 32-byte key for `purpose`, the same in every process: made once at
   * random, stored sealed (the configured key locally, KMS in AWS), opened
   * once per process.
   */
  get(purpose: string): Promise<Buffer> {
    let key = this.opened.get(purpose);
    if (!key) {
      key = this.load(purpose);
      key.catch(() => this.opened.delete(purpose));
      this.opened.set(purpose, key);
    }
    return key;
  }

  private async load(purpose: string): Promise<Buffer> {
    const Key = { pk: `SIGNINGKEY#${purpose}`, sk: 'SIGNINGKEY' };
    const context = `signing-key:${purpose}`;
    for (let attempt = 0; ; attempt++) {
      const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key, ConsistentRead: true }));
      if (out.Item) return Buffer.from(await this.sealer.open(out.Item.sealedKey as string, context), 'base64');
      const fresh = randomBytes(32);
      try {
        await this.db.doc.send(
          new PutCommand({
            TableName: this.table,
            Item: { ...Key, sealedKey: await this.sealer.seal(fresh.toString('base64'), context), createdAt: this.now().toISOString() },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
        return fresh;
      } catch (err) {
        // Another process made it first: use theirs.
        if (!(err instanceof ConditionalCheckFailedException) || attempt >= 2) throw err;
      }
    }
  }
}
