/**
 * A site's own domains: added (the DNS records its owner must create are in
 * the answer), verified (DNS looked up, the name claimed for the site, a
 * certificate asked for where this process issues them), made primary of
 * an apex/`www` pair, removed. The gateway serves a name only once it is
 * ACTIVE and its claim is the site's (domain-hosts.ts).
 *
 * States: PENDING_DNS (added) → VERIFYING (verifyDomain looking) →
 * ISSUING_CERTIFICATE (verified, an ACME order under way) → ACTIVE; or
 * FAILED with the reason, from which verifyDomain starts again. Without
 * certificates to issue (no ACME configured, or in AWS until its adapter
 * comes) a verified name is ACTIVE at once.
 *
 * Verification asks DNS, bounded (domain-dns.ts): the name must CNAME to
 * the site's own address (`<slug>.<sites domain>`), or resolve only to the
 * gateway's addresses (CAIRN_DOMAIN_ADDRESSES, or where the site's address
 * resolves when none are configured). A name another site holds is taken
 * only with proof of ownership as well: the TXT record
 * `_cairn-challenge.<name>` carrying this site's token for it.
 */
import { randomBytes } from 'node:crypto';
import type { Services } from '../services.js';
import type { Site } from '../data/sites.js';
import type { DomainStatus, SiteDomain } from '../data/domains.js';
import { ConflictError } from '../data/errors.js';
import type { RateLimit } from '../data/rate-limits.js';
import { hostOf, isApex, normalizeDomain, pairOf } from './domain-names.js';
import { DnsLookupError, type DomainDns } from './domain-dns.js';
import { syncSiteHosts } from './site-host-map.js';
import { syncDnsLink } from './dnslink.js';
import { dnsLinkName } from '../ports/dnslink-zone.js';

export type DomainServices = Pick<
  Services,
  'config' | 'logger' | 'domains' | 'rateLimits' | 'cdn' | 'domainCertificates' | 'siteHosts' | 'dnsLink' | 'sites' | 'deploys'
>;

export interface DnsRecord {
  type: 'A' | 'AAAA' | 'CNAME' | 'ALIAS' | 'TXT';
  name: string;
  value: string;
}

/** The name whose TXT record proves ownership of `domain`. */
export const challengeName = (domain: string) => `_cairn-challenge.${domain}`;

/** Verifications one site may ask for in an hour: each is up to three DNS lookups of a stranger's zone. */
export const VERIFY_RATE: RateLimit = { action: 'domain-verify', count: 60, windowSeconds: 3600 };

