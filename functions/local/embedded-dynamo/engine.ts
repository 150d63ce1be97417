/**
 * The embedded DynamoDB-compatible database for the local service: dynalite's
 * engine (its validations, expression evaluation, indexes and LevelDB store
 * under the data directory) plus the transactions dynalite lacks
 * (transactions.ts). It runs as a job of the local service's helper thread
 * (engine-job.ts), beside the request handling rather than in its turns;
 * the service reaches it through database.ts. Local only: no Lambda handler
 * imports this module.
 *
 * Two ways in, one engine: `execute` (for the service's own clients, see
 * database.ts) and a loopback HTTP server speaking DynamoDB's JSON protocol
 * (`serveEmbeddedDynamo`), for other processes and for Lambda handlers
 * pointed at it with DYNAMODB_ENDPOINT. It ignores credentials.
 *
 * Changes to how dynalite runs, all behind its own interfaces and with its
 * answers:
 * - reads use LevelDB's synchronous get (about 3 µs) instead of its
 *   asynchronous one (25 µs or more of thread-pool hand-off each, and
 *   dynalite reads the table definition on every call);
 * - table definitions are cached while no table is being created, changed
 *   or deleted;
 * - expression parses are memoized (expression-cache.ts);
 * - requests are type-checked without dynalite's per-value allocations
 *   (check-types.ts), and map attributes are validated without the V8
 *   deoptimization loop dynalite's validator falls into (see
 *   validateMapsWithoutDeoptLoop).
 *
 * Item writes hold a lock per item for the whole operation, so a
 * transaction can check every condition first and then apply its writes
 * with nothing changing underneath (see transactions.ts).
 *
 * Every item write (a single-item write, a batch, a transaction) is
 * atomic: while it runs, dynalite's puts and deletes (the item and its
 * index entries) are held in a write set instead of going to LevelDB one
 * by one, its reads see its own writes, and when it succeeds the set is
 * written as one LevelDB batch; when it fails, nothing is written. Write
 * sets that finish together share one batch (group commit, see
 * core/group-commit.ts): one thread-pool round trip instead of one per key.
 */
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { AsyncLocalStorage } from 'node:async_hooks';
import { createServer, type Server } from 'node:http';
import { crc32 } from 'node:zlib';
import { checkTypes } from './check-types.js';
import { memoizeExpressionParsers } from './expression-cache.js';
import { GroupCommit } from '../../core/group-commit.js';
import { LEVEL_MEMORY } from '../../core/level-memory.js';
import { transactGet, transactWrite, type Engine, type Json, type Outcome } from './transactions.js';

const require = createRequire(import.meta.url);

/** The engine, on the thread that opened it. */
export interface EmbeddedEngine {
  /** Runs one DynamoDB operation (`GetItem`, `TransactWriteItems`, ...). */
  execute(operation: string, body: Json): Promise<Outcome>;
  close(): Promise<void>;
}

const OPERATIONS = [
  'BatchGetItem',
  'BatchWriteItem',
  'CreateTable',
  'DeleteItem',
  'DeleteTable',
  'DescribeTable',
  'DescribeTimeToLive',
  'GetItem',
  'ListTables',
  'PutItem',
  'Query',
  'Scan',
  'TagResource',
  'UntagResource',
  'ListTagsOfResource',
  'UpdateItem',
  'UpdateTable',
] as const;
const ITEM_OPERATIONS = new Set([
  'BatchGetItem',
  'BatchWriteItem',
  'DeleteItem',
  'GetItem',
  'PutItem',
  'Query',
  'Scan',
  'UpdateItem',
  'DescribeTable',
  'DescribeTimeToLive',
  'ListTables',
  'ListTagsOfResource',
]);
const SINGLE_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

const lowerFirst = (s: string) => s[0]!.toLowerCase() + s.slice(1);

function errorOutcome(err: any): Outcome {
  if (err?.statusCode && err.body) return { status: err.statusCode, json: err.body };
  return { status: 500, json: { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: String(err?.message ?? err) } };
}

/** Exclusive locks on item keys; several keys are taken in sorted order, so two lockers never deadlock. */
class KeyLocks {
  private held = new Map<string, Array<() => void>>();

