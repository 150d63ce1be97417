/**
 * `npm run bench:cold`: what each Lambda function costs before its first
 * request, measured on the bundles `cdk deploy` would upload. The stack is
 * synthesized with real esbuild bundling (as test/infra/cairn-stack.test.ts
 * does) into a temporary cloud assembly; then, for each of Cairn's six
 * functions (GraphQL, S3, gateway, deploy worker, preview, first account),
 * BENCH_RUNS fresh `node` processes import the bundle's handler module and
 * time that import alone. Printed per function: the minimum and the median
 * import time, and the sizes of the handler module, its source map, and the
 * whole asset (what is zipped and uploaded). Beside the wall-clock times,
 * the least CPU time (user and system) an import took: on a machine shared
 * with other work, wall time includes waiting for a core, CPU time mostly
 * does not.
 *
 * Each process is started as Lambda's Node.js runtime starts the function:
 * in the asset directory, with the function's own environment from the
 * template (NODE_OPTIONS included, so a flag such as --enable-source-maps
 * costs here what it costs there; values CloudFormation fills in at deploy
 * time become placeholders), the variables the runtime defines
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime),
 * the X-Ray daemon's for active tracing, and the `awslambda` global the
 * runtime provides to streaming handlers, stubbed
 * (https://docs.aws.amazon.com/lambda/latest/dg/config-rs-write-functions.html).
 * The runtime's own start (its bootstrap, before it imports the handler)
 * is not part of the figure; what that start loads is loaded first here
 * too, outside the timing: AWS's Node.js runtime interface client requires
 * node:http (src/RAPIDClient.js, the Runtime API client it builds before
 * loading the handler), node:net (src/ResponseStream.js), node:util and
 * node:fs (src/Runtime.js, src/LogPatch.js), node:path (src/UserFunction.js)
 * and node:assert (src/InvokeContext.js) in
 * https://github.com/aws/aws-lambda-nodejs-runtime-interface-client, so a
 * bundle that requires them finds them loaded.
 *
 * Goals (issue 31): every function's minimum import at most 150 ms on this
 * machine, the preview's at most 400 ms.
 *
 *   BENCH_RUNS=9 (default) processes per function, run one function after
 *   another in turns, so a burst of load on the machine spreads over all.
 *   BENCH_ONLY=graphql,s3 measures those functions alone.
 *   BENCH_KEEP=1 keeps the assembly and prints where it is.
 *   BENCH_ASSEMBLY=<dir> measures that cloud assembly (`npx cdk synth`'s
 *   cdk.out, or one BENCH_KEEP kept) instead of synthesizing.
 *   BENCH_RUNTIME_MODULES=0 loads none of the runtime's modules first (as
 *   runs A and B of bench/RESULTS.md did).
 *   BENCH_BASELINE=<dir> measures another assembly (say, one synthesized
 *   from the commit before a change) in turns with this one and prints it
 *   first: on a machine whose load cannot be controlled, before and after
 *   are compared under the same load.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { App } from 'aws-cdk-lib';
import { CairnStack } from '../lib/cairn-stack.js';
import { PROJECT_ROOT } from '../lib/functions.js';

const run = promisify(execFile);

const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 9));
const ONLY = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
/** The built-ins Lambda's Node.js runtime has required before it imports the handler (see above). */
const RUNTIME_MODULES = process.env.BENCH_RUNTIME_MODULES === '0' ? [] : ['http', 'net', 'util', 'fs', 'path', 'assert'];

/** The goals of issue 31, in ms of minimum import time. */
const GOAL_MS: Record<string, number> = { preview: 400 };
const DEFAULT_GOAL_MS = 150;

interface Measured {
  name: string;
  dir: string;
  env: Record<string, string>;
  architecture: string;
  memory: number;
  times: number[];
  cpuTimes: number[];
  sizes: { module: number; map: number; asset: number };
}

/**
 * What the child process runs: Lambda's `awslambda` global (the handlers
 * that stream call streamifyResponse at module load) and the runtime's own
 * modules, then the import, timed from just before to just after.
 */