export class DomainError extends Error {
  override name = 'DomainError';
  constructor(
    message: string,
    readonly kind: 'invalid' | 'not-found' | 'limited',
    /** Seconds until a limited caller may try again. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

/** The site's own address on the sites domain, which a domain's CNAME names. */
export const siteAddress = (site: Pick<Site, 'slug'>, config: Pick<Services['config'], 'sites'>) =>
  `${site.slug}.${hostOf(config.sites.domain)}`;

/** Where a domain's CNAME points: the CDN's routing endpoint where one is configured (in AWS, the connection group's), the site's own address otherwise. */
export const domainTarget = (site: Pick<Site, 'slug'>, config: Pick<Services['config'], 'sites' | 'domains'>) =>
  config.domains.target ?? siteAddress(site, config);

/**
 * What the domain's owner must create: where it points, the TXT proof of
 * ownership (needed only to take it from another site), and for a primary
 * domain whose zone Cairn does not write, its DNSLink record carrying the
 * published root (`dnsLink`, changed by every publish).
 */
export function dnsRecordsOf(domain: SiteDomain, site: Pick<Site, 'slug'>, config: Services['config'], dnsLink?: string): DnsRecord[] {
  const target = domainTarget(site, config);
  const records: DnsRecord[] = [];
  if (isApex(domain.domain) && config.domains.addresses.length > 0) {
    for (const a of config.domains.addresses) records.push({ type: a.includes(':') ? 'AAAA' : 'A', name: domain.domain, value: a });
  } else if (isApex(domain.domain)) {
    // No addresses configured: what DNS hosts call ALIAS, ANAME or CNAME flattening.
    records.push({ type: 'ALIAS', name: domain.domain, value: target });
  } else {
    records.push({ type: 'CNAME', name: domain.domain, value: target });
  }
  if (dnsLink && domain.primary) records.push({ type: 'TXT', name: dnsLinkName(domain.domain), value: `dnslink=${dnsLink}` });
  // The proof last, where the web app and the command line have always found it.
  records.push({ type: 'TXT', name: challengeName(domain.domain), value: domain.token });
  return records;
}

function userInput(err: unknown): never {
  if (err instanceof ConflictError) throw new DomainError(err.message, 'invalid');
  throw err;
}

export async function addDomain(services: DomainServices, site: Site, input: unknown): Promise<SiteDomain> {
  let domain: string;
  try {
    domain = normalizeDomain(input, services.config);
  } catch (err) {
    throw new DomainError((err as Error).message, 'invalid');
  }
  const pair = pairOf(domain);
  const siblings = await services.domains.list(site.id);
  const primary = !pair || !siblings.some((d) => d.domain === pair);
  return services.domains
    .add(
      {
        domain,
        siteId: site.id,
        teamId: site.teamId,
        status: 'PENDING_DNS',
        reason: null,
        token: randomBytes(18).toString('base64url'),
        primary,
      },
      { perSite: services.config.domains.maxPerSite, perTeam: services.config.domains.maxPerTeam },
    )
    .catch(userInput);
}

async function requireDomain(services: DomainServices, site: Site, input: unknown): Promise<SiteDomain> {
  const name = typeof input === 'string' ? input.trim().toLowerCase().replace(/\.$/, '') : '';
  const found = name && name.length <= 253 ? await services.domains.get(site.id, name) : undefined;
  if (!found) throw new DomainError('domain not found', 'not-found');
  return found;
}

/** Why the name does not point at the site yet, or undefined when it does. */
async function pointingFault(dns: DomainDns, config: Services['config'], site: Site, domain: string): Promise<string | undefined> {
  const target = domainTarget(site, config);
  const cnames = await dns.cname(domain);
  if (cnames.includes(target)) return undefined;
  if (cnames.length > 0) return `${domain} is a CNAME to ${cnames[0]}, not to ${target}`;
  const addresses = await dns.addresses(domain);
  if (addresses.length === 0) return `${domain} has no CNAME, A or AAAA records: create the records shown`;
  const expected = config.domains.addresses.length > 0 ? config.domains.addresses : await dns.addresses(target);
  const stray = addresses.filter((a) => !expected.includes(a));
  if (expected.length === 0)
    return `${domain} has addresses, but this service has none configured for apex domains: use a CNAME to ${target}`;
  if (stray.length > 0)
    return `${domain} resolves to ${stray.slice(0, 4).join(', ')}, which is not this service (${expected.slice(0, 4).join(', ')})`;
  return undefined;
}

/**
 * Looks the domain up and, when its records are right, claims it for the
 * site and asks for its certificate. Answers the domain as it is then
 * (FAILED with the reason when its records are not right yet).
 */
export async function verifyDomain(services: DomainServices, site: Site, input: unknown, dns: DomainDns): Promise<SiteDomain> {
  const record = await requireDomain(services, site, input);
  const wait = await services.rateLimits.take(VERIFY_RATE, site.id);
  if (wait > 0)
    throw new DomainError(
      `this site has asked for ${VERIFY_RATE.count} verifications in the last hour: try again in ${Math.ceil(wait / 60)} minutes`,
      'limited',
      wait,
    );
  const { domain } = record;
  await services.domains.setStatus(site.id, domain, 'VERIFYING', null);
  const fail = async (reason: string) => {
    await services.domains.setStatus(site.id, domain, 'FAILED', reason, { from: ['VERIFYING'] });
    return (await services.domains.get(site.id, domain)) ?? { ...record, status: 'FAILED' as DomainStatus, reason };
  };
  let fault: string | undefined;
  const claim = await services.domains.claimOf(domain);
  const heldElsewhere = claim && claim.siteId !== site.id ? claim : undefined;
  try {
    fault = await pointingFault(dns, services.config, site, domain);
    if (!fault && heldElsewhere) {
      const proofs = await dns.txt(challengeName(domain));
      if (!proofs.includes(record.token))
        fault = `${domain} is another site's: to take it, create the TXT record ${challengeName(domain)} with the value ${record.token}`;
    }
  } catch (err) {
    if (!(err instanceof DnsLookupError)) throw err;
    fault = err.message;
  }
  if (fault) return fail(fault);
  const next: DomainStatus = services.domainCertificates.issues ? 'ISSUING_CERTIFICATE' : 'ACTIVE';
  const takeFrom = heldElsewhere
    ? { siteId: heldElsewhere.siteId, hasDomain: !!(await services.domains.get(heldElsewhere.siteId, domain)) }
    : undefined;
  if (!(await services.domains.claim(site.id, domain, next, takeFrom)))
    return fail(`${domain} was claimed by another site meanwhile: verify again`);
  if (heldElsewhere) {
    await purge(services, heldElsewhere.siteId);
    await services.domainCertificates.released(domain);
  }
  await purge(services, site.id);
  await syncDnsLink(services, domain);
  if (next === 'ISSUING_CERTIFICATE') await services.domainCertificates.request(site.id, domain);
  return (await services.domains.get(site.id, domain)) ?? record;
}

/** Stops serving the domain at once: its claim and certificate go with it, and the site's cached hosts. False when the site had no such domain. */
export async function removeDomain(services: DomainServices, site: Site, input: unknown): Promise<boolean> {
  const record = await requireDomain(services, site, input);
  const removed = await services.domains.remove(record).catch(userInput);
  if (!removed) return false;
  await services.domainCertificates.released(record.domain);
  await purge(services, site.id);
  // No claim left (or another site's): the record goes, or becomes the holder's.
  await syncDnsLink(services, record.domain);
  return true;
}

/** Makes the domain the one served of its apex/`www` pair; the other answers with a 301 to it. */
export async function setPrimaryDomain(services: DomainServices, site: Site, input: unknown): Promise<SiteDomain> {
  const record = await requireDomain(services, site, input);
  const pair = pairOf(record.domain);
  const pairOnSite = pair ? await services.domains.get(site.id, pair) : undefined;
  if (!(await services.domains.setPrimary(site.id, record.domain, pairOnSite?.domain)))
    throw new DomainError('the domain or its pair was removed meanwhile', 'not-found');
  // Where a CDN maps hosts (AWS), the pair's entries say which one redirects.
  await syncSiteHosts(services, record.domain, pairOnSite?.domain);
  await purge(services, site.id);
  await syncDnsLink(services, record.domain);
  if (pairOnSite) await syncDnsLink(services, pairOnSite.domain);
  return (await services.domains.get(site.id, record.domain)) ?? record;
}

/** A deleted site's domains, claims, certificates and DNSLink records. */
export async function deleteSiteDomains(
  services: Pick<Services, 'deploys' | 'dnsLink' | 'domains' | 'domainCertificates' | 'logger' | 'sites'>,
  siteId: string,
): Promise<void> {
  const domains = await services.domains.list(siteId);
  await services.domains.deleteAllOfSite(siteId);
  for (const d of domains) {
    await services.domainCertificates.released(d.domain);
    await syncDnsLink(services, d.domain);
  }
}

async function purge(services: Pick<Services, 'cdn' | 'logger'>, siteId: string): Promise<void> {
  try {
    await services.cdn.purgeSite(siteId);
  } catch (err) {
    services.logger.warn('could not purge the site cache', { siteId, err });
  }
}
