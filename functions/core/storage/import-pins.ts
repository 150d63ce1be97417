/**
 * Import pins: what keeps a DAG sent as CARs (POST /imports/car, see
 * car-ingest.ts) from garbage collection until a deploy takes it, and for
 * no longer than CAIRN_IMPORT_PIN_TTL (a day).
 *
 * A complete import (every block under the root stored) pins the root in
 * the pin index (pins.ts) and references it in the objects table under the
 * holder `#IMPORT`, as an object would; one record per root says until when:
 *
 *   #IMPORT / <root CIDv1>      ref (the CID form references use), expiresAt (ms), complete, at
 *   #REF#<ref> / #IMPORT        the reference: complete imports only
 *
 * A pending import (one CAR of several, the rest still to come) has the
 * same record, `complete` false, and holds the blocks it has so far in the
 * IPFS node's datastore, keyed both ways round, so that collection can ask
 * of a block and expiry of a root:
 *
 *   /cairn/held/<block multihash>/<root CIDv1>    (collection: pins.ts, isBlockReferenced)
 *   /cairn/holds/<root CIDv1>/<block multihash>   value: the tag of the request that wrote it
 *
 * The blocks let go (the holds of an import that completed or expired, the
 * blocks of a request refused half-way) are marked loose:
 *
 *   /cairn/loose/<block multihash>
 *
 * and collection deletes each loose block that nothing references or holds
 * (a block no root links to would otherwise never be reached by any walk).
 * Expiry and loose blocks are collection's work, done with the upload gate
 * held exclusively (collect.ts): an expired record goes in one transaction
 * with its reference, and its root becomes a collection candidate,
 * collected like any other CID nothing references.
 */
import { QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { Key } from 'interface-datastore';
import { base32 } from 'multiformats/bases/base32';
import { CID } from 'multiformats/cid';
import * as Digest from 'multiformats/hashes/digest';
import type { Database } from '../data/dynamo.js';
import { candidateItem, cidReference } from '../data/object-references.js';
import { referenceCidOf } from '../data/deploys.js';
import { uniqueToken } from '../ids.js';
import type { IpfsNode } from '../ipfs/node.js';
import { blockName, HELD, isBlockReferenced, rootName } from './pins.js';
import { workSlices } from '../work-slices.js';

/** The holder of an import pin's CID reference (holders that are not objects start with '#'). */
export const IMPORT_HOLDER = '#IMPORT';
const RECORDS = '#IMPORT';

const HOLDS = '/cairn/holds/';
const LOOSE = '/cairn/loose/';
const RAW = 0x55;
/** Loose marks read at a time. */
const LOOSE_BATCH = 1000;
/** Datastore writes in flight at once (each is a round trip where the datastore is S3). */
const IN_FLIGHT = 32;

export interface ImportPinRecord {
  /** The root's CIDv1. */
  root: string;
  /** The CID form the objects table references it by (CIDv0 for dag-pb). */
  ref: string;
  /** When it stops keeping the DAG (ms since the epoch). */
  expiresAt: number;
  /** Every block under the root is stored and the root is pinned. */
  complete: boolean;
  /** Changes on every write: expiry takes the record only as it read it. */
  at: string;
}

/** The records of import pins, in the objects table. */
export class ImportPins {
  constructor(
    private readonly db: Database,
    private readonly pinSeconds: number,
    private readonly now: () => number = Date.now,
  ) {}

  private get table() {
    return this.db.tables.objects;
  }

  /**
   * Records (or renews) the import pin of `root` for pinSeconds from now.
   * A complete one references the root in the same transaction; the caller
   * has pinned it first.
   */
  async record(root: CID, complete: boolean): Promise<ImportPinRecord> {
    const record: ImportPinRecord = {
      root: root.toV1().toString(),
      ref: referenceCidOf(root.toString()),
      expiresAt: this.now() + this.pinSeconds * 1000,
      complete,
      at: uniqueToken(),
    };
    await this.db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: this.table, Item: { pk: RECORDS, sk: record.root, ...record } } },
          ...(complete ? [{ Put: { TableName: this.table, Item: cidReference(record.ref, IMPORT_HOLDER) } }] : []),
        ],
      }),
    );
    return record;
  }

  /** The root's import pin, if it has one (expired or not). */
  async get(root: CID): Promise<ImportPinRecord | undefined> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND sk = :sk',
        ExpressionAttributeValues: { ':pk': RECORDS, ':sk': root.toV1().toString() },
        ConsistentRead: true,
      }),
    );
    const item = out.Items?.[0];
    return item ? recordOf(item) : undefined;
  }

  /** Import pins whose time is up, at most `limit` of them. */
  async expired(limit = 200): Promise<ImportPinRecord[]> {
    const found: ImportPinRecord[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.db.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk',
          FilterExpression: 'expiresAt <= :now',
          ExpressionAttributeValues: { ':pk': RECORDS, ':now': this.now() },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of out.Items ?? []) if (found.length < limit) found.push(recordOf(item));
      start = out.LastEvaluatedKey;
    } while (start && found.length < limit);
    return found;
  }

  /**
   * Ends an expired import pin: its record and reference go, and its root
   * becomes a collection candidate, in one transaction. False when the pin
   * was renewed since it was read (it stays).
   */
  async expire(record: ImportPinRecord): Promise<boolean> {
    try {
      await this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: this.table,
                Key: { pk: RECORDS, sk: record.root },
                ConditionExpression: '#at = :at',
                ExpressionAttributeNames: { '#at': 'at' },
                ExpressionAttributeValues: { ':at': record.at },
              },
            },
            { Delete: { TableName: this.table, Key: cidReference(record.ref, IMPORT_HOLDER) } },
            { Put: { TableName: this.table, Item: candidateItem(record.ref) } },
          ],
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof TransactionCanceledException || (err as Error).name === 'TransactionCanceledException') return false;
      throw err;
    }
  }
}

