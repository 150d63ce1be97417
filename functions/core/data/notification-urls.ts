/**
 * A site's notification URLs, in the sites table beside its other secrets
 * (data/site-secrets.ts), apart from the site item:
 *
 *   SITE#<siteId> / NOTIFYURL#<id>   url, events, secret (sealed), createdAt
 *
 * The signing secret is sealed, not hashed: each delivery is signed with
 * the secret itself. It is sealed under a context naming the site and the
 * URL, so a sealed value copied to another URL or site does not open.
 */
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SecretSealer } from '../auth/secrets.js';
import { newSortableId } from '../ids.js';
import type { Database } from './dynamo.js';
import { queryAll } from './pages.js';
import { writtenIf } from './tables.js';

export const DEPLOY_EVENTS = ['CREATED', 'BUILDING', 'FAILED', 'SUCCEEDED', 'PUBLISHED'] as const;
export type DeployEvent = (typeof DEPLOY_EVENTS)[number];

export interface NotificationUrl {
  id: string;
  siteId: string;
  url: string;
  /** The events it receives (all of them unless narrowed when it was added). */
  events: DeployEvent[];
  createdAt: string;
}

const PREFIX = 'NOTIFYURL#';
const secretContext = (siteId: string, id: string) => `site-notification:${siteId}:${id}`;

export class NotificationUrlStore {
  constructor(
    private readonly db: Database,
    private readonly sealer: SecretSealer,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.sites;
  }

  private key(siteId: string, id: string) {
    return { pk: `SITE#${siteId}`, sk: `${PREFIX}${id}` };
  }

  /** A new URL; `secret` is known only to the caller (and sealed here) from now on. */
  async add(siteId: string, init: { url: string; events: DeployEvent[]; secret: string }): Promise<NotificationUrl> {
    const id = newSortableId(this.now().getTime());
    const record: NotificationUrl = { id, siteId, url: init.url, events: init.events, createdAt: this.now().toISOString() };
    const secret = await this.sealer.seal(init.secret, secretContext(siteId, id));
    await this.db.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: { ...this.key(siteId, id), ...record, secret },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return record;
  }

  /** The site's URLs, oldest first. */
  async list(siteId: string): Promise<NotificationUrl[]> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': `SITE#${siteId}`, ':prefix': PREFIX },
      ConsistentRead: true,
    });
    return items.map(urlOf);
  }

  async get(siteId: string, id: string): Promise<NotificationUrl | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: this.key(siteId, id), ConsistentRead: true }));
    return out.Item ? urlOf(out.Item) : undefined;
  }

  /** The URL and its secret, opened (for a delivery only); undefined once the URL is removed. */
  async withSecret(siteId: string, id: string): Promise<{ url: NotificationUrl; secret: string } | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: this.key(siteId, id), ConsistentRead: true }));
    const item = out.Item;
    if (!item || typeof item.secret !== 'string') return undefined;
    return { url: urlOf(item), secret: await this.sealer.open(item.secret, secretContext(siteId, id)) };
  }

  /** False when the site has no such URL. */
  async remove(siteId: string, id: string): Promise<boolean> {
    return writtenIf(
      this.db.doc.send(
        new DeleteCommand({ TableName: this.table, Key: this.key(siteId, id), ConditionExpression: 'attribute_exists(pk)' }),
      ),
    );
  }

  async deleteAllOfSite(siteId: string): Promise<void> {
    for (const url of await this.list(siteId)) await this.remove(siteId, url.id);
  }
}

function urlOf(item: Record<string, unknown>): NotificationUrl {
  return {
    id: item.id as string,
    siteId: item.siteId as string,
    url: item.url as string,
    events: Array.isArray(item.events) ? (item.events as DeployEvent[]) : [...DEPLOY_EVENTS],
    createdAt: item.createdAt as string,
  };
}
