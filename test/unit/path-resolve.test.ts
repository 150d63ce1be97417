/**
 * resolvePath's own walk of UnixFS paths (core/ipfs/paths.ts: dag-pb blocks
 * decoded directly, directories binary searched, HAMT shards followed by
 * the name's hash) against ipfs-unixfs-exporter's walkPath, on DAGs that
 * import-directory.ts builds: plain and nested directories, a large one, a
 * HAMT-sharded one (with sub-shards), symlinks, missing names and blocks;
 * and the file reader starting from the resolved entry without reading its
 * block again.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { MemoryBlockstore } from 'blockstore-core/memory';
import { walkPath } from 'ipfs-unixfs-exporter';
import { UnixFS } from 'ipfs-unixfs';
import { CID } from 'multiformats/cid';
import { identity } from 'multiformats/hashes/identity';
import { sha256 } from 'multiformats/hashes/sha2';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { listDirectory, resolvePath, resolveUnder } from '../../functions/core/ipfs/paths.js';
import { openFile } from '../../functions/core/ipfs/read.js';

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'cairn-path-resolve-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function importTree(
  name: string,
  files: Record<string, string>,
  options: { shardingThreshold?: number; links?: Record<string, string> } = {},
) {
  const dir = join(scratch, name);
  await mkdir(dir, { recursive: true });
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
  }
  for (const [path, target] of Object.entries(options.links ?? {})) await symlink(target, join(dir, path));
  const blockstore = new MemoryBlockstore();
  const { cid } = await importDirectory(
    blockstore,
    dir,
    options.shardingThreshold === undefined ? {} : { shardingThreshold: options.shardingThreshold },
  );
  return { blockstore, root: cid };
}

/** The blockstore with every get() counted, in order. */
function counting(blockstore: MemoryBlockstore): { store: MemoryBlockstore; reads: string[] } {
  const reads: string[] = [];
  const store = Object.assign(Object.create(blockstore) as MemoryBlockstore, {
    get(cid: CID, options?: { signal?: AbortSignal }) {
      reads.push(cid.toString());
      return blockstore.get(cid, options);
    },
  });
  return { store, reads };
}

/** What the exporter's walk finds: the roots, or undefined for a path that is not there. */
async function exporterRoots(blockstore: MemoryBlockstore, root: CID, segments: string[]): Promise<string[] | undefined> {
  let last: { roots: CID[] } | undefined;
  try {
    for await (const step of walkPath([root.toString(), ...segments].join('/'), blockstore)) last = step;
  } catch (err) {
    if ((err as Error).name === 'NotFoundError') return undefined;
    throw err;
  }
  return last && last.roots.length === segments.length + 1 ? last.roots.map(String) : undefined;
}

async function text(blockstore: MemoryBlockstore, target: Parameters<typeof openFile>[1]): Promise<string> {
  return new Response((await openFile(blockstore, target)).stream()).text();
}

const BODIES: Record<string, string> = {
  'index.html': '<h1>home</h1>',
  'about/index.html': '<h1>about</h1>',
  'about/team/people.html': 'people',
  'a.txt': 'a',
  'b.txt': 'bb',
  'z/deep/deeper/file.css': 'body{}',
};

