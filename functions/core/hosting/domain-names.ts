/**
 * A site's own domain name, as a stranger types it: checked strictly and put
 * in the one form every record and lookup uses (lower case, ASCII, the
 * IDNA/punycode form of an internationalized name, no trailing dot).
 *
 * Refused: anything longer than a DNS name may be (253 characters, labels
 * of at most 63, RFC 1035 section 2.3.4), characters outside letters,
 * digits and inner hyphens once converted, a single label, an all-numeric
 * last label (an IPv4 literal, RFC 3696 section 2), IPv6 literals, the
 * names that never reach this service from outside (localhost, `.local`,
 * `.internal`, `.invalid`, ...: RFC 6761, RFC 6762), and the service's own
 * domains and their subdomains: a site may not take another site's
 * address, a bucket's or the gateway's.
 */
import { domainToASCII } from 'node:url';
import { isIP } from 'node:net';
import type { Config } from '../config.js';
import { asciiDomainFault, hostOf, MAX_DOMAIN_NAME, typedDomainFault } from './domain-name-rules.js';

export class DomainNameError extends Error {
  override name = 'DomainNameError';
}

export { hostOf };

/** The service's own names (sites, buckets, the gateway and the API): no domain of a site may be one of them or under one. */
export function serviceDomains(config: Pick<Config, 'sites' | 'urls'>): string[] {
  const named = [config.sites.domain, config.urls.storagePublicDomain, config.urls.bucketEndpointDomain];
  for (const u of [config.urls.baseUrl, config.urls.gatewayUrl, config.urls.storageEndpoint]) {
    try {
      named.push(new URL(u).host);
    } catch {
      // (a configured URL always parses; nothing to add otherwise)
    }
  }
  return [...new Set(named.map(hostOf).filter((h) => h !== '' && isIP(h.replace(/^\[|\]$/g, '')) === 0))];
}

/** The normalized domain, or a DomainNameError saying what is wrong with it. */
export function normalizeDomain(input: unknown, config: Pick<Config, 'sites' | 'urls'>): string {
  const typed = typedDomainFault(input);
  if ('fault' in typed) throw new DomainNameError(typed.fault);
  const { trimmed } = typed;
  if (isIP(trimmed) !== 0) throw new DomainNameError('an IP address is not a domain name');
  // WHATWG's domain to ASCII: UTS #46 processing, as browsers map what a person types; '' when it cannot.
  const ascii = domainToASCII(trimmed);
  if (ascii === '') throw new DomainNameError(`"${trimmed.slice(0, 80)}" is not a valid domain name`);
  const name = ascii.toLowerCase().replace(/\.$/, '');
  const fault = asciiDomainFault(name, serviceDomains(config)) ?? (isIP(name) !== 0 ? 'an IP address is not a domain name' : undefined);
  if (fault) throw new DomainNameError(fault);
  return name;
}

/** The apex/`www` pair of a domain: `www.<d>` for `<d>`, `<d>` for `www.<d>` (undefined where the pair would be one label). */
export function pairOf(domain: string): string | undefined {
  if (domain.startsWith('www.')) {
    const apex = domain.slice(4);
    return apex.includes('.') ? apex : undefined;
  }
  return `www.${domain}`.length <= MAX_DOMAIN_NAME ? `www.${domain}` : undefined;
}

/**
 * Whether a domain is shown apex records (A/AAAA) rather than a CNAME: a
 * name of two labels cannot carry a CNAME beside its zone's SOA and NS
 * (RFC 1034 section 3.6.2). Deeper names get a CNAME; verification accepts
 * either form for any name.
 */
export const isApex = (domain: string): boolean => domain.split('.').length === 2;
