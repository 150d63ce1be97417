/**
 * IPNS names: each site's signing key, and the latest signed record of
 * every name Cairn answers for, in the sites table:
 *
 *   SITE#<siteId> / IPNSKEY    name, key (sealed): the site's Ed25519 key
 *   IPNS#<name> / RECORD       record (the marshalled bytes), sequence, value, validUntil, ttlMs,
 *                              siteId (a site's own name) or expiresAt (a record PUT from elsewhere)
 *                              gsi1: IPNSREPUBLISH / <republishAt>#<name> (a site's own, for the tick)
 *
 * The key is sealed like the site's other secrets, under a context naming
 * the site, so a sealed key copied to another site does not open; nothing
 * but the signer (core/hosting/ipns-names.ts) opens it, and no API returns
 * it. The name is kept beside it in clear: it is public.
 *
 * A record is replaced only by one with a higher sequence, in one
 * conditional write: two publishes at once can never store two records
 * with the same sequence, and an older record sent again is refused. The
 * sequence is kept as a 20-digit decimal string (a uint64 fits), so the
 * condition compares strings of one length, as numbers compare.
 *
 * A record PUT from elsewhere (the routing API) is kept until its EOL or
 * 48 hours after it was stored, whichever is first (the table's time to
 * live deletes it in AWS, `expiresAt`; readers ignore an expired item until
 * then, as the local database deletes nothing): the Amino DHT keeps a
 * record 48 hours, and its publisher republishes it before that.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { SecretSealer } from '../auth/secrets.js';
import { TtlCache } from '../cache.js';
import type { Database } from './dynamo.js';
import { writtenIf } from './tables.js';

export interface HeldIpnsRecord {
  name: string;
  bytes: Uint8Array;
  sequence: bigint;
  value: string;
  /** The record's EOL (ms since the epoch). */
  validUntil: number;
  ttlMs: number;
  /** The site whose name it is; absent for a record PUT from elsewhere. */
  siteId?: string;
  updatedAt: string;
}

export interface SiteIpnsKey {
  name: string;
  /** The key (libp2p protobuf bytes), opened. */
  key: Uint8Array;
}

/** How long a record PUT from elsewhere is kept at most. */
export const FOREIGN_RECORD_KEPT_MS = 48 * 3600 * 1000;
const REPUBLISH_PK = 'IPNSREPUBLISH';
const KEY_SK = 'IPNSKEY';
const RECORD_SK = 'RECORD';
const keyContext = (siteId: string) => `site-ipns-key:${siteId}`;
const sequenceText = (sequence: bigint) => sequence.toString().padStart(20, '0');

/** How long a site's name is remembered, and that it has none yet. */
const NAMES_KEPT_MS = 10 * 60_000;
const NO_NAME_KEPT_MS = 1000;

export class IpnsNameStore {
  private readonly names = new TtlCache<string, { name: string | null }>(NAMES_KEPT_MS);

