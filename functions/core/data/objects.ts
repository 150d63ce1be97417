/**
 * Object records: one item per (bucket, key) in the objects table, keyed by
 * the bucket name and the object key themselves so a listing is one Query in
 * S3's byte order. Bucket names cannot start with '#', which leaves that
 * prefix for the table's other items:
 *
 *   <bucket> / <key>              the object record          gsi1: CID#<cidV0> / <holder>
 *   #REF#<cidV0> / <holder>        "this object references this CID"
 *
 * The reference items, the collection candidates beside them and what
 * reads them back (collection, the integrity check) are in
 * object-references.ts.
 *
 * The holder is `<bucket>/<key>`, or `#OBJ#<bucket>/<SHA-256 of the key>`
 * when that is past the 1024 bytes DynamoDB allows a sort key (an index's
 * too): S3 allows a key of 1024 bytes in any bucket, so bucket and key
 * together may not fit, and a sort key longer than that is refused (local
 * and AWS alike: a 500 for the last ~64 bytes of key length it was). Every
 * holder that ever fitted keeps its old form, so data written before the
 * hashed form needs no migration. Nothing reads a holder back: it only has
 * to name one object uniquely. See
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html
 *
 * Multipart uploads keep their items here too (see data/uploads.ts); a part's
 * reference is `#REF#<cidV0> / #PART#<uploadId>#<part number>`.
 *
 * The versions of a versioned bucket's keys (their items, delete markers,
 * and the writes, deletes and listings that keep them) are in
 * object-versions-store.ts (VersionedObjectStore, the store the services
 * use), their key layout in object-versions.ts; this module holds the plain
 * object records, listings and the pieces both share.
 *
 * Every write is one transaction: the record, its reference items and the
 * collection candidate change together, conditioned on the record being the
 * version the writer read and on the bucket existing (and not being deleted),
 * so a CID is referenced exactly while some record names it.
 */
