/**
 * Recovery codes (core/auth/recovery-codes.ts has the rules), on the API
 * port beside the other /auth/ routes (routes.ts asks this file first):
 *
 *   GET  /auth/recovery-codes                         session          -> 200 {"ok", "remaining", "createdAt"}
 *   POST /auth/recovery-codes {}                      session + CSRF   -> 201 {"ok", "codes": [10 codes], "remaining", "createdAt"}
 *   POST /auth/recovery-codes/sign-in {"challenge", "code"}            -> 200 signed in, as /auth/sign-in answers
 *
 * Making codes replaces every code the account had; the codes are in that
 * answer only (the service keeps their digests). The sign-in takes the
 * challenge of the second step's options (/auth/sign-in's 401 with
 * `"secondFactor": "passkey"`) with one code, in place of the passkey's
 * answer. Refusals as the other /auth/ routes: 400 bad input, 401 no
 * session, or a code or challenge that did not sign in, 403 no CSRF token,
 * 429 with Retry-After.
 */
import { makeRecoveryCodes, recoveryCodeSignIn } from '../core/auth/recovery-codes.js';
import type { AuthServices } from '../core/auth/sign-in.js';
import { CSRF_HEADER, csrfTokenMatches } from '../core/auth/session-cookie.js';
import type { HttpRequest } from '../core/http/types.js';
import { clientOf, currentSession, json, NO_SESSION, readJson, refusal, refuse, signedIn } from './accounts-http.js';

const BASE = '/auth/recovery-codes';
const SIGN_IN = '/auth/recovery-codes/sign-in';

export const isRecoveryCodePath = (rawPath: string): boolean => rawPath === BASE || rawPath.startsWith(`${BASE}/`);

export async function handleRecoveryCodes(services: AuthServices, req: HttpRequest): Promise<Response> {
  const path = req.rawPath.replace(/\/+$/, '');
  const method = req.method.toUpperCase();
  if (path !== BASE && path !== SIGN_IN) {
    await req.body?.cancel().catch(() => {});
    return refuse(404, `no such route: ${path}`);
  }
  const allowed = path === BASE ? ['GET', 'POST'] : ['POST'];
  if (!allowed.includes(method)) {
    await req.body?.cancel().catch(() => {});
    return refuse(405, `${path} takes ${allowed.join(' and ')} only`, {}, { allow: allowed.join(', ') });
  }
  try {
    const body = method === 'POST' ? await readJson(req) : {};
    if (body instanceof Response) return body;
    if (path === SIGN_IN) {
      const outcome = await recoveryCodeSignIn(services, body, clientOf(req));
      return outcome.kind === 'signed-in' ? signedIn(services, outcome, 200) : refusal(outcome);
    }
    const current = await currentSession(services, req);
    if (!current) return refuse(401, NO_SESSION);
    const { accountId } = current.session;
    if (method === 'GET') return json(200, { ok: true, ...(await services.recoveryCodes.status(accountId)) });
    if (!csrfTokenMatches(current.secret, req.headers.get(CSRF_HEADER)))
      return refuse(403, `the ${CSRF_HEADER} header must carry this session's CSRF token`);
    const made = await makeRecoveryCodes(services, accountId);
    return json(201, { ok: true, codes: made.codes, remaining: made.codes.length, createdAt: made.createdAt });
  } catch (err) {
    services.logger.error('an /auth/ request failed', { path, err });
    return refuse(500, 'internal error');
  }
}
