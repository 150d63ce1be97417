/**
 * Files a deploy need not read again (steps/checkout/known-files.ts) with the real
 * local blockstore and importDirectory: a file still exactly as git wrote
 * it is taken as imported before; any change to it (bytes, mode, a
 * replacement) or a missing block makes it read again, and the directory's
 * CID is always the one a full import gives.
 */
import { appendFile, chmod, mkdir, mkdtemp, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { CID } from 'multiformats/cid';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PackedBlockstore } from '../../functions/core/ipfs/local-blockstore.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { KnownFiles } from '../../functions/deploy-worker/steps/checkout/known-files.js';
import type { TreeManifest } from '../../functions/deploy-worker/steps/checkout/trees.js';

let work: string;
let blockstore: PackedBlockstore;

beforeAll(async () => {
  work = await realpath(await mkdtemp(join(tmpdir(), 'cairn-known-')));
  blockstore = new PackedBlockstore({ smallBlocks: join(work, 'small'), packs: join(work, 'packs') });
  await blockstore.open();
});

afterAll(async () => {
  await blockstore.close();
  await rm(work, { recursive: true, force: true });
});

let runs = 0;
/** A checkout of `files` with a manifest that names a made-up blob id per file (its content's hash stands in). */
async function checkout(files: Record<string, Buffer | string>): Promise<{ dir: string; manifest: TreeManifest }> {
  const dir = join(work, `checkout-${++runs}`);
  const manifest: TreeManifest = {};
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
    manifest[path] = `100644 ${Buffer.from(body).toString('hex').slice(0, 40).padEnd(40, '0')}`;
  }
  return { dir, manifest };
}

const site = () => ({ 'index.html': '<h1>hi</h1>', 'a/page.html': 'page', 'img/big.bin': randomBytes(600 * 1024) });

test('a second import of the same files reads none of them, and gives the same CID', async () => {
  const files = site();
  const memory = join(work, 'dags-1.json');
  const first = await checkout(files);
  const known1 = await KnownFiles.stamp(first.dir, first.manifest, memory);
  const full = await importDirectory(blockstore, first.dir, { known: known1.forImport(blockstore) });
  expect(known1.hits).toBe(0);
  await known1.save();

  const second = await checkout(files);
  const known2 = await KnownFiles.stamp(second.dir, second.manifest, memory);
  const again = await importDirectory(blockstore, second.dir, { known: known2.forImport(blockstore) });
  expect(known2.hits).toBe(3);
  expect(again.cid.toString()).toBe(full.cid.toString());
  expect([again.files, again.bytes]).toEqual([full.files, full.bytes]);
});

test.each([
  ['bytes appended', (p: string) => appendFile(p, '!')],
  ['bytes rewritten in place, same size', (p: string) => writeFile(p, 'PAGE')],
  ['its mode changed', (p: string) => chmod(p, 0o755)],
  [
    'replaced by another file',
    async (p: string) => {
      await writeFile(`${p}.tmp`, 'page');
      await rename(`${p}.tmp`, p);
    },
  ],
])("a file the build touched (%s) is read again; the CID is a full import's", async (_, touch) => {
  const files = site();
  const memory = join(work, `dags-touch-${runs}.json`);
  const first = await checkout(files);
  const known1 = await KnownFiles.stamp(first.dir, first.manifest, memory);
  await importDirectory(blockstore, first.dir, { known: known1.forImport(blockstore) });
  await known1.save();

  const second = await checkout(files);
  const known2 = await KnownFiles.stamp(second.dir, second.manifest, memory);
  await touch(join(second.dir, 'a/page.html'));
  const got = await importDirectory(blockstore, second.dir, { known: known2.forImport(blockstore) });
  expect(known2.hits).toBe(2);
  expect(got.cid.toString()).toBe((await importDirectory(blockstore, second.dir)).cid.toString());
});

test('a file whose blocks are no longer stored is read again', async () => {
  const files = { 'only.txt': `unique ${randomBytes(8).toString('hex')}` };
  const memory = join(work, 'dags-gone.json');
  const first = await checkout(files);
  const known1 = await KnownFiles.stamp(first.dir, first.manifest, memory);
  await importDirectory(blockstore, first.dir, { known: known1.forImport(blockstore) });
  await known1.save();
  // The file's only block (its root, as remembered) is collected.
  const [[cid]] = Object.values(JSON.parse(await readFile(memory, 'utf8'))) as Array<[string]>;
  await blockstore.delete(CID.parse(cid!));

  const second = await checkout(files);
  const known2 = await KnownFiles.stamp(second.dir, second.manifest, memory);
  await importDirectory(blockstore, second.dir, { known: known2.forImport(blockstore) });
  expect(known2.hits).toBe(0);
});

test('what is kept is only the blobs of the last checkout, and forget() drops it all', async () => {
  const memory = join(work, 'dags-kept.json');
  const a = await checkout({ 'one.txt': 'one', 'two.txt': 'two' });
  const knownA = await KnownFiles.stamp(a.dir, a.manifest, memory);
  await importDirectory(blockstore, a.dir, { known: knownA.forImport(blockstore) });
  await knownA.save();
  const b = await checkout({ 'two.txt': 'two' });
  const knownB = await KnownFiles.stamp(b.dir, b.manifest, memory);
  await importDirectory(blockstore, b.dir, { known: knownB.forImport(blockstore) });
  expect(knownB.hits).toBe(1);
  await knownB.save();
  const c = await checkout({ 'one.txt': 'one', 'two.txt': 'two' });
  const knownC = await KnownFiles.stamp(c.dir, c.manifest, memory);
  await importDirectory(blockstore, c.dir, { known: knownC.forImport(blockstore) });
  expect(knownC.hits).toBe(1); // one.txt was dropped with b's checkout
  await knownC.forget();
  const d = await checkout({ 'one.txt': 'one', 'two.txt': 'two' });
  const knownD = await KnownFiles.stamp(d.dir, d.manifest, memory);
  await importDirectory(blockstore, d.dir, { known: knownD.forImport(blockstore) });
  expect(knownD.hits).toBe(0);
});