function recordOf(item: Record<string, unknown>): ImportPinRecord {
  return {
    root: item.root as string,
    ref: item.ref as string,
    expiresAt: Number(item.expiresAt),
    complete: item.complete === true,
    at: item.at as string,
  };
}

/** Runs datastore writes with at most IN_FLIGHT pending; `drain` waits for the rest and fails if one failed. */
export function writeWindow(max = IN_FLIGHT) {
  const inFlight = new Set<Promise<void>>();
  let failure: { err: unknown } | undefined;
  return {
    async add(write: () => unknown): Promise<void> {
      if (failure) throw failure.err;
      while (inFlight.size >= max) await Promise.race(inFlight);
      const p: Promise<void> = Promise.resolve()
        .then(write)
        .then(
          () => void inFlight.delete(p),
          (err: unknown) => {
            inFlight.delete(p);
            failure ??= { err };
          },
        );
      inFlight.add(p);
    },
    async drain(): Promise<void> {
      await Promise.all(inFlight);
      if (failure) throw failure.err;
    },
  };
}

const heldKey = (block: CID, root: CID) => new Key(`${HELD}${blockName(block)}/${rootName(root)}`);
const holdsPrefix = (root: CID) => `${HOLDS}${rootName(root)}/`;
const holdsKey = (root: CID, block: CID) => new Key(`${holdsPrefix(root)}${blockName(block)}`);
const looseKey = (block: CID) => new Key(`${LOOSE}${blockName(block)}`);
/** A CID for a block known by its multihash alone (the blockstores key blocks by multihash). */
const blockOf = (name: string) => CID.createV1(RAW, Digest.decode(base32.baseDecode(name)));

/**
 * Holds the blocks for the pending import of `root` (those it holds
 * already are left as they are), tagged with the request that holds them.
 * The records are written when it resolves.
 */
