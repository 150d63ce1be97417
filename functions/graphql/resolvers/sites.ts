/** Sites: the two lookups, the team's listing, create/update/delete, and the Site type's relations. */
import type { Deploy } from '../../core/data/deploys.js';
import { siteCursor, type DeploySettings, type EnvironmentVariable, type Site, type SiteSource } from '../../core/data/sites.js';
import { callerOf, type GraphqlContext } from '../context.js';
import { graphqlError, notFound } from '../errors.js';
import { pageSize } from '../pagination.js';
import { newSite, updatedSite, type SiteInput } from '../site-input.js';
import { isOwnTeam, ownSite, userConflicts } from './access.js';
import { syncSiteHosts } from '../../core/hosting/site-host-map.js';
import { purgeDeletedSite } from '../../core/hosting/deploys.js';
import { deleteSiteDomains } from '../../core/hosting/domains.js';

interface PageArgs {
  limit?: number | null;
  nextToken?: string | null;
}

/** The caller's team's site, or null; kept for the request's deploy fields (Loaders.knownSites). */
function known(ctx: GraphqlContext, site: Site | undefined): Site | null {
  const own = ownSite(ctx, site);
  ctx.loaders.knownSites([own]);
  return own;
}

/** The site's deploy named by one of its pointers, or null. */
function deployOf(ctx: GraphqlContext, siteId: string, deployId: string | null | undefined): Deploy | null | Promise<Deploy | null> {
  if (!deployId) return null;
  const deploy = ctx.loaders.deployNow(siteId, deployId);
  return deploy instanceof Promise ? deploy.then((d) => d ?? null) : (deploy ?? null);
}

export const siteResolvers = {
  Query: {
    getSiteById: async (_: unknown, args: { siteId: string }, ctx: GraphqlContext) =>
      known(ctx, await ctx.services.sites.getRecent(args.siteId)),
    getSiteBySlug: async (_: unknown, args: { slug: string }, ctx: GraphqlContext) =>
      known(ctx, await ctx.services.sites.getRecentBySlug(args.slug)),
    getSitesByTeam: async (_: unknown, args: { teamId: string } & PageArgs, ctx: GraphqlContext) => {
      const limit = pageSize(args.limit);
      if (!isOwnTeam(ctx, args.teamId)) return null;
      const tokens = await ctx.loaders.pageTokens();
      const listing = { query: 'getSitesByTeam', args: { teamId: args.teamId } };
      const after = tokens.read(listing, args.nextToken);
      const page = await ctx.services.sites.listRecentByTeam(args.teamId, limit, after);
      ctx.loaders.knownSites(page.items);
      const last = page.items[page.items.length - 1];
      return { sites: page.items, nextToken: page.more && last ? tokens.issue(listing, siteCursor(last)) : null };
    },
  },
  Mutation: {
    // Each change of a slug is told to the CDN's host map (syncSiteHosts never fails the mutation).
    createSite: async (_: unknown, args: { input: SiteInput }, ctx: GraphqlContext) => {
      const site = await userConflicts(() => ctx.services.sites.create(newSite(args.input, callerOf(ctx))), 'input.name');
      await syncSiteHosts(ctx.services, site.slug);
      return site;
    },
    updateSite: async (_: unknown, args: { siteId: string; input: SiteInput }, ctx: GraphqlContext) => {
      let before: string | undefined;
      const site = await userConflicts(
        () =>
          ctx.services.sites.update(args.siteId, callerOf(ctx).teamId, (current) => {
            before = current.slug;
            return updatedSite(current, args.input);
          }),
        'input.name',
      );
      if (!site) throw notFound('site');
      // Also when the slug stayed: asserting the entry again heals one lost or never written.
      await syncSiteHosts(ctx.services, before, site.slug);
      return site;
    },
    deleteSite: async (_: unknown, args: { siteId: string }, ctx: GraphqlContext) => {
      const site = await userConflicts(() => ctx.services.sites.delete(args.siteId, callerOf(ctx).teamId));
      if (!site) throw notFound('site');
      await syncSiteHosts(ctx.services, site.slug);
      await purgeDeletedSite(ctx.services, site);
      // The site and its slug went together; its deploys are unreachable now and go after.
      // Should that fail, the site is still deleted: say so, and leave the rest to the log.
      await ctx.services.deploys.deleteAllOfSite(site.id).catch((err: unknown) => {
        ctx.services.logger.error("deleting a deleted site's deploys failed", { err, siteId: site.id });
      });
      await ctx.services.siteSecrets.deleteAllOfSite(site.id).catch((err: unknown) => {
        ctx.services.logger.error("deleting a deleted site's secrets and build hooks failed", { err, siteId: site.id });
      });
      // Its domains go with their claims and certificates, so another site may take the names at once.
      await deleteSiteDomains(ctx.services, site.id).catch((err: unknown) => {
        ctx.services.logger.error("deleting a deleted site's domains failed", { err, siteId: site.id });
      });
      await ctx.services.notificationUrls.deleteAllOfSite(site.id).catch((err: unknown) => {
        ctx.services.logger.error("deleting a deleted site's notification URLs failed", { err, siteId: site.id });
      });
      // Its IPNS key and record: the name answers 404 from now on (the tick drops any left behind).
      await ctx.services.ipnsNames.deleteOfSite(site.id).catch((err: unknown) => {
        ctx.services.logger.error("deleting a deleted site's IPNS key and record failed", { err, siteId: site.id });
      });
      return true;
    },
  },
  Site: {
    team: async (site: Site, _: unknown, ctx: GraphqlContext) => {
      const team = await ctx.loaders.team(site.teamId);
      if (!team) throw graphqlError('INTERNAL_SERVER_ERROR', "the site's team is missing");
      return team;
    },
    updatedAt: (site: Site) => site.updatedAt ?? null,
    // Answered at once when the process remembers the deploy (Loaders.deployNow), else when it is read.
    publishedDeploy: (site: Site, _: unknown, ctx: GraphqlContext) => deployOf(ctx, site.id, site.publishedDeployId),
    latestDeploy: (site: Site, _: unknown, ctx: GraphqlContext) => deployOf(ctx, site.id, site.latestDeployId),
    // Public (the key it names stays sealed, and no field reads it); none before the first publish made the key.
    ipnsName: async (site: Site, _: unknown, ctx: GraphqlContext): Promise<string | null> =>
      (await ctx.services.ipnsNames.nameOfSite(site.id)) ?? null,
  },
  BuildSettings: {
    environmentVariables: (settings: Site['buildSettings']) => settings.environmentVariables ?? [],
  },
  // A secret's value is write-only: the record holds it sealed, and no query opens it.
  EnvironmentVariable: {
    value: (variable: EnvironmentVariable) => (variable.secret ? null : (variable.value ?? null)),
    secret: (variable: EnvironmentVariable) => variable.secret === true,
    scope: (variable: EnvironmentVariable) => variable.scope ?? 'ALL',
  },
  DeploySettings: {
    forkPullRequests: (settings: DeploySettings) => settings.forkPullRequests ?? 'NOT_BUILT',
  },
  SiteSource: {
    __resolveType: (source: SiteSource) => (source.kind === 'repository' ? 'Repository' : 'IpfsSource'),
  },
};