  private async acquire(key: string): Promise<void> {
    const queue = this.held.get(key);
    if (!queue) {
      this.held.set(key, []);
      return;
    }
    await new Promise<void>((resolve) => queue.push(resolve));
  }

  private release(key: string): void {
    const queue = this.held.get(key)!;
    const next = queue.shift();
    if (next) next();
    else this.held.delete(key);
  }

  async with<T>(keys: string[], fn: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    for (const key of sorted) await this.acquire(key);
    try {
      return await fn();
    } finally {
      for (const key of sorted) this.release(key);
    }
  }
}

/**
 * dynalite validates a map attribute ({M: {...}}) by a for-in over its
 * members inside validateAttributeValue. V8 (Node 24) optimizes that
 * function, then throws the code away at that loop ("insufficient type
 * feedback"), then optimizes it again: every object record's checksum map
 * kept it in that cycle, about one recompilation per 15 writes. Its callers
 * reach it through the module's exports, so a lone map is validated here,
 * member by member, in the same order and with the same messages; every
 * other value goes to dynalite's function.
 */
function validateMapsWithoutDeoptLoop(validations: { validateAttributeValue: (value: unknown) => string | undefined }): void {
  const original = validations.validateAttributeValue;
  const validate = (value: unknown): string | undefined => {
    const map = (value as Json | null)?.M;
    // A member named __proto__ gives the checked map another prototype, whose keys dynalite's for-in also sees.
    if (
      map === null ||
      typeof map !== 'object' ||
      Object.getPrototypeOf(map) !== Object.prototype ||
      Object.keys(value as Json).length !== 1
    ) {
      return original(value);
    }
    for (const name of Object.keys(map)) {
      const msg = validate(map[name]);
      if (msg) return msg;
    }
    return undefined;
  };
  validations.validateAttributeValue = validate;
}

/**
 * DynamoDB limits a partition key to 2048 bytes and a sort key to 1024, an
 * index's keys included, counting a string's UTF-8 bytes
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).
 * dynalite counts a string key's UTF-16 code units and never an index's, so
 * a key of 1024 'é's (2048 bytes) passed here and failed in AWS. Its key
 * validators (on its exports, which its actions and ours call) are wrapped
 * to count as DynamoDB does.
 */
function validateKeyBytes(db: any): void {
  type KeySchema = Array<{ AttributeName: string; KeyType: 'HASH' | 'RANGE' }>;
  const tooLong = (schema: KeySchema, values: Json) => {
    for (const { AttributeName, KeyType } of schema) {
      const text = (values[AttributeName] as Json | undefined)?.S;
      if (typeof text !== 'string' || text.length * 3 <= 1024) continue; // at most 3 bytes a UTF-16 code unit
      const bytes = Buffer.byteLength(text);
      if (KeyType === 'HASH' && bytes > 2048)
        return db.validationError(
          'One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes',
        );
      if (KeyType === 'RANGE' && bytes > 1024)
        return db.validationError(
          'One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes',
        );
    }
    return undefined;
  };
  const validateItem = db.validateItem;
  db.validateItem = (item: Json, table: Json) => {
    const indexes = [
      ...((table.GlobalSecondaryIndexes as Json[] | undefined) ?? []),
      ...((table.LocalSecondaryIndexes as Json[] | undefined) ?? []),
    ];
    return (
      validateItem(item, table) ??
      [table.KeySchema as KeySchema, ...indexes.map((i) => i.KeySchema as KeySchema)].map((schema) => tooLong(schema, item)).find(Boolean)
    );
  };
  const validateKey = db.validateKey;
  db.validateKey = (key: Json, table: Json, keySchema?: KeySchema) =>
    validateKey(key, table, keySchema) ?? tooLong(keySchema ?? (table.KeySchema as KeySchema), key);
}

