/**
 * importDirectory gives a publish directory the CID `ipfs add -r -H` prints:
 * checked against the repository's directory vectors and against CIDs
 * hard-coded in Kubo's own sharness tests (t0260-sharding.sh for HAMT
 * directories on both sides of the 256 KiB threshold, t0044-add-symlink.sh
 * for symlinks, t0040-add-and-cat.sh for hidden files). The DAG it writes
 * is walked by Cairn's pinning and read back by ipfs-unixfs-exporter.
 */
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createCipheriv, createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { decode as decodeDagPb } from '@ipld/dag-pb';
import { MemoryBlockstore } from 'blockstore-core/memory';
import type { Blockstore } from 'interface-blockstore';
import { exporter, type UnixFSEntry } from 'ipfs-unixfs-exporter';
import { importer } from 'ipfs-unixfs-importer';
import { UnixFS } from 'ipfs-unixfs';
import type { CID } from 'multiformats/cid';
import { loadConfig } from '../../functions/core/config.js';
import { inlineLeafHasher } from '../../functions/core/hashing/leaf-hasher.js';
import { kuboImportOptions } from '../../functions/core/ipfs/cid.js';
import { importDirectory, PublishDirectoryError } from '../../functions/core/ipfs/import-directory.js';
import { createIpfsNode } from '../../functions/core/ipfs/node.js';
import { readBlock, walkDag } from '../../functions/core/storage/dag-walk.js';
import { isBlockReferenced, isRootPinned, pinRoot } from '../../functions/core/storage/pins.js';
import { vectors } from '../support/vectors.js';

const EMPTY_DIR = 'QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn';

let scratch: string;
let serial = 0;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'cairn-dirimport-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** A fresh directory holding `files` (path -> content; a path ending in "/" is an empty directory). */
async function tree(files: Record<string, string | Uint8Array>): Promise<string> {
  const root = join(scratch, `t${serial++}`);
  await mkdir(root);
  for (const [path, content] of Object.entries(files)) {
    if (path.endsWith('/')) {
      await mkdir(join(root, path), { recursive: true });
    } else {
      await mkdir(dirname(join(root, path)), { recursive: true });
      await writeFile(join(root, path), content);
    }
  }
  return root;
}

/** Kubo's t0260 trees: `echo $i > file$i`, names from `name(i)`. */
function numbered(from: number, to: number, name: (i: number) => string): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = from; i <= to; i++) files[name(i)] = `${i}\n`;
  return files;
}
const padded = (i: number) => `file${String(i).padStart(6, '0')}`;

const dagPbNode = async (blockstore: Blockstore, cid: CID) => decodeDagPb(await readBlock(blockstore, cid));
const rootType = async (blockstore: Blockstore, cid: CID) => UnixFS.unmarshal((await dagPbNode(blockstore, cid)).Data!).type;

/** Every file under `cid`, path -> bytes, through ipfs-unixfs-exporter (HAMT shards included; symlinks left out). */
async function exported(blockstore: Blockstore, cid: CID | string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const visit = async (entry: UnixFSEntry, path: string) => {
    if (entry.type === 'directory') {
      for await (const child of entry.entries())
        await visit(await exporter(child.cid, blockstore), path ? `${path}/${child.name}` : child.name);
    } else if (entry.type === 'file') {
      if (entry.unixfs.type === 'symlink') return;
      const chunks: Uint8Array[] = [];
      for await (const chunk of entry.content()) chunks.push(chunk);
      out.set(path, Buffer.concat(chunks));
    } else {
      throw new Error(`${path} is a ${entry.type}`);
    }
  };
  await visit(await exporter(cid, blockstore), '');
  return out;
}

/** The directory's CID through ipfs-unixfs-importer with Kubo's options: another route to the same DAG for trees without symlinks. */
async function importerCid(files: Record<string, string | Uint8Array>): Promise<string> {
  const entries = Object.entries(files).map(([path, content]) =>
    path.endsWith('/')
      ? { path: `d/${path.slice(0, -1)}` }
      : { path: `d/${path}`, content: typeof content === 'string' ? Buffer.from(content) : content },
  );
  let cid = '';
  for await (const e of importer(entries, new MemoryBlockstore(), { ...kuboImportOptions(), wrapWithDirectory: false }))
    if (e.path === 'd') cid = e.cid.toString();
  return cid;
}

