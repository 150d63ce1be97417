/**
 * What an IP address is, for the outbound policy (outbound.ts): public, or
 * which special-purpose range it falls in. The ranges are ipaddr.js's
 * tables of IANA's special-purpose registries
 * (https://www.iana.org/assignments/iana-ipv4-special-registry,
 * https://www.iana.org/assignments/iana-ipv6-special-registry), not a list
 * kept here: an address is public only where ipaddr.js finds it in none.
 *
 * An IPv6 address can carry an IPv4 address, and a connection to it may
 * reach that IPv4 address (the kernel maps `::ffff:127.0.0.1` to loopback; a
 * NAT64 or 6to4 gateway forwards to the address inside). Such an address
 * gets the verdict of the IPv4 address it carries: IPv4-mapped
 * (::ffff:0:0/96), IPv4-compatible (::/96, deprecated but still parsed),
 * IPv4-translated (::ffff:0:0:0/96), NAT64 (64:ff9b::/96, RFC 6052), 6to4
 * (2002::/16). The local-use NAT64 prefix (64:ff9b:1::/48, RFC 8215: not
 * globally reachable, and its IPv4 address may sit at several places) and
 * Teredo (2001::/32, a tunnel to a host behind a NAT) are never public.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface AddressClass {
  /** The address classified, canonical (RFC 5952 for IPv6). */
  address: string;
  /** A public unicast address: the only kind connected to where private addresses are refused. */
  public: boolean;
  /** What it is, for a message: "public", "loopback", "private", "link-local", ... (of the IPv4 address it carries, if it carries one). */
  kind: string;
  /** The IPv6 form that carries an IPv4 address, and that address. */
  carries?: { form: string; ipv4: string };
}

/** ipaddr.js's IPv4 range names in words; refined for its `reserved` below. */
const IPV4_KINDS: Record<string, string> = {
  unspecified: 'unspecified ("this network")',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT (shared)',
  private: 'private',
  reserved: 'reserved',
  as112: 'AS112 (reserved)',
  amt: 'AMT relay (reserved)',
};

/** ipaddr.js puts these under `reserved`; a message names them. */
const IPV4_RESERVED: Array<[string, string]> = [
  ['192.0.0.0/24', 'IETF protocol assignment (reserved)'],
  ['192.0.2.0/24', 'documentation (reserved)'],
  ['198.51.100.0/24', 'documentation (reserved)'],
  ['203.0.113.0/24', 'documentation (reserved)'],
  ['198.18.0.0/15', 'benchmarking (reserved)'],
  ['192.88.99.0/24', '6to4 relay anycast (reserved)'],
];

const IPV6_KINDS: Record<string, string> = {
  unspecified: 'unspecified',
  linkLocal: 'link-local',
  multicast: 'multicast',
  loopback: 'loopback',
  uniqueLocal: 'unique-local (private)',
  deprecatedSiteLocal: 'site-local (private)',
  discard: 'discard-only (reserved)',
  benchmarking: 'benchmarking (reserved)',
  amt: 'AMT (reserved)',
  as112v6: 'AS112 (reserved)',
  deprecatedOrchid: 'ORCHID (reserved)',
  orchid2: 'ORCHIDv2 (reserved)',
  droneRemoteIdProtocolEntityTags: 'drone remote ID (reserved)',
  segmentRouting: 'segment routing (reserved)',
  reserved: 'reserved',
};

const IPV6_DOCUMENTATION = [ipaddr.IPv6.parseCIDR('2001:db8::/32'), ipaddr.IPv6.parseCIDR('3fff::/20')];

const NOT_AN_ADDRESS = 'not an IP address';