import { createHash } from 'node:crypto';
import { QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { uniqueToken } from '../ids.js';
import { stripUndefined, withoutKeys, writtenIf } from './tables.js';
import { queryEach, scanEach } from './pages.js';
import { candidateItem, cidReference } from './object-references.js';
import { bucketWritableCondition, DELETE_MARK_TTL_MS, type StoredAcl, type Tag, type VersioningState } from './buckets.js';
import { versionHolder } from './object-versions.js';
import type { Database, TransactItem } from './dynamo.js';

export type { AclGrant, AclPermission, CannedAcl, StoredAcl, Tag, VersioningState } from './buckets.js';
export type { TransactItem } from './dynamo.js';

/** The canned ACLs Cairn stores, on objects and buckets alike (S3's other canned ACLs name grantees Cairn does not have). */

export interface ObjectRecord {
  bucket: string;
  key: string;
  /** CIDv0 of the object's bytes, as Kubo's `ipfs add` prints it. */
  cid: string;
  size: number;
  /** The ETag without quotes: an MD5 hex digest, or `<md5>-<parts>` for multipart. */
  etag: string;
  lastModified: string;
  contentType: string;
  /** A canned ACL's name, or the grants (core/storage/acl.ts); each version has its own. */
  acl: StoredAcl;
  ownerId: string;
  cacheControl?: string;
  contentDisposition?: string;
  contentEncoding?: string;
  contentLanguage?: string;
  expires?: string;
  /** User metadata (`x-amz-meta-*`), names lowercased without the prefix. */
  metadata: Record<string, string>;
  /** Checksums the client sent (`x-amz-checksum-<algorithm>`), base64, by lowercase algorithm. */
  checksums?: Record<string, string>;
  /** Multipart objects: the number of parts. */
  parts?: number;
  /** Multipart objects: the parts' sizes in order, run-length encoded as [size, count] pairs (GetObject's partNumber, GetObjectAttributes). */
  partSizes?: [number, number][];
  /** Multipart objects with a checksum algorithm: each part's checksum (base64), in order; absent when it would not fit an item. */
  partChecksums?: string[];
  /** Set by the integrity check (storage/fsck.ts) when the content's blocks are missing or corrupt: what is wrong. */
  damaged?: string;
  /** The object's tags (x-amz-tagging, PutObjectTagging), in the order given; absent when it has none. */
  tags?: Tag[];
  /** The version's id in a versioned bucket (`null` for the null version); absent on an object written before versioning (the null version too). */
  versionId?: string;
}

export interface PutOptions {
  also?: CommitAlso;
  precondition?: Precondition;
  /** The bucket's versioning state as the caller last saw it; the write checks it and follows the bucket's real state. */
  versioning?: VersioningState;
}

export interface PutOutcome {
  /** The record that was current before (kept as a version in a versioned bucket). */
  replaced?: ObjectRecord;
  /** The new version's id, in a versioned bucket. */
  versionId?: string;
}

export interface DeleteOutcome {
  /** The object version removed for good, if any. */
  removed?: ObjectRecord;
  /** The version a versioned delete made (a delete marker) or removed. */
  versionId?: string;
  /** Whether that version is a delete marker. */
  deleteMarker?: boolean;
}

/**
 * The bucket's condition check failed: it is gone, being deleted, or its
 * versioning changed since the caller read it (thrown by the writes of both
 * stores, caught by ObjectStore's inBucketMode).
 */
export class BucketCheckFailed extends Error {}

/** Found nothing: a key's version a write wanted is gone, and the write starts again. */
type Item = Record<string, unknown>;

/**
 * More writes that must commit in the same transaction as an object record
 * (CompleteMultipartUpload ends its upload with them), and the error to
 * throw when one of their conditions fails.
 */
export interface CommitAlso {
  items: TransactItem[];
  failed: () => Error;
}

/**
 * A check of the record a write or delete would replace (undefined: none),
 * made against the very version the write is conditioned on, so that no
 * other write can come between the check and the commit; throws to refuse.
 */
export type Precondition = (current: ObjectRecord | undefined) => void;

export class NoSuchBucketError extends Error {
  override name = 'NoSuchBucketError';
  constructor(readonly bucket: string) {
    super(`bucket "${bucket}" does not exist`);
  }
}

export interface ListPage {
  /** Records and common prefixes in key order. */
  entries: Array<{ kind: 'object'; record: ObjectRecord } | { kind: 'prefix'; prefix: string }>;
  /** Whether more entries follow the last one returned. */
  truncated: boolean;
}

export interface ListQuery {
  prefix?: string;
  delimiter?: string;
  /** List keys strictly after this one. */
  after?: string;
  /** List keys at or after this one (wins over `after`). */
  startAt?: string;
  maxKeys: number;
}

const MAX_CODE_POINT = 0x10ffff;

/** The smallest string greater than every string that starts with `prefix`. */
export function prefixSuccessor(prefix: string): string | undefined {
  const points = Array.from(prefix);
  while (points.length) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < MAX_CODE_POINT) {
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return points.join('') + String.fromCodePoint(next);
    }
  }
  return undefined;
}

/** DynamoDB's limit on a sort key's value, an index's included, in UTF-8 bytes (see the header). */
export const MAX_SORT_KEY_BYTES = 1024;

/** `text` cut to at most `bytes` bytes of UTF-8, at a character boundary. */
export function cutToBytes(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  let used = 0;
  let end = 0;
  for (const ch of text) {
    const size = ch.length === 2 ? 4 : ch.charCodeAt(0) < 0x80 ? 1 : ch.charCodeAt(0) < 0x800 ? 2 : 3;
    if (used + size > bytes) break;
    used += size;
    end += ch.length;
  }
  return text.slice(0, end);
}

