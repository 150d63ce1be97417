/**
 * Resolvers. Every one works inside the caller's team: a site of another
 * team is indistinguishable from one that does not exist.
 */
import type { Deploy } from '../core/data/deploys.js';
import type { Site, SiteSource } from '../core/data/sites.js';
import type { Services } from '../core/services.js';
import { graphqlError } from './errors.js';
import { DateTime } from './scalars.js';

export interface GraphqlContext {
  services: Services;
  /** The team the API key belongs to. */
  teamId: string;
}

async function ownSite(ctx: GraphqlContext, site: Site | undefined): Promise<Site | null> {
  return site && site.teamId === ctx.teamId ? site : null;
}

const notYet = (what: string) => () => {
  throw graphqlError('NOT_IMPLEMENTED', `${what} is not available yet`);
};

export const resolvers = {
  DateTime,
  Query: {
    getSiteById: async (_: unknown, args: { siteId: string }, ctx: GraphqlContext) =>
      ownSite(ctx, await ctx.services.sites.getById(args.siteId)),
    getSiteBySlug: async (_: unknown, args: { slug: string }, ctx: GraphqlContext) =>
      ownSite(ctx, await ctx.services.sites.getBySlug(args.slug)),
    getDeploysBySite: notYet('getDeploysBySite'),
    getSitesByTeam: notYet('getSitesByTeam'),
  },
  Mutation: {
    triggerDeploy: notYet('triggerDeploy'),
    retryDeploy: notYet('retryDeploy'),
    purgeCache: notYet('purgeCache'),
  },
  Site: {
    team: async (site: Site, _: unknown, ctx: GraphqlContext) => {
      const team = await ctx.services.accounts.getTeam(site.teamId);
      if (!team) throw graphqlError('INTERNAL_SERVER_ERROR', 'the site\'s team is missing');
      return team;
    },
    publishedDeploy: async (site: Site, _: unknown, ctx: GraphqlContext): Promise<Deploy | null> =>
      site.publishedDeployId ? ((await ctx.services.deploys.get(site.id, site.publishedDeployId)) ?? null) : null,
    latestDeploy: async (site: Site, _: unknown, ctx: GraphqlContext): Promise<Deploy | null> =>
      site.latestDeployId ? ((await ctx.services.deploys.get(site.id, site.latestDeployId)) ?? null) : null,
  },
  BuildSettings: {
    environmentVariables: (settings: Site['buildSettings']) => settings.environmentVariables ?? [],
  },
  SiteSource: {
    __resolveType: (source: SiteSource) => (source.kind === 'repository' ? 'Repository' : 'IpfsSource'),
  },
};
