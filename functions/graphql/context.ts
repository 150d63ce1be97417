/**
 * The per-request context: who is calling (from the API key, or from a
 * person's session cookie in the web app), the
 * request's loaders, which batch and remember reads so a page of 100 sites
 * costs a handful of round trips, not hundreds, and the account of its
 * answer's large values (answer.ts).
 */
import type { GraphQLError } from 'graphql';
import type { Account } from '../core/data/accounts.js';
import type { Team, TeamMember } from '../core/data/teams.js';
import type { Deploy } from '../core/data/deploys.js';
import type { Site } from '../core/data/sites.js';
import type { Services } from '../core/services.js';
import { csrfTokenMatches, sessionSecretFrom } from '../core/auth/session-cookie.js';
import { AnswerAccount, type AnswerOptions } from './answer.js';
import { graphqlError } from './errors.js';
import { PageTokens } from './pagination.js';
import { LIMITS } from './limits.js';

/**
 * What the resolvers and the request's loaders read and write: the caller's
 * key and the stores of teams, accounts, keys, sites, their secrets and
 * notification URLs, deploys and their logs; the page-token key; and what
 * the core's deploy requests (the deploy queue, notifications, the blocks a
 * deployCid checks) and a site's change at the edge (the CDN and its host
 * map) need. No S3 store (buckets, objects, uploads), no upload gate.
 */
export type GraphqlServices = Pick<
  Services,
  | 'accounts'
  | 'apiKeys'
  | 'cdn'
  | 'config'
  | 'db'
  | 'deployLogs'
  | 'deployQueue'
  | 'deploys'
  | 'dnsLink'
  | 'domainCertificates'
  | 'domains'
  | 'invitations'
  | 'ipfs'
  | 'ipnsNames'
  | 'logger'
  | 'mailer'
  | 'notificationDeliveries'
  | 'notificationOutbox'
  | 'notificationUrls'
  | 'people'
  | 'rateLimits'
  | 'sessions'
  | 'signingKeys'
  | 'siteHosts'
  | 'siteSecrets'
  | 'sites'
  | 'storageKeys'
  | 'teams'
>;

/**
 * Who a request acts for: a team, and the account whose rights it has
 * there. An API key is its team's and its maker's; a person's session is
 * their account's, in the team the request names (X-Cairn-Team) or else
 * the account's own.
 */
export interface Caller {
  teamId: string;
  accountId: string;
  /** The key in use, for a request made with one. */
  apiKeyId?: string;
  /** The session in use, for a request made with one. */
  sessionId?: string;
}

/** What a request carries that may say who it is. */
export interface RequestCredentials {
  /** The Authorization header: an API key. */
  authorization?: string | null;
  /** The Cookie header: the web app's session. */
  cookie?: string | null;
  /** X-CSRF-Token: what a state-changing request made with the session cookie must carry. */
  csrfToken?: string | null;
  /** X-Cairn-Team: which of the person's teams a session's request acts in. */
  team?: string | null;
}

/** The credentials in a request's headers, looked up by lower-case name; a Lambda event's `cookies` (payload 2.0 takes them out of the headers) joined back. */
export function credentialsFrom(header: (name: string) => string | null | undefined, cookies?: string[]): RequestCredentials {
  return {
    authorization: header('authorization'),
    cookie: cookies?.length ? cookies.join('; ') : header('cookie'),
    csrfToken: header('x-csrf-token'),
    team: header('x-cairn-team'),
  };
}

export interface GraphqlContext {
  services: GraphqlServices;
  /** Who the API key or the session speaks for; absent when there is neither (only introspection runs then). */
  caller?: Caller;
  /**
   * The session the request was made with, when it was (and no API key):
   * its mutations need the session's CSRF token (`csrfOk`), which the
   * authentication plugin checks (server.ts).
   */
  session?: { id: string; csrfOk: boolean };
  /** Why there is no caller. */
  authError?: GraphQLError;
  loaders: Loaders;
  /** The byte account of the answer's deploy logs. */
  answer: AnswerAccount;
}

/** The caller's key from `Authorization: <key>` or `Bearer <key>`, spaces tolerated. */
export function apiKeyFrom(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const key = header
    .trim()
    .replace(/^Bearer\s+/i, '')
    .trim();
  return key || undefined;
}

/** Bytes of large values one answer may carry: less in AWS, where Lambda's response payload limit is lower (LIMITS.lambdaAnswerBytes). */
export function answerBudget(services: Pick<Services, 'config'>): number {
  return services.config.runtime === 'aws' ? LIMITS.lambdaAnswerBytes : LIMITS.answerBytes;
}

/**
 * `credentials`: the request's (a bare string is its Authorization
 * header). An API key, when there is one, decides alone: a script's
 * request is never taken for a session's. `answer`: how the door sends
 * large values (the node:http door streams them) and, for tests, another
 * budget or gate.
 */
