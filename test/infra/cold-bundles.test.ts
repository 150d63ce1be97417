/**
 * What a function's bundle loads at start-up (lib/functions.ts): the handler
 * module and the chunks it imports statically hold only what the function
 * uses on every request; AWS clients of rare paths, Apollo's usage
 * reporting and playwright-core come in chunks read when their import runs.
 * And a stack trace thrown in a bundle names the sources' files and lines
 * although no map is read at start-up (functions/aws/source-mapped-stacks.ts).
 *
 * The bundles are built here with the stack's own bundler (bundleFunction),
 * esbuild's metafile telling which file imports which, statically or not;
 * `npm run bench:cold` times them.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { bundleFunction, CHUNK_DIR, LOCAL_ONLY_MODULES, PROJECT_ROOT } from '../../lib/functions.js';
import { PREVIEW_EXTERNAL_PACKAGES } from '../../lib/preview.js';

interface Metafile {
  outputs: Record<
    string,
    { bytes: number; inputs: Record<string, unknown>; imports: Array<{ path: string; kind: string; external?: boolean }> }
  >;
}

interface Built {
  dir: string;
  meta: Metafile;
  /** The output files read when index.mjs is imported (index.mjs and its static imports, transitively). */
  atStart: string[];
}

const work = fs.mkdtempSync(path.join(tmpdir(), 'cairn-cold-bundles-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

function build(entry: string, external: readonly string[]): Built {
  const dir = fs.mkdtempSync(path.join(work, 'bundle-'));
  const metafile = path.join(work, `${path.basename(dir)}.meta.json`);
  bundleFunction(entry, dir, external, metafile);
  const meta = JSON.parse(fs.readFileSync(metafile, 'utf8')) as Metafile;
  const index = path.relative(PROJECT_ROOT, path.join(dir, 'index.mjs'));
  const atStart = new Set<string>();
  const visit = (file: string) => {
    if (atStart.has(file)) return;
    atStart.add(file);
    for (const i of meta.outputs[file]!.imports) if (i.kind === 'import-statement' && !i.external) visit(i.path);
  };
  visit(index);
  return { dir, meta, atStart: [...atStart] };
}

const handlerOf = (name: string) => path.join(PROJECT_ROOT, 'functions', name, 'handler.ts');

/** The packages (or, outside node_modules, the files) whose code the given output files hold. */
function packagesIn(meta: Metafile, files: readonly string[]): Set<string> {
  const found = new Set<string>();
  for (const file of files) {
    for (const input of Object.keys(meta.outputs[file]!.inputs)) {
      const at = input.lastIndexOf('node_modules/');
      if (at < 0) {
        found.add(input);
        continue;
      }
      const parts = input.slice(at + 'node_modules/'.length).split('/');
      found.add(parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
    }
  }
  return found;
}

const allOutputs = (b: Built) => Object.keys(b.meta.outputs).filter((f) => f.endsWith('.mjs'));

/** AWS clients no function calls on every request: each is loaded when its adapter is built or used. */
const RARE_CLIENTS = [
  '@aws-sdk/client-cloudfront',
  '@aws-sdk/client-cloudfront-keyvaluestore',
  '@aws-sdk/client-codebuild',
  '@aws-sdk/client-sqs',
  '@aws-sdk/client-lambda',
  // Sites' DNSLink records: with the first write (functions/aws/adapters.ts).
  '@aws-sdk/client-route-53',
];

describe('what a bundle loads at start-up', () => {
  let graphql: Built;
  let s3: Built;
  let preview: Built;
  let worker: Built;

  beforeAll(() => {
    graphql = build(handlerOf('graphql'), LOCAL_ONLY_MODULES);
    s3 = build(handlerOf('s3'), LOCAL_ONLY_MODULES);
    worker = build(handlerOf('deploy-worker'), LOCAL_ONLY_MODULES);
    preview = build(handlerOf('preview'), [...LOCAL_ONLY_MODULES, ...PREVIEW_EXTERNAL_PACKAGES]);
  }, 300_000);

  test('graphql: one Apollo (its ES module build), its usage-reporting protobuf and the IPFS node out of the start-up files', () => {
    const atStart = packagesIn(graphql.meta, graphql.atStart);
    const inBundle = packagesIn(graphql.meta, allOutputs(graphql));
    expect(atStart).toContain('@apollo/server');
    expect(atStart).toContain('graphql');
    expect(atStart).toContain('@aws-sdk/client-dynamodb');
    // @as-integrations/aws-lambda requires @apollo/server: it gets the same ES module build.
    const apolloBuilds = Object.values(graphql.meta.outputs).flatMap((o) =>
      Object.keys(o.inputs).filter((i) => /node_modules\/@apollo\/server\/dist\/(cjs|esm)\/ApolloServer\.js$/.test(i)),
    );
    expect(apolloBuilds).toEqual([expect.stringContaining('/dist/esm/')]);
    expect(atStart).not.toContain('@apollo/usage-reporting-protobuf');
    for (const ipfs of ['helia', 'blockstore-fs', '@helia/unixfs']) expect(atStart).not.toContain(ipfs);
    for (const client of RARE_CLIENTS) expect(atStart).not.toContain(client);
    // Still in the bundle, for when they are used.
    expect(inBundle).toContain('@aws-sdk/client-cloudfront');
    expect(inBundle).toContain('@aws-sdk/client-sqs');
    expect(inBundle).toContain('@aws-sdk/client-route-53');
    // The mailer is read with the first message a function sends (an invitation), not at start.
    expect(atStart).not.toContain('nodemailer');
    expect(inBundle).toContain('nodemailer');
    // So is the WebAuthn library, with its ASN.1 and X.509 packages, with the first passkey request.
    for (const pkg of ['@simplewebauthn/server', '@peculiar/x509']) {
      expect([pkg, atStart.has(pkg)]).toEqual([pkg, false]);
      expect([pkg, inBundle.has(pkg)]).toEqual([pkg, true]);
    }
    // Secrets Manager's client, with the first request of a stack that keeps sign-in and mail settings in a secret.
    expect(atStart).not.toContain('@aws-sdk/client-secrets-manager');
    expect(inBundle).toContain('@aws-sdk/client-secrets-manager');
  });

  test("graphql: the CAR reader and the IPLD codecs (the import endpoint's, deployCid's) come with their first use", () => {
    const atStart = packagesIn(graphql.meta, graphql.atStart);
    const inBundle = packagesIn(graphql.meta, allOutputs(graphql));
    for (const ipld of ['@ipld/car', '@ipld/dag-pb', '@ipld/dag-cbor', 'cborg']) {
      expect([ipld, atStart.has(ipld)]).toEqual([ipld, false]);
      expect([ipld, inBundle.has(ipld)]).toEqual([ipld, true]);
    }
    expect(atStart).not.toContain('functions/core/storage/car-ingest.ts');
  });

  test("graphql: Apollo's operation hashes are node:crypto's, so sha.js and its 64 modules are not in the bundle", () => {
    const inBundle = packagesIn(graphql.meta, allOutputs(graphql));
    for (const pkg of ['sha.js', '@apollo/utils.createhash', 'to-buffer']) expect([pkg, inBundle.has(pkg)]).toEqual([pkg, false]);
    // The replacement is what Apollo's requestPipeline imports.
    expect(inBundle).toContain('node-createhash:createhash');
  });

  test("deploy worker: isomorphic-git comes with a deploy's first clone, not with the handler module", () => {
    const atStart = packagesIn(worker.meta, worker.atStart);
    const inBundle = packagesIn(worker.meta, allOutputs(worker));
    for (const git of ['isomorphic-git', 'pako']) {
      expect([git, atStart.has(git)]).toEqual([git, false]);
      expect([git, inBundle.has(git)]).toEqual([git, true]);
    }
    expect(atStart).toContain('functions/deploy-worker/pipeline.ts');
    expect(atStart).not.toContain('functions/deploy-worker/steps/clone/index.ts');
    for (const client of RARE_CLIENTS.filter((c) => c !== '@aws-sdk/client-codebuild' && c !== '@aws-sdk/client-sqs'))
      expect(atStart).not.toContain(client);
  });

  test('s3: no CloudFront, CodeBuild, SQS or Lambda client among the start-up files', () => {
    const atStart = packagesIn(s3.meta, s3.atStart);
    expect(atStart).toContain('@aws-sdk/client-dynamodb');
    for (const client of RARE_CLIENTS) expect(atStart).not.toContain(client);
    expect(atStart).not.toContain('@apollo/server');
  });

  test("s3: the IPLD codecs (cborg) and ipfs-unixfs-exporter come with the first block or path only they read, not with an object's read", () => {
    const atStart = packagesIn(s3.meta, s3.atStart);
    const inBundle = packagesIn(s3.meta, allOutputs(s3));
    for (const pkg of ['cborg', '@ipld/dag-cbor', '@ipld/dag-json', 'ipfs-unixfs-exporter']) {
      expect([pkg, atStart.has(pkg)]).toEqual([pkg, false]);
      expect([pkg, inBundle.has(pkg)]).toEqual([pkg, true]);
    }
    // What an object's read needs is there: the path and block readers, which only tell codecs apart (ipld-codecs.ts).
    expect(atStart).toContain('functions/core/ipfs/paths.ts');
    expect(atStart).toContain('functions/core/ipfs/ipld-codecs.ts');
    expect(atStart).not.toContain('functions/core/ipfs/ipld.ts');
  });

  test('preview: playwright-core imported when the first browser starts, not with the handler module', () => {
    const staticImports = preview.atStart.flatMap((f) => preview.meta.outputs[f]!.imports.filter((i) => i.kind === 'import-statement'));
    expect(staticImports.map((i) => i.path)).not.toContain('playwright-core');
    const dynamicImports = allOutputs(preview).flatMap((f) => preview.meta.outputs[f]!.imports.filter((i) => i.kind === 'dynamic-import'));
    expect(dynamicImports.map((i) => i.path)).toContain('playwright-core');
  });

  test('no file imports node:http, node:fs, node:util or node:process statically: each is required, so its ES module facade is not built', () => {
    const costly = ['http', 'fs', 'util', 'process'].flatMap((n) => [n, `node:${n}`]);
    for (const built of [graphql, s3, preview]) {
      const facades = allOutputs(built).flatMap((f) =>
        built.meta.outputs[f]!.imports.filter((i) => i.external && i.kind === 'import-statement' && costly.includes(i.path)).map(
          (i) => `${f}: ${i.path}`,
        ),
      );
      expect(facades).toEqual([]);
      // The other built-ins stay imports (a shim is a module to load, and their facades cost less).
      const imported = allOutputs(built).flatMap((f) =>
        built.meta.outputs[f]!.imports.filter((i) => i.external && i.kind === 'import-statement' && isBuiltin(i.path)),
      );
      expect(imported.length).toBeGreaterThan(0);
    }
  });

  test("importing the S3 handler module loads neither undici (node:http's facade) nor HTTP/2", () => {
    const probe = [
      'globalThis.awslambda = { streamifyResponse: (h) => h, HttpResponseStream: { from: (s) => s } };',
      'const before = process.moduleLoadList.length;',
      `const m = await import(${JSON.stringify(path.join(s3.dir, 'index.mjs'))});`,
      "if (typeof m.handler !== 'function') throw new Error('no handler');",
      'console.log(JSON.stringify(process.moduleLoadList.slice(before)));',
    ].join('\n');
    const loaded = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', probe], {
        cwd: s3.dir,
        env: { PATH: process.env.PATH },
        timeout: 60_000,
      }).toString(),
    ) as string[];
    // The handler's own dependencies did load (the probe measures something).
    expect(loaded).toContain('NativeModule https');
    expect(loaded.filter((m) => /undici|http2/.test(m))).toEqual([]);
  });

  test('chunks live under chunks/, each with its map beside it and no map read at start-up', () => {
    const files = fs.readdirSync(path.join(s3.dir, CHUNK_DIR));
    expect(files.some((f) => f.endsWith('.mjs'))).toBe(true);
    for (const f of files.filter((n) => n.endsWith('.mjs'))) expect(files).toContain(`${f}.map`);
    const map = JSON.parse(fs.readFileSync(path.join(s3.dir, 'index.mjs.map'), 'utf8'));
    // The sources' text stays out of the package: the lines are enough to read a trace.
    expect(map.sourcesContent).toBeUndefined();
  });
});

