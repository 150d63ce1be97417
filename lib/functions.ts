/**
 * One Cairn Lambda function: a NodejsFunction bundled by esbuild as ESM for
 * Node on ARM, with its own log group. The handler files live under
 * functions/<name>/handler.ts and export `handler`.
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, SourceMapMode, type ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';
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
export const LOCAL_ONLY_MODULES = ['dynalite', 'level', 'classic-level'];

/**
 * An ESM bundle may still contain CommonJS dependencies that call
 * `require`; define it from `import.meta.url`. The import is aliased so it
 * cannot collide with a top-level `createRequire` esbuild emits for bundled
 * code.
 */
export const REQUIRE_BANNER =
  "import { createRequire as __cairnCreateRequire } from 'node:module'; const require = __cairnCreateRequire(import.meta.url);";

/** Where the GraphQL function finds the schema inside its package. */
export const LAMBDA_SCHEMA_PATH = '/var/task/schema.graphql';

export interface CairnFunctionProps {
  /** The directory under functions/ holding handler.ts, e.g. `graphql`. */
  readonly name: string;
  readonly description: string;
  readonly memorySize: number;
  readonly timeout: Duration;
  readonly environment: Record<string, string>;
  /** Files at the repository root copied next to the handler in the bundle. */
  readonly extraFiles?: readonly string[];
}

export class CairnFunction extends Construct {
  readonly function: NodejsFunction;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: CairnFunctionProps) {
    super(scope, id);

    this.logGroup = new LogGroup(this, 'Logs', { retention: RetentionDays.ONE_MONTH });

    const extraFiles = props.extraFiles ?? [];
    const commandHooks: ICommandHooks | undefined =
      extraFiles.length === 0
        ? undefined
        : {
            beforeBundling: () => [],
            beforeInstall: () => [],
            afterBundling: (inputDir: string, outputDir: string) =>
              extraFiles.map((file) => `cp "${inputDir}/${file}" "${outputDir}/${file}"`),
          };

    this.function = new NodejsFunction(this, 'Function', {
      description: props.description,
      entry: path.join(PROJECT_ROOT, 'functions', props.name, 'handler.ts'),
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
      runtime: RUNTIME,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      environment: props.environment,
      logGroup: this.logGroup,
      bundling: {
        format: OutputFormat.ESM,
        mainFields: ['module', 'main'],
        banner: REQUIRE_BANNER,
        target: BUNDLE_TARGET,
        minify: true,
        sourceMap: true,
        sourceMapMode: SourceMapMode.DEFAULT,
        bundleAwsSDK: true,
        externalModules: LOCAL_ONLY_MODULES,
        commandHooks,
      },
    });
  }
}
