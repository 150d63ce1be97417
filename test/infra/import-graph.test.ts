/**
 * Two rules of the code's layout (docs/architecture.md), kept by reading
 * every module's imports with TypeScript's own parser:
 *
 * - No import circle in functions/, lib/ and bin/. A circle of static
 *   imports makes what a module sees at load depend on which one was
 *   loaded first (a class or constant still in its temporal dead zone),
 *   and it is how layers tangle. Type-only imports count too: they load
 *   nothing, but a port that names an adapter's type, or a core record a
 *   door's, is the same tangle of layers, and none exists today. Dynamic
 *   `import()` does not count: it runs when called, after both modules
 *   have loaded, and is how an entry point loads an adapter only where it
 *   is used (functions/aws/adapters.ts).
 * - functions/core imports no AWS client but DynamoDB's (the store both
 *   worlds share): of `@aws-sdk/*`, only client-dynamodb, lib-dynamodb,
 *   util-dynamodb and checksums (a checksum library, no client), and
 *   nothing of the adapters' folders (functions/aws, functions/local),
 *   statically, by type or dynamically.
 *
 * A circle is named file by file, in the order of its imports.
 */
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
const AWS_SDK_IN_CORE = new Set(['client-dynamodb', 'lib-dynamodb', 'util-dynamodb', 'checksums']);

interface Import {
  specifier: string;
  /** `import type`, `export type`, or every named binding `type`. */
  typeOnly: boolean;
  dynamic: boolean;
}

/** The module specifiers a file names: its import and export declarations, and its `import()` calls with a literal. */
function importsOf(path: string, text: string): Import[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false);
  const found: Import[] = [];
  for (const statement of file.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      const clause = statement.importClause;
      const bindings = clause?.namedBindings;
      const typeOnly =
        !!clause &&
        (clause.isTypeOnly ||
          (!clause.name &&
            !!bindings &&
            ts.isNamedImports(bindings) &&
            bindings.elements.length > 0 &&
            bindings.elements.every((e) => e.isTypeOnly)));
      found.push({ specifier: statement.moduleSpecifier.text, typeOnly, dynamic: false });
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier && ts.isStringLiteral(statement.moduleSpecifier)) {
      found.push({ specifier: statement.moduleSpecifier.text, typeOnly: statement.isTypeOnly, dynamic: false });
    }
  }
  // import() anywhere: an explicit stack, so a deep expression costs no recursion.
  const stack: ts.Node[] = [file];
  while (stack.length) {
    const node = stack.pop()!;
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteralLike(arg)) found.push({ specifier: arg.text, typeOnly: false, dynamic: true });
      // `typeof import('./x.js')`: the type of what an import() loads, counted as that import() is.
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true, dynamic: true });
    }
    node.forEachChild((child) => void stack.push(child));
  }
  return found;
}

/** The file a relative specifier names, as NodeNext resolves it with TypeScript's sources (`./a.js` is `./a.ts` or `./a.tsx`). */
function resolveRelative(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(from), specifier);
  const candidates = [target];
  const swap: Record<string, string[]> = { '.js': ['.ts', '.tsx'], '.mjs': ['.mts'], '.cjs': ['.cts'] };
  for (const [ext, sources] of Object.entries(swap)) {
    if (target.endsWith(ext)) candidates.unshift(...sources.map((s) => target.slice(0, -ext.length) + s));
  }
  return candidates.find((c) => existsSync(c));
}

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const pending = [dir];
  while (pending.length) {
    const here = pending.pop()!;
    for (const entry of await readdir(here, { withFileTypes: true })) {
      const path = join(here, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') pending.push(path);
      } else if (SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
    }
  }
  return out;
}

interface Graph {
  /** Each file (relative to the root) and the files its static imports name, in source order. */
  edges: Map<string, string[]>;
  /** Each file's imports as written. */
  imports: Map<string, Import[]>;
}

async function importGraph(root: string, dirs: string[]): Promise<Graph> {
  const files = (await Promise.all(dirs.map((d) => sourceFiles(join(root, d))))).flat();
  const edges = new Map<string, string[]>();
  const imports = new Map<string, Import[]>();
  for (const path of files) {
    const name = relative(root, path).split(sep).join('/');
    const found = importsOf(path, await readFile(path, 'utf8'));
    imports.set(name, found);
    const targets: string[] = [];
    for (const i of found) {
      if (i.dynamic) continue;
      const target = resolveRelative(path, i.specifier);
      if (target) targets.push(relative(root, target).split(sep).join('/'));
    }
    edges.set(name, [...new Set(targets)]);
  }
  return { edges, imports };
}

/**
 * Every import circle, one per strongly connected component (Tarjan's
 * algorithm, iterative: linear in files and imports), each named as a path
 * from its first file (in sort order) back to it.
 */
function importCircles(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  for (const start of [...edges.keys()].sort()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; child: number }> = [{ node: start, child: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length) {
      const frame = work.at(-1)!;
      const targets = edges.get(frame.node) ?? [];
      if (frame.child < targets.length) {
        const to = targets[frame.child++]!;
        if (!edges.has(to)) continue;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, child: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      const parent = work.at(-1);
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || targets.includes(frame.node)) components.push(component);
      }
    }
  }
  return components.map((component) => circleThrough(component, edges));
}