/** S3's key order (and DynamoDB's for strings): UTF-8 bytes. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

export type SortKeyBound = { op: '>' | '>='; value: string };

/** Where a listing starts: at `startAt`, strictly after `after`, or at the prefix (whichever of them is in it); none for the whole partition. */
export function listingStart(q: { startAt?: string; after?: string }, prefix: string): SortKeyBound | undefined {
  if (q.startAt !== undefined && q.startAt > prefix) return { op: '>=', value: q.startAt };
  if (q.after !== undefined && q.after >= prefix) return { op: '>', value: q.after };
  return prefix ? { op: '>=', value: prefix } : undefined;
}

/**
 * A Query's lower bound on a sort key, within MAX_SORT_KEY_BYTES: a client's
 * marker may be longer than any stored key, and DynamoDB refuses a longer
 * value. Cut to fit, the bound lets through a few keys the real one would
 * not (those between the cut and the marker); `passes` tells them apart.
 */
export function sortKeyBound(bound: SortKeyBound): { condition: SortKeyBound; passes: (sk: string) => boolean } {
  if (Buffer.byteLength(bound.value) <= MAX_SORT_KEY_BYTES) return { condition: bound, passes: () => true };
  const cut = cutToBytes(bound.value, MAX_SORT_KEY_BYTES);
  return { condition: { op: '>=', value: cut }, passes: (sk) => compareKeys(sk, bound.value) > 0 };
}

