/**
 * DNSLink names as the gateway resolves them (CAIRN_GATEWAY_DNSLINK): the
 * TXT records of `_dnslink.<name>` (https://dnslink.dev, "_dnslink
 * subdomain"), read as Kubo reads them (boxo namesys/dns_resolver.go):
 * each record `dnslink=/ipfs/<cid>[/path]` or `dnslink=/ipns/<name>[/path]`
 * (a bare CID, legacy, is `/ipfs/<cid>`), other records ignored; none
 * valid is no DNSLink, several valid an error. Following a value that names
 * another DNSLink name is the gateway's (gateway/ipns.ts), one lookup each.
 *
 * The names come from strangers (any Host header, any `/ipns/<domain>`), so
 * the lookups are bounded here, per process:
 * - answers are kept: a record for its TTL (at least MIN_KEEP_S, at most
 *   MAX_KEEP_S), no record or a bad one for NEGATIVE_KEEP_S, a failed lookup
 *   for FAILED_KEEP_S; at most MAX_NAMES names (least recently used go);
 * - lookups of one name at once are one lookup;
 * - at most MAX_CONCURRENT lookups run and MAX_WAITING wait, and lookups
 *   start from a bucket of PER_MINUTE refilled at PER_MINUTE a minute: past
 *   that a name not kept is answered `busy` (the gateway's 503) without a
 *   query, so a flood of random Host headers costs a burst of PER_MINUTE
 *   queries, then PER_MINUTE a minute, and no more.
 * The TTL reported with an answer is what is left of its keeping, capped at
 * its record's TTL, as boxo's namesys cache reports it (namesys_cache.go),
 * so a cache downstream never keeps it longer than this one does.
 */
import { LRUCache } from 'lru-cache';
import { taskLimit } from '../task-limit.js';
import { parseCid } from '../ipfs/cid.js';
import { parseIpnsName } from '../ipfs/ipns.js';
import { asciiDomainFault } from './domain-name-rules.js';
import type { DomainDns } from './domain-dns.js';

export const MIN_KEEP_S = 5;
export const MAX_KEEP_S = 300;
/** Kept when a lookup said nothing of the TTL (the system's stub resolver): boxo's DefaultResolverCacheTTL. */
const UNKNOWN_TTL_S = 60;
export const NEGATIVE_KEEP_S = 30;
const FAILED_KEEP_S = 10;
const MAX_NAMES = 10_000;
export const MAX_CONCURRENT = 8;
const MAX_WAITING = 32;
export const PER_MINUTE = 240;

export type DnsLinkAnswer =
  /** `value`: `/ipfs/<cid>[/path]` or `/ipns/<name>[/path]`; `ttl`: seconds it may still be kept. */
  | { kind: 'link'; value: string; ttl: number }
  | { kind: 'none' }
  /** Records that are DNSLink's but none usable, or several: `reason` says which. */
  | { kind: 'invalid'; reason: string }
  /** The lookup failed (a timeout, a server failure). */
  | { kind: 'failed'; reason: string }
  /** Not looked up: the lookups' bounds are reached; `retryAfter` seconds. */
  | { kind: 'busy'; retryAfter: number };

/** A DNSLink name: a domain name by Cairn's rules (domain-name-rules.ts), lower case, no trailing dot; undefined otherwise. */
export function dnsLinkNameOf(text: string): string | undefined {
  const name = text.toLowerCase().replace(/\.$/, '');
  if (name.length > 253) return undefined;
  return asciiDomainFault(name, []) === undefined ? name : undefined;
}

