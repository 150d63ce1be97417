/**
 * One Cairn Lambda function: a NodejsFunction bundled by esbuild as ESM for
 * Node (on ARM unless it needs x86_64), with its own log group and, when
 * asked, X-Ray active tracing (Powertools' Tracer records the handler and
 * its AWS calls: functions/core/observability.ts). The handler files live
 * under functions/<name>/handler.ts and export `handler`.
 *
 * The bundle is built for a short cold start (issue 31; `npm run
 * bench:cold` measures it). Lambda's Node.js runtime imports the handler
 * module during the function's initialization, so what that module pulls
 * in is compiled before the first request can be served
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html#runtimes-lifecycle-ib):
 *
 * - Code splitting: what a handler imports dynamically (the AWS clients
 *   functions/aws/adapters.ts loads when its resource is configured or
 *   first used, Apollo's usage reporting, rare paths) becomes a chunk of
 *   its own under chunks/, read only when that import runs. NodejsFunction's
 *   own bundling writes one file (`--outfile`), where esbuild cannot split,
 *   so the asset is bundled here (function-bundle.mjs) and handed to
 *   NodejsFunction as `code`.
 * - No source maps at start-up: the maps are written beside the files
 *   (linked, without the sources' text) but NODE_OPTIONS does not carry
 *   --enable-source-maps, which makes Node read and parse every map when
 *   the module loads (7-11 MB, about 100 ms per function measured on Node
 *   24). functions/aws/source-mapped-stacks.ts reads a map only when a
 *   stack trace is first formatted.
 * - node:http, node:fs, node:util and node:process required, not imported
 *   (function-bundle.mjs): an ES module import of node:http builds its
 *   facade, which loads undici.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetHashType, DockerImage, Duration, type Size, Validations } from 'aws-cdk-lib';
import { Architecture, Code, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** The repository root (this file is lib/functions.ts). */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const RUNTIME = Runtime.NODEJS_24_X;

/** The esbuild target; the bundle runs on Node 22 and newer. */
export const BUNDLE_TARGET = 'node22';

/**
 * Packages only the local server uses (through dynamic imports); a handler
 * never loads them, so they stay out of every bundle. Everything else,
 * the AWS SDK v3 included, is bundled so its versions match the lock file.
 */
export const LOCAL_ONLY_MODULES = ['dynalite', 'datastore-level', 'level', 'classic-level'];

/**
 * An ESM bundle may still contain CommonJS dependencies that call
 * `require`; define it from `import.meta.url`. The import is aliased so it
 * cannot collide with a top-level `createRequire` esbuild emits for bundled
 * code.
 */
export const REQUIRE_BANNER =
  "import { createRequire as __cairnCreateRequire } from 'node:module'; const require = __cairnCreateRequire(import.meta.url);";

/**
 * CommonJS dependencies that require one of these get its ES module build
 * (function-bundle.mjs): @as-integrations/aws-lambda requires
 * @apollo/server, whose CommonJS build would put a second Apollo in the
 * GraphQL bundle, with its usage-reporting protobuf (about 700 KB of
 * source) loaded at start-up; the ES module build imports that plugin only
 * when usage reporting is configured (APOLLO_KEY), which Cairn never does.
 */
export const CJS_AS_ESM = ['@apollo/server'];

/** Where a function's dynamically imported code goes inside its bundle. */
export const CHUNK_DIR = 'chunks';

/** The esbuild options of a function's bundle (function-bundle.mjs adds its plugin). */
export function bundleOptions(entry: string, outdir: string, external: readonly string[]): Record<string, unknown> {
  return {
    entryPoints: { index: entry },
    outdir,
    absWorkingDir: PROJECT_ROOT,
    tsconfig: path.join(PROJECT_ROOT, 'tsconfig.json'),
    bundle: true,
    splitting: true,
    chunkNames: `${CHUNK_DIR}/[name]-[hash]`,
    outExtension: { '.js': '.mjs' },
    format: 'esm',
    platform: 'node',
    target: BUNDLE_TARGET,
    mainFields: ['module', 'main'],
    minify: true,
    // Linked maps, read only when a stack trace is formatted (source-mapped-stacks.ts); the sources' text stays out of the package.
    sourcemap: 'linked',
    sourcesContent: false,
    banner: { js: REQUIRE_BANNER },
    external: [...external],
  };
}

/**
 * Bundles one function into `outdir` (synchronously: the asset's local
 * bundling is); `metafile`, a path outside the bundle, gets esbuild's
 * account of what each output file holds and imports.
 */