describe('the repository vectors', () => {
  test.each(vectors.filter((v) => v.kind === 'dir').map((v) => [v.name, v] as const))('%s', async (_name, v) => {
    const files: Record<string, string> = v.generator.startsWith('[]') ? {} : JSON.parse(v.generator);
    const { cid } = await importDirectory(new MemoryBlockstore(), await tree(files));
    expect(cid.toString()).toBe(v.cidV0);
    expect(cid.toV1().toString()).toBe(v.cidV1);
  });
});

describe("Kubo's HAMT sharding (t0260-sharding.sh)", () => {
  // One tree for both sides of the threshold (writing 5960 files is most of the time): file000006..5960 first, then 1..5 added.
  let bigDir: string;
  beforeAll(async () => {
    bigDir = await tree(numbered(6, 5960, padded));
  });

  test('5955 entries of 10-char names (262020 estimated bytes, under the threshold) stay one plain directory', async () => {
    // t0260 reaches this CID by removing file000001..5 through MFS: a plain directory of the rest.
    const blockstore = new MemoryBlockstore();
    const { cid } = await importDirectory(blockstore, bigDir);
    expect(cid.toString()).toBe('QmbVxi5zDdzytrjdufUejM92JsWj8wGVmukk6tiPce3p1m');
    expect(await rootType(blockstore, cid)).toBe('directory');
  });

  test('5960 of them (262240 bytes) make a HAMT', async () => {
    for (const [name, content] of Object.entries(numbered(1, 5, padded))) await writeFile(join(bigDir, name), content);
    const blockstore = new MemoryBlockstore();
    const { cid, files } = await importDirectory(blockstore, bigDir);
    expect(cid.toString()).toBe('QmWfjnRWRvdvYezQWnfbvrvY7JjrpevsE9cato1x76UqGr');
    expect(files).toBe(5960);
    expect(await rootType(blockstore, cid)).toBe('hamt-sharded-directory');
  });

  test('the threshold is strict: 262144 estimated bytes stay plain, 262145 shard', async () => {
    // 4096 names of 30 bytes with 34-byte CIDv0s: exactly 256 KiB. (No Kubo vector sits on the boundary; boxo documents `>`.)
    const names = Array.from({ length: 4096 }, (_, i) => `page-${String(i).padStart(25, '0')}`);
    const dir = await tree(Object.fromEntries(names.map((n) => [n, ''])));
    const blockstore = new MemoryBlockstore();
    expect(await rootType(blockstore, (await importDirectory(blockstore, dir)).cid)).toBe('directory');
    await rm(join(dir, names[0]!));
    await writeFile(join(dir, `${names[0]}x`), '');
    expect(await rootType(blockstore, (await importDirectory(blockstore, dir)).cid)).toBe('hamt-sharded-directory');
  });

  test('100 entries stay a plain directory', async () => {
    const { cid } = await importDirectory(new MemoryBlockstore(), await tree(numbered(1, 100, padded)));
    expect(cid.toString()).toBe('QmdBXmm4HRpUhyzzctbFvi2tLai3XFL1YjmE1qfpJe61NX');
  });

  test('2000 entries, unsharded by default and sharded with the threshold at 1 byte', async () => {
    const dir = await tree(numbered(1, 2000, (i) => `file${i}`));
    expect((await importDirectory(new MemoryBlockstore(), dir)).cid.toString()).toBe('QmavrTrQG4VhoJmantURAYuw3bowq3E2WcvP36NRQDAC1N');
    const blockstore = new MemoryBlockstore();
    const { cid } = await importDirectory(blockstore, dir, { shardingThreshold: 1 });
    expect(cid.toString()).toBe('QmSCJD1KYLhVVHqBK3YyXuoEqHt7vggyJhzoFYbT8v1XYL');
    const file100 = await exporter(`${cid}/file100`, blockstore);
    expect(file100.cid.toString()).toBe('QmZ3RfWk1u5LEGYLHA633B5TNJy3Du27K6Fny9wcxpowGS');
  });
});

