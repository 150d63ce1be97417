/**
 * Sites by their own domains: what a Host that is a site's domain serves.
 * The name's claim says which site (data/domains.ts); the site's domain
 * record must be ACTIVE. Of an apex/`www` pair both on the site and
 * active, the one not primary answers with a redirect to the primary; a
 * name with a live certificate is served over HTTPS only (the gateway
 * redirects plain HTTP). What a name resolved to is kept in the site
 * cache's host entries like a slug's (the name has dots, a slug never
 * does), so a purge of the site (publish, purgeCache, a domain removed or
 * verified) drops it with the rest of the site.
 */
import type { Services } from '../services.js';
import type { CachedHost } from '../ports/site-cache.js';
import { pairOf } from './domain-names.js';
import { resolveSite, type SiteTarget } from './site-hosts.js';

export type DomainTarget =
  | { kind: 'unknown' }
  | {
      kind: 'site';
      target: SiteTarget;
      /** The primary of the pair, when this name is the other one: its name and whether it has a live certificate. */
      redirectTo: { domain: string; secure: boolean } | null;
      /** A certificate is live: plain HTTP is redirected to HTTPS. */
      secure: boolean;
    };

type Resolved = Extract<DomainTarget, { kind: 'site' }>;

const fromCache = (cached: CachedHost): Resolved | undefined => {
  if (!cached.domain) return undefined;
  const target: SiteTarget =
    cached.deployId && cached.root
      ? { kind: 'deploy', siteId: cached.siteId, deployId: cached.deployId, root: cached.root, preview: false }
      : { kind: 'unpublished', siteId: cached.siteId };
  return { kind: 'site', target, redirectTo: cached.domain.redirectTo, secure: cached.domain.secure };
};

export async function resolveDomain(
  services: Pick<Services, 'config' | 'deploys' | 'domains' | 'siteCache' | 'sites'>,
  name: string,
): Promise<DomainTarget> {
  const cache = services.siteCache;
  const cached = cache?.getHost(name);
  const hit = cached && fromCache(cached);
  if (hit) return hit;
  const readAt = cache?.purges ?? 0;
  const claim = await services.domains.claimOf(name);
  if (!claim) return { kind: 'unknown' };
  const domains = await services.domains.list(claim.siteId);
  const own = domains.find((d) => d.domain === name);
  if (!own || own.status !== 'ACTIVE') return { kind: 'unknown' };
  const https = services.config.domains.httpsPort !== undefined;
  const pairName = pairOf(name);
  const pair = pairName ? domains.find((d) => d.domain === pairName) : undefined;
  const redirectTo =
    !own.primary && pair?.primary && pair.status === 'ACTIVE'
      ? { domain: pair.domain, secure: https && !!pair.certificateExpiresAt }
      : null;
  const secure = https && !!own.certificateExpiresAt;
  const target = await resolveSite(services, { siteId: claim.siteId });
  if (target.kind === 'unknown') return { kind: 'unknown' };
  cache?.setHost(
    name,
    {
      siteId: target.siteId,
      deployId: target.kind === 'deploy' ? target.deployId : null,
      root: target.kind === 'deploy' ? target.root : null,
      domain: { redirectTo, secure },
    },
    readAt,
  );
  return { kind: 'site', target, redirectTo, secure };
}
