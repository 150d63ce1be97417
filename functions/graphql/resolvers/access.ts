/**
 * Ownership and role checks shared by the resolvers. The rule for reads and
 * for teams, keys and site settings: what belongs to another team is
 * reported exactly like what does not exist (null from nullable queries,
 * NOT_FOUND from mutations). The hosting actions on a site (trigger, retry,
 * cancel, publish, purge) answer FORBIDDEN for another team's site, as the
 * deploy and site-serving issues ask: their callers are scripts and CI
 * that should say "wrong key" rather than "wrong id". A site id is a random
 * UUID, so FORBIDDEN tells nobody anything they could have guessed.
 */
import type { TeamRole } from '../../core/data/teams.js';
import { ConflictError } from '../../core/data/errors.js';
import type { Site } from '../../core/data/sites.js';
import { callerOf, type GraphqlContext } from '../context.js';
import { badInput, forbidden, notFound } from '../errors.js';

/** The site when the caller's team owns it, else null. */
export function ownSite(ctx: GraphqlContext, site: Site | undefined): Site | null {
  return site && site.teamId === callerOf(ctx).teamId ? site : null;
}

/** The caller's team's site to act on: NOT_FOUND when there is none, FORBIDDEN when it is another team's. */
export async function requireSite(ctx: GraphqlContext, siteId: string, doing: string): Promise<Site> {
  const site = await ctx.services.sites.getById(siteId);
  if (!site) throw notFound('site');
  if (!ownSite(ctx, site)) throw forbidden(`The site belongs to another team; this API key cannot ${doing}`);
  return site;
}

export const isOwnTeam = (ctx: GraphqlContext, teamId: string): boolean => callerOf(ctx).teamId === teamId;

/** NOT_FOUND for a team that is not the caller's; FORBIDDEN when the caller's role in it is too low. */
export async function requireTeamRole(ctx: GraphqlContext, teamId: string, role: TeamRole | 'ANY', doing: string): Promise<TeamRole> {
  const caller = callerOf(ctx);
  if (caller.teamId !== teamId) throw notFound('team');
  const member = await ctx.loaders.member(teamId, caller.accountId);
  if (!member) throw forbidden(`The API key's account is no longer a member of the team, so it cannot ${doing}`);
  if (role === 'OWNER' && member.role !== 'OWNER') throw forbidden(`Only the team's owners can ${doing}`);
  return member.role;
}

/**
 * For what an account may do in any of its teams (mint itself a key there):
 * the caller's account must be a member of the team, whichever team the
 * key in use belongs to. NOT_FOUND otherwise.
 */
export async function requireAccountMembership(ctx: GraphqlContext, teamId: string): Promise<TeamRole> {
  const member = await ctx.loaders.member(teamId, callerOf(ctx).accountId);
  if (!member) throw notFound('team');
  return member.role;
}

/** The stores' conflicts (a taken name, a last owner, a duplicate member) are the caller's to fix. */
export async function userConflicts<T>(work: () => Promise<T>, field?: string): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ConflictError) throw badInput(err.message, field);
    throw err;
  }
}