describe("a bundle's Node built-ins, required rather than imported", () => {
  let dir: string;

  beforeAll(() => {
    const src = fs.mkdtempSync(path.join(work, 'builtins-'));
    // Every shape of import a dependency uses for a built-in, each checked against the built-in itself.
    fs.writeFileSync(
      path.join(src, 'entry.ts'),
      [
        "import { createRequire } from 'node:module';",
        "import { EventEmitter, once } from 'node:events';",
        "import events from 'events';",
        "import * as http from 'node:http';",
        "import { Agent, request } from 'http';",
        "import { createHash } from 'node:crypto';",
        "import { readFile } from 'node:fs/promises';",
        "import { createHash as apolloHash } from '@apollo/utils.createhash';",
        'const real = createRequire(import.meta.url);',
        'class Emitter extends EventEmitter {}',
        'export async function handler(): Promise<Record<string, unknown>> {',
        "  const undici = process.moduleLoadList.some((m) => m.includes('undici'));",
        // A dynamic import stays an import (and builds the facade): after the check above.
        "  const dynamic = await import('node:http');",
        '  const emitter = new Emitter();',
        "  const fired = once(emitter, 'x');",
        "  emitter.emit('x', 42);",
        '  return {',
        "    sameEmitter: EventEmitter === real('node:events') && events === real('node:events'),",
        "    subclass: emitter instanceof real('node:events'),",
        '    fired: (await fired)[0],',
        "    sameRequest: request === real('node:http').request && http.request === request && dynamic.request === request,",
        "    agent: new Agent() instanceof real('node:http').Agent,",
        "    hash: createHash('sha256').update('cairn').digest('hex'),",
        // Apollo's operation hash, as the bundle gives it (function-bundle.mjs): node:crypto's, with no sha.js loaded.
        "    apollo: apolloHash('sha256').update('cairn').digest('hex'),",
        "    apolloIsNode: apolloHash('sha256') instanceof real('node:crypto').Hash,",
        '    read: (await readFile(new URL(import.meta.url))).length > 0,',
        '    undici,',
        '  };',
        '}',
      ].join('\n'),
    );
    dir = build(path.join(src, 'entry.ts'), []).dir;
  }, 120_000);

  test('named, default, namespace and dynamic imports give the built-ins themselves, and no facade loads undici', () => {
    const script = `const m = await import(${JSON.stringify(path.join(dir, 'index.mjs'))}); console.log(JSON.stringify(await m.handler()));`;
    const answer = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: dir,
        env: { PATH: process.env.PATH },
        timeout: 30_000,
      }).toString(),
    );
    expect(answer).toEqual({
      sameEmitter: true,
      subclass: true,
      fired: 42,
      sameRequest: true,
      agent: true,
      hash: '4a9909a9516d02fd4c729a45922398fb41c398c235423a5304085bc923a8db67',
      apollo: '4a9909a9516d02fd4c729a45922398fb41c398c235423a5304085bc923a8db67',
      apolloIsNode: true,
      read: true,
      undici: false,
    });
  });
});

