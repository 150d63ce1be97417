// Bundles one Lambda function with esbuild (lib/functions.ts says how and
// why). Plain JavaScript run in a child process because the asset's local
// bundling is synchronous and esbuild takes plugins only in its
// asynchronous API; no TypeScript loader is needed to start it.
//
//   node lib/function-bundle.mjs '<JSON of { options, cjsAsEsm, metafile }>'
//
// `metafile`, when given, is a path (outside the bundle) where esbuild's
// account of the build is written: which sources each output file holds
// and what it imports, statically or dynamically.
import { writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const { options, cjsAsEsm = [], metafile } = JSON.parse(process.argv[2]);

/**
 * A CommonJS package that requires one of `cjsAsEsm` gets its ES module
 * build instead of its CommonJS one: one copy of the package in the
 * bundle, whose dynamic imports become chunks loaded when used (the
 * CommonJS build turns them into requires, which esbuild keeps in the
 * requiring file).
 */
const esmForRequire = {
  name: 'esm-for-require',
  setup(b) {
    const names = new Set(cjsAsEsm);
    b.onResolve({ filter: /^[@a-z]/ }, async (args) => {
      if (args.kind !== 'require-call' || !names.has(args.path)) return undefined;
      const resolved = await b.resolve(args.path, { kind: 'import-statement', resolveDir: args.resolveDir, importer: args.importer });
      if (resolved.errors.length) return { errors: resolved.errors };
      return { path: resolved.path };
    });
  },
};

const result = await build({ ...options, plugins: [esmForRequire], logLevel: 'warning', metafile: Boolean(metafile) });
if (result.errors.length) process.exit(1);
if (metafile) writeFileSync(metafile, JSON.stringify(result.metafile));
