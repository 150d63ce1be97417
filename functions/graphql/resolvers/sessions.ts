/**
 * A person's web app sessions: the list (the one in use marked) and
 * signing one out. Signing in and out of the session in use, and out of
 * all of them, is POST /auth/... (accounts-http.ts), which sets and clears
 * the cookie. These work for the account the caller acts for, with a
 * session or with one of its API keys alike.
 */
import { SESSION_LIMITS, type Session } from '../../core/data/sessions.js';
import { callerOf, type GraphqlContext } from '../context.js';

export const sessionResolvers = {
  Query: {
    getSessions: async (_: unknown, __: unknown, ctx: GraphqlContext) => ctx.services.sessions.list(callerOf(ctx).accountId),
  },
  Mutation: {
    revokeSession: async (_: unknown, args: { sessionId: string }, ctx: GraphqlContext) =>
      ctx.services.sessions.end(callerOf(ctx).accountId, args.sessionId),
  },
  Session: {
    expiresAt: (session: Session) => new Date(Date.parse(session.createdAt) + SESSION_LIMITS.absoluteSeconds * 1000).toISOString(),
    current: (session: Session, _: unknown, ctx: GraphqlContext) => session.id === ctx.caller?.sessionId,
  },
};
