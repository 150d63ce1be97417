/** Jest runs the TypeScript sources as native ESM (Helia and its deps are ESM-only). */

/**
 * The long suites: `npm run test:full` (CAIRN_TEST_SET=full), which CI
 * runs, holds them; the everyday `npm test` leaves them out, and takes the
 * API suites through one door (test/support/test-set.ts). Each is long by
 * what it is for, not by accident: endurance and scale (a two-minute soak,
 * 200 MiB and 1 GiB streams, hostile imports and GraphQL under attack, a
 * crash mid-write), the real clients from Debian's packages (the AWS CLI,
 * boto3, rclone, s3cmd: a Python start per command), a real browser
 * (Chromium), and real bundling (esbuild over every Lambda handler and the
 * web app). Seconds each, two workers, a full run on two cores: 1,212 s
 * for everything; these suites held 697 s of the suites' summed time.
 */
const LONG_SUITES = [
  'test/system/storage-soak.test.ts',
  'test/sdk/stream-upload.test.ts',
  'test/system/s3-streaming.test.ts',
  'test/system/s3-crash.test.ts',
  'test/system/graphql-memory.test.ts',
  'test/system/smoke.test.ts',
  'test/api/bounded-work.test.ts',
  'test/api/gateway-car-limits.test.ts',
  'test/clients/s3-clients-cli.test.ts',
  'test/clients/s3-clients-python.test.ts',
  // A real client (boto3): a Python start per run, as the suite above.
  'test/clients/s3-lifecycle-python.test.ts',
  'test/clients/s3-clients-rclone-s3cmd.test.ts',
  'test/web-app/web-app-browser.test.ts',
  'test/web-app/web-app-accounts-browser.test.ts',
  'test/web-app/web-app-oidc-browser.test.ts',
  'test/web-app/device-login-browser.test.ts',
  'test/web-app/invitation-browser.test.ts',
  'test/web-app/passkey-browser.test.ts',
  'test/clients/s3-cors-browser.test.ts',
  'test/clients/s3-post-browser.test.ts',
  'test/components/chromium-screenshotter.test.ts',
  'test/api/graphql-playground.test.ts',
  'test/infra/cold-bundles.test.ts',
  // CDK's CloudFormation validation (a WebAssembly rule engine) over the whole stack: about 40 s of CPU.
  'test/infra/cdk-validation.test.ts',
  'test/infra/stack-bundles.test.ts',
  'test/web-app/web-app-bundle.test.ts',
];

/** The long suites this run leaves out: none in a full run, nor one named on the command line (`npm test -- storage-soak`). */
function leftOut() {
  if (process.env.CAIRN_TEST_SET === 'full') return [];
  const named = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
  return LONG_SUITES.filter((path) => !named.some((name) => path.includes(name.replace(/^\.\//, ''))));
}

export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // Jest 29 would load this package's ESM build as CommonJS; its CJS build is equivalent.
    '^@peculiar/webcrypto$': '<rootDir>/node_modules/@peculiar/webcrypto/build/webcrypto.js',
  },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, diagnostics: false }] },
  // Against a deployed stack (test/support/api-target.ts), only the suites
  // that reach the service through its endpoints alone. deploys.test.ts is
  // left out: its git server listens on this machine's loopback.
  testMatch: process.env.CAIRN_TEST_S3_ENDPOINT
    ? [
        's3-operations',
        's3-acl',
        's3-acl-grants',
        's3-conformance',
        's3-bad-input',
        's3-cors',
        's3-multipart',
        's3-slice',
        'graphql-api',
        'graphql-teams',
        'graphql-pagination',
        'graphql-playground',
        'gateway-public',
        'gateway-graphql-worker',
      ].map((name) => `<rootDir>/test/api/${name}.test.ts`)
    : ['<rootDir>/test/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...leftOut().map((path) => `<rootDir>/${path}`)],
  // The Lambda runtime's awslambda global, which streaming handlers need at load time; and
  // CDK's template validation off but in the one test that runs it (cdk-synthesis.ts says why).
  setupFiles: ['<rootDir>/test/support/lambda-runtime.ts', '<rootDir>/test/support/cdk-synthesis.ts'],
  testTimeout: 60000,
  // Worker processes, never Jest's own process, each restarted after any
  // test file that leaves it over 1 GB: each ESM test file leaves modules
  // behind, and across the whole suite Jest's process grew to a 3.6 GB
  // heap, thrashed in full collections (seconds each, timing tests out)
  // and died out of memory. Two workers on two cores: the suites are
  // CPU-bound (each about 1.55 times slower beside a neighbour), so two
  // gain a quarter, not half (docs/testing.md has the figures); the checks
  // that bound the CPU a piece of work holds the event loop for measure
  // again before they fail (test/support/event-loop.ts). CAIRN_TEST_WORKERS
  // sets another count (1 to debug one suite's timing).
  maxWorkers: Number(process.env.CAIRN_TEST_WORKERS ?? 2),
  workerIdleMemoryLimit: '1GB',
  // Slowest first (the seconds are kept in the file): see there why.
  testSequencer: '<rootDir>/test/support/sequencer.mjs',
};
