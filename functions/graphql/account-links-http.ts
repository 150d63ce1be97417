/**
 * The routes one-time links lead to, and a password change, on the API
 * port beside the other /auth/ routes (routes.ts asks this file first):
 *
 *   POST /auth/invitations/view    {"token"}                      -> 200 {"ok", "invitation": {team, role, email, invitedBy, expiresAt}}
 *   POST /auth/invitations/accept  {"token"}  session + CSRF      -> 200 {"ok", "team", "role"}
 *   POST /auth/password-reset/request {"email"}                   -> 202 {"ok", "message"} (the same for every e-mail)
 *   POST /auth/password-reset      {"token", "password"}          -> 200 {"ok", "email", "ended"}
 *   POST /auth/password            {"currentPassword", "newPassword"}  session + CSRF  -> 200 {"ok", "ended"}
 *   POST /auth/first-owner         {"token", "email", "password"}  -> 201 signed in, as /auth/sign-up answers
 *
 * Signing up with an invitation is /auth/sign-up with `"invitation"`
 * (accounts-http.ts). Tokens travel in bodies, never in a path or query:
 * a path is in every access log on its way (API Gateway's, a proxy's).
 * A refusal is `{"ok": false, "error", "field"?}` as the other /auth/
 * routes answer: 400 bad input, 401 no session, 403 no CSRF token or
 * another e-mail's invitation, 404 a link that opens nothing, 409 a
 * member already, 410 a link used, revoked or expired, 429 with
 * Retry-After, 503 where no mail can be sent.
 */
import { changePassword, requestPasswordReset, resetPassword, RESET_ASKED } from '../core/auth/password-reset.js';
import { claimFirstOwner } from '../core/auth/first-owner.js';
import { acceptInvitation, INVITATION_PROBLEMS, viewInvitation } from '../core/auth/invitations.js';
import type { AuthServices } from '../core/auth/sign-in.js';
import { CSRF_HEADER, csrfTokenMatches } from '../core/auth/session-cookie.js';
import type { HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import { clientOf, currentSession, json, NO_SESSION, readJson, refusal, refuse, signedIn } from './accounts-http.js';

export type AccountLinkServices = AuthServices & Pick<Services, 'accountLinks'>;

const ROUTES = [
  '/auth/invitations/view',
  '/auth/invitations/accept',
  '/auth/password-reset/request',
  '/auth/password-reset',
  '/auth/password',
  '/auth/first-owner',
];

export const isAccountLinkPath = (rawPath: string): boolean => ROUTES.includes(rawPath.replace(/\/+$/, ''));

const locked = (message: string, retryAfter: number) => refuse(429, message, {}, { 'retry-after': String(retryAfter) });

export async function handleAccountLinks(services: AccountLinkServices, req: HttpRequest): Promise<Response> {
  const path = req.rawPath.replace(/\/+$/, '');
  if (req.method.toUpperCase() !== 'POST') {
    await req.body?.cancel().catch(() => {});
    return refuse(405, `${path} takes POST only`, {}, { allow: 'POST' });
  }
  try {
    const body = await readJson(req);
    if (body instanceof Response) return body;
    const client = clientOf(req);
    switch (path) {
      case '/auth/invitations/view': {
        const outcome = await viewInvitation(services, body.token);
        if (outcome.kind === 'refused')
          return refuse(INVITATION_PROBLEMS[outcome.problem].status, INVITATION_PROBLEMS[outcome.problem].message);
        return json(200, { ok: true, invitation: outcome.view });
      }
      case '/auth/password-reset/request': {
        const outcome = await requestPasswordReset(services, body, client);
        if (outcome.kind === 'asked') return json(202, { ok: true, message: RESET_ASKED });
        if (outcome.kind === 'no-mail') return refuse(503, outcome.message);
        if (outcome.kind === 'locked') return locked(outcome.message, outcome.retryAfter);
        return refuse(400, outcome.message, { field: outcome.field });
      }
      case '/auth/password-reset': {
        const outcome = await resetPassword(services, body);
        if (outcome.kind === 'done') return json(200, { ok: true, email: outcome.email, ended: outcome.ended });
        if (outcome.kind === 'gone') return refuse(410, outcome.message);
        return refuse(400, outcome.message, { field: outcome.field });
      }
      case '/auth/first-owner': {
        const outcome = await claimFirstOwner(services, body, client);
        if (outcome.kind === 'signed-in') return signedIn(services, outcome, 201);
        if (outcome.kind === 'gone') return refuse(410, outcome.message);
        return refusal(outcome);
      }
    }
    // The rest act for the session: its own request, with its CSRF token.
    const current = await currentSession(services, req);
    if (!current) return refuse(401, NO_SESSION);
    if (!csrfTokenMatches(current.secret, req.headers.get(CSRF_HEADER)))
      return refuse(403, `the ${CSRF_HEADER} header must carry this session's CSRF token`);
    if (path === '/auth/invitations/accept') {
      const outcome = await acceptInvitation(services, body.token, current.session.accountId);
      if (outcome.kind === 'refused')
        return refuse(INVITATION_PROBLEMS[outcome.problem].status, INVITATION_PROBLEMS[outcome.problem].message);
      return json(200, { ok: true, team: outcome.team, role: outcome.member.role });
    }
    const outcome = await changePassword(services, current.session, body, client);
    if (outcome.kind === 'done') return json(200, { ok: true, ended: outcome.ended });
    if (outcome.kind === 'locked') return locked(outcome.message, outcome.retryAfter);
    return refuse(400, outcome.message, { field: outcome.field });
  } catch (err) {
    services.logger.error('an /auth/ request failed', { path, err });
    return refuse(500, 'internal error');
  }
}
