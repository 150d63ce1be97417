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

export class DomainNameError extends Error {
  override name = 'DomainNameError';
}

/** Longer input is refused before any conversion works on it. */
const MAX_INPUT = 1024;
const MAX_NAME = 253;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** Names no one outside this machine or network resolves to it (RFC 6761 section 6, RFC 6762, RFC 8375, RFC 9476). */
const RESERVED_SUFFIXES = ['localhost', 'local', 'internal', 'invalid', 'home.arpa', 'alt', 'arpa', 'onion'];

/** A host's name without its port or trailing dot, lower-cased. */
export const hostOf = (value: string): string => {
  const h = value.trim().toLowerCase().replace(/\.$/, '');
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
};

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
  if (typeof input !== 'string' || input.trim() === '') throw new DomainNameError('a domain name is required');
  if (input.length > MAX_INPUT) throw new DomainNameError(`a domain name has at most ${MAX_NAME} characters`);
  const trimmed = input.trim().replace(/\.$/, '');
  if (/[/:@?#\s[\]\\]/.test(trimmed) || trimmed.includes('*'))
    throw new DomainNameError('give the domain name alone (like www.example.com), without a scheme, port, path or wildcard');
  if (isIP(trimmed) !== 0) throw new DomainNameError('an IP address is not a domain name');
  // WHATWG's domain to ASCII: UTS #46 processing, as browsers map what a person types; '' when it cannot.
  const ascii = domainToASCII(trimmed);
  if (ascii === '') throw new DomainNameError(`"${trimmed.slice(0, 80)}" is not a valid domain name`);
  const name = ascii.toLowerCase().replace(/\.$/, '');
  if (name.length > MAX_NAME) throw new DomainNameError(`a domain name has at most ${MAX_NAME} characters`);
  const labels = name.split('.');
  if (labels.length < 2) throw new DomainNameError('a domain name has at least two labels (like example.com)');
  for (const label of labels)
    if (!LABEL.test(label))
      throw new DomainNameError(`"${label.slice(0, 80)}" is not a valid label: letters, digits and inner hyphens, 1 to 63 characters`);
  if (/^[0-9]+$/.test(labels.at(-1)!) || isIP(name) !== 0) throw new DomainNameError('an IP address is not a domain name');
  for (const suffix of RESERVED_SUFFIXES)
    if (name === suffix || name.endsWith(`.${suffix}`)) throw new DomainNameError(`names under .${suffix} cannot be a site's domain`);
  for (const own of serviceDomains(config))
    if (name === own || name.endsWith(`.${own}`))
      throw new DomainNameError(`${own} and its subdomains are the service's own addresses, not a site's domain`);
  return name;
}

/** The apex/`www` pair of a domain: `www.<d>` for `<d>`, `<d>` for `www.<d>` (undefined where the pair would be one label). */
export function pairOf(domain: string): string | undefined {
  if (domain.startsWith('www.')) {
    const apex = domain.slice(4);
    return apex.includes('.') ? apex : undefined;
  }
  return `www.${domain}`.length <= MAX_NAME ? `www.${domain}` : undefined;
}

/**
 * Whether a domain is shown apex records (A/AAAA) rather than a CNAME: a
 * name of two labels cannot carry a CNAME beside its zone's SOA and NS
 * (RFC 1034 section 3.6.2). Deeper names get a CNAME; verification accepts
 * either form for any name.
 */
export const isApex = (domain: string): boolean => domain.split('.').length === 2;
