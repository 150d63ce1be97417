/** Jest runs the TypeScript sources as native ESM (Helia and its deps are ESM-only). */
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
  // The Lambda runtime's awslambda global, which streaming handlers need at load time.
  setupFiles: ['<rootDir>/test/support/lambda-runtime.ts'],
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
