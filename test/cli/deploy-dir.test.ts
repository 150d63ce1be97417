/**
 * `cairn deploy --dir` against a local service: a folder built into a DAG
 * on the client, sent as CARs to the import endpoint, deployed with
 * deployCid, and served at the site's address; the same folder again sends
 * no blocks at all (counted on the wire by a proxy in front of the API),
 * and a changed file sends only what changed. The CID is the one the
 * service's own deploy pipeline gives the same files from git.
 */
import { randomBytes } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestService, type TestService } from '../support/service.js';
import { newAccount, type AccountFixture } from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { hostFetch } from '../support/http.js';
import { loginArgs, newCliUser, type CliUser } from './cli-runner.js';

let service: TestService;
let git: GitServer;
let a: AccountFixture;
let u: CliUser;
let proxy: { url: string; carBytes: () => number; cars: () => number; reset(): void; close(): Promise<void> };

const MiB = 1024 * 1024;
const FILES: Record<string, Buffer> = {
  'index.html': Buffer.from('<!doctype html><h1>from a folder</h1>'),
  'style.css': Buffer.from('h1 { color: teal }'),
  'docs/page.html': Buffer.from('<p>nested</p>'),
  'docs/copy.html': Buffer.from('<p>nested</p>'), // the same bytes: one block, sent once
  '.well-known/security.txt': Buffer.from('Contact: mailto:security@example.com'),
  // Several 256 KiB leaves: with 1 MiB CARs, several requests.
  'media/clip.bin': randomBytes(2 * MiB + 4321),
};

