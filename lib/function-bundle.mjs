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
import { isBuiltin } from 'node:module';
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

/**
 * The Node built-ins whose ES module facade is costly, loaded with
 * `require` when ES module code imports them statically: `import { request }
 * from 'node:http'` becomes a read of `require('node:http').request` where
 * it is used. An ES module import of a built-in makes Node build the
 * built-in's facade, which reads every export once, lazy getters included:
 * node:http's `WebSocket`, `CloseEvent` and `MessageEvent` getters load
 * undici (60-90 ms of CPU at start-up on Node 24 on this machine),
 * node:process's, node:fs's and node:util's 5-12 ms each. `require` runs
 * no getter until the code reads that export. esbuild gives the shim its
 * CommonJS interop, whose named imports are property reads at the point of
 * use, so the bindings stay as live as the facade's. Each shim is a module
 * of the bundle, which esbuild may put in a chunk of its own, and a module
 * costs about 1-3 ms to load; the other built-ins' facades cost less than
 * that (under 2 ms each), so they stay imports. A dynamic `import()` is
 * left as it is: esbuild would make the shim a chunk whose namespace has
 * only `default`, and the ones in the bundles are rare paths (an agent for
 * plain-HTTP endpoints, the EC2 instance metadata service).
 */
const REQUIRED_BUILTINS = ['node:http', 'node:fs', 'node:util', 'node:process'];

const builtinsByRequire = {
  name: 'builtins-by-require',
  setup(b) {
    b.onResolve({ filter: /^[a-z_]/ }, (args) => {
      if (args.kind !== 'import-statement' || !isBuiltin(args.path)) return undefined;
      const name = args.path.startsWith('node:') ? args.path : `node:${args.path}`;
      return REQUIRED_BUILTINS.includes(name) ? { path: name, namespace: 'builtin-by-require' } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: 'builtin-by-require' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/**
 * Apollo Server hashes every operation's text (its document cache's key)
 * with @apollo/utils.createhash, which takes Node's crypto only through
 * `module.require`, and otherwise the sha.js package. In a bundle the
 * CommonJS `module` esbuild gives a package has no `require`, so Apollo ran
 * sha.js (JavaScript SHA-256) on every request, and its 64 modules (33 KB:
 * sha.js, to-buffer, the get-intrinsic family) were start-up code of the
 * GraphQL function. The package is replaced by the same function over
 * node:crypto (whose hashes are the same; the function already loads it).
 */
const nodeCreateHash = {
  name: 'node-createhash',
  setup(b) {
    b.onResolve({ filter: /^@apollo\/utils\.createhash$/ }, () => ({ path: 'createhash', namespace: 'node-createhash' }));
    b.onLoad({ filter: /.*/, namespace: 'node-createhash' }, () => ({
      contents: "import { createHash as nodeCreateHash } from 'node:crypto'; export const createHash = (kind) => nodeCreateHash(kind);",
      loader: 'js',
    }));
  },
};

const result = await build({
  ...options,
  plugins: [esmForRequire, builtinsByRequire, nodeCreateHash],
  logLevel: 'warning',
  metafile: Boolean(metafile),
});
if (result.errors.length) process.exit(1);
if (metafile) writeFileSync(metafile, JSON.stringify(result.metafile));
