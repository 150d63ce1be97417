/**
 * What `npm start` loads before its first request: the modules bin/local.ts
 * imports statically, transitively. Every one of them stays in the server's
 * heap for its whole life (its source, its compiled code, what it builds at
 * load), so a package only a rare path uses is imported where that path
 * runs: ACME's client (acme-client, with node-forge, axios and the x509
 * libraries: 8 MB of heap) only when CAIRN_ACME_DIRECTORY is set, and
 * isomorphic-git (with pako: 3 MB) at the first deploy that writes a tree
 * without git's command line. `npm run bench:s3` counts this memory in the
 * storage server's peak RSS.
 *
 * Each gateway thread (local/gateway-thread.ts, one per core by default) is
 * a heap of its own holding what it imports: it loads the hit path and the
 * relay, none of the IPFS, database or AWS modules.
 *
 * esbuild's metafile tells which file imports which, and how.
 */
import { buildSync, type Metafile } from 'esbuild';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The packages (by name) and project files `entry` (bin/local.ts by default) reaches through static imports. */
function loadedAtStart(entry = 'bin/local.ts'): { packages: Set<string>; files: Set<string> } {
  // buildSync: one esbuild process for this call, not a service that outlives the suite.
  const result = buildSync({
    entryPoints: [join(ROOT, entry)],
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    splitting: true,
    outdir: join(ROOT, '.tmp/local-start-modules'),
    write: false,
    metafile: true,
    logLevel: 'silent',
    // Native addons and packages the service loads from disk as they are: their own imports are not the question here.
    external: ['*.node', 'dynalite', 'classic-level', 'playwright-core', '@sparticuz/chromium'],
    loader: { '.graphql': 'text', '.html': 'text' },
  });
  const inputs = (result.metafile as Metafile).inputs;
  const files = new Set<string>([entry]);
  const queue = [entry];
  while (queue.length) {
    for (const i of inputs[queue.shift()!]?.imports ?? []) {
      if (i.external || (i.kind !== 'import-statement' && i.kind !== 'require-call')) continue;
      if (files.has(i.path)) continue;
      files.add(i.path);
      queue.push(i.path);
    }
  }
  const packages = new Set<string>();
  for (const file of files) {
    const at = file.lastIndexOf('node_modules/');
    if (at < 0) continue;
    const parts = file.slice(at + 'node_modules/'.length).split('/');
    packages.add(parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
  }
  return { packages, files };
}

let graph: { packages: Set<string>; files: Set<string> };
beforeAll(() => {
  graph = loadedAtStart();
}, 60_000);

test('the start-up graph is the one the service runs (the check below is not vacuous)', () => {
  // What every start needs: the S3 door, the database client, GraphQL.
  for (const name of ['@aws-sdk/client-dynamodb', 'graphql', 'fast-xml-parser', 'multiformats']) expect(graph.packages).toContain(name);
  expect(graph.files).toContain('functions/local/service.ts');
  expect(graph.files).toContain('functions/deploy-worker/steps/checkout/trees.ts');
});

test.each(['acme-client', 'node-forge', 'axios', 'isomorphic-git', 'pako'])('%s is not loaded at start-up', (name) => {
  expect(graph.packages).not.toContain(name);
});

test('the ACME adapter is imported only where ACME is configured', () => {
  expect(graph.files).not.toContain('functions/local/acme-certificates.ts');
});

describe('a gateway thread', () => {
  let thread: { packages: Set<string>; files: Set<string> };
  beforeAll(() => {
    thread = loadedAtStart('functions/local/gateway-thread.ts');
  }, 60_000);

  test('loads the hit path and the relay (the check below is not vacuous)', () => {
    for (const file of ['functions/local/site-hits.ts', 'functions/local/gateway-relay.ts', 'functions/core/ipfs/content-path.ts'])
      expect(thread.files).toContain(file);
    expect(thread.packages).toContain('lru-cache');
  });

  test('loads no IPFS, database or AWS module: about 15 files, not the 400 of the DAG walk', () => {
    expect([...thread.packages].sort()).toEqual(['lru-cache']);
    expect(thread.files).not.toContain('functions/core/ipfs/paths.ts');
    expect(thread.files.size).toBeLessThan(30);
  });
});
