/**
 * Teams (which own sites and hosting API keys) and their members, in the
 * accounts table.
 *
 *   TEAM#<id> / TEAM                a team, with the count of its owners
 *   TEAM#<id> / MEMBER#<accountId>  membership and role    gsi1: ACCOUNT#<id> / TEAM#<teamId>
 *   ACCOUNT#<id> / TEAMSMADE        how many teams the account made with createTeam (the limit is
 *                                   checked in the same transaction)
 *
 * A team always keeps an owner: the owner count on the team item is
 * changed in the same transaction as the membership, conditioned on
 * staying above zero.
 * Removing a member revokes the hosting API keys they made for that team
 * in the same transaction (as many as fit), found by a consistent read of
 * the team's partition (so a key made a moment before cannot escape).
 * These transactions, and the one that makes a team with its first key,
 * live here: they are changes to a team, which its keys follow.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { newApiToken, newId } from '../ids.js';
import { apiKeyItems, newApiKeyRecord, type ApiKeyRecord, type ApiKeyStore } from './api-keys.js';
import type { Database } from './dynamo.js';
import { ConflictError, countedUnder, TRANSACTION_CONFLICT_RETRY } from './errors.js';
import { retry } from '../retry.js';
import { queryAll } from './pages.js';

/** createTeam past the account's limit (config teamsPerAccount). */
export class TeamLimitError extends Error {
  override name = 'TeamLimitError';
}

export interface Team {
  id: string;
  name: string;
  createdAt: string;
}

export type TeamRole = 'OWNER' | 'MEMBER';

/** One write of a transaction. */
export type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

export interface TeamMember {
  teamId: string;
  accountId: string;
  /** Copied from the account when the membership is made (account names never change). */
  accountName?: string;
  role: TeamRole;
  createdAt: string;
}

/** A change that would leave a team without an owner. */
export class LastOwnerError extends ConflictError {
  override name = 'LastOwnerError';
  constructor() {
    super('a team keeps at least one owner: make another member an owner first');
  }
}

/** A transaction holds at most 100 items; removing a member revokes their keys in chunks this size. */
const TRANSACTION_ITEMS = 100;

