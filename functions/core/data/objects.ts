/**
 * Object records: one item per (bucket, key) in the objects table, keyed by
 * the bucket name and the object key themselves so a listing is one Query in
 * S3's byte order. Bucket names cannot start with '#', which leaves that
 * prefix for the table's other items (uploads, pin references).
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Database } from './dynamo.js';
import { withoutKeys } from './tables.js';

export type CannedAcl = 'private' | 'public-read';

export interface ObjectRecord {
  bucket: string;
  key: string;
  /** CIDv0 of the object's bytes, as Kubo's `ipfs add` prints it. */
  cid: string;
  size: number;
  /** The ETag without quotes: an MD5 hex digest, or `<md5>-<parts>` for multipart. */
  etag: string;
  lastModified: string;
  contentType: string;
  acl: CannedAcl;
  ownerId: string;
  cacheControl?: string;
  contentDisposition?: string;
  contentEncoding?: string;
  contentLanguage?: string;
  expires?: string;
  /** User metadata (`x-amz-meta-*`), names lowercased without the prefix. */
  metadata: Record<string, string>;
}

export class ObjectStore {
  constructor(private readonly db: Database) {}

  private get table() {
    return this.db.tables.objects;
  }

  async get(bucket: string, key: string): Promise<ObjectRecord | undefined> {
    const out = await this.db.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: bucket, sk: key }, ConsistentRead: true }),
    );
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /** Writes the record; returns the one it replaced, if any. */
  async put(record: ObjectRecord): Promise<ObjectRecord | undefined> {
    const out = await this.db.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: { pk: record.bucket, sk: record.key, gsi1pk: `CID#${record.cid}`, gsi1sk: `${record.bucket}/${record.key}`, ...record },
        ReturnValues: 'ALL_OLD',
      }),
    );
    return out.Attributes ? fromItem(out.Attributes) : undefined;
  }

  /** Any one object stored with this CID (for the gateway's Content-Type), or undefined. */
  async findByCid(cid: string): Promise<ObjectRecord | undefined> {
    const out = await this.db.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        ExpressionAttributeValues: { ':pk': `CID#${cid}` },
        Limit: 1,
      }),
    );
    const item = out.Items?.[0];
    return item ? fromItem(item) : undefined;
  }

  async delete(bucket: string, key: string): Promise<ObjectRecord | undefined> {
    const out = await this.db.doc.send(
      new DeleteCommand({ TableName: this.table, Key: { pk: bucket, sk: key }, ReturnValues: 'ALL_OLD' }),
    );
    return out.Attributes ? fromItem(out.Attributes) : undefined;
  }
}

function fromItem(item: Record<string, unknown>): ObjectRecord {
  const record = withoutKeys<ObjectRecord>(item);
  return { ...record, metadata: record.metadata ?? {} };
}
