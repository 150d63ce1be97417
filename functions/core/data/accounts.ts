/**
 * Accounts: the people who hold storage key pairs and buckets and belong to
 * teams, in the accounts table.
 *
 *   ACCOUNT#<id> / ACCOUNT            the account
 *   ACCOUNTNAME#<name> / ACCOUNTNAME  reserves the account's unique name
 *
 * The same table holds their teams and members (teams.ts), hosting API
 * keys (api-keys.ts), storage key pairs (storage-keys.ts), buckets
 * (buckets.ts) and the service's signing keys (signing-keys.ts).
 */
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { scanEach } from './pages.js';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { newId } from '../ids.js';
import { apiKeyItems, newApiKeyRecord } from './api-keys.js';
import { bucketItem } from './buckets.js';
import type { Database } from './dynamo.js';
import { ConflictError } from './errors.js';
import type { StorageKeyStore } from './storage-keys.js';
import { memberItem, teamItem, type Team } from './teams.js';

export interface Account {
  id: string;
  name: string;
  defaultBucket: string;
  defaultTeamId: string;
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

export class AccountStore {
  constructor(
    private readonly db: Database,
    private readonly storageKeys: StorageKeyStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /**
   * Creates an account with its default team, default bucket, one storage
   * key pair and one team API key, all or nothing: an account that exists
   * can always be used. Each of those families builds its own items.
   */
  async createAccount(input: NewAccount): Promise<{ account: Account; team: Team }> {
    const createdAt = this.now().toISOString();
    const accountId = newId();
    const teamId = newId();
    const bucket = input.bucketName ?? `${input.name}-bucket`;
    const account: Account = { id: accountId, name: input.name, defaultBucket: bucket, defaultTeamId: teamId, createdAt };
    const team: Team = { id: teamId, name: input.name, createdAt };
    const apiKey = newApiKeyRecord(input.apiToken, { teamId, createdBy: accountId, createdAt, name: 'bootstrap' });
    const keyPair = await this.storageKeys.item({ accessKeyId: input.accessKeyId, accountId, createdAt }, input.secretAccessKey);
    const put = (Item: Record<string, unknown>) => ({
      Put: { TableName: this.table, Item, ConditionExpression: 'attribute_not_exists(pk)' },
    });
    try {
      await this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            put({ pk: `ACCOUNT#${accountId}`, sk: 'ACCOUNT', ...account }),
            put({ pk: `ACCOUNTNAME#${input.name}`, sk: 'ACCOUNTNAME', accountId }),
            put(keyPair),
            put(teamItem(team, 1)),
            put(memberItem({ teamId, accountId, accountName: input.name, role: 'OWNER', createdAt })),
            ...apiKeyItems(apiKey, input.apiToken).map(put),
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

  /**
   * Every account, by name. A Scan of the table (accounts have no index of
   * their own): for operators (`npm run admin -- list-accounts`), never a request.
   */
  async list(): Promise<Account[]> {
    const accounts: Account[] = [];
    const items = scanEach(this.db, {
      TableName: this.table,
      FilterExpression: 'sk = :account',
      ExpressionAttributeValues: { ':account': 'ACCOUNT' },
      ConsistentRead: true,
    });
    for await (const { id, name, defaultBucket, defaultTeamId, createdAt } of items)
      accounts.push({ id, name, defaultBucket, defaultTeamId, createdAt } as Account);
    return accounts.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}
