/** Teams and their members. Owners manage the team; any member reads it. */
import { TeamLimitError, type TeamMember, type TeamRole } from '../../core/data/teams.js';
import { callerOf, type GraphqlContext } from '../context.js';
import { badInput, graphqlError, notFound } from '../errors.js';
import { isOwnTeam, requireTeamRole, userConflicts } from './access.js';

const TEAM_NAME_MAX = 100;

function teamName(value: string): string {
  const name = value.trim();

  if (name === '' || name.length > TEAM_NAME_MAX || /[\u0000-\u001f\u007f]/.test(name)) {
    throw badInput(`name must be 1 to ${TEAM_NAME_MAX} characters, without control characters`, 'name');
  }
  return name;
}

export const teamResolvers = {
  Query: {
    getCurrentTeam: async (_: unknown, __: unknown, ctx: GraphqlContext) => {
      const team = await ctx.loaders.team(callerOf(ctx).teamId);
      if (!team) throw graphqlError('INTERNAL_SERVER_ERROR', "the API key's team is missing");
      return team;
    },
    getCurrentMember: async (_: unknown, __: unknown, ctx: GraphqlContext) => {
      const caller = callerOf(ctx);
      const member = await ctx.loaders.member(caller.teamId, caller.accountId);
      // A key outlives no membership (removing a member revokes their keys), so a key without one is refused as revoked.
      if (!member) throw graphqlError('UNAUTHENTICATED', 'The API key is not valid (its account is no longer a member of the team)');
      return member;
    },
    getMembersByTeam: async (_: unknown, args: { teamId: string }, ctx: GraphqlContext) =>
      isOwnTeam(ctx, args.teamId) ? ctx.services.teams.listMembers(args.teamId) : null,
  },
  Mutation: {
    createTeam: async (_: unknown, args: { name: string }, ctx: GraphqlContext) => {
      const name = teamName(args.name);
      const caller = callerOf(ctx);
      const account = await ctx.loaders.account(caller.accountId);
      let created: Awaited<ReturnType<typeof ctx.services.teams.create>>;
      try {
        created = await ctx.services.teams.create(
          name,
          { accountId: caller.accountId, accountName: account?.name },
          ctx.services.config.teamsPerAccount,
        );
      } catch (err) {
        if (err instanceof TeamLimitError) throw badInput(`${err.message}; this account has made as many as it may`, 'name');
        throw err;
      }
      return { team: created.team, apiKey: { apiKey: created.apiKey, key: created.key } };
    },
    updateTeam: async (_: unknown, args: { teamId: string; name: string }, ctx: GraphqlContext) => {
      await requireTeamRole(ctx, args.teamId, 'OWNER', 'rename the team');
      const team = await ctx.services.teams.rename(args.teamId, teamName(args.name));
      ctx.loaders.team.forget(args.teamId);
      if (!team) throw notFound('team');
      return team;
    },
    addTeamMember: async (_: unknown, args: { teamId: string; accountName: string; role?: TeamRole | null }, ctx: GraphqlContext) => {
      await requireTeamRole(ctx, args.teamId, 'OWNER', 'add members');
      const account = await ctx.services.accounts.getAccountByName(args.accountName);
      if (!account) throw notFound('account');
      const member = await userConflicts(() => ctx.services.teams.addMember(args.teamId, account, args.role ?? 'MEMBER'), 'accountName');
      ctx.loaders.forgetMember(args.teamId, account.id);
      if (!member) throw notFound('team');
      return member;
    },
    updateTeamMember: async (_: unknown, args: { teamId: string; accountId: string; role: TeamRole }, ctx: GraphqlContext) => {
      await requireTeamRole(ctx, args.teamId, 'OWNER', "change members' roles");
      const member = await userConflicts(() => ctx.services.teams.setMemberRole(args.teamId, args.accountId, args.role), 'role');
      ctx.loaders.forgetMember(args.teamId, args.accountId);
      if (!member) throw notFound('member');
      return member;
    },
    removeTeamMember: async (_: unknown, args: { teamId: string; accountId: string }, ctx: GraphqlContext) => {
      const leaving = args.accountId === callerOf(ctx).accountId;
      await requireTeamRole(ctx, args.teamId, leaving ? 'ANY' : 'OWNER', 'remove other members');
      const removed = await userConflicts(() => ctx.services.teams.removeMember(args.teamId, args.accountId), 'accountId');
      ctx.loaders.forgetMember(args.teamId, args.accountId);
      if (!removed) throw notFound('member');
      return true;
    },
  },
  TeamMember: {
    accountName: async (member: TeamMember, _: unknown, ctx: GraphqlContext) =>
      member.accountName ?? (await ctx.loaders.account(member.accountId))?.name ?? member.accountId,
  },
};
