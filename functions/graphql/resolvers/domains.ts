/**
 * A site's own domains: added, verified, made primary and removed through
 * mutations that answer FORBIDDEN for another team's site (as the other
 * hosting actions) and for a caller who is not one of the team's owners (a
 * domain says where a name of the team's points, and can take one from
 * another site), and read by any member as a field of the Site. The rules
 * are core/hosting/domains.ts's.
 */
import type { SiteDomain } from '../../core/data/domains.js';
import type { Site } from '../../core/data/sites.js';
import { domainDns, type DomainDns } from '../../core/hosting/domain-dns.js';
import { addDomain, DomainError, dnsRecordsOf, removeDomain, setPrimaryDomain, verifyDomain } from '../../core/hosting/domains.js';
import { dnsLinkPath } from '../../core/hosting/dnslink.js';
import type { GraphqlContext } from '../context.js';
import { badInput, graphqlError, notFound } from '../errors.js';
import { requireSite, requireTeamRole } from './access.js';

/** One resolver per configuration: it holds no state between lookups. */
const resolvers = new WeakMap<object, DomainDns>();
const dnsOf = (ctx: GraphqlContext): DomainDns => {
  const config = ctx.services.config;
  let dns = resolvers.get(config);
  if (!dns) resolvers.set(config, (dns = domainDns(config)));
  return dns;
};

async function asGraphql<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof DomainError) {
      if (err.kind === 'not-found') throw notFound('domain');
      if (err.kind === 'limited') throw graphqlError('FORBIDDEN', err.message, { retryAfter: err.retryAfter });
      throw badInput(err.message, 'domain');
    }
    throw err;
  }
}

type DomainArgs = { siteId: string; domain: string };

/** The caller's team's site, when the caller is one of the team's owners. */
async function ownersSite(ctx: GraphqlContext, siteId: string, doing: string): Promise<Site> {
  const site = await requireSite(ctx, siteId, doing);
  await requireTeamRole(ctx, site.teamId, 'OWNER', doing);
  return site;
}

/** A domain as the API shows it: with its site, so its records can be told. */
type DomainAnswer = SiteDomain & { site: Site };

export const domainResolvers = {
  Mutation: {
    addDomain: async (_: unknown, args: DomainArgs, ctx: GraphqlContext): Promise<DomainAnswer> => {
      const site = await ownersSite(ctx, args.siteId, 'add domains to it');
      return { ...(await asGraphql(() => addDomain(ctx.services, site, args.domain))), site };
    },
    verifyDomain: async (_: unknown, args: DomainArgs, ctx: GraphqlContext): Promise<DomainAnswer> => {
      const site = await ownersSite(ctx, args.siteId, 'verify its domains');
      return { ...(await asGraphql(() => verifyDomain(ctx.services, site, args.domain, dnsOf(ctx)))), site };
    },
    removeDomain: async (_: unknown, args: DomainArgs, ctx: GraphqlContext): Promise<boolean> => {
      const site = await ownersSite(ctx, args.siteId, 'remove its domains');
      if (!(await asGraphql(() => removeDomain(ctx.services, site, args.domain)))) throw notFound('domain');
      return true;
    },
    setPrimaryDomain: async (_: unknown, args: DomainArgs, ctx: GraphqlContext): Promise<DomainAnswer> => {
      const site = await ownersSite(ctx, args.siteId, 'change its domains');
      return { ...(await asGraphql(() => setPrimaryDomain(ctx.services, site, args.domain))), site };
    },
  },
  Site: {
    domains: async (site: Site, _: unknown, ctx: GraphqlContext): Promise<DomainAnswer[]> =>
      (await ctx.services.domains.list(site.id)).map((d) => ({ ...d, site })),
  },
  Domain: {
    dnsRecords: async (domain: DomainAnswer, _: unknown, ctx: GraphqlContext) => {
      // Where Cairn writes the zone it keeps the DNSLink record itself; elsewhere the owner is shown it, current with the last publish.
      const { site } = domain;
      const shown = domain.primary && site.publishedDeployId && !ctx.services.dnsLink.manages(domain.domain);
      const deploy = shown ? await ctx.loaders.deploy.load({ siteId: site.id, deployId: site.publishedDeployId! }) : undefined;
      return dnsRecordsOf(domain, site, ctx.services.config, deploy?.ipfsHash ? dnsLinkPath(deploy.ipfsHash) : undefined);
    },
  },
};
