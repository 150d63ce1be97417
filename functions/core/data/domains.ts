/**
 * Sites' own domains, in the sites table:
 *
 *   SITE#<siteId> / DOMAIN#<name>   the site's domain: its state, its challenge token, whether it is primary
 *   SITE#<siteId> / DOMAINCOUNT     how many the site has (the limit is checked in the same transaction)
 *   TEAM#<teamId> / DOMAINCOUNT     how many all the team's sites have (likewise)
 *   DOMAIN#<name> / DOMAIN          the claim: which site the name serves (written when it is verified)
 *   DOMAIN#<name> / CERT            its certificate and sealed private key   gsi1: CERTS / <notAfter>#<name>
 *   ACME#<directory> / ACCOUNT      the ACME account's sealed key
 *   DOMAIN#<name> / DNSLINK         its DNSLink record is to be written again  gsi1: DNSLINK / <due>#<name>
 *
 * A name may be added to several sites, but only one holds its claim: a
 * conditional write keyed by the name, so two sites never serve one host.
 * Taking a claim held by another site needs the other's id in the
 * condition (the caller checked the TXT proof first), so a claim moved
 * meanwhile fails the write rather than being taken from its new holder.
 * Certificates are listed by expiry through gsi1, which renewal reads.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SecretSealer } from '../auth/secrets.js';
import type { Database } from './dynamo.js';
import { queryAll } from './pages.js';
import { withoutKeys, writtenIf } from './tables.js';
import { ConflictError, countedUnder, TRANSACTION_CONFLICT_RETRY } from './errors.js';
import { retry } from '../retry.js';

export const DOMAIN_STATUSES = ['PENDING_DNS', 'VERIFYING', 'ISSUING_CERTIFICATE', 'ACTIVE', 'FAILED'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];

export interface SiteDomain {
  domain: string;
  siteId: string;
  teamId: string;
  status: DomainStatus;
  /** Why it FAILED (or what verification found lacking). */
  reason?: string | null;
  /** The value its TXT challenge record must carry: proof of ownership when another site holds the name. */
  token: string;
  /** Of an apex and its `www` both on the site, the primary is served and the other redirects to it. */
  primary: boolean;
  createdAt: string;
  updatedAt: string;
  verifiedAt?: string | null;
  /** When the live certificate expires (none without one). */
  certificateExpiresAt?: string | null;
}

export interface DomainClaim {
  domain: string;
  siteId: string;
}

/** A domain's certificate, its key opened (only ever for the TLS listener). */
export interface DomainCertificate {
  domain: string;
  siteId: string;
  certificatePem: string;
  privateKeyPem: string;
  notAfter: string;
  issuedAt: string;
}

export class DomainLimitError extends ConflictError {
  override name = 'DomainLimitError';
}

const PREFIX = 'DOMAIN#';
const certificateContext = (domain: string) => `domain-certificate:${domain}`;
const accountContext = (directoryUrl: string) => `acme-account:${directoryUrl}`;

export class DomainStore {
  constructor(
    private readonly db: Database,
    private readonly sealer: SecretSealer,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.sites;
  }

  private key(siteId: string, domain: string) {
    return { pk: `SITE#${siteId}`, sk: `${PREFIX}${domain}` };
  }

  private counterKey(siteId: string) {
    return { pk: `SITE#${siteId}`, sk: 'DOMAINCOUNT' };
  }

  private teamCounterKey(teamId: string) {
    return { pk: `TEAM#${teamId}`, sk: 'DOMAINCOUNT' };
  }

  private claimKey(domain: string) {
    return { pk: `${PREFIX}${domain}`, sk: 'DOMAIN' };
  }

  private certificateKey(domain: string) {
    return { pk: `${PREFIX}${domain}`, sk: 'CERT' };
  }

