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
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  // The Lambda runtime's awslambda global, which streaming handlers need at load time.
  setupFiles: ['<rootDir>/test/support/lambda-runtime.ts'],
  testTimeout: 60000,
};
