/**
 * What the CDN holds of each site's own domain where a domain is a tenant of
 * the CDN (in AWS, a CloudFront distribution tenant), in the sites table:
 *
 *   EDGE#<name> / TENANT   the tenant's id, the site it serves, its phase   gsi1: EDGE#<phase> / <since>#<name>
 *
 * Phases: `issuing` (asked for, its certificate not issued yet), `active`
 * (serving), `releasing` (let go: disabled, to be deleted). Only the two
 * that wait on the CDN are in gsi1, which the minute tick reads, oldest
 * first; an active tenant leaves the index.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Database } from './dynamo.js';
import { withoutKeys } from './tables.js';

export type EdgeTenantPhase = 'issuing' | 'active' | 'releasing';

export interface EdgeTenant {
  domain: string;
  siteId: string;
  /** The CDN's id for it, once it has made one. */
  tenantId?: string | null;
  phase: EdgeTenantPhase;
  /** When it entered its phase (ISO 8601). */
  since: string;
}

export class EdgeTenantStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private key(domain: string) {
    return { pk: `EDGE#${domain}`, sk: 'TENANT' };
  }

  async get(domain: string): Promise<EdgeTenant | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.db.tables.sites, Key: this.key(domain), ConsistentRead: true }));
    return out.Item ? withoutKeys<EdgeTenant>(out.Item) : undefined;
  }

  /** Writes the record as given (its phase's `since` now unless given). */
  async put(record: Omit<EdgeTenant, 'since'> & { since?: string }): Promise<EdgeTenant> {
    const item: EdgeTenant = { ...record, since: record.since ?? this.now().toISOString() };
    const index = item.phase === 'active' ? {} : { gsi1pk: `EDGE#${item.phase}`, gsi1sk: `${item.since}#${item.domain}` };
    await this.db.doc.send(new PutCommand({ TableName: this.db.tables.sites, Item: { ...this.key(item.domain), ...index, ...item } }));
    return item;
  }

  async delete(domain: string): Promise<void> {
    await this.db.doc.send(new DeleteCommand({ TableName: this.db.tables.sites, Key: this.key(domain) }));
  }

  /** Up to `limit` tenants in `phase`, the longest waiting first. */
  async inPhase(phase: Exclude<EdgeTenantPhase, 'active'>, limit: number): Promise<EdgeTenant[]> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.db.tables.sites,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': `EDGE#${phase}` },
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map((i) => withoutKeys<EdgeTenant>(i));
  }
}