export async function contextFor(
  services: GraphqlServices,
  credentials: RequestCredentials | string | null | undefined,
  answer: AnswerOptions = {},
): Promise<GraphqlContext> {
  const given: RequestCredentials = typeof credentials === 'object' && credentials !== null ? credentials : { authorization: credentials };
  const key = apiKeyFrom(given.authorization);
  const context: GraphqlContext = {
    services,
    loaders: new Loaders(services),
    answer: new AnswerAccount({ budget: answerBudget(services), ...answer }),
  };
  const secret = key ? undefined : sessionSecretFrom(services.config, given.cookie);
  if (secret) {
    await authenticateSession(context, secret, given);
    return context;
  }
  const caller = key ? await services.apiKeys.caller(key) : undefined;
  if (caller) context.caller = caller;
  else {
    context.authError = graphqlError(
      'UNAUTHENTICATED',
      key
        ? 'The API key is not valid (unknown or revoked)'
        : 'An API key is required: send it in the Authorization header (or sign in to the web app)',
    );
  }
  return context;
}

/** A session's caller: its account, in the team the request names or the account's own (else its first). */
async function authenticateSession(context: GraphqlContext, secret: string, given: RequestCredentials): Promise<void> {
  const { services, loaders } = context;
  const opened = await services.sessions.open(secret);
  if (!('session' in opened)) {
    context.authError = graphqlError('UNAUTHENTICATED', 'The session has ended (signed out, or unused or kept too long): sign in again');
    return;
  }
  const { session } = opened;
  const account = await loaders.account(session.accountId);
  if (!account) {
    context.authError = graphqlError('UNAUTHENTICATED', "The session's account no longer exists");
    return;
  }
  let teamId = given.team?.trim() || undefined;
  if (teamId) {
    if (!(await loaders.member(teamId, account.id))) {
      context.authError = graphqlError('FORBIDDEN', 'The account is not a member of the team named by X-Cairn-Team', {
        http: { status: 403 },
      });
      return;
    }
  } else if (await loaders.member(account.defaultTeamId, account.id)) teamId = account.defaultTeamId;
  else teamId = (await services.teams.listByAccount(account.id))[0]?.teamId;
  if (!teamId) {
    context.authError = graphqlError('FORBIDDEN', 'The account is a member of no team', { http: { status: 403 } });
    return;
  }
  context.caller = { teamId, accountId: account.id, sessionId: session.id };
  context.session = { id: session.id, csrfOk: csrfTokenMatches(secret, given.csrfToken) };
}

/** The caller; resolvers only run with one (the auth plugin stops other operations first). */
export function callerOf(ctx: GraphqlContext): Caller {
  if (!ctx.caller) throw ctx.authError ?? graphqlError('UNAUTHENTICATED', 'An API key is required');
  return ctx.caller;
}

const deployKey = (k: { siteId: string; deployId: string }) => `${k.siteId}/${k.deployId}`;

/** Gathers the loads asked for in one turn of the event loop and serves them with one batch call; remembers results. */
class BatchLoader<K, V> {
  private queue: Array<{ key: K; resolve: (v: V | undefined) => void; reject: (e: unknown) => void }> = [];
  private cache = new Map<string, Promise<V | undefined>>();

  constructor(
    private readonly idOf: (key: K) => string,
    private readonly fetch: (keys: K[]) => Promise<Map<string, V>>,
  ) {}

  load(key: K): Promise<V | undefined> {
    const id = this.idOf(key);
    let hit = this.cache.get(id);
    if (!hit) {
      hit = new Promise<V | undefined>((resolve, reject) => {
        this.queue.push({ key, resolve, reject });
        if (this.queue.length === 1) setImmediate(() => void this.flush());
      });
      this.cache.set(id, hit);
    }
    return hit;
  }

  prime(key: K, value: V): void {
    this.cache.set(this.idOf(key), Promise.resolve(value));
  }

  has(key: K): boolean {
    return this.cache.has(this.idOf(key));
  }

  private async flush(): Promise<void> {
    const batch = this.queue;
    this.queue = [];
    try {
      const found = await this.fetch(batch.map((b) => b.key));
      for (const b of batch) b.resolve(found.get(this.idOf(b.key)));
    } catch (err) {
      for (const b of batch) {
        this.cache.delete(this.idOf(b.key));
        b.reject(err);
      }
    }
  }
}

/** Remembers one read per key for the request (until a mutation of the request forgets it); `prime` gives it one the request made otherwise. */
function remember<V>(fetch: (id: string) => Promise<V | undefined>) {
  const cache = new Map<string, Promise<V | undefined>>();
  const get = (id: string): Promise<V | undefined> => {
    let hit = cache.get(id);
    if (!hit) {
      hit = fetch(id);
      cache.set(id, hit);
    }
    return hit;
  };
  return Object.assign(get, {
    forget: (id: string) => void cache.delete(id),
    prime: (id: string, value: V) => void (cache.has(id) || cache.set(id, Promise.resolve(value))),
  });
}

/**
 * The request's loaders. Each is made when a resolver first asks for it: a
 * read answered from what the process remembers uses none but the deploy
 * loader, and a request should not pay for the rest.
 */
