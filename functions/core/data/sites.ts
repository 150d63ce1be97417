/**
 * Sites, in the sites table:
 *   SITE#<id> / SITE     the site      gsi1: SLUG#<slug> / SITE   gsi2: TEAM#<teamId> / <createdAt>#<id>
 *   SLUG#<slug> / SLUG   reserves a slug so two sites can never share one
 *
 * A site's name is its slug. Renaming moves the reservation in the same
 * transaction that rewrites the site, so a slug always names at most one
 * site and a renamed site answers to its new slug at once. Updates are
 * optimistic: each write is conditioned on the `version` it read.
 *
 * A secret build variable is sealed by the store as it writes the site (the
 * same sealer as the site's webhook secret and repository token, under a
 * context naming the site and the variable), so its value is never in the
 * table in clear and a sealed value copied to another site or variable does
 * not open. It is kept in the site item, not beside it, so the list of
 * variables is replaced whole in the one conditional write of an update:
 * a request that fails leaves the old list, secrets and all.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TtlCache } from '../cache.js';
import { RECENT_READS_MS, RecentReads } from './recent-reads.js';
import { newId } from '../ids.js';
import { ConflictError } from './errors.js';
import type { Database } from './dynamo.js';
import type { SecretSealer } from '../auth/secrets.js';
import { queryPage, type Page } from './pages.js';
import { withoutKeys, writtenIf } from './tables.js';

/** How long which site a slug names is remembered (never answered unchecked). */
const SLUG_IDS_KEPT_MS = 10 * 60_000;

export type SitePlatform = 'ipfs' | 'alt';

/** Which deploys get a variable: production ones (the site's branch), previews (pull requests, other branches), or both. */
export type VariableScope = 'ALL' | 'PRODUCTION' | 'PREVIEWS';

export interface EnvironmentVariable {
  name: string;
  /** A plain variable's value. A secret one has none in the record; given to create or update, it is sealed as it is written. */
  value?: string | null;
  /** Write-only: sealed at rest, never returned by the API, masked in deploy logs, never given to a fork's pull request. */
  secret?: boolean | null;
  /** Absent in records written before scopes: ALL. */
  scope?: VariableScope | null;
  /** A secret variable's value, sealed under variableContext(site, name). */
  sealed?: string | null;
}

/** The sealing context of a site's secret variable: it opens for that site and name only. */
export const variableContext = (siteId: string, name: string) => `site-variable:${siteId}:${name}`;

export interface BuildSettings {
  buildCommand?: string | null;
  baseDirectoryPath?: string | null;
  publishDirectoryPath?: string | null;
  dockerImage?: string | null;
  environmentVariables: EnvironmentVariable[];
}

export type SiteSource = { kind: 'repository'; type: 'GIT_HOST'; url: string; branch: string } | { kind: 'ipfs'; cid?: string | null };

/** Whether pull requests from forks are built (as previews without the site's secrets) or not at all. */
export type ForkPullRequests = 'NOT_BUILT' | 'BUILT_WITHOUT_SECRETS';

export interface DeploySettings {
  autoPublishing: boolean;
  prDeployPreviews: boolean;
  /** Absent: NOT_BUILT (the safe default: a stranger's code never runs on the site's account). */
  forkPullRequests?: ForkPullRequests | null;
  altUseProxy?: boolean | null;
  source: SiteSource;
}

export interface Site {
  id: string;
  teamId: string;
  createdBy: string;
  createdAt: string;
  updatedAt?: string | null;
  name: string;
  slug: string;
  description?: string | null;
  platform?: SitePlatform | null;
  buildSettings: BuildSettings;
  deploySettings: DeploySettings;
  publishedDeployId?: string | null;
  latestDeployId?: string | null;
  altCanisterId?: string | null;
  /** Optimistic-lock counter, bumped by every update. */
  version?: number;
}

export type NewSite = Omit<Site, 'id' | 'createdAt' | 'slug' | 'name'> & { name?: string; slug?: string };

const ADJECTIVES = [
  'hidden',
  'quiet',
  'bold',
  'amber',
  'silent',
  'rapid',
  'misty',
  'lucky',
  'gentle',
  'brave',
  'crimson',
  'golden',
  'frosty',
  'wild',
  'calm',
  'bright',
];
const NOUNS = [
  'waterfall',
  'meadow',
  'river',
  'canyon',
  'forest',
  'harbor',
  'summit',
  'glacier',
  'island',
  'valley',
  'prairie',
  'lagoon',
  'ridge',
  'cairn',
  'delta',
  'grove',
];

