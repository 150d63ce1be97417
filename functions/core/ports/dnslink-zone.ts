/**
 * The DNS zones Cairn writes sites' DNSLink records in: `_dnslink.<domain>
 * TXT "dnslink=<path>"` (https://dnslink.dev, the DNSLink spec). On one
 * machine an RFC 2136 dynamic update signed with TSIG to a configured
 * server (functions/adapters/rfc2136-dnslink-zone.ts); in AWS Route 53
 * (functions/aws/route53-dnslink-zone.ts). Where no zone holds a domain,
 * nothing is written: the domain's `dnsRecords` show the record to create.
 */
export interface DnsLinkZone {
  /** Whether any zone is written at all (none: nothing to look up on a publish). */
  readonly managesAny: boolean;
  /** Whether a zone this service writes holds `_dnslink.<domain>`. */
  manages(domain: string): boolean;
  /** Makes `_dnslink.<domain>` hold exactly one TXT record, `dnslink=<path>`. Rejects when the server refused or did not answer. */
  set(domain: string, path: string): Promise<void>;
  /** Removes every TXT record of `_dnslink.<domain>` (nothing to remove is no failure). */
  remove(domain: string): Promise<void>;
}

/**
 * A write a zone refused or did not answer, as an adapter reports it.
 * `retryable`: the same write may go through later unchanged (throttled,
 * busy, unreachable); false: something outside Cairn must change first
 * (the zone does not exist, access is denied, another record is in the
 * way). Both are tried again by the scheduled work (core/hosting/dnslink.ts),
 * as the fix is made outside Cairn; a permanent one is logged as an error,
 * for the operator.
 */
export class DnsLinkWriteError extends Error {
  override name = 'DnsLinkWriteError';
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** Manages no zone: every domain is shown its record instead. */
export const noDnsLinkZone: DnsLinkZone = {
  managesAny: false,
  manages: () => false,
  set: async () => {},
  remove: async () => {},
};

/** Seconds resolvers may keep a DNSLink record Cairn writes: it changes on every publish. */
export const DNSLINK_TTL = 60;

/** The owner name of a domain's DNSLink record. */
export const dnsLinkName = (domain: string) => `_dnslink.${domain}`;

/** The zone of `zones` (lower case, no trailing dot) that holds `name`: the longest that is it or a suffix of it. */
export function zoneOf(zones: readonly string[], name: string): string | undefined {
  let best: string | undefined;
  for (const zone of zones) if ((name === zone || name.endsWith(`.${zone}`)) && (!best || zone.length > best.length)) best = zone;
  return best;
}