export async function holdBlocks(node: IpfsNode, root: CID, blocks: Iterable<CID> | AsyncIterable<CID>, tag: string): Promise<number> {
  const { datastore } = node;
  const value = new TextEncoder().encode(tag);
  const writes = writeWindow();
  // Thousands of blocks at a time, whose lookups the local datastore answers without waiting: in slices.
  const pause = workSlices();
  let held = 0;
  for await (const block of blocks) {
    if (block.multihash.code === 0x00) continue; // identity: inside its CID, never stored
    await pause();
    const key = heldKey(block, root);
    await writes.add(async () => {
      if (await datastore.has(key)) return;
      // The way collection asks last: a block is held once its `held` record is there.
      await datastore.put(holdsKey(root, block), value);
      await datastore.put(key, value);
      held++;
    });
  }
  await writes.drain();
  await node.pinsWritten?.();
  return held;
}

/**
 * Lets go of what the pending import of `root` holds (only what `tag`'s
 * request held, when given): each block is marked loose (unless `keep`
 * says it is the DAG's own, pinned), then its records go. Returns how many
 * holds went.
 */
export async function releaseHolds(
  node: IpfsNode,
  root: CID,
  options: { tag?: string; keep?: (block: CID) => Promise<boolean> } = {},
): Promise<number> {
  const { datastore } = node;
  const tag = options.tag === undefined ? undefined : new TextEncoder().encode(options.tag);
  const writes = writeWindow();
  const pause = workSlices();
  let released = 0;
  for await (const { key, value } of datastore.query({ prefix: holdsPrefix(root) })) {
    await pause();
    if (tag && !sameBytes(value, tag)) continue;
    const block = blockOf(key.toString().slice(holdsPrefix(root).length));
    await writes.add(async () => {
      // Loose first: a crash between the two leaves a block collection looks at, never one nobody does.
      if (!(await options.keep?.(block))) await datastore.put(looseKey(block), new Uint8Array(0));
      await datastore.delete(heldKey(block, root));
      await datastore.delete(key);
      released++;
    });
  }
  await writes.drain();
  await node.pinsWritten?.();
  return released;
}

/** Marks blocks loose: collection deletes each one nothing references or holds. */
export async function markLoose(node: IpfsNode, blocks: Iterable<CID>): Promise<void> {
  const writes = writeWindow();
  const pause = workSlices();
  for (const block of blocks) {
    if (block.multihash.code === 0x00) continue;
    await pause();
    await writes.add(() => node.datastore.put(looseKey(block), new Uint8Array(0)));
  }
  await writes.drain();
  await node.pinsWritten?.();
}

/** Whether any block is marked loose. */
export async function anyLoose(node: IpfsNode): Promise<boolean> {
  for await (const _ of node.datastore.queryKeys({ prefix: LOOSE, limit: 1 })) return true;
  return false;
}

/**
 * Deletes the loose blocks nothing references or holds, and forgets the
 * marks. The caller holds the upload gate exclusively (no import or pin in
 * flight may be counting on a block taken here). Returns how many went.
 */
export async function collectLoose(node: IpfsNode): Promise<number> {
  const { datastore, blockstore } = node;
  let deleted = 0;
  for (;;) {
    // A batch at a time: each pass deletes the marks it read, so the next starts afresh.
    const keys: Key[] = [];
    for await (const key of datastore.queryKeys({ prefix: LOOSE, limit: LOOSE_BATCH })) keys.push(new Key(key.toString()));
    if (!keys.length) break;
    const writes = writeWindow();
    for (const key of keys) {
      const block = blockOf(key.toString().slice(LOOSE.length));
      await writes.add(async () => {
        if (!(await isBlockReferenced(datastore, block)) && (await blockstore.has(block))) {
          await blockstore.delete(block);
          deleted++;
        }
        await datastore.delete(key);
      });
    }
    await writes.drain();
    await node.pinsWritten?.();
    if (keys.length < LOOSE_BATCH) break;
  }
  return deleted;
}

/** Whether the pending import of `root` holds any block. */
export async function holdsAny(node: IpfsNode, root: CID): Promise<boolean> {
  for await (const _ of node.datastore.queryKeys({ prefix: holdsPrefix(root), limit: 1 })) return true;
  return false;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
