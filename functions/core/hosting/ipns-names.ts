/**
 * A site's IPNS name: an Ed25519 key per site, made on its first publish
 * (sites made before names existed get theirs then too) and kept sealed
 * (data/ipns-records.ts), and a record signed on every publish pointing
 * the name at the published deploy's root, `/ipfs/<cidv1>`. The gateway
 * answers `/ipns/<name>` and the routing API from the record held.
 *
 * Every path that publishes goes through purgeSite (the pipeline's
 * announce, publishDeploy, a CID-sourced site's deploys alike), which
 * calls syncSiteName: it signs a new record when the held one points
 * elsewhere, or when it is due to be signed again. A record's validity is
 * 48 hours, so the deploy worker's minute tick signs each site's record
 * again every 4 hours (boxo namesys/republisher: `DefaultRebroadcastInterval
 * = time.Hour * 4`), with the next sequence number.
 */
import type { Services } from '../services.js';
import type { Site } from '../data/sites.js';
import { cidV1 } from '../ipfs/cid.js';
import type { HeldIpnsRecord } from '../data/ipns-records.js';

/**
 * The record code (the `ipns` package, @libp2p/crypto and cborg), read
 * with the first publish: the GraphQL function publishes (publishDeploy)
 * but most of its cold starts never do, and the bundle's start-up stays
 * without it (test/infra/cold-bundles.test.ts).
 */
let recordCode: Promise<typeof import('../ipfs/ipns.js')> | undefined;
const ipnsRecords = () => (recordCode ??= import('../ipfs/ipns.js'));

/** How often a site's record is signed again: boxo's republisher interval. */
export const REPUBLISH_INTERVAL_MS = 4 * 3600 * 1000;
/** Conditional writes lost to another publish before giving up (the other's record stands). */
const ATTEMPTS = 5;

export type IpnsNameServices = Pick<Services, 'deploys' | 'ipnsNames' | 'logger'>;

/**
 * Makes the site's record point at its published deploy: signs one with
 * the next sequence when the held record points elsewhere, or when `due`
 * (the tick's republish) or the held one is past half its validity. The
 * record held after, or undefined when the site has nothing published.
 */
export async function syncSiteName(
  services: IpnsNameServices,
  site: Pick<Site, 'id' | 'publishedDeployId'>,
  options: { due?: boolean; now?: () => Date } = {},
): Promise<HeldIpnsRecord | undefined> {
  const now = options.now ?? (() => new Date());
  if (!site.publishedDeployId) return undefined;
  const deploy = await services.deploys.get(site.id, site.publishedDeployId);
  if (!deploy?.ipfsHash) return undefined;
  const value = `/ipfs/${cidV1(deploy.ipfsHash)}`;
  const { newIpnsKey, signIpnsRecord } = await ipnsRecords();
  const { key, name } = await services.ipnsNames.siteKey(site.id, newIpnsKey);
  for (let attempt = 1; ; attempt++) {
    const held = await services.ipnsNames.get(name);
    const fresh = held && held.validUntil - now().getTime() > REPUBLISH_INTERVAL_MS * 6;
    if (held && held.value === value && fresh && !options.due) return held;
    const sequence = held ? held.sequence + 1n : 1n;
    const signed = await signIpnsRecord(key, value, sequence);
    const record = { name, siteId: site.id, ...signed };
    const stored = await services.ipnsNames.put(record, { republishAt: new Date(now().getTime() + REPUBLISH_INTERVAL_MS) });
    if (stored) {
      services.logger.debug('site IPNS record signed', { siteId: site.id, name, sequence: String(sequence), value });
      return { ...record, updatedAt: now().toISOString() };
    }
    // Another publish stored a record with this sequence first: read it and compare again.
    if (attempt >= ATTEMPTS) {
      services.logger.warn('gave up signing the site IPNS record: other publishes kept winning', { siteId: site.id, name });
      return services.ipnsNames.get(name);
    }
  }
}

/**
 * The tick's share: signs again the site records due (at most `limit`),
 * each with the site's current published deploy. A failure is logged and
 * left for the next tick (the record's 48 hours leave many).
 */
export async function republishSiteNames(
  services: IpnsNameServices & Pick<Services, 'sites'>,
  now = new Date(),
  limit = 25,
): Promise<number> {
  let signed = 0;
  for (const due of await services.ipnsNames.dueForRepublish(now, limit)) {
    try {
      const site = await services.sites.getById(due.siteId);
      if (!site) {
        await services.ipnsNames.deleteOfSite(due.siteId);
        continue;
      }
      if (await syncSiteName(services, site, { due: true })) signed++;
    } catch (err) {
      services.logger.warn('could not sign a site IPNS record again', { siteId: due.siteId, name: due.name, err });
    }
  }
  return signed;
}
