/**
 * TransactWriteItems and TransactGetItems for the embedded database
 * (engine.ts), which dynalite lacks, built from its single-item operations:
 *
 * - every item of a transaction is locked (the embedded engine's item
 *   locks, which single-item writes take too), so nothing changes under it;
 * - every condition is checked against the locked before-images first; if
 *   any fails, nothing is written and the caller gets DynamoDB's
 *   TransactionCanceledException with a reason per item;
 * - then the writes are applied as one atomic write (the engine's write
 *   sets): should one fail anyway (an update expression that does not fit
 *   the stored item), none is written. A Put writes its checked item over
 *   the before-image it was checked against (no second read); Updates and
 *   Deletes run dynalite's own operations.
 *
 * So, as in DynamoDB, a transaction is all or nothing, a process killed in
 * the middle included.
 */

export type Json = Record<string, any>;

/** A DynamoDB answer: HTTP status and JSON body. */
export interface Outcome {
  status: number;
  json: Json;
}

/** What the transactions need from the engine. */
export interface Engine {
  /** dynalite's request validation for one operation: the checked data (with parsed expressions), or the error. */
  validate(op: string, body: Json): { data: Json } | { error: Outcome };
  /** The key attributes of `item` (an item or a key) in `table`, or undefined if there is no such table. */
  keyOf(table: string, item: Json | undefined): Promise<Json | undefined>;
  lockKey(table: string, key: Json): string;
  read(table: string, key: Json): Promise<{ item?: Json } | { error: Outcome }>;
  /** Writes a checked item over `existing` (its before-image, read under the lock), with its index entries; the error if the table is not active. */
  put(table: string, item: Json, existing: Json | undefined): Promise<Outcome | undefined>;
  /** Whether validated data's condition holds for the item (undefined: no item). */
  checkCondition(data: Json, existing: Json | undefined): boolean;
  /** An error if the item does not fit the table (key types and sizes). */
  validateItem(table: string, item: Json): Promise<Outcome | undefined>;
  /** Runs one validated operation without taking locks. */
  run(op: string, data: Json): Promise<Outcome>;
  withLocks<T>(keys: string[], fn: () => Promise<T>): Promise<T>;
  /** Runs `fn` with its writes held, and writes them all in one batch if its outcome is 200 (none otherwise). */
  atomically(fn: () => Promise<Outcome>): Promise<Outcome>;
}

const validation = (message: string): Outcome => ({
  status: 400,
  json: { __type: 'com.amazon.coral.validate#ValidationException', message },
});

const notFound = (): Outcome => ({
  status: 400,
  json: { __type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException', message: 'Requested resource not found' },
});

type Kind = 'Put' | 'Update' | 'Delete' | 'ConditionCheck';
const OPERATION: Record<Kind, string> = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'DeleteItem' };

interface Step {
  kind: Kind;
  spec: Json;
  data: Json;
  table: string;
  key: Json;
}

async function plan(engine: Engine, entries: Json[]): Promise<{ steps: Step[] } | { error: Outcome }> {
  const steps: Step[] = [];
  for (const entry of entries) {
    const kinds = Object.keys(entry ?? {}).filter((k) => k in OPERATION) as Kind[];
    if (kinds.length !== 1)
      return { error: validation('Each TransactItem must hold exactly one of Put, Update, Delete and ConditionCheck') };
    const kind = kinds[0]!;
    const spec = entry[kind] as Json;
    if (kind === 'ConditionCheck' && !spec?.ConditionExpression)
      return { error: validation('ConditionCheck requires a ConditionExpression') };
    const checked = engine.validate(OPERATION[kind], spec ?? {});
    if ('error' in checked) return checked;
    const table = checked.data.TableName as string;
    const key = await engine.keyOf(table, kind === 'Put' ? checked.data.Item : checked.data.Key);
    if (!key) return { error: notFound() };
    if (kind === 'Put') {
      const invalid = await engine.validateItem(table, checked.data.Item);
      if (invalid) return { error: invalid };
    }
    steps.push({ kind, spec, data: checked.data, table, key });
  }
  return { steps };
}

export async function transactWrite(engine: Engine, body: Json): Promise<Outcome> {
  const entries: Json[] = body.TransactItems;
  if (!Array.isArray(entries) || entries.length === 0 || entries.length > 100) {
    return validation('TransactItems must hold between 1 and 100 items');
  }
  const planned = await plan(engine, entries);
  if ('error' in planned) return planned.error;
  const { steps } = planned;
  const ids = steps.map((s) => engine.lockKey(s.table, s.key));
  if (new Set(ids).size !== ids.length) return validation('Transaction request cannot include multiple operations on one item');

  return engine.withLocks(ids, async () => {
    const reads = await Promise.all(steps.map((s) => engine.read(s.table, s.key)));
    const before: Array<Json | undefined> = [];
    for (const got of reads) {
      if ('error' in got) return got.error;
      before.push(got.item);
    }
    const reasons: Json[] = steps.map((step, i) => {
      if (engine.checkCondition(step.data, before[i])) return { Code: 'None' };
      const reason: Json = { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' };
      if (step.spec.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && before[i]) reason.Item = before[i];
      return reason;
    });
    if (reasons.some((r) => r.Code !== 'None')) {
      return {
        status: 400,
        json: {
          __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
          message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
          CancellationReasons: reasons,
        },
      };
    }
    return engine.atomically(async () => {
      for (const [i, step] of steps.entries()) {
        if (step.kind === 'ConditionCheck') continue;
        // The conditions held under the locks: apply without re-checking.
        if (step.kind === 'Put') {
          const failed = await engine.put(step.table, step.data.Item, before[i]);
          if (failed) return failed;
          continue;
        }
        const out = await engine.run(OPERATION[step.kind], { ...step.data, _condition: undefined, Expected: undefined });
        if (out.status !== 200) return out;
      }
      return { status: 200, json: {} };
    });
  });
}

export async function transactGet(engine: Engine, body: Json): Promise<Outcome> {
  const entries: Json[] = body.TransactItems;
  if (!Array.isArray(entries) || entries.length === 0 || entries.length > 100) {
    return validation('TransactItems must hold between 1 and 100 items');
  }
  const gets: Array<{ data: Json; id: string }> = [];
  for (const entry of entries) {
    if (!entry?.Get) return validation('Each TransactItem must hold a Get');
    const checked = engine.validate('GetItem', { ...entry.Get, ConsistentRead: true });
    if ('error' in checked) return checked.error;
    const key = await engine.keyOf(checked.data.TableName, checked.data.Key);
    if (!key) return notFound();
    gets.push({ data: checked.data, id: engine.lockKey(checked.data.TableName, key) });
  }
  // Under the item locks no transaction is half-way through these items.
  return engine.withLocks(
    gets.map((g) => g.id),
    async () => {
      const responses: Json[] = [];
      for (const { data } of gets) {
        const out = await engine.run('GetItem', data);
        if (out.status !== 200) return out;
        responses.push(out.json.Item ? { Item: out.json.Item } : {});
      }
      return { status: 200, json: { Responses: responses } };
    },
  );
}
