/**
 * buildFileDag writes the same DAG as ipfs-unixfs-importer with Kubo's
 * options: same root, same blocks, byte for byte. Small chunks and fanouts
 * make deep trees (what 256 KiB chunks reach only past 7 GiB) cheap to check.
 */
import { randomBytes } from 'node:crypto';
import { importer } from 'ipfs-unixfs-importer';
import { fixedSize } from 'ipfs-unixfs-importer/chunker';
import { balanced } from 'ipfs-unixfs-importer/layout';
import { MemoryBlockstore } from 'blockstore-core/memory';
import { buildFileDag } from '../../functions/core/ipfs/file-dag.js';
import { importFile } from '../../functions/core/ipfs/import.js';
import { kuboImportOptions } from '../../functions/core/ipfs/cid.js';

async function* pieces(bytes: Uint8Array, size: number) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function blocksOf(store: MemoryBlockstore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const { cid, bytes } of store.getAll()) {
    const chunks: Uint8Array[] = [];
    for await (const c of bytes as AsyncIterable<Uint8Array>) chunks.push(c);
    out.set(cid.toString(), Buffer.concat(chunks).toString('hex'));
  }
  return out;
}

async function reference(bytes: Uint8Array, chunkSize: number, maxChildren: number, piece: number) {
  const store = new MemoryBlockstore();
  const options = { ...kuboImportOptions(), chunker: fixedSize({ chunkSize }), layout: balanced({ maxChildrenPerNode: maxChildren }) };
  let cid = '';
  for await (const entry of importer([{ content: pieces(bytes, piece) }], store, options)) cid = entry.cid.toString();
  return { cid, blocks: await blocksOf(store) };
}

const shapes: Array<[chunkSize: number, maxChildren: number, sizes: number[]]> = [
  [16, 3, [0, 1, 15, 16, 17, 32, 48, 49, 143, 144, 145, 432, 433, 1000, 1297, 5000]],
  [100, 2, [199, 200, 201, 399, 400, 401, 801, 1601, 3333]],
  [1024, 174, [0, 1023, 1024, 1025, 174 * 1024, 174 * 1024 + 1, 175 * 1024 + 7]],
];

describe.each(shapes)('chunks of %i bytes, %i links per node', (chunkSize, maxChildren, sizes) => {
  test.each(sizes)('%i bytes: same root and same blocks as ipfs-unixfs-importer', async (size) => {
    const bytes = randomBytes(size);
    for (const piece of [7, 64, 4096]) {
      const expected = await reference(bytes, chunkSize, maxChildren, piece);
      const store = new MemoryBlockstore();
      const dag = await buildFileDag(store, pieces(bytes, piece), { chunkSize, maxChildren, writeConcurrency: 3 });
      expect(dag.cid.toString()).toBe(expected.cid);
      expect(dag.size).toBe(size);
      expect(await blocksOf(store)).toEqual(expected.blocks);
    }
  });
});

test('importFile with Kubo settings matches the importer on a 3-chunk file fed in odd pieces', async () => {
  const bytes = randomBytes(3 * 262144 + 12345);
  const expected = await reference(bytes, 262144, 174, 65536);
  const { cid, size } = await importFile(new MemoryBlockstore(), pieces(bytes, 10007));
  expect(cid.toString()).toBe(expected.cid);
  expect(size).toBe(bytes.length);
});

test('a failing block write rejects the import', async () => {
  const store = new MemoryBlockstore();
  let writes = 0;
  store.put = (async () => {
    if (++writes === 3) throw new Error('disk full');
  }) as unknown as MemoryBlockstore['put'];
  await expect(buildFileDag(store, pieces(randomBytes(10_000), 100), { chunkSize: 100, maxChildren: 4 })).rejects.toThrow('disk full');
});
