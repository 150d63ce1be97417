/**
 * Buckets, in the accounts table. Names are global (as in S3), so the bucket
 * item is keyed by name; gsi1 lists an account's buckets, its default first.
 *
 *   BUCKET#<name> / BUCKET   gsi1: ACCOUNT#<accountId> / BUCKET#<0 default|1 other>#<name>
 *
 * A bucket may be deleted only while it holds no objects; its unfinished
 * multipart uploads end with it. Deletion first marks the bucket `deleting`;
 * every object write (and every new upload) condition-checks that the
 * bucket exists unmarked, so once the mark is set and the bucket is seen
 * empty, no put can slip in before the item goes.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { queryAll } from './pages.js';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { Database } from './dynamo.js';
import type { TransactItem } from './dynamo.js';
import { TtlCache } from '../cache.js';
import { retry, type RetryPolicy } from '../retry.js';
import { lifecycleRunItem, lifecycleRunKey, type BucketLifecycle } from './lifecycle.js';
import { uniqueToken } from '../ids.js';

/** S3's canned ACLs, on buckets and objects alike. */
export type CannedAcl = 'private' | 'public-read' | 'public-read-write' | 'authenticated-read';

/** The permissions an ACL grants (core/storage/acl.ts). */
export type AclPermission = 'READ' | 'WRITE' | 'READ_ACP' | 'WRITE_ACP' | 'FULL_CONTROL';

/** One grant: to a Cairn account by its canonical id (the account's id), or to one of S3's groups by its URI. */
export type AclGrant = { id: string; permission: AclPermission } | { uri: string; permission: AclPermission };

/**
 * An ACL as buckets, objects and uploads store it: a canned ACL's name when
 * its grants are exactly that one's (all records from before grants hold
 * one), or its grants. The owner is the bucket's, never stored.
 */
export type StoredAcl = CannedAcl | AclGrant[];

/** One S3 tag, on an object or a bucket (functions/s3/tagging.ts checks them). */
export interface Tag {
  key: string;
  value: string;
}

export interface Bucket {
  name: string;
  accountId: string;
  createdAt: string;
  isDefault: boolean;
  /** Absent on buckets stored before bucket ACLs: those are private. */
  acl?: StoredAcl;
  /** The bucket's CORS rules (PutBucketCors), absent when it has none. */
  cors?: CorsRule[];
  /** The bucket's tags (PutBucketTagging), in the order given; absent when it has none. */
  tags?: Tag[];
  /** PutBucketVersioning's state; absent on a bucket never versioned (which stays exactly as before versions existed). */
  versioning?: VersioningState;
  /** The bucket policy's JSON text as PutBucketPolicy took it (core/storage/bucket-policy.ts); absent when none. */
  policy?: string;
  /** PutPublicAccessBlock's four settings; absent when none was put. */
  publicAccessBlock?: PublicAccessBlock;
  /** PutBucketOwnershipControls' one rule; absent when none was put. */
  ownership?: ObjectOwnership;
  /** PutBucketLifecycleConfiguration's rules (data/lifecycle.ts); absent when none. */
  lifecycle?: BucketLifecycle;
}

/** S3's versioning states; a bucket once versioned can be suspended, never unversioned again. */
export type VersioningState = 'Enabled' | 'Suspended';

export interface PublicAccessBlock {
  blockPublicAcls: boolean;
  ignorePublicAcls: boolean;
  blockPublicPolicy: boolean;
  restrictPublicBuckets: boolean;
}

export type ObjectOwnership = 'BucketOwnerEnforced' | 'BucketOwnerPreferred' | 'ObjectWriter';

