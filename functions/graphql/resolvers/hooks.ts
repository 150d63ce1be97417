/**
 * What a site gets deployed by from outside: its webhook secret (created or
 * rotated, shown once), its repository access token (write-only), and its
 * build hooks (secret URLs, shown once). The values themselves live sealed
 * or hashed in data/site-secrets.ts; the Site only says whether they are set.
 */
import { randomBytes } from 'node:crypto';
import type { Deploy } from '../../core/data/deploys.js';
import type { BuildHook } from '../../core/data/site-secrets.js';
import type { Site } from '../../core/data/sites.js';
import { buildHookUrl, gitHookUrl } from '../../core/hosting/git-hooks.js';
import { parseRepositoryUrl } from '../../core/hosting/repository-url.js';
import type { GraphqlContext } from '../context.js';
import { badInput, notFound } from '../errors.js';
import { requireSite } from './access.js';

const MAX_TOKEN_LENGTH = 1024;
const MAX_NAME_LENGTH = 100;
/** Git's own rules, roughly: no spaces, control characters, `..`, `~^:?*[\` or a leading `-`. */
const BRANCH = /^(?!-)(?!.*\.\.)(?!.*\/\/)[^\s~^:?*[\\\x00-\x1f\x7f]{1,250}(?<![/.])$/;

/** GitLab takes a token with the user name `oauth2`; GitHub (and most others) with any name, conventionally `x-access-token`. */
export function defaultRepositoryUsername(site: Site): string {
  const source = site.deploySettings.source;
  if (source.kind !== 'repository') return 'x-access-token';
  try {
    return /(^|\.)gitlab\./i.test(parseRepositoryUrl(source.url).host) ? 'oauth2' : 'x-access-token';
  } catch {
    return 'x-access-token';
  }
}

type SecretStatus = ReturnType<GraphqlContext['services']['siteSecrets']['status']>;
/** Per request (its context), the status of each site's secrets: read once however many of its fields are asked for. */
const statuses = new WeakMap<GraphqlContext, Map<string, SecretStatus>>();
const secretStatus = (ctx: GraphqlContext, siteId: string): SecretStatus => {
  let cache = statuses.get(ctx);
  if (!cache) statuses.set(ctx, (cache = new Map()));
  let status = cache.get(siteId);
  if (!status) cache.set(siteId, (status = ctx.services.siteSecrets.status(siteId)));
  return status;
};

export const hookResolvers = {
  Mutation: {
    createWebhookSecret: async (_: unknown, args: { siteId: string }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'set its webhook secret');
      const secret = randomBytes(32).toString('base64url');
      await ctx.services.siteSecrets.setWebhookSecret(site.id, secret);
      return { secret, url: gitHookUrl(ctx.services.config.urls.baseUrl, site.id) };
    },
    deleteWebhookSecret: async (_: unknown, args: { siteId: string }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'remove its webhook secret');
      await ctx.services.siteSecrets.clearWebhookSecret(site.id);
      return true;
    },
    setRepositoryToken: async (
      _: unknown,
      args: { siteId: string; token?: string | null; username?: string | null },
      ctx: GraphqlContext,
    ) => {
      const site = await requireSite(ctx, args.siteId, 'set its repository token');
      if (args.token === null || args.token === undefined) {
        await ctx.services.siteSecrets.clearRepositoryToken(site.id);
        return site;
      }
      // The messages never repeat the token.
      if (args.token === '' || args.token.length > MAX_TOKEN_LENGTH || /[\s\x00-\x1f\x7f]/.test(args.token)) {
        throw badInput(`token must be 1 to ${MAX_TOKEN_LENGTH} characters without spaces or control characters (null clears it)`, 'token');
      }
      const username = args.username ?? defaultRepositoryUsername(site);
      if (username === '' || username.length > 200 || /[:\s\x00-\x1f\x7f]/.test(username))
        throw badInput('username must be 1 to 200 characters without a colon, spaces or control characters', 'username');
      await ctx.services.siteSecrets.setRepositoryToken(site.id, { token: args.token, username });
      return site;
    },
    createBuildHook: async (_: unknown, args: { siteId: string; name: string; branch?: string | null }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'create build hooks');
      const name = args.name.trim();
      if (name === '' || name.length > MAX_NAME_LENGTH) throw badInput(`name must be 1 to ${MAX_NAME_LENGTH} characters`, 'name');
      const branch = args.branch ?? null;
      if (branch !== null && !BRANCH.test(branch)) throw badInput('branch is not a valid branch name', 'branch');
      if (site.deploySettings.source.kind !== 'repository' && branch !== null)
        throw badInput('the site deploys a CID, not a repository: a build hook of it takes no branch', 'branch');
      // 192 random bits: the URL is the credential.
      const token = randomBytes(24).toString('base64url');
      const buildHook = await ctx.services.siteSecrets.createBuildHook(site.id, { name, branch, token });
      return { buildHook, url: buildHookUrl(ctx.services.config.urls.baseUrl, buildHook.id, token) };
    },
    deleteBuildHook: async (_: unknown, args: { siteId: string; buildHookId: string }, ctx: GraphqlContext) => {
      const site = await requireSite(ctx, args.siteId, 'delete its build hooks');
      if (!(await ctx.services.siteSecrets.deleteBuildHook(site.id, args.buildHookId))) throw notFound('build hook');
      return true;
    },
  },
  Site: {
    webhookUrl: (site: Site, _: unknown, ctx: GraphqlContext) => gitHookUrl(ctx.services.config.urls.baseUrl, site.id),
    webhookSecretSet: async (site: Site, _: unknown, ctx: GraphqlContext) => (await secretStatus(ctx, site.id)).webhookSecret,
    repositoryTokenSet: async (site: Site, _: unknown, ctx: GraphqlContext) => (await secretStatus(ctx, site.id)).repositoryToken,
    repositoryUsername: async (site: Site, _: unknown, ctx: GraphqlContext) => (await secretStatus(ctx, site.id)).repositoryUsername,
    buildHooks: async (site: Site, _: unknown, ctx: GraphqlContext): Promise<BuildHook[]> =>
      ctx.services.siteSecrets.listBuildHooks(site.id),
  },
  Deploy: {
    preview: (deploy: Deploy) => deploy.preview === true,
    pullRequest: (deploy: Deploy) => deploy.pullRequest ?? null,
  },
};
