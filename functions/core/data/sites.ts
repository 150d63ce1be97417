/**
 * Sites, in the sites table:
 *   SITE#<id> / SITE     the site      gsi1: SLUG#<slug> / SITE   gsi2: TEAM#<teamId> / <createdAt>#<id>
 *   SLUG#<slug> / SLUG   reserves a slug so two sites can never share one
 */
import { GetCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { newId } from '../ids.js';
import { ConflictError } from './accounts.js';
import type { Database } from './dynamo.js';
import { withoutKeys } from './tables.js';

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
}

export type NewSite = Omit<Site, 'id' | 'createdAt' | 'slug' | 'name'> & { name?: string; slug?: string };

const ADJECTIVES = ['hidden', 'quiet', 'bold', 'amber', 'silent', 'rapid', 'misty', 'lucky', 'gentle', 'brave', 'crimson', 'golden', 'frosty', 'wild', 'calm', 'bright'];
const NOUNS = ['waterfall', 'meadow', 'river', 'canyon', 'forest', 'harbor', 'summit', 'glacier', 'island', 'valley', 'prairie', 'lagoon', 'ridge', 'cairn', 'delta', 'grove'];

export function generateSlug(random: () => number = Math.random): string {
  const pick = (list: string[]) => list[Math.floor(random() * list.length)]!;
  return `${pick(ADJECTIVES)}-${pick(NOUNS)}-${1000 + Math.floor(random() * 9000)}`;
}

export class SiteStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.sites;
  }

  /** Creates a site with a fresh slug (retrying on the rare collision); name defaults to the slug. */
  async create(input: NewSite): Promise<Site> {
    for (let attempt = 0; ; attempt++) {
      const slug = input.slug ?? generateSlug();
      const site: Site = {
        ...input,
        id: newId(),
        createdAt: this.now().toISOString(),
        slug,
        name: input.name ?? slug,
      };
      try {
        await this.db.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: this.table,
                  Item: {
                    pk: `SITE#${site.id}`,
                    sk: 'SITE',
                    gsi1pk: `SLUG#${slug}`,
                    gsi1sk: 'SITE',
                    gsi2pk: `TEAM#${site.teamId}`,
                    gsi2sk: `${site.createdAt}#${site.id}`,
                    ...site,
                  },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
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
        if (input.slug !== undefined) throw new ConflictError(`slug "${input.slug}" is taken`);
        if (attempt >= 5) throw new ConflictError('could not find a free slug');
      }
    }
  }

  async getById(id: string): Promise<Site | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: { pk: `SITE#${id}`, sk: 'SITE' } }));
    return out.Item ? fromItem(out.Item) : undefined;
  }

  async getBySlug(slug: string): Promise<Site | undefined> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        ExpressionAttributeValues: { ':pk': `SLUG#${slug}` },
        Limit: 1,
      }),
    );
    const item = out.Items?.[0];
    return item ? fromItem(item) : undefined;
  }
}

function fromItem(item: Record<string, unknown>): Site {
  return withoutKeys<Site>(item);
}