  constructor(
    private readonly db: Database,
    private readonly sealer: SecretSealer,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get table() {
    return this.db.tables.sites;
  }

  /**
   * The site's IPNS name, or undefined before its first publish made its
   * key. A site's name never changes once made, so it is remembered (its
   * deletion here forgets it); that there is none yet, for a second (a
   * publish in another process shows within it).
   */
  async nameOfSite(siteId: string): Promise<string | undefined> {
    const known = this.names.get(siteId);
    if (known !== undefined) return known.name ?? undefined;
    return this.readName(siteId);
  }

  private async readName(siteId: string): Promise<string | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: `SITE#${siteId}`, sk: KEY_SK },
        ProjectionExpression: '#n',
        ExpressionAttributeNames: { '#n': 'name' },
      }),
    );
    const name = typeof out.Item?.name === 'string' ? out.Item.name : undefined;
    this.names.set(siteId, { name: name ?? null }, name === undefined ? { ttl: NO_NAME_KEPT_MS } : {});
    return name;
  }

  /**
   * The site's key, made (by `make`) and kept sealed on first use. Two
   * first uses at once agree: the first write wins and the other reads it.
   */
  async siteKey(siteId: string, make: () => Promise<{ key: Uint8Array; name: string }>): Promise<SiteIpnsKey> {
    const read = async () => {
      const out = await this.db.doc.send(
        new GetCommand({ TableName: this.table, Key: { pk: `SITE#${siteId}`, sk: KEY_SK }, ConsistentRead: true }),
      );
      const item = out.Item;
      if (typeof item?.sealedKey !== 'string' || typeof item.name !== 'string') return undefined;
      return { name: item.name, key: Buffer.from(await this.sealer.open(item.sealedKey, keyContext(siteId)), 'base64') };
    };
    const held = await read();
    if (held) return held;
    const made = await make();
    const sealedKey = await this.sealer.seal(Buffer.from(made.key).toString('base64'), keyContext(siteId));
    const written = await writtenIf(
      this.db.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { pk: `SITE#${siteId}`, sk: KEY_SK, name: made.name, sealedKey, createdAt: this.now().toISOString() },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    if (written) return made;
    const other = await read();
    if (!other) throw new Error('the site IPNS key vanished as it was made');
    return other;
  }

  /** The record held for `name`, whether or not its EOL has passed; undefined when none is (or a PUT one was dropped). */
  async get(name: string): Promise<HeldIpnsRecord | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: `IPNS#${name}`, sk: RECORD_SK }, ConsistentRead: true }),
    );
    const item = out.Item;
    if (!item || !(item.record instanceof Uint8Array)) return undefined;
    if (typeof item.expiresAt === 'number' && item.expiresAt * 1000 <= this.now().getTime()) return undefined;
    return {
      name,
      bytes: item.record,
      sequence: BigInt(item.sequence as string),
      value: item.value as string,
      validUntil: item.validUntil as number,
      ttlMs: item.ttlMs as number,
      ...(typeof item.siteId === 'string' ? { siteId: item.siteId } : {}),
      updatedAt: item.updatedAt as string,
    };
  }

  /**
   * Stores `record` for `name` if its sequence is higher than the held
   * one's (or none is held): true when stored, false when a record with
   * this sequence or a higher one is already there. A site's own record
   * says its site and when it is to be signed again (`republishAt`); a
   * record from elsewhere is kept at most FOREIGN_RECORD_KEPT_MS.
   */
  async put(record: Omit<HeldIpnsRecord, 'updatedAt'>, own?: { republishAt: Date }): Promise<boolean> {
    const now = this.now();
    const item: Record<string, unknown> = {
      pk: `IPNS#${record.name}`,
      sk: RECORD_SK,
      name: record.name,
      record: record.bytes,
      sequence: sequenceText(record.sequence),
      value: record.value,
      validUntil: record.validUntil,
      ttlMs: record.ttlMs,
      updatedAt: now.toISOString(),
    };
    if (record.siteId && own) {
      item.siteId = record.siteId;
      item.gsi1pk = REPUBLISH_PK;
      item.gsi1sk = `${own.republishAt.toISOString()}#${record.name}`;
    } else {
      item.expiresAt = Math.ceil(Math.min(record.validUntil, now.getTime() + FOREIGN_RECORD_KEPT_MS) / 1000);
    }
    return writtenIf(
      this.db.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: item,
          // An expired foreign item (still in the table until DynamoDB's sweep) is no obstacle.
          ConditionExpression: 'attribute_not_exists(pk) OR #seq < :seq OR (attribute_exists(expiresAt) AND expiresAt <= :now)',
          ExpressionAttributeNames: { '#seq': 'sequence' },
          ExpressionAttributeValues: { ':seq': item.sequence, ':now': Math.floor(now.getTime() / 1000) },
        }),
      ),
    );
  }

  /** Sites' names due to be signed again by `now` (the oldest first, at most `limit`). */
  async dueForRepublish(now: Date, limit: number): Promise<Array<{ name: string; siteId: string }>> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk < :now',
        ExpressionAttributeValues: { ':pk': REPUBLISH_PK, ':now': now.toISOString() },
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map((i) => ({ name: i.name as string, siteId: i.siteId as string }));
  }

  /** The site's key and record, with the site (its name then answers 404). */
  async deleteOfSite(siteId: string): Promise<void> {
    this.names.delete(siteId);
    const name = await this.readName(siteId);
    if (name)
      await this.db.doc
        .send(
          new DeleteCommand({
            TableName: this.table,
            Key: { pk: `IPNS#${name}`, sk: RECORD_SK },
            ConditionExpression: 'attribute_not_exists(pk) OR siteId = :site',
            ExpressionAttributeValues: { ':site': siteId },
          }),
        )
        .catch((err: Error) => {
          if (err.name !== 'ConditionalCheckFailedException') throw err;
        });
    await this.db.doc.send(new DeleteCommand({ TableName: this.table, Key: { pk: `SITE#${siteId}`, sk: KEY_SK } }));
    this.names.delete(siteId);
  }
}
