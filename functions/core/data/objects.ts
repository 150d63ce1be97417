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
import { queryEach, queryPage, scanEach } from './pages.js';
import { candidateItem, cidReference } from './object-references.js';
import { bucketWritableCondition, DELETE_MARK_TTL_MS, type CannedAcl, type Tag, type VersioningState } from './buckets.js';
import {
  anchorPartition,
  newVersionId,
  nextSort,
  NULL_VERSION,
  parseVersionId,
  sortOfTime,
  versionHolder,
  versionPartition,
} from './object-versions.js';
import type { Database, TransactItem } from './dynamo.js';

export type { CannedAcl, Tag, VersioningState } from './buckets.js';
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
  acl: CannedAcl;
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

/** A delete marker: the latest version of a key deleted in a versioned bucket, or an older one. */
export interface DeleteMarker {
  bucket: string;
  key: string;
  versionId: string;
  lastModified: string;
  ownerId: string;
}

/** One version of a key: an object or a delete marker. */
export type StoredVersion = { kind: 'object'; record: ObjectRecord } | { kind: 'marker'; marker: DeleteMarker };

/** The version id clients see for a record: its own, or `null` for one written before versioning. */
export const versionIdOf = (v: { versionId?: string }): string => v.versionId ?? NULL_VERSION;

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

export interface VersionListQuery {
  prefix?: string;
  delimiter?: string;
  /** Keys strictly after this one (or, with `afterVersion`, this key's versions older than that one first). */
  after?: string;
  /** Keys at or after this one (wins over `after`). */
  startAt?: string;
  afterVersion?: string;
  maxKeys: number;
}

export interface VersionListPage {
  entries: Array<{ kind: 'version'; version: StoredVersion; isLatest: boolean } | { kind: 'prefix'; prefix: string }>;
  truncated: boolean;
}