describe('hidden files and empty directories', () => {
  const planets = {
    'mars.txt': 'Hello Mars\n',
    'venus.txt': 'Hello Venus\n',
    '.pluto.txt': 'Hello Pluto\n',
    '.charon.txt': 'Hello Charon\n',
    '.asteroids/ceres.txt': 'Hello Ceres\n',
    '.asteroids/pallas.txt': 'Hello Pallas\n',
  };

  test('dotfiles are kept as `ipfs add -r --hidden` keeps them (t0040-add-and-cat.sh), .gitignore not obeyed', async () => {
    expect((await importDirectory(new MemoryBlockstore(), await tree(planets))).cid.toString()).toBe(
      'QmetajtFdmzhWYodAsZoVZSiqpeJDAiaw2NwbM3xcWcpDj',
    );
    const withIgnore = await importDirectory(new MemoryBlockstore(), await tree({ ...planets, '.gitignore': 'mars.txt\n' }));
    expect(withIgnore.cid.toString()).toBe('QmczhHaXyb3bc9APMxe4MXbr87V5YDLKLaw3DZX3fK7HrK');
  });

  test('.well-known is published', async () => {
    const files = {
      'index.html': '<h1>hi</h1>\n',
      '.well-known/security.txt': 'Contact: mailto:a@example.com\n',
      '.well-known/.hidden-too': 'x',
    };
    const blockstore = new MemoryBlockstore();
    const { cid } = await importDirectory(blockstore, await tree(files));
    expect(cid.toString()).toBe(await importerCid(files));
    const back = await exported(blockstore, cid);
    expect([...back.keys()].sort()).toEqual(['.well-known/.hidden-too', '.well-known/security.txt', 'index.html']);
  });

  test('links are sorted by the bytes of their names, not by UTF-16', async () => {
    // U+FFFD is EF BF BD in UTF-8, before the F0 of an emoji; in UTF-16 the emoji's surrogate D83D comes first.
    const files = { '\uFFFD.txt': 'a', '\u{1F600}.txt': 'b', 'z.txt': 'c' };
    const { cid } = await importDirectory(new MemoryBlockstore(), await tree(files));
    expect(cid.toString()).toBe(await importerCid(files));
  });

  test('empty directories are kept, at the root and below', async () => {
    const files = { 'a/empty/': '', 'a/b/c/': '', 'f.txt': 'f\n' };
    const blockstore = new MemoryBlockstore();
    const result = await importDirectory(blockstore, await tree(files));
    expect(result.cid.toString()).toBe(await importerCid(files));
    expect((await exporter(`${result.cid}/a/empty`, blockstore)).cid.toString()).toBe(EMPTY_DIR);
    expect((await exporter(`${result.cid}/a/b/c`, blockstore)).cid.toString()).toBe(EMPTY_DIR);
    expect(result).toMatchObject({ files: 1, directories: 5, symlinks: 0, bytes: 2 });
  });

  test('an empty publish directory imports as the empty directory, with nothing counted', async () => {
    expect(await importDirectory(new MemoryBlockstore(), await tree({}))).toMatchObject({
      files: 0,
      directories: 1,
      symlinks: 0,
      bytes: 0,
    });
    expect((await importDirectory(new MemoryBlockstore(), await tree({}))).cid.toString()).toBe(EMPTY_DIR);
  });
});

