/**
 * The DynamoDB tables every function shares. This file is pure data: the local
 * server creates these tables in the embedded DynamoDB, and the CDK stack
 * provisions the same definitions in AWS, so the two can never drift apart.
 *
 * Every table is keyed by string `pk` + `sk`; secondary indexes are named
 * `gsi1`, `gsi2` with keys `gsi1pk`/`gsi1sk`, `gsi2pk`/`gsi2sk` (all strings,
 * sparse: an item appears in an index only when it carries its keys).
 */
export type TableName = 'accounts' | 'sites' | 'deploys' | 'objects';

export interface TableSpec {
  /** The logical name; the physical name comes from configuration. */
  name: TableName;
  /** Secondary indexes, each projecting all attributes. */
  indexes: Array<'gsi1' | 'gsi2'>;
  /** What lives in the table (documentation for readers and the CDK stack). */
  description: string;
  /** An attribute holding an expiry in epoch seconds: DynamoDB deletes the item after it (the local database does not; readers check it). */
  ttlAttribute?: string;
}

export const TABLES: readonly TableSpec[] = [
  {
    name: 'accounts',
    indexes: ['gsi1'],
    description:
      "Accounts, teams and members, storage key pairs, hosting API keys, buckets, people's sign-in identities, their sessions and sign-in attempts (both expiring); gsi1 lists an owner's children.",
    ttlAttribute: 'expiresAt',
  },
  {
    name: 'sites',
    indexes: ['gsi1', 'gsi2'],
    description:
      "Sites by id, their sealed secrets, IPNS keys and build hooks, and the IPNS records the gateway answers for (those PUT from elsewhere expiring); gsi1 finds a site by slug and lists sites' IPNS records due to be signed again, gsi2 lists a team's sites in creation order.",
    ttlAttribute: 'expiresAt',
  },
  {
    name: 'deploys',
    indexes: ['gsi1'],
    description:
      'Deploys under their site, newest last by id, and the webhook deliveries taken (expiring); gsi1 is the sparse queue of deploys waiting for a worker.',
    ttlAttribute: 'expiresAt',
  },
  {
    name: 'objects',
    indexes: ['gsi1'],
    description: 'Object records under their bucket by key, multipart uploads and CID pin references; gsi1 indexes records by CID.',
  },
];

export const KEY_ATTRIBUTES = { pk: 'pk', sk: 'sk' } as const;

export function indexKeys(index: 'gsi1' | 'gsi2'): { pk: string; sk: string } {
  return { pk: `${index}pk`, sk: `${index}sk` };
}

const KEY_NAMES = new Set(['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk']);

/** An item without its table and index keys: the record the stores hand out. */
export function withoutKeys<T>(item: Record<string, unknown>): T {
  return Object.fromEntries(Object.entries(item).filter(([name]) => !KEY_NAMES.has(name))) as T;
}

/** A record without its undefined fields, as an item is written (an absent attribute, not a null one). */
export function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/**
 * Makes a conditional write (one item or a transaction): true when it was
 * made, false when its condition did not hold. Anything else is thrown.
 */
export async function writtenIf(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (err) {
    const name = (err as Error).name;
    if (name === 'ConditionalCheckFailedException' || name === 'TransactionCanceledException') return false;
    throw err;
  }
}
