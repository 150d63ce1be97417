/**
 * Deploys: the site's listing, newest first, one deploy, and what a team
 * does with them (trigger, deploy a CID, retry, cancel, publish:
 * core/hosting/deploys.ts),
 * and purgeCache, which empties the cache in front of the site's address.
 */
import type { Deploy } from '../../core/data/deploys.js';
import {
  cancelDeploy,
  deployCid,
  DeployNotFoundError,
  DeployRequestError,
  publishDeploy,
  purgeSite,
  retryDeploy,
  triggerDeploy,
} from '../../core/hosting/deploys.js';
import { siteAddresses } from '../../core/hosting/notifications.js';
import { deployLogKey } from '../../core/ports/log-store.js';
import type { GraphqlContext } from '../context.js';
import { badInput, notFound } from '../errors.js';
import { pageSize } from '../pagination.js';
import { ownSite, requireSite } from './access.js';

/** The hosting core's refusals in GraphQL's words. */
async function hosting<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof DeployRequestError) throw badInput(err.message, err.field);
    if (err instanceof DeployNotFoundError) throw notFound('deploy');
    throw err;
  }
}

export const deployResolvers = {
  Query: {
    getDeployById: async (_: unknown, args: { siteId: string; deployId: string }, ctx: GraphqlContext) => {
      const [site, deploy] = await Promise.all([ctx.loaders.site(args.siteId), ctx.services.deploys.get(args.siteId, args.deployId)]);
      return ownSite(ctx, site) ? (deploy ?? null) : null;
    },
    getDeploysBySite: async (
      _: unknown,
      args: { siteId: string; limit?: number | null; nextToken?: string | null },
      ctx: GraphqlContext,
    ) => {
      const limit = pageSize(args.limit);
      const tokens = await ctx.loaders.pageTokens();
      const listing = { query: 'getDeploysBySite', args: { siteId: args.siteId } };
      const after = tokens.read(listing, args.nextToken);
      // The site and the page are read side by side (one round trip, not two);
      // the page is thrown away unread when the site is not the caller's.
      const [site, page] = await Promise.all([
        ctx.services.sites.getRecent(args.siteId),
        ctx.services.deploys.listBySite(args.siteId, limit, after),
      ]);
      if (!ownSite(ctx, site)) return null;
      ctx.loaders.knownSites([site]);
      const last = page.items[page.items.length - 1];
      return { deploys: page.items, nextToken: page.more && last ? tokens.issue(listing, last.id) : null };
    },
  },
  Mutation: {
    triggerDeploy: async (_: unknown, args: { siteId: string; commit?: string | null }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'deploy it');
      return hosting(() => triggerDeploy(ctx.services, site, args.commit));
    },
    deployCid: async (_: unknown, args: { siteId: string; cid: string }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'deploy it');
      return hosting(() => deployCid(ctx.services, site, args.cid));
    },
    retryDeploy: async (_: unknown, args: { siteId: string; deployId: string }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'retry its deploys');
      return hosting(() => retryDeploy(ctx.services, site, args.deployId));
    },
    cancelDeploy: async (_: unknown, args: { siteId: string; deployId: string }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'cancel its deploys');
      return hosting(() => cancelDeploy(ctx.services, site, args.deployId));
    },
    publishDeploy: async (_: unknown, args: { siteId: string; deployId: string }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'publish its deploys');
      const deploy = await hosting(() => publishDeploy(ctx.services, site, args.deployId));
      ctx.loaders.forgetSite(site.id);
      return deploy;
    },
    purgeCache: async (_: unknown, args: { input: { siteId: string } }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.input.siteId, 'purge its cache');
      await purgeSite(ctx.services, site.id);
      return true;
    },
  },
  Deploy: {
    repository: (deploy: Deploy) => deploy.repository ?? {},
    // The site says which deploy is published: exactly one at a time, with no second record to keep in step.
    // At once when the request has read the site (Loaders.siteNow).
    published: (deploy: Deploy, _: unknown, ctx: GraphqlContext) => {
      const site = ctx.loaders.siteNow(deploy.siteId);
      return site instanceof Promise ? site.then((s) => s?.publishedDeployId === deploy.id) : site.publishedDeployId === deploy.id;
    },
    autoPublish: (deploy: Deploy) => deploy.autoPublish === true,
    url: async (deploy: Deploy, _: unknown, ctx: GraphqlContext) => {
      const site = await ctx.loaders.site(deploy.siteId);
      if (!site) throw notFound('site');
      return siteAddresses(ctx.services, site, deploy.id).deploy;
    },
    phase: (deploy: Deploy) => (deploy.status === 'IN_PROGRESS' && deploy.phase ? deploy.phase.toUpperCase() : null),
    // Charged to the answer's byte budget before it is read (answer.ts):
    // past the budget the request fails without reading more.
    log: async (deploy: Deploy, _: unknown, ctx: GraphqlContext) => {
      const admit = (bytes: number) => ctx.answer.charge(bytes);
      const store = ctx.services.deployLogs;
      const key = deployLogKey(deploy.siteId, deploy.id);
      let log: string | Buffer | undefined = store.readAdmitted
        ? await store.readAdmitted(key, admit)
        : await store.read(key).then((t) => (t !== undefined && admit(Buffer.byteLength(t)), t));
      // Deploys from before the log store kept their log in the record.
      if (log === undefined && deploy.log != null) {
        admit(Buffer.byteLength(deploy.log));
        log = deploy.log;
      }
      return log === undefined ? null : ctx.answer.deliver(log);
    },
  },
};