export class Loaders {
  private deployLoader?: BatchLoader<{ siteId: string; deployId: string }, Deploy>;
  private teamLoader?: ((id: string) => Promise<Team | undefined>) & { forget(id: string): void };
  private accountLoader?: (id: string) => Promise<Account | undefined>;
  private siteLoader?: ((id: string) => Promise<Site | undefined>) & { forget(id: string): void; prime(id: string, site: Site): void };
  private memberLoader?: ((key: string) => Promise<TeamMember | undefined>) & { forget(key: string): void };
  /** The sites knownSites was given, as they were (siteNow). */
  private readonly shownSites = new Map<string, Site>();
  /** The deploys deployNow answered from what the process remembers, by deployKey. */
  private readonly shownDeploys = new Map<string, Deploy>();
  private tokens?: Promise<PageTokens>;

  constructor(private readonly services: Pick<Services, 'accounts' | 'deploys' | 'signingKeys' | 'sites' | 'teams'>) {}

  get deploy(): BatchLoader<{ siteId: string; deployId: string }, Deploy> {
    if (!this.deployLoader) {
      this.deployLoader = new BatchLoader(deployKey, async (keys) => {
        const deploys = await this.services.deploys.getManyRecent(keys);
        return new Map(deploys.map((d) => [deployKey({ siteId: d.siteId, deployId: d.id }), d]));
      });
      for (const deploy of this.shownDeploys.values()) this.deployLoader.prime({ siteId: deploy.siteId, deployId: deploy.id }, deploy);
    }
    return this.deployLoader;
  }

  get team(): ((id: string) => Promise<Team | undefined>) & { forget(id: string): void } {
    return (this.teamLoader ??= remember((id) => this.services.teams.get(id)));
  }

  get account(): (id: string) => Promise<Account | undefined> {
    return (this.accountLoader ??= remember((id) => this.services.accounts.getAccount(id)));
  }

  /** Sites by id (a page of deploys asks for its site once per deploy). */
  get site(): ((id: string) => Promise<Site | undefined>) & { forget(id: string): void; prime(id: string, site: Site): void } {
    if (!this.siteLoader) {
      this.siteLoader = remember((id) => this.services.sites.getRecent(id));
      for (const site of this.shownSites.values()) this.siteLoader.prime(site.id, site);
    }
    return this.siteLoader;
  }

  private get members(): ((key: string) => Promise<TeamMember | undefined>) & { forget(key: string): void } {
    return (this.memberLoader ??= remember((key) => {
      const [teamId, accountId] = key.split('/') as [string, string];
      return this.services.teams.getMember(teamId, accountId);
    }));
  }

  /**
   * The deploy as `deploy.load` gives it, without waiting when the process
   * remembers it (DeployStore.recentOne): a field answered at once costs
   * graphql-js no promise, and the request no turn of the event loop.
   * The request then keeps it, so every field of the request sees the same.
   */
  deployNow(siteId: string, deployId: string): Deploy | undefined | Promise<Deploy | undefined> {
    const id = deployKey({ siteId, deployId });
    const shown = this.shownDeploys.get(id);
    if (shown) return shown;
    if (this.deployLoader?.has({ siteId, deployId })) return this.deployLoader.load({ siteId, deployId });
    const known = this.services.deploys.recentOne(siteId, deployId);
    if (!known) return this.deploy.load({ siteId, deployId });
    this.shownDeploys.set(id, known);
    this.deployLoader?.prime({ siteId, deployId }, known);
    return known;
  }

  /** The site as `site` gives it, without waiting when the request has read it already (knownSites). */
  siteNow(id: string): Site | Promise<Site | undefined> {
    return this.shownSites.get(id) ?? this.site(id);
  }

  member(teamId: string, accountId: string): Promise<TeamMember | undefined> {
    return this.members(`${teamId}/${accountId}`);
  }

  /**
   * Sites a query has just read (a lookup, a page of the team's sites, a
   * page of deploys' site): their deploys' fields (\`published\`, \`url\`)
   * take them from here rather than reading each again, and agree with
   * the site beside them in the answer.
   */
  knownSites(sites: Iterable<Site | null | undefined>): void {
    for (const site of sites)
      if (site && !this.shownSites.has(site.id)) {
        this.siteLoader?.prime(site.id, site);
        this.shownSites.set(site.id, site);
      }
  }

  /** After a mutation changed a site: later fields of the same request read it afresh. */
  forgetSite(id: string): void {
    this.siteLoader?.forget(id);
    this.shownSites.delete(id);
  }

  /** After a mutation changed a membership: later fields of the same request read it afresh. */
  forgetMember(teamId: string, accountId: string): void {
    this.memberLoader?.forget(`${teamId}/${accountId}`);
  }

  /** The signer of page tokens (its key is opened once per process, not per request). */
  pageTokens(): Promise<PageTokens> {
    return (this.tokens ??= pageTokensFor(this.services));
  }
}

const signers = new WeakMap<Buffer, PageTokens>();
async function pageTokensFor(services: Pick<Services, 'signingKeys'>): Promise<PageTokens> {
  const key = await services.signingKeys.get('page-token');
  let signer = signers.get(key);
  if (!signer) signers.set(key, (signer = new PageTokens(key)));
  return signer;
}
