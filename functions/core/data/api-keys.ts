/**
 * Hosting API keys: a team's keys for the GraphQL API, in the accounts
 * table. The key itself is never stored, only its hash.
 *
 *   TOKEN#<sha256> / TOKEN          the key as a request is checked against it
 *   TEAM#<id> / APIKEY#<tokenId>    the same key as its team lists it (name, prefix, hash), written
 *                                   and revoked in the same transaction as the TOKEN item
 *
 * A key acts for its team with the rights of the member who created it.
 *
 * Every request checks its key, so a check is remembered for
 * API_KEY_CHECK_MS (at most 10,000 keys, by hash): a revocation made in
 * this process forgets the key at once (and a check under way then is not
 * kept); one made by another process (a Lambda container beside this one)
 * takes effect here within that time. The requests of one moment share a
 * key's check, and a key in use is checked anew before its time is up
 * (TtlCache's rules, cache.ts), so no request waits on its expiry.
 */
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { TtlCache } from '../cache.js';
import { newApiToken, newSortableId, tokenDigest } from '../ids.js';
import type { Database } from './dynamo.js';
import { queryAll } from './pages.js';

/** A hosting API key as listed: never the key itself, which is stored only as a hash. */
export interface ApiKeyRecord {
  id: string;
  teamId: string;
  name?: string | null;
  /** The key's first characters, to tell keys apart. */
  keyPrefix?: string | null;
  createdBy: string;
  createdAt: string;
  revokedAt?: string | null;
}

/** Who a valid hosting API key speaks for. */
export interface ApiKeyCaller {
  teamId: string;
  accountId: string;
  apiKeyId: string;
}

/** A key as stored: with its hash, which names its TOKEN item. */
export type StoredApiKey = ApiKeyRecord & { digest: string };

const KEY_PREFIX_LENGTH = 10;

/** How long a key's check is remembered: a key revoked elsewhere stops working here within this. */
export const API_KEY_CHECK_MS = 500;

/** The record of a new key, for `apiKeyItems`. */
export function newApiKeyRecord(key: string, fields: Pick<ApiKeyRecord, 'teamId' | 'createdBy' | 'createdAt' | 'name'>): ApiKeyRecord {
  return { id: newSortableId(), ...fields, keyPrefix: key.slice(0, KEY_PREFIX_LENGTH) };
}

/**
 * The TOKEN item requests are checked against, and the team's APIKEY# item
 * that lists the key: a transaction that makes a key (alone, or with its
 * team or account) writes both.
 */
export function apiKeyItems(apiKey: ApiKeyRecord, key: string): Array<Record<string, unknown>> {
  const record = {
    tokenId: apiKey.id,
    teamId: apiKey.teamId,
    name: apiKey.name ?? null,
    keyPrefix: apiKey.keyPrefix ?? null,
    createdBy: apiKey.createdBy,
    createdAt: apiKey.createdAt,
    digest: tokenDigest(key),
  };
  return [
    { pk: `TOKEN#${record.digest}`, sk: 'TOKEN', ...record },
    { pk: `TEAM#${apiKey.teamId}`, sk: `APIKEY#${apiKey.id}`, ...record },
  ];
}