describe('symlinks', () => {
  test("Kubo's t0044-add-symlink.sh trees, dangling links included", async () => {
    const current = await tree({ 'foo/baz': 'some text\n', 'badin/': '' });
    await mkdir(join(current, 'bar'));
    await symlink('../foo/baz', join(current, 'bar/baz'));
    await symlink('files/does/not/exist', join(current, 'badin/bad'));
    expect((await importDirectory(new MemoryBlockstore(), current)).cid.toString()).toBe('QmQRgZT6xVFKJLVVpJDu3WcPkw2iqQ1jqK1F9jmdeq9zAv');

    const older = await tree({ 'foo/baz': 'some text\n', 'bar/': '' });
    await symlink('files/foo/baz', join(older, 'bar/baz'));
    await symlink('files/does/not/exist', join(older, 'bad'));
    const blockstore = new MemoryBlockstore();
    const { cid, symlinks, files } = await importDirectory(blockstore, older);
    expect(cid.toString()).toBe('QmWdiHKoeSW8G1u7ATCgpx4yMoUhYaJBQGkyPLkS9goYZ8');
    expect({ symlinks, files }).toEqual({ symlinks: 2, files: 1 });
    // `ipfs add -qr files/badin | head -1` in t0044: the link on its own.
    expect((await exporter(`${cid}/bad`, blockstore)).cid.toString()).toBe('QmWYN8SEXCgNT2PSjB6BnxAx6NJQtazWoBkTRH9GRfPFFQ');
  });

  test('a symlink inside is a UnixFS symlink node holding its target, not the file it points to', async () => {
    const dir = await tree({ 'docs/index.html': 'hello\n' });
    await symlink('docs/index.html', join(dir, 'index.html'));
    const blockstore = new MemoryBlockstore();
    const { cid } = await importDirectory(blockstore, dir);
    const link = (await dagPbNode(blockstore, cid)).Links.find((l) => l.Name === 'index.html')!;
    const node = UnixFS.unmarshal((await dagPbNode(blockstore, link.Hash)).Data!);
    expect(node.type).toBe('symlink');
    expect(Buffer.from(node.data!).toString()).toBe('docs/index.html');
  });

  test.each([
    ['an absolute target', '/etc/passwd'],
    ['a target that climbs out', '../../outside.txt'],
    ['an absolute target inside the directory', '<inside>'],
  ])('%s is refused, naming the link', async (_what, target) => {
    const dir = await tree({ 'a/page.html': 'x', 'inside.txt': 'y' });
    await symlink(target === '<inside>' ? join(dir, 'inside.txt') : target, join(dir, 'a/link'));
    const failure = importDirectory(new MemoryBlockstore(), dir);
    await expect(failure).rejects.toThrow(PublishDirectoryError);
    await expect(failure).rejects.toThrow(/a\/link/);
  });

  test('a bad link among many files fails the import promptly with its own error', async () => {
    // More files than are read at once: the ones still waiting must give up too, not wait forever.
    const dir = await tree(numbered(1, 100, padded));
    await symlink('../../x', join(dir, 'bad'));
    await expect(importDirectory(new MemoryBlockstore(), dir)).rejects.toThrow(PublishDirectoryError);
  }, 10_000);

  test('a link that is inside by its text but leads out through another link is refused', async () => {
    const dir = await tree({ 'index.html': 'x' });
    await writeFile(join(dir, '..', 'secret'), 'not for the site');
    await symlink('.', join(dir, 'here'));
    await symlink('here/../secret', join(dir, 'sneaky'));
    await expect(importDirectory(new MemoryBlockstore(), dir)).rejects.toThrow(/sneaky.*leads out/);
  });

  test('symlink loops are stored as links, never followed', async () => {
    const dir = await tree({ 'sub/page.html': 'x' });
    await symlink('b', join(dir, 'a'));
    await symlink('a', join(dir, 'b'));
    await symlink('self', join(dir, 'self'));
    await symlink('..', join(dir, 'sub/up')); // the root itself: a cycle for anything that follows links
    const blockstore = new MemoryBlockstore();
    const result = await importDirectory(blockstore, dir);
    expect(result).toMatchObject({ files: 1, directories: 2, symlinks: 4 });
    for (const name of ['a', 'b', 'self']) expect((await exporter(`${result.cid}/${name}`, blockstore)).cid.toString()).toBeTruthy();
  });
});