/** The bucket's condition check failed: it is gone, being deleted, or its versioning changed since the caller read it. */
class BucketCheckFailed extends Error {}

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
function listingStart(q: { startAt?: string; after?: string }, prefix: string): SortKeyBound | undefined {
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
const MAX_WRITE_ATTEMPTS = 64;

/** Where write() puts the record among its transaction's items (after the bucket check and, for a new CID, its reference). */
function recordIndex(record: ObjectRecord, old: Record<string, unknown> | undefined): number {
  return !old || old.cid !== record.cid ? 2 : 1;
}

export class ObjectStore {
  constructor(private readonly db: Database) {}

  private get table() {
    return this.db.tables.objects;
  }

  async get(bucket: string, key: string): Promise<ObjectRecord | undefined> {
    const item = await this.getItem(bucket, key);
    return item ? fromItem(item) : undefined;
  }

  /**
   * Writes the record as the key's current object. In a bucket never
   * versioned it replaces whatever was there; in a versioned one the record
   * before becomes a version (or, suspended, the null version it was is
   * replaced). Throws NoSuchBucketError if the bucket is gone or being
   * deleted, and `also.failed()` if a condition of the extra writes fails;
   * whatever `precondition` throws, before anything is written.
   */
  async put(record: ObjectRecord, options: PutOptions = {}): Promise<PutOutcome> {
    return this.inBucketMode(record.bucket, options.versioning, (mode) =>
      mode === null ? this.putUnversioned(record, options) : this.putVersioned(record, mode, options),
    );
  }

  /**
   * Runs a write made for the bucket's versioning state as the caller saw
   * it; when the bucket's check fails, reads the bucket and tries again in
   * its real state (NoSuchBucketError when it is gone or being deleted).
   */
  private async inBucketMode<T>(
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
  private async bucketVersioning(bucket: string): Promise<VersioningState | null> {
    const item = await this.db.reader.get(this.db.tables.accounts, { pk: `BUCKET#${bucket}`, sk: 'BUCKET' });
    if (!item || (typeof item.deleting === 'number' && item.deleting >= Date.now() - DELETE_MARK_TTL_MS))
      throw new NoSuchBucketError(bucket);
    return item.versioning === 'Enabled' || item.versioning === 'Suspended' ? item.versioning : null;
  }

  private bucketCheck(bucket: string, mode: VersioningState | null): TransactItem {
    return {
      ConditionCheck: {
        TableName: this.db.tables.accounts,
        Key: { pk: `BUCKET#${bucket}`, sk: 'BUCKET' },
        ...bucketWritableCondition(Date.now(), mode),
      },
    };
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

  /** The key's anchor and current record (see object-versions.ts), read together. */
  private async keyState(bucket: string, key: string): Promise<{ anchor?: Item; current?: Item }> {
    const [anchor, current] = await Promise.all([
      this.db.reader.get(this.table, { pk: anchorPartition(bucket), sk: key }),
      this.getItem(bucket, key),
    ]);
    return { anchor, current };
  }

  /** The key's anchor, rewritten (or created) with `change`, on the condition that no other write changed it since it was read. */
  private anchorWrite(
    bucket: string,
    key: string,
    anchor: Item | undefined,
    change: { top?: string; nullSort?: string | null },
  ): TransactItem {
    const nullSort = change.nullSort === undefined ? (anchor?.nullSort as string | undefined) : (change.nullSort ?? undefined);
    return {
      Put: {
        TableName: this.table,
        Item: stripUndefined({
          pk: anchorPartition(bucket),
          sk: key,
          version: uniqueToken(),
          top: change.top ?? (anchor?.top as string),
          nullSort,
        }),
        ...expectAnchor(anchor),
      },
    };
  }

  /** The null version when it is not the current record, from the anchor's pointer. */
  private async nullInPartition(bucket: string, key: string, anchor: Item | undefined): Promise<Item | undefined> {
    const sort = anchor?.nullSort as string | undefined;
    if (sort === undefined) return undefined;
    const item = await this.db.reader.get(this.table, { pk: versionPartition(bucket, key), sk: sort });
    return item && versionIdOf(item) === NULL_VERSION ? item : undefined;
  }

  /**
   * Moves the current record out of the way of a new latest version: into
   * the key's versions, or (suspended, when it is the null version) away
   * for good. Returns the versions dropped and the null version's new place.
   */
  private async makeRoom(
    bucket: string,
    key: string,
    mode: VersioningState,
    anchor: Item | undefined,
    current: Item | undefined,
    items: TransactItem[],
  ): Promise<{ dropped: Item[]; nullSort: string | undefined }> {
    const dropped: Item[] = [];
    let nullSort = anchor?.nullSort as string | undefined;
    const currentIsNull = current !== undefined && versionIdOf(current) === NULL_VERSION;
    if (current && !(mode === 'Suspended' && currentIsNull)) {
      const sort = sortOf(current);
      items.push({
        Put: {
          TableName: this.table,
          Item: { ...current, pk: versionPartition(bucket, key), sk: sort, vsort: sort },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      });
      if (currentIsNull) nullSort = sort;
    }
    if (mode === 'Suspended') {
      if (currentIsNull) dropped.push(current);
      else {
        const old = await this.nullInPartition(bucket, key, anchor);
        if (old) {
          dropped.push(old);
          items.push({
            Delete: { TableName: this.table, Key: { pk: old.pk, sk: old.sk }, ConditionExpression: 'attribute_exists(pk)' },
          });
        }
      }
    }
    return { dropped, nullSort };
  }

  /** A dropped version's reference goes (last: see write()), its CID a collection candidate; unless `keep` names the same reference. */
  private removals(bucket: string, key: string, dropped: Item[], keep?: { cid: string; holder: string }): TransactItem[] {
    const out: TransactItem[] = [];
    for (const d of dropped) {
      if (d.deleteMarker) continue;
      const holder = holderOf(bucket, key, d);
      if (keep && keep.cid === d.cid && keep.holder === holder) continue;
      out.push({ Put: { TableName: this.table, Item: candidateItem(d.cid as string) } });
      out.push({ Delete: { TableName: this.table, Key: cidReference(d.cid as string, holder) } });
    }
    return out;
  }

  private async putVersioned(record: ObjectRecord, mode: VersioningState, options: PutOptions): Promise<PutOutcome> {
    const { bucket, key } = record;
    const extra = options.also?.items ?? [];
    for (let attempt = 0; ; attempt++) {
      const { anchor, current } = await this.keyState(bucket, key);
      options.precondition?.(current ? fromItem(current) : undefined);
      const sort = nextSort(new Date(), newestSort(anchor, current));
      const versionId = mode === 'Enabled' ? newVersionId(sort) : NULL_VERSION;
      const holder = versionHolder(bucket, key, versionId);
      const items: TransactItem[] = [this.bucketCheck(bucket, mode)];
      const { dropped, nullSort } = await this.makeRoom(bucket, key, mode, anchor, current, items);
      const keep = { cid: record.cid, holder };
      const kept = dropped.some((d) => !d.deleteMarker && d.cid === keep.cid && holderOf(bucket, key, d) === holder);
      // References before records, as in write().
      if (!kept) items.push({ Put: { TableName: this.table, Item: cidReference(record.cid, holder) } });
      items.push({
        Put: {
          TableName: this.table,
          Item: {
            ...stripUndefined(record),
            versionId,
            vsort: sort,
            pk: bucket,
            sk: key,
            version: uniqueToken(),
            gsi1pk: `CID#${record.cid}`,
            gsi1sk: holder,
          },
          ...(current
            ? { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': current.version } }
            : { ConditionExpression: 'attribute_not_exists(pk)' }),
        },
      });
      items.push(this.anchorWrite(bucket, key, anchor, { top: sort, nullSort: mode === 'Suspended' ? sort : (nullSort ?? null) }));
      const alsoAt = items.length;
      items.push(...extra);
      items.push(...this.removals(bucket, key, dropped, keep));
      try {
        await this.db.doc.send(new TransactWriteCommand({ TransactItems: items }));
        return { replaced: current ? fromItem(current) : undefined, versionId };
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        const reasons = err.CancellationReasons ?? [];
        if (reasons[0]?.Code === 'ConditionalCheckFailed') throw new BucketCheckFailed();
        if (reasons.slice(alsoAt, alsoAt + extra.length).some((r) => r?.Code === 'ConditionalCheckFailed')) throw options.also!.failed();
        if (attempt >= MAX_WRITE_ATTEMPTS) throw err;
      }
    }
  }

  /** Changes an existing object's ACL in place; false if there is no such object. */
  async setAcl(bucket: string, key: string, acl: CannedAcl): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: bucket, sk: key },
          UpdateExpression: 'SET acl = :acl',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':acl': acl },
        }),
      ),
    );
  }

  /**
   * Sets (an empty list: removes) an existing object's tags in place, as
   * setAcl does its ACL (with `versionId`, that version's); false if there
   * is no such object (or version, or it is a delete marker).
   */
  async setTags(bucket: string, key: string, tags: Tag[], versionId?: string): Promise<boolean> {
    const update = tags.length
      ? { UpdateExpression: 'SET tags = :tags, version = :nv', ExpressionAttributeValues: { ':tags': tags, ':nv': uniqueToken() } }
      : { UpdateExpression: 'REMOVE tags SET version = :nv', ExpressionAttributeValues: { ':nv': uniqueToken() } };
    if (versionId === undefined) {
      return writtenIf(
        this.db.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk: bucket, sk: key },
            ConditionExpression: 'attribute_exists(pk)',
            ...update,
          }),
        ),
      );
    }
    // A version may move between the current record and the key's versions meanwhile: look again once.
    for (let attempt = 0; attempt < 3; attempt++) {
      const found = await this.findVersion(bucket, key, versionId, await this.keyState(bucket, key));
      if (!found || found.item.deleteMarker) return false;
      const written = await writtenIf(
        this.db.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk: found.item.pk as string, sk: found.item.sk as string },
            ConditionExpression:
              found.item.versionId === undefined ? 'attribute_exists(pk) AND attribute_not_exists(versionId)' : 'versionId = :vid',
            ...update,
            ExpressionAttributeValues: {
              ...update.ExpressionAttributeValues,
              ...(found.item.versionId === undefined ? {} : { ':vid': versionId }),
            },
          }),
        ),
      );
      if (written) return true;
    }
    return false;
  }

  /**
   * DeleteObject without a version id: in a bucket never versioned, deletes
   * the record if present (and if `precondition`, checked only when there is
   * one, does not throw); in a versioned bucket, makes a delete marker the
   * latest version (suspended: the null one, replacing the null version).
   */
  async delete(bucket: string, key: string, precondition?: Precondition, versioning?: VersioningState): Promise<DeleteOutcome> {
    return this.inBucketMode(bucket, versioning, (mode) =>
      mode === null ? this.deleteUnversioned(bucket, key, precondition) : this.placeMarker(bucket, key, mode, precondition),
    );
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

  private async placeMarker(bucket: string, key: string, mode: VersioningState, precondition?: Precondition): Promise<DeleteOutcome> {
    for (let attempt = 0; ; attempt++) {
      const { anchor, current } = await this.keyState(bucket, key);
      precondition?.(current ? fromItem(current) : undefined);
      const sort = nextSort(new Date(), newestSort(anchor, current));
      const versionId = mode === 'Enabled' ? newVersionId(sort) : NULL_VERSION;
      const items: TransactItem[] = [this.bucketCheck(bucket, mode)];
      const { dropped } = await this.makeRoom(bucket, key, mode, anchor, current, items);
      if (current) {
        items.push({
          Delete: {
            TableName: this.table,
            Key: { pk: bucket, sk: key },
            ConditionExpression: 'version = :v',
            ExpressionAttributeValues: { ':v': current.version },
          },
        });
      }
      const marker: DeleteMarker = { bucket, key, versionId, lastModified: new Date().toISOString(), ownerId: '' };
      items.push({
        Put: {
          TableName: this.table,
          Item: {
            ...marker,
            ownerId: current?.ownerId ?? anchor?.ownerId ?? '',
            deleteMarker: true,
            vsort: sort,
            pk: versionPartition(bucket, key),
            sk: sort,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      });
      const nullSort = mode === 'Suspended' ? sort : current && versionIdOf(current) === NULL_VERSION ? sortOf(current) : undefined;
      items.push(
        this.anchorWrite(bucket, key, anchor, { top: sort, nullSort: nullSort ?? (anchor?.nullSort as string | undefined) ?? null }),
      );
      items.push(...this.removals(bucket, key, dropped));
      try {
        await this.db.doc.send(new TransactWriteCommand({ TransactItems: items }));
        return {
          versionId,
          deleteMarker: true,
          removed: dropped.find((d) => !d.deleteMarker) && fromItem(dropped.find((d) => !d.deleteMarker)!),
        };
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        if (err.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') throw new BucketCheckFailed();
        if (attempt >= MAX_WRITE_ATTEMPTS) throw err;
      }
    }
  }

  /** Where a version lives: the current record, or an item of the key's versions. */
  private async findVersion(
    bucket: string,
    key: string,
    versionId: string,
    state: { anchor?: Item; current?: Item },
  ): Promise<{ item: Item; current: boolean } | undefined> {
    const parsed = parseVersionId(versionId);
    if (!parsed) return undefined;
    if (state.current && versionIdOf(state.current) === versionId) return { item: state.current, current: true };
    const sort = parsed.null ? (state.anchor?.nullSort as string | undefined) : parsed.sort;
    if (sort === undefined) return undefined;
    const item = await this.db.reader.get(this.table, { pk: versionPartition(bucket, key), sk: sort });
    return item && versionIdOf(item) === versionId ? { item, current: false } : undefined;
  }

  /** One version of a key (`null`: the null version), or undefined when there is no such version. */
  async getVersion(bucket: string, key: string, versionId: string): Promise<StoredVersion | undefined> {
    const found = await this.findVersion(bucket, key, versionId, await this.keyState(bucket, key));
    return found && storedVersion(found.item);
  }

  /** The key's latest version when it is a delete marker (a GET of the key then answers as S3 does); undefined otherwise. */
  async latestMarker(bucket: string, key: string): Promise<DeleteMarker | undefined> {
    const { anchor, current } = await this.keyState(bucket, key);
    if (current || !anchor) return undefined;
    const page = await queryPage(
      this.db,
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': versionPartition(bucket, key) },
        ConsistentRead: true,
      },
      1,
    );
    const newest = page.items[0];
    if (!newest?.deleteMarker) return undefined;
    const v = storedVersion(newest);
    return v.kind === 'marker' ? v.marker : undefined;
  }

  /**
   * Deletes one version for good (DeleteObject with a version id): its
   * reference goes, so collection may take its blocks unless another
   * version or object names its CID. When it was the latest, the version
   * before becomes the latest (the current record, if it is an object). A
   * version that is not there is no error (nothing changes).
   */
  async deleteVersion(bucket: string, key: string, versionId: string, precondition?: Precondition): Promise<DeleteOutcome> {
    for (let attempt = 0; ; attempt++) {
      const state = await this.keyState(bucket, key);
      const { anchor, current } = state;
      const target = await this.findVersion(bucket, key, versionId, state);
      if (!target) {
        // The key's state and the version were read one after the other: a delete of the latest version
        // that committed between them moves the version before it to the current record, and the miss
        // here would report it deleted while it stays. Every write of a version rewrites the anchor (and
        // the current record's token), so the miss stands only when neither moved since the first read.
        const again = await this.keyState(bucket, key);
        if (again.anchor?.version === anchor?.version && again.current?.version === current?.version) return {};
        if (attempt >= MAX_WRITE_ATTEMPTS) throw new Error(`the versions of ${bucket}/${key} kept changing; try again`);
        continue;
      }
      const targetVersion = storedVersion(target.item);
      precondition?.(targetVersion.kind === 'object' ? targetVersion.record : undefined);
      // The newest three versions besides the current: enough to know what comes next, and whether any is left.
      const newest = anchor
        ? (
            await queryPage(
              this.db,
              {
                TableName: this.table,
                KeyConditionExpression: 'pk = :pk',
                ExpressionAttributeValues: { ':pk': versionPartition(bucket, key) },
                ConsistentRead: true,
              },
              3,
            )
          ).items
        : [];
      const items: TransactItem[] = [];
      let promoted: Item | undefined;
      if (target.current) {
        promoted = newest[0] && !newest[0].deleteMarker ? newest[0] : undefined;
        items.push(
          promoted
            ? {
                Put: {
                  TableName: this.table,
                  Item: { ...promoted, pk: bucket, sk: key, version: uniqueToken() },
                  ConditionExpression: 'version = :v',
                  ExpressionAttributeValues: { ':v': current!.version },
                },
              }
            : {
                Delete: {
                  TableName: this.table,
                  Key: { pk: bucket, sk: key },
                  ConditionExpression: 'version = :v',
                  ExpressionAttributeValues: { ':v': current!.version },
                },
              },
        );
      } else {
        items.push({
          Delete: { TableName: this.table, Key: { pk: target.item.pk, sk: target.item.sk }, ConditionExpression: 'attribute_exists(pk)' },
        });
        // The latest was this delete marker: the version before it is the latest now.
        if (!current && newest[0]?.sk === target.item.sk && newest[1] && !newest[1].deleteMarker) {
          promoted = newest[1];
          items.push({
            Put: {
              TableName: this.table,
              Item: { ...promoted, pk: bucket, sk: key, version: uniqueToken() },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          });
        }
      }
      if (promoted) {
        items.push({
          Delete: { TableName: this.table, Key: { pk: promoted.pk, sk: promoted.sk }, ConditionExpression: 'attribute_exists(pk)' },
        });
      }
      const others = newest.filter((i) => i.sk !== target.item.sk && i !== promoted);
      const left =
        (target.current ? promoted !== undefined : current !== undefined || promoted !== undefined) ||
        others.length > 0 ||
        newest.length >= 3;
      if (anchor) {
        const nullSort = versionIdOf(target.item) === NULL_VERSION ? null : undefined;
        items.push(
          left
            ? this.anchorWrite(bucket, key, anchor, { nullSort })
            : { Delete: { TableName: this.table, Key: { pk: anchorPartition(bucket), sk: key }, ...expectAnchor(anchor) } },
        );
      } else {
        items.push({
          ConditionCheck: { TableName: this.table, Key: { pk: anchorPartition(bucket), sk: key }, ...expectAnchor(undefined) },
        });
      }
      items.push(...this.removals(bucket, key, [target.item]));
      try {
        await this.db.doc.send(new TransactWriteCommand({ TransactItems: items }));
        return {
          versionId,
          deleteMarker: targetVersion.kind === 'marker' || undefined,
          removed: targetVersion.kind === 'object' ? targetVersion.record : undefined,
        };
      } catch (err) {
        if (!(err instanceof TransactionCanceledException) || attempt >= MAX_WRITE_ATTEMPTS) throw err;
      }
    }
  }

  private getItem(bucket: string, key: string): Promise<Record<string, unknown> | undefined> {
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

  /** Whether the bucket holds any object, or any version or delete marker. */
  async hasObjects(bucket: string): Promise<boolean> {
    for (const pk of [bucket, anchorPartition(bucket)]) {
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
      if ((out.Items?.length ?? 0) > 0) return true;
    }
    return false;
  }

  /**
   * One page of a listing in key order. Keys under a common prefix are
   * skipped by restarting the query after the prefix, so a page costs what
   * it returns, not what the bucket holds. A query reads (and DynamoDB
   * charges for) every item up to its Limit, used or not, so the query
   * after a common prefix asks for a few items (AFTER_PREFIX: the next
   * key is often the next folder's first, and one 4 KB read unit holds
   * several items), the first of a listing with a delimiter for a tenth
   * of a page, and each following query of an unbroken run of objects
   * twice as many as the last, up to the page: 50 folders cost about 50
   * small queries, where a full page's Limit per folder read up to 1,000
   * items each (issue: 1.46 s and 50,000 items for 2,000 objects).
   */
  async list(bucket: string, q: ListQuery): Promise<ListPage> {
    const prefix = q.prefix ?? '';
    const entries: ListPage['entries'] = [];
    let from = listingStart(q, prefix);
    if (q.maxKeys <= 0) return { entries, truncated: await this.anyAfter(bucket, prefix, from) };
    // A marker longer than any key is cut to fit a Query; the keys the cut lets through are skipped all along.
    const floor = from ? sortKeyBound(from).passes : () => true;
    // How many items the next query asks for at most: the page's size without a delimiter; with one, a tenth
    // of it first (the first folder's items are read to its end), a few after each common prefix, doubling.
    let step = q.delimiter ? FIRST_WITH_DELIMITER : MAX_QUERY_ITEMS;
    for (;;) {
      const want = q.maxKeys - entries.length + 1;
      const bound = from && sortKeyBound(from);
      const out = await this.db.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: bound ? `pk = :pk AND sk ${bound.condition.op} :from` : 'pk = :pk',
          ExpressionAttributeValues: { ':pk': bucket, ...(bound ? { ':from': bound.condition.value } : {}) },
          Limit: Math.min(want, step),
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
        step = AFTER_PREFIX;
        continue;
      }
      if (!out.LastEvaluatedKey) return { entries, truncated: false };
      step = Math.min(step * 2, MAX_QUERY_ITEMS);
    }
  }

  /**
   * One page of ListObjectVersions: keys in S3's order, each key's versions
   * newest first (the current record, then its other versions and delete
   * markers). The keys come from two partitions read side by side (the
   * current records and the versioned keys' anchors), each a page at a
   * time, common prefixes skipped as list() skips them; every key read
   * yields at least one entry, so a page costs what it returns.
   */
  async listVersions(bucket: string, q: VersionListQuery): Promise<VersionListPage> {
    const prefix = q.prefix ?? '';
    const entries: VersionListPage['entries'] = [];
    const room = () => q.maxKeys - entries.length + 1;
    /** Adds an entry; false when the page is full (so more follow). */
    const push = (entry: VersionListPage['entries'][number]) => {
      if (entries.length >= q.maxKeys) return false;
      entries.push(entry);
      return true;
    };
    const emitVersions = async (key: string, current: Item | undefined, anchor: Item | undefined, afterVersion?: string) => {
      let started = afterVersion === undefined;
      if (current) {
        if (started) {
          if (!push({ kind: 'version', version: storedVersion(current), isLatest: true })) return false;
        } else if (versionIdOf(current) === afterVersion) started = true;
      }
      if (!anchor) return true;
      let bound: string | undefined;
      if (!started) {
        const parsed = parseVersionId(afterVersion!);
        bound = parsed && (parsed.null ? (anchor.nullSort as string | undefined) : parsed.sort);
        if (bound === undefined) return true;
      }
      let first = bound === undefined && !current;
      let startKey: Record<string, unknown> | undefined;
      do {
        const out = await this.db.doc.send(
          new QueryCommand({
            TableName: this.table,
            KeyConditionExpression: bound === undefined ? 'pk = :pk' : 'pk = :pk AND sk > :after',
            ExpressionAttributeValues: { ':pk': versionPartition(bucket, key), ...(bound === undefined ? {} : { ':after': bound }) },
            Limit: Math.min(room(), 1000),
            ExclusiveStartKey: startKey,
            ConsistentRead: true,
          }),
        );
        for (const item of out.Items ?? []) {
          if (!push({ kind: 'version', version: storedVersion(item), isLatest: first })) return false;
          first = false;
        }
        startKey = out.LastEvaluatedKey;
      } while (startKey);
      return true;
    };
    const page = (truncated: boolean): VersionListPage => ({ entries, truncated });

    // A key marker longer than any key names no key whose versions could continue.
    const markerKey = q.after !== undefined && Buffer.byteLength(q.after) <= MAX_SORT_KEY_BYTES ? q.after : undefined;
    if (q.afterVersion !== undefined && markerKey !== undefined && q.startAt === undefined && markerKey.startsWith(prefix)) {
      const { anchor, current } = await this.keyState(bucket, markerKey);
      if (!(await emitVersions(markerKey, current, anchor, q.afterVersion))) return page(true);
    }
    const from = listingStart(q, prefix);
    const currents = new KeyCursor(this.db, this.table, bucket, from, room);
    const anchors = new KeyCursor(this.db, this.table, anchorPartition(bucket), from, room);
    for (;;) {
      const [a, b] = await Promise.all([currents.peek(), anchors.peek()]);
      const key =
        a && b
          ? compareKeys(a.sk as string, b.sk as string) <= 0
            ? (a.sk as string)
            : (b.sk as string)
          : ((a ?? b)?.sk as string | undefined);
      if (key === undefined || !key.startsWith(prefix)) return page(false);
      if (q.delimiter) {
        const at = key.indexOf(q.delimiter, prefix.length);
        if (at >= 0) {
          const common = key.slice(0, at + q.delimiter.length);
          if (!push({ kind: 'prefix', prefix: common })) return page(true);
          const next = prefixSuccessor(common);
          if (next === undefined) return page(false);
          currents.seek(next);
          anchors.seek(next);
          continue;
        }
      }
      const current = a?.sk === key ? currents.take() : undefined;
      const anchor = b?.sk === key ? anchors.take() : undefined;
      if (!(await emitVersions(key, current, anchor))) return page(true);
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

/**
 * A partition's items in sort key order from a lower bound, read a page at
 * a time (each page as large as the listing still has room for), which a
 * listing can move forward past a common prefix.
 */
class KeyCursor {
  private buffer: Item[] = [];
  private exhausted = false;
  private readonly floor: (sk: string) => boolean;

  constructor(
    private readonly db: Database,
    private readonly table: string,
    private readonly pk: string,
    private from: SortKeyBound | undefined,
    private readonly room: () => number,
  ) {
    // A marker longer than any key is cut to fit a Query; the keys the cut lets through are skipped all along.
    this.floor = from ? sortKeyBound(from).passes : () => true;
  }

  async peek(): Promise<Item | undefined> {
    while (!this.buffer.length && !this.exhausted) {
      const bound = this.from && sortKeyBound(this.from);
      const out = await this.db.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: bound ? `pk = :pk AND sk ${bound.condition.op} :from` : 'pk = :pk',
          ExpressionAttributeValues: { ':pk': this.pk, ...(bound ? { ':from': bound.condition.value } : {}) },
          Limit: Math.min(Math.max(this.room(), 1), 1000),
          ConsistentRead: true,
        }),
      );
      const items = out.Items ?? [];
      if (items.length) this.from = { op: '>', value: items.at(-1)!.sk as string };
      this.buffer = items.filter((i) => this.floor(i.sk as string));
      this.exhausted = !out.LastEvaluatedKey;
    }
    return this.buffer[0];
  }

  take(): Item {
    return this.buffer.shift()!;
  }

  /** Skips to the first item at or after `value`. */
  seek(value: string): void {
    this.buffer = this.buffer.filter((i) => compareKeys(i.sk as string, value) >= 0);
    if (!this.buffer.length && !this.exhausted) this.from = { op: '>=', value };
  }
}

/** The most items one listing query asks for (a page's 1,000 keys and the one that says whether there are more). */
const MAX_QUERY_ITEMS = 1000;
/** The items a listing's query asks for after a common prefix (ObjectStore.list). */
const AFTER_PREFIX = 8;
/** The items the first query of a listing with a delimiter asks for (four queries reach a page of 1,000). */
const FIRST_WITH_DELIMITER = 100;

function refKey(cid: string, bucket: string, key: string) {
  return cidReference(cid, objectHolder(bucket, key));
}

function fromItem(item: Record<string, unknown>): ObjectRecord {
  const {
    version: _version,
    vsort: _vsort,
    deleteMarker: _marker,
    ...rest
  } = withoutKeys<ObjectRecord & { version?: string; vsort?: string; deleteMarker?: boolean }>(item);
  return { ...rest, metadata: rest.metadata ?? {} };
}

function storedVersion(item: Item): StoredVersion {
  if (!item.deleteMarker) return { kind: 'object', record: fromItem(item) };
  return {
    kind: 'marker',
    marker: {
      bucket: item.bucket as string,
      key: item.key as string,
      versionId: item.versionId as string,
      lastModified: item.lastModified as string,
      ownerId: item.ownerId as string,
    },
  };
}

/** The holder a stored version references its CID under (see object-versions.ts). */
function holderOf(bucket: string, key: string, item: Item): string {
  return item.versionId === undefined ? objectHolder(bucket, key) : versionHolder(bucket, key, item.versionId as string);
}

/** A stored version's sort among its key's versions. */
function sortOf(item: Item): string {
  return (item.vsort as string | undefined) ?? sortOfTime(item.lastModified as string);
}

/** The sort of the newest version the key has had. */
function newestSort(anchor: Item | undefined, current: Item | undefined): string | undefined {
  if (anchor?.top !== undefined) return anchor.top as string;
  return current ? sortOf(current) : undefined;
}

/** The condition that the key's anchor is as it was read (or still absent). */
function expectAnchor(anchor: Item | undefined) {
  return anchor
    ? { ConditionExpression: 'version = :av', ExpressionAttributeValues: { ':av': anchor.version } }
    : { ConditionExpression: 'attribute_not_exists(pk)' };
}
