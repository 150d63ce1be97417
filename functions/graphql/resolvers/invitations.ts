/**
 * Invitations by e-mail: owners invite, list and revoke; the invitee's side
 * is the /auth/ routes (account-links-http.ts). The rules are in
 * core/auth/invitations.ts.
 */
import { inviteByEmail } from '../../core/auth/invitations.js';
import type { Invitation } from '../../core/data/invitations.js';
import type { TeamRole } from '../../core/data/teams.js';
import { callerOf, type GraphqlContext } from '../context.js';
import { badInput, graphqlError, notFound } from '../errors.js';
import { isOwnTeam, requireTeamRole } from './access.js';

/** What the API shows of an invitation: never its digest. */
const view = ({ id, teamId, email, role, invitedBy, createdAt, expiresAt }: Invitation) => ({
  id,
  teamId,
  email,
  role,
  invitedBy,
  createdAt,
  expiresAt,
});

export const invitationResolvers = {
  Query: {
    getInvitations: async (_: unknown, args: { teamId: string }, ctx: GraphqlContext) => {
      if (!isOwnTeam(ctx, args.teamId)) return null;
      await requireTeamRole(ctx, args.teamId, 'OWNER', "see the team's invitations");
      return (await ctx.services.invitations.listPending(args.teamId)).map(view);
    },
  },
  Mutation: {
    inviteTeamMember: async (_: unknown, args: { teamId: string; email: string; role?: TeamRole | null }, ctx: GraphqlContext) => {
      await requireTeamRole(ctx, args.teamId, 'OWNER', 'invite members');
      const caller = callerOf(ctx);
      const account = await ctx.loaders.account(caller.accountId);
      const outcome = await inviteByEmail(ctx.services, {
        teamId: args.teamId,
        email: args.email,
        role: args.role ?? 'MEMBER',
        invitedBy: { accountId: caller.accountId, name: account?.name },
      });
      if (outcome.kind === 'invalid') throw badInput(outcome.message, outcome.field);
      if (outcome.kind === 'limited') throw graphqlError('FORBIDDEN', outcome.message, { retryAfter: outcome.retryAfter });
      return {
        invitation: view(outcome.invitation),
        mailSent: outcome.mail.sent,
        link: outcome.link ?? null,
        mailError: outcome.mail.sent ? null : outcome.mail.reason,
      };
    },
    revokeInvitation: async (_: unknown, args: { teamId: string; invitationId: string }, ctx: GraphqlContext) => {
      await requireTeamRole(ctx, args.teamId, 'OWNER', 'revoke invitations');
      const outcome = await ctx.services.invitations.revoke(args.teamId, args.invitationId);
      if ('invitation' in outcome) return view(outcome.invitation);
      if (outcome.refused === 'unknown') throw notFound('invitation');
      throw badInput(`the invitation is ${outcome.refused} already: only a pending one can be revoked`, 'invitationId');
    },
  },
};