describe('stack traces of a bundle', () => {
  let dir: string;

  beforeAll(() => {
    const src = fs.mkdtempSync(path.join(work, 'src-'));
    const stacks = path.join(PROJECT_ROOT, 'functions', 'aws', 'source-mapped-stacks.ts');
    fs.writeFileSync(
      path.join(src, 'entry.ts'),
      [
        `import { sourceMappedStacks } from ${JSON.stringify(stacks)};`,
        'sourceMappedStacks();',
        'export async function handler(): Promise<string> {',
        "  const { failDeep } = await import('./deep.js');",
        '  try {',
        '    failDeep();',
        "    return 'no error';",
        '  } catch (err) {',
        '    return (err as Error).stack ?? "";',
        '  }',
        '}',
      ].join('\n'),
    );
    // The throw is on line 3 of deep.ts.
    fs.writeFileSync(
      path.join(src, 'deep.ts'),
      ['export function failDeep(): never {', '  const why = "a deep failure";', '  throw new Error(why);', '}'].join('\n'),
    );
    dir = build(path.join(src, 'entry.ts'), []).dir;
  }, 120_000);

  const stackOf = (env: Record<string, string>, flags: string[] = []) =>
    execFileSync(
      process.execPath,
      [
        ...flags,
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(path.join(dir, 'index.mjs'))}); console.log(await m.handler());`,
      ],
      { cwd: dir, env: { PATH: process.env.PATH, ...env }, timeout: 30_000 },
    ).toString();

  test("in Lambda (LAMBDA_TASK_ROOT names the bundle) a frame names the source's file and line", () => {
    const stack = stackOf({ LAMBDA_TASK_ROOT: dir });
    expect(stack).toMatch(/^Error: a deep failure\n/);
    expect(stack).toMatch(/at failDeep \(.*deep\.ts:3:\d+\)/);
    expect(stack).toMatch(/entry\.ts:6:\d+/);
    expect(stack).not.toMatch(/\.mjs:\d+:\d+/);
  });

  test('outside Lambda nothing is installed: V8 names the bundle files', () => {
    const stack = stackOf({});
    expect(stack).toMatch(/chunks\/deep-[A-Z0-9]+\.mjs:\d+:\d+/);
    expect(stack).not.toMatch(/deep\.ts/);
  });

  test('with --enable-source-maps Node maps the frames itself and the formatter stays out', () => {
    const stack = stackOf({ LAMBDA_TASK_ROOT: dir }, ['--enable-source-maps']);
    expect(stack).toMatch(/deep\.ts:3:\d+/);
  });
});