/** Names the object `<bucket>/<key>` in its CID reference and its gsi1 entry, within MAX_SORT_KEY_BYTES (see the header). */
export function objectHolder(bucket: string, key: string): string {
  const plain = `${bucket}/${key}`;
  if (Buffer.byteLength(plain) <= MAX_SORT_KEY_BYTES) return plain;
  return `#OBJ#${bucket}/${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}

/**
 * How often a write of one key is tried against the record it found before
 * giving up. Writers of one key take turns and each turn one of them wins,
 * so N racing writers need up to N attempts (12 racing overwrites used to
 * exhaust 8 and answer 500).
 */
export const MAX_WRITE_ATTEMPTS = 64;

/** Where write() puts the record among its transaction's items (after the bucket check and, for a new CID, its reference). */
function recordIndex(record: ObjectRecord, old: Record<string, unknown> | undefined): number {
  return !old || old.cid !== record.cid ? 2 : 1;
}

export class ObjectStore {
  constructor(protected readonly db: Database) {}

  protected get table() {
    return this.db.tables.objects;
  }

  async get(bucket: string, key: string): Promise<ObjectRecord | undefined> {
    const item = await this.getItem(bucket, key);
    return item ? fromItem(item) : undefined;
  }

  /**
   * Writes the record as the key's current object. In a bucket never
   * versioned it replaces whatever was there; in a versioned one
   * (VersionedObjectStore) the record before becomes a version (or,
   * suspended, the null version it was is replaced). Throws
   * NoSuchBucketError if the bucket is gone or being deleted, and
   * `also.failed()` if a condition of the extra writes fails; whatever
   * `precondition` throws, before anything is written.
   */
  async put(record: ObjectRecord, options: PutOptions = {}): Promise<PutOutcome> {
    return this.inBucketMode(record.bucket, options.versioning, (mode) => this.putIn(mode, record, options));
  }

  /** put() in the bucket's versioning state: here a bucket never versioned (VersionedObjectStore writes the others). */
  protected putIn(mode: VersioningState | null, record: ObjectRecord, options: PutOptions): Promise<PutOutcome> {
    if (mode !== null) throw new Error(`bucket "${record.bucket}" is versioned: its objects are written by VersionedObjectStore`);
    return this.putUnversioned(record, options);
  }

  /**
   * Runs a write made for the bucket's versioning state as the caller saw
   * it; when the bucket's check fails, reads the bucket and tries again in
   * its real state (NoSuchBucketError when it is gone or being deleted).
   */
  protected async inBucketMode<T>(
    bucket: string,
    hint: VersioningState | undefined,
    write: (mode: VersioningState | null) => Promise<T>,
  ): Promise<T> {
    let mode: VersioningState | null = hint ?? null;
    for (let turn = 0; ; turn++) {
      try {
        return await write(mode);
      } catch (err) {
        if (!(err instanceof BucketCheckFailed)) throw err;
        const real = await this.bucketVersioning(bucket);
        if (real === mode || turn >= 3) throw new NoSuchBucketError(bucket);
        mode = real;
      }
    }
  }

  /** The bucket's versioning state, read afresh; NoSuchBucketError when it is gone or being deleted. */
  protected async bucketVersioning(bucket: string): Promise<VersioningState | null> {
    const item = await this.db.reader.get(this.db.tables.accounts, { pk: `BUCKET#${bucket}`, sk: 'BUCKET' });
    if (!item || (typeof item.deleting === 'number' && item.deleting >= Date.now() - DELETE_MARK_TTL_MS))
      throw new NoSuchBucketError(bucket);
    return item.versioning === 'Enabled' || item.versioning === 'Suspended' ? item.versioning : null;
  }

  private async putUnversioned(record: ObjectRecord, options: PutOptions): Promise<PutOutcome> {
    const { also, precondition } = options;
    // Most writes create a key: try that first without reading (unless a
    // precondition needs the record there). If the key is taken (or changed
    // since), the cancellation carries the current record (ALL_OLD) and the
    // write is tried again against it.
    let old = precondition ? await this.getItem(record.bucket, record.key) : undefined;
    const extra = also?.items ?? [];
    for (let attempt = 0; ; attempt++) {
      try {
        precondition?.(old ? fromItem(old) : undefined);
        await this.write(record, old, extra);
        return { replaced: old ? fromItem(old) : undefined };
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        const reasons = err.CancellationReasons ?? [];
        const at = recordIndex(record, old);
        if (reasons[0]?.Code === 'ConditionalCheckFailed') throw new BucketCheckFailed();
        if (reasons.slice(at + 1, at + 1 + extra.length).some((r) => r?.Code === 'ConditionalCheckFailed')) throw also!.failed();
        if (attempt >= MAX_WRITE_ATTEMPTS || reasons[at]?.Code !== 'ConditionalCheckFailed') throw err;
        const current = reasons[at]?.Item;
        old = current
          ? (unmarshall(current as Record<string, AttributeValue>) as Record<string, unknown>)
          : await this.getItem(record.bucket, record.key);
      }
    }
  }

  /** Changes an existing object's ACL in place; false if there is no such object. */
  async setAcl(bucket: string, key: string, acl: StoredAcl): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: bucket, sk: key },
          ConditionExpression: 'attribute_exists(pk)',
          ...aclUpdate(acl),
        }),
      ),
    );
  }

  /**
   * Sets (an empty list: removes) an existing object's tags in place, as
   * setAcl does its ACL; false if there is no such object.
   */
  async setTags(bucket: string, key: string, tags: Tag[]): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: bucket, sk: key },
          ConditionExpression: 'attribute_exists(pk)',
          ...tagsUpdate(tags),
        }),
      ),
    );
  }

  /**
   * DeleteObject without a version id: in a bucket never versioned, deletes
   * the record if present (and if `precondition`, checked only when there is
   * one, does not throw); in a versioned bucket (VersionedObjectStore),
   * makes a delete marker the latest version (suspended: the null one,
   * replacing the null version).
   */
  async delete(bucket: string, key: string, precondition?: Precondition, versioning?: VersioningState): Promise<DeleteOutcome> {
    return this.inBucketMode(bucket, versioning, (mode) => this.deleteIn(mode, bucket, key, precondition));
  }

  /** delete() in the bucket's versioning state: here a bucket never versioned (VersionedObjectStore places the markers). */
  protected deleteIn(mode: VersioningState | null, bucket: string, key: string, precondition?: Precondition): Promise<DeleteOutcome> {
    if (mode !== null) throw new Error(`bucket "${bucket}" is versioned: its objects are deleted by VersionedObjectStore`);
    return this.deleteUnversioned(bucket, key, precondition);
  }

  private async deleteUnversioned(bucket: string, key: string, precondition?: Precondition): Promise<DeleteOutcome> {
    for (let attempt = 0; ; attempt++) {
      const old = await this.getItem(bucket, key);
      if (!old) return {};
      precondition?.(fromItem(old));
      try {
        await this.db.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              // A bucket versioned since the caller looked makes a delete marker instead.
              {
                ConditionCheck: {
                  TableName: this.db.tables.accounts,
                  Key: { pk: `BUCKET#${bucket}`, sk: 'BUCKET' },
                  ConditionExpression: 'attribute_not_exists(versioning)',
                },
              },
              {
                Delete: {
                  TableName: this.table,
                  Key: { pk: bucket, sk: key },
                  ConditionExpression: 'version = :v',
                  ExpressionAttributeValues: { ':v': old.version },
                },
              },
              // The reference goes last: see write().
              { Put: { TableName: this.table, Item: candidateItem(old.cid as string) } },
              { Delete: { TableName: this.table, Key: cidReference(old.cid as string, holderOf(bucket, key, old)) } },
            ],
          }),
        );
        return { removed: fromItem(old) };
      } catch (err) {
        if (err instanceof TransactionCanceledException && err.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') {
          throw new BucketCheckFailed();
        }
        if (!(err instanceof TransactionCanceledException) || attempt >= MAX_WRITE_ATTEMPTS) throw err;
      }
    }
  }

  protected getItem(bucket: string, key: string): Promise<Record<string, unknown> | undefined> {
    return this.db.reader.get(this.table, { pk: bucket, sk: key });
  }

  private async write(record: ObjectRecord, old: Record<string, unknown> | undefined, also: TransactItem[]): Promise<void> {
    const version = uniqueToken();
    const item = {
      ...stripUndefined(record),
      pk: record.bucket,
      sk: record.key,
      version,
      gsi1pk: `CID#${record.cid}`,
      gsi1sk: objectHolder(record.bucket, record.key),
    };
    // Order matters where transactions are emulated (the embedded server
    // applies items one by one, so a crash can stop half-way): references are
    // added before the record and removed after it, so an interrupted write
    // can only leave an extra reference (blocks kept), never a record whose
    // blocks may be collected.
    const items: TransactItem[] = [
      {
        ConditionCheck: {
          TableName: this.db.tables.accounts,
          Key: { pk: `BUCKET#${record.bucket}`, sk: 'BUCKET' },
          ...bucketWritableCondition(Date.now(), null),
        },
      },
    ];
    if (!old || old.cid !== record.cid) {
      items.push({ Put: { TableName: this.table, Item: { ...refKey(record.cid, record.bucket, record.key) } } });
    }
    if (items.length !== recordIndex(record, old)) throw new Error('object write: the record is not where put() looks for it');
    items.push({
      Put: {
        TableName: this.table,
        Item: item,
        ...(old
          ? { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': old.version } }
          : { ConditionExpression: 'attribute_not_exists(pk)' }),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
    items.push(...also);
    if (old && old.cid !== record.cid) {
      items.push({ Put: { TableName: this.table, Item: candidateItem(old.cid as string) } });
      items.push({ Delete: { TableName: this.table, Key: refKey(old.cid as string, record.bucket, record.key) } });
    }
    await this.db.doc.send(new TransactWriteCommand({ TransactItems: items }));
  }

  /** Any one object stored with this CID (for the gateway's Content-Type), or undefined. */
  async findByCid(cid: string): Promise<ObjectRecord | undefined> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        ExpressionAttributeValues: { ':pk': `CID#${cid}` },
        Limit: 1,
      }),
    );
    const item = out.Items?.[0];
    return item ? fromItem(item) : undefined;
  }

  /** Adds a collection candidate (a CID imported but maybe never referenced, e.g. a failed upload). */
  async addCandidate(cid: string): Promise<void> {
    await this.db.doc.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: this.table, Item: candidateItem(cid) } }] }));
  }

  /**
   * Marks (or, with `damage` undefined, clears) an object as damaged, if it
   * still holds `cid`: a record overwritten meanwhile is left alone.
   */
  async markDamaged(bucket: string, key: string, cid: string, damage: string | undefined): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: bucket, sk: key },
          UpdateExpression: damage === undefined ? 'REMOVE damaged' : 'SET damaged = :d',
          ConditionExpression: 'cid = :cid',
          ExpressionAttributeValues: { ':cid': cid, ...(damage === undefined ? {} : { ':d': damage }) },
        }),
      ),
    );
  }

  /** Every object record of every bucket, non-current versions included (a full scan: the integrity check's). */
  async *allRecords(): AsyncGenerator<ObjectRecord> {
    for await (const item of scanEach(this.db, {
      TableName: this.table,
      FilterExpression: 'NOT begins_with(pk, :hash) OR (begins_with(pk, :ver) AND attribute_not_exists(deleteMarker))',
      ExpressionAttributeValues: { ':hash': '#', ':ver': '#VER#' },
      ConsistentRead: true,
    }))
      yield fromItem(item);
  }

  /** Whether the bucket holds any object (VersionedObjectStore: or any version or delete marker). */
  async hasObjects(bucket: string): Promise<boolean> {
    return this.anyItem(bucket);
  }

  /** Whether the partition holds any item. */
  protected async anyItem(pk: string): Promise<boolean> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        Limit: 1,
        ConsistentRead: true,
        ProjectionExpression: 'pk',
      }),
    );
    return (out.Items?.length ?? 0) > 0;
  }

  /**
   * One page of a listing in key order. Keys under a common prefix are
   * skipped by restarting the query just past the prefix (at
   * prefixSuccessor: sort keys are the object keys themselves, and
   * DynamoDB orders them by UTF-8 bytes, which is code point order, so no
   * key under the prefix sorts at or after it), so a page costs what it
   * returns, not what the bucket holds. Each query's Limit is ListingReads':
   * 50 folders cost about 50 small queries, where a full page's Limit per
   * folder read up to 1,000 items each (issue 35: 1.46 s and 50,000 items
   * for 2,000 objects).
   */
  async list(bucket: string, q: ListQuery): Promise<ListPage> {
    const prefix = q.prefix ?? '';
    const entries: ListPage['entries'] = [];
    let from = listingStart(q, prefix);
    if (q.maxKeys <= 0) return { entries, truncated: await this.anyAfter(bucket, prefix, from) };
    // A marker longer than any key is cut to fit a Query; the keys the cut lets through are skipped all along.
    const floor = from ? sortKeyBound(from).passes : () => true;
    const reads = new ListingReads(Boolean(q.delimiter));
    for (;;) {
      const bound = from && sortKeyBound(from);
      const out = await this.db.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: bound ? `pk = :pk AND sk ${bound.condition.op} :from` : 'pk = :pk',
          ExpressionAttributeValues: { ':pk': bucket, ...(bound ? { ':from': bound.condition.value } : {}) },
          // The page's room and the one item that says whether more follow.
          Limit: reads.limit(q.maxKeys - entries.length + 1),
          ConsistentRead: true,
        }),
      );
      const items = out.Items ?? [];
      let restart: string | undefined;
      for (const item of items) {
        const key = item.sk as string;
        if (!floor(key)) {
          from = { op: '>', value: key };
          continue;
        }
        if (!key.startsWith(prefix)) return { entries, truncated: false };
        if (entries.length === q.maxKeys) return { entries, truncated: true };
        if (q.delimiter) {
          const at = key.indexOf(q.delimiter, prefix.length);
          if (at >= 0) {
            const common = key.slice(0, at + q.delimiter.length);
            entries.push({ kind: 'prefix', prefix: common });
            restart = prefixSuccessor(common);
            if (restart === undefined) return { entries, truncated: false };
            break;
          }
        }
        entries.push({ kind: 'object', record: fromItem(item) });
        from = { op: '>', value: key };
      }
      if (restart !== undefined) {
        from = { op: '>=', value: restart };
        reads.skipped();
        continue;
      }
      if (!out.LastEvaluatedKey) return { entries, truncated: false };
      reads.grow();
    }
  }

  private async anyAfter(bucket: string, prefix: string, from: SortKeyBound | undefined): Promise<boolean> {
    const bound = from && sortKeyBound(from);
    for await (const item of queryEach(this.db, {
      TableName: this.table,
      KeyConditionExpression: bound ? `pk = :pk AND sk ${bound.condition.op} :from` : 'pk = :pk',
      ExpressionAttributeValues: { ':pk': bucket, ...(bound ? { ':from': bound.condition.value } : {}) },
      ProjectionExpression: 'sk',
      Limit: 16,
    })) {
      const key = item.sk as string;
      if (bound && !bound.passes(key)) continue;
      return key.startsWith(prefix);
    }
    return false;
  }
}

