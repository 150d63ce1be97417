/**
 * Signing up, in and out of the web app, on the API port beside /graphql
 * (both doors route `/auth/` here, routes.ts):
 *
 *   POST /auth/sign-up   {"email", "password", "name"}  -> 201 {"ok": true, "account", "email", "session", "csrfToken"} + the cookie
 *   POST /auth/sign-in   {"email", "password"}          -> 200 the same
 *   POST /auth/sign-out  {"everywhere"?: true}          -> 200 {"ok": true, "ended"}: this session (or all the account's), cookie cleared
 *   GET  /auth/session                                  -> 200 {"ok": true, "account", "email", "session", "csrfToken", "teams"}
 *
 * An account that asks for a passkey after the password answers the right
 * password with 401 `{"ok": false, "error", "secondFactor": "passkey",
 * "options", "recoveryCodes"}` and no cookie: the options go to the
 * browser's WebAuthn call, and its answer to POST /auth/passkeys/sign-in
 * (passkeys-http.ts); or the options' challenge, with one of the account's
 * recovery codes (`recoveryCodes` says whether it has any left), to POST
 * /auth/recovery-codes/sign-in (recovery-codes-http.ts).
 *
 * A refusal is `{"ok": false, "error": "<one sentence>", "field"?}`: 400
 * bad input, 401 wrong e-mail or password (the same answer for both) or
 * no session, 403 sign-up not open or a missing CSRF token, 415 a body
 * that is not JSON, 429 with Retry-After after too many failures.
 *
 * Plain JSON routes rather than GraphQL mutations: these set and clear a
 * cookie, answer 429 with Retry-After, and run before the caller has any
 * credential, three things a GraphQL operation would need side channels
 * for (a plugin setting headers, an exemption from the API's
 * authentication). GraphQL accepts the session they make (context.ts).
 *
 * Set-Cookie goes out the same way through both doors: the node:http door
 * writes the Response's headers, and the Lambda door (core/http/lambda.ts,
 * toLambdaResult) moves every Set-Cookie into payload 2.0's `cookies`
 * array, where API Gateway's HTTP API and Function URLs take them
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html,
 * "Lambda function response format";
 * https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html,
 * "Response payload format"); the request's cookies arrive in the event's
 * `cookies`, which that door joins back into a Cookie header.
 *
 * The POSTs take only `Content-Type: application/json`: a form on another
 * site can send none of them (a cross-site request with that type needs a
 * CORS preflight, which this service never grants), so no other site can
 * sign a browser in to an account of its choosing ("login CSRF"). Sign-out
 * changes the session, so it wants the session's CSRF token as well.
 */
import { signIn, signUp, type AuthRefusal, type AuthServices, type ClientInfo, type SignedIn } from '../core/auth/sign-in.js';
import {
  clearedSessionCookie,
  CSRF_HEADER,
  csrfTokenFor,
  csrfTokenMatches,
  sessionCookie,
  sessionSecretFrom,
} from '../core/auth/session-cookie.js';
import type { HttpRequest } from '../core/http/types.js';
import { readBodyFields } from './http-body.js';
import { SESSION_LIMITS, type Session } from '../core/data/sessions.js';
import type { Services } from '../core/services.js';

/** The largest body these routes read: an e-mail, a name and a password of at most 1,000 characters fit many times over. */
const MAX_AUTH_BODY_BYTES = 16 * 1024;

export const isAuthPath = (rawPath: string): boolean => rawPath.startsWith('/auth/');

export function json(status: number, body: Record<string, unknown>, headers: HeadersInit = {}): Response {
  const out = new Headers(headers);
  out.set('content-type', 'application/json; charset=utf-8');
  out.set('cache-control', 'no-store');
  return new Response(JSON.stringify(body), { status, headers: out });
}

export const refuse = (status: number, error: string, extra: Record<string, unknown> = {}, headers: HeadersInit = {}) =>
  json(status, { ok: false, error, ...extra }, headers);

const REFUSAL_STATUS: Record<AuthRefusal['kind'], number> = { invalid: 400, closed: 403, wrong: 401, locked: 429 };

export function refusal(outcome: AuthRefusal): Response {
  if (outcome.kind === 'locked') return refuse(429, outcome.message, {}, { 'retry-after': String(outcome.retryAfter) });
  return refuse(REFUSAL_STATUS[outcome.kind], outcome.message, outcome.kind === 'invalid' ? { field: outcome.field } : {});
}

/** What the web app is told of a session (never its secret, which only the cookie carries). */
function sessionView(session: Session) {
  return {
    id: session.id,
    createdAt: session.createdAt,
    lastSeenAt: session.lastSeenAt,
    expiresAt: new Date(Date.parse(session.createdAt) + SESSION_LIMITS.absoluteSeconds * 1000).toISOString(),
  };
}

export function signedIn(services: AuthServices, outcome: SignedIn, status: number): Response {
  const headers = new Headers({ 'set-cookie': sessionCookie(services.config, outcome.secret) });
  return json(
    status,
    {
      ok: true,
      account: { id: outcome.account.id, name: outcome.account.name, defaultTeamId: outcome.account.defaultTeamId },
      email: outcome.email,
      session: sessionView(outcome.session),
      csrfToken: csrfTokenFor(outcome.secret),
    },
    headers,
  );
}

