/**
 * Garbage collection: CIDs that lost a reference (or were imported by an
 * upload that never committed) are candidates; each one no object references
 * any more is unpinned and the blocks no other pinned DAG uses are deleted
 * (storage/pins.ts). Runs with the upload gate held exclusively, so no
 * upload in flight can lose a block. It first finishes the part cleanups of
 * multipart uploads that a crash interrupted.
 *
 * Import pins (import-pins.ts) whose time is up are ended first: a complete
 * one's root becomes a candidate like any other, a pending one's held blocks
 * are let go; then the loose blocks (let go by imports) that nothing
 * references or holds are deleted.
 *
 * One candidate that cannot be collected (a block of its DAG is missing, a
 * read fails) is logged with its CID and
 * set aside (quarantined, see the integrity check, fsck.ts); the pass goes on.
 */
import type { CollectionServices } from '../services.js';
import { ObjectReferences } from '../data/object-references.js';
import { cidOf } from '../ipfs/cid.js';
import { GateBusyError } from '../ports/upload-gate.js';
import { unpinAndCollect } from './pins.js';
import { ensureIndexed } from './fsck.js';
import { anyLoose, collectLoose, releaseHolds } from './import-pins.js';
import { importPinsOf } from './car-ingest.js';

export interface CollectionResult {
  examined: number;
  unpinned: number;
  blocksDeleted: number;
  /** Candidates set aside because they could not be collected. */
  quarantined: number;
  /** Import pins ended because their time was up. */
  importPinsExpired: number;
}

/** Upload cleanups older than this are taken for abandoned (their process died) and finished here. */
const STALE_CLEANUP_MS = 10 * 60_000;

/**
 * Collects in batches until no candidate is left. If the gate cannot be had
 * (uploads in flight in other processes), it stops and says so: the next
 * run picks up where this one stopped.
 */
export async function collectGarbage(services: CollectionServices, batch = 200): Promise<CollectionResult> {
  const result: CollectionResult = { examined: 0, unpinned: 0, blocksDeleted: 0, quarantined: 0, importPinsExpired: 0 };
  try {
    await collectBatches(services, batch, result);
  } catch (err) {
    if (!(err instanceof GateBusyError)) throw err;
    services.logger.info('garbage collection postponed', { reason: err.message, ...result });
  }
  return result;
}

async function collectBatches(services: CollectionServices, batch: number, result: CollectionResult): Promise<void> {
  const { logger } = services;
  const references = new ObjectReferences(services.db);
  // Ended multipart uploads whose parts were never removed: removing them
  // now makes their CIDs candidates for this very collection.
  await services.uploads.resumeCleanups(STALE_CLEANUP_MS).catch((err: unknown) => {
    logger.warn('could not finish multipart cleanups', { err });
  });
  await services.uploads.dropExpiredCompletions().catch((err: unknown) => {
    services.logger.warn('could not drop expired multipart completion records', { err });
  });
  await collectImports(services, result);
  for (;;) {
    const candidates = await references.candidates(batch);
    if (!candidates.length) break;
    const node = await services.ipfs();
    await services.gate.withExclusive(async () => {
      await ensureIndexed(services, node);
      for (const { cid, at } of candidates) {
        result.examined++;
        try {
          if (!(await references.isReferenced(cid))) {
            result.blocksDeleted += await unpinAndCollect(node, cidOf(cid));
            result.unpinned++;
          }
          await references.dropCandidate(cid, at);
        } catch (err) {
          result.quarantined++;
          logger.error('could not collect a candidate; set aside until the integrity check (npm run fsck)', { cid, err });
          await references.quarantineCandidate(cid, at, (err as Error)?.message ?? String(err)).catch((qerr: unknown) => {
            logger.error('could not set the candidate aside; it is tried again next time', { cid, err: qerr });
          });
        }
      }
    });
    if (candidates.length < batch) break;
  }
  if (result.examined || result.importPinsExpired || result.blocksDeleted) logger.info('garbage collected', { ...result });
}

/**
 * Ends the import pins whose time is up (a complete one's root becomes a
 * candidate for the loop that follows) and deletes the loose blocks nothing
 * references or holds, with the gate held exclusively.
 */
async function collectImports(services: CollectionServices, result: CollectionResult): Promise<void> {
  const pins = importPinsOf(services);
  const node = await services.ipfs();
  if (!(await anyLoose(node)) && !(await pins.expired(1)).length) return;
  await services.gate.withExclusive(async () => {
    await ensureIndexed(services, node);
    for (;;) {
      const expired = await pins.expired();
      for (const record of expired) {
        if (!(await pins.expire(record))) continue;
        result.importPinsExpired++;
        await releaseHolds(node, cidOf(record.root));
      }
      if (expired.length < 200) break;
    }
    result.blocksDeleted += await collectLoose(node);
  });
}