/** A slug is a DNS label: lowercase letters, digits and inner hyphens, at most 63 characters. */
export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export function generateSlug(random: () => number = Math.random): string {
  const pick = (list: string[]) => list[Math.floor(random() * list.length)]!;
  return `${pick(ADJECTIVES)}-${pick(NOUNS)}-${1000 + Math.floor(random() * 9000)}`;
}

export class SlugTakenError extends ConflictError {
  override name = 'SlugTakenError';
  constructor(readonly slug: string) {
    super(`the name "${slug}" is taken`);
  }
}

/** Where a listing of a team's sites resumes: the gsi2 sort key of the last site seen. */
export const siteCursor = (site: Pick<Site, 'createdAt' | 'id'>): string => `${site.createdAt}#${site.id}`;

const MAX_ATTEMPTS = 5;

/** Sites remembered for reads that show them (recent-reads.ts); pages of teams' sites count as the sites they hold. */
const RECENT_SITES = 2_000;
const RECENT_PAGE_SITES = 2_000;

/** What writes a site outside this store (a deploy's end publishes it in the same transaction): the store forgets it too. */
export interface SiteWrites {
  writing<T>(siteId: string, write: () => Promise<T>): Promise<T>;
}

export class SiteStore implements SiteWrites {
  /** Which site a slug named when last read (checked against the site at every use: getBySlug). */
  private readonly slugIds = new TtlCache<string, string>(SLUG_IDS_KEPT_MS);
  /** Sites by id as recently read, for the reads that show them (getRecent). */
  private readonly recent: RecentReads<Site>;
  /** Pages of a team's sites as recently read (listRecentByTeam): any site write forgets them all. */
  private readonly pages: RecentReads<Page<Site>>;

  /** `recentMs`: how long getRecent and its kin answer from memory at most. */
  constructor(
    private readonly db: Database,
    private readonly sealer: SecretSealer,
    private readonly now: () => Date = () => new Date(),
    recentMs = RECENT_READS_MS,
  ) {
    this.recent = new RecentReads<Site>(RECENT_SITES, undefined, recentMs);
    this.pages = new RecentReads<Page<Site>>(RECENT_PAGE_SITES, (page) => page.items.length + 1, recentMs);
  }

  private get table() {
    return this.db.tables.sites;
  }

  /**
   * The site as it is written: each secret variable given a value is sealed
   * (and loses the value); one without a value must carry its sealed one
   * (site-input.ts keeps it from the site as it was).
   */
  private async sealed(site: Site): Promise<Site> {
    const variables = site.buildSettings?.environmentVariables ?? [];
    if (!variables.some((v) => v.secret)) return site;
    const environmentVariables = await Promise.all(
      variables.map(async (v): Promise<EnvironmentVariable> => {
        if (!v.secret) return v;
        const { value, sealed, ...rest } = v;
        if (typeof value === 'string' && value !== '')
          return { ...rest, sealed: await this.sealer.seal(value, variableContext(site.id, v.name)) };
        if (!sealed) throw new Error(`the secret variable ${v.name} has neither a value nor a sealed one`);
        return { ...rest, sealed };
      }),
    );
    return { ...site, buildSettings: { ...site.buildSettings, environmentVariables } };
  }

  /**
   * Opens sealed variable values of the site (a deploy's copies, say):
   * name → value. Each opens only under its own site and name.
   */
  async openVariables(siteId: string, sealed: Record<string, string>): Promise<Record<string, string>> {
    const entries = await Promise.all(
      Object.entries(sealed).map(async ([name, blob]) => [name, await this.sealer.open(blob, variableContext(siteId, name))] as const),
    );
    return Object.fromEntries(entries);
  }

  private siteItem(site: Site): Record<string, unknown> {
    return {
      pk: `SITE#${site.id}`,
      sk: 'SITE',
      gsi1pk: `SLUG#${site.slug}`,
      gsi1sk: 'SITE',
      gsi2pk: `TEAM#${site.teamId}`,
      gsi2sk: siteCursor(site),
      ...site,
    };
  }

