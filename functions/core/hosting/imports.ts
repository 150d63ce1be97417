/**
 * What the CAR import endpoint (functions/graphql/imports-http.ts) asks of
 * the core, in plain values: whether a key may import (for a site, when it
 * names one), and which of a list of CIDs have no block here. What a CAR
 * becomes is storage/car-ingest.ts.
 */
import type { CID } from 'multiformats/cid';
import type { Services } from '../services.js';
import { workSlices } from '../work-slices.js';

/** Blockstore lookups in flight at once for one `have` (each a round trip where the blockstore is S3). */
const LOOKUPS = 32;

export type ImportAccess = 'allowed' | 'no-key' | 'bad-key' | 'no-site' | 'other-team';

/** Whether `apiKey` may import, and for `siteId` when one is given (a site of the key's team). */
export async function importAccess(
  services: Pick<Services, 'apiKeys' | 'sites'>,
  apiKey: string | undefined,
  siteId: string | undefined,
): Promise<ImportAccess> {
  const caller = apiKey ? await services.apiKeys.caller(apiKey) : undefined;
  if (!caller) return apiKey ? 'bad-key' : 'no-key';
  if (siteId === undefined) return 'allowed';
  const site = /^[0-9A-Za-z-]{1,64}$/.test(siteId) ? await services.sites.getById(siteId) : undefined;
  if (!site) return 'no-site';
  return site.teamId === caller.teamId ? 'allowed' : 'other-team';
}

/**
 * The indexes in `cids` of those whose block is not here; stops (rejecting)
 * once `signal` aborts. `pause` is the caller's, when the work on the same
 * request started before (parsing the CIDs): one slice budget for both.
 */
export async function missingBlocks(
  services: Pick<Services, 'ipfs'>,
  cids: readonly CID[],
  { signal, pause = workSlices() }: { signal?: AbortSignal; pause?: () => Promise<void> | undefined } = {},
): Promise<number[]> {
  const node = await services.ipfs();
  const missing: number[] = [];
  // LOOKUPS at a time, side by side (round trips where the blockstore is S3).
  for (let start = 0; start < cids.length; start += LOOKUPS) {
    signal?.throwIfAborted();
    const batch = cids.slice(start, start + LOOKUPS);
    // An identity CID holds its block in itself: never missing.
    const found = await Promise.all(batch.map((cid) => (cid.multihash.code === 0x00 ? true : node.blockstore.has(cid))));
    found.forEach((has, j) => {
      if (!has) missing.push(start + j);
    });
    const turn = pause();
    if (turn) await turn;
  }
  return missing;
}