const PROBE = [
  'globalThis.awslambda = { streamifyResponse: (h) => h, HttpResponseStream: { from: (s) => s } };',
  "const { pathToFileURL } = await import('node:url');",
  "const { createRequire } = await import('node:module');",
  `for (const m of ${JSON.stringify(RUNTIME_MODULES)}) createRequire(process.cwd() + '/')(m);`,
  'const url = pathToFileURL(process.argv[1]).href;',
  'const cpuBefore = process.cpuUsage();',
  'const started = performance.now();',
  'const m = await import(url);',
  'const ms = performance.now() - started;',
  'const cpu = process.cpuUsage(cpuBefore);',
  "if (typeof m.handler !== 'function') { console.error('no handler export'); process.exit(1); }",
  'process.stdout.write(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000 }));',
].join('\n');

function dirSize(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) total += dirSize(p);
    else if (entry.isFile()) total += fs.statSync(p).size;
  }
  return total;
}

const fileSize = (p: string) => (fs.existsSync(p) ? fs.statSync(p).size : 0);

/** A variable's value as the function would see it: CloudFormation's references become placeholders. */
function plainValue(name: string, value: unknown): string {
  if (typeof value === 'string') return value;
  return `bench-${name.toLowerCase().replace(/_/g, '-')}`;
}

