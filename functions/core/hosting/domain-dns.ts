/**
 * The DNS lookups a domain's verification makes: its CNAME, its addresses
 * and the TXT records of its challenge name. They go to the server
 * CAIRN_DNS_RESOLVER names, or to the system's resolvers when it is unset.
 *
 * What comes back is a stranger's: each lookup is bounded in time (c-ares'
 * per-try timeout and tries, then one deadline over the whole lookup that
 * cancels it) and what is kept of an answer in count and length, so a
 * hostile zone answering thousands of records or slowly costs nothing more.
 */
import { Resolver } from 'node:dns/promises';
import type { Config } from '../config.js';

export interface DomainDns {
  /** The CNAME targets of `name` (lower case, no trailing dot); none when it has none. */
  cname(name: string): Promise<string[]>;
  /** The IPv4 and IPv6 addresses `name` resolves to (through its CNAMEs). */
  addresses(name: string): Promise<string[]>;
  /** Each TXT record of `name`, its strings joined. */
  txt(name: string): Promise<string[]>;
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
  const clean = (s: string) => s.toLowerCase().replace(/\.$/, '');
  return {
    cname: async (name) => (await ask(name, 'CNAME', (r) => r.resolveCname(name))).map(clean),
    async addresses(name) {
      const [v4, v6] = await Promise.all([ask(name, 'A', (r) => r.resolve4(name)), ask(name, 'AAAA', (r) => r.resolve6(name))]);
      return [...v4, ...v6].map((a) => a.toLowerCase());
    },
    txt: async (name) => (await ask(name, 'TXT', (r) => r.resolveTxt(name))).map((chunks) => chunks.join('').slice(0, MAX_TXT)),
  };
}
