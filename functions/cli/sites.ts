/**
 * `cairn sites list|create|show|delete`, and what the other commands need
 * of sites: finding one by name or id, and its addresses.
 */
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import type { Settings } from './config-store.js';
import type { Context } from './context.js';
import type { GraphqlClient } from './graphql-client.js';
import { CliError, formatTime, table } from './output.js';

export interface SiteSource {
  __typename: 'Repository' | 'IpfsSource';
  type?: string;
  url?: string;
  branch?: string;
  cid?: string | null;
}

export interface DeploySummary {
  id: string;
  status: string;
  ipfsHash?: string | null;
  startedAt?: string | null;
  completedAt?: string | null;
}

export interface Site {
  id: string;
  name: string;
  slug: string;
  description?: string | null;
  platform?: string | null;
  createdAt: string;
  updatedAt?: string | null;
  teamId: string;
  buildSettings: {
    buildCommand?: string | null;
    baseDirectoryPath?: string | null;
    publishDirectoryPath?: string | null;
    dockerImage?: string | null;
    environmentVariables: Array<{ name: string; value?: string | null }>;
  };
  deploySettings: { autoPublishing: boolean; prDeployPreviews: boolean; source: SiteSource };
  publishedDeploy?: DeploySummary | null;
  latestDeploy?: DeploySummary | null;
  /** Null until the site's first publish. */
  ipnsName?: string | null;
}

export const SITE_FIELDS = `
fragment CliSite on Site {
  id name slug description platform createdAt updatedAt teamId
  buildSettings { buildCommand baseDirectoryPath publishDirectoryPath dockerImage environmentVariables { name value } }
  deploySettings { autoPublishing prDeployPreviews source { __typename ... on Repository { type url branch } ... on IpfsSource { cid } } }
  publishedDeploy { id status ipfsHash startedAt completedAt }
  latestDeploy { id status ipfsHash startedAt completedAt }
  ipnsName
}`;

/** Site ids are UUIDs; anything else names a site by its name (its slug). */
const SITE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The team's site named `ref` (its name or its id), or a CliError. */
export async function findSite(api: GraphqlClient, ref: string): Promise<Site> {
  const byId = SITE_ID.test(ref);
  const data = byId
    ? await api.request<{ site: Site | null }>(`query ($id: ID!) { site: getSiteById(siteId: $id) { ...CliSite } } ${SITE_FIELDS}`, {
        id: ref.toLowerCase(),
      })
    : await api.request<{ site: Site | null }>(
        `query ($slug: String!) { site: getSiteBySlug(slug: $slug) { ...CliSite } } ${SITE_FIELDS}`,
        { slug: ref },
      );
  if (!data.site) throw new CliError(`no site ${byId ? 'with id' : 'named'} "${ref}" in your team (cairn sites list shows them)`);
  return data.site;
}

/** The scheme site addresses use: the gateway's (http locally, https behind the CDN). */
const schemeOf = (settings: Settings) => new URL(settings.gatewayUrl).protocol;

/** The address that serves the site's published deploy, when the sites' domain is known. */
export function siteUrl(settings: Settings, slug: string): string | undefined {
  return settings.sitesDomain ? `${schemeOf(settings)}//${slug}.${settings.sitesDomain}/` : undefined;
}

/** The address of one deploy of the site (published or not). */
export function deployUrl(settings: Settings, slug: string, deployId: string): string | undefined {
  return settings.sitesDomain ? `${schemeOf(settings)}//${deployId.toLowerCase()}--${slug}.${settings.sitesDomain}/` : undefined;
}

/** A CID on the service's gateway. */
export const ipfsUrl = (settings: Settings, cid: string): string => `${settings.gatewayUrl}/ipfs/${cid}`;

export function describeSource(source: SiteSource): string {
  if (source.__typename === 'Repository') return `${source.url} (${source.branch})`;
  return source.cid ? `ipfs ${source.cid}` : 'ipfs (cairn deploy --dir)';
}

/** The site as --json prints it: its record and its address. */
/** The site's IPNS name on the gateway, `/ipns/<name>/`, once its first publish made the name. */
export function ipnsUrl(settings: Settings, site: Pick<Site, 'ipnsName'>): string | null {
  return site.ipnsName ? `${settings.gatewayUrl.replace(/\/$/, '')}/ipns/${site.ipnsName}/` : null;
}

const siteJson = (settings: Settings, site: Site) => ({
  ...site,
  ipnsName: site.ipnsName ?? null,
  url: siteUrl(settings, site.slug) ?? null,
  ipnsUrl: ipnsUrl(settings, site),
});