export class ApiKeyStore {
  /**
   * Recent checks of working keys by the key's hash: whom each speaks for.
   * An unknown or revoked key is not remembered: a key made a moment ago
   * (by another store's transaction, or another process) works at once.
   */
  private readonly checks = new TtlCache<string, ApiKeyCaller>(API_KEY_CHECK_MS);

  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.accounts;
  }

  /** Who a key speaks for, or undefined for an unknown or revoked key. */
  async caller(token: string): Promise<ApiKeyCaller | undefined> {
    const digest = tokenDigest(token);
    const caller = await this.checks.through(digest, async () => {
      const out = await this.db.doc.send(
        new GetCommand({ TableName: this.table, Key: { pk: `TOKEN#${digest}`, sk: 'TOKEN' }, ConsistentRead: true }),
      );
      if (!out.Item || out.Item.revokedAt) return undefined;
      return { teamId: out.Item.teamId as string, accountId: out.Item.createdBy as string, apiKeyId: out.Item.tokenId as string };
    });
    return caller ? { ...caller } : undefined;
  }

  /** After a write that revoked keys (revocation() in another store's transaction): this process stops taking them at once. */
  forget(keys: ReadonlyArray<Pick<StoredApiKey, 'digest'>>): void {
    for (const key of keys) this.checks.delete(key.digest);
  }

  /** The team a key belongs to, or undefined for an unknown or revoked key. */
  async teamIdOf(token: string): Promise<string | undefined> {
    return (await this.caller(token))?.teamId;
  }

  /** A new key for the team, acting with the rights of `createdBy`; the key is returned here and never again. */
  async create(teamId: string, createdBy: string, name?: string | null): Promise<{ apiKey: ApiKeyRecord; key: string }> {
    const key = newApiToken();
    const apiKey = newApiKeyRecord(key, { teamId, createdBy, createdAt: this.now().toISOString(), name: name ?? null });
    await this.db.doc.send(
      new TransactWriteCommand({
        TransactItems: apiKeyItems(apiKey, key).map((Item) => ({
          Put: { TableName: this.table, Item, ConditionExpression: 'attribute_not_exists(pk)' },
        })),
      }),
    );
    return { apiKey, key };
  }

  /** The team's keys, revoked ones included, oldest first. */
  async list(teamId: string): Promise<StoredApiKey[]> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :team AND begins_with(sk, :apikey)',
      ExpressionAttributeValues: { ':team': `TEAM#${teamId}`, ':apikey': 'APIKEY#' },
      ConsistentRead: true,
    });
    return items
      .map(apiKeyFromItem)
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
  }

  async get(teamId: string, apiKeyId: string): Promise<StoredApiKey | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `TEAM#${teamId}`, sk: `APIKEY#${apiKeyId}` }, ConsistentRead: true }),
    );
    return out.Item ? apiKeyFromItem(out.Item) : undefined;
  }

  /** Revokes one of the team's keys (at once in this process; elsewhere within API_KEY_CHECK_MS); the key as it is now, or undefined. */
  async revoke(teamId: string, apiKeyId: string): Promise<ApiKeyRecord | undefined> {
    const key = await this.get(teamId, apiKeyId);
    if (!key) return undefined;
    await this.revokeKey(key, this.now().toISOString());
    return this.get(teamId, apiKeyId);
  }

  /** Revokes a key read by `list` or `get`. */
  async revokeKey(key: StoredApiKey, revokedAt: string): Promise<void> {
    try {
      await this.db.doc.send(new TransactWriteCommand({ TransactItems: this.revocation(key, revokedAt).map((Update) => ({ Update })) }));
    } finally {
      this.forget([key]);
    }
  }

  /** The updates that revoke a key: its TOKEN item (what requests check) and its team's listing of it; forget() it once written. */
  revocation(key: StoredApiKey, revokedAt: string) {
    const update = (Key: Record<string, string>) => ({
      TableName: this.table,
      Key,
      UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :now)',
      ConditionExpression: 'teamId = :team',
      ExpressionAttributeValues: { ':now': revokedAt, ':team': key.teamId },
    });
    return [update({ pk: `TOKEN#${key.digest}`, sk: 'TOKEN' }), update({ pk: `TEAM#${key.teamId}`, sk: `APIKEY#${key.id}` })];
  }
}

function apiKeyFromItem(item: Record<string, unknown>): StoredApiKey {
  return {
    id: item.tokenId as string,
    teamId: item.teamId as string,
    name: (item.name as string | null | undefined) ?? null,
    keyPrefix: (item.keyPrefix as string | null | undefined) ?? null,
    createdBy: item.createdBy as string,
    createdAt: item.createdAt as string,
    revokedAt: (item.revokedAt as string | null | undefined) ?? null,
    digest: item.digest as string,
  };
}
