/**
 * Deploys: the site's listing, newest first. triggerDeploy, retryDeploy and
 * purgeCache arrive with the deploy pipeline and the CDN; until then they
 * check the caller's access like every operation, then say NOT_IMPLEMENTED.
 */
import type { Deploy } from '../../core/data/deploys.js';
import type { GraphqlContext } from '../context.js';
import { graphqlError } from '../errors.js';
import { pageSize } from '../pagination.js';
import { ownSite, requireSite } from './access.js';

const notYet = (what: string) => graphqlError('NOT_IMPLEMENTED', `${what} arrives with the deploy pipeline; it is not available yet`);

export const deployResolvers = {
  Query: {
    getDeploysBySite: async (_: unknown, args: { siteId: string; limit?: number | null; nextToken?: string | null }, ctx: GraphqlContext) => {
      const limit = pageSize(args.limit);
      const tokens = await ctx.loaders.pageTokens();
      const listing = { query: 'getDeploysBySite', args: { siteId: args.siteId } };
      const after = tokens.read(listing, args.nextToken);
      // The site and the page are read side by side (one round trip, not two);
      // the page is thrown away unread when the site is not the caller's.
      const [site, page] = await Promise.all([ctx.services.sites.getById(args.siteId), ctx.services.deploys.listBySite(args.siteId, limit, after)]);
      if (!ownSite(ctx, site)) return null;
      const last = page.items[page.items.length - 1];
      return { deploys: page.items, nextToken: page.more && last ? tokens.issue(listing, last.id) : null };
    },
  },
  Mutation: {
    triggerDeploy: async (_: unknown, args: { siteId: string }, ctx: GraphqlContext) => {
      await requireSite(ctx, args.siteId);
      throw notYet('triggerDeploy');
    },
    retryDeploy: async (_: unknown, args: { siteId: string; deployId: string }, ctx: GraphqlContext) => {
      await requireSite(ctx, args.siteId);
      throw notYet('retryDeploy');
    },
    purgeCache: async (_: unknown, args: { input: { siteId: string } }, ctx: GraphqlContext) => {
      await requireSite(ctx, args.input.siteId);
      throw notYet('purgeCache');
    },
  },
  Deploy: {
    repository: (deploy: Deploy) => deploy.repository ?? {},
    published: (deploy: Deploy) => deploy.published === true,
    autoPublish: (deploy: Deploy) => deploy.autoPublish === true,
  },
};
