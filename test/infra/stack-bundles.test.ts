/**
 * The five Lambda bundles (and the part-staging authoriser's) as the stack's synthesis builds them (real
 * esbuild, the preview function's with Chromium copied beside it): each is
 * ESM from its own entry and loads on its own outside the repository, the
 * web app is built into the GraphQL bundle, the preview bundle resolves its
 * copied packages, and the KeyValueStore signer is where it is needed.
 *
 * A long suite (jest.config.js): bundling takes about 40 s of CPU. What the
 * template says about these functions is cairn-stack.test.ts's, which
 * synthesizes without bundling.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { CairnStack, type CairnFunctions } from '../../lib/cairn-stack.js';
import { PROJECT_ROOT, REQUIRE_BANNER, packageClosure } from '../../lib/functions.js';
import { PREVIEW_EXTERNAL_PACKAGES } from '../../lib/preview.js';

type Json = any;

let app: App;
let stack: CairnStack;
let resources: Record<string, Json>;
let assemblyDir: string;
let synthSeconds: number;

beforeAll(() => {
  const started = Date.now();
  // The same feature flags the CLI passes from cdk.json.
  const cdkJson = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8'));
  app = new App({ context: cdkJson.context });
  stack = new CairnStack(app, 'Cairn');
  const assembly = app.synth();
  assemblyDir = assembly.directory;
  resources = assembly.getStackByName(stack.stackName).template.Resources;
  synthSeconds = (Date.now() - started) / 1000;
}, 240_000);

// The assembly (bundles and source maps) lives in a temporary directory.
afterAll(() => fs.rmSync(app.outdir, { recursive: true, force: true }));

const FUNCTION_NAMES = ['graphql', 's3', 'gateway', 'deployWorker', 'preview'] as const;
type FunctionName = (typeof FUNCTION_NAMES)[number];

/** Each function's folder under functions/. */
const EXPECTED: Record<FunctionName, { dir: string }> = {
  graphql: { dir: 'graphql' },
  s3: { dir: 's3' },
  gateway: { dir: 'gateway' },
  deployWorker: { dir: 'deploy-worker' },
  preview: { dir: 'preview' },
};

function fnResource(name: FunctionName): Json {
  const fn: IFunction = (stack.functions as CairnFunctions)[name];
  return resources[stack.getLogicalId(fn.node.defaultChild as CfnElement)];
}

/** The bundled asset directory of a function, from its S3 key. */
function assetDir(name: FunctionName): string {
  const key: string = fnResource(name).Properties.Code.S3Key;
  const dir = path.join(assemblyDir, `asset.${key.replace(/\.zip$/, '')}`);
  expect(fs.existsSync(dir)).toBe(true);
  return dir;
}

/** A bundle's own files (index.mjs and the chunks it imports when needed, not the packages copied beside it). */
function bundleFiles(dir: string): string[] {
  const chunks = path.join(dir, 'chunks');
  const inChunks = fs.existsSync(chunks) ? fs.readdirSync(chunks).map((f) => path.join(chunks, f)) : [];
  return [path.join(dir, 'index.mjs'), ...inChunks.filter((f) => f.endsWith('.mjs'))];
}

/** Every source file a bundle's maps name. */
function bundleSources(dir: string): string[] {
  return bundleFiles(dir).flatMap((f) => JSON.parse(fs.readFileSync(`${f}.map`, 'utf8')).sources as string[]);
}

