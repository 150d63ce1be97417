/**
 * Keeping the CDN's host map (ports/site-cache.ts `SiteHostMap`) current
 * where sites change: a site created takes its slug, a rename moves it, a
 * delete releases it. Each entry is made to agree with the sites table as
 * it is when written, so the same call serves every change, and a retry
 * put off on the queue writes the state of then, not of the failed try.
 *
 * A write that failed is retried from the deploy queue for about an hour
 * (cdn-retry.ts). Past that, and for sites created before the stack had a
 * CDN, every update of a site, every publish and every purgeCache asserts
 * its entry again (a read, and a write only if the entry is wrong): a
 * purgeCache is what to tell a user whose site host answers 404.
 */
import type { Services, SiteEdgeServices } from '../services.js';
import type { CdnAttempt, CdnRetry } from '../ports/site-cache.js';
import { pairOf } from './domain-names.js';

/** The id of the site whose slug `label` is now, read consistently. */
async function siteIdAt(services: Pick<Services, 'sites'>, label: string): Promise<string | undefined> {
  return (await services.sites.getBySlug(label))?.id;
}

/** Marks a host map value that redirects: `>` and the name to send the browser to. */
export const REDIRECT_ENTRY = '>';

/**
 * A site's own domain's entry in the CDN's host map: the id of the site
 * serving it (its claim held, the domain ACTIVE), or, for the one of an
 * apex/`www` pair that is not primary while the primary is active,
 * `>` and the primary's name (the edge answers with a 301 to it); none
 * otherwise. A domain has dots, a slug never does, so the two never meet.
 */
export async function domainHostEntry(services: Pick<Services, 'domains'>, name: string): Promise<string | undefined> {
  const claim = await services.domains.claimOf(name);
  if (!claim) return undefined;
  const own = await services.domains.get(claim.siteId, name);
  if (!own || own.status !== 'ACTIVE') return undefined;
  if (!own.primary) {
    const pairName = pairOf(name);
    const pair = pairName ? await services.domains.get(claim.siteId, pairName) : undefined;
    if (pair?.primary && pair.status === 'ACTIVE') return `${REDIRECT_ENTRY}${pair.domain}`;
  }
  return claim.siteId;
}

function reconcile(services: Pick<Services, 'domains' | 'siteHosts' | 'sites'>, label: string, options?: CdnAttempt): Promise<void> {
  const now = label.includes('.') ? () => domainHostEntry(services, label) : () => siteIdAt(services, label);
  return services.siteHosts.reconcile(label, now, options);
}

/**
 * After a site change: the entries of the slugs it touched. Never rejects:
 * the site's record is written, and a map that could not be written has put
 * the change off itself; should even that fail, it is logged, and the
 * site's next change writes the entry again.
 */
export async function syncSiteHosts(
  services: Pick<Services, 'domains' | 'logger' | 'siteHosts' | 'sites'>,
  ...labels: Array<string | undefined>
): Promise<void> {
  for (const label of new Set(labels.filter((l): l is string => !!l))) {
    await reconcile(services, label).catch((err: unknown) => {
      services.logger.error('could not update the CDN host map nor put the update off', { label, err });
    });
  }
}

/** A CDN change put off earlier, tried again (the deploy worker); rejects when it could not even be put off again. */
export async function retryCdnChange(services: SiteEdgeServices, retry: CdnRetry): Promise<void> {
  if (retry.kind === 'purge') await services.cdn.purgeSite(retry.siteId, { attempt: retry.attempt });
  else await reconcile(services, retry.label, { attempt: retry.attempt });
}
