/**
 * Multipart uploads, in the objects table beside the records they become.
 * Their partition keys start with '#', which bucket names cannot:
 *
 *   #UPLOAD#<bucket> / <key>\0<uploadId>          the upload: stored headers, ACL, owner, checksum settings
 *   #PARTS#<uploadId> / <part number, 5 digits>   a part: CID, size, MD5, checksums
 *   #REF#<partCid> / #PART#<uploadId>#<5 digits>  the part's CID reference (see data/objects.ts)
 *   #CLEANUP / <uploadId>                         an ended upload whose parts may still be there
 *   #DONE / <uploadId>                            a completed upload's result, for a retried Complete (expires)
 *
 * Upload ids sort by creation time, so one Query on `#UPLOAD#<bucket>` lists
 * uploads in S3's order: by key, then by initiation. The sort key holds at
 * most 1024 bytes (DynamoDB's limit, see data/objects.ts) and S3 allows a
 * key of 1024 bytes, so a key past KEY_ROOM bytes is cut there in the sort
 * key (the item keeps it whole): uploads of keys whose first ~960 bytes are
 * the same sort among themselves by initiation rather than by the rest of
 * their keys. Every shorter key keeps the layout it always had.
 *
 * A part and its reference change in one transaction, conditioned on the
 * upload still existing, so a part's content stays pinned exactly while the
 * upload is open. An upload ends (complete, abort, or its bucket's
 * deletion) with one transaction that deletes its item and writes its
 * #CLEANUP marker (CompleteMultipartUpload adds both to the object record's
 * transaction, DeleteBucket to the bucket's delete). Once the upload item is
 * gone no part can be added, and the parts are removed afterwards in batches
 * (their references deleted, their CIDs made collection candidates), which
 * may take more than DynamoDB's 100 items a transaction allows. Every batch
 * is idempotent; the marker goes last. If the process dies in between, the
 * parts stay referenced (their blocks leak, nothing is lost) until
 * `resumeCleanups` (run by garbage collection) finishes the job.
 */
