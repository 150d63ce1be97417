/**
 * Pins follow object records: a CID is pinned while any object references it
 * (the objects table's reference items are the truth, see data/objects.ts),
 * and collection reclaims the blocks no pinned DAG uses any more.
 *
 * Which blocks a pinned DAG uses is Cairn's own index, kept in the IPFS
 * node's datastore as sets, never counts:
 *
 *   /cairn/root/<root CIDv1>                   PINNED, DAMAGED (pinned with holes) or REMOVING
 *   /cairn/ref/<block multihash>/<root CIDv1>  "this root's DAG uses this block"
 *   /cairn/held/<block multihash>/<root CIDv1> "an import of this root still pending holds this block"
 *
 * (The held records belong to the CAR import, storage/import-pins.ts: a
 * DAG sent in several CARs keeps the blocks it has so far, even those no
 * block present links to yet. A held block is never collected.)
 *
 * Adding a reference that exists, or removing one that is gone, changes
 * nothing, so a pin or an unpin cut short is simply done again. (Helia
 * 7.1.15's per-block pin counts drift: `rm` decrements once per link where
 * `add` counted once per root, and it keeps the wrong roots in `pinnedBy`;
 * README, known issues.) Concurrent pins of DAGs that share blocks write
 * different keys, so none can lose another's reference.
 *
 * Order is what makes a crash safe. A root record is written after all its
 * references, so PINNED implies every block is referenced. Unpinning marks
 * the root REMOVING first, then drops its references, then deletes the
 * blocks nobody references, children before parents (so a parent still
 * present means its subtree was not yet reached), and removes the root
 * record last: an unpin resumed after a crash walks what is left, skipping
 * the holes it made itself.
 */
import { Key, type Datastore } from 'interface-datastore';
import { base32 } from 'multiformats/bases/base32';
import type { CID } from 'multiformats/cid';
import type { IpfsNode } from '../ipfs/node.js';
import { walkDag } from './dag-walk.js';

const ROOTS = '/cairn/root/';
const REFS = '/cairn/ref/';
/** Blocks held by pending imports (storage/import-pins.ts writes them; collection respects them). */
export const HELD = '/cairn/held/';
/** Set once the index covers every referenced CID (see ensureIndexed in fsck.ts). */
export const INDEX_MARKER = new Key('/cairn/index/v1');

const PINNED = Uint8Array.of(1);
const REMOVING = Uint8Array.of(2);
const DAMAGED = Uint8Array.of(3);
const STATES: Record<number, RootState> = { 1: 'pinned', 2: 'removing', 3: 'damaged' };
const EMPTY = new Uint8Array(0);

/** Datastore writes in flight at once (each is a round trip where the datastore is S3). */
const WRITES_IN_FLIGHT = 32;

export type RootState = 'pinned' | 'removing' | 'damaged';

export const rootName = (cid: CID) => cid.toV1().toString(base32);
export const blockName = (cid: CID) => base32.baseEncode(cid.multihash.bytes);
const rootKey = (root: CID) => new Key(ROOTS + rootName(root));
const refKey = (block: CID, root: CID) => new Key(`${REFS}${blockName(block)}/${rootName(root)}`);

/** Runs writes with at most WRITES_IN_FLIGHT pending; `drain` waits for the rest and fails if any failed. */
function writeQueue() {
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  return {
    async add(write: () => unknown): Promise<void> {
      if (failure !== undefined) throw failure;
      while (inFlight.size >= WRITES_IN_FLIGHT) await Promise.race(inFlight);
      const p: Promise<void> = Promise.resolve()
        .then(write)
        .then(
          () => void inFlight.delete(p),
          (err: unknown) => {
            inFlight.delete(p);
            failure ??= err;
          },
        );
      inFlight.add(p);
    },
    async drain(): Promise<void> {
      await Promise.all(inFlight);
      if (failure !== undefined) throw failure;
    },
  };
}

async function written(node: IpfsNode): Promise<void> {
  await node.pinsWritten?.();
}

export async function rootState(datastore: Datastore, root: CID): Promise<RootState | undefined> {
  try {
    return STATES[(await datastore.get(rootKey(root)))[0]!] ?? 'damaged';
  } catch (err) {
    if ((err as Error).name === 'NotFoundError') return undefined;
    throw err;
  }
}

export async function isRootPinned(node: IpfsNode, cid: CID): Promise<boolean> {
  return (await rootState(node.datastore, cid)) === 'pinned';
}