  /**
   * Creates a site with its slug reserved in one transaction. Without a
   * slug it gets a fresh one (retrying on the rare collision); the name
   * defaults to the slug.
   */
  async create(input: NewSite): Promise<Site> {
    for (let attempt = 0; ; attempt++) {
      const slug = input.slug ?? generateSlug();
      const site: Site = await this.sealed({
        ...input,
        id: newId(),
        createdAt: this.now().toISOString(),
        slug,
        name: input.name ?? slug,
        version: 1,
      });
      try {
        await this.writing(site.id, () =>
          this.db.doc.send(
            new TransactWriteCommand({
              TransactItems: [
                { Put: { TableName: this.table, Item: this.siteItem(site), ConditionExpression: 'attribute_not_exists(pk)' } },
                {
                  Put: {
                    TableName: this.table,
                    Item: { pk: `SLUG#${slug}`, sk: 'SLUG', siteId: site.id },
                    ConditionExpression: 'attribute_not_exists(pk)',
                  },
                },
              ],
            }),
          ),
        );
        return site;
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        if (input.slug !== undefined) throw new SlugTakenError(input.slug);
        if (attempt >= MAX_ATTEMPTS) throw new ConflictError('could not find a free slug');
      }
    }
  }

  /**
   * Runs a write of the site (or of a new one), then forgets it and every
   * remembered page of sites, whether the write succeeded or not.
   */
  async writing<T>(siteId: string, write: () => Promise<T>): Promise<T> {
    return this.pages.writing('all', () => this.recent.writing([siteId], write));
  }

  /**
   * The site as read at most RECENT_READS_MS ago, or since this process's
   * last write of it (recent-reads.ts): for reads that show it, never for
   * one that decides a write.
   */
  async getRecent(id: string): Promise<Site | undefined> {
    return this.recent.through(id, () => this.getById(id));
  }

  /** getBySlug for reads that show the site: the slug's site by getRecent, still carrying the slug; else as getBySlug. */
  async getRecentBySlug(slug: string): Promise<Site | undefined> {
    const known = this.slugIds.get(slug);
    if (known !== undefined) {
      const site = await this.getRecent(known);
      if (site?.slug === slug) return site;
    }
    const mark = this.recent.mark();
    const site = await this.getBySlug(slug);
    if (site) this.recent.keep(site.id, site, mark);
    return site;
  }

  /** listByTeam for reads that show the page, with the rule of getRecent; its sites serve getRecent too. */
  async listRecentByTeam(teamId: string, limit: number, after?: string): Promise<Page<Site>> {
    const key = `${teamId}\n${limit}\n${after ?? ''}`;
    // Through the shared path: concurrent reads of the page share one Query, and a page read all the time is re-read ahead of its end.
    const page = await this.pages.through(key, async () => {
      const siteMark = this.recent.mark();
      const read = await this.listByTeam(teamId, limit, after);
      for (const site of read.items) this.recent.keep(site.id, site, siteMark);
      return read;
    });
    return page!;
  }