describe('a plain directory', () => {
  let tree: Awaited<ReturnType<typeof importTree>>;
  beforeAll(async () => {
    tree = await importTree('plain', BODIES, { links: { 'link-to-a': 'a.txt', 'link-to-about': 'about' } });
  });

  test("every file, nested or not, resolves to the exporter's CID with one root per segment, and reads back", async () => {
    for (const [path, body] of Object.entries(BODIES)) {
      const segments = path.split('/');
      const found = await resolvePath(tree.blockstore, tree.root, segments);
      expect(found?.entry.type).toBe('file');
      expect(found!.roots.map(String)).toEqual(await exporterRoots(tree.blockstore, tree.root, segments));
      expect(found!.entry.cid.toString()).toBe(found!.roots.at(-1)!.toString());
      expect(found!.entry.size).toBe(BigInt(body.length));
      expect(await text(tree.blockstore, found!.entry)).toBe(body);
    }
  });

  test('directories are directories, the root with no segments too', async () => {
    const root = await resolvePath(tree.blockstore, tree.root, []);
    expect(root?.entry.type).toBe('directory');
    expect(root!.roots).toEqual([tree.root]);
    const about = await resolvePath(tree.blockstore, tree.root, ['about', 'team']);
    expect(about?.entry.type).toBe('directory');
    expect(about!.roots.map(String)).toEqual(await exporterRoots(tree.blockstore, tree.root, ['about', 'team']));
    await expect(openFile(tree.blockstore, about!.entry)).rejects.toMatchObject({ name: 'NotAFileError' });
    const listed = await listDirectory(tree.blockstore, root!.entry);
    expect(listed.map((e) => [e.name, e.type])).toEqual([
      ['a.txt', 'file'],
      ['about', 'directory'],
      ['b.txt', 'file'],
      ['index.html', 'file'],
      ['link-to-a', 'file'],
      ['link-to-about', 'file'],
      ['z', 'directory'],
    ]);
  });

  test('a missing name, a name under a file and a name past the end are undefined, as the exporter has them', async () => {
    for (const segments of [
      ['nope'],
      ['about', 'nope.html'],
      ['a.txt', 'x'],
      ['about', 'index.html', 'x'],
      ['z', 'deep', 'deeper', 'file.css', 'more'],
      ['A.TXT'],
      ['a.tx'],
      ['a.txt '],
    ]) {
      expect(await resolvePath(tree.blockstore, tree.root, segments)).toBeUndefined();
      expect(await exporterRoots(tree.blockstore, tree.root, segments)).toBeUndefined();
    }
  });

  test('a symlink is a file holding its target, and is never followed', async () => {
    const link = await resolvePath(tree.blockstore, tree.root, ['link-to-about']);
    expect(link?.entry.type).toBe('file');
    expect(link!.entry.dagPb?.unixfs.type).toBe(4);
    expect(await text(tree.blockstore, link!.entry)).toBe('about');
    expect(await text(tree.blockstore, link!.entry.cid)).toBe('about');
    expect(await resolvePath(tree.blockstore, tree.root, ['link-to-about', 'index.html'])).toBeUndefined();
    expect(await exporterRoots(tree.blockstore, tree.root, ['link-to-about', 'index.html'])).toBeUndefined();
  });

  test('a missing block is thrown, not a missing path', async () => {
    const { blockstore, root } = await importTree('damaged', BODIES);
    const about = (await resolvePath(blockstore, root, ['about']))!.roots[1]!;
    await blockstore.delete(about);
    await expect(resolvePath(blockstore, root, ['about', 'index.html'])).rejects.toMatchObject({ name: 'NotFoundError' });
    expect((await resolvePath(blockstore, root, ['a.txt']))?.entry.type).toBe('file');
    const file = (await resolvePath(blockstore, root, ['z', 'deep', 'deeper', 'file.css']))!.entry.cid;
    await blockstore.delete(file);
    await expect(resolvePath(blockstore, root, ['z', 'deep', 'deeper', 'file.css'])).rejects.toMatchObject({ name: 'NotFoundError' });
    await blockstore.delete(root);
    await expect(resolvePath(blockstore, root, [])).rejects.toMatchObject({ name: 'NotFoundError' });
  });

  test('each block is read once: a small file is answered from the block the walk read, index.html from the directory block already read', async () => {
    const { store, reads } = counting(tree.blockstore);
    const found = await resolvePath(store, tree.root, ['about', 'team', 'people.html']);
    expect(reads).toEqual(found!.roots.map(String));
    reads.length = 0;
    expect(await text(store, found!.entry)).toBe('people');
    expect(reads).toEqual([]);
    const about = await resolvePath(store, tree.root, ['about']);
    reads.length = 0;
    const index = await resolveUnder(store, about!, ['index.html']);
    expect(index!.roots.map(String)).toEqual(await exporterRoots(tree.blockstore, tree.root, ['about', 'index.html']));
    expect(reads).toEqual([index!.entry.cid.toString()]);
  });
});