/** The variables Lambda's runtime defines for a function (reserved: a function cannot set them). */
function runtimeVariables(name: string, dir: string, memory: number, architecture: string): Record<string, string> {
  return {
    _HANDLER: 'index.handler',
    AWS_REGION: 'us-east-1',
    AWS_DEFAULT_REGION: 'us-east-1',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    AWS_LAMBDA_FUNCTION_NAME: `Cairn-${name}`,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(memory),
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/Cairn-${name}`,
    AWS_LAMBDA_LOG_STREAM_NAME: `2026/01/01/[$LATEST]${architecture}`,
    LAMBDA_TASK_ROOT: dir,
    LAMBDA_RUNTIME_DIR: dir,
    TZ: ':UTC',
    LANG: 'en_US.UTF-8',
    // Active tracing: where the X-Ray daemon listens (nothing is sent at import).
    AWS_XRAY_DAEMON_ADDRESS: '169.254.79.129:2000',
    AWS_XRAY_CONTEXT_MISSING: 'LOG_ERROR',
    // Never used at import; the SDK's credential chain must not go looking.
    AWS_ACCESS_KEY_ID: 'AKIDBENCHCOLDSTART00',
    AWS_SECRET_ACCESS_KEY: 'bench-secret',
    AWS_SESSION_TOKEN: 'bench-token',
  };
}

/** Cairn's functions in a template, by the logical ids their constructs give them. */
const FUNCTION_IDS: Array<[string, RegExp]> = [
  ['graphql', /^GraphqlFunction[0-9A-F]{8}$/],
  ['s3', /^S3Function[0-9A-F]{8}$/],
  ['gateway', /^GatewayFunction[0-9A-F]{8}$/],
  ['deploy-worker', /^DeployWorkerFunction[0-9A-F]{8}$/],
  ['preview', /^PreviewsPreviewFunction[0-9A-F]{8}$/],
  ['first-account', /^FirstAccountHandlerFunction[0-9A-F]{8}$/],
];

/** Synthesizes the stack with its real bundling into `outdir`. */
function synthesize(outdir: string): string {
  const cdkJson = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8'));
  const app = new App({ context: cdkJson.context, outdir });
  new CairnStack(app, 'Cairn');
  return app.synth().directory;
}

/** The functions of a cloud assembly (the stack `Cairn`), each with the environment Lambda would start it in. */
function functionsOf(assemblyDir: string): Omit<Measured, 'times' | 'cpuTimes'>[] {
  const template = JSON.parse(fs.readFileSync(path.join(assemblyDir, 'Cairn.template.json'), 'utf8'));
  const resources = Object.entries<any>(template.Resources);
  return FUNCTION_IDS.filter(([name]) => !ONLY || ONLY.includes(name)).map(([name, pattern]) => {
    const found = resources.find(([id, r]) => pattern.test(id) && r.Type === 'AWS::Lambda::Function');
    if (!found) throw new Error(`${assemblyDir}: no ${name} function in the template`);
    const props = found[1].Properties;
    const dir = path.join(assemblyDir, `asset.${String(props.Code.S3Key).replace(/\.zip$/, '')}`);
    const architecture = props.Architectures?.[0] ?? 'x86_64';
    const memory = Number(props.MemorySize ?? 128);
    const own = Object.fromEntries(Object.entries(props.Environment?.Variables ?? {}).map(([k, v]) => [k, plainValue(k, v)]));
    return {
      name,
      dir,
      architecture,
      memory,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...runtimeVariables(name, dir, memory, architecture),
        ...own,
        // The GraphQL function reads its schema at /var/task; here the asset is elsewhere.
        ...(own.CAIRN_SCHEMA_PATH ? { CAIRN_SCHEMA_PATH: path.join(dir, 'schema.graphql') } : {}),
      },
      sizes: {
        module: fileSize(path.join(dir, 'index.mjs')),
        map: fileSize(path.join(dir, 'index.mjs.map')),
        asset: dirSize(dir),
      },
    };
  });
}

async function importOnce(fn: Omit<Measured, 'times' | 'cpuTimes'>): Promise<{ ms: number; cpuMs: number }> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', PROBE, path.join(fn.dir, 'index.mjs')], {
    cwd: fn.dir,
    env: fn.env,
    timeout: 60_000,
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout) as { ms: number; cpuMs: number };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const kb = (n: number) => `${Math.round(n / 1024).toLocaleString('en')} KB`;

interface Row {
  function: string;
  'min ms': number;
  'median ms': number;
  'min cpu ms': number;
  goal: string;
  met: string;
  'index.mjs': string;
  map: string;
  asset: string;
  NODE_OPTIONS: string;
}

function rowOf(fn: Measured): Row {
  const min = Math.min(...fn.times);
  const goal = GOAL_MS[fn.name] ?? DEFAULT_GOAL_MS;
  return {
    function: fn.name,
    'min ms': Math.round(min),
    'median ms': Math.round(median(fn.times)),
    'min cpu ms': Math.round(Math.min(...fn.cpuTimes)),
    goal: `<= ${goal}`,
    met: min <= goal ? 'yes' : 'NO',
    'index.mjs': kb(fn.sizes.module),
    map: fn.sizes.map ? kb(fn.sizes.map) : '-',
    asset: kb(fn.sizes.asset),
    NODE_OPTIONS: fn.env.NODE_OPTIONS ?? '',
  };
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

async function main() {
  const given = process.env.BENCH_ASSEMBLY;
  const baseline = process.env.BENCH_BASELINE;
  const outdir = given ? undefined : await mkdtemp(path.join(tmpdir(), 'cairn-cold-'));
  try {
    let assemblyDir = given;
    if (!assemblyDir) {
      const synthStarted = Date.now();
      assemblyDir = synthesize(outdir!);
      console.log(`synthesized and bundled in ${((Date.now() - synthStarted) / 1000).toFixed(1)} s`);
    }
    const current: Measured[] = functionsOf(assemblyDir).map((f) => ({ ...f, times: [], cpuTimes: [] }));
    const before: Measured[] = baseline ? functionsOf(baseline).map((f) => ({ ...f, times: [], cpuTimes: [] })) : [];
    console.log(
      `node ${process.version}, ${RUNS} runs per function, runtime's modules loaded first: ${RUNTIME_MODULES.join(', ') || 'none'}, load average ${load()}`,
    );

    const all = [...current, ...before];
    // One warm-up import each (the file cache), not counted.
    for (const fn of all) await importOnce(fn);
    for (let i = 0; i < RUNS; i++) {
      for (const fn of all) {
        const { ms, cpuMs } = await importOnce(fn);
        fn.times.push(ms);
        fn.cpuTimes.push(cpuMs);
      }
    }

    if (baseline) {
      console.log(`baseline (${baseline}):`);
      console.table(before.map(rowOf));
      console.log('this tree:');
    }
    const rows = current.map(rowOf);
    console.table(rows);
    console.log(`load average after: ${load()}`);
    const missed = rows.filter((r) => r.met !== 'yes').map((r) => r.function);
    console.log(missed.length ? `goal missed: ${missed.join(', ')}` : 'every goal met');
    if (outdir && process.env.BENCH_KEEP) console.log(`assembly kept at ${outdir}`);
  } finally {
    if (outdir && !process.env.BENCH_KEEP) fs.rmSync(outdir, { recursive: true, force: true });
  }
}

await main();
