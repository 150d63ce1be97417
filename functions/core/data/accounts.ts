/**
 * Accounts: the people who hold storage key pairs and buckets and belong to
 * teams, in the accounts table.
 *
 *   ACCOUNT#<id> / ACCOUNT            the account
 *   ACCOUNTNAME#<name> / ACCOUNTNAME  reserves the account's unique name
 *
 * The same table holds their teams and members (teams.ts), hosting API
 * keys (api-keys.ts), storage key pairs (storage-keys.ts), buckets
 * (buckets.ts), the service's signing keys (signing-keys.ts), and the
 * sign-in identities of people (people.ts) with their sessions
 * (sessions.ts) and failed sign-ins (sign-in-attempts.ts).
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
import { memberItem, teamItem, type Team, type TransactItem } from './teams.js';

export interface Account {
  id: string;
  name: string;
  defaultBucket: string;
  defaultTeamId: string;
  createdAt: string;
}

/** A new account: with a storage key pair and an API key (scripts, the operator's accounts), or without (a person signing up makes theirs later). */
export type NewAccount = {
  name: string;
  /** Defaults to `<name>-bucket`. */
  bucketName?: string;
  /** More items made with the account in the same transaction, each only where nothing is (a person's identity: people.ts). */
  alsoPut?: (account: { accountId: string; createdAt: string }) => Array<Record<string, unknown>>;
  /** More writes of any kind, after those (joining a team by an invitation, which it marks used); their failure is `also`. */
  alsoWrite?: (account: { accountId: string; createdAt: string }) => TransactItem[];
} & (
  | { accessKeyId: string; secretAccessKey: string; apiToken: string }
  | { accessKeyId?: undefined; secretAccessKey?: undefined; apiToken?: undefined }
);

/** A new account's name is taken, or one of the items made with it (`alsoPut`) exists already. */
export class AccountConflictError extends ConflictError {
  override name = 'AccountConflictError';
  constructor(
    readonly what: 'name' | 'added' | 'also',
    message: string,
  ) {
    super(message);
  }
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
   * Creates an account with its default team, default bucket, and (when
   * given them) one storage key pair and one team API key, all or nothing:
   * an account that exists can always be used. Each of those families
   * builds its own items.
   */
  async createAccount(input: NewAccount): Promise<{ account: Account; team: Team }> {
    const createdAt = this.now().toISOString();
    const accountId = newId();
    const teamId = newId();
    const bucket = input.bucketName ?? `${input.name}-bucket`;
    const account: Account = { id: accountId, name: input.name, defaultBucket: bucket, defaultTeamId: teamId, createdAt };
    const team: Team = { id: teamId, name: input.name, createdAt };
    const credentials: Array<Record<string, unknown>> = [];
    if (input.apiToken !== undefined) {
      const apiKey = newApiKeyRecord(input.apiToken, { teamId, createdBy: accountId, createdAt, name: 'bootstrap' });
      credentials.push(
        await this.storageKeys.item({ accessKeyId: input.accessKeyId, accountId, createdAt }, input.secretAccessKey),
        ...apiKeyItems(apiKey, input.apiToken),
      );
    }
    const put = (Item: Record<string, unknown>) => ({
      Put: { TableName: this.table, Item, ConditionExpression: 'attribute_not_exists(pk)' },
    });
    const added = input.alsoPut?.({ accountId, createdAt }) ?? [];
    const items = [
      { pk: `ACCOUNT#${accountId}`, sk: 'ACCOUNT', ...account },
      { pk: `ACCOUNTNAME#${input.name}`, sk: 'ACCOUNTNAME', accountId },
      teamItem(team, 1),
      memberItem({ teamId, accountId, accountName: input.name, role: 'OWNER', createdAt }),
      bucketItem({ name: bucket, accountId, createdAt, isDefault: true }),
      ...credentials,
      ...added,
    ];
    const also = input.alsoWrite?.({ accountId, createdAt }) ?? [];
    try {
      await this.db.doc.send(new TransactWriteCommand({ TransactItems: [...items.map(put), ...also] }));
    } catch (err) {
      if (err instanceof TransactionCanceledException) {
        // Which item was already there: the account's name, or one of the items the caller added, is theirs to change.
        const taken = err.CancellationReasons?.findIndex((r) => r.Code === 'ConditionalCheckFailed') ?? -1;
        if (taken === 1) throw new AccountConflictError('name', `the account name "${input.name}" is taken`);
        if (taken >= items.length) throw new AccountConflictError('also', `a condition of account "${input.name}"'s other writes failed`);
        if (taken >= items.length - added.length)
          throw new AccountConflictError(
            'added',
            `account "${input.name}" conflicts with an existing ${String(items[taken]!.pk).split('#')[0]}`,
          );
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
