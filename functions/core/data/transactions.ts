/**
 * dynalite implements DynamoDB's item operations but not TransactWriteItems
 * or TransactGetItems. This front server passes every other call through
 * and runs transactions itself, out of dynalite's own operations:
 * - an exclusive lock: while a transaction runs no other call is served,
 *   so no reader sees it half-applied and no writer interleaves;
 * - each write applied as the equivalent single-item call with its own
 *   condition; on the first failed condition the writes already applied are
 *   undone from before-images, and the caller gets DynamoDB's
 *   TransactionCanceledException with per-item CancellationReasons.
 * A process killed in the middle of a transaction can leave it partly
 * applied, in item order; that is the embedded server's one departure from
 * DynamoDB. Callers order their items so that any prefix is safe (object
 * writes add CID references first and remove them last, so a crash can only
 * keep blocks longer, never lose them).
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';

type Json = Record<string, any>;

class RwLock {
  private readers = 0;
  private writer = false;
  private waiting: Array<() => void> = [];
  private wake() {
    const queue = this.waiting;
    this.waiting = [];
    for (const fn of queue) fn();
  }
  async shared<T>(fn: () => Promise<T>): Promise<T> {
    while (this.writer) await new Promise<void>((r) => this.waiting.push(r));
    this.readers++;
    try {
      return await fn();
    } finally {
      this.readers--;
      this.wake();
    }
  }
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    while (this.writer || this.readers > 0) await new Promise<void>((r) => this.waiting.push(r));
    this.writer = true;
    try {
      return await fn();
    } finally {
      this.writer = false;
      this.wake();
    }
  }
}

interface Upstream {
  host: string;
  port: number;
}

function send(upstream: Upstream, headers: IncomingHttpHeaders, body: Buffer): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: upstream.host, port: upstream.port, method: 'POST', path: '/', headers: { ...headers, 'content-length': String(body.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 500, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function call(upstream: Upstream, baseHeaders: IncomingHttpHeaders, op: string, payload: Json): Promise<{ status: number; json: Json }> {
  const headers = { ...baseHeaders, 'x-amz-target': `DynamoDB_20120810.${op}`, 'content-type': 'application/x-amz-json-1.0' };
  delete headers['content-length'];
  const res = await send(upstream, headers, Buffer.from(JSON.stringify(payload)));
  return { status: res.status, json: res.body.length ? JSON.parse(res.body.toString('utf8')) : {} };
}

const errorType = (json: Json) => String(json.__type ?? '').split('#').pop() ?? '';

function validation(message: string) {
  return { status: 400, json: { __type: 'com.amazon.coral.validate#ValidationException', message } };
}

function keyOf(schema: Map<string, string[]>, table: string, item: Json): Json {
  const names = schema.get(table) ?? ['pk', 'sk'];
  return Object.fromEntries(names.filter((n) => item[n] !== undefined).map((n) => [n, item[n]]));
}

async function keyNames(upstream: Upstream, headers: IncomingHttpHeaders, cache: Map<string, string[]>, table: string): Promise<void> {
  if (cache.has(table)) return;
  const out = await call(upstream, headers, 'DescribeTable', { TableName: table });
  if (out.status === 200) cache.set(table, (out.json.Table.KeySchema as Json[]).map((k) => k.AttributeName));
}

async function transactWrite(upstream: Upstream, headers: IncomingHttpHeaders, body: Json, schema: Map<string, string[]>) {
  const items: Json[] = body.TransactItems ?? [];
  if (!Array.isArray(items) || items.length === 0 || items.length > 100) {
    return validation('TransactItems must hold between 1 and 100 items');
  }
  const ops = items.map((entry) => {
    const [kind] = Object.keys(entry) as Array<'Put' | 'Update' | 'Delete' | 'ConditionCheck'>;
    const spec = entry[kind!] as Json;
    return { kind: kind!, spec };
  });
  for (const { spec } of ops) await keyNames(upstream, headers, schema, spec.TableName);
  const targets = ops.map(({ kind, spec }) => ({ table: spec.TableName as string, key: kind === 'Put' ? keyOf(schema, spec.TableName, spec.Item) : (spec.Key as Json) }));
  const ids = targets.map((t) => `${t.table}\0${JSON.stringify(t.key)}`);
  if (new Set(ids).size !== ids.length) {
    return validation('Transaction request cannot include multiple operations on one item');
  }
  // Before-images, for conditions on ConditionCheck and for undoing: read
  // side by side (the lock is held, so nothing changes under them).
  const reads = await Promise.all(
    targets.map((t) => call(upstream, headers, 'GetItem', { TableName: t.table, Key: t.key, ConsistentRead: true })),
  );
  const failedRead = reads.find((got) => got.status !== 200);
  if (failedRead) return failedRead;
  const before: Array<Json | undefined> = reads.map((got) => got.json.Item);
  const reasons: Json[] = ops.map(() => ({ Code: 'None' }));
  const applied: number[] = [];
  let failed: { index: number; status: number; json: Json } | undefined;
  for (let i = 0; i < ops.length; i++) {
    const { kind, spec } = ops[i]!;
    const common = {
      TableName: spec.TableName,
      ConditionExpression: spec.ConditionExpression,
      ExpressionAttributeNames: spec.ExpressionAttributeNames,
      ExpressionAttributeValues: spec.ExpressionAttributeValues,
    };
    let out: { status: number; json: Json };
    if (kind === 'Put') out = await call(upstream, headers, 'PutItem', { ...common, Item: spec.Item });
    else if (kind === 'Update') out = await call(upstream, headers, 'UpdateItem', { ...common, Key: spec.Key, UpdateExpression: spec.UpdateExpression });
    else if (kind === 'Delete') out = await call(upstream, headers, 'DeleteItem', { ...common, Key: spec.Key });
    else if (before[i]) out = await call(upstream, headers, 'PutItem', { ...common, Item: before[i] });
    else out = await call(upstream, headers, 'DeleteItem', { ...common, Key: spec.Key });
    if (out.status === 200) {
      applied.push(i);
      continue;
    }
    failed = { index: i, ...out };
    break;
  }
  if (!failed) return { status: 200, json: {} };
  for (const i of applied.reverse()) {
    const t = targets[i]!;
    if (before[i]) await call(upstream, headers, 'PutItem', { TableName: t.table, Item: before[i] });
    else await call(upstream, headers, 'DeleteItem', { TableName: t.table, Key: t.key });
  }
  if (errorType(failed.json) !== 'ConditionalCheckFailedException') return { status: failed.status, json: failed.json };
  reasons[failed.index] = { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' };
  if (ops[failed.index]!.spec.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && before[failed.index]) {
    reasons[failed.index]!.Item = before[failed.index];
  }
  return {
    status: 400,
    json: {
      __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
      message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
      CancellationReasons: reasons,
    },
  };
}

async function transactGet(upstream: Upstream, headers: IncomingHttpHeaders, body: Json) {
  const items: Json[] = body.TransactItems ?? [];
  if (!Array.isArray(items) || items.length === 0 || items.length > 100) return validation('TransactItems must hold between 1 and 100 items');
  const responses: Json[] = [];
  for (const { Get } of items) {
    const out = await call(upstream, headers, 'GetItem', { ...Get, ConsistentRead: true });
    if (out.status !== 200) return out;
    responses.push(out.json.Item ? { Item: out.json.Item } : {});
  }
  return { status: 200, json: { Responses: responses } };
}

/** Starts the front server for the dynalite at `upstream`. */
export function transactionFront(upstream: Upstream): Server {
  const lock = new RwLock();
  const schema = new Map<string, string[]>();
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const target = String(req.headers['x-amz-target'] ?? '');
      const headers = { ...req.headers };
      delete headers.host;
      const reply = (status: number, resHeaders: Record<string, string>, out: Buffer) => {
        res.writeHead(status, resHeaders);
        res.end(out);
      };
      const json = (out: { status: number; json: Json }) =>
        reply(out.status, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'local' }, Buffer.from(JSON.stringify(out.json)));
      let work: Promise<void>;
      if (target.endsWith('.TransactWriteItems') || target.endsWith('.TransactGetItems')) {
        let parsed: Json;
        try {
          parsed = JSON.parse(body.toString('utf8'));
        } catch {
          json({ status: 400, json: { __type: 'com.amazon.coral.service#SerializationException' } });
          return;
        }
        work = lock.exclusive(async () => {
          json(target.endsWith('.TransactWriteItems') ? await transactWrite(upstream, headers, parsed, schema) : await transactGet(upstream, headers, parsed));
        });
      } else {
        work = lock.shared(async () => {
          const out = await send(upstream, headers, body);
          const h: Record<string, string> = {};
          for (const [k, v] of Object.entries(out.headers)) if (typeof v === 'string' && k !== 'content-length' && k !== 'connection') h[k] = v;
          reply(out.status, h, out.body);
        });
      }
      work.catch((err: Error) => {
        if (!res.headersSent) json({ status: 500, json: { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: err.message } });
      });
    });
  });
}