  async getById(id: string): Promise<Site | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `SITE#${id}`, sk: 'SITE' }, ConsistentRead: true }),
    );
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /**
   * By the slug's reservation, read consistently: a site renamed a moment
   * ago answers to its new slug. Which site a slug named is remembered
   * (SLUG_IDS_KEPT_MS), but the answer is always the site read
   * consistently and still carrying the slug: when it no longer does
   * (renamed, deleted), the reservation is read afresh.
   */
  async getBySlug(slug: string): Promise<Site | undefined> {
    const known = this.slugIds.get(slug);
    if (known !== undefined) {
      const site = await this.getById(known);
      if (site?.slug === slug) return site;
      this.slugIds.delete(slug);
    }
    const reservation = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `SLUG#${slug}`, sk: 'SLUG' }, ConsistentRead: true }),
    );
    const siteId = reservation.Item?.siteId as string | undefined;
    if (!siteId) return undefined;
    const site = await this.getById(siteId);
    if (site?.slug !== slug) return undefined;
    this.slugIds.set(slug, siteId);
    return site;
  }

  /** A page of the team's sites in creation order (oldest first, then by id), after the cursor `after`. */
  async listByTeam(teamId: string, limit: number, after?: string): Promise<Page<Site>> {
    const gsi2pk = `TEAM#${teamId}`;
    const afterId = after?.slice(after.lastIndexOf('#') + 1);
    const page = await queryPage(
      this.db,
      {
        TableName: this.table,
        IndexName: 'gsi2',
        KeyConditionExpression: 'gsi2pk = :team',
        ExpressionAttributeValues: { ':team': gsi2pk },
      },
      limit,
      after === undefined ? undefined : { gsi2pk, gsi2sk: after, pk: `SITE#${afterId}`, sk: 'SITE' },
    );
    return { items: page.items.map(fromItem), more: page.more };
  }

  /**
   * Applies `change` to the team's site and writes the result, conditioned
   * on the version read (retrying when another write got there first). A
   * new slug moves the reservation in the same transaction. Undefined when
   * the site does not exist or belongs to another team.
   */
  async update(id: string, teamId: string, change: (site: Site) => Site | Promise<Site>): Promise<Site | undefined> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.getById(id);
      if (!current || current.teamId !== teamId) return undefined;
      const proposed = await change(current);
      const next: Site = await this.sealed({
        ...proposed,
        id: current.id,
        teamId: current.teamId,
        createdAt: current.createdAt,
        createdBy: current.createdBy,
        updatedAt: this.now().toISOString(),
        version: (current.version ?? 0) + 1,
      });
      const versionCondition =
        current.version === undefined
          ? { ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(version)' }
          : { ConditionExpression: 'version = :version', ExpressionAttributeValues: { ':version': current.version } };
      const items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']> = [
        { Put: { TableName: this.table, Item: this.siteItem(next), ...versionCondition } },
      ];
      if (next.slug !== current.slug) {
        items.push(
          {
            Delete: {
              TableName: this.table,
              Key: { pk: `SLUG#${current.slug}`, sk: 'SLUG' },
              ConditionExpression: 'siteId = :id',
              ExpressionAttributeValues: { ':id': id },
            },
          },
          {
            Put: {
              TableName: this.table,
              Item: { pk: `SLUG#${next.slug}`, sk: 'SLUG', siteId: id },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        );
      }
      try {
        await this.writing(id, () => this.db.doc.send(new TransactWriteCommand({ TransactItems: items })));
        return next;
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        const reasons = err.CancellationReasons ?? [];
        if (reasons[2]?.Code === 'ConditionalCheckFailed') throw new SlugTakenError(next.slug);
        if (attempt >= MAX_ATTEMPTS) throw new ConflictError('the site keeps changing under this update; try again');
      }
    }
  }

  /** Points the site at its newest deploy (a new version, so a concurrent update() re-reads instead of writing the old pointer back). */
  async setLatestDeploy(siteId: string, deployId: string): Promise<void> {
    await this.setPointer(siteId, 'latestDeployId', deployId, 'attribute_exists(pk)');
  }

  /**
   * Publishes a deploy. With `onlyIfNewer` (a deploy that just finished) it
   * does not replace a newer deploy already published: deploy ids sort by
   * creation. Returns whether the deploy is now the published one.
   */
  async publishDeploy(siteId: string, deployId: string, options: { onlyIfNewer: boolean }): Promise<boolean> {
    const condition = options.onlyIfNewer
      ? 'attribute_exists(pk) AND (attribute_not_exists(publishedDeployId) OR attribute_type(publishedDeployId, :nullType) OR publishedDeployId <= :value)'
      : 'attribute_exists(pk)';
    return this.setPointer(siteId, 'publishedDeployId', deployId, condition, options.onlyIfNewer ? { ':nullType': 'NULL' } : {});
  }

  private async setPointer(
    siteId: string,
    field: 'latestDeployId' | 'publishedDeployId',
    deployId: string,
    condition: string,
    values: Record<string, unknown> = {},
  ): Promise<boolean> {
    return this.writing(siteId, () =>
      writtenIf(
        this.db.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk: `SITE#${siteId}`, sk: 'SITE' },
            UpdateExpression: `SET #field = :value, version = if_not_exists(version, :zero) + :one`,
            ConditionExpression: condition,
            ExpressionAttributeNames: { '#field': field },
            ExpressionAttributeValues: { ':value': deployId, ':zero': 0, ':one': 1, ...values },
          }),
        ),
      ),
    );
  }

  /** Deletes the team's site and releases its slug in one transaction; the deleted site, or undefined. */
  async delete(id: string, teamId: string): Promise<Site | undefined> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.getById(id);
      if (!current || current.teamId !== teamId) return undefined;
      try {
        await this.writing(id, () =>
          this.db.doc.send(
            new TransactWriteCommand({
              TransactItems: [
                {
                  Delete: {
                    TableName: this.table,
                    Key: { pk: `SITE#${id}`, sk: 'SITE' },
                    ConditionExpression: 'teamId = :team AND slug = :slug',
                    ExpressionAttributeValues: { ':team': teamId, ':slug': current.slug },
                  },
                },
                {
                  Delete: {
                    TableName: this.table,
                    Key: { pk: `SLUG#${current.slug}`, sk: 'SLUG' },
                    ConditionExpression: 'siteId = :id',
                    ExpressionAttributeValues: { ':id': id },
                  },
                },
              ],
            }),
          ),
        );
        return current;
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        if (attempt >= MAX_ATTEMPTS) throw new ConflictError('the site keeps changing under this delete; try again');
      }
    }
  }
}

function fromItem(item: Record<string, unknown>): Site {
  return withoutKeys<Site>(item);
}