/** The address's class; anything that is not an IP address (a name, a numeric form Node would not take as one) is classed `not an IP address`, never public. */
export function classify(input: string): AddressClass {
  const bare = input.replace(/^\[(.*)\]$/, '$1');
  // A zone (fe80::1%eth0) says which interface, not which address.
  const address = bare.replace(/%[^%]*$/, '');
  // Node's own test first: ipaddr.js also reads "0x7f.1" or "2130706433" as addresses, which a URL or a resolver never hands over as such.
  const family = isIP(address);
  if (family === 4) return classifyIpv4(ipaddr.IPv4.parse(address));
  // ipaddr.js reads a dotted tail as IPv4-mapped whatever precedes it (::127.0.0.1 as ::ffff:127.0.0.1): the URL parser's canonical form has none.
  if (family === 6) return classifyIpv6(ipaddr.IPv6.parse(new URL(`http://[${address}]/`).hostname.slice(1, -1)));
  return { address: input, public: false, kind: NOT_AN_ADDRESS };
}

function classifyIpv4(ip: ipaddr.IPv4): AddressClass {
  const address = ip.toString();
  const range = ip.range();
  if (range === 'unicast') return { address, public: true, kind: 'public' };
  let kind = IPV4_KINDS[range] ?? range;
  if (range === 'reserved') kind = IPV4_RESERVED.find(([cidr]) => ip.match(ipaddr.IPv4.parseCIDR(cidr)))?.[1] ?? 'reserved';
  return { address, public: false, kind };
}

function ipv4At(ip: ipaddr.IPv6, part: number): ipaddr.IPv4 {
  const [hi, lo] = [ip.parts[part]!, ip.parts[part + 1]!];
  return new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);
}

function classifyIpv6(ip: ipaddr.IPv6): AddressClass {
  const address = ip.toRFC5952String();
  const range = ip.range();
  /** The verdict of the IPv4 address the form carries; `always` refuses the form even when that address is public. */
  const carrying = (form: string, v4: ipaddr.IPv4, always?: string): AddressClass => {
    const inner = classifyIpv4(v4);
    if (always !== undefined && inner.public) return { address, public: false, kind: always };
    return { address, public: inner.public, kind: inner.kind, carries: { form, ipv4: inner.address } };
  };
  switch (range) {
    case 'ipv4Mapped':
      return carrying('IPv4-mapped', ipv4At(ip, 6));
    case 'rfc6145':
      return carrying('IPv4-translated', ipv4At(ip, 6));
    case 'rfc6052':
      // 64:ff9b::/96 carries its IPv4 address in its last 32 bits; the local-use /48 is this network's own translator.
      return ip.parts[2] === 0
        ? carrying('NAT64', ipv4At(ip, 6))
        : carrying('local-use NAT64', ipv4At(ip, 6), 'local-use NAT64 (not globally reachable)');
    case '6to4':
      return carrying('6to4', ipv4At(ip, 1));
    case 'teredo': {
      // The client's IPv4 address, inverted (RFC 4380 section 4).
      const client = ipv4At(ip, 6);
      return carrying('Teredo', new ipaddr.IPv4(client.octets.map((o) => o ^ 255)), 'Teredo tunnel');
    }
    case 'unicast':
      // ::/96 is not in ipaddr.js's tables (:: and ::1 are): the deprecated IPv4-compatible form, ::127.0.0.1.
      if (ip.parts.slice(0, 6).every((p) => p === 0)) return carrying('IPv4-compatible', ipv4At(ip, 6));
      return { address, public: true, kind: 'public' };
    default: {
      const documentation = range === 'reserved' && IPV6_DOCUMENTATION.some((cidr) => ip.match(cidr));
      return { address, public: false, kind: documentation ? 'documentation (reserved)' : (IPV6_KINDS[range] ?? range) };
    }
  }
}

/** "127.0.0.1 is a loopback address", "::ffff:7f00:1 is an IPv4-mapped form of 127.0.0.1, a loopback address". */
export function describe(c: AddressClass): string {
  if (c.kind === NOT_AN_ADDRESS) return `${c.address} is not an IP address`;
  const kind = `${article(c.kind)} ${c.kind} address`;
  return c.carries
    ? `${c.address} is ${article(c.carries.form)} ${c.carries.form} form of ${c.carries.ipv4}, ${kind}`
    : `${c.address} is ${kind}`;
}

function article(word: string): string {
  return /^[aeiou]|^IPv4|^AS1|^AMT|^ORCHID|^IETF/i.test(word) && !/^unique/i.test(word) ? 'an' : 'a';
}
