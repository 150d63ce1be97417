/**
 * Hosting API keys (a team's keys for this API) and storage key pairs (an
 * account's keys for the S3-compatible API). A key or secret is in the
 * result of its creation and nowhere else: the stores keep a hash of API
 * keys and a sealed copy of storage secrets, and no type exposes either.
 */
import { callerOf, type GraphqlContext } from '../context.js';
import { badInput, forbidden, notFound } from '../errors.js';
import { isOwnTeam, requireAccountMembership, requireTeamRole } from './access.js';

const KEY_NAME_MAX = 100;

export const keyResolvers = {
  Query: {
    getApiKeysByTeam: async (_: unknown, args: { teamId: string }, ctx: GraphqlContext) =>
      isOwnTeam(ctx, args.teamId) ? ctx.services.apiKeys.list(args.teamId) : null,
    getStorageKeyPairs: async (_: unknown, __: unknown, ctx: GraphqlContext) => ctx.services.storageKeys.list(callerOf(ctx).accountId),
  },
  Mutation: {
    createApiKey: async (_: unknown, args: { teamId: string; name?: string | null }, ctx: GraphqlContext) => {
      const name = args.name?.trim() || null;

      if (name && (name.length > KEY_NAME_MAX || /[\u0000-\u001f\u007f]/.test(name))) {
        throw badInput(`name must be at most ${KEY_NAME_MAX} characters, without control characters`, 'name');
      }
      await requireAccountMembership(ctx, args.teamId);
      return ctx.services.apiKeys.create(args.teamId, callerOf(ctx).accountId, name);
    },
    revokeApiKey: async (_: unknown, args: { teamId: string; apiKeyId: string }, ctx: GraphqlContext) => {
      const role = await requireTeamRole(ctx, args.teamId, 'ANY', 'revoke API keys');
      const key = await ctx.services.apiKeys.get(args.teamId, args.apiKeyId);
      if (!key) throw notFound('API key');
      if (role !== 'OWNER' && key.createdBy !== callerOf(ctx).accountId)
        throw forbidden("Only the team's owners can revoke other members' API keys");
      const revoked = await ctx.services.apiKeys.revoke(args.teamId, args.apiKeyId);
      if (!revoked) throw notFound('API key');
      return revoked;
    },
    createStorageKeyPair: async (_: unknown, __: unknown, ctx: GraphqlContext) => ctx.services.storageKeys.create(callerOf(ctx).accountId),
    revokeStorageKeyPair: async (_: unknown, args: { accessKeyId: string }, ctx: GraphqlContext) => {
      const pair = await ctx.services.storageKeys.revoke(callerOf(ctx).accountId, args.accessKeyId);
      if (!pair) throw notFound('storage key pair');
      return pair;
    },
  },
};