/** A pass-through proxy in front of the API that counts the bytes of the CARs posted through it. */
async function startCountingProxy(target: string): Promise<typeof proxy> {
  const upstream = new URL(target);
  let bytes = 0;
  let cars = 0;
  const server: Server = createServer((req, res) => {
    const isCar = req.method === 'POST' && req.url === '/imports/car';
    if (isCar) cars++;
    req.on('data', (chunk: Buffer) => {
      if (isCar) bytes += chunk.length;
    });
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    carBytes: () => bytes,
    cars: () => cars,
    reset() {
      bytes = 0;
      cars = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function writeTree(root: string, files: Record<string, Buffer>): Promise<void> {
  for (const [path, bytes] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), bytes);
  }
}

async function served(host: string, path: string): Promise<{ status: number; body: string }> {
  const res = await hostFetch(`${service.endpoints.gateway}${path}`, { headers: { host } });
  return { status: res.status, body: await res.text() };
}

function oneErrorLine(stderr: string): string {
  const lines = stderr.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^cairn: /);
  return lines[0]!;
}

beforeAll(async () => {
  [service, git] = await Promise.all([startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off' }), startGitServer()]);
  a = await newAccount(service, 'cli-dir');
  proxy = await startCountingProxy(service.endpoints.graphql.replace(/\/graphql$/, ''));
  u = await newCliUser();
  // Everything the command line asks of the API goes through the proxy.
  const login = await u.run(
    loginArgs(service, a.apiKey).map((arg) => (arg === service.endpoints.graphql.replace(/\/graphql$/, '') ? proxy.url : arg)),
  );
  if (login.code !== 0) throw new Error(login.stderr);
}, 120_000);
afterAll(async () => {
  await u?.cleanup();
  await proxy?.close();
  await service?.close();
  await git?.close();
});

test('--dir deploys a folder the site then serves; the same folder again sends no blocks; a change sends only itself', async () => {
  const folder = join(u.home, 'public');
  await writeTree(folder, FILES);
  const site = await u.json(['sites', 'create', `dir-site-${Date.now().toString(36)}`]);
  const sitesHost = (label: string) => `${label}.${service.config.sites.domain}`;

  const first = await u.json(['deploy', site.name, '--dir', folder, '--watch', '--interval', '200', '--car-bytes', String(MiB)], {
    binary: true,
  });
  expect(first).toMatchObject({ status: 'DEPLOYED', published: true, site: { id: site.id } });
  expect(first.ipfsHash).toBe(first.upload.cid);
  expect(first.upload).toMatchObject({ files: 6, directories: 4, bytes: Object.values(FILES).reduce((s, b) => s + b.length, 0) });
  // A new service holds none of it: every block goes, in several CARs, and the service stored each.
  expect(first.upload.blocksSent).toBe(first.upload.blocks);
  expect(first.upload.blocksStored).toBe(first.upload.blocks);
  expect(first.upload.cars).toBeGreaterThanOrEqual(3);
  expect(proxy.cars()).toBe(first.upload.cars);
  expect(proxy.carBytes()).toBeGreaterThan(2 * MiB);

  for (const [path, bytes] of Object.entries(FILES)) {
    if (path.endsWith('.bin')) continue;
    expect(await served(sitesHost(site.name), `/${path}`)).toEqual({ status: 200, body: bytes.toString() });
  }
  expect((await served(sitesHost(site.name), '/')).body).toBe(FILES['index.html']!.toString());
  expect((await served(sitesHost(`${first.id.toLowerCase()}--${site.name}`), '/style.css')).body).toBe(FILES['style.css']!.toString());
  const clip = await hostFetch(`${service.endpoints.gateway}/media/clip.bin`, { headers: { host: sitesHost(site.name) } });
  expect(Buffer.from(await clip.arrayBuffer()).equals(FILES['media/clip.bin']!)).toBe(true);

  // The same folder: one CAR with the root and no blocks, which the service answers complete.
  proxy.reset();
  const second = await u.json(['deploy', site.name, '--dir', folder, '--watch', '--interval', '200']);
  expect(second).toMatchObject({ status: 'DEPLOYED', ipfsHash: first.ipfsHash });
  expect(second.id).not.toBe(first.id);
  expect(second.upload).toMatchObject({ blocks: first.upload.blocks, blocksSent: 0, bytesSent: 0, cars: 1, blocksStored: 0 });
  expect(proxy.cars()).toBe(1);
  expect(proxy.carBytes()).toBeLessThan(200); // a CAR header naming the root, nothing else

  // One file changed: its block and the directories above it, not the clip's 2 MiB.
  proxy.reset();
  await writeFile(join(folder, 'docs', 'page.html'), '<p>changed</p>');
  const third = await u.json(['deploy', site.name, '--dir', folder, '--watch', '--interval', '200']);
  expect(third.status).toBe('DEPLOYED');
  expect(third.ipfsHash).not.toBe(first.ipfsHash);
  expect(third.upload.blocksSent).toBe(3); // docs/page.html, docs/, the root
  expect(proxy.carBytes()).toBeLessThan(4096);
  expect(await served(sitesHost(site.name), '/docs/page.html')).toEqual({ status: 200, body: '<p>changed</p>' });
});

test("the CID is the one the service's own pipeline gives the same files from git", async () => {
  const folder = join(u.home, 'same');
  const files = { 'index.html': Buffer.from('<p>same</p>'), 'a/b.txt': Buffer.from('bee'), '.hidden': Buffer.from('kept') };
  await writeTree(folder, files);
  const dirSite = await u.json(['sites', 'create']);
  const fromDir = await u.json(['deploy', dirSite.name, '--dir', folder, '--watch', '--interval', '200']);
  const repo = 'acme/same-files';
  await git.commit(repo, Object.fromEntries(Object.entries(files).map(([k, v]) => [`site/${k}`, v])), 'the same files');
  const gitSite = await u.json(['sites', 'create', '--repo', git.repoUrl(repo), '--publish-dir', 'site']);
  const fromGit = await u.json(['deploy', gitSite.name, '--watch', '--interval', '200']);
  expect(fromGit.status).toBe('DEPLOYED');
  expect(fromDir.ipfsHash).toBe(fromGit.ipfsHash);
});

test('a folder that is not there, or not a folder, is one line and no deploy', async () => {
  const site = await u.json(['sites', 'create']);
  const missing = await u.run(['deploy', site.name, '--dir', join(u.home, 'nope')]);
  expect(missing.code).toBe(1);
  expect(oneErrorLine(missing.stderr)).toMatch(/--dir .*nope: no such folder/);
  await writeFile(join(u.home, 'file.txt'), 'x');
  const file = await u.run(['deploy', site.name, '--dir', join(u.home, 'file.txt')]);
  expect(file.code).toBe(1);
  expect(oneErrorLine(file.stderr)).toMatch(/not a folder/);
  expect(await u.json(['deploys', 'list', site.name])).toEqual([]);
});
