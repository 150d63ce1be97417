/**
 * Sites by host: what a site address serves. `<slug>` is the site's
 * published deploy (a site with none serves nothing yet);
 * `<deployId>--<slug>` one deploy of it, published or not, once it has
 * content. The root CID is all the gateway needs after that.
 */
import { CID } from 'multiformats/cid';
import type { Services } from '../services.js';

export type SiteTarget =
  | { kind: 'unknown' }
  | { kind: 'unpublished'; siteId: string }
  | { kind: 'deploy'; siteId: string; deployId: string; root: CID; preview: boolean };

export async function resolveSite(services: Services, slug: string, deployLabel?: string): Promise<SiteTarget> {
  if (deployLabel !== undefined) {
    const site = await services.sites.getBySlug(slug);
    if (!site) return { kind: 'unknown' };
    const deploy = await services.deploys.findByLowercaseId(site.id, deployLabel);
    if (!deploy || deploy.status !== 'DEPLOYED' || !deploy.ipfsHash) return { kind: 'unknown' };
    return { kind: 'deploy', siteId: site.id, deployId: deploy.id, root: CID.parse(deploy.ipfsHash), preview: true };
  }
  const cache = services.siteCache;
  const cached = cache?.getHost(slug);
  if (cached) {
    if (!cached.deployId || !cached.root) return { kind: 'unpublished', siteId: cached.siteId };
    return { kind: 'deploy', siteId: cached.siteId, deployId: cached.deployId, root: CID.parse(cached.root), preview: false };
  }
  const readAt = cache?.purges ?? 0;
  const site = await services.sites.getBySlug(slug);
  if (!site) return { kind: 'unknown' };
  const deploy = site.publishedDeployId ? await services.deploys.get(site.id, site.publishedDeployId) : undefined;
  if (!deploy?.ipfsHash) {
    cache?.setHost(slug, { siteId: site.id, deployId: null, root: null }, readAt);
    return { kind: 'unpublished', siteId: site.id };
  }
  cache?.setHost(slug, { siteId: site.id, deployId: deploy.id, root: deploy.ipfsHash }, readAt);
  return { kind: 'deploy', siteId: site.id, deployId: deploy.id, root: CID.parse(deploy.ipfsHash), preview: false };
}
