/**
 * Sites, in the sites table:
 *   SITE#<id> / SITE     the site      gsi1: SLUG#<slug> / SITE   gsi2: TEAM#<teamId> / <createdAt>#<id>
 *   SLUG#<slug> / SLUG   reserves a slug so two sites can never share one
 *
 * A site's name is its slug. Renaming moves the reservation in the same
 * transaction that rewrites the site, so a slug always names at most one
 * site and a renamed site answers to its new slug at once. Updates are
 * optimistic: each write is conditioned on the `version` it read.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { newId } from '../ids.js';
import { ConflictError } from './errors.js';
import type { Database } from './dynamo.js';
import { queryPage, type Page } from './pages.js';
import { withoutKeys, writtenIf } from './tables.js';

export type SitePlatform = 'ipfs' | 'alt';

export interface EnvironmentVariable {
  name: string;
  value?: string | null;
}

export interface BuildSettings {
  buildCommand?: string | null;
  baseDirectoryPath?: string | null;
  publishDirectoryPath?: string | null;
  dockerImage?: string | null;
  environmentVariables: EnvironmentVariable[];
}

export type SiteSource =
  | { kind: 'repository'; type: 'GIT_HOST'; url: string; branch: string }
  | { kind: 'ipfs'; cid?: string | null };

export interface DeploySettings {
  autoPublishing: boolean;
  prDeployPreviews: boolean;
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

const ADJECTIVES = ['hidden', 'quiet', 'bold', 'amber', 'silent', 'rapid', 'misty', 'lucky', 'gentle', 'brave', 'crimson', 'golden', 'frosty', 'wild', 'calm', 'bright'];
const NOUNS = ['waterfall', 'meadow', 'river', 'canyon', 'forest', 'harbor', 'summit', 'glacier', 'island', 'valley', 'prairie', 'lagoon', 'ridge', 'cairn', 'delta', 'grove'];

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

export class SiteStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.sites;
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
      const site: Site = {
        ...input,
        id: newId(),
        createdAt: this.now().toISOString(),
        slug,
        name: input.name ?? slug,
        version: 1,
      };
      try {
        await this.db.doc.send(
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
        );
        return site;
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        if (input.slug !== undefined) throw new SlugTakenError(input.slug);
        if (attempt >= MAX_ATTEMPTS) throw new ConflictError('could not find a free slug');
      }
    }
  }

  async getById(id: string): Promise<Site | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `SITE#${id}`, sk: 'SITE' }, ConsistentRead: true }),
    );
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /** By the slug's reservation, read consistently: a site renamed a moment ago answers to its new slug. */
  async getBySlug(slug: string): Promise<Site | undefined> {
    const reservation = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `SLUG#${slug}`, sk: 'SLUG' }, ConsistentRead: true }),
    );
    const siteId = reservation.Item?.siteId as string | undefined;
    if (!siteId) return undefined;
    const site = await this.getById(siteId);
    return site?.slug === slug ? site : undefined;
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
      const next: Site = {
        ...proposed,
        id: current.id,
        teamId: current.teamId,
        createdAt: current.createdAt,
        createdBy: current.createdBy,
        updatedAt: this.now().toISOString(),
        version: (current.version ?? 0) + 1,
      };
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
        await this.db.doc.send(new TransactWriteCommand({ TransactItems: items }));
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

  private async setPointer(siteId: string, field: 'latestDeployId' | 'publishedDeployId', deployId: string, condition: string, values: Record<string, unknown> = {}): Promise<boolean> {
    return writtenIf(
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
    );
  }

  /** Deletes the team's site and releases its slug in one transaction; the deleted site, or undefined. */
  async delete(id: string, teamId: string): Promise<Site | undefined> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.getById(id);
      if (!current || current.teamId !== teamId) return undefined;
      try {
        await this.db.doc.send(
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