/** The most items one listing query asks for (a page's 1,000 keys and the one that says whether there are more). */
const MAX_QUERY_ITEMS = 1000;
/** The items a listing's query asks for after a common prefix. */
const AFTER_PREFIX = 8;
/** The items the first query of a listing with a delimiter asks for (four queries reach a page of 1,000). */
const FIRST_WITH_DELIMITER = 100;

/**
 * How many items a listing's next Query asks for (its Limit). A Query
 * reads, and DynamoDB charges for, every item up to its Limit, used or
 * not, and a listing with a delimiter uses one item of a common prefix
 * and skips the rest. So without a delimiter a listing asks for what the
 * page still has room for; with one, a tenth of a page first, a few after
 * each common prefix (AFTER_PREFIX: the next key is often the next
 * prefix's first, and a 4 KB read unit holds several items), and twice as
 * many as the last query for each following query of an unbroken run of
 * keys, up to MAX_QUERY_ITEMS. A listing then reads about what it returns
 * plus a few items per common prefix, whatever the bucket holds.
 */
export class ListingReads {
  private size: number;

  constructor(delimited: boolean) {
    this.size = delimited ? FIRST_WITH_DELIMITER : MAX_QUERY_ITEMS;
  }

  /** The next Query's Limit, when the listing has room for `room` more items (at least one is asked for). */
  limit(room: number): number {
    return Math.min(Math.max(room, 1), this.size);
  }