test('a large directory is searched by name bytes: every name, and names between, before and after them', async () => {
  const names = Array.from({ length: 300 }, (_, i) => `f-${String(i * 7).padStart(4, '0')}${i % 3 ? '.html' : ''}`);
  names.push('Ä-unicode.txt', 'ü.txt', '~tilde', '_redirects', '404.html');
  const tree = await importTree('large', Object.fromEntries(names.map((n) => [n, `body of ${n}`])));
  for (const name of names) {
    const found = await resolvePath(tree.blockstore, tree.root, [name]);
    expect(found?.roots.map(String)).toEqual(await exporterRoots(tree.blockstore, tree.root, [name]));
    expect(await text(tree.blockstore, found!.entry)).toBe(`body of ${name}`);
  }
  for (const name of ['', ' ', '0', 'f-', 'f-0001', 'f-0007.htm', 'f-2093.html.x', 'zzz', '\u{1F600}', 'A-unicode.txt']) {
    expect(await resolvePath(tree.blockstore, tree.root, [name])).toBeUndefined();
  }
});

describe('a HAMT-sharded directory (import-directory with a 1-byte threshold)', () => {
  const names = Array.from({ length: 400 }, (_, i) => `entry-${i}-${'x'.repeat(i % 17)}.txt`);
  let tree: Awaited<ReturnType<typeof importTree>>;
  beforeAll(async () => {
    tree = await importTree(
      'hamt',
      { ...Object.fromEntries(names.map((n, i) => [n, `entry ${i}`])), 'sub/inner/page.html': 'inner page', 'sub/x.txt': 'x' },
      { shardingThreshold: 1 },
    );
  });

  test('it is sharded, with sub-shards', async () => {
    const root = await resolvePath(tree.blockstore, tree.root, []);
    expect(root?.entry.type).toBe('directory');
    expect(root!.entry.dagPb?.unixfs.type).toBe(5);
    expect(root!.entry.dagPb!.view.starts.length).toBeLessThan(names.length);
  });

  test("every name resolves as the exporter resolves it, roots without the shards, and the blocks read are the exporter's", async () => {
    for (const name of names) {
      const { store, reads } = counting(tree.blockstore);
      const found = await resolvePath(store, tree.root, [name]);
      const exporterRead = counting(tree.blockstore);
      expect(found?.roots.map(String)).toEqual(await exporterRoots(exporterRead.store, tree.root, [name]));
      expect(await text(tree.blockstore, found!.entry)).toBe(`entry ${names.indexOf(name)}`);
      // The exporter reads the shards on the way, then (exporting the entry) the entry: the trustless gateway's CAR path.
      expect(reads).toEqual([...exporterRead.reads, found!.entry.cid.toString()]);
    }
  });

  test('nested directories under shards, sharded themselves', async () => {
    const found = await resolvePath(tree.blockstore, tree.root, ['sub', 'inner', 'page.html']);
    expect(found?.roots.map(String)).toEqual(await exporterRoots(tree.blockstore, tree.root, ['sub', 'inner', 'page.html']));
    expect(await text(tree.blockstore, found!.entry)).toBe('inner page');
    const sub = await resolvePath(tree.blockstore, tree.root, ['sub']);
    expect(sub!.entry.dagPb?.unixfs.type).toBe(5);
    expect((await resolveUnder(tree.blockstore, sub!, ['x.txt']))?.roots.map(String)).toEqual(
      await exporterRoots(tree.blockstore, tree.root, ['sub', 'x.txt']),
    );
  });

  test('missing names are undefined, a name sharing a slot with another included', async () => {
    for (const name of ['entry-400-.txt', 'entry-0-x.txt', 'entry-1', 'ENTRY-1-x.txt', 'sub2', 'x']) {
      expect(await resolvePath(tree.blockstore, tree.root, [name])).toBeUndefined();
      expect(await exporterRoots(tree.blockstore, tree.root, [name])).toBeUndefined();
    }
    expect(await resolvePath(tree.blockstore, tree.root, ['sub', 'inner', 'nope'])).toBeUndefined();
  });

  test('a missing shard block is thrown', async () => {
    const { blockstore, root } = await importTree('hamt-damaged', Object.fromEntries(names.map((n, i) => [n, `entry ${i}`])), {
      shardingThreshold: 1,
    });
    const { store, reads } = counting(blockstore);
    await resolvePath(store, root, [names[0]!]);
    expect(reads.length).toBeGreaterThan(2); // root, at least one sub-shard, the entry
    await blockstore.delete(CID.parse(reads[1]!));
    await expect(resolvePath(blockstore, root, [names[0]!])).rejects.toMatchObject({ name: 'NotFoundError' });
  });
});