describe('errors', () => {
  test('a missing publish directory is named', async () => {
    const missing = join(scratch, 'no-such-dir');
    const failure = importDirectory(new MemoryBlockstore(), missing);
    await expect(failure).rejects.toThrow(PublishDirectoryError);
    await expect(failure).rejects.toThrow(missing);
  });

  test('a file given as the publish directory is named', async () => {
    const dir = await tree({ 'f.txt': 'x' });
    await expect(importDirectory(new MemoryBlockstore(), join(dir, 'f.txt'))).rejects.toThrow(/f\.txt is not a directory/);
  });

  test('a leaf hasher is asked for each file and finished', async () => {
    const dir = await tree({ 'a.txt': 'a', 'b/c.txt': 'c', 'b/d.txt': 'd' });
    let made = 0;
    let finished = 0;
    const leaves = () => {
      made++;
      const hasher = inlineLeafHasher(['md5']);
      return { ...hasher, finish: () => (finished++, hasher.finish()) };
    };
    const { cid } = await importDirectory(new MemoryBlockstore(), dir, { leaves });
    expect({ made, finished }).toEqual({ made: 3, finished: 3 });
    expect(cid.toString()).toBe((await importDirectory(new MemoryBlockstore(), dir)).cid.toString());
  });

  test('an aborted import stops', async () => {
    const dir = await tree(numbered(1, 200, padded));
    const controller = new AbortController();
    controller.abort(new Error('deploy cancelled'));
    await expect(importDirectory(new MemoryBlockstore(), dir, { signal: controller.signal })).rejects.toThrow('deploy cancelled');
  });
});

describe('the DAG in the node', () => {
  /** Kubo's ChaCha20 reader (see the CID reference): reproducible bytes. */
  const chacha = (seed: string, n: number) =>
    createCipheriv('chacha20', createHash('sha256').update(seed).digest(), Buffer.alloc(16)).update(Buffer.alloc(n));
  const site = {
    'index.html': '<h1>site</h1>\n',
    'assets/big.bin': chacha('big', 3 * 262144 + 12345),
    'assets/empty.txt': '',
    '.well-known/security.txt': 'Contact: x\n',
    ...Object.fromEntries(Object.entries(numbered(1, 300, (i) => `blog/post-${i}.html`))),
  };

  test('pinRoot walks all of it, HAMT shards included, and the exporter reads every file back', async () => {
    const data = await mkdtemp(join(tmpdir(), 'cairn-dirimport-node-'));
    const node = await createIpfsNode(loadConfig({ CAIRN_DATA_DIR: data }));
    try {
      const dir = await tree(site);
      await symlink('../index.html', join(dir, 'blog/home'));
      // Every directory sharded, so the walk has shard nodes at several levels to follow.
      const written = new Set<string>();
      const recording = new Proxy(node.blockstore, {
        get(target, prop, receiver) {
          if (prop === 'put')
            return (cid: CID, bytes: Uint8Array, options?: object) => (written.add(cid.toString()), target.put(cid, bytes, options));
          const value = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const result = await importDirectory(recording, dir, { shardingThreshold: 1 });
      expect(await rootType(node.blockstore, result.cid)).toBe('hamt-sharded-directory');
      expect(result).toMatchObject({
        files: 304,
        directories: 4,
        symlinks: 1,
        bytes: Object.values(site).reduce((s, c) => s + Buffer.byteLength(c), 0),
      });

      const walked = new Set<string>();
      for await (const cid of walkDag(node.blockstore, result.cid)) walked.add(cid.toString());
      expect([...walked].sort()).toEqual([...written].sort());

      await pinRoot(node, result.cid);
      expect(await isRootPinned(node, result.cid)).toBe(true);
      const deepFile = await exporter(`${result.cid}/blog/post-123.html`, node.blockstore);
      expect(await isBlockReferenced(node.datastore, deepFile.cid)).toBe(true);

      const back = await exported(node.blockstore, result.cid);
      const expected = Object.entries(site).map(([path, content]) => [path, Buffer.from(content)] as const);
      expect([...back.keys()].sort()).toEqual(expected.map(([p]) => p).sort());
      for (const [path, content] of expected) expect(back.get(path)!.equals(content)).toBe(true);
      expect(back.get('assets/big.bin')!.equals(await readFile(join(dir, 'assets/big.bin')))).toBe(true);
    } finally {
      await node.stop();
      await rm(data, { recursive: true, force: true });
    }
  });

  test('the default, unsharded import of the same site reads back the same files', async () => {
    const dir = await tree(site);
    const blockstore = new MemoryBlockstore();
    const { cid } = await importDirectory(blockstore, dir);
    expect(cid.toString()).toBe(await importerCid(site));
    const back = await exported(blockstore, cid);
    for (const [path, content] of Object.entries(site)) expect(back.get(path)!.equals(Buffer.from(content))).toBe(true);
  });
});
