/**
 * The package builds with the repository's TypeScript into ESM and type
 * declarations, and the built package works when imported by its name from
 * plain Node (through its `exports`), and so does its universal (browser)
 * entry, on Node 24 and on the system's older Node
 * when there is one. A browser bundle of it pulls in no Node-only module.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startTestService, type TestService } from '../support/service.js';
import { CREDS } from '../support/sdk.js';

const run = promisify(execFile);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PKG = join(ROOT, 'packages', 'storage-sdk');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');

let service: TestService;
let dir: string;

beforeAll(async () => {
  service = await startTestService();
  dir = await mkdtemp(join(tmpdir(), 'cairn-sdk-build-'));
});

afterAll(async () => {
  await service.close();
  await rm(dir, { recursive: true, force: true });
});

// By name, Node resolves the package's "node" entry; the universal (browser) entry is loaded by path.
const CHECK = `
const storage = process.argv[2] === 'universal' ? await import('./dist/index.js') : await import('@cairn/storage');
const fleekStyle = storage.default;
const creds = { apiKey: process.env.KEY, apiSecret: process.env.SECRET };
const up = await storage.upload({ ...creds, key: 'built/' + process.version + process.argv[2], data: 'from the built package', ContentType: 'text/plain' });
const got = await fleekStyle.get({ ...creds, key: up.key, getOptions: ['data', 'hash'] });
const text = await storage.getFileFromHash({ hash: up.hashV0 });
const custom = storage.createStorage({ partSize: 65536 });
console.log(JSON.stringify({ hash: up.hash, same: got.hash === up.hash, data: got.data.toString(), isBuffer: Buffer.isBuffer(got.data), text, partSize: custom.options.partSize, errorClass: typeof storage.CairnStorageError }));
custom.destroy();
`;

test('tsc builds dist/ (ESM + .d.ts); the built package runs in Node by its name, through either entry', async () => {
  const pkg = join(dir, 'pkg');
  await mkdir(pkg, { recursive: true });
  await run(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', PKG, '--outDir', join(pkg, 'dist')], { cwd: ROOT });
  for (const f of ['index.js', 'index.d.ts', 'node.js', 'node.d.ts']) expect(existsSync(join(pkg, 'dist', f))).toBe(true);
  expect(await readFile(join(pkg, 'dist', 'node.d.ts'), 'utf8')).toContain(
    'export declare function createStorage(options?: StorageOptions): Storage<Buffer>',
  );
  // The package as installed: its package.json beside dist/, its dependencies resolvable (the repository's node_modules).
  await copyFile(join(PKG, 'package.json'), join(pkg, 'package.json'));
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  await writeFile(join(pkg, 'check.mjs'), CHECK);

  const env = {
    PATH: process.env.PATH ?? '',
    KEY: CREDS.apiKey,
    SECRET: CREDS.apiSecret,
    CAIRN_STORAGE_ENDPOINT: service.endpoints.s3,
    CAIRN_GATEWAY_URL: service.endpoints.gateway,
    CAIRN_STORAGE_PUBLIC_DOMAIN: service.config.urls.storagePublicDomain,
  };
  const nodes = [NODE, ...(existsSync('/usr/bin/node') ? ['/usr/bin/node'] : [])];
  for (const node of nodes) {
    for (const entry of ['by-name', 'universal']) {
      const { stdout } = await run(node, ['check.mjs', entry], { cwd: pkg, env });
      expect(JSON.parse(stdout)).toEqual({
        hash: expect.stringMatching(/^bafybei/),
        same: true,
        data: 'from the built package',
        isBuffer: true,
        text: 'from the built package',
        partSize: 65536,
        errorClass: 'function',
      });
    }
  }
}, 90000);

test('a browser bundle of the package has no Node-only module in it', async () => {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [join(PKG, 'src', 'index.ts')],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  expect(result.errors).toEqual([]);
  const inputs = Object.keys(result.metafile.inputs);
  expect(inputs.filter((i) => /^node:|(^|\/)node-http-handler\//.test(i))).toEqual([]);
  expect(inputs.some((i) => i.includes('runtimeConfig.browser'))).toBe(true);
  expect(inputs.some((i) => i.includes('sha2-browser'))).toBe(true);
});
