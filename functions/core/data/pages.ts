/**
 * Keyed pages out of DynamoDB Query: a page of `limit` items and whether
 * more follow. It asks for one item more than the page, so a listing whose
 * last page is full never hands out a cursor to an empty page; and it keeps
 * querying while DynamoDB stops short of the page at its 1 MB read limit.
 */
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Database } from './dynamo.js';

export interface Page<T> {
  items: T[];
  /** True when at least one more item follows the last one. */
  more: boolean;
}

export async function queryPage(
  db: Database,
  input: Omit<QueryCommandInput, 'Limit' | 'ExclusiveStartKey'>,
  limit: number,
  startKey?: Record<string, unknown>,
): Promise<Page<Record<string, unknown>>> {
  const items: Record<string, unknown>[] = [];
  let exclusiveStartKey = startKey;
  for (;;) {
    const out = await db.doc.send(new QueryCommand({ ...input, Limit: limit + 1 - items.length, ExclusiveStartKey: exclusiveStartKey }));
    items.push(...(out.Items ?? []));
    if (items.length > limit) return { items: items.slice(0, limit), more: true };
    if (!out.LastEvaluatedKey) return { items, more: false };
    exclusiveStartKey = out.LastEvaluatedKey;
  }
}

/** Every item of a query, following LastEvaluatedKey (for small partitions: a team's keys or members). */
export async function queryAll(db: Database, input: Omit<QueryCommandInput, 'ExclusiveStartKey'>): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let exclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const out = await db.doc.send(new QueryCommand({ ...input, ExclusiveStartKey: exclusiveStartKey }));
    items.push(...(out.Items ?? []));
    exclusiveStartKey = out.LastEvaluatedKey;
  } while (exclusiveStartKey);
  return items;
}
