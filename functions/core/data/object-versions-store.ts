/**
 * The versions of a versioned bucket's keys: VersionedObjectStore is the
 * object store the services use. A bucket never versioned is written as
 * ObjectStore (objects.ts) writes it; in a versioned one every write of a
 * key keeps the record before as a version, a delete places a delete
 * marker, a delete by version id removes that version for good (and
 * promotes the one before when it was the latest), and ListObjectVersions
 * reads the keys' versions. The items' layout (partitions, sorts, ids, the
 * key's anchor, the holders of the versions' CID references) is described
 * in object-versions.ts; each write is one transaction with the bucket's
 * check, the records, the anchor and the references, as objects.ts
 * describes for plain records.
 */
import { QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { uniqueToken } from '../ids.js';
import { stripUndefined, writtenIf } from './tables.js';
import { queryPage } from './pages.js';
import { candidateItem, cidReference } from './object-references.js';
import { bucketWritableCondition } from './buckets.js';
import {
  anchorPartition,
  newVersionId,
  nextSort,
  NULL_VERSION,
  parseVersionId,
  sortOfTime,
  versionHolder,
  versionIdOf,
  versionPartition,
} from './object-versions.js';
import {
  BucketCheckFailed,
  compareKeys,
  fromItem,
  holderOf,
  listingStart,
  ListingReads,
  MAX_SORT_KEY_BYTES,
  MAX_WRITE_ATTEMPTS,
  ObjectStore,
  prefixSuccessor,
  sortKeyBound,
  tagsUpdate,
  aclUpdate,
  type DeleteOutcome,
  type ObjectRecord,
  type Precondition,
  type PutOptions,
  type PutOutcome,
  type SortKeyBound,
  type StoredAcl,
  type Tag,
  type TransactItem,
  type VersioningState,
} from './objects.js';
import type { Database } from './dynamo.js';

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

type Item = Record<string, unknown>;

/** The object store of buckets with and without versioning: ObjectStore's plain records, and the versions here. */
export class VersionedObjectStore extends ObjectStore {
  protected override putIn(mode: VersioningState | null, record: ObjectRecord, options: PutOptions): Promise<PutOutcome> {
    return mode === null ? super.putIn(mode, record, options) : this.putVersioned(record, mode, options);
  }

  protected override deleteIn(
    mode: VersioningState | null,
    bucket: string,
    key: string,
    precondition?: Precondition,
  ): Promise<DeleteOutcome> {
    return mode === null ? super.deleteIn(mode, bucket, key, precondition) : this.placeMarker(bucket, key, mode, precondition);
  }

  /** Whether the bucket holds any object, or any version or delete marker. */
  override async hasObjects(bucket: string): Promise<boolean> {
    return (await super.hasObjects(bucket)) || this.anyItem(anchorPartition(bucket));
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

  /**
   * Sets (an empty list: removes) an existing object's tags in place, as
   * setAcl does its ACL (with `versionId`, that version's); false if there
   * is no such object (or version, or it is a delete marker).
   */
  override async setTags(bucket: string, key: string, tags: Tag[], versionId?: string): Promise<boolean> {
    if (versionId === undefined) return super.setTags(bucket, key, tags);
    return this.updateVersion(bucket, key, versionId, tagsUpdate(tags));
  }

  /** Changes an existing object's ACL in place (with `versionId`, that version's); false as setTags. */
  override async setAcl(bucket: string, key: string, acl: StoredAcl, versionId?: string): Promise<boolean> {
    if (versionId === undefined) return super.setAcl(bucket, key, acl);
    return this.updateVersion(bucket, key, versionId, aclUpdate(acl));
  }

  /** Applies `update` to one version of a key, wherever it is; false if there is none (or it is a delete marker). */
  private async updateVersion(
    bucket: string,
    key: string,
    versionId: string,
    update: { UpdateExpression: string; ExpressionAttributeValues: Record<string, unknown> },
  ): Promise<boolean> {
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
    const delimited = Boolean(q.delimiter);
    const currents = new KeyCursor(this.db, this.table, bucket, from, room, delimited);
    const anchors = new KeyCursor(this.db, this.table, anchorPartition(bucket), from, room, delimited);
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
}

/**
 * A partition's items in sort key order from a lower bound, read a query
 * at a time (each no larger than the listing still has room for, and with
 * a delimiter sized as ObjectStore.list sizes its own: ListingReads),
 * which a listing can move forward past a common prefix.
 */
class KeyCursor {
  private buffer: Item[] = [];
  private exhausted = false;
  private readonly floor: (sk: string) => boolean;
  private readonly reads: ListingReads;

  constructor(
    private readonly db: Database,
    private readonly table: string,
    private readonly pk: string,
    private from: SortKeyBound | undefined,
    private readonly room: () => number,
    delimited: boolean,
  ) {
    // A marker longer than any key is cut to fit a Query; the keys the cut lets through are skipped all along.
    this.floor = from ? sortKeyBound(from).passes : () => true;
    this.reads = new ListingReads(delimited);
  }

  async peek(): Promise<Item | undefined> {
    while (!this.buffer.length && !this.exhausted) {
      const bound = this.from && sortKeyBound(this.from);
      const out = await this.db.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: bound ? `pk = :pk AND sk ${bound.condition.op} :from` : 'pk = :pk',
          ExpressionAttributeValues: { ':pk': this.pk, ...(bound ? { ':from': bound.condition.value } : {}) },
          Limit: this.reads.limit(this.room()),
          ConsistentRead: true,
        }),
      );
      const items = out.Items ?? [];
      if (items.length) this.from = { op: '>', value: items.at(-1)!.sk as string };
      this.buffer = items.filter((i) => this.floor(i.sk as string));
      this.exhausted = !out.LastEvaluatedKey;
      this.reads.grow();
    }
    return this.buffer[0];
  }

  take(): Item {
    return this.buffer.shift()!;
  }

  /** Skips to the first item at or after `value`. */
  seek(value: string): void {
    this.buffer = this.buffer.filter((i) => compareKeys(i.sk as string, value) >= 0);
    if (!this.buffer.length && !this.exhausted) {
      this.from = { op: '>=', value };
      this.reads.skipped();
    }
  }
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
