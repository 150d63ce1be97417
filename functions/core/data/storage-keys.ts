/**
 * Storage key pairs: an account's keys for the S3-compatible API, in the
 * accounts table.
 *
 *   AKEY#<accessKeyId> / AKEY   a key pair (secret sealed)   gsi1: ACCOUNT#<id> / AKEY#<accessKeyId>
 *
 * The secret is sealed, not hashed: SigV4 signs with the secret itself, so
 * it must be recoverable. Revoking a pair destroys its sealed secret.
 */
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { SecretSealer } from '../auth/secrets.js';
import { TtlCache } from '../cache.js';
import { newAccessKeyId, newSecretAccessKey } from '../ids.js';
import type { Database } from './dynamo.js';
import { queryAll } from './pages.js';

export interface StorageKeyPair {
  accessKeyId: string;
  accountId: string;
  createdAt: string;
  revokedAt?: string | null;
}

/**
 * Every S3 request reads its access key (so a revocation anywhere takes
 * effect at once), but opening the sealed secret (AES locally, a KMS call in
 * AWS) is remembered for a while, keyed by the sealed value itself.
 */
const OPENED_SECRET_CACHE_MS = 10 * 60_000;

export class StorageKeyStore {
  private readonly openedSecrets = new TtlCache<string, string>(OPENED_SECRET_CACHE_MS);

  constructor(
    private readonly db: Database,
    private readonly sealer: SecretSealer,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /** The key pair's item, its secret sealed; for a transaction that makes the pair along with other things (an account). */
  async item(keyPair: StorageKeyPair, secretAccessKey: string): Promise<Record<string, unknown>> {
    return {
      pk: `AKEY#${keyPair.accessKeyId}`,
      sk: 'AKEY',
      ...keyPair,
      sealedSecret: await this.sealer.seal(secretAccessKey, keyPair.accessKeyId),
      gsi1pk: `ACCOUNT#${keyPair.accountId}`,
      gsi1sk: `AKEY#${keyPair.accessKeyId}`,
    };
  }

  /** The key pair's account and plaintext secret, or undefined for an unknown or revoked key. */
  async get(accessKeyId: string): Promise<{ accountId: string; secretAccessKey: string } | undefined> {
    const item = await this.db.reader.get(this.table, { pk: `AKEY#${accessKeyId}`, sk: 'AKEY' });
    if (!item || item.revokedAt) return undefined;
    const sealed = item.sealedSecret as string;
    const secretAccessKey = await this.openedSecrets.through(`${accessKeyId}:${sealed}`, () => this.sealer.open(sealed, accessKeyId));
    return { accountId: item.accountId as string, secretAccessKey: secretAccessKey! };
  }

  async has(accessKeyId: string): Promise<boolean> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `AKEY#${accessKeyId}`, sk: 'AKEY' }, ProjectionExpression: 'pk' }),
    );
    return out.Item !== undefined;
  }

  /** A new key pair for the account; the secret is returned here and never again. */
  async create(accountId: string): Promise<{ keyPair: StorageKeyPair; secretAccessKey: string }> {
    for (let attempt = 0; ; attempt++) {
      const keyPair: StorageKeyPair = { accessKeyId: newAccessKeyId(), accountId, createdAt: this.now().toISOString() };
      const secretAccessKey = newSecretAccessKey();
      try {
        await this.db.doc.send(
          new PutCommand({
            TableName: this.table,
            Item: await this.item(keyPair, secretAccessKey),
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
        return { keyPair, secretAccessKey };
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException) || attempt >= 3) throw err;
      }
    }
  }

  /** The account's key pairs, revoked ones included, oldest first; never their secrets. */
  async list(accountId: string): Promise<StorageKeyPair[]> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :account AND begins_with(gsi1sk, :akey)',
      ExpressionAttributeValues: { ':account': `ACCOUNT#${accountId}`, ':akey': 'AKEY#' },
    });
    return items
      .map((item) => ({
        accessKeyId: item.accessKeyId as string,
        accountId: item.accountId as string,
        createdAt: item.createdAt as string,
        revokedAt: (item.revokedAt as string | undefined) ?? null,
      }))
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.accessKeyId < b.accessKeyId ? -1 : 1));
  }

  /** Revokes one of the account's key pairs; the pair as it is now, or undefined. */
  async revoke(accountId: string, accessKeyId: string): Promise<StorageKeyPair | undefined> {
    try {
      const out = await this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: `AKEY#${accessKeyId}`, sk: 'AKEY' },
          UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :now) REMOVE sealedSecret',
          ConditionExpression: 'accountId = :account',
          ExpressionAttributeValues: { ':now': this.now().toISOString(), ':account': accountId },
          ReturnValues: 'ALL_NEW',
        }),
      );
      const item = out.Attributes!;
      return { accessKeyId, accountId, createdAt: item.createdAt as string, revokedAt: item.revokedAt as string };
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return undefined;
      throw err;
    }
  }
}
