/**
 * The command line's browser login on the API port (RFC 8628, the Device
 * Authorization Grant; both doors route `/auth/device` here, routes.ts):
 *
 *   POST /auth/device/code     client_id=cairn-cli&machine=<name>   -> 200 RFC 8628 §3.2: device_code, user_code,
 *                                                                     verification_uri(_complete), expires_in, interval
 *   POST /auth/device/token    grant_type=urn:ietf:params:oauth:grant-type:device_code&device_code=...&client_id=cairn-cli
 *                                                                  -> 200 the credentials, once; else 400 {"error": ...}
 *   GET  /auth/device?user_code=WDJB-MJHT   (session + CSRF)       -> 200 what the approval page shows
 *   POST /auth/device/approve  {"user_code", "teamId"?} (session + CSRF) -> 200 {"ok": true, ...}
 *   POST /auth/device/deny     {"user_code"}            (session + CSRF) -> 200 {"ok": true, ...}
 *
 * The first two are the command line's, in OAuth's own shape: form-encoded
 * (RFC 8628 §3.1, §3.4; JSON is taken too), errors as `{"error",
 * "error_description"}` with RFC 8628 §3.5's and RFC 6749 §5.2's codes.
 * The token endpoint's success adds to RFC 6749's `access_token` (the API
 * key) what the command line keeps: the storage key pair and the
 * service's endpoints, so that it needs nothing but the API's address.
 *
 * The last three are the web app's approval page's, in the shape of the
 * other /auth/ routes (`{"ok": false, "error": "<sentence>", "field"?}`):
 * they need the session cookie and its CSRF token (the GET as well, since
 * a wrong code counts against the account), and the POSTs a JSON body
 * (accounts-http.ts says why). Looking a code up, with or without
 * deciding, counts a wrong code against the account and the address
 * (core/auth/device-login.ts).
 */