describe('blocks that are not directories', () => {
  test('a raw block is a file without children; an identity CID is read from the CID', async () => {
    const blockstore = new MemoryBlockstore();
    const bytes = new TextEncoder().encode('raw bytes');
    const raw = CID.createV1(0x55, await sha256.digest(bytes));
    await blockstore.put(raw, bytes);
    const found = await resolvePath(blockstore, raw, []);
    expect(found?.entry).toMatchObject({ type: 'raw', size: BigInt(bytes.length) });
    expect(await text(blockstore, found!.entry)).toBe('raw bytes');
    expect(await resolvePath(blockstore, raw, ['x'])).toBeUndefined();
    const inline = CID.createV1(0x55, identity.digest(new TextEncoder().encode('inline')));
    const id = await resolvePath(new MemoryBlockstore(), inline, []);
    expect(id?.entry).toMatchObject({ type: 'raw', size: 6n });
    expect(await text(blockstore, id!.entry)).toBe('inline');
  });

  test('a directory whose links are out of order is still searched in full; a node without UnixFS data has no children', async () => {
    const blockstore = new MemoryBlockstore();
    const put = async (block: Uint8Array) => {
      const cid = CID.createV0(await sha256.digest(block));
      await blockstore.put(cid, block);
      return cid;
    };
    const leaf = await put(pbNode(new UnixFS({ type: 'file', data: new TextEncoder().encode('leaf') }).marshal(), []));
    const names = Array.from({ length: 40 }, (_, i) => `n${String(i).padStart(2, '0')}`).reverse();
    const dir = await put(
      pbNode(
        new UnixFS({ type: 'directory' }).marshal(),
        names.map((name) => ({ name, cid: leaf })),
      ),
    );
    for (const name of names) expect((await resolvePath(blockstore, dir, [name]))?.entry.cid.toString()).toBe(leaf.toString());
    expect(await resolvePath(blockstore, dir, ['n40'])).toBeUndefined();
    const bare = await put(pbNode(undefined, [{ name: 'a', cid: leaf }]));
    expect(await resolvePath(blockstore, bare, ['a'])).toBeUndefined();
    await expect(resolvePath(blockstore, bare, [])).rejects.toMatchObject({ name: 'NotUnixFSError' });
  });
});

/** A dag-pb block written by hand (links in the order given, which @ipld/dag-pb's encoder would refuse). */
function pbNode(data: Uint8Array | undefined, links: Array<{ name: string; cid: CID }>): Uint8Array {
  const varint = (n: number) => {
    const out: number[] = [];
    while (n >= 0x80) {
      out.push((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    out.push(n);
    return out;
  };
  const field = (key: number, bytes: Uint8Array | number[]) => [key, ...varint(bytes.length), ...bytes];
  const out: number[] = [];
  for (const l of links) out.push(...field(0x12, [...field(0x0a, l.cid.bytes), ...field(0x12, new TextEncoder().encode(l.name)), 0x18, 1]));
  if (data) out.push(...field(0x0a, data));
  return Uint8Array.from(out);
}