interface CreateOptions {
  repo?: string;
  branch?: string;
  cid?: string;
  buildCommand?: string;
  baseDir?: string;
  publishDir?: string;
  dockerImage?: string;
  env?: string[];
  description?: string;
  autoPublish?: boolean;
  prPreviews?: boolean;
}

function environment(pairs: string[] | undefined) {
  if (!pairs) return undefined;
  return pairs.map((pair) => {
    const at = pair.indexOf('=');
    if (at <= 0) throw new CliError(`--env takes NAME=VALUE, got "${pair}"`);
    return { name: pair.slice(0, at), value: pair.slice(at + 1) };
  });
}

async function createSite(name: string | undefined, options: CreateOptions, ctx: Context): Promise<void> {
  if (options.repo && options.cid) throw new CliError('a site has one source: give --repo or --cid, not both');
  if (options.branch && !options.repo) throw new CliError('--branch goes with --repo');
  const source = options.repo
    ? { repository: { type: 'GIT_HOST', url: options.repo, branch: options.branch ?? 'main' } }
    : { ipfs: { cid: options.cid ?? null } };
  const buildSettings: Record<string, unknown> = {};
  if (options.buildCommand !== undefined) buildSettings.buildCommand = options.buildCommand;
  if (options.baseDir !== undefined) buildSettings.baseDirectoryPath = options.baseDir;
  if (options.publishDir !== undefined) buildSettings.publishDirectoryPath = options.publishDir;
  if (options.dockerImage !== undefined) buildSettings.dockerImage = options.dockerImage;
  const env = environment(options.env);
  if (env) buildSettings.environmentVariables = env;
  const input: Record<string, unknown> = {
    ...(name ? { name } : {}),
    ...(options.description !== undefined ? { description: options.description } : {}),
    buildSettings,
    deploySettings: { source, autoPublishing: options.autoPublish !== false, prDeployPreviews: options.prPreviews === true },
  };
  const settings = await ctx.settings();
  const api = await ctx.api();
  const site = (
    await api.request<{ createSite: Site }>(
      `mutation ($input: CreateSiteInput!) { createSite(input: $input) { ...CliSite } } ${SITE_FIELDS}`,
      { input },
    )
  ).createSite;
  ctx.out.result(siteJson(settings, site), () => [
    `Created site ${site.name} (${site.id}).`,
    `Source: ${describeSource(site.deploySettings.source)}`,
    `Deploy it: cairn deploy ${site.name}${site.deploySettings.source.__typename === 'IpfsSource' && !site.deploySettings.source.cid ? ' --dir <folder>' : ''}`,
  ]);
}

async function listSites(options: { limit?: string }, ctx: Context): Promise<void> {
  const settings = await ctx.settings();
  const api = await ctx.api();
  const want = options.limit === undefined ? Infinity : positiveInt(options.limit, '--limit');
  const team = (await api.request<{ getCurrentTeam: { id: string } }>('query { getCurrentTeam { id } }')).getCurrentTeam;
  const sites: Site[] = [];
  let nextToken: string | null = null;
  do {
    const page: { sites: Site[]; nextToken: string | null } = (
      await api.request<{ getSitesByTeam: { sites: Site[]; nextToken: string | null } }>(
        `query ($t: ID!, $n: String, $l: Int) { getSitesByTeam(teamId: $t, limit: $l, nextToken: $n) { sites { ...CliSite } nextToken } } ${SITE_FIELDS}`,
        { t: team.id, n: nextToken, l: Math.min(100, want - sites.length) },
      )
    ).getSitesByTeam;
    sites.push(...page.sites);
    nextToken = page.nextToken;
  } while (nextToken && sites.length < want);
  ctx.out.result(
    sites.map((s) => siteJson(settings, s)),
    () =>
      sites.length === 0
        ? 'No sites yet: cairn sites create <name>'
        : table(
            ['NAME', 'SOURCE', 'PUBLISHED', 'LATEST', 'ID', 'IPNS NAME'],
            sites.map((s) => [
              s.name,
              describeSource(s.deploySettings.source),
              s.publishedDeploy ? formatTime(s.publishedDeploy.completedAt) : '-',
              s.latestDeploy ? s.latestDeploy.status : '-',
              s.id,
              s.ipnsName ?? '-',
            ]),
          ),
  );
}

