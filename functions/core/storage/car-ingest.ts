/**
 * Taking in a CAR (POST /imports/car): each block is verified against its
 * CID as it streams in (ipfs/car-import.ts) and stored; then, if every
 * block under the root is stored (this CAR's or held before), the root is
 * pinned as an import pin (import-pins.ts), which keeps the DAG from
 * collection until a deploy takes it. Otherwise the blocks sent are held by
 * the root's pending import, so that the CARs still to come can finish it.
 *
 * The whole request holds the upload gate shared (storage/gate.ts): no
 * collection runs while blocks are stored unreferenced and the DAG is
 * walked and pinned. A request that fails half-way (a block that does not
 * match its CID, a body over its limit, a client gone) keeps nothing: its
 * blocks are marked loose for collection, and what it held is let go.
 */
import type { CID } from 'multiformats/cid';
import type { CarImportServices, Services } from '../services.js';
import type { IpfsNode } from '../ipfs/node.js';
import { CarImportError, readVerifiedCar } from '../ipfs/car-import.js';
import { referenceCidOf } from '../data/deploys.js';
import { uniqueToken } from '../ids.js';
import { isRootPinned, pinRoot, rootUsesBlock } from './pins.js';
import { DAG_LIMITS, DagLimitError, UnsupportedCodecError, walkDag } from './dag-walk.js';
import { holdBlocks, ImportPins, markLoose, releaseHolds, writeWindow } from './import-pins.js';

/** Block writes in flight at once (each is a round trip where the blockstore is S3). */
const BLOCK_WRITES = 16;
/** Past this many blocks, a request's blocks are held as it goes rather than remembered (memory stays flat). */
const REMEMBERED_BLOCKS = 4096;

export interface CarImportResult {
  /** The root the CAR's header names. */
  root: CID;
  /** Blocks stored (identity CIDs, which are their own content, are not). */
  blocks: number;
  /** Their bytes. */
  bytes: number;
  /** Every block under the root is stored, and the root is pinned as an import pin. */
  complete: boolean;
  /** Blocks known to be missing under the root (a missing directory hides what is under it). */
  missing: number;
  /** Until when the import pin keeps the DAG (ms since the epoch). */
  expiresAt: number;
}

/** The import pins of this service. */
export const importPinsOf = (services: Pick<Services, 'config' | 'db'>) => new ImportPins(services.db, services.config.imports.pinSeconds);

/**
 * How many blocks under `root` are known to be missing, and the first of
 * them; a DAG pinned whole needs no walk. The DAG is someone else's (a CAR
 * they sent, a CID they deploy): past DAG_LIMITS the walk stops with
 * DagLimitError, so a pinned DAG is always within them.
 */
export async function missingUnder(node: IpfsNode, root: CID, signal?: AbortSignal): Promise<{ missing: number; first?: CID }> {
  if (await isRootPinned(node, root)) return { missing: 0 };
  let missing = 0;
  let first: CID | undefined;
  const onDamage = (cid: CID) => {
    missing++;
    first ??= cid;
  };
  for await (const _ of walkDag(node.blockstore, root, { missing: 'skip', onDamage, signal, limits: DAG_LIMITS })) {
    // every present block is visited; the missing ones are counted
  }
  return { missing, first };
}

/** Why a DAG past the limits is refused, in one sentence for the client. */
export function dagLimitMessage(err: DagLimitError): string {
  const { maxDepth, maxBlocks, maxLinks } = DAG_LIMITS;
  return `${err.message}; this service takes DAGs of at most ${maxDepth} levels, ${maxBlocks} blocks and ${maxLinks} links`;
}

/** Imports one CAR; throws CarImportError for a CAR refused (nothing of it kept), or the source's own error. */
export async function importCar(
  services: CarImportServices,
  source: AsyncIterable<Uint8Array>,
  options: { signal?: AbortSignal } = {},
): Promise<CarImportResult> {
  const release = await services.gate.enterShared();
  try {
    const node = await services.ipfs();
    const car = await readVerifiedCar(source);
    return await ingest(services, node, car.root, car.blocks, options.signal);
  } finally {
    release();
  }
}

async function ingest(
  services: CarImportServices,
  node: IpfsNode,
  root: CID,
  blocks: AsyncIterable<{ cid: CID; bytes: Uint8Array }>,
  signal?: AbortSignal,
): Promise<CarImportResult> {
  const tag = uniqueToken();
  const pins = importPinsOf(services);
  let remembered: CID[] = [];
  let stored = 0;
  let bytes = 0;
  let pinnedUnrecorded = false;
  const writes = writeWindow(BLOCK_WRITES);
  try {
    for await (const { cid, bytes: data } of blocks) {
      if (cid.multihash.code === 0x00) continue;
      stored++;
      bytes += data.byteLength;
      remembered.push(cid);
      await writes.add(() => node.blockstore.put(cid, data, { signal }));
      if (remembered.length >= REMEMBERED_BLOCKS) {
        await writes.drain();
        await holdBlocks(node, root, remembered, tag);
        remembered = [];
      }
    }
    await writes.drain();
    signal?.throwIfAborted();

    let found: { missing: number };
    try {
      found = await missingUnder(node, root, signal);
    } catch (err) {
      if (err instanceof UnsupportedCodecError)
        throw new CarImportError(
          `the DAG links to ${err.cid}, whose codec 0x${err.cid.code.toString(16)} this service does not store (dag-pb, raw, dag-cbor, dag-json, cbor and json only)`,
        );
      if (err instanceof DagLimitError) throw new CarImportError(dagLimitMessage(err));
      throw err;
    }
    if (found.missing > 0) {
      await holdBlocks(node, root, remembered, tag);
      const record = await pins.record(root, false);
      return { root, blocks: stored, bytes, complete: false, missing: found.missing, expiresAt: record.expiresAt };
    }

    pinnedUnrecorded = !(await isRootPinned(node, root));
    await pinRoot(node, root, { signal });
    const record = await pins.record(root, true);
    pinnedUnrecorded = false;
    // The DAG is pinned: what pending imports of it held goes, and any block sent that is not the DAG's is loose.
    const usedByDag = (block: CID) => rootUsesBlock(node.datastore, root, block);
    await releaseHolds(node, root, { keep: usedByDag });
    const strays: CID[] = [];
    for (const block of remembered) if (!(await usedByDag(block))) strays.push(block);
    if (strays.length) await markLoose(node, strays);
    return { root, blocks: stored, bytes, complete: true, missing: 0, expiresAt: record.expiresAt };
  } catch (err) {
    // Writes still in flight land first: a block written after its loose mark was collected would stay for good.
    await writes.drain().catch(() => {});
    await forget(services, node, root, remembered, tag, pinnedUnrecorded);
    throw err;
  }
}

/** A request refused half-way keeps nothing: its blocks are loose, its holds let go, a pin nobody recorded a candidate. */
async function forget(
  services: Pick<Services, 'logger' | 'objects'>,
  node: IpfsNode,
  root: CID,
  remembered: CID[],
  tag: string,
  pinnedUnrecorded: boolean,
): Promise<void> {
  try {
    await markLoose(node, remembered);
    await releaseHolds(node, root, { tag });
    if (pinnedUnrecorded) await services.objects.addCandidate(referenceCidOf(root.toString()));
  } catch (err) {
    services.logger.warn('could not let go of what a refused CAR import stored; the integrity check finds it', {
      root: root.toString(),
      err,
    });
  }
}