/** A shortest path of imports from the component's first file back to it, within the component (breadth first). */
function circleThrough(component: string[], edges: Map<string, string[]>): string[] {
  const members = new Set(component);
  const first = [...component].sort()[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [first];
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i]!;
    for (const to of edges.get(node) ?? []) {
      if (!members.has(to)) continue;
      if (to === first) {
        const path = [node];
        while (path[0] !== first) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, first];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, node);
        queue.push(to);
      }
    }
  }
  return [first, first];
}

const named = (circles: string[][]) => circles.map((c) => c.join(' -> '));

/** What functions/core imports that the layout forbids: `file: specifier`. */
function forbiddenInCore(graph: Graph, root: string): string[] {
  const wrong: string[] = [];
  for (const [file, imports] of graph.imports) {
    if (!file.startsWith('functions/core/')) continue;
    for (const { specifier } of imports) {
      const sdk = /^@aws-sdk\/([^/]+)/.exec(specifier);
      if (sdk && !AWS_SDK_IN_CORE.has(sdk[1]!)) wrong.push(`${file}: ${specifier}`);
      const target = resolveRelative(join(root, file), specifier);
      const into = target && relative(root, target).split(sep).join('/');
      if (into && /^functions\/(aws|local)\//.test(into)) wrong.push(`${file}: ${specifier}`);
    }
  }
  return wrong;
}

describe('the guard itself, on a tree made for it', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'cairn-import-graph-'));
    const files: Record<string, string> = {
      // a -> b -> c -> a, a circle of static imports with a re-export among them.
      'functions/core/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'functions/core/b.ts': "export { c as b } from '../door/c.js';\n",
      'functions/door/c.ts': "import { a } from '../core/a.js';\nexport const c = a;\n",
      // d <-> e by a type only: a circle too.
      'lib/d.ts': "import type { E } from './e.js';\nexport type D = E[];\n",
      'lib/e.ts': "import { type D } from './d.js';\nexport type E = D | string;\n",
      // f loads g when called: no circle.
      'bin/f.ts': "export const f = () => import('./g.js');\n",
      'bin/g.ts': "import { f } from './f.js';\nexport const g = f;\n",
      // A module importing itself.
      'bin/h.mjs': "import './h.mjs';\n",
      // The core reaching for AWS.
      'functions/core/s.ts': [
        "import { S3Client } from '@aws-sdk/client-s3';",
        "import type { SQSClient } from '@aws-sdk/client-sqs';",
        "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
        "import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';",
        "import { marshall } from '@aws-sdk/util-dynamodb';",
        "import { crc32 } from '@aws-sdk/checksums/crc';",
        "export const s = async () => [S3Client, DynamoDBClient, DynamoDBDocumentClient, marshall, crc32, await import('../aws/q.js')];",
        'export type Q = SQSClient;',
      ].join('\n'),
      'functions/aws/q.ts': 'export const q = 1;\n',
    };
    for (const [name, text] of Object.entries(files)) {
      await mkdir(dirname(join(root, name)), { recursive: true });
      await writeFile(join(root, name), text);
    }
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  test('names each circle, static and type-only, and not one closed by import()', async () => {
    const graph = await importGraph(root, ['functions', 'lib', 'bin']);
    expect(named(importCircles(graph.edges)).sort()).toEqual([
      'bin/h.mjs -> bin/h.mjs',
      'functions/core/a.ts -> functions/core/b.ts -> functions/door/c.ts -> functions/core/a.ts',
      'lib/d.ts -> lib/e.ts -> lib/d.ts',
    ]);
  });

  test("names the core's AWS clients other than DynamoDB's, and its imports of an adapter", async () => {
    const graph = await importGraph(root, ['functions', 'lib', 'bin']);
    expect(forbiddenInCore(graph, root)).toEqual([
      'functions/core/s.ts: @aws-sdk/client-s3',
      'functions/core/s.ts: @aws-sdk/client-sqs',
      'functions/core/s.ts: ../aws/q.js',
    ]);
  });
});

describe("Cairn's own code", () => {
  let graph: Graph;
  beforeAll(async () => {
    graph = await importGraph(ROOT, ['functions', 'lib', 'bin']);
  });

  test('functions/, lib/ and bin/ hold no import circle', () => {
    // Every relative import resolved to a file: a miss would hide an edge.
    const unresolved = [...graph.imports].flatMap(([file, imports]) =>
      imports
        .filter((i) => i.specifier.startsWith('.') && !resolveRelative(join(ROOT, file), i.specifier))
        .map((i) => `${file}: ${i.specifier}`),
    );
    expect(unresolved).toEqual([]);
    expect(graph.edges.size).toBeGreaterThan(300);
    expect(named(importCircles(graph.edges))).toEqual([]);
  });

  test("functions/core imports no AWS client but DynamoDB's, and no adapter", () => {
    expect(forbiddenInCore(graph, ROOT)).toEqual([]);
  });
});