  /** The listing moved past a common prefix: the next Query starts small. */
  skipped(): void {
    this.size = AFTER_PREFIX;
  }

  /** A Query's items were all used and more follow: the next asks for twice as many. */
  grow(): void {
    this.size = Math.min(this.size * 2, MAX_QUERY_ITEMS);
  }
}

function refKey(cid: string, bucket: string, key: string) {
  return cidReference(cid, objectHolder(bucket, key));
}

export function fromItem(item: Record<string, unknown>): ObjectRecord {
  const {
    version: _version,
    vsort: _vsort,
    deleteMarker: _marker,
    ...rest
  } = withoutKeys<ObjectRecord & { version?: string; vsort?: string; deleteMarker?: boolean }>(item);
  return { ...rest, metadata: rest.metadata ?? {} };
}

/** The update that sets a record's tags (an empty list: removes them), with a new version token. */
/** The update that sets a record's ACL (a new `version`, as every change of a record has). */
export function aclUpdate(acl: StoredAcl) {
  return { UpdateExpression: 'SET acl = :acl, version = :nv', ExpressionAttributeValues: { ':acl': acl, ':nv': uniqueToken() } };
}

export function tagsUpdate(tags: Tag[]) {
  return tags.length
    ? { UpdateExpression: 'SET tags = :tags, version = :nv', ExpressionAttributeValues: { ':tags': tags, ':nv': uniqueToken() } }
    : { UpdateExpression: 'REMOVE tags SET version = :nv', ExpressionAttributeValues: { ':nv': uniqueToken() } };
}

/** The holder a stored version references its CID under (see object-versions.ts). */
export function holderOf(bucket: string, key: string, item: Item): string {
  return item.versionId === undefined ? objectHolder(bucket, key) : versionHolder(bucket, key, item.versionId as string);
}
