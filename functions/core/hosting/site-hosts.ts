/**
 * Sites by address: what a site address serves. `<slug>` is the site's
 * published deploy (a site with none serves nothing yet);
 * `<deployId>--<slug>` one deploy of it, published or not, once it has
 * content. The root CID is all the gateway needs after that.
 *
 * Behind the CDN in AWS the viewer's host never reaches the gateway (a
 * Function URL answers only to its own Host): the CDN's viewer-request
 * function maps the host to the site's id and puts that in the path, so the
 * gateway resolves the same two forms by id instead of by slug.
 */
import { CID } from 'multiformats/cid';
import type { Services } from '../services.js';
import type { Site } from '../data/sites.js';
import { SITE_ID_PATTERN } from '../ids.js';

/** A site address by its host's slug, or by the site's id (a path the CDN rewrote); `deployLabel` is a deploy's id as a host gives it (lowercased). */
export type SiteAddress = { slug: string; deployLabel?: string } | { siteId: string; deployLabel?: string };

export type SiteTarget =
  | { kind: 'unknown' }
  | { kind: 'unpublished'; siteId: string }
  | { kind: 'deploy'; siteId: string; deployId: string; root: CID; preview: boolean };

async function siteAt(services: Pick<Services, 'sites'>, address: SiteAddress): Promise<Site | undefined> {
  if ('siteId' in address) return SITE_ID_PATTERN.test(address.siteId) ? services.sites.getById(address.siteId) : undefined;
  return services.sites.getBySlug(address.slug);
}

export async function resolveSite(services: Pick<Services, 'deploys' | 'siteCache' | 'sites'>, address: SiteAddress): Promise<SiteTarget> {
  if (address.deployLabel !== undefined) {
    const site = await siteAt(services, address);
    if (!site) return { kind: 'unknown' };
    const deploy = await services.deploys.findByLowercaseId(site.id, address.deployLabel);
    if (!deploy || deploy.status !== 'DEPLOYED' || !deploy.ipfsHash) return { kind: 'unknown' };
    return { kind: 'deploy', siteId: site.id, deployId: deploy.id, root: CID.parse(deploy.ipfsHash), preview: true };
  }
  // Host resolutions are kept by slug; an id costs one read of its own and is not kept.
  const slug = 'slug' in address ? address.slug : undefined;
  const cache = slug === undefined ? undefined : services.siteCache;
  const cached = slug === undefined ? undefined : cache?.getHost(slug);
  if (cached) {
    if (!cached.deployId || !cached.root) return { kind: 'unpublished', siteId: cached.siteId };
    return { kind: 'deploy', siteId: cached.siteId, deployId: cached.deployId, root: cached.root, preview: false };
  }
  const readAt = cache?.purges ?? 0;
  const site = await siteAt(services, address);
  if (!site) return { kind: 'unknown' };
  const deploy = site.publishedDeployId ? await services.deploys.get(site.id, site.publishedDeployId) : undefined;
  if (!deploy?.ipfsHash) {
    if (slug !== undefined) cache?.setHost(slug, { siteId: site.id, deployId: null, root: null }, readAt);
    return { kind: 'unpublished', siteId: site.id };
  }
  const root = CID.parse(deploy.ipfsHash);
  if (slug !== undefined) cache?.setHost(slug, { siteId: site.id, deployId: deploy.id, root }, readAt);
  return { kind: 'deploy', siteId: site.id, deployId: deploy.id, root, preview: false };
}
