/**
 * What the suites of people's routes (sign-in, invitations, password
 * reset, device login) each start the same way: the local service (and,
 * given a sender, a real SMTP server it sends mail to), the environment
 * the GraphQL Lambda handler reads, the doors to reach it through, and a
 * client of its /auth/ routes and /graphql through one door.
 *
 * `accountsService` registers its own beforeAll and afterAll, so a suite
 * calls it once at the top and reads `live.service` and `live.smtp` in
 * its tests (they throw when read before the service has started).
 */
import { graphqlDoors, importGraphqlLambda, type Door } from './graphql.js';
import type { LambdaFn } from './lambda-door.js';
import { startTestService, type TestService } from './service.js';
import { startSmtp, type TestSmtp } from './smtp.js';
import { doorsFor } from './test-set.js';

/** The password the suites' people have. */
export const PASSWORD = 'correct horse battery staple';

/** The addresses this machine's requests arrive from, as the doors see them: counts kept by address cover all three. */
export const LOOPBACK_ADDRESSES = ['127.0.0.1', '::ffff:127.0.0.1', '::1'];

export interface LiveService {
  readonly service: TestService;
  /** The SMTP server the service sends to (only when started with a sender). */
  readonly smtp: TestSmtp;
  /** The doors this run goes through (test-set.ts), for `describe.each`. */
  readonly doors: Door[];
  /** The API's base URL: /auth/ and /graphql are under it. */
  base(): string;
}

/**
 * Starts the service with `env` (and, with `mailFrom`, an SMTP server and
 * the service sending to it) for the suite; `env` may be made when the
 * suite starts (by a function), from servers of the suite's own.
 */
export function accountsService(
  env: Record<string, string> | (() => Promise<Record<string, string>>),
  options: { mailFrom?: string } = {},
): LiveService {
  let service: TestService | undefined;
  let smtp: TestSmtp | undefined;
  let lambda: LambdaFn | undefined;
  const savedEnv = { ...process.env };
  beforeAll(async () => {
    if (options.mailFrom) smtp = await startSmtp();
    const given = typeof env === 'function' ? await env() : env;
    service = await startTestService({ ...given, ...(smtp ? { CAIRN_SMTP_URL: smtp.url, CAIRN_MAIL_FROM: options.mailFrom! } : {}) });
    // The Lambda handler reads its config from the environment, as in AWS.
    Object.assign(process.env, service.env);
    lambda = await importGraphqlLambda();
  }, 120_000);
  afterAll(async () => {
    process.env = savedEnv;
    await service?.close();
    await smtp?.close();
  });
  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is not started (read it in a test or a hook, not while the suite is declared)`);
    return value;
  };
  const live: LiveService = {
    get service() {
      return started(service, 'the service');
    },
    get smtp() {
      return started(smtp, 'the SMTP server (give accountsService a mailFrom)');
    },
    doors: doorsFor(graphqlDoors(() => started(lambda, 'the Lambda handler'))),
    base: () => apiBase(live.service),
  };
  return live;
}

/** The API's base URL of a service: /auth/ and /graphql are under it. */
export const apiBase = (service: TestService): string => service.endpoints.graphql.replace(/\/graphql$/, '');

/** The node:http door alone, for a suite's second service (one without mail, say). */
export const NODE_DOOR: Door = { name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) };

/** A short tag of the door for names that must differ between the doors' runs. */
export const doorTag = (door: Door): string => (door.name.startsWith('node') ? 'n' : 'l');

/** The API's JSON routes through one door: a POST's Response, a GraphQL answer, and a sign-in's cookie and CSRF token. */
export function authClient(door: Door, base: () => string) {
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    door.fetch(`${base()}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  /** The POST's status, body (text and parsed), the session cookie it set (`name=value`, as a browser sends it back) and headers. */
  const postJson = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await post(path, body, headers);
    const cookie = (res.headers.getSetCookie()[0] ?? '').split(';')[0]!;
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as any, cookie, headers: res.headers };
  };
  const gql = async (headers: Record<string, string>, query: string, variables?: Record<string, unknown>) => {
    const res = await door.fetch(`${base()}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query, variables }),
    });
    return { status: res.status, ...((await res.json()) as { data?: any; errors?: any[] }) };
  };
  /** Signs in: the status, and what a browser then sends (the cookie and the session's CSRF token). */
  const signIn = async (email: string, password = PASSWORD) => {
    const res = await postJson('/auth/sign-in', { email, password });
    return { status: res.status, headers: { cookie: res.cookie, 'x-csrf-token': res.body.csrfToken as string } };
  };
  return { base, post, postJson, gql, signIn };
}