/** One CORSRule, as PutBucketCors validated it. */
export interface CorsRule {
  id?: string;
  allowedOrigins: string[];
  allowedMethods: string[];
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

export class BucketExistsError extends Error {
  override name = 'BucketExistsError';
  constructor(
    readonly bucket: string,
    readonly ownedByCaller: boolean,
  ) {
    super(`bucket "${bucket}" already exists`);
  }
}

/** The bucket's item, as account creation and CreateBucket write it. */
export function bucketItem(bucket: Bucket): Record<string, unknown> {
  return {
    pk: `BUCKET#${bucket.name}`,
    sk: 'BUCKET',
    ...bucket,
    gsi1pk: `ACCOUNT#${bucket.accountId}`,
    gsi1sk: `BUCKET#${bucket.isDefault ? 0 : 1}#${bucket.name}`,
  };
}

/**
 * The condition object writes check on the bucket item (see ObjectStore).
 * With `versioning` given (null: never versioned), the bucket must also be
 * in that versioning state, so that a write decided on a stale view of the
 * bucket fails instead of keeping or dropping versions wrongly.
 */
export function bucketWritableCondition(now = Date.now(), versioning?: VersioningState | null) {
  const writable = 'attribute_exists(pk) AND (attribute_not_exists(deleting) OR deleting < :stale)';
  if (versioning === undefined) return { ConditionExpression: writable, ExpressionAttributeValues: { ':stale': now - DELETE_MARK_TTL_MS } };
  return {
    ConditionExpression: `${writable} AND ${versioning === null ? 'attribute_not_exists(versioning)' : 'versioning = :versioning'}`,
    ExpressionAttributeValues: { ':stale': now - DELETE_MARK_TTL_MS, ...(versioning === null ? {} : { ':versioning': versioning }) },
  };
}

function fromItem(item: Record<string, unknown>): Bucket {
  return {
    name: item.name as string,
    accountId: item.accountId as string,
    createdAt: item.createdAt as string,
    isDefault: item.isDefault === true,
    acl: (item.acl as StoredAcl | undefined) ?? 'private',
    ...(Array.isArray(item.cors) ? { cors: item.cors as CorsRule[] } : {}),
    ...(Array.isArray(item.tags) ? { tags: item.tags as Tag[] } : {}),
    ...(item.versioning === 'Enabled' || item.versioning === 'Suspended' ? { versioning: item.versioning } : {}),
    ...(typeof item.policy === 'string' ? { policy: item.policy } : {}),
    ...(item.publicAccessBlock ? { publicAccessBlock: item.publicAccessBlock as PublicAccessBlock } : {}),
    ...(typeof item.ownership === 'string' ? { ownership: item.ownership as ObjectOwnership } : {}),
    ...(item.lifecycle ? { lifecycle: item.lifecycle as BucketLifecycle } : {}),
  };
}

/**
 * How long a process trusts a bucket it has read (every S3 request looks its
 * bucket up). Object writes still check the bucket in their own transaction,
 * so a stale entry can never put an object into a deleted bucket.
 */
export const BUCKET_CACHE_MS = 5_000;

export class BucketStore {
  private readonly cache = new TtlCache<string, Bucket>(BUCKET_CACHE_MS);

  constructor(private readonly db: Database) {}

  private get table() {
    return this.db.tables.accounts;
  }

  async get(name: string): Promise<Bucket | undefined> {
    return this.cache.through(name, () => this.load(name));
  }

