/**
 * The DNS lookups a domain's verification makes: its CNAME, its addresses
 * and the TXT records of its challenge name; and the gateway's DNSLink
 * lookups (`txtWithTtl`: the records and how long they may be kept). They
 * go to the server CAIRN_DNS_RESOLVER names, or to the system's resolvers
 * when it is unset.
 *
 * What comes back is a stranger's: each lookup is bounded in time (c-ares'
 * per-try timeout and tries, then one deadline over the whole lookup that
 * cancels it) and what is kept of an answer in count and length, so a
 * hostile zone answering thousands of records or slowly costs nothing more.
 */
import { Resolver } from 'node:dns/promises';
import { randomInt } from 'node:crypto';
import type { Config } from '../config.js';
import { CLASS, encodeMessage, exchangeTcp, OPCODE, parseMessage, readTxt, TYPE } from '../net/dns-wire.js';

export interface DomainDns {
  /** The CNAME targets of `name` (lower case, no trailing dot); none when it has none. */
  cname(name: string): Promise<string[]>;
  /** The IPv4 and IPv6 addresses `name` resolves to (through its CNAMEs). */
  addresses(name: string): Promise<string[]>;
  /** Each TXT record of `name`, its strings joined. */
  txt(name: string): Promise<string[]>;
  /**
   * The same, with the seconds the answer may be kept (the least TTL of the
   * answer's records, its CNAMEs' included); `ttl` undefined when the
   * server could only be asked through the system's stub resolver, which
   * does not say.
   */
  txtWithTtl(name: string): Promise<{ texts: string[]; ttl?: number }>;
}

export class DnsLookupError extends Error {
  override name = 'DnsLookupError';
}

/** Records kept of one answer, and characters of one TXT record: a challenge token is far shorter. */
const MAX_RECORDS = 32;
const MAX_TXT = 512;
/** Per try, tries, and the deadline of a whole lookup. */
const TRY_MS = 2000;
const TRIES = 2;
const LOOKUP_MS = 5000;

/** Codes that mean "no such record" rather than a failure to ask (Node's dns module's error codes). */
const ABSENT = new Set(['ENODATA', 'ENOTFOUND', 'ENONAME', 'NXDOMAIN']);
const NXDOMAIN = 3;

/** `host:port` as Node's resolver lists a server (`1.2.3.4`, `1.2.3.4:53`, `::1`, `[::1]:53`). */
function serverOf(text: string): { host: string; port: number } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (v6) return { host: v6[1]!, port: Number(v6[2] ?? 53) };
  const v4 = /^([^:]+):(\d+)$/.exec(text);
  if (v4) return { host: v4[1]!, port: Number(v4[2]) };
  return { host: text, port: 53 };
}

export function domainDns(config: Pick<Config, 'domains'>): DomainDns {
  const server = config.domains.resolver;
  const make = () => {
    const resolver = new Resolver({ timeout: TRY_MS, tries: TRIES });
    if (server) resolver.setServers([server.host.includes(':') ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`]);
    return resolver;
  };
  const ask = async <T>(name: string, what: string, query: (r: Resolver) => Promise<T[]>): Promise<T[]> => {
    const resolver = make();
    let timer: NodeJS.Timeout | undefined;
    try {
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          resolver.cancel();
          reject(new DnsLookupError(`the DNS lookup of ${what} for ${name} took over ${LOOKUP_MS / 1000} s`));
        }, LOOKUP_MS);
      });
      return (await Promise.race([query(resolver), deadline])).slice(0, MAX_RECORDS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code && ABSENT.has(code)) return [];
      if (err instanceof DnsLookupError) throw err;
      throw new DnsLookupError(`the DNS lookup of ${what} for ${name} failed (${code ?? (err as Error).message})`);
    } finally {
      clearTimeout(timer);
    }
  };
  /**
   * Node's resolver says no TTL of a TXT record (its `ttl` option is
   * resolve4's and resolve6's alone: https://nodejs.org/api/dns.html#dnspromisesresolvetxthostname),
   * so the query is made on the wire (core/net/dns-wire.ts, its bounds) over
   * TCP, which every DNS server must answer (RFC 7766 section 5). A server
   * that cannot be reached that way is asked through Node's resolver, TTL
   * unknown.
   */
  const txtOnWire = async (name: string): Promise<{ texts: string[]; ttl?: number }> => {
    const target = server ?? serverOf(new Resolver().getServers()[0] ?? '127.0.0.1');
    const id = randomInt(0, 0x10000);
    let answer;
    try {
      const message = encodeMessage({ id, opcode: OPCODE.QUERY, rd: true, questions: [{ name, type: TYPE.TXT, klass: CLASS.IN }] });
      answer = parseMessage(await exchangeTcp(target, message, TRY_MS));
    } catch {
      return { texts: await ask(name, 'TXT', (r) => r.resolveTxt(name)).then((all) => all.map((c) => c.join('').slice(0, MAX_TXT))) };
    }
    const asked = answer.questions[0]?.name;
    if (answer.id !== id || !answer.isResponse || (asked !== undefined && asked !== name.toLowerCase().replace(/\.$/, '')))
      throw new DnsLookupError(`the DNS answer for ${name} does not answer its question`);
    if (answer.rcode === NXDOMAIN) return { texts: [] };
    if (answer.rcode !== 0) throw new DnsLookupError(`the DNS lookup of TXT for ${name} failed (rcode ${answer.rcode})`);
    const records = answer.answers.filter((r) => r.klass === CLASS.IN && (r.type === TYPE.TXT || r.type === TYPE.CNAME));
    const texts = records
      .filter((r) => r.type === TYPE.TXT)
      .slice(0, MAX_RECORDS)
      .map((r) => readTxt(r.rdata).slice(0, MAX_TXT));
    return { texts, ttl: texts.length ? Math.min(...records.map((r) => r.ttl)) : undefined };
  };
  const clean = (s: string) => s.toLowerCase().replace(/\.$/, '');
  return {
    cname: async (name) => (await ask(name, 'CNAME', (r) => r.resolveCname(name))).map(clean),
    async addresses(name) {
      const [v4, v6] = await Promise.all([ask(name, 'A', (r) => r.resolve4(name)), ask(name, 'AAAA', (r) => r.resolve6(name))]);
      return [...v4, ...v6].map((a) => a.toLowerCase());
    },
    txt: async (name) => (await ask(name, 'TXT', (r) => r.resolveTxt(name))).map((chunks) => chunks.join('').slice(0, MAX_TXT)),
    async txtWithTtl(name) {
      try {
        return await txtOnWire(name);
      } catch (err) {
        if (err instanceof DnsLookupError) throw err;
        throw new DnsLookupError(`the DNS lookup of TXT for ${name} failed (${(err as Error).message})`);
      }
    },
  };
}