import { DeleteCommand, GetCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { queryAll, queryEach } from './pages.js';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { uniqueToken } from '../ids.js';
import type { Database } from './dynamo.js';
import { bucketWritableCondition } from './buckets.js';
import { candidateItem, cidReference } from './object-references.js';
import {
  compareKeys,
  cutToBytes,
  MAX_SORT_KEY_BYTES,
  NoSuchBucketError,
  prefixSuccessor,
  type ObjectRecord,
  type SortKeyBound,
  type TransactItem,
} from './objects.js';
import { stripUndefined, withoutKeys } from './tables.js';
import { retry, type RetryPolicy } from '../retry.js';

export type ChecksumType = 'COMPOSITE' | 'FULL_OBJECT';

export interface UploadRecord extends Pick<
  ObjectRecord,
  | 'bucket'
  | 'key'
  | 'acl'
  | 'ownerId'
  | 'contentType'
  | 'cacheControl'
  | 'contentDisposition'
  | 'contentEncoding'
  | 'contentLanguage'
  | 'expires'
  | 'metadata'
  | 'tags'
> {
  uploadId: string;
  /** ISO time of CreateMultipartUpload. */
  initiated: string;
  /** The checksum algorithm the upload was created with (lowercase), if any. */
  checksumAlgorithm?: string;
  checksumType?: ChecksumType;
}

export interface PartRecord {
  partNumber: number;
  /** CIDv0 of the part's bytes. */
  cid: string;
  size: number;
  /** MD5 hex of the part's bytes (its ETag without quotes). */
  etag: string;
  lastModified: string;
  /** Base64 checksums by lowercase algorithm. */
  checksums?: Record<string, string>;
}

/**
 * What CompleteMultipartUpload made, kept for COMPLETION_TTL_MS so that the
 * same request retried (after a lost response) gets the same answer.
 */
export interface CompletionRecord {
  bucket: string;
  key: string;
  uploadId: string;
  /** Digest of the part list the Complete request named (see s3/multipart/complete.ts). */
  partsDigest: string;
  /** The object the upload made, to tell it from a later overwrite. */
  cid: string;
  etag: string;
  lastModified: string;
  checksumAlgorithm?: string;
  checksumType?: ChecksumType;
  /** Epoch milliseconds after which the record is not answered from. */
  expiresAt: number;
}

/** Long enough for any client's retries of a Complete whose answer was lost. */
export const COMPLETION_TTL_MS = 60 * 60 * 1000;

export class NoSuchUploadError extends Error {
  override name = 'NoSuchUploadError';
  constructor(readonly uploadId: string) {
    super(`upload "${uploadId}" does not exist`);
  }
}

export interface UploadListQuery {
  prefix?: string;
  delimiter?: string;
  keyMarker?: string;
  uploadIdMarker?: string;
  maxUploads: number;
}

export interface UploadListPage {
  entries: Array<{ kind: 'upload'; upload: UploadRecord } | { kind: 'prefix'; prefix: string }>;
  truncated: boolean;
}

export const MAX_PART_NUMBER = 10000;
/** Parts removed per cleanup transaction: three items each (part, reference, candidate), under DynamoDB's 100. */
const CLEANUP_BATCH = 33;
/** Cleanup transactions in flight at once. */
const CLEANUP_CONCURRENCY = 4;
const CLEANUP = '#CLEANUP';
const DONE = '#DONE';

/** The ids this store makes have 22 characters; a longer one (a client's) names no upload, and could not be part of a key. */
const MAX_UPLOAD_ID_BYTES = 64;
const namesNoUpload = (uploadId: string) => Buffer.byteLength(uploadId) > MAX_UPLOAD_ID_BYTES;
/** The bytes of a key an upload's sort key holds whole, beside the separator and the longest upload id. */
const KEY_ROOM = MAX_SORT_KEY_BYTES - 1 - MAX_UPLOAD_ID_BYTES;
const uploadKey = (bucket: string, key: string, uploadId: string) => ({
  pk: `#UPLOAD#${bucket}`,
  sk: `${Buffer.byteLength(key) <= KEY_ROOM ? key : cutToBytes(key, KEY_ROOM)}\u0000${uploadId}`,
});
/**
 * A Query bound at or below the sort key of every upload whose key sorts at
 * or after `value`, whatever was cut from their keys: `value` itself when
 * it fits whole in the room a key has, else cut to it (see the header).
 */
const lowerBound = (value: string): SortKeyBound => ({
  op: '>=',
  value: Buffer.byteLength(value) <= KEY_ROOM ? value : cutToBytes(value, KEY_ROOM),
});
const partNumberKey = (n: number) => String(n).padStart(5, '0');
const partKey = (uploadId: string, n: number) => ({ pk: `#PARTS#${uploadId}`, sk: partNumberKey(n) });
const partHolder = (uploadId: string, n: number) => `#PART#${uploadId}#${partNumberKey(n)}`;

function uploadFrom(item: Record<string, unknown>): UploadRecord {
  const rest = withoutKeys<UploadRecord>(item);
  return { ...rest, metadata: rest.metadata ?? {} };
}

function partFrom(item: Record<string, unknown>): PartRecord {
  const { version: _version, ...rest } = withoutKeys<PartRecord & { version?: string }>(item);
  return rest;
}

/** Transactions that collided with another: nine tries, pauses drawn below 10 ms doubling to 640 ms (writers that met do not meet again in step). */
const CONFLICT_RETRY: RetryPolicy = { attempts: 9, baseMs: 10, maxMs: 640, jitter: 'full' };

export class UploadStore {
  constructor(private readonly db: Database) {}

  private get table() {
    return this.db.tables.objects;
  }

  /** Records a new upload; throws NoSuchBucketError if the bucket is gone or being deleted. */
  async create(upload: UploadRecord): Promise<void> {
    try {
      await this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              ConditionCheck: {
                TableName: this.db.tables.accounts,
                Key: { pk: `BUCKET#${upload.bucket}`, sk: 'BUCKET' },
                ...bucketWritableCondition(),
              },
            },
            {
              Put: {
                TableName: this.table,
                Item: { ...stripUndefined(upload), ...uploadKey(upload.bucket, upload.key, upload.uploadId) },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
          ],
        }),
      );
    } catch (err) {
      if (err instanceof TransactionCanceledException && err.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') {
        throw new NoSuchBucketError(upload.bucket);
      }
      throw err;
    }
  }

  async get(bucket: string, key: string, uploadId: string): Promise<UploadRecord | undefined> {
    if (namesNoUpload(uploadId)) return undefined;
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: uploadKey(bucket, key, uploadId), ConsistentRead: true }),
    );
    return out.Item ? uploadFrom(out.Item) : undefined;
  }

  /**
   * Stores a part, replacing the part with the same number (whose CID, if
   * different, loses its reference and becomes a collection candidate).
   * Throws NoSuchUploadError once the upload has ended.
   */
  async putPart(upload: Pick<UploadRecord, 'bucket' | 'key' | 'uploadId'>, part: PartRecord): Promise<PartRecord | undefined> {
    const { uploadId } = upload;
    const key = partKey(uploadId, part.partNumber);
    const holder = partHolder(uploadId, part.partNumber);
    // The part changed under us, or a concurrent transaction touched the upload: again, from the read.
    return retry(
      async () => {
        const got = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }));
        const old = got.Item;
        // References before the record and removed after it (see ObjectStore.write).
        const items: TransactItem[] = [
          {
            ConditionCheck: {
              TableName: this.table,
              Key: uploadKey(upload.bucket, upload.key, uploadId),
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
        ];
        if (!old || old.cid !== part.cid) items.push({ Put: { TableName: this.table, Item: cidReference(part.cid, holder) } });
        items.push({
          Put: {
            TableName: this.table,
            Item: { ...stripUndefined(part), ...key, version: uniqueToken() },
            ...(old
              ? { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': old.version } }
              : { ConditionExpression: 'attribute_not_exists(pk)' }),
          },
        });
        if (old && old.cid !== part.cid) {
          items.push({ Put: { TableName: this.table, Item: candidateItem(old.cid as string) } });
          items.push({ Delete: { TableName: this.table, Key: cidReference(old.cid as string, holder) } });
        }
        try {
          await this.db.doc.send(new TransactWriteCommand({ TransactItems: items }));
          return old ? partFrom(old) : undefined;
        } catch (err) {
          if (err instanceof TransactionCanceledException && err.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') {
            throw new NoSuchUploadError(uploadId);
          }
          throw err;
        }
      },
      { ...CONFLICT_RETRY, retryable: (err) => err instanceof TransactionCanceledException },
    );
  }

  /** Parts in number order, after `after`; `truncated` when more follow. */
  async parts(uploadId: string, after: number, limit: number): Promise<{ parts: PartRecord[]; truncated: boolean }> {
    const parts: PartRecord[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    for (;;) {
      const out = await this.db.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND sk > :after',
          ExpressionAttributeValues: { ':pk': `#PARTS#${uploadId}`, ':after': partNumberKey(after) },
          Limit: Math.min(limit - parts.length + 1, 1000),
          ConsistentRead: true,
          ExclusiveStartKey,
        }),
      );
      for (const item of out.Items ?? []) {
        if (parts.length === limit) return { parts, truncated: true };
        parts.push(partFrom(item));
      }
      ExclusiveStartKey = out.LastEvaluatedKey;
      if (!ExclusiveStartKey) return { parts, truncated: false };
    }
  }

  /** Every part of the upload, in number order (at most 10000). */
  async allParts(uploadId: string): Promise<PartRecord[]> {
    return (await this.parts(uploadId, 0, MAX_PART_NUMBER)).parts;
  }

  /**
   * Ends every upload of a bucket being deleted (its `deleting` mark keeps
   * new ones out): all but the last few in transactions of their own, and
   * returns the writes that end the rest, for the transaction that deletes
   * the bucket, with the ids of every upload ended (for their cleanup).
   * The deletes are unconditional: an upload that a racing Complete or
   * Abort ended meanwhile only gets a second, harmless cleanup marker.
   */
  async endAllItems(bucket: string): Promise<{ items: TransactItem[]; uploadIds: string[] }> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `#UPLOAD#${bucket}` },
      ProjectionExpression: 'sk, uploadId',
      ConsistentRead: true,
    });
    const uploads = items.map((item) => ({ sk: item.sk as string, uploadId: item.uploadId as string }));
    const at = new Date().toISOString();
    const ending = (u: { sk: string; uploadId: string }): TransactItem[] => [
      { Delete: { TableName: this.table, Key: { pk: `#UPLOAD#${bucket}`, sk: u.sk } } },
      { Put: { TableName: this.table, Item: { pk: CLEANUP, sk: u.uploadId, at } } },
    ];
    // Two writes an upload; the bucket's own delete takes one more of the transaction's 100.
    const inline = Math.min(uploads.length, 49);
    const before = uploads.slice(0, uploads.length - inline);
    for (let i = 0; i < before.length; i += 50) {
      await this.db.doc.send(new TransactWriteCommand({ TransactItems: before.slice(i, i + 50).flatMap(ending) }));
    }
    return { items: uploads.slice(uploads.length - inline).flatMap(ending), uploadIds: uploads.map((u) => u.uploadId) };
  }

  /**
   * One page of the bucket's uploads in S3's order (key, then initiation),
   * with keys under a common prefix rolled up. A page costs what it returns:
   * the query restarts after each common prefix.
   */
  async list(bucket: string, q: UploadListQuery): Promise<UploadListPage> {
    const prefix = q.prefix ?? '';
    const entries: UploadListPage['entries'] = [];
    // The query starts at or below the first upload to list (lowerBound);
    // what it lets through before that is passed over here, by the real key.
    let from: SortKeyBound | undefined = prefix ? lowerBound(prefix) : undefined;
    let before: (upload: UploadRecord) => boolean = () => false;
    if (q.keyMarker !== undefined && q.keyMarker !== '') {
      const marker = q.keyMarker;
      const rolledUp =
        q.delimiter &&
        marker.startsWith(prefix) &&
        marker.endsWith(q.delimiter) &&
        marker.indexOf(q.delimiter, prefix.length) === marker.length - q.delimiter.length;
      let bound: string;
      if (rolledUp) {
        bound = prefixSuccessor(marker) ?? '\u{10ffff}';
        before = (u) => compareKeys(u.key, marker) <= 0 || u.key.startsWith(marker);
      } else if (q.uploadIdMarker) {
        const idMarker = q.uploadIdMarker;
        bound = `${marker}\u0000${idMarker}`;
        before = (u) => {
          const order = compareKeys(u.key, marker);
          return order < 0 || (order === 0 && compareKeys(u.uploadId, idMarker) <= 0);
        };
      } else {
        // Every upload of the marker's key sorts below `<key>\u0001`.
        bound = `${marker}\u0001`;
        before = (u) => compareKeys(u.key, marker) <= 0;
      }
      const low = lowerBound(bound);
      if (!from || compareKeys(low.value, from.value) > 0) from = low;
    }
    const pk = `#UPLOAD#${bucket}`;
    const query = async (limit: number) => {
      const bound = from;
      return this.db.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: bound ? `pk = :pk AND sk ${bound.op} :from` : 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk, ...(bound ? { ':from': bound.value } : {}) },
          Limit: limit,
          ConsistentRead: true,
        }),
      );
    };
    // The last sort key passed: a restart below it (a bound cut short) must not list anything twice.
    let passed: string | undefined;
    // The common prefix last rolled up: the keys under it are passed over.
    let rolled: string | undefined;
    for (;;) {
      const out = await query(Math.min(Math.max(q.maxUploads, 0) - entries.length + 1, 1000));
      let restart: string | undefined;
      for (const item of out.Items ?? []) {
        const sk = item.sk as string;
        if (passed !== undefined && compareKeys(sk, passed) <= 0) continue;
        passed = sk;
        from = { op: '>', value: sk };
        const upload = uploadFrom(item);
        if (before(upload) || (rolled !== undefined && upload.key.startsWith(rolled))) continue;
        if (!upload.key.startsWith(prefix)) {
          if (compareKeys(upload.key, prefix) < 0) continue;
          return { entries, truncated: false };
        }
        if (entries.length >= q.maxUploads) return { entries, truncated: true };
        if (q.delimiter) {
          const at = upload.key.indexOf(q.delimiter, prefix.length);
          if (at >= 0) {
            const common = upload.key.slice(0, at + q.delimiter.length);
            entries.push({ kind: 'prefix', prefix: common });
            restart = prefixSuccessor(common);
            if (restart === undefined) return { entries, truncated: false };
            rolled = common;
            break;
          }
        }
        entries.push({ kind: 'upload', upload });
      }
      if (restart !== undefined) {
        from = lowerBound(restart);
        continue;
      }
      if (!out.LastEvaluatedKey) return { entries, truncated: false };
    }
  }

  /**
   * The writes that end an upload, for the transaction that commits its
   * object (or aborts it): the upload item goes (it must still exist) and
   * the cleanup marker comes, and with `completion` the record of what it
   * made.
   */
  endItems(upload: Pick<UploadRecord, 'bucket' | 'key' | 'uploadId'>, completion?: CompletionRecord): TransactItem[] {
    return [
      {
        Delete: {
          TableName: this.table,
          Key: uploadKey(upload.bucket, upload.key, upload.uploadId),
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
      { Put: { TableName: this.table, Item: { pk: CLEANUP, sk: upload.uploadId, at: new Date().toISOString() } } },
      ...(completion
        ? [{ Put: { TableName: this.table, Item: { ...stripUndefined(completion), pk: DONE, sk: completion.uploadId } } }]
        : []),
    ];
  }

  /** The unexpired record of the upload's completion, if it completed as `bucket`/`key`. */
  async completion(bucket: string, key: string, uploadId: string, now = Date.now()): Promise<CompletionRecord | undefined> {
    if (namesNoUpload(uploadId)) return undefined;
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: { pk: DONE, sk: uploadId }, ConsistentRead: true }));
    const record = out.Item ? withoutKeys<CompletionRecord>(out.Item) : undefined;
    return record && record.bucket === bucket && record.key === key && record.expiresAt > now ? record : undefined;
  }

  /** Drops expired completion records (run by garbage collection). Returns how many. */
  async dropExpiredCompletions(now = Date.now()): Promise<number> {
    let dropped = 0;
    for await (const item of queryEach(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': DONE },
      ProjectionExpression: 'sk, expiresAt',
    })) {
      if ((item.expiresAt as number) > now) continue;
      await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: { pk: DONE, sk: item.sk } }));
      dropped++;
    }
    return dropped;
  }

  /** Ends the upload without an object (AbortMultipartUpload); throws NoSuchUploadError if it already ended. */
  async end(upload: Pick<UploadRecord, 'bucket' | 'key' | 'uploadId'>): Promise<void> {
    if (namesNoUpload(upload.uploadId)) throw new NoSuchUploadError(upload.uploadId);
    try {
      await this.db.doc.send(new TransactWriteCommand({ TransactItems: this.endItems(upload) }));
    } catch (err) {
      if (err instanceof TransactionCanceledException && err.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') {
        throw new NoSuchUploadError(upload.uploadId);
      }
      throw err;
    }
  }

  /**
   * Removes an ended upload's parts: each batch deletes the part items and
   * their references and makes their CIDs collection candidates, in one
   * transaction (a few batches at once); the marker goes last. Idempotent,
   * and safe to run twice at once. Returns the number of parts removed.
   */
  async cleanup(uploadId: string): Promise<number> {
    let removed = 0;
    for (;;) {
      const out = await this.db.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': `#PARTS#${uploadId}` },
          Limit: CLEANUP_BATCH * CLEANUP_CONCURRENCY,
          ConsistentRead: true,
        }),
      );
      const parts = (out.Items ?? []).map(partFrom);
      if (!parts.length) break;
      const batches: PartRecord[][] = [];
      for (let i = 0; i < parts.length; i += CLEANUP_BATCH) batches.push(parts.slice(i, i + CLEANUP_BATCH));
      await Promise.all(batches.map((batch) => this.removeParts(uploadId, batch)));
      removed += parts.length;
    }
    await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: { pk: CLEANUP, sk: uploadId } }));
    return removed;
  }

  private async removeParts(uploadId: string, parts: PartRecord[]): Promise<void> {
    // Candidates first, references last (see ObjectStore.write).
    const items: TransactItem[] = [];
    const candidates = new Set(parts.map((part) => part.cid));
    for (const cid of candidates) items.push({ Put: { TableName: this.table, Item: candidateItem(cid) } });
    for (const part of parts) items.push({ Delete: { TableName: this.table, Key: partKey(uploadId, part.partNumber) } });
    for (const part of parts) {
      items.push({ Delete: { TableName: this.table, Key: cidReference(part.cid, partHolder(uploadId, part.partNumber)) } });
    }
    // Only conflicts with concurrent transactions cancel these writes (they carry no conditions).
    await retry(() => this.db.doc.send(new TransactWriteCommand({ TransactItems: items })), {
      ...CONFLICT_RETRY,
      retryable: (err) => err instanceof TransactionCanceledException,
    });
  }

  /** Finishes the cleanups of uploads that ended at least `olderThanMs` ago (a process died during one). */
  async resumeCleanups(olderThanMs: number, now = Date.now()): Promise<number> {
    let resumed = 0;
    for await (const item of queryEach(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': CLEANUP },
      ConsistentRead: true,
    })) {
      if (Date.parse(item.at as string) > now - olderThanMs) continue;
      await this.cleanup(item.sk as string);
      resumed++;
    }
    return resumed;
  }
}