export interface PinOptions {
  signal?: AbortSignal;
  /** Rewrite the references of a root already pinned (the integrity check's rebuild). */
  force?: boolean;
  /**
   * Pin what is there of a DAG with missing or undecodable blocks, as
   * DAMAGED (the integrity check's rebuild: the blocks that are left stay
   * referenced). Without it such a block fails the pin (MissingBlockError,
   * CorruptBlockError).
   */
  tolerateMissing?: boolean;
}

/**
 * Pins the DAG under its own root (a block merely covered by another pin is
 * not enough); resolves once the records are on disk. Returns the blocks
 * found missing or undecodable (only with tolerateMissing).
 */
export async function pinRoot(node: IpfsNode, root: CID, options: PinOptions = {}): Promise<CID[]> {
  const { datastore } = node;
  const missing: CID[] = [];
  if (!options.force && (await rootState(datastore, root)) === 'pinned') return missing;
  try {
    const writes = writeQueue();
    const walk = walkDag(node.blockstore, root, {
      signal: options.signal,
      missing: options.tolerateMissing ? 'skip' : 'throw',
      onDamage: (cid) => missing.push(cid),
    });
    for await (const block of walk) await writes.add(() => datastore.put(refKey(block, root), EMPTY));
    await writes.drain();
    await datastore.put(rootKey(root), missing.length ? DAMAGED : PINNED);
    return missing;
  } finally {
    // Even a failed pin's records must be written before anything else relies on them.
    await written(node);
  }
}

/** Whether the pinned DAG of `root` uses the block (its reference record is there). */
export async function rootUsesBlock(datastore: Datastore, root: CID, block: CID): Promise<boolean> {
  return datastore.has(refKey(block, root));
}

/** Whether any root's DAG uses the block, or a pending import holds it (the records must be written: see pinsWritten). */
export async function isBlockReferenced(datastore: Datastore, block: CID): Promise<boolean> {
  for await (const _ of datastore.queryKeys({ prefix: `${REFS}${blockName(block)}/`, limit: 1 })) return true;
  for await (const _ of datastore.queryKeys({ prefix: `${HELD}${blockName(block)}/`, limit: 1 })) return true;
  return false;
}

/**
 * Unpins the root (if pinned) and deletes every block of its DAG that no
 * other pinned DAG uses; returns how many blocks went. The caller holds the
 * gate exclusively and has checked that no object references the CID. A
 * PINNED root whose DAG has a missing block is left as it is
 * (MissingBlockError): that is damage nobody knew of, and only a complete
 * walk finds every reference to drop. (A DAMAGED one is unpinned as far as
 * it goes; the integrity check drops the references left below its holes.)
 */
export async function unpinAndCollect(node: IpfsNode, root: CID): Promise<number> {
  const { datastore, blockstore } = node;
  const state = await rootState(datastore, root);
  const blocks: CID[] = [];
  // A root never pinned (an upload that failed before committing) or half
  // unpinned (a crash) has holes; a pinned one must be whole.
  for await (const block of walkDag(blockstore, root, { missing: state === 'pinned' ? 'throw' : 'skip' })) blocks.push(block);
  if (state === 'pinned' || state === 'damaged') {
    await datastore.put(rootKey(root), REMOVING);
    await written(node);
  }
  if (state !== undefined) {
    const writes = writeQueue();
    for (const block of blocks) await writes.add(() => datastore.delete(refKey(block, root)));
    await writes.drain();
    await written(node);
  }
  let deleted = 0;
  for (let i = blocks.length - 1; i >= 0; i--) {
    const block = blocks[i]!;
    if (await isBlockReferenced(datastore, block)) continue;
    if (await blockstore.has(block)) {
      await blockstore.delete(block);
      deleted++;
    }
  }
  if (state !== undefined) {
    await datastore.delete(rootKey(root));
    await written(node);
  }
  return deleted;
}

/** Every root record: the CIDv1 text and its state. */
export async function* listRoots(datastore: Datastore): AsyncGenerator<{ root: string; state: RootState }> {
  for await (const { key, value } of datastore.query({ prefix: ROOTS })) {
    yield { root: key.toString().slice(ROOTS.length), state: STATES[value[0]!] ?? 'damaged' };
  }
}

/** Every block reference: the block's multihash (base32) and its root's CIDv1 text, with the record's key. */
export async function* listRefs(datastore: Datastore): AsyncGenerator<{ block: string; root: string; key: Key }> {
  for await (const key of datastore.queryKeys({ prefix: REFS })) {
    const [block, root] = key.toString().slice(REFS.length).split('/');
    yield { block: block!, root: root!, key };
  }
}