export function positiveInt(value: string, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${what} must be a whole number above 0, got "${value}"`);
  return n;
}

async function showSite(ref: string, ctx: Context): Promise<void> {
  const settings = await ctx.settings();
  const site = await findSite(await ctx.api(), ref);
  const b = site.buildSettings;
  ctx.out.result(siteJson(settings, site), () => [
    `Site:        ${site.name} (${site.id})`,
    ...(site.description ? [`Description: ${site.description}`] : []),
    `Created:     ${formatTime(site.createdAt)}`,
    `Source:      ${describeSource(site.deploySettings.source)}`,
    `Build:       ${b.buildCommand ?? '(none: the publish directory as it is)'}`,
    `Publish:     ${[b.baseDirectoryPath, b.publishDirectoryPath].filter(Boolean).join('/') || '.'}`,
    ...(b.environmentVariables.length ? [`Environment: ${b.environmentVariables.map((v) => v.name).join(', ')}`] : []),
    `Publishing:  ${site.deploySettings.autoPublishing ? 'automatic' : 'by hand (publishDeploy)'}`,
    `Published:   ${site.publishedDeploy ? `${site.publishedDeploy.id} ${site.publishedDeploy.ipfsHash ?? ''}`.trim() : '-'}`,
    `Latest:      ${site.latestDeploy ? `${site.latestDeploy.id} ${site.latestDeploy.status}` : '-'}`,
    `Address:     ${siteUrl(settings, site.slug) ?? 'unknown (cairn login --sites-domain <domain>)'}`,
    `IPNS name:   ${site.ipnsName ? `${site.ipnsName} (${ipnsUrl(settings, site)})` : '- (made on the first publish)'}`,
  ]);
}

async function deleteSite(ref: string, options: { yes?: boolean }, ctx: Context): Promise<void> {
  const api = await ctx.api();
  const site = await findSite(api, ref);
  if (!options.yes) {
    if (!ctx.stdin.isTTY || ctx.out.json) throw new CliError(`deleting ${site.name} removes its deploys too: pass --yes to confirm`);
    const rl = createInterface({ input: ctx.stdin, output: ctx.out.streams.stderr });
    const answer = await rl.question(`Delete site ${site.name} and all its deploys? Type its name to confirm: `).finally(() => rl.close());
    if (answer.trim() !== site.name) throw new CliError('not deleted: the name did not match');
  }
  const deleted = (await api.request<{ deleteSite: boolean }>('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: site.id })).deleteSite;
  if (!deleted) throw new CliError(`site ${site.name} was not deleted (already gone?)`);
  ctx.out.result({ deleted: true, id: site.id, name: site.name }, () => `Deleted site ${site.name} (${site.id}).`);
}

export function registerSites(program: Command, context: (command: Command) => Context): void {
  const sites = program.command('sites').description("list, create, show and delete your team's sites");

  sites
    .command('list')
    .description("the team's sites, oldest first")
    .option('--limit <n>', 'at most this many')
    .action(async (options: { limit?: string }, command: Command) => listSites(options, context(command)));

  sites
    .command('create [name]')
    .description('create a site (without a source: one you deploy with cairn deploy --dir)')
    .option('--repo <url>', 'build from this git repository (https:// or http:// clone URL)')
    .option('--branch <branch>', 'the branch to build (with --repo; default main)')
    .option('--cid <cid>', 'serve this CID, held by the service')
    .option('--build-command <command>', 'run as sh -c "<command>" before publishing')
    .option('--base-dir <path>', 'where the build command runs, relative to the repository')
    .option('--publish-dir <path>', 'what is published, relative to the base directory')
    .option('--docker-image <image>', "the build's image (in AWS)")
    .option('--env <NAME=VALUE...>', "the build's environment variables")
    .option('--description <text>', 'a description')
    .option('--no-auto-publish', 'do not publish deploys when they succeed')
    .option('--pr-previews', 'build pull requests as previews')
    .addHelpText(
      'after',
      `
Examples:
  cairn sites create my-blog --repo https://github.com/me/blog.git --build-command "npm run build" --publish-dir dist
  cairn sites create landing          # then: cairn deploy landing --dir ./public`,
    )
    .action(async (name: string | undefined, options: CreateOptions, command: Command) => createSite(name, options, context(command)));

  sites
    .command('show <site>')
    .description('one site (by name or id): its source, settings, deploys and address')
    .action(async (ref: string, _options: unknown, command: Command) => showSite(ref, context(command)));

  sites
    .command('delete <site>')
    .description('delete a site, its name and its deploys')
    .option('-y, --yes', 'do not ask')
    .action(async (ref: string, options: { yes?: boolean }, command: Command) => deleteSite(ref, options, context(command)));
}
