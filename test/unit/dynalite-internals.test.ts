/**
 * The embedded database (functions/local/embedded-dynamo/) reaches into
 * dynalite's files, not only its public server: it calls its actions,
 * validations and store directly, replaces some of its functions and ports
 * one. package.json pins the version those changes were written against;
 * this fails when an upgrade (or a changed lock) moves what they rely on,
 * and says which change to check again.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const root = dirname(require.resolve('dynalite/package.json'));
const PINNED = '4.0.0';

/** Files whose code Cairn replaces, wraps or copies, with the change to check again if one differs. */
const REPLACED: Record<string, { sha256: string; recheck: string }> = {
  'validations/index.js': {
    sha256: 'f6207164c93b1957dcc93024e963ab33529d4f2187f4c0c5d3b229eed8e8e826',
    recheck:
      'check-types.ts (a port of checkTypes: same results, same errors) and validateMapsWithoutDeoptLoop in engine.ts (replaces validateAttributeValue on the exports)',
  },
  'db/index.js': {
    sha256: '25b5b4edb29a8399f78040b825d96af3e56c422fac656710eb4fb1e8e29e5d9d',
    recheck:
      "engine.ts: the cached store.getTable, the write sets and synchronous reads over store.db's get/put/del/batch, and the direct reads and puts (createKey, validateKey, updateIndexes, checkConditional, validateItem)",
  },
  'db/conditionParser.js': {
    sha256: '021488e54f1fb77f7594b8e0fd50b95317954100d85000e8a53904b90ce39973',
    recheck: 'expression-cache.ts (memoizes parse)',
  },
  'db/updateParser.js': {
    sha256: '25aea6af6b231ee8cf25621ba715eff8261285b4bf6151b0641df4c73fbf6cde',
    recheck: 'expression-cache.ts (memoizes parse)',
  },
  'db/projectionParser.js': {
    sha256: '5b9c33d8aa2aaa47aa29c7b63d9fd103944c647901b985a78d823422a8285518',
    recheck: 'expression-cache.ts (memoizes parse)',
  },
};

/** The operations engine.ts runs through dynalite's actions and validations (its OPERATIONS). */
const OPERATIONS = [
  'batchGetItem',
  'batchWriteItem',
  'createTable',
  'deleteItem',
  'deleteTable',
  'describeTable',
  'describeTimeToLive',
  'getItem',
  'listTables',
  'putItem',
  'query',
  'scan',
  'tagResource',
  'untagResource',
  'listTagsOfResource',
  'updateItem',
  'updateTable',
];

test(`the installed dynalite is the pinned ${PINNED}, and package.json pins it exactly`, async () => {
  expect(require('dynalite/package.json').version).toBe(PINNED);
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'));
  expect(pkg.dependencies.dynalite).toBe(PINNED);
});

test.each(Object.entries(REPLACED))('%s is the source the patches were written against', async (file, { sha256, recheck }) => {
  const actual = createHash('sha256')
    .update(await readFile(join(root, file)))
    .digest('hex');
  if (actual !== sha256)
    throw new Error(`dynalite's ${file} changed (sha256 ${actual}): check ${recheck} against it, then pin the new hash here`);
});

test('dynalite/validations: checkTypes, checkValidations and validateAttributeValue, reached through the exports', () => {
  const validations = require('dynalite/validations');
  expect(validations.checkTypes).toEqual(expect.any(Function));
  expect(validations.checkTypes.length).toBe(2);
  expect(validations.checkValidations).toEqual(expect.any(Function));
  expect(validations.checkValidations.length).toBe(4);
  expect(validations.validateAttributeValue).toEqual(expect.any(Function));
  expect(validations.validateAttributeValue.length).toBe(1);
});

test.each(['batchGetItem', 'batchWriteItem', 'deleteItem', 'getItem', 'putItem', 'query', 'scan', 'updateItem'])(
  "validations/%s calls validateAttributeValue through the module's exports (else the map validator is never used)",
  async (op) => {
    expect(await readFile(join(root, 'validations', `${op}.js`), 'utf8')).toContain('validations.validateAttributeValue(');
  },
);

test.each(OPERATIONS)('dynalite/actions/%s is (store, data, cb), and its validations have types', (op) => {
  const action = require(`dynalite/actions/${op}`);
  expect(action).toEqual(expect.any(Function));
  expect(action.length).toBe(3);
  const rule = require(`dynalite/validations/${op}`);
  expect(rule.types).toEqual(expect.any(Object));
  if (rule.custom !== undefined) expect(rule.custom).toEqual(expect.any(Function));
});

test.each(['conditionParser', 'updateParser', 'projectionParser'])('dynalite/db/%s has parse(input, options)', (name) => {
  const parser = require(`dynalite/db/${name}`);
  expect(parser.parse).toEqual(expect.any(Function));
});

test("dynalite/db: the functions engine.ts calls, and a store's getTable, getItemDb and LevelDB methods", async () => {
  const db = require('dynalite/db');
  // validateKey and createKey take an optional key schema, which engine.ts leaves out.
  const arities: Record<string, number> = {
    create: 1,
    validateKey: 3,
    validateItem: 2,
    createKey: 3,
    updateIndexes: 5,
    checkConditional: 2,
  };
  for (const [name, arity] of Object.entries(arities)) expect([name, typeof db[name], db[name].length]).toEqual([name, 'function', arity]);

  const dir = await mkdtemp(join(tmpdir(), 'cairn-dynalite-'));
  const store = db.create({ path: join(dir, 'dynamodb'), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  try {
    expect(store.getTable).toEqual(expect.any(Function));
    expect(store.getTable.length).toBe(3);
    expect(store.getItemDb).toEqual(expect.any(Function));
    const level = store.db;
    await level.open();
    expect(level.status).toBe('open');
    for (const method of ['get', 'getSync', 'put', 'del', 'batch', 'close'])
      expect([method, typeof level[method]]).toEqual([method, 'function']);
    // engine.ts's write sets and reads call these with callbacks, and its synchronous read reads back the JSON value.
    await new Promise<void>((resolve, reject) => level.put('k', { a: 1 }, (err: unknown) => (err ? reject(err) : resolve())));
    expect(level.getSync('k')).toEqual({ a: 1 });
    await new Promise<void>((resolve, reject) =>
      level.batch([{ type: 'del', key: 'k' }], (err: unknown) => (err ? reject(err) : resolve())),
    );
    expect(level.getSync('k')).toBeUndefined();
  } finally {
    await new Promise<void>((resolve) => store.db.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  }
});