  /**
   * A new domain of the site, unless it has it already (ConflictError), the
   * site has `limits.perSite` or its team `limits.perTeam` (DomainLimitError).
   * Both counters and the record are one transaction, so a burst of adds
   * across a team's sites never passes either limit.
   */
  async add(record: Omit<SiteDomain, 'createdAt' | 'updatedAt'>, limits: { perSite: number; perTeam: number }): Promise<SiteDomain> {
    const at = this.now().toISOString();
    const item: SiteDomain = { ...record, createdAt: at, updatedAt: at };
    const counted = (Key: Record<string, string>, max: number) => countedUnder(this.table, Key, max);
    const send = () =>
      this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            counted(this.counterKey(record.siteId), limits.perSite),
            counted(this.teamCounterKey(record.teamId), limits.perTeam),
            {
              Put: {
                TableName: this.table,
                Item: { ...this.key(record.siteId, record.domain), ...item },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
          ],
        }),
      );
    try {
      await retry(send, TRANSACTION_CONFLICT_RETRY);
    } catch (err) {
      if ((err as Error).name !== 'TransactionCanceledException') throw err;
      const reasons = (err as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons ?? [];
      if (reasons[2]?.Code === 'ConditionalCheckFailed') throw new ConflictError(`${record.domain} is already a domain of this site`);
      if (reasons[0]?.Code === 'ConditionalCheckFailed')
        throw new DomainLimitError(`a site has at most ${limits.perSite} domains; remove one first`);
      if (reasons[1]?.Code === 'ConditionalCheckFailed')
        throw new DomainLimitError(`a team has at most ${limits.perTeam} domains across its sites; remove one first`);
      throw err;
    }
    return item;
  }

  async get(siteId: string, domain: string): Promise<SiteDomain | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: this.key(siteId, domain), ConsistentRead: true }));
    return out.Item ? withoutKeys<SiteDomain>(out.Item) : undefined;
  }

  /** The site's domains, by name (at most the per-site limit of them). */
  async list(siteId: string): Promise<SiteDomain[]> {
    const items = await queryAll(this.db, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': `SITE#${siteId}`, ':prefix': PREFIX },
      ConsistentRead: true,
    });
    return items.map((i) => withoutKeys<SiteDomain>(i));
  }

  /** Which site serves the name, if one does. */
  async claimOf(domain: string): Promise<DomainClaim | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: this.claimKey(domain), ConsistentRead: true }));
    return out.Item ? { domain, siteId: out.Item.siteId as string } : undefined;
  }

  /**
   * Sets the domain's status (and reason, and any of `also`), when the site
   * still has it and, given `from`, its status is one of those. False
   * otherwise: removed meanwhile, or moved on by another request.
   */
  async setStatus(
    siteId: string,
    domain: string,
    status: DomainStatus,
    reason: string | null,
    options: { from?: DomainStatus[]; also?: Partial<Pick<SiteDomain, 'verifiedAt' | 'certificateExpiresAt'>> } = {},
  ): Promise<boolean> {
    const names: Record<string, string> = { '#s': 'status', '#r': 'reason', '#u': 'updatedAt' };
    const values: Record<string, unknown> = { ':s': status, ':r': reason, ':u': this.now().toISOString() };
    const sets = ['#s = :s', '#r = :r', '#u = :u'];
    for (const [k, v] of Object.entries(options.also ?? {})) {
      names[`#${k}`] = k;
      values[`:${k}`] = v;
      sets.push(`#${k} = :${k}`);
    }
    let condition = 'attribute_exists(pk)';
    if (options.from) {
      condition += ` AND #s IN (${options.from.map((_, i) => `:f${i}`).join(', ')})`;
      options.from.forEach((f, i) => (values[`:f${i}`] = f));
    }
    return writtenIf(
      this.db.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: this.key(siteId, domain),
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      ),
    );
  }

  /**
   * The name's claim taken by the site with its status set, in one
   * transaction: when no site holds it, the site holds it already, or
   * `takeFrom` (the holder read before, whose proof was checked) still
   * does. The former holder's domain, if it has one, is marked FAILED in
   * the same transaction. False when the claim or the domain moved meanwhile.
   */
  async claim(siteId: string, domain: string, status: DomainStatus, takeFrom?: { siteId: string; hasDomain: boolean }): Promise<boolean> {
    const at = this.now().toISOString();
    const items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']> = [
      {
        Put: {
          TableName: this.table,
          Item: { ...this.claimKey(domain), domain, siteId },
          ConditionExpression: takeFrom ? 'siteId = :from' : 'attribute_not_exists(pk) OR siteId = :me',
          ExpressionAttributeValues: takeFrom ? { ':from': takeFrom.siteId } : { ':me': siteId },
        },
      },
      {
        Update: {
          TableName: this.table,
          Key: this.key(siteId, domain),
          UpdateExpression: 'SET #s = :s, #r = :r, #u = :u, #v = :u',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#s': 'status', '#r': 'reason', '#u': 'updatedAt', '#v': 'verifiedAt' },
          ExpressionAttributeValues: { ':s': status, ':r': null, ':u': at },
        },
      },
    ];
    if (takeFrom?.hasDomain)
      items.push({
        Update: {
          TableName: this.table,
          Key: this.key(takeFrom.siteId, domain),
          UpdateExpression: 'SET #s = :s, #r = :r, #u = :u, #c = :none',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#s': 'status', '#r': 'reason', '#u': 'updatedAt', '#c': 'certificateExpiresAt' },
          ExpressionAttributeValues: {
            ':s': 'FAILED',
            ':r': 'another site proved it owns this domain (its TXT challenge record) and serves it now',
            ':u': at,
            ':none': null,
          },
        },
      });
    return writtenIf(this.db.doc.send(new TransactWriteCommand({ TransactItems: items })));
  }

  /** Removes the site's domain, and its claim and certificate if the site holds them. False when the site has no such domain. */
  async remove({ siteId, teamId, domain }: Pick<SiteDomain, 'siteId' | 'teamId' | 'domain'>): Promise<boolean> {
    const minusOne = (Key: Record<string, string>) => ({
      Update: {
        TableName: this.table,
        Key,
        UpdateExpression: 'ADD #n :minus',
        ExpressionAttributeNames: { '#n': 'count' },
        ExpressionAttributeValues: { ':minus': -1 },
      },
    });
    for (let attempt = 0; attempt < 5; attempt++) {
      const claim = await this.claimOf(domain);
      const held = claim?.siteId === siteId;
      const items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']> = [
        { Delete: { TableName: this.table, Key: this.key(siteId, domain), ConditionExpression: 'attribute_exists(pk)' } },
        minusOne(this.counterKey(siteId)),
        minusOne(this.teamCounterKey(teamId)),
        held
          ? {
              Delete: {
                TableName: this.table,
                Key: this.claimKey(domain),
                ConditionExpression: 'siteId = :me',
                ExpressionAttributeValues: { ':me': siteId },
              },
            }
          : {
              ConditionCheck: {
                TableName: this.table,
                Key: this.claimKey(domain),
                ConditionExpression: 'attribute_not_exists(pk) OR siteId <> :me',
                ExpressionAttributeValues: { ':me': siteId },
              },
            },
      ];
      if (held) items.push({ Delete: { TableName: this.table, Key: this.certificateKey(domain) } });
      try {
        await this.db.doc.send(new TransactWriteCommand({ TransactItems: items }));
        return true;
      } catch (err) {
        if ((err as Error).name !== 'TransactionCanceledException') throw err;
        const reasons = (err as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons ?? [];
        if (reasons[0]?.Code === 'ConditionalCheckFailed') return false;
        // The claim changed between the read and the write: read it again.
      }
    }
    throw new ConflictError(`${domain} keeps changing under this removal; try again`);
  }

  /** Makes `domain` the primary of its apex/`www` pair on the site (`pair`, if the site has it, stops being). */
  async setPrimary(siteId: string, domain: string, pair: string | undefined): Promise<boolean> {
    const at = this.now().toISOString();
    const set = (name: string, primary: boolean) => ({
      Update: {
        TableName: this.table,
        Key: this.key(siteId, name),
        UpdateExpression: 'SET #p = :p, #u = :u',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#p': 'primary', '#u': 'updatedAt' },
        ExpressionAttributeValues: { ':p': primary, ':u': at },
      },
    });
    return writtenIf(
      this.db.doc.send(new TransactWriteCommand({ TransactItems: pair ? [set(domain, true), set(pair, false)] : [set(domain, true)] })),
    );
  }

  /** Every domain of a deleted site goes, with the claims and certificates it held. */
  async deleteAllOfSite(siteId: string): Promise<void> {
    for (const d of await this.list(siteId)) await this.remove(d);
    await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: this.counterKey(siteId) }));
  }

  /** Keeps the domain's certificate (its key sealed) while the site still holds the name; false when it does not. */
  async putCertificate(cert: DomainCertificate): Promise<boolean> {
    const privateKey = await this.sealer.seal(cert.privateKeyPem, certificateContext(cert.domain));
    return writtenIf(
      this.db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              ConditionCheck: {
                TableName: this.table,
                Key: this.claimKey(cert.domain),
                ConditionExpression: 'siteId = :me',
                ExpressionAttributeValues: { ':me': cert.siteId },
              },
            },
            {
              Put: {
                TableName: this.table,
                Item: {
                  ...this.certificateKey(cert.domain),
                  gsi1pk: 'CERTS',
                  gsi1sk: `${cert.notAfter}#${cert.domain}`,
                  domain: cert.domain,
                  siteId: cert.siteId,
                  certificatePem: cert.certificatePem,
                  privateKey,
                  notAfter: cert.notAfter,
                  issuedAt: cert.issuedAt,
                },
              },
            },
          ],
        }),
      ),
    );
  }

  /** The domain's certificate with its key opened: for the TLS listener only, never an API. */
  async certificateOf(domain: string): Promise<DomainCertificate | undefined> {
    const out = await this.db.doc.send(new GetCommand({ TableName: this.table, Key: this.certificateKey(domain), ConsistentRead: true }));
    const item = out.Item;
    if (!item || typeof item.privateKey !== 'string') return undefined;
    return {
      domain,
      siteId: item.siteId as string,
      certificatePem: item.certificatePem as string,
      privateKeyPem: await this.sealer.open(item.privateKey, certificateContext(domain)),
      notAfter: item.notAfter as string,
      issuedAt: item.issuedAt as string,
    };
  }

  /** Certificates expiring before `before`, soonest first, at most `limit` (renewal's work list). */
  async certificatesExpiringBefore(before: Date, limit: number): Promise<Array<{ domain: string; siteId: string; notAfter: string }>> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :c AND gsi1sk < :b',
        ExpressionAttributeValues: { ':c': 'CERTS', ':b': before.toISOString() },
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map((i) => ({ domain: i.domain as string, siteId: i.siteId as string, notAfter: i.notAfter as string }));
  }

  /** Marks the name's DNSLink record to be written again from `due` (a failed write: the scheduled work retries it). */
  async putDnsLinkRetry(domain: string, due: Date, attempt: number): Promise<void> {
    await this.db.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: { pk: `${PREFIX}${domain}`, sk: 'DNSLINK', gsi1pk: 'DNSLINK', gsi1sk: `${due.toISOString()}#${domain}`, domain, attempt },
      }),
    );
  }

  async clearDnsLinkRetry(domain: string): Promise<void> {
    await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: { pk: `${PREFIX}${domain}`, sk: 'DNSLINK' } }));
  }

  /** Names whose DNSLink record is due to be written again, soonest first, at most `limit`. */
  async dnsLinkRetriesDue(now: Date, limit: number): Promise<Array<{ domain: string; attempt: number }>> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :d AND gsi1sk < :n',
        ExpressionAttributeValues: { ':d': 'DNSLINK', ':n': `${now.toISOString()}#~` },
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map((i) => ({ domain: i.domain as string, attempt: Number(i.attempt) || 1 }));
  }

  /** The ACME account's key, opened; undefined before the first account is made. */
  async acmeAccountKey(directoryUrl: string): Promise<string | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `ACME#${directoryUrl}`, sk: 'ACCOUNT' }, ConsistentRead: true }),
    );
    return typeof out.Item?.key === 'string' ? this.sealer.open(out.Item.key, accountContext(directoryUrl)) : undefined;
  }

  /** Keeps the account key unless one is kept already; the one kept is returned either way. */
  async keepAcmeAccountKey(directoryUrl: string, keyPem: string): Promise<string> {
    const sealed = await this.sealer.seal(keyPem, accountContext(directoryUrl));
    const put = await writtenIf(
      this.db.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { pk: `ACME#${directoryUrl}`, sk: 'ACCOUNT', key: sealed },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    return put ? keyPem : ((await this.acmeAccountKey(directoryUrl)) ?? keyPem);
  }
}
