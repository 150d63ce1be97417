/**
 * Accounts (people who hold storage key pairs and buckets), teams (which own
 * sites and hosting API keys) and buckets, in the accounts table.
 *
 *   ACCOUNT#<id> / ACCOUNT          the account
 *   ACCOUNTNAME#<name> / ACCOUNTNAME  reserves the account's unique name
 *   AKEY#<accessKeyId> / AKEY       a storage key pair (secret sealed)    gsi1: ACCOUNT#<id> / AKEY#<keyId>
 *   TEAM#<id> / TEAM                a team
 *   TEAM#<id> / MEMBER#<accountId>  membership                           gsi1: ACCOUNT#<id> / TEAM#<teamId>
 *   TOKEN#<sha256> / TOKEN          a hosting API key (hash only)        gsi1: TEAM#<id> / TOKEN#<tokenId>
 *   BUCKET#<name> / BUCKET          a bucket: see buckets.ts
 */
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { SecretSealer } from '../auth/secrets.js';
import { newId, tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import { bucketItem } from './buckets.js';

export interface Account {
  id: string;
  name: string;
  defaultBucket: string;
  defaultTeamId: string;
  createdAt: string;
}

export interface Team {
  id: string;
  name: string;
  createdAt: string;
}

export interface NewAccount {
  name: string;
  accessKeyId: string;
  secretAccessKey: string;
  apiToken: string;
  /** Defaults to `<name>-bucket`. */
  bucketName?: string;
}

export class ConflictError extends Error {
  override name = 'ConflictError';
}

export class AccountStore {
  constructor(
    private readonly db: Database,
    private readonly sealer: SecretSealer,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /**
   * Creates an account with its default team, default bucket, one storage
   * key pair and one team API key, all or nothing.
   */
  async createAccount(input: NewAccount): Promise<{ account: Account; team: Team }> {
    const createdAt = this.now().toISOString();
    const accountId = newId();
    const teamId = newId();
    const bucket = input.bucketName ?? `${input.name}-bucket`;
    const account: Account = { id: accountId, name: input.name, defaultBucket: bucket, defaultTeamId: teamId, createdAt };
    const team: Team = { id: teamId, name: input.name, createdAt };
    const sealed = await this.sealer.seal(input.secretAccessKey, input.accessKeyId);
    const put = (Item: Record<string, unknown>) => ({
      Put: { TableName: this.table, Item, ConditionExpression: 'attribute_not_exists(pk)' },
    });
    try {
      await this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            put({ pk: `ACCOUNT#${accountId}`, sk: 'ACCOUNT', ...account }),
            put({ pk: `ACCOUNTNAME#${input.name}`, sk: 'ACCOUNTNAME', accountId }),
            put({
              pk: `AKEY#${input.accessKeyId}`,
              sk: 'AKEY',
              accessKeyId: input.accessKeyId,
              accountId,
              sealedSecret: sealed,
              createdAt,
              gsi1pk: `ACCOUNT#${accountId}`,
              gsi1sk: `AKEY#${input.accessKeyId}`,
            }),
            put({ pk: `TEAM#${teamId}`, sk: 'TEAM', ...team }),
            put({
              pk: `TEAM#${teamId}`,
              sk: `MEMBER#${accountId}`,
              teamId,
              accountId,
              role: 'OWNER',
              createdAt,
              gsi1pk: `ACCOUNT#${accountId}`,
              gsi1sk: `TEAM#${teamId}`,
            }),
            put({
              pk: `TOKEN#${tokenDigest(input.apiToken)}`,
              sk: 'TOKEN',
              tokenId: newId(),
              teamId,
              createdBy: accountId,
              createdAt,
              gsi1pk: `TEAM#${teamId}`,
              gsi1sk: `TOKEN#${createdAt}`,
            }),
            put(bucketItem({ name: bucket, accountId, createdAt, isDefault: true })),
          ],
        }),
      );
    } catch (err) {
      if (err instanceof TransactionCanceledException) {
        throw new ConflictError(
          `account "${input.name}" conflicts with an existing account name, access key, API token or bucket "${bucket}"`,
        );
      }
      throw err;
    }
    return { account, team };
  }

  async getAccount(id: string): Promise<Account | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: { pk: `ACCOUNT#${id}`, sk: 'ACCOUNT' } }));
    if (!out.Item) return undefined;
    const { id: accountId, name, defaultBucket, defaultTeamId, createdAt } = out.Item;
    return { id: accountId, name, defaultBucket, defaultTeamId, createdAt };
  }

  async getAccountByName(name: string): Promise<Account | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `ACCOUNTNAME#${name}`, sk: 'ACCOUNTNAME' }, ConsistentRead: true }),
    );
    return out.Item ? this.getAccount(out.Item.accountId as string) : undefined;
  }

  /** The key pair's account and plaintext secret, or undefined for an unknown key. */
  async getAccessKey(accessKeyId: string): Promise<{ accountId: string; secretAccessKey: string } | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `AKEY#${accessKeyId}`, sk: 'AKEY' }, ConsistentRead: true }),
    );
    if (!out.Item || out.Item.revokedAt) return undefined;
    return {
      accountId: out.Item.accountId as string,
      secretAccessKey: await this.sealer.open(out.Item.sealedSecret as string, accessKeyId),
    };
  }

  async hasAccessKey(accessKeyId: string): Promise<boolean> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `AKEY#${accessKeyId}`, sk: 'AKEY' }, ProjectionExpression: 'pk' }),
    );
    return out.Item !== undefined;
  }

  /** The team a hosting API key belongs to, or undefined for an unknown or revoked key. */
  async getTeamIdByApiToken(token: string): Promise<string | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `TOKEN#${tokenDigest(token)}`, sk: 'TOKEN' } }),
    );
    if (!out.Item || out.Item.revokedAt) return undefined;
    return out.Item.teamId as string;
  }

  async getTeam(id: string): Promise<Team | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: { pk: `TEAM#${id}`, sk: 'TEAM' } }));
    if (!out.Item) return undefined;
    return { id: out.Item.id, name: out.Item.name, createdAt: out.Item.createdAt };
  }
}
