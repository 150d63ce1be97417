/**
 * The one address policy every request the service makes to an address a
 * user chose passes: repository clones (git's command line and
 * isomorphic-git), deploy notifications, commit statuses. A user chooses
 * the URL, so without it a repository URL, a notification URL or a git
 * host's API could make the service reach into its own network: its
 * loopback services, the VPC, the cloud metadata service (169.254.169.254,
 * fd00:ec2::254), and tell what answered there.
 *
 * Where private addresses are refused (config.outbound.private, the
 * default; CAIRN_OUTBOUND_PRIVATE=allow for local development, for every
 * kind of request at once), only public addresses are connected to: each
 * address is classed by addresses.ts, every IPv4-in-IPv6 form by the IPv4
 * address it carries.
 *
 * A name is resolved once, here, and the connection is pinned to the
 * addresses checked: node:http(s) through a `lookup` that answers them
 * (the URL keeps the name, so the Host header and TLS's SNI and
 * certificate check are the name's), git's command line through curl's
 * resolve list (`http.curloptResolve`). A second resolution at connect
 * time, which a name with a short TTL could answer differently (DNS
 * rebinding), never happens. A name with several addresses is refused when
 * any of them is: answering one public and one private address is the
 * rebinding trick's other form (the client picks one, or falls back to the
 * other), and a real public host has no reason to publish a private one.
 *
 * Redirects are not followed (git: http.followRedirects=false): the
 * address a redirect leads to would be connected to unchecked.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { Config } from '../config.js';
import { classify, describe } from './addresses.js';

export type OutboundRules = Config['outbound'];

/** What a refusal says after its first part: the rule, and how to lift it. */
export const REFUSAL_RULE = 'outbound requests to private addresses are refused (CAIRN_OUTBOUND_PRIVATE=allow allows them)';

/** A request the policy refuses: its message names the host, the address and the rule, never anything of what answers there (nothing was asked). */
export class OutboundRefused extends Error {
  override name = 'OutboundRefused';
  readonly code = 'EOUTBOUNDREFUSED';
}

/** Every address a name resolves to, in the resolver's order. */
export type Resolver = (host: string) => Promise<string[]>;

/** The system's resolver (getaddrinfo: /etc/hosts, then DNS), as node:http would use it. */
export const systemResolver: Resolver = (host) =>
  new Promise((resolve, reject) =>
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address)))),
  );

/** Where a request may connect: the URL's host and port, and the addresses checked for it. */
export interface OutboundTarget {
  /** The host as the URL names it, without an IPv6 literal's brackets. */
  host: string;
  port: number;
  /** The host is an address itself (nothing is resolved or pinned). */
  literal: boolean;
  /** The addresses checked, the only ones connected to. */
  addresses: LookupAddress[];
}

/** Throws OutboundRefused when `address` may not be connected to under `rules`. */
export function checkAddress(address: string, rules: OutboundRules, name?: string): void {
  if (rules.private === 'allow') return;
  const c = classify(address);
  if (c.public) return;
  const what = describe(c);
  throw new OutboundRefused(
    name === undefined ? `${what}: ${REFUSAL_RULE}` : `${name} resolves to ${what.replace(/^\S+ is /, `${c.address}, `)}: ${REFUSAL_RULE}`,
  );
}

/** Names for this machine (RFC 6761 section 6.3): what one resolves to may not even be asked of DNS. */
const LOCALHOST = /(^|\.)localhost\.?$/i;

/**
 * The URL's host resolved once and checked: the addresses a request to it
 * may connect to. Throws OutboundRefused, or the resolver's error (its
 * `code`, ENOTFOUND or EAI_AGAIN, says the name did not resolve).
 */
export async function resolveOutbound(
  target: URL | string,
  rules: OutboundRules,
  resolver: Resolver = systemResolver,
): Promise<OutboundTarget> {
  const url = typeof target === 'string' ? new URL(target) : target;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const family = isIP(host);
  if (family !== 0) {
    checkAddress(host, rules);
    return { host, port, literal: true, addresses: [{ address: host, family }] };
  }
  if (rules.private === 'refuse' && LOCALHOST.test(host)) {
    throw new OutboundRefused(`${host} names this machine, a loopback address: ${REFUSAL_RULE}`);
  }
  const answers = await resolver(host);
  if (answers.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
  const addresses: LookupAddress[] = [];
  for (const answer of answers) {
    const at = isIP(answer);
    // A resolver answers addresses; anything else is refused below as "not an IP address", whatever the rules.
    if (at === 0) throw new OutboundRefused(`${host} resolves to "${answer.slice(0, 60)}", not an IP address`);
    checkAddress(answer, rules, host);
    addresses.push({ address: answer, family: at });
  }
  return { host, port, literal: false, addresses };
}

/**
 * A `lookup` for node:http(s) and net that answers the target's checked
 * addresses and nothing else: the connection goes where the check was made.
 * A lookup of another name (which only a redirect could bring) fails.
 */
export function pinnedLookup(target: OutboundTarget): LookupFunction {
  return ((
    hostname: string,
    options: { all?: boolean; family?: number | string },
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    const all = options.all === true;
    const bare = hostname.replace(/^\[(.*)\]$/, '$1');
    if (bare.toLowerCase() !== target.host.toLowerCase()) {
      const err: NodeJS.ErrnoException = new OutboundRefused(
        `${bare} was not checked against the outbound address policy: not connected to`,
      );
      return callback(err, all ? [] : '', 0);
    }
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0);
    const addresses = family === 4 || family === 6 ? target.addresses.filter((a) => a.family === family) : target.addresses;
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`${bare} has no IPv${family} address`), { code: 'ENOTFOUND' }), all ? [] : '', 0);
    if (all) return callback(null, addresses);
    callback(null, first.address, first.family);
  }) as LookupFunction;
}

/**
 * git's setting that pins its connections (libcurl's CURLOPT_RESOLVE,
 * https://curl.se/libcurl/c/CURLOPT_RESOLVE.html: `host:port:address,...`,
 * an IPv6 address in brackets; git 2.37 and later read it from
 * http.curloptResolve). None for an address literal: curl resolves nothing.
 */
export function curlResolve(target: OutboundTarget): string | undefined {
  if (target.literal) return undefined;
  const addresses = target.addresses.map((a) => (a.family === 6 ? `[${a.address}]` : a.address));
  return `${target.host}:${target.port}:${addresses.join(',')}`;
}
