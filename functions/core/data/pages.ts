/**
 * Keyed pages out of DynamoDB Query: a page of `limit` items and whether
 * more follow. It asks for one item more than the page, so a listing whose
 * last page is full never hands out a cursor to an empty page; and it keeps
 * querying while DynamoDB stops short of the page at its 1 MB read limit.
 */
import { QueryCommand, ScanCommand, type QueryCommandInput, type ScanCommandInput } from '@aws-sdk/lib-dynamodb';
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
  for await (const item of queryEach(db, input)) items.push(item);
  return items;
}

/** Every item of a query, a page read at a time (the caller may write to the partition meanwhile: DynamoDB resumes after the last key read). */
export async function* queryEach(
  db: Database,
  input: Omit<QueryCommandInput, 'ExclusiveStartKey'>,
): AsyncGenerator<Record<string, unknown>> {
  let exclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const out = await db.doc.send(new QueryCommand({ ...input, ExclusiveStartKey: exclusiveStartKey }));
    yield* out.Items ?? [];
    exclusiveStartKey = out.LastEvaluatedKey;
  } while (exclusiveStartKey);
}

/** Every item of a Scan, a page read at a time (operators' and the integrity check's whole-table reads, never a request's). */
export async function* scanEach(db: Database, input: Omit<ScanCommandInput, 'ExclusiveStartKey'>): AsyncGenerator<Record<string, unknown>> {
  let exclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const out = await db.doc.send(new ScanCommand({ ...input, ExclusiveStartKey: exclusiveStartKey }));
    yield* out.Items ?? [];
    exclusiveStartKey = out.LastEvaluatedKey;
  } while (exclusiveStartKey);
}
