/**
 * Passkeys (core/auth/passkeys.ts has the rules), on the API port beside
 * the other /auth/ routes (routes.ts asks this file first):
 *
 *   GET  /auth/passkeys                           session          -> 200 {"ok", "passkeys": [{id, name, transports, createdAt, lastUsedAt}], "required"}
 *   POST /auth/passkeys/registration/options {}   session + CSRF   -> 200 {"ok", "options"}  (for navigator.credentials.create)
 *   POST /auth/passkeys/registration {"response", "name"?}  session + CSRF -> 201 {"ok", "passkey"}
 *   POST /auth/passkeys/remove {"id"}             session + CSRF   -> 200 {"ok"}
 *   POST /auth/passkeys/rename {"id", "name"}     session + CSRF   -> 200 {"ok", "passkey"}
 *   POST /auth/passkeys/required {"required"}     session + CSRF   -> 200 {"ok", "required", "recoveryCodes"?}
 *        (turned on for an account with no recovery code left, ten new ones, shown once)
 *   POST /auth/passkeys/sign-in/options {}                         -> 200 {"ok", "options"}  (for navigator.credentials.get)
 *   POST /auth/passkeys/sign-in {"response"}                       -> 200 signed in, as /auth/sign-in answers
 *
 * The sign-in takes the answer to either challenge: the usernameless one
 * from sign-in/options, or the second factor's that /auth/sign-in handed
 * out for a right password (its 401 with `"secondFactor": "passkey"`).
 *
 * Like the password's section, these act on the session alone (with its
 * CSRF token for every change): changing the password asks for the
 * current one because that is what is being replaced; adding or removing
 * a passkey, like ending a session or making a key, does not.
 *
 * In AWS these reach the GraphQL function as every /auth/ route does:
 * the HTTP API's `ANY /auth/{proxy+}` route, a greedy path variable that
 * catches every path under /auth/ with every method, the GET included
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-routes.html,
 * "Working with path variables"). The relying party is the stack's API
 * address (its CAIRN_BASE_URL: the custom domain, or the execute-api
 * host), a domain name, so passkeys work there as they are.
 *
 * A refusal is `{"ok": false, "error", "field"?}` as the other /auth/
 * routes answer: 400 bad input (a stale or replayed challenge names the
 * `response` field), 401 no session, or a passkey that did not sign in,
 * 403 no CSRF token, 404 no such passkey, or none offered here (the base
 * URL is an IP address), 409 a passkey registered already, the last one
 * while one is required, or none to require, 429 with Retry-After.
 */
import {
  passkeySignIn,
  passkeyView,
  registerPasskey,
  registrationOptions,
  renamePasskey,
  signInOptions,
  type PasskeyRefusal,
} from '../core/auth/passkeys.js';
import { makeRecoveryCodes } from '../core/auth/recovery-codes.js';
import type { AuthServices } from '../core/auth/sign-in.js';
import { CSRF_HEADER, csrfTokenMatches } from '../core/auth/session-cookie.js';
import { PasskeyConflictError } from '../core/data/passkeys.js';
import type { HttpRequest } from '../core/http/types.js';
import { clientOf, currentSession, json, NO_SESSION, readJson, refusal, refuse, signedIn } from './accounts-http.js';

const ROUTES: Record<string, 'GET' | 'POST'> = {
  '/auth/passkeys': 'GET',
  '/auth/passkeys/registration/options': 'POST',
  '/auth/passkeys/registration': 'POST',
  '/auth/passkeys/remove': 'POST',
  '/auth/passkeys/rename': 'POST',
  '/auth/passkeys/required': 'POST',
  '/auth/passkeys/sign-in/options': 'POST',
  '/auth/passkeys/sign-in': 'POST',
};

export const isPasskeyPath = (rawPath: string): boolean => rawPath === '/auth/passkeys' || rawPath.startsWith('/auth/passkeys/');

