/**
 * Signing in with an OpenID Connect provider (core/auth/oidc.ts has the
 * rules), on the API port beside the other `/auth/` routes (routes.ts):
 *
 *   POST /auth/oidc/start    {"invitation"?}   -> 200 {"ok": true, "url"} + the flow cookie; the page goes to `url`
 *   GET  /auth/oidc/callback ?code&state&iss   -> 303 to `/`, with the session cookie
 *                            (any refusal)      -> 303 to `/?sign_in_error=<problem>`, which the sign-in page words
 *
 * The start is a JSON POST, as the other `/auth/` POSTs are: a page of
 * another site cannot start one. What the callback checks the provider's
 * answer against (state, nonce, PKCE verifier, an invitation's token)
 * waits in the browser, in an HttpOnly cookie made with the session
 * cookie's attributes (`__Host-` and Secure but on a loopback http base
 * URL), for 10 minutes: no item waits in the table, and the answer only
 * counts in the browser that started it, so no one can hand a victim a
 * callback URL that signs them in to the sender's account. SameSite=Lax
 * still sends it on the provider's redirect, a top-level GET. The
 * callback clears it whatever the outcome; the provider takes each code
 * once, so a replayed callback is refused there.
 *
 * Linking a provider to the signed-in account, from Settings:
 *
 *   GET  /auth/oidc/identities                session          -> 200 {"ok", "identities": [{id, issuer, email, createdAt}]}
 *   POST /auth/oidc/link {}                   session + CSRF   -> 200 {"ok", "url"} + the flow cookie, bound to this session
 *   POST /auth/oidc/unlink {"id"}             session + CSRF   -> 200 {"ok"}; 409 when it is the only way in
 *   GET  /auth/oidc/callback (a linking flow)                  -> 303 to `/?link=<outcome>#/settings`
 *
 * A linking flow's cookie carries a digest of the starting session's
 * secret; the callback links only when the request's session is that one.
 * So no one can make a victim's browser link the sender's identity: a
 * callback URL sent to the victim meets no flow of theirs (or one whose
 * state differs), and a flow of their own links only their own identity
 * at the provider. An identity linked to another account is refused, not
 * moved.
 *
 * The callback never answers 500: every failure is a redirect to the
 * sign-in page (or, linking, Settings) with the problem's name, logged
 * here with its cause.
 */
import { cookieAttributes, cookieValues, hostCookieName, sessionCookie } from '../core/auth/session-cookie.js';
import {
  callbackWait,
  failCallback,
  OIDC_CALLBACK_PATH,
  OIDC_FLOW_SECONDS,
  oidcLinkBinding,
  oidcProvider,
  OidcUnavailable,
  signInWithIdentity,
  type OidcFlow,
  type OidcLinkOutcome,
  type OidcProblem,
  type OidcProvider,
  type OidcSettings,
} from '../core/auth/oidc.js';
import type { AuthServices } from '../core/auth/sign-in.js';
import { queryParams, type HttpRequest } from '../core/http/types.js';
import { CSRF_HEADER, csrfTokenMatches } from '../core/auth/session-cookie.js';
import { linkedIdentities, linkOidcIdentity, unlinkOidcIdentity } from '../core/data/oidc-identities.js';
import { clientOf, currentSession, json, NO_SESSION, readJson, refuse } from './accounts-http.js';

const START_PATH = '/auth/oidc/start';
const LINK_PATH = '/auth/oidc/link';
const UNLINK_PATH = '/auth/oidc/unlink';
const IDENTITIES_PATH = '/auth/oidc/identities';

export const isOidcPath = (rawPath: string): boolean => rawPath.startsWith('/auth/oidc/');

/** One provider per settings per process: its discovery document is fetched once. */
const providers = new Map<string, OidcProvider>();
function providerFor(settings: OidcSettings): OidcProvider {
  const key = `${settings.issuer}\n${settings.clientId}`;
  let provider = providers.get(key);
  if (!provider) providers.set(key, (provider = oidcProvider(settings)));
  return provider;
}

const flowCookieName = (services: AuthServices) => hostCookieName(services.config, 'cairn_oidc');

function flowCookie(services: AuthServices, value: string, maxAge: number): string {
  return `${flowCookieName(services)}=${value}; ${cookieAttributes(services.config, maxAge)}`;
}