  private async load(name: string): Promise<Bucket | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `BUCKET#${name}`, sk: 'BUCKET' }, ConsistentRead: true }),
    );
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /** The account's buckets, its default bucket first, then by name. */
  async list(accountId: string): Promise<Bucket[]> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk AND begins_with(gsi1sk, :sk)',
      ExpressionAttributeValues: { ':pk': `ACCOUNT#${accountId}`, ':sk': 'BUCKET#' },
    });
    return items.map(fromItem);
  }

  async create(
    name: string,
    accountId: string,
    createdAt: string,
    acl: StoredAcl = 'private',
    ownership?: ObjectOwnership,
  ): Promise<Bucket> {
    const bucket: Bucket = { name, accountId, createdAt, isDefault: false, acl, ...(ownership ? { ownership } : {}) };
    try {
      await this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [{ Put: { TableName: this.table, Item: bucketItem(bucket), ConditionExpression: 'attribute_not_exists(pk)' } }],
        }),
      );
    } catch (err) {
      if (err instanceof TransactionCanceledException) {
        const existing = await this.get(name);
        throw new BucketExistsError(name, existing?.accountId === accountId);
      }
      throw err;
    }
    return bucket;
  }

  /** Sets the bucket's ACL; false if there is no such bucket. Concurrent calls all succeed, the last one wins. */
  setAcl(name: string, acl: StoredAcl): Promise<boolean> {
    return this.setSetting(name, 'acl', acl);
  }

  /** Sets (or with undefined or none removes) the bucket's tags; false when the bucket is gone. */
  setTags(name: string, tags: Tag[] | undefined): Promise<boolean> {
    return this.setSetting(name, 'tags', tags?.length ? tags : undefined);
  }

  /** Sets the bucket's versioning state; false when the bucket is gone. */
  setVersioning(name: string, state: VersioningState): Promise<boolean> {
    return this.setSetting(name, 'versioning', state);
  }

  /** Sets (or with undefined removes) the bucket's CORS rules; false when the bucket is gone. */
  setCors(name: string, rules: CorsRule[] | undefined): Promise<boolean> {
    return this.setSetting(name, 'cors', rules);
  }

  /** Sets (or with undefined removes) the bucket policy's text; false when the bucket is gone. */
  setPolicy(name: string, policy: string | undefined): Promise<boolean> {
    return this.setSetting(name, 'policy', policy);
  }

  /** Sets (or with undefined removes) the bucket's public access block; false when the bucket is gone. */
  setPublicAccessBlock(name: string, block: PublicAccessBlock | undefined): Promise<boolean> {
    return this.setSetting(name, 'publicAccessBlock', block);
  }

  /** Sets (or with undefined removes) the bucket's object ownership rule; false when the bucket is gone. */
  setOwnership(name: string, ownership: ObjectOwnership | undefined): Promise<boolean> {
    return this.setSetting(name, 'ownership', ownership);
  }

  /**
   * Sets (or with undefined removes) the bucket's lifecycle rules, and in
   * the same transaction the item that tells the expiry run about them
   * (data/lifecycle.ts: a new token, so a pass under way starts again);
   * false when the bucket is gone. Retried as setSetting is.
   */
  setLifecycle(name: string, lifecycle: BucketLifecycle | undefined): Promise<boolean> {
    const key = { pk: `BUCKET#${name}`, sk: 'BUCKET' };
    return retry(
      async () => {
        try {
          await this.db.doc.send(
            new TransactWriteCommand({
              TransactItems: [
                {
                  Update: {
                    TableName: this.table,
                    Key: key,
                    ConditionExpression: 'attribute_exists(pk)',
                    ...(lifecycle === undefined
                      ? { UpdateExpression: 'REMOVE lifecycle' }
                      : { UpdateExpression: 'SET lifecycle = :v', ExpressionAttributeValues: { ':v': lifecycle } }),
                  },
                },
                lifecycle === undefined
                  ? { Delete: { TableName: this.table, Key: lifecycleRunKey(name) } }
                  : lifecycleRunItem(this.table, name, uniqueToken()),
              ],
            }),
          );
        } catch (err) {
          if (err instanceof TransactionCanceledException && err.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') return false;
          throw err;
        } finally {
          this.cache.delete(name);
        }
        return true;
      },
      {
        ...SET_SETTING_RETRY,
        retryable: (err) => err instanceof TransactionCanceledException || (err as Error).name === 'TransactionConflictException',
      },
    );
  }

  /**
   * Sets one of the bucket's settings (undefined: removes it). False when
   * the bucket is gone: the condition keeps an update from recreating a
   * deleted bucket's item. On DynamoDB a plain write to an item that an
   * object write's transaction is condition-checking fails with
   * TransactionConflictException, and the SDK does not retry it; a setting
   * is idempotent, so it is tried again. The cache entry goes after the
   * write: only a read still in flight then can cache the old value (for
   * BUCKET_CACHE_MS at most).
   */
  private setSetting(
    name: string,
    attribute: 'acl' | 'cors' | 'tags' | 'versioning' | 'policy' | 'publicAccessBlock' | 'ownership',
    value: unknown,
  ): Promise<boolean> {
    return retry(
      async () => {
        try {
          await this.db.doc.send(
            new UpdateCommand({
              TableName: this.table,
              Key: { pk: `BUCKET#${name}`, sk: 'BUCKET' },
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeNames: { '#a': attribute },
              ...(value === undefined
                ? { UpdateExpression: 'REMOVE #a' }
                : { UpdateExpression: 'SET #a = :v', ExpressionAttributeValues: { ':v': value } }),
            }),
          );
        } catch (err) {
          if ((err as Error).name === 'ConditionalCheckFailedException') return false;
          throw err;
        } finally {
          this.cache.delete(name);
        }
        return true;
      },
      { ...SET_SETTING_RETRY, retryable: (err) => (err as Error).name === 'TransactionConflictException' },
    );
  }

  /**
   * Deletes the bucket if `isEmpty` says so while the bucket is marked
   * `deleting` (object writes refuse a marked bucket), together with the
   * writes `alsoDelete` gives (called only then). Returns false, and leaves
   * the bucket as it was, when it is not empty. A mark left by a crash
   * expires after DELETE_MARK_TTL_MS.
   */
  async deleteIfEmpty(
    name: string,
    isEmpty: () => Promise<boolean>,
    alsoDelete: () => Promise<TransactItem[]> = async () => [],
  ): Promise<boolean> {
    this.cache.delete(name);
    const key = { pk: `BUCKET#${name}`, sk: 'BUCKET' };
    const now = Date.now();
    await this.db.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: key,
        UpdateExpression: 'SET deleting = :now',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(deleting) OR deleting < :stale)',
        ExpressionAttributeValues: { ':now': now, ':stale': now - DELETE_MARK_TTL_MS },
      }),
    );
    let deleted = false;
    try {
      if (await isEmpty()) {
        const also = await alsoDelete();
        await this.db.doc.send(new TransactWriteCommand({ TransactItems: [...also, { Delete: { TableName: this.table, Key: key } }] }));
        deleted = true;
        this.cache.delete(name);
      }
    } finally {
      if (!deleted) {
        await this.db.doc
          .send(
            new UpdateCommand({
              TableName: this.table,
              Key: key,
              UpdateExpression: 'REMOVE deleting',
              ConditionExpression: 'deleting = :now',
              ExpressionAttributeValues: { ':now': now },
            }),
          )
          .catch(() => {});
      }
    }
    return deleted;
  }
}

/** Setting an ACL that met a transaction: eight tries, 10 ms more of a pause each time. */
const SET_SETTING_RETRY: RetryPolicy = { attempts: 8, baseMs: 10, growth: 'linear' };

/** How long a deletion mark blocks writes if its deleter died. */
export const DELETE_MARK_TTL_MS = 60_000;