describe('functions', () => {
  test.each(FUNCTION_NAMES.map((n) => [n]))('%s: the bundle is ESM from its own entry, with the require banner', (name) => {
    const dir = assetDir(name);
    const code = fs.readFileSync(path.join(dir, 'index.mjs'), 'utf8');
    expect(code.startsWith(REQUIRE_BANNER)).toBe(true);
    const sources = bundleSources(dir);
    const own = `functions/${EXPECTED[name].dir}/handler.ts`;
    expect(sources.some((s: string) => s.endsWith(own))).toBe(true);
    for (const other of FUNCTION_NAMES.filter((n) => n !== name)) {
      expect(sources.some((s: string) => s.endsWith(`functions/${EXPECTED[other].dir}/handler.ts`))).toBe(false);
    }
    // Local-only packages never end up in a bundle.
    expect(sources.some((s: string) => /node_modules\/(dynalite|level|classic-level)\//.test(s))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'schema.graphql'))).toBe(name === 'graphql');
  });

  test('each bundle loads on its own (outside the repository) and exports handler', () => {
    // The Lambda runtime provides `awslambda` (streaming handlers call it at load time).
    const probe =
      'globalThis.awslambda = { streamifyResponse: (h) => h, HttpResponseStream: { from: (s) => s } };' +
      "import(process.argv[1]).then((m) => { if (typeof m.handler !== 'function') { console.error('no handler export'); process.exit(1); } }," +
      ' (e) => { console.error(e); process.exit(1); });';
    for (const name of FUNCTION_NAMES) {
      const dir = assetDir(name);
      try {
        execFileSync(process.execPath, ['-e', probe, path.join(dir, 'index.mjs')], {
          cwd: dir,
          env: {
            PATH: process.env.PATH,
            CAIRN_SCHEMA_PATH: path.join(dir, 'schema.graphql'),
            CAIRN_LOG_LEVEL: 'silent',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: 30_000,
        });
      } catch (e) {
        const err = e as { stderr?: Buffer };
        throw new Error(`the ${name} bundle does not load: ${err.stderr?.toString() ?? String(e)}`);
      }
    }
  });

  test('@sparticuz/chromium and playwright-core are left out of the bundle and copied beside it with their dependencies', () => {
    const dir = assetDir('preview');
    expect(bundleSources(dir).some((s: string) => /node_modules\/(@sparticuz\/chromium|playwright-core)\//.test(s))).toBe(false);
    const closure = packageClosure(PREVIEW_EXTERNAL_PACKAGES);
    expect(closure).toEqual(
      expect.arrayContaining(['node_modules/@sparticuz/chromium', 'node_modules/playwright-core', 'node_modules/tar-fs']),
    );
    for (const p of closure) expect(fs.existsSync(path.join(dir, p, 'package.json'))).toBe(true);
    expect(fs.statSync(path.join(dir, 'node_modules/@sparticuz/chromium/bin/chromium.br')).size).toBeGreaterThan(30e6);
    // No other bundle carries them.
    for (const name of FUNCTION_NAMES.filter((n) => n !== 'preview'))
      expect(fs.existsSync(path.join(assetDir(name), 'node_modules'))).toBe(false);
  });

  test('the preview bundle, outside the repository, resolves @sparticuz/chromium and playwright-core from its own node_modules', () => {
    const dir = assetDir('preview');
    const probe =
      "Promise.all([import('@sparticuz/chromium'), import('playwright-core')]).then(([c, p]) => {" +
      " if (!Array.isArray(c.default.args) || typeof p.chromium.launch !== 'function') process.exit(1);" +
      " console.log(import.meta.resolve('@sparticuz/chromium')); }, (e) => { console.error(e); process.exit(1); });";
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', probe], {
      cwd: dir,
      env: { PATH: process.env.PATH },
      timeout: 30_000,
    }).toString();
    expect(out.trim()).toBe(`file://${fs.realpathSync(dir)}/node_modules/@sparticuz/chromium/build/index.js`);
  });

  test('graphql: the web app built into its bundle', () => {
    const files = fs.readdirSync(path.join(assetDir('graphql'), 'web-app'));
    expect(files).toContain('index.html');
    expect(files.some((f) => /^app-[A-Za-z0-9_-]+\.js$/.test(f))).toBe(true);
    expect(files.some((f) => /^app-[A-Za-z0-9_-]+\.css$/.test(f))).toBe(true);
  });
});

describe('part staging', () => {
  test("the authoriser's bundle: ESM from functions/part-staging/handler.ts alone, loading on its own outside the repository", () => {
    const fn = stack.partStaging.authorizerFunction;
    const key: string = resources[stack.getLogicalId(fn.node.defaultChild as CfnElement)].Properties.Code.S3Key;
    const dir = path.join(assemblyDir, `asset.${key.replace(/\.zip$/, '')}`);
    const code = fs.readFileSync(path.join(dir, 'index.mjs'), 'utf8');
    expect(code.startsWith(REQUIRE_BANNER)).toBe(true);
    const sources = bundleSources(dir);
    expect(sources.some((s: string) => s.endsWith('functions/part-staging/handler.ts'))).toBe(true);
    for (const other of FUNCTION_NAMES) {
      expect(sources.some((s: string) => s.endsWith(`functions/${EXPECTED[other].dir}/handler.ts`))).toBe(false);
    }
    expect(sources.some((s: string) => /node_modules\/(dynalite|level|classic-level)\//.test(s))).toBe(false);
    const probe =
      "import(process.argv[1]).then((m) => { if (typeof m.handler !== 'function') { console.error('no handler export'); process.exit(1); } }," +
      ' (e) => { console.error(e); process.exit(1); });';
    execFileSync(process.execPath, ['-e', probe, path.join(dir, 'index.mjs')], {
      cwd: dir,
      env: { PATH: process.env.PATH, CAIRN_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
    });
  });
});

describe('sites CDN', () => {
  test('the graphql and worker bundles carry the SigV4a signer the KeyValueStore API needs', () => {
    for (const name of ['graphql', 'deployWorker'] as const) {
      // In a chunk of its own: the KeyValueStore client is imported when the stack names a store (functions/aws/adapters.ts).
      const code = bundleFiles(assetDir(name))
        .map((f) => fs.readFileSync(f, 'utf8'))
        .join('\n');
      expect(code).toContain('AWS4-ECDSA-P256-SHA256');
      expect(code).toContain('cloudfront-kvs');
    }
  });
});

test('synthesis (with real bundling) stays fast', () => {
  // Not a correctness check: a warning light if bundling grows slow
  // (five bundles, the preview function's with ~95 MB of Chromium copied
  // beside it). Wall time on a 2-core machine other test runs share: about
  // 60 s alone, twice that beside a busy neighbour.
  expect(synthSeconds).toBeLessThan(240);
});