/** The flow the request's cookie carries, if it is one and not too old. */
function flowFrom(services: AuthServices, req: HttpRequest): OidcFlow | undefined {
  for (const value of cookieValues(req.headers.get('cookie'), flowCookieName(services))) {
    try {
      const flow = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as Partial<OidcFlow>;
      const fresh = typeof flow.at === 'number' && Date.now() - flow.at < OIDC_FLOW_SECONDS * 1000;
      if (fresh && typeof flow.state === 'string' && typeof flow.nonce === 'string' && typeof flow.verifier === 'string')
        return {
          state: flow.state,
          nonce: flow.nonce,
          verifier: flow.verifier,
          at: flow.at!,
          ...(typeof flow.invitation === 'string' ? { invitation: flow.invitation } : {}),
          ...(typeof flow.link === 'string' ? { link: flow.link } : {}),
        };
    } catch {
      // Not a flow of ours: as if there were none.
    }
  }
  return undefined;
}

/** Back to the web app: signed in, or to the sign-in page with the problem. */
function backToApp(services: AuthServices, problem?: OidcProblem, sessionSetCookie?: string): Response {
  const headers = new Headers({ location: problem ? `/?sign_in_error=${problem}` : '/', 'cache-control': 'no-store' });
  headers.append('set-cookie', flowCookie(services, '', 0));
  if (sessionSetCookie) headers.append('set-cookie', sessionSetCookie);
  return new Response(null, { status: 303, headers });
}

/** Back to Settings after linking (or not), with what came of it. */
function backToSettings(services: AuthServices, outcome: OidcLinkOutcome): Response {
  const headers = new Headers({ location: `/?link=${outcome}#/settings`, 'cache-control': 'no-store' });
  headers.append('set-cookie', flowCookie(services, '', 0));
  return new Response(null, { status: 303, headers });
}

const CSRF_REFUSAL = `the ${CSRF_HEADER} header must carry this session's CSRF token`;

/** Linking from Settings: the session's routes (start, list, unlink), each with its CSRF token but the list. */
async function handleLinking(services: AuthServices, req: HttpRequest, path: string, provider: OidcProvider): Promise<Response> {
  try {
    const body = req.method.toUpperCase() === 'POST' ? await readJson(req) : {};
    if (body instanceof Response) return body;
    const current = await currentSession(services, req);
    if (!current) return refuse(401, NO_SESSION);
    const { accountId } = current.session;
    if (path === IDENTITIES_PATH) return json(200, { ok: true, identities: await linkedIdentities(services.db, accountId) });
    if (!csrfTokenMatches(current.secret, req.headers.get(CSRF_HEADER))) return refuse(403, CSRF_REFUSAL);
    if (path === LINK_PATH) {
      const { flow, url } = await provider.start(services.config.urls.baseUrl);
      const value = Buffer.from(JSON.stringify({ ...flow, link: oidcLinkBinding(current.secret) })).toString('base64url');
      return json(200, { ok: true, url }, { 'set-cookie': flowCookie(services, value, OIDC_FLOW_SECONDS) });
    }
    // Unlinking: only while another way in remains, checked in the transaction that unlinks.
    if (typeof body.id !== 'string' || !/^[0-9a-f]{64}$/.test(body.id))
      return refuse(400, 'id (the identity to unlink) is required', { field: 'id' });
    const email = await services.people.emailOf(accountId);
    const identity = email ? await services.people.byEmail(email) : undefined;
    const otherWay =
      identity && !identity.passwordUnknown ? 'password' : (await services.passkeys.settings(accountId)).count > 0 ? 'passkey' : undefined;
    if (!(await linkedIdentities(services.db, accountId)).some((i) => i.id === body.id))
      return refuse(404, 'You have no such linked identity');
    if (!otherWay || !(await unlinkOidcIdentity(services.db, accountId, body.id, otherWay, email)))
      return refuse(409, 'This is your only way in: set a password or add a passkey first, then unlink it');
    return json(200, { ok: true });
  } catch (err) {
    services.logger.error('an /auth/ request failed', { path, err });
    return err instanceof OidcUnavailable
      ? refuse(503, `${provider.settings.name} cannot be reached now: try again later`)
      : refuse(500, 'internal error');
  }
}

