/**
 * Page sizes and `nextToken`s.
 *
 * A token is `<payload>.<mac>`: the payload (base64url JSON) names the
 * query, its arguments and where the next page starts; the mac is an
 * HMAC-SHA256 of it under a key only the service holds. So a token is
 * opaque to clients, any change to it is detected, and a token from one
 * listing (another site's deploys, another query) is refused by another.
 * Nothing else is bound: `limit` may change from page to page.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { badInput } from './errors.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
/** Far more than any token this service issues; longer input is refused unread. */
const MAX_TOKEN_LENGTH = 1024;
const MAC_CONTEXT = 'cairn/page-token/v1.';

/** The page size for a `limit` argument: 20 when absent, at most 100. */
export function pageSize(limit: number | null | undefined): number {
  if (limit === null || limit === undefined) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) {
    throw badInput(`limit must be a positive integer (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`, 'limit');
  }
  return Math.min(limit, MAX_LIMIT);
}

/** What a token is good for: one query with these arguments (paging arguments aside). */
export interface Listing {
  query: string;
  args: Record<string, string>;
}

interface Payload {
  q: string;
  a: Record<string, string>;
  /** Where the next page starts (store-specific, e.g. the last deploy id seen). */
  p: string;
}

const canonical = (args: Record<string, string>) =>
  JSON.stringify(
    Object.keys(args)
      .sort()
      .map((k) => [k, args[k]]),
  );

/** Tokens issued lately, by payload: the same page asked for again is not signed again (a token is a pure function of its payload and the key). */
const ISSUED_KEPT = 1000;

export class PageTokens {
  private readonly issued = new LRUCache<string, string>({ max: ISSUED_KEPT });

  constructor(private readonly key: Buffer) {}

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.key).update(MAC_CONTEXT).update(payload).digest();
  }

  issue(listing: Listing, position: string): string {
    const json = JSON.stringify({ q: listing.query, a: listing.args, p: position } satisfies Payload);
    let token = this.issued.get(json);
    if (token === undefined) {
      const payload = Buffer.from(json).toString('base64url');
      token = `${payload}.${this.mac(payload).toString('base64url')}`;
      this.issued.set(json, token);
    }
    return token;
  }

  /** The position a token resumes at, or undefined for no token; BAD_USER_INPUT for one that is altered or not this listing's. */
  read(listing: Listing, token: string | null | undefined): string | undefined {
    if (token === null || token === undefined) return undefined;
    const invalid = () => badInput('nextToken is not valid: pass back a nextToken exactly as this API returned it', 'nextToken');
    if (token.length > MAX_TOKEN_LENGTH) throw invalid();
    const parts = token.split('.');
    if (parts.length !== 2 || !/^[A-Za-z0-9_-]+$/.test(parts[0]!) || !/^[A-Za-z0-9_-]+$/.test(parts[1]!)) throw invalid();
    const [payload, mac] = parts as [string, string];
    const expected = this.mac(payload);
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
    let decoded: Payload;
    try {
      decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Payload;
    } catch {
      throw invalid();
    }
    if (decoded.q !== listing.query || canonical(decoded.a ?? {}) !== canonical(listing.args) || typeof decoded.p !== 'string') {
      throw badInput(
        `nextToken belongs to another listing: it is good only for the ${decoded.q} query and arguments it came from`,
        'nextToken',
      );
    }
    return decoded.p;
  }
}
