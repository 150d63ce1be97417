/**
 * Garbage collection: CIDs that lost a reference (or were imported by an
 * upload that never committed) are candidates; each one no object references
 * any more is unpinned and the blocks no other pinned DAG uses are deleted
 * (storage/pins.ts). Runs with the upload gate held exclusively, so no
 * upload in flight can lose a block. It first finishes the part cleanups of
 * multipart uploads that a crash interrupted.
 *
 * One candidate that cannot be collected (a block of its DAG is missing, a
 * read fails) is logged with its CID and
 * set aside (quarantined, see the integrity check, fsck.ts); the pass goes on.
 */
import type { Services } from '../services.js';
import { cidOf } from '../ipfs/cid.js';
import { GateBusyError } from './gate.js';
import { unpinAndCollect } from './pins.js';
import { ensureIndexed } from './fsck.js';

export interface CollectionResult {
  examined: number;
  unpinned: number;
  blocksDeleted: number;
  /** Candidates set aside because they could not be collected. */
  quarantined: number;
}

/** Upload cleanups older than this are taken for abandoned (their process died) and finished here. */
const STALE_CLEANUP_MS = 10 * 60_000;

/**
 * Collects in batches until no candidate is left. If the gate cannot be had
 * (uploads in flight in other processes), it stops and says so: the next
 * run picks up where this one stopped.
 */
export async function collectGarbage(services: Services, batch = 200): Promise<CollectionResult> {
  const result: CollectionResult = { examined: 0, unpinned: 0, blocksDeleted: 0, quarantined: 0 };
  try {
    await collectBatches(services, batch, result);
  } catch (err) {
    if (!(err instanceof GateBusyError)) throw err;
    services.logger.info('garbage collection postponed', { reason: err.message, ...result });
  }
  return result;
}

async function collectBatches(services: Services, batch: number, result: CollectionResult): Promise<void> {
  const { objects, logger } = services;
  // Ended multipart uploads whose parts were never removed: removing them
  // now makes their CIDs candidates for this very collection.
  await services.uploads.resumeCleanups(STALE_CLEANUP_MS).catch((err: unknown) => {
    logger.warn('could not finish multipart cleanups', { err });
  });
  await services.uploads.dropExpiredCompletions().catch((err: unknown) => {
    services.logger.warn('could not drop expired multipart completion records', { err });
  });
  for (;;) {
    const candidates = await objects.candidates(batch);
    if (!candidates.length) break;
    const node = await services.ipfs();
    await services.gate.withExclusive(async () => {
      await ensureIndexed(services, node);
      for (const { cid, at } of candidates) {
        result.examined++;
        try {
          if (!(await objects.isReferenced(cid))) {
            result.blocksDeleted += await unpinAndCollect(node, cidOf(cid));
            result.unpinned++;
          }
          await objects.dropCandidate(cid, at);
        } catch (err) {
          result.quarantined++;
          logger.error('could not collect a candidate; set aside until the integrity check (npm run fsck)', { cid, err });
          await objects.quarantineCandidate(cid, at, (err as Error)?.message ?? String(err)).catch((qerr: unknown) => {
            logger.error('could not set the candidate aside; it is tried again next time', { cid, err: qerr });
          });
        }
      }
    });
    if (candidates.length < batch) break;
  }
  if (result.examined) logger.info('garbage collected', { ...result });
}