import { CSRF_HEADER, csrfTokenMatches, sessionSecretFrom } from '../core/auth/session-cookie.js';
import {
  checkMachineName,
  DEVICE_CLIENT_ID,
  deviceGrants,
  issueCredentials,
  lookUpUserCode,
  verificationUri,
  type DeviceLoginServices,
} from '../core/auth/device-login.js';
import { DEVICE_LIMITS, formatUserCode, type DeviceGrant } from '../core/data/device-grants.js';
import type { Session } from '../core/data/sessions.js';
import { queryParams, type HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import { readBodyFields } from './http-body.js';

export type DeviceServices = DeviceLoginServices & Pick<Services, 'sessions' | 'people'>;

/** The largest body these routes read: a device code, a machine's name or a user code fit many times over. */
const MAX_BODY_BYTES = 16 * 1024;
const DEVICE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';

export const isDevicePath = (rawPath: string): boolean => rawPath === '/auth/device' || rawPath.startsWith('/auth/device/');

function json(status: number, body: Record<string, unknown>, headers: HeadersInit = {}): Response {
  const out = new Headers(headers);
  out.set('content-type', 'application/json; charset=utf-8');
  // RFC 6749 §5.1: answers that carry credentials must not be cached; none of these should be.
  out.set('cache-control', 'no-store');
  out.set('pragma', 'no-cache');
  return new Response(JSON.stringify(body), { status, headers: out });
}

/** An OAuth error (RFC 6749 §5.2, RFC 8628 §3.5). */
const oauthError = (status: number, error: string, description: string, extra: Record<string, unknown> = {}, headers: HeadersInit = {}) =>
  json(status, { error, error_description: description, ...extra }, headers);

/** The approval page's refusal, as the other /auth/ routes answer. */
const refuse = (status: number, error: string, extra: Record<string, unknown> = {}, headers: HeadersInit = {}) =>
  json(status, { ok: false, error, ...extra }, headers);

/** The command line asks for a grant (RFC 8628 §3.1, §3.2). */
async function deviceCode(services: DeviceServices, req: HttpRequest): Promise<Response> {
  const body = await readBodyFields(req, 'form-or-json', MAX_BODY_BYTES);
  if ('problem' in body) return oauthError(400, 'invalid_request', body.problem, {}, body.headers);
  const { fields } = body;
  if (fields.client_id !== DEVICE_CLIENT_ID) return oauthError(401, 'invalid_client', `client_id must be ${DEVICE_CLIENT_ID}`);
  const name = checkMachineName(fields.machine);
  if ('problem' in name) return oauthError(400, 'invalid_request', name.problem);
  const store = deviceGrants(services);
  const address = req.remoteAddress ?? null;
  const startKeys = address ? [{ scope: 'start' as const, value: address }] : [];
  const wait = await store.retryAfter(startKeys);
  if (wait > 0)
    return oauthError(
      429,
      'slow_down',
      `too many logins started from this address: try again in ${wait} seconds`,
      {},
      { 'retry-after': String(wait) },
    );
  await store.count(startKeys);
  const { grant, deviceCode: code } = await store.start({
    clientId: DEVICE_CLIENT_ID,
    machine: name.machine,
    address,
    userAgent: req.headers.get('user-agent'),
  });
  return json(200, {
    device_code: code,
    user_code: formatUserCode(grant.userCode),
    verification_uri: verificationUri(services),
    verification_uri_complete: verificationUri(services, grant.userCode),
    expires_in: DEVICE_LIMITS.expiresSeconds,
    interval: grant.interval,
  });
}

/** The command line polls (RFC 8628 §3.4, §3.5). */
async function deviceToken(services: DeviceServices, req: HttpRequest): Promise<Response> {
  const body = await readBodyFields(req, 'form-or-json', MAX_BODY_BYTES);
  if ('problem' in body) return oauthError(400, 'invalid_request', body.problem, {}, body.headers);
  const { fields } = body;
  if (fields.grant_type !== DEVICE_GRANT_TYPE) return oauthError(400, 'unsupported_grant_type', `grant_type must be ${DEVICE_GRANT_TYPE}`);
  if (fields.client_id !== DEVICE_CLIENT_ID) return oauthError(401, 'invalid_client', `client_id must be ${DEVICE_CLIENT_ID}`);
  if (typeof fields.device_code !== 'string' || !fields.device_code) return oauthError(400, 'invalid_request', 'device_code is required');
  const outcome = await deviceGrants(services).poll(fields.device_code, DEVICE_CLIENT_ID);
  switch (outcome.kind) {
    case 'unknown':
      return oauthError(400, 'invalid_grant', 'this device code is not one this service issued');
    case 'issued':
      return oauthError(400, 'invalid_grant', 'this device code has been used already: run cairn login again');
    case 'expired':
      return oauthError(400, 'expired_token', 'the code expired before it was approved: run cairn login again');
    case 'slow-down':
      return oauthError(400, 'slow_down', `polling too fast: wait ${outcome.interval} seconds between requests`, {
        interval: outcome.interval,
      });
    case 'pending':
      return oauthError(400, 'authorization_pending', 'waiting for the code to be approved in the browser');
    case 'denied':
      return oauthError(400, 'access_denied', 'the login was denied in the browser');
  }
  const issued = await issueCredentials(services, outcome.grant);
  if (!issued) return oauthError(400, 'invalid_grant', 'the approved login can no longer be issued (used already, or the team changed)');
  const { urls, sites } = services.config;
  return json(200, {
    access_token: issued.apiKey,
    token_type: 'Bearer',
    api_key_id: issued.apiKeyId,
    team: issued.team,
    account: issued.account,
    access_key_id: issued.accessKeyId,
    secret_access_key: issued.secretAccessKey,
    endpoints: {
      api: urls.baseUrl,
      storage: urls.storageEndpoint,
      gateway: urls.gatewayUrl,
      storage_public_domain: urls.storagePublicDomain,
      sites_domain: sites.domain,
    },
  });
}

const NO_SESSION = 'Not signed in (no session, or it has ended): sign in, then open this page again';

async function currentSession(services: DeviceServices, req: HttpRequest): Promise<{ session: Session; secret: string } | undefined> {
  const secret = sessionSecretFrom(services.config, req.headers.get('cookie'));
  if (!secret) return undefined;
  const opened = await services.sessions.open(secret);
  return 'session' in opened ? { session: opened.session, secret } : undefined;
}

/** What the approval page shows of a grant: never its device code. */
async function grantView(services: DeviceServices, grant: DeviceGrant, session: Session) {
  const memberships = await services.teams.listByAccount(session.accountId);
  const account = await services.accounts.getAccount(session.accountId);
  const teams = await Promise.all(
    memberships.map(async (m) => ({ id: m.teamId, name: (await services.teams.get(m.teamId))?.name ?? m.teamId, role: m.role })),
  );
  return {
    userCode: formatUserCode(grant.userCode),
    machine: grant.machine,
    address: grant.address,
    userAgent: grant.userAgent,
    createdAt: grant.createdAt,
    expiresAt: new Date(grant.expiresAt * 1000).toISOString(),
    status: grant.status,
    // A login started elsewhere than where it is approved is how a remote phishing attempt looks (RFC 8628 §5.4).
    sameAddress: grant.address !== null && grant.address === session.address,
    teams: teams.sort((a, b) => a.name.localeCompare(b.name)),
    defaultTeamId: account?.defaultTeamId ?? null,
  };
}

async function approval(services: DeviceServices, req: HttpRequest, path: string, method: string): Promise<Response> {
  const current = await currentSession(services, req);
  if (!current) {
    await req.body?.cancel().catch(() => {});
    return refuse(401, NO_SESSION);
  }
  // The GET too: a wrong code counts against the account, and another site could send the browser to this
  // address (a top-level navigation carries the SameSite=Lax cookie) until the account is locked out.
  if (!csrfTokenMatches(current.secret, req.headers.get(CSRF_HEADER))) {
    await req.body?.cancel().catch(() => {});
    return refuse(403, `the ${CSRF_HEADER} header must carry this session's CSRF token`);
  }
  let typed: unknown;
  let fields: Record<string, unknown> = {};
  if (method === 'GET') typed = queryParams(req.rawQuery).get('user_code');
  else {
    const body = await readBodyFields(req, 'json', MAX_BODY_BYTES);
    if ('problem' in body) return refuse(body.status, body.problem, {}, body.headers);
    fields = body.fields;
    typed = fields.user_code;
  }
  const address = req.remoteAddress ?? null;
  const found = await lookUpUserCode(services, typed, { accountId: current.session.accountId, address });
  if ('refused' in found) {
    if (found.refused === 'locked')
      return refuse(
        429,
        `Too many wrong codes: try again in ${Math.ceil(found.retryAfter / 60)} minutes`,
        {},
        { 'retry-after': String(found.retryAfter) },
      );
    return found.refused === 'malformed'
      ? refuse(400, 'A code is 8 letters, like WDJB-MJHT', { field: 'user_code' })
      : refuse(404, 'No login waits with this code: it is mistyped, expired, or used. Run cairn login again for a new one', {
          field: 'user_code',
        });
  }
  const { grant } = found;
  if (method === 'GET') return json(200, { ok: true, ...(await grantView(services, grant, current.session)) });

  const accountId = current.session.accountId;
  let teamId: string | undefined;
  if (path === '/auth/device/approve') {
    const account = await services.accounts.getAccount(accountId);
    if (!account) return refuse(401, NO_SESSION);
    teamId = fields.teamId === undefined || fields.teamId === null ? account.defaultTeamId : String(fields.teamId);
    if (!(await services.teams.getMember(teamId, accountId)))
      return refuse(403, 'You are not a member of that team: pick one of yours', { field: 'teamId' });
  }
  const decision = path === '/auth/device/approve' ? 'approved' : 'denied';
  if (!(await deviceGrants(services).decide(grant, decision, { accountId, teamId })))
    return refuse(409, `This login was ${grant.status === 'pending' ? 'decided a moment ago' : grant.status} already`, {
      status: grant.status,
    });
  services.logger.info(`device login ${decision}`, { accountId, teamId, machine: grant.machine });
  return json(200, { ok: true, status: decision, machine: grant.machine, teamId: teamId ?? null });
}

const ROUTES: Record<string, string> = {
  '/auth/device/code': 'POST',
  '/auth/device/token': 'POST',
  '/auth/device': 'GET',
  '/auth/device/approve': 'POST',
  '/auth/device/deny': 'POST',
};

/** Answers a request under /auth/device. */
export async function handleDevice(services: DeviceServices, req: HttpRequest): Promise<Response> {
  const path = req.rawPath.replace(/\/+$/, '');
  const method = req.method.toUpperCase();
  const route = ROUTES[path];
  if (!route) {
    await req.body?.cancel().catch(() => {});
    return refuse(404, 'no such route: /auth/device has code, token, approve and deny, and GET /auth/device?user_code=');
  }
  if (method !== route) {
    await req.body?.cancel().catch(() => {});
    return refuse(405, `${path} takes ${route} only`, {}, { allow: route });
  }
  try {
    if (path === '/auth/device/code') return await deviceCode(services, req);
    if (path === '/auth/device/token') return await deviceToken(services, req);
    return await approval(services, req, path, method);
  } catch (err) {
    services.logger.error('an /auth/device request failed', { path, err });
    return path.endsWith('/code') || path.endsWith('/token')
      ? oauthError(500, 'server_error', 'internal error')
      : refuse(500, 'internal error');
  }
}