/** The engine itself, on the calling thread. */
export async function openEmbeddedDynamo(dataDir: string): Promise<EmbeddedEngine> {
  const db = require('dynalite/db');
  const validations = require('dynalite/validations');
  memoizeExpressionParsers(require);
  validateMapsWithoutDeoptLoop(validations);
  validateKeyBytes(db);
  const actions: Record<string, (store: any, data: Json, cb: (err: any, out?: Json) => void) => void> = {};
  const rules: Record<string, { types: Json; custom?: unknown }> = {};
  for (const op of OPERATIONS) {
    actions[op] = require(`dynalite/actions/${lowerFirst(op)}`);
    rules[op] = require(`dynalite/validations/${lowerFirst(op)}`);
  }

  const path = join(dataDir, 'dynamodb');
  await mkdir(path, { recursive: true });
  const store = db.create({ path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const level = store.db;
  // dynalite opens its LevelDB with the defaults; opened here first (before the open its constructor queued), it takes
  // LEVEL_MEMORY's smaller caches: 17 MiB less peak RSS under bench:s3, with no step slower.
  await level.open(LEVEL_MEMORY);

  // dynalite's read streams (Query, Scan, index and table listings) wrap a
  // LevelDB iterator that they close by calling its `return()`, which
  // abstract-level iterators do not have, and a query that stops early
  // (Limit, 1 MB pages) never ends its stream anyway. So every such
  // iterator, with its native read buffers and the LevelDB version it pins,
  // stayed open until the database closed: the server's anonymous memory
  // grew about 3 MiB/s under the storage soak. Here a stream closes its
  // iterator when it ends or is destroyed, and every stream an action
  // opened is destroyed when the action answers.
  const actionStreams = new AsyncLocalStorage<Set<Readable>>();
  for (const [method, kind] of [
    ['createKeyStream', 'keys'],
    ['createValueStream', 'values'],
  ] as const) {
    (level as unknown as Record<string, unknown>)[method] = (options: object) => {
      const iterator = (level as unknown as Record<string, (o: object) => { next(): Promise<unknown>; close(): Promise<void> }>)[kind]!(
        options,
      );
      const close = () => void iterator.close().catch(() => {});
      const stream = new Readable({
        objectMode: true,
        read() {
          iterator.next().then(
            (value) => {
              if (value !== undefined) return void this.push(value);
              close();
              this.push(null);
            },
            (err: Error) => this.destroy(err),
          );
        },
        destroy(err, callback) {
          close();
          callback(err);
        },
      });
      actionStreams.getStore()?.add(stream);
      return stream;
    };
  }

  // Write sets (see the header). Outside one, dynalite writes as it always did.
  type WriteOp = { type: 'put'; key: string; value: unknown } | { type: 'del'; key: string };
  type WriteSet = Map<string, WriteOp>;
  const writeSets = new AsyncLocalStorage<WriteSet>();
  const levelPut = level.put;
  const levelDel = level.del;
  const levelBatch = level.batch;
  level.put = function (key: string, value: unknown, cb?: (err: unknown) => void) {
    const set = writeSets.getStore();
    if (!set || typeof cb !== 'function') return levelPut.call(level, key, value, cb);
    set.set(key, { type: 'put', key, value });
    setImmediate(cb, null);
  };
  level.del = function (key: string, cb?: (err: unknown) => void) {
    const set = writeSets.getStore();
    if (!set || typeof cb !== 'function') return levelDel.call(level, key, cb);
    set.set(key, { type: 'del', key });
    setImmediate(cb, null);
  };
  const readThrough = (key: string): { value: unknown } | undefined => {
    const op = writeSets.getStore()?.get(key);
    return op ? { value: op.type === 'put' ? structuredClone(op.value) : undefined } : undefined;
  };
  const group = new GroupCommit<WriteOp>(
    (ops) => new Promise<void>((resolve, reject) => levelBatch.call(level, ops, (err: unknown) => (err ? reject(err) : resolve()))),
  );
  /** Runs `fn` with its writes held; writes them in one batch if it succeeds, drops them if not. */
  const atomically = async (fn: () => Promise<Outcome>): Promise<Outcome> => {
    const set: WriteSet = new Map();
    const out = await writeSets.run(set, fn);
    if (out.status !== 200) return out;
    if (set.size) await group.commit([...set.values()]);
    return out;
  };

  // Synchronous reads (see the header). Until the database is open, or if
  // the synchronous read fails, dynalite's own read runs.
  const asyncGet = level.get;
  level.get = function (key: string, cb?: (err: unknown, value?: unknown) => void) {
    if (typeof cb !== 'function' || level.status !== 'open') return asyncGet.call(level, key, cb);
    const own = readThrough(key);
    if (own) return setImmediate(cb, null, own.value);
    let value: unknown;
    try {
      value = level.getSync(key);
    } catch {
      return asyncGet.call(level, key, cb);
    }
    setImmediate(cb, null, value);
  };

  // Table definitions, cached while no table operation runs (see the header).
  const tables = new Map<string, Json>();
  let tableChanges = 0;
  const readTable = store.getTable;
  store.getTable = function (name: string, checkStatus: unknown, cb?: (err: unknown, table?: Json) => void) {
    // dynalite's two-argument form checks the table's status.
    const check = typeof checkStatus === 'function' ? true : checkStatus;
    const callback = (typeof checkStatus === 'function' ? checkStatus : cb) as (err: unknown, table?: Json) => void;
    const cached = tableChanges === 0 ? tables.get(name) : undefined;
    if (cached) return setImmediate(callback, null, cached);
    readTable(name, check, (err: unknown, table?: Json) => {
      const settled =
        table?.TableStatus === 'ACTIVE' &&
        ![...(table.GlobalSecondaryIndexes ?? [])].some((i: Json) => i.IndexStatus && i.IndexStatus !== 'ACTIVE');
      if (!err && settled && tableChanges === 0) tables.set(name, table!);
      callback(err, table);
    });
  };

  /**
   * A table's definition (cached, see above), or dynalite's ResourceNotFound.
   * With `active`, a table being created or deleted is not found either, as
   * in dynalite's item actions.
   */
  const tableOf = (name: string, active: boolean) =>
    new Promise<{ def: Json } | { error: Outcome }>((resolve) =>
      store.getTable(name, active, (err: unknown, def?: Json) => resolve(err ? { error: errorOutcome(err) } : { def: def! })),
    );

  const keySchemas = new Map<string, string[]>();
  const run = (op: string, data: Json) =>
    new Promise<Outcome>((resolve) => {
      const streams = new Set<Readable>();
      actionStreams.run(streams, () =>
        actions[op]!(store, data, (err, out) => {
          for (const stream of streams) stream.destroy();
          resolve(err ? errorOutcome(err) : { status: 200, json: out ?? {} });
        }),
      );
    });

  const engine: Engine = {
    validate(op, body) {
      const rule = rules[op];
      if (!rule) return { error: { status: 400, json: { __type: 'com.amazon.coral.service#UnknownOperationException' } } };
      try {
        // checkTypes (dynalite's, without its allocations: check-types.ts)
        // deletes the keys it does not know from what it is given (nested
        // structures' too) and builds the checked data anew.
        // Bodies are the caller's to give, but a transaction reads its
        // entries' own fields (ReturnValuesOnConditionCheckFailure) after
        // validating them: a copy of the top level keeps those. (A deep
        // copy cost a tenth of the engine's time.)
        const data = checkTypes({ ...body }, rule.types);
        validations.checkValidations(data, rule.types, rule.custom, store);
        return { data };
      } catch (err) {
        if ((err as any)?.statusCode) return { error: errorOutcome(err) };
        throw err;
      }
    },
    async keyOf(table, item) {
      let names = keySchemas.get(table);
      if (!names) {
        const out = await run('DescribeTable', { TableName: table });
        if (out.status !== 200) return undefined;
        names = (out.json.Table.KeySchema as Json[]).map((k) => k.AttributeName as string);
        keySchemas.set(table, names);
      }
      return Object.fromEntries(names.map((n) => [n, item?.[n]]));
    },
    lockKey: (table, key) => `${table}\0${JSON.stringify(key)}`,
    // A transaction's reads and puts go to the item store directly: dynalite's
    // GetItem and PutItem actions would validate again what plan() has
    // checked, and PutItem would read the item once more.
    async read(table, key) {
      const found = await tableOf(table, true);
      if ('error' in found) return found;
      const { def } = found;
      const invalid = db.validateKey(key, def);
      if (invalid) return { error: errorOutcome(invalid) };
      const item = await new Promise<Json | undefined>((resolve, reject) =>
        store
          .getItemDb(table)
          .get(db.createKey(key, def), (err: any, value?: Json) =>
            err && err.name !== 'NotFoundError' ? reject(err) : resolve(err ? undefined : value),
          ),
      );
      return { item };
    },
    async put(table, item, existing) {
      const found = await tableOf(table, true);
      if ('error' in found) return found.error;
      const { def } = found;
      await new Promise<void>((resolve, reject) =>
        db.updateIndexes(store, def, existing, item, (err: unknown) => (err ? reject(err) : resolve())),
      );
      await new Promise<void>((resolve, reject) =>
        store.getItemDb(table).put(db.createKey(item, def), item, (err: unknown) => (err ? reject(err) : resolve())),
      );
      return undefined;
    },
    checkCondition: (data, existing) => db.checkConditional(data, existing) == null,
    validateItem: async (table, item) => {
      const found = await tableOf(table, false);
      const invalid = 'def' in found ? db.validateItem(item, found.def) : undefined;
      return invalid ? errorOutcome(invalid) : undefined;
    },
    run,
    withLocks: (keys, fn) => locks.with(keys, fn),
    atomically,
  };
  const locks = new KeyLocks();

  async function itemKeys(op: string, data: Json): Promise<string[]> {
    const targets: Array<[table: string, item: Json | undefined]> = [];
    if (SINGLE_WRITES.has(op)) targets.push([data.TableName, op === 'PutItem' ? data.Item : data.Key]);
    if (op === 'BatchWriteItem') {
      for (const [table, requests] of Object.entries((data.RequestItems ?? {}) as Record<string, Json[]>)) {
        for (const r of requests) targets.push([table, r.PutRequest?.Item ?? r.DeleteRequest?.Key]);
      }
    }
    const keys: string[] = [];
    for (const [table, item] of targets) {
      const key = item && (await engine.keyOf(table, item));
      if (key) keys.push(engine.lockKey(table, key));
    }
    return keys;
  }

  async function execute(op: string, body: Json): Promise<Outcome> {
    try {
      if (op === 'TransactWriteItems') return await transactWrite(engine, body);
      if (op === 'TransactGetItems') return await transactGet(engine, body);
      const checked = engine.validate(op, body);
      if ('error' in checked) return checked.error;
      if (!ITEM_OPERATIONS.has(op)) {
        // Creating, changing or deleting a table: no cached definitions meanwhile.
        tableChanges++;
        tables.clear();
        keySchemas.clear();
        try {
          return await run(op, checked.data);
        } finally {
          tableChanges--;
          tables.clear();
        }
      }
      const keys = await itemKeys(op, checked.data);
      if (!keys.length) return await run(op, checked.data);
      return await locks.with(keys, () => atomically(() => run(op, checked.data)));
    } catch (err) {
      return errorOutcome(err);
    }
  }

  return {
    execute,
    close: () =>
      new Promise<void>((resolve, reject) => {
        store.db.close((err: unknown) => (err ? reject(err) : resolve()));
      }),
  };
}

/** dynalite's HTTP server, in front of the shared engine. */
function httpFront(execute: EmbeddedEngine['execute']): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const reply = (out: Outcome) => {
        const body = JSON.stringify(out.json);
        res.writeHead(out.status, {
          'content-type': 'application/x-amz-json-1.0',
          'content-length': Buffer.byteLength(body),
          'x-amz-crc32': String(crc32(body)),
          'x-amzn-requestid': 'embedded',
        });
        res.end(body);
      };
      if (req.method === 'GET') return reply({ status: 200, json: {} });
      const [api, op] = String(req.headers['x-amz-target'] ?? '').split('.');
      if (req.method !== 'POST' || api !== 'DynamoDB_20120810' || !op) {
        return reply({ status: 400, json: { __type: 'com.amazon.coral.service#UnknownOperationException' } });
      }
      let body: Json;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return reply({ status: 400, json: { __type: 'com.amazon.coral.service#SerializationException' } });
      }
      execute(op, body).then(reply, (err: Error) => reply(errorOutcome(err)));
    });
  });
}

/** The engine and its HTTP endpoint, on the calling thread (engine-job.ts runs this). */
export async function serveEmbeddedDynamo(dataDir: string, host: string): Promise<EmbeddedEngine & { endpoint: string }> {
  const engine = await openEmbeddedDynamo(dataDir);
  const server = httpFront(engine.execute);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => resolve());
    });
  } catch (err) {
    await engine.close();
    throw err;
  }
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    endpoint: `http://${host}:${port}`,
    execute: engine.execute,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await engine.close();
    },
  };
}