export const clientOf = (req: HttpRequest): ClientInfo => ({
  address: req.remoteAddress ?? null,
  userAgent: req.headers.get('user-agent'),
});

/** The JSON body as an object, or the refusal to send. */
export async function readJson(req: HttpRequest): Promise<Record<string, unknown> | Response> {
  const read = await readBodyFields(req, 'json', MAX_AUTH_BODY_BYTES);
  return 'fields' in read ? read.fields : refuse(read.status, read.problem, {}, read.headers);
}

/** The session the request's cookie opens, with its secret, or undefined. */
export async function currentSession(services: AuthServices, req: HttpRequest): Promise<{ session: Session; secret: string } | undefined> {
  const secret = sessionSecretFrom(services.config, req.headers.get('cookie'));
  if (!secret) return undefined;
  const opened = await services.sessions.open(secret);
  return 'session' in opened ? { session: opened.session, secret } : undefined;
}

export const NO_SESSION = 'Not signed in (no session, or it has ended): sign in again';

/** The most teams the session's answer names (each is one read); a person in more reaches the rest by id with X-Cairn-Team. */
const SESSION_TEAMS = 50;

/** The account's teams, for the web app's team switcher (X-Cairn-Team picks one): id, name and the account's role there. */
async function teamsOf(services: Pick<Services, 'teams'>, accountId: string) {
  const memberships = (await services.teams.listByAccount(accountId)).slice(0, SESSION_TEAMS);
  const teams = await Promise.all(memberships.map((m) => services.teams.get(m.teamId)));
  return memberships.flatMap((m, i) => {
    const team = teams[i];
    return team ? [{ id: team.id, name: team.name, role: m.role }] : [];
  });
}

/** Answers a request under /auth/. */
export async function handleAuth(services: AuthServices & Pick<Services, 'teams'>, req: HttpRequest): Promise<Response> {
  const path = req.rawPath.replace(/\/+$/, '');
  const method = req.method.toUpperCase();
  const route = { '/auth/sign-up': 'POST', '/auth/sign-in': 'POST', '/auth/sign-out': 'POST', '/auth/session': 'GET' }[path];
  if (!route) {
    await req.body?.cancel().catch(() => {});
    return refuse(404, 'no such route: /auth/ has sign-up, sign-in, sign-out and session');
  }
  if (method !== route) {
    await req.body?.cancel().catch(() => {});
    return refuse(405, `${path} takes ${route} only`, {}, { allow: route });
  }
  try {
    if (path === '/auth/session') {
      const current = await currentSession(services, req);
      if (!current) return refuse(401, NO_SESSION);
      const [account, email, teams] = await Promise.all([
        services.accounts.getAccount(current.session.accountId),
        services.people.emailOf(current.session.accountId),
        teamsOf(services, current.session.accountId),
      ]);
      if (!account) return refuse(401, NO_SESSION);
      // Whether the person knows a password (an account made through a provider has none until a reset link sets one).
      const identity = email ? await services.people.byEmail(email) : undefined;
      return json(200, {
        ok: true,
        account: { id: account.id, name: account.name, defaultTeamId: account.defaultTeamId },
        email: email ?? null,
        passwordSet: Boolean(identity && !identity.passwordUnknown),
        session: sessionView(current.session),
        csrfToken: csrfTokenFor(current.secret),
        teams,
      });
    }
    const body = await readJson(req);
    if (body instanceof Response) return body;
    if (path === '/auth/sign-up') {
      const outcome = await signUp(services, body, clientOf(req));
      return outcome.kind === 'signed-in' ? signedIn(services, outcome, 201) : refusal(outcome);
    }
    if (path === '/auth/sign-in') {
      const outcome = await signIn(services, body, clientOf(req));
      if (outcome.kind === 'second-factor')
        // Not signed in yet (no cookie): `ok: false`, so a client that knows no second step takes it as a refusal.
        return refuse(401, outcome.message, { secondFactor: 'passkey', options: outcome.options, recoveryCodes: outcome.recoveryCodes });
      return outcome.kind === 'signed-in' ? signedIn(services, outcome, 200) : refusal(outcome);
    }
    // Sign-out: the session's own request, with its CSRF token.
    const current = await currentSession(services, req);
    const cleared = { 'set-cookie': clearedSessionCookie(services.config) };
    if (!current) return refuse(401, NO_SESSION, {}, cleared);
    if (!csrfTokenMatches(current.secret, req.headers.get(CSRF_HEADER)))
      return refuse(403, `the ${CSRF_HEADER} header must carry this session's CSRF token`);
    const ended =
      body.everywhere === true
        ? await services.sessions.endAll(current.session.accountId)
        : Number(await services.sessions.endSecret(current.secret));
    return json(200, { ok: true, ended }, cleared);
  } catch (err) {
    services.logger.error('an /auth/ request failed', { path, err });
    return refuse(500, 'internal error');
  }
}