/** Finishes a linking flow at the callback: only in the session that started it. */
async function finishLinking(services: AuthServices, req: HttpRequest, flow: OidcFlow, provider: OidcProvider): Promise<Response> {
  const current = await currentSession(services, req);
  if (!current || oidcLinkBinding(current.secret) !== flow.link) return backToSettings(services, 'session');
  const callbackUrl = new URL(`${services.config.urls.baseUrl}${OIDC_CALLBACK_PATH}?${req.rawQuery}`);
  let identity: Awaited<ReturnType<OidcProvider['finish']>>;
  try {
    identity = await provider.finish(flow, callbackUrl);
  } catch (err) {
    services.logger.warn('linking an OpenID Connect identity was refused', { err: err instanceof Error ? err.message : String(err) });
    if (err instanceof OidcUnavailable) return backToSettings(services, 'unavailable');
    await failCallback(services, clientOf(req));
    return backToSettings(services, 'failed');
  }
  const outcome = await linkOidcIdentity(services.db, {
    accountId: current.session.accountId,
    issuer: provider.settings.issuer,
    sub: identity.sub,
    email: identity.email ?? '',
    createdAt: new Date().toISOString(),
  });
  services.logger.info('an OpenID Connect identity was linked from Settings', { accountId: current.session.accountId, outcome });
  return backToSettings(services, outcome);
}

export async function handleOidc(services: AuthServices, req: HttpRequest): Promise<Response> {
  const path = req.rawPath.replace(/\/+$/, '');
  const method = req.method.toUpperCase();
  const route = {
    [START_PATH]: 'POST',
    [OIDC_CALLBACK_PATH]: 'GET',
    [LINK_PATH]: 'POST',
    [UNLINK_PATH]: 'POST',
    [IDENTITIES_PATH]: 'GET',
  }[path];
  const settings = services.config.oidc;
  if (!route || !settings) {
    await req.body?.cancel().catch(() => {});
    return refuse(404, settings ? 'no such route: /auth/oidc/ has start and callback' : 'no OpenID Connect provider is configured here');
  }
  if (method !== route) {
    await req.body?.cancel().catch(() => {});
    return refuse(405, `${path} takes ${route} only`, {}, { allow: route });
  }
  const provider = providerFor(settings);
  if (path === LINK_PATH || path === UNLINK_PATH || path === IDENTITIES_PATH) return handleLinking(services, req, path, provider);
  if (path === START_PATH) {
    try {
      const body = await readJson(req);
      if (body instanceof Response) return body;
      const invitation = typeof body.invitation === 'string' && body.invitation !== '' ? body.invitation : undefined;
      const { flow, url } = await provider.start(services.config.urls.baseUrl, invitation);
      const value = Buffer.from(JSON.stringify(flow)).toString('base64url');
      return json(200, { ok: true, url }, { 'set-cookie': flowCookie(services, value, OIDC_FLOW_SECONDS) });
    } catch (err) {
      services.logger.error('starting an OpenID Connect sign-in failed', { err });
      return err instanceof OidcUnavailable
        ? refuse(503, `${settings.name} cannot be reached now: try again later`)
        : refuse(500, 'internal error');
    }
  }
  const client = clientOf(req);
  try {
    if ((await callbackWait(services, client)) > 0) return backToApp(services, 'locked');
    const flow = flowFrom(services, req);
    if (!flow) return backToApp(services, 'expired');
    const params = queryParams(req.rawQuery);
    const back = (problem: OidcProblem & OidcLinkOutcome) => (flow.link ? backToSettings(services, problem) : backToApp(services, problem));
    if (params.get('state') !== flow.state) {
      await failCallback(services, client);
      return back('failed');
    }
    const error = params.get('error');
    if (error !== undefined) return back(error === 'access_denied' ? 'denied' : 'failed');
    if (flow.link) return await finishLinking(services, req, flow, provider);
    // The URL the provider was given as redirect_uri, with the answer's query: what the token request names.
    const callbackUrl = new URL(`${services.config.urls.baseUrl}${OIDC_CALLBACK_PATH}?${req.rawQuery}`);
    let identity: Awaited<ReturnType<OidcProvider['finish']>>;
    try {
      identity = await provider.finish(flow, callbackUrl);
    } catch (err) {
      services.logger.warn('an OpenID Connect sign-in was refused', { err: err instanceof Error ? err.message : String(err) });
      if (err instanceof OidcUnavailable) return backToApp(services, 'unavailable');
      await failCallback(services, client);
      return backToApp(services, 'failed');
    }
    const outcome = await signInWithIdentity(services, { issuer: settings.issuer, ...identity }, flow.invitation, client);
    if ('problem' in outcome) return backToApp(services, outcome.problem);
    return backToApp(services, undefined, sessionCookie(services.config, outcome.secret));
  } catch (err) {
    services.logger.error('an OpenID Connect callback failed', { err });
    return backToApp(services, 'failed');
  }
}
