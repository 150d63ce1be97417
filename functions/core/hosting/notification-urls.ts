/**
 * Which URLs deploy notifications may be sent to. Any URL a team gives is
 * checked for its shape (https, or http where private addresses are allowed;
 * no credentials; 2048 characters at most). Where private addresses are not
 * allowed (AWS: config.notifications.allowPrivateAddresses is off) its host
 * must also lead only to public addresses, so a notification can never be
 * made to reach into the VPC or the instance metadata service. The host is
 * resolved when the URL is added, and again on every delivery through
 * `guardedLookup`, which checks the addresses actually connected to (a
 * name's answers can change between the two).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

export const MAX_NOTIFICATION_URL_LENGTH = 2048;

export class NotificationUrlError extends Error {
  override name = 'NotificationUrlError';
}

export interface UrlRules {
  /** Loopback, private, link-local and unique-local addresses, and http://, allowed (the local server). */
  allowPrivateAddresses: boolean;
}

/** Addresses no notification may reach where private ones are refused. */
const REFUSED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, the metadata service (169.254.169.254) among them
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments (192.0.0.192 is Oracle's metadata address)
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const) {
  REFUSED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b::', 96], // NAT64: an IPv4 address inside
  ['fc00::', 7], // unique-local (AWS's IPv6 metadata address fd00:ec2::254 among them)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  REFUSED.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped or -compatible IPv6 address (`::ffff:10.0.0.1`), if any. */
function embeddedIpv4(address: string): string | undefined {
  const m = /^(?:0{0,4}:){0,5}(?:ffff:)?((?:\d{1,3}\.){3}\d{1,3})$/i.exec(address.replace(/^::/, '0:'));
  if (m) return m[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return undefined;
}

/** Whether an IP address is one notifications must not reach where private addresses are refused. */
export function isRefusedAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return REFUSED.check(bare, 'ipv4');
  if (family !== 6) return true; // not an address at all: nothing to connect to safely
  const v4 = embeddedIpv4(bare);
  if (v4 !== undefined && isIP(v4) === 4) return REFUSED.check(v4, 'ipv4');
  return REFUSED.check(bare, 'ipv6');
}

/** The URL's shape: throws NotificationUrlError saying what is wrong (never echoing credentials). */
export function checkUrlShape(raw: string, rules: UrlRules): URL {
  if (typeof raw !== 'string' || raw.length === 0) throw new NotificationUrlError('url must not be empty');
  if (raw.length > MAX_NOTIFICATION_URL_LENGTH) throw new NotificationUrlError(`url must be at most ${MAX_NOTIFICATION_URL_LENGTH} characters`);
  if (/[\s\x00-\x1f\x7f]/.test(raw)) throw new NotificationUrlError('url must not contain spaces or control characters');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new NotificationUrlError('url is not an absolute URL');
  }
  const schemes = rules.allowPrivateAddresses ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) throw new NotificationUrlError(rules.allowPrivateAddresses ? 'url must be an http:// or https:// URL' : 'url must be an https:// URL');
  if (url.username !== '' || url.password !== '') throw new NotificationUrlError('url must not carry credentials (user:password@); the signature authenticates each delivery');
  if (url.hostname === '') throw new NotificationUrlError('url names no host');
  return url;
}

export type Resolver = (host: string) => Promise<string[]>;

/** Every address the system resolver gives for a name. */
export const systemResolver: Resolver = (host) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address)))));

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

/**
 * The URL checked whole: its shape, and, where private addresses are
 * refused, every address its host resolves to now. Throws NotificationUrlError.
 */
export async function checkNotificationUrl(raw: string, rules: UrlRules, resolver: Resolver = systemResolver): Promise<URL> {
  const url = checkUrlShape(raw, rules);
  if (rules.allowPrivateAddresses) return url;
  const host = hostOf(url);
  if (/^localhost$|\.localhost$/i.test(host)) throw new NotificationUrlError('url must not lead to this machine (localhost)');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = await resolver(host);
    } catch {
      throw new NotificationUrlError(`url's host ${host} does not resolve`);
    }
    if (addresses.length === 0) throw new NotificationUrlError(`url's host ${host} does not resolve`);
  }
  const refused = addresses.find(isRefusedAddress);
  if (refused !== undefined) throw new NotificationUrlError(`url leads to ${refused}, a loopback, private, link-local or reserved address; notifications go to public addresses only`);
  return url;
}

/**
 * A `lookup` for node:http(s) requests that fails the connection when the
 * name resolves to a refused address: the check is on the address the
 * socket is about to connect to, not on an earlier answer. (A host that is
 * an IP address is never looked up: deliver() checks that itself.)
 */
export function guardedLookup(resolve: typeof dnsLookup = dnsLookup): LookupFunction {
  return ((hostname: string, options: object, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    const all = (options as { all?: boolean }).all === true;
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, all ? [] : '', 0);
      const list = addresses as LookupAddress[];
      const refused = list.find((a) => isRefusedAddress(a.address));
      if (refused) {
        const error: NodeJS.ErrnoException = new NotificationUrlError(`${hostname} resolves to ${refused.address}, a loopback, private, link-local or reserved address: not connected to`);
        error.code = 'EREFUSEDADDRESS';
        return callback(error, all ? [] : '', 0);
      }
      if (all) return callback(null, list);
      const first = list[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  }) as LookupFunction;
}
