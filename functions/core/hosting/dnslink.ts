/**
 * Sites' DNSLink records: `_dnslink.<domain> TXT "dnslink=/ipfs/<cid>"`
 * (https://dnslink.dev) on each primary domain a site has verified, where
 * a zone Cairn writes holds the name (ports/dnslink-zone.ts); elsewhere the
 * domain's `dnsRecords` show the record to create (domains.ts).
 *
 * The value is the published deploy's root as `/ipfs/<cidv1>`, not the
 * site's `/ipns/<name>`: a DNSLink resolver (Kubo, Brave, any gateway)
 * then needs one DNS lookup and no IPNS resolution, and a site's IPNS
 * records are held by this service's routing endpoint, not the DHT, where
 * most resolvers would look for them. Fleek's DNSLink records were the same.
 *
 * What a name's record should hold is read afresh each time from who holds
 * its claim: the holder's published deploy when the domain is the primary
 * of its pair, nothing otherwise. So one call serves every change (a
 * publish, a verification, a primary changed, a domain removed or taken by
 * another site), and a retry writes the state of then, not of the failed
 * try. A write that fails is logged and marked (data/domains.ts) for the
 * scheduled work to try again, backing off; a publish never fails on it.
 */
import type { Services } from '../services.js';
import { cidV1 } from '../ipfs/cid.js';
import { DnsLinkWriteError } from '../ports/dnslink-zone.js';

export type DnsLinkServices = Pick<Services, 'deploys' | 'dnsLink' | 'domains' | 'logger' | 'sites'>;

/** Tries of one name before it is given up (about a day: 1, 2, 4, ... minutes, then every two hours). */
const MAX_ATTEMPTS = 18;
const retryDelayMs = (attempt: number) => Math.min(2 ** (attempt - 1), 120) * 60_000;

/** The DNSLink path of a deploy's root. */
export const dnsLinkPath = (ipfsHash: string) => `/ipfs/${cidV1(ipfsHash)}`;

/** The path `_dnslink.<domain>` should carry now: the published root of the site holding the name, if it is that site's primary. */
export async function wantedDnsLink(
  services: Pick<Services, 'deploys' | 'domains' | 'sites'>,
  domain: string,
): Promise<string | undefined> {
  const claim = await services.domains.claimOf(domain);
  if (!claim) return undefined;
  const record = await services.domains.get(claim.siteId, domain);
  if (!record?.primary) return undefined;
  const site = await services.sites.getById(claim.siteId);
  if (!site?.publishedDeployId) return undefined;
  const deploy = await services.deploys.get(site.id, site.publishedDeployId);
  return deploy?.ipfsHash ? dnsLinkPath(deploy.ipfsHash) : undefined;
}

/**
 * Makes the name's DNSLink record what it should be, where a zone Cairn
 * writes holds it. Never rejects: a failure is logged and marked for the
 * scheduled work (`attempt` is the retry's number; 0 for a change's own
 * write). Whether the record was written.
 */
export async function syncDnsLink(services: DnsLinkServices, domain: string, attempt = 0, now = new Date()): Promise<boolean> {
  if (!services.dnsLink.manages(domain)) return true;
  try {
    const path = await wantedDnsLink(services, domain);
    if (path) await services.dnsLink.set(domain, path);
    else await services.dnsLink.remove(domain);
    if (attempt > 0) await services.domains.clearDnsLinkRetry(domain);
    services.logger.debug('DNSLink record written', { domain, path: path ?? null });
    return true;
  } catch (err) {
    const next = attempt + 1;
    try {
      if (next > MAX_ATTEMPTS) {
        services.logger.error('gave up writing a DNSLink record; the next change of its site writes it again', { domain, err });
        await services.domains.clearDnsLinkRetry(domain);
      } else if (err instanceof DnsLinkWriteError && !err.retryable) {
        // Tried again all the same: the fix (a zone made, a permission granted, a record removed) is made outside Cairn.
        services.logger.error('the DNS zone refused a DNSLink record until its set-up changes; the scheduled work tries again', {
          domain,
          attempt: next,
          err,
        });
        await services.domains.putDnsLinkRetry(domain, new Date(now.getTime() + retryDelayMs(next)), next);
      } else {
        services.logger.warn('could not write a DNSLink record; the scheduled work tries again', { domain, attempt: next, err });
        await services.domains.putDnsLinkRetry(domain, new Date(now.getTime() + retryDelayMs(next)), next);
      }
    } catch (markErr) {
      services.logger.error('could not mark a DNSLink record to be written again', { domain, err: markErr });
    }
    return false;
  }
}

/** Every domain of the site (a publish, purgeCache): the primaries get the published root. */
export async function syncSiteDnsLinks(services: DnsLinkServices, siteId: string): Promise<void> {
  if (!services.dnsLink.managesAny) return;
  try {
    for (const d of await services.domains.list(siteId)) await syncDnsLink(services, d.domain);
  } catch (err) {
    services.logger.warn("could not read the site's domains to write their DNSLink records", { siteId, err });
  }
}

/** The scheduled work's share: the records whose write failed and is due again (at most `limit`). How many were written. */
export async function retryDnsLinks(services: DnsLinkServices, now = new Date(), limit = 25): Promise<number> {
  if (!services.dnsLink.managesAny) return 0;
  let written = 0;
  for (const due of await services.domains.dnsLinkRetriesDue(now, limit))
    if (await syncDnsLink(services, due.domain, due.attempt, now)) written++;
  return written;
}