function passkeyRefusal(outcome: PasskeyRefusal): Response {
  if (outcome.kind === 'unavailable') return refuse(404, outcome.message);
  if (outcome.kind === 'conflict') return refuse(409, outcome.message);
  return refusal(outcome);
}

export async function handlePasskeys(services: AuthServices, req: HttpRequest): Promise<Response> {
  const path = req.rawPath.replace(/\/+$/, '');
  const route = ROUTES[path];
  if (!route) {
    await req.body?.cancel().catch(() => {});
    return refuse(404, `no such route: ${path}`);
  }
  if (req.method.toUpperCase() !== route) {
    await req.body?.cancel().catch(() => {});
    return refuse(405, `${path} takes ${route} only`, {}, { allow: route });
  }
  try {
    const body = route === 'POST' ? await readJson(req) : {};
    if (body instanceof Response) return body;
    const client = clientOf(req);
    if (path === '/auth/passkeys/sign-in/options') {
      const outcome = await signInOptions(services, client);
      return outcome.kind === 'options' ? json(200, { ok: true, options: outcome.options }) : passkeyRefusal(outcome);
    }
    if (path === '/auth/passkeys/sign-in') {
      const outcome = await passkeySignIn(services, body, client);
      return outcome.kind === 'signed-in' ? signedIn(services, outcome, 200) : passkeyRefusal(outcome);
    }
    // The rest act for the session: its own request, with its CSRF token for a change.
    const current = await currentSession(services, req);
    if (!current) return refuse(401, NO_SESSION);
    const { accountId } = current.session;
    if (path === '/auth/passkeys') {
      const [passkeys, settings] = await Promise.all([services.passkeys.list(accountId), services.passkeys.settings(accountId)]);
      return json(200, { ok: true, passkeys: passkeys.map(passkeyView), required: settings.required });
    }
    if (!csrfTokenMatches(current.secret, req.headers.get(CSRF_HEADER)))
      return refuse(403, `the ${CSRF_HEADER} header must carry this session's CSRF token`);
    if (path === '/auth/passkeys/registration/options') {
      const outcome = await registrationOptions(services, current.session);
      return outcome.kind === 'options' ? json(200, { ok: true, options: outcome.options }) : passkeyRefusal(outcome);
    }
    if (path === '/auth/passkeys/registration') {
      const outcome = await registerPasskey(services, current.session, body);
      return outcome.kind === 'registered' ? json(201, { ok: true, passkey: passkeyView(outcome.passkey) }) : passkeyRefusal(outcome);
    }
    if (path === '/auth/passkeys/rename') {
      const outcome = await renamePasskey(services, current.session, body);
      if (outcome.kind === 'renamed') return json(200, { ok: true, passkey: passkeyView(outcome.passkey) });
      return outcome.kind === 'not-found' ? refuse(404, 'You have no such passkey') : passkeyRefusal(outcome);
    }
    try {
      if (path === '/auth/passkeys/remove') {
        if (typeof body.id !== 'string' || body.id === '') return refuse(400, 'id (the passkey to remove) is required', { field: 'id' });
        if (!(await services.passkeys.remove(accountId, body.id))) return refuse(404, 'You have no such passkey');
        return json(200, { ok: true });
      }
      if (typeof body.required !== 'boolean') return refuse(400, 'required must be true or false', { field: 'required' });
      await services.passkeys.setRequired(accountId, body.required);
      // Turned on without a recovery code left: ten are made, so that a lost passkey never locks its person out (shown here once).
      if (body.required && (await services.recoveryCodes.status(accountId)).remaining === 0) {
        const { codes } = await makeRecoveryCodes(services, accountId);
        return json(200, { ok: true, required: true, recoveryCodes: codes });
      }
      return json(200, { ok: true, required: body.required });
    } catch (err) {
      if (err instanceof PasskeyConflictError) return refuse(409, err.message);
      throw err;
    }
  } catch (err) {
    services.logger.error('an /auth/ request failed', { path, err });
    return refuse(500, 'internal error');
  }
}