export class TeamStore {
  constructor(
    private readonly db: Database,
    private readonly apiKeys: ApiKeyStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  async get(id: string): Promise<Team | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `TEAM#${id}`, sk: 'TEAM' }, ConsistentRead: true }),
    );
    if (!out.Item) return undefined;
    return { id: out.Item.id, name: out.Item.name, createdAt: out.Item.createdAt };
  }

  /** Creates a team owned by `owner`, with a first API key for it (returned once), in one transaction. */
  /**
   * A new team owned by `owner`, with a first API key for it. With
   * `maxMade`, the account's count of teams made this way is raised in the
   * same transaction, refused past it (TeamLimitError): a burst of creates
   * never passes the limit.
   */
  async create(
    name: string,
    owner: { accountId: string; accountName?: string },
    maxMade?: number,
  ): Promise<{ team: Team; apiKey: ApiKeyRecord; key: string }> {
    const createdAt = this.now().toISOString();
    const team: Team = { id: newId(), name, createdAt };
    const key = newApiToken();
    const apiKey = newApiKeyRecord(key, { teamId: team.id, createdBy: owner.accountId, createdAt, name: 'first key' });
    const put = (Item: Record<string, unknown>) => ({
      Put: { TableName: this.table, Item, ConditionExpression: 'attribute_not_exists(pk)' },
    });
    const counted = maxMade === undefined ? [] : [countedUnder(this.table, { pk: `ACCOUNT#${owner.accountId}`, sk: 'TEAMSMADE' }, maxMade)];
    const send = () =>
      this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            ...counted,
            put(teamItem(team, 1)),
            put(memberItem({ teamId: team.id, accountId: owner.accountId, accountName: owner.accountName, role: 'OWNER', createdAt })),
            ...apiKeyItems(apiKey, key).map(put),
          ],
        }),
      );
    try {
      // A burst of creates meets on the count's item (DynamoDB cancels all but one: errors.ts).
      await retry(send, TRANSACTION_CONFLICT_RETRY);
    } catch (err) {
      if (
        err instanceof TransactionCanceledException &&
        counted.length > 0 &&
        err.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed'
      )
        throw new TeamLimitError(`an account makes at most ${maxMade} teams`);
      throw err;
    }
    return { team, apiKey, key };
  }

  /** Renames a team; undefined when it does not exist. */
  async rename(teamId: string, name: string): Promise<Team | undefined> {
    try {
      const out = await this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: `TEAM#${teamId}`, sk: 'TEAM' },
          UpdateExpression: 'SET #name = :name',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#name': 'name' },
          ExpressionAttributeValues: { ':name': name },
          ReturnValues: 'ALL_NEW',
        }),
      );
      const item = out.Attributes!;
      return { id: item.id, name: item.name, createdAt: item.createdAt };
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return undefined;
      throw err;
    }
  }

  async getMember(teamId: string, accountId: string): Promise<TeamMember | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `TEAM#${teamId}`, sk: `MEMBER#${accountId}` }, ConsistentRead: true }),
    );
    return out.Item ? memberFromItem(out.Item) : undefined;
  }

  /** The team's members, in the order of their account ids. */
  async listMembers(teamId: string): Promise<TeamMember[]> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :team AND begins_with(sk, :member)',
      ExpressionAttributeValues: { ':team': `TEAM#${teamId}`, ':member': 'MEMBER#' },
      ConsistentRead: true,
    });
    return items.map(memberFromItem);
  }

  /** Adds an account to a team; ConflictError when it is a member already, undefined when the team is gone. */
  async addMember(teamId: string, account: { id: string; name: string }, role: TeamRole): Promise<TeamMember | undefined> {
    const member: TeamMember = { teamId, accountId: account.id, accountName: account.name, role, createdAt: this.now().toISOString() };
    try {
      await this.db.doc.send(new TransactWriteCommand({ TransactItems: this.arrival(member) }));
      return member;
    } catch (err) {
      if (!(err instanceof TransactionCanceledException)) throw err;
      if (err.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed')
        throw new ConflictError(`"${account.name}" is a member of the team already`);
      return undefined;
    }
  }

  /**
   * The two writes that make a membership, for a transaction: the member
   * (only where the account is not one yet), and the team's owner count
   * (an owner) or a check that the team exists. First and second, so a
   * transaction that adds its own writes after them (an invitation marked
   * used) reads its cancellation reasons by the same indexes.
   */
  arrival(member: TeamMember): TransactItem[] {
    return [
      { Put: { TableName: this.table, Item: memberItem(member), ConditionExpression: 'attribute_not_exists(pk)' } },
      member.role === 'OWNER'
        ? { Update: this.ownerCountChange(member.teamId, +1) }
        : {
            ConditionCheck: {
              TableName: this.table,
              Key: { pk: `TEAM#${member.teamId}`, sk: 'TEAM' },
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
    ];
  }

  /** Changes a member's role; LastOwnerError when that would leave no owner, undefined when not a member. */
  async setMemberRole(teamId: string, accountId: string, role: TeamRole): Promise<TeamMember | undefined> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.getMember(teamId, accountId);
      if (!current) return undefined;
      if (current.role === role) return current;
      const next: TeamMember = { ...current, role };
      try {
        await this.db.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: this.table,
                  Item: memberItem(next),
                  ConditionExpression: '#role = :role',
                  ExpressionAttributeNames: { '#role': 'role' },
                  ExpressionAttributeValues: { ':role': current.role },
                },
              },
              { Update: this.ownerCountChange(teamId, role === 'OWNER' ? +1 : -1) },
            ],
          }),
        );
        return next;
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        if (err.CancellationReasons?.[1]?.Code === 'ConditionalCheckFailed') throw new LastOwnerError();
        if (attempt >= 5) throw new ConflictError('the membership keeps changing; try again');
      }
    }
  }

  /**
   * Removes a member and revokes the API keys they made for the team, in
   * one transaction (more keys than fit are revoked right after it);
   * LastOwnerError when they are the last owner, false when not a member.
   */
  async removeMember(teamId: string, accountId: string): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.getMember(teamId, accountId);
      if (!current) return false;
      const keys = (await this.apiKeys.list(teamId)).filter((k) => k.createdBy === accountId && !k.revokedAt);
      const revokedAt = this.now().toISOString();
      const items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']> = [
        {
          Delete: {
            TableName: this.table,
            Key: { pk: `TEAM#${teamId}`, sk: `MEMBER#${accountId}` },
            ConditionExpression: '#role = :role',
            ExpressionAttributeNames: { '#role': 'role' },
            ExpressionAttributeValues: { ':role': current.role },
          },
        },
      ];
      if (current.role === 'OWNER') items.push({ Update: this.ownerCountChange(teamId, -1) });
      const inTransaction: typeof keys = [];
      for (const key of keys) {
        const updates = this.apiKeys.revocation(key, revokedAt);
        if (items.length + updates.length > TRANSACTION_ITEMS) break;
        items.push(...updates.map((Update) => ({ Update })));
        inTransaction.push(key);
      }
      try {
        await this.db.doc.send(new TransactWriteCommand({ TransactItems: items }));
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        if (current.role === 'OWNER' && err.CancellationReasons?.[1]?.Code === 'ConditionalCheckFailed') throw new LastOwnerError();
        if (attempt >= 5) throw new ConflictError('the membership keeps changing; try again');
        continue;
      }
      this.apiKeys.forget(inTransaction);
      for (const key of keys.slice(inTransaction.length)) await this.apiKeys.revokeKey(key, revokedAt);
      return true;
    }
  }

  /** The account's memberships: the teams it belongs to. */
  async listByAccount(accountId: string): Promise<TeamMember[]> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :account AND begins_with(gsi1sk, :team)',
      ExpressionAttributeValues: { ':account': `ACCOUNT#${accountId}`, ':team': 'TEAM#' },
    });
    return items.map(memberFromItem);
  }

  /**
   * The owner count moves with every owner's arrival or departure; a
   * departure is conditioned on another owner staying. Teams written
   * before the count existed had exactly one owner, their creator.
   */
  private ownerCountChange(teamId: string, delta: 1 | -1) {
    return delta > 0
      ? {
          TableName: this.table,
          Key: { pk: `TEAM#${teamId}`, sk: 'TEAM' },
          UpdateExpression: 'SET ownerCount = if_not_exists(ownerCount, :one) + :one',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':one': 1 },
        }
      : {
          TableName: this.table,
          Key: { pk: `TEAM#${teamId}`, sk: 'TEAM' },
          UpdateExpression: 'SET ownerCount = ownerCount - :one',
          ConditionExpression: 'ownerCount > :one',
          ExpressionAttributeValues: { ':one': 1 },
        };
  }
}

/** A new team's item, for the transactions that make a team: alone, or with a new account. */
export function teamItem(team: Team, ownerCount: number): Record<string, unknown> {
  return { pk: `TEAM#${team.id}`, sk: 'TEAM', ...team, ownerCount };
}

/** A membership's item, for the transactions that make or change one, a new account's included. */
export function memberItem(member: TeamMember): Record<string, unknown> {
  return {
    pk: `TEAM#${member.teamId}`,
    sk: `MEMBER#${member.accountId}`,
    ...member,
    gsi1pk: `ACCOUNT#${member.accountId}`,
    gsi1sk: `TEAM#${member.teamId}`,
  };
}

function memberFromItem(item: Record<string, unknown>): TeamMember {
  return {
    teamId: item.teamId as string,
    accountId: item.accountId as string,
    accountName: item.accountName as string | undefined,
    role: item.role as TeamRole,
    createdAt: item.createdAt as string,
  };
}
