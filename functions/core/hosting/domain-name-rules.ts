/**
 * The rules a site's domain name must keep, with no imports, so that the
 * web app checks a name in the browser exactly as the API does
 * (domain-names.ts converts the name with Node's WHATWG domain-to-ASCII;
 * the browser's URL parser runs the same algorithm).
 */

/** Longer input is refused before any conversion works on it. */
export const MAX_DOMAIN_INPUT = 1024;
export const MAX_DOMAIN_NAME = 253;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** Names no one outside this machine or network resolves to it (RFC 6761 section 6, RFC 6762, RFC 8375, RFC 9476). */
const RESERVED_SUFFIXES = ['localhost', 'local', 'internal', 'invalid', 'home.arpa', 'alt', 'arpa', 'onion'];

/** What is wrong with the name as typed (before conversion), or the trimmed name to convert. */
export function typedDomainFault(input: unknown): { fault: string } | { trimmed: string } {
  if (typeof input !== 'string' || input.trim() === '') return { fault: 'a domain name is required' };
  if (input.length > MAX_DOMAIN_INPUT) return { fault: `a domain name has at most ${MAX_DOMAIN_NAME} characters` };
  const trimmed = input.trim().replace(/\.$/, '');
  if (/[/:@?#\s[\]\\]/.test(trimmed) || trimmed.includes('*'))
    return { fault: 'give the domain name alone (like www.example.com), without a scheme, port, path or wildcard' };
  return { trimmed };
}

/** What is wrong with the converted (ASCII, lower-case, no trailing dot) name, or undefined. `own`: the service's own domains. */
export function asciiDomainFault(name: string, own: readonly string[]): string | undefined {
  if (name.length > MAX_DOMAIN_NAME) return `a domain name has at most ${MAX_DOMAIN_NAME} characters`;
  const labels = name.split('.');
  if (labels.length < 2) return 'a domain name has at least two labels (like example.com)';
  for (const label of labels)
    if (!LABEL.test(label)) return `"${label.slice(0, 80)}" is not a valid label: letters, digits and inner hyphens, 1 to 63 characters`;
  // An all-numeric last label is an IPv4 literal (RFC 3696 section 2).
  if (/^[0-9]+$/.test(labels.at(-1)!)) return 'an IP address is not a domain name';
  for (const suffix of RESERVED_SUFFIXES)
    if (name === suffix || name.endsWith(`.${suffix}`)) return `names under .${suffix} cannot be a site's domain`;
  for (const o of own)
    if (name === o || name.endsWith(`.${o}`)) return `${o} and its subdomains are the service's own addresses, not a site's domain`;
  return undefined;
}

/** A host's name without its port or trailing dot, lower-cased. */
export const hostOf = (value: string): string => {
  const h = value.trim().toLowerCase().replace(/\.$/, '');
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
};
