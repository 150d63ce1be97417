// Lint: the recommended rules of ESLint and typescript-eslint over the
// sources, tests, benchmarks and the SDK; formatting is Prettier's alone
// (`npm run lint` checks both).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', '.tmp/', 'coverage/', '**/dist/', 'test/fixtures/', 'packages/*/node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A leading underscore marks what is left unused on purpose (a destructured field left out, a callback's unused argument).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // Input checks match control characters on purpose: that is what they refuse.
      'no-control-regex': 'off',
    },
  },
  {
    // Tests and benchmarks reach into untyped results (JSON answers, SDK internals);
    // the embedded database drives dynalite, which has no types.
    files: ['test/**', 'bench/**', 'functions/local/embedded-dynamo/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The CloudFront Functions runtime calls `handler` by name.
    files: ['functions/cdn/*.js'],
    rules: { '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^handler$', caughtErrors: 'none' }] },
  },
);