/** One record's value as a content path, or undefined when it is not a usable DNSLink value. */
function valueOf(txt: string): string | undefined {
  const raw = txt.startsWith('dnslink=') ? txt.slice('dnslink='.length).trim() : undefined;
  if (raw === undefined) return undefined;
  const m = /^\/(ipfs|ipns)\/([^/]+)(\/.*)?$/.exec(raw);
  if (!m) return parseCid(raw) ? `/ipfs/${raw}` : undefined;
  const [, ns, id, rest = ''] = m;
  if (/[\s?#\\]/.test(rest) || rest.split('/').some((s) => s === '.' || s === '..')) return undefined;
  if (ns === 'ipfs') return parseCid(id!) ? raw : undefined;
  const domain = dnsLinkNameOf(id!);
  if (domain) return `/ipns/${domain}${rest}`;
  try {
    parseIpnsName(id!);
    return raw;
  } catch {
    return undefined;
  }
}

/** What the TXT records of `_dnslink.<name>` say (boxo's workDomain: invalid records ignored, several valid an error). */
export function readDnsLink(texts: readonly string[]): { value: string } | { none: true } | { invalid: string } {
  const entries = texts.filter((t) => t.startsWith('dnslink='));
  const values = [...new Set(entries.map(valueOf).filter((v): v is string => v !== undefined))];
  if (values.length === 1) return { value: values[0]! };
  if (values.length > 1) return { invalid: `it has ${values.length} different DNSLink records, and one is wanted` };
  if (entries.length > 0)
    return {
      invalid: `its DNSLink record "${entries[0]!.slice(0, 120)}" is not dnslink=/ipfs/<cid>[/path] or dnslink=/ipns/<name>[/path]`,
    };
  return { none: true };
}

export interface DnsLinkResolver {
  resolve(name: string): Promise<DnsLinkAnswer>;
}

interface Kept {
  answer: Exclude<DnsLinkAnswer, { kind: 'busy' }>;
  /** Epoch ms until which it is kept; for a link, the record's own TTL in seconds. */
  until: number;
  ttl: number;
}

export function createDnsLinkResolver(dns: Pick<DomainDns, 'txtWithTtl'>, now: () => number = Date.now): DnsLinkResolver {
  const kept = new LRUCache<string, Kept>({ max: MAX_NAMES });
  const running = new Map<string, Promise<DnsLinkAnswer>>();
  const limit = taskLimit(MAX_CONCURRENT);
  let queued = 0;
  // A bucket of PER_MINUTE lookups, refilled at PER_MINUTE a minute: a burst up to it, then that rate.
  let tokens = PER_MINUTE;
  let filledAt = now();

  const keep = (name: string, answer: Kept['answer'], seconds: number, ttl = seconds): Kept => {
    const entry = { answer, until: now() + seconds * 1000, ttl };
    kept.set(name, entry);
    return entry;
  };
  const fromKept = (entry: Kept): DnsLinkAnswer => {
    if (entry.answer.kind !== 'link') return entry.answer;
    const remaining = Math.max(0, Math.floor((entry.until - now()) / 1000));
    return { ...entry.answer, ttl: Math.min(entry.ttl, remaining) };
  };

  const lookUp = async (name: string): Promise<DnsLinkAnswer> => {
    let result;
    try {
      result = await dns.txtWithTtl(`_dnslink.${name}`);
    } catch (err) {
      return fromKept(keep(name, { kind: 'failed', reason: (err as Error).message }, FAILED_KEEP_S));
    }
    const read = readDnsLink(result.texts);
    if ('none' in read) return fromKept(keep(name, { kind: 'none' }, NEGATIVE_KEEP_S));
    if ('invalid' in read) return fromKept(keep(name, { kind: 'invalid', reason: read.invalid }, NEGATIVE_KEEP_S));
    const ttl = Math.min(result.ttl ?? UNKNOWN_TTL_S, MAX_KEEP_S);
    return fromKept(keep(name, { kind: 'link', value: read.value, ttl }, Math.max(ttl, MIN_KEEP_S), ttl));
  };

  return {
    async resolve(name) {
      const hit = kept.get(name);
      if (hit && hit.until > now()) return fromKept(hit);
      const joined = running.get(name);
      if (joined) return joined;
      const at = now();
      tokens = Math.min(PER_MINUTE, tokens + ((at - filledAt) / 60_000) * PER_MINUTE);
      filledAt = at;
      if (tokens < 1) return { kind: 'busy', retryAfter: Math.max(1, Math.ceil(((1 - tokens) * 60) / PER_MINUTE)) };
      if (queued >= MAX_CONCURRENT + MAX_WAITING) return { kind: 'busy', retryAfter: 1 };
      tokens--;
      queued++;
      const lookup = limit(() => lookUp(name)).finally(() => {
        queued--;
        running.delete(name);
      });
      running.set(name, lookup);
      return lookup;
    },
  };
}