export function bundleFunction(entry: string, outdir: string, external: readonly string[], metafile?: string): void {
  const script = path.join(PROJECT_ROOT, 'lib', 'function-bundle.mjs');
  const job = { options: bundleOptions(entry, outdir, external), cjsAsEsm: CJS_AS_ESM, metafile };
  execFileSync(process.execPath, [script, JSON.stringify(job)], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

/** Where the GraphQL function finds the schema inside its package. */
export const LAMBDA_SCHEMA_PATH = '/var/task/schema.graphql';

/** A file copied into a bundle: a path at the repository root, or `{ from, to }` to place it elsewhere. */
export type ExtraFile = string | { readonly from: string; readonly to: string };

/** The shell commands that copy extra files from the repository into a bundle (run after esbuild). */
export function extraFileCommands(files: readonly ExtraFile[], inputDir: string, outputDir: string): string[] {
  return files.map((file) => {
    const { from, to } = typeof file === 'string' ? { from: file, to: file } : file;
    const target = `${outputDir}/${to}`;
    return `mkdir -p "${path.posix.dirname(target)}" && cp "${inputDir}/${from}" "${target}"`;
  });
}

export interface CairnFunctionProps {
  /** The directory under functions/ holding handler.ts, e.g. `graphql`. */
  readonly name: string;
  readonly description: string;
  readonly memorySize: number;
  readonly timeout: Duration;
  readonly environment: Record<string, string>;
  /** Files from the repository copied into the bundle (next to the handler unless placed). */
  readonly extraFiles?: readonly ExtraFile[];
  /** @default 512 MiB */
  readonly ephemeralStorageSize?: Size;
  /** @default - none: the account's unreserved pool */
  readonly reservedConcurrentExecutions?: number;
  /** @default ARM_64 */
  readonly architecture?: Architecture;
  /**
   * X-Ray active tracing (the service's functions have it; a one-off
   * custom resource handler need not).
   * @default false
   */
  readonly tracing?: boolean;
  /**
   * Packages left out of the esbuild bundle and copied, with their
   * dependencies as package-lock.json has them, into the bundle's
   * node_modules: for packages that must keep their own files beside their
   * code (@sparticuz/chromium's packed binary) or do not survive bundling.
   * Copied from this checkout's node_modules, so synthesis stays offline.
   */
  readonly externalPackages?: readonly string[];
}

/**
 * The lock file paths (`node_modules/a`, `node_modules/a/node_modules/b`) of
 * `names` and everything they depend on, resolved as Node resolves them.
 */
export function packageClosure(names: readonly string[], lockFile = path.join(PROJECT_ROOT, 'package-lock.json')): string[] {
  const packages: Record<string, { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }> = JSON.parse(
    fs.readFileSync(lockFile, 'utf8'),
  ).packages;
  const resolve = (from: string, name: string): string | undefined => {
    for (let dir = from; ;) {
      const candidate = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      if (packages[candidate]) return candidate;
      if (!dir) return undefined;
      const up = dir.lastIndexOf('/node_modules/');
      dir = up < 0 ? '' : dir.slice(0, up);
    }
  };
  const seen = new Set<string>();
  const visit = (at: string) => {
    if (seen.has(at)) return;
    seen.add(at);
    const entry = packages[at]!;
    for (const name of Object.keys(entry.dependencies ?? {})) {
      const found = resolve(at, name);
      if (!found) throw new Error(`${at} depends on ${name}, which package-lock.json does not hold`);
      visit(found);
    }
    for (const name of Object.keys(entry.optionalDependencies ?? {})) {
      const found = resolve(at, name);
      if (found) visit(found);
    }
  };
  for (const name of names) {
    const found = resolve('', name);
    if (!found) throw new Error(`${name} is not in package-lock.json: npm install it`);
    visit(found);
  }
  return [...seen].sort();
}

/** The shell commands that copy packages (lock file paths) from the repository into a bundle. */
export function packageCopyCommands(lockPaths: readonly string[], inputDir: string, outputDir: string): string[] {
  return lockPaths.map((p) => `mkdir -p "${outputDir}/${path.posix.dirname(p)}" && cp -R "${inputDir}/${p}" "${outputDir}/${p}"`);
}

export class CairnFunction extends Construct {
  readonly function: NodejsFunction;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: CairnFunctionProps) {
    super(scope, id);

    this.logGroup = new LogGroup(this, 'Logs', { retention: RetentionDays.ONE_MONTH });

    const extraFiles = props.extraFiles ?? [];
    const externalPackages = props.externalPackages ?? [];
    const copiedPackages = externalPackages.length ? packageClosure(externalPackages) : [];
    const entry = path.join(PROJECT_ROOT, 'functions', props.name, 'handler.ts');
    const external = [...LOCAL_ONLY_MODULES, ...externalPackages];
    const code = Code.fromAsset(PROJECT_ROOT, {
      // The bundle's own hash, as NodejsFunction's: an unchanged bundle is not uploaded again.
      assetHashType: AssetHashType.OUTPUT,
      bundling: {
        // What tells this bundle from the other functions' in the synthesis's cache of bundled
        // assets, whose key holds the source path and these options, not the local bundler's code.
        environment: {
          CAIRN_BUNDLE: JSON.stringify({ entry: path.relative(PROJECT_ROOT, entry), external, extraFiles, copiedPackages, CJS_AS_ESM }),
        },
        // Never pulled: bundling is local (esbuild is a dependency of this checkout), and a failure is an error, not a fallback.
        image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:24-slim'),
        local: {
          tryBundle: (outputDir: string) => {
            bundleFunction(entry, outputDir, external);
            const copies = [
              ...extraFileCommands(extraFiles, PROJECT_ROOT, outputDir),
              ...packageCopyCommands(copiedPackages, PROJECT_ROOT, outputDir),
            ];
            if (copies.length) execFileSync('bash', ['-c', copies.join(' && ')], { stdio: 'inherit' });
            return true;
          },
        },
      },
    });

    this.function = new NodejsFunction(this, 'Function', {
      description: props.description,
      code,
      handler: 'index.handler',
      runtime: RUNTIME,
      architecture: props.architecture ?? Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      ephemeralStorageSize: props.ephemeralStorageSize,
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      environment: props.environment,
      logGroup: this.logGroup,
      tracing: props.tracing ? Tracing.ACTIVE : undefined,
    });

    // cdk-nag: what every function's role holds by construction.
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason: 'The managed basic execution role lets the function write its own logs (CloudWatch Logs) and nothing else',
    });
    if (props.tracing) {
      Validations.of(this).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          "Active tracing's grant: xray:PutTraceSegments and xray:PutTelemetryRecords, which take no resource. test/infra/nag.test.ts checks that no other statement of a function's role has the resource *",
      });
    }
  }
}
