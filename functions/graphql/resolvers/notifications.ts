/**
 * A site's deploy notification URLs: added (the signing secret shown once)
 * and removed through mutations that answer FORBIDDEN for another team's
 * site, and read, with their latest deliveries, as a field of the Site
 * (which another team never gets to see). Sending is
 * core/hosting/notifications.ts's.
 */
import { randomBytes } from 'node:crypto';
import { DEPLOY_EVENTS, type DeployEvent, type NotificationUrl } from '../../core/data/notification-urls.js';
import type { Site } from '../../core/data/sites.js';
import { checkNotificationUrl, NotificationUrlError } from '../../core/hosting/notification-urls.js';
import type { GraphqlContext } from '../context.js';
import { badInput, notFound } from '../errors.js';
import { requireSite } from './access.js';

/** Several per site, not a fan-out: each deploy event is one delivery per URL. */
export const MAX_NOTIFICATION_URLS = 10;
const DEFAULT_DELIVERIES = 10;
const MAX_DELIVERIES = 50;

export const notificationResolvers = {
  Mutation: {
    addNotificationUrl: async (_: unknown, args: { siteId: string; url: string; events?: DeployEvent[] | null }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'add notification URLs');
      const events = args.events ?? [...DEPLOY_EVENTS];
      if (events.length === 0) throw badInput('events must name at least one event (leave it out for all of them)', 'events');
      try {
        await checkNotificationUrl(args.url, ctx.services.config.outbound);
      } catch (err) {
        if (err instanceof NotificationUrlError) throw badInput(err.message, 'url');
        throw err;
      }
      const existing = await ctx.services.notificationUrls.list(site.id);
      if (existing.length >= MAX_NOTIFICATION_URLS)
        throw badInput(`a site has at most ${MAX_NOTIFICATION_URLS} notification URLs; remove one first`, 'url');
      const secret = `whsec_${randomBytes(32).toString('base64url')}`;
      const notificationUrl = await ctx.services.notificationUrls.add(site.id, {
        url: args.url,
        events: DEPLOY_EVENTS.filter((e) => events.includes(e)),
        secret,
      });
      return { notificationUrl, secret };
    },
    removeNotificationUrl: async (_: unknown, args: { siteId: string; notificationUrlId: string }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'remove its notification URLs');
      if (!(await ctx.services.notificationUrls.remove(site.id, args.notificationUrlId))) throw notFound('notification URL');
      return true;
    },
  },
  Site: {
    notificationUrls: (site: Site, _: unknown, ctx: GraphqlContext): Promise<NotificationUrl[]> =>
      ctx.services.notificationUrls.list(site.id),
  },
  NotificationUrl: {
    lastDeliveries: (url: NotificationUrl, args: { limit?: number | null }, ctx: GraphqlContext) => {
      const limit = args.limit ?? DEFAULT_DELIVERIES;
      if (!Number.isInteger(limit) || limit < 1) throw badInput('limit must be at least 1', 'limit');
      return ctx.services.notificationDeliveries.listOfUrl(url.siteId, url.id, Math.min(limit, MAX_DELIVERIES));
    },
  },
};
