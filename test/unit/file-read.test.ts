/**
 * openFile reads back what any UnixFS importer layout wrote (balanced and
 * trickle, dag-pb or raw leaves, CIDv0 or v1), whole and by range, with its
 * own block decoding below the root (unixfs-file.ts).
 */
import { randomBytes } from 'node:crypto';
import { importer, type ImporterOptions } from 'ipfs-unixfs-importer';
import { fixedSize } from 'ipfs-unixfs-importer/chunker';
import { balanced, trickle } from 'ipfs-unixfs-importer/layout';
import { MemoryBlockstore } from 'blockstore-core/memory';
import { openFile } from '../../functions/core/ipfs/read.js';
import { decodeFileNode, MalformedBlockError } from '../../functions/core/ipfs/unixfs-file.js';

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const layouts: Array<[string, Partial<ImporterOptions>]> = [
  ['balanced, dag-pb leaves, CIDv0', { cidVersion: 0, rawLeaves: false, layout: balanced({ maxChildrenPerNode: 3 }) }],
  ['balanced, raw leaves, CIDv1', { cidVersion: 1, rawLeaves: true, layout: balanced({ maxChildrenPerNode: 4 }) }],
  ['trickle, dag-pb leaves', { cidVersion: 0, rawLeaves: false, layout: trickle({ maxChildrenPerNode: 3, layerRepeat: 2 }) }],
  ['trickle, raw leaves', { cidVersion: 1, rawLeaves: true, layout: trickle({ maxChildrenPerNode: 4, layerRepeat: 2 }) }],
];

test.each(layouts)('%s: whole file and ranges', async (_name, options) => {
  const store = new MemoryBlockstore();
  for (const size of [0, 1, 100, 5000, 33_333]) {
    const bytes = randomBytes(size);
    let cid;
    for await (const entry of importer([{ content: bytes }], store, { ...options, chunker: fixedSize({ chunkSize: 100 }) }))
      cid = entry.cid;
    const file = await openFile(store, cid!);
    expect(file.size).toBe(size);
    expect((await readAll(file.stream())).equals(bytes)).toBe(true);
    for (const [offset, length] of [
      [0, 1],
      [99, 2],
      [150, 1000],
      [size - 7, 7],
      [3, 0],
    ]) {
      if (offset < 0 || offset >= size) continue;
      const got = await readAll(file.stream({ offset, length }));
      expect(got.equals(bytes.subarray(offset, offset + length))).toBe(true);
    }
  }
});

test('a dag-pb block that is not a UnixFS file is refused', () => {
  // PBNode{Data: UnixFS{Type: Directory}}
  expect(() => decodeFileNode(Uint8Array.from([0x0a, 0x02, 0x08, 0x01]))).toThrow(MalformedBlockError);
  expect(() => decodeFileNode(Uint8Array.from([0x0a, 0x05, 0x08]))).toThrow(MalformedBlockError);
});

test('lent chunks: every block read into pooled memory, each chunk given back and the memory reused at once, still read back exactly', async () => {
  const { blockBuffers, lentChunks } = await import('../../functions/core/buffer-pool.js');
  const store = new MemoryBlockstore();
  // Like the file blockstore, but every block, parents included, goes into the memory `allocate` gives.
  const pooled = Object.assign(Object.create(store) as MemoryBlockstore, {
    async *get(cid: Parameters<MemoryBlockstore['get']>[0], options?: { allocate?: (n: number) => Buffer }): AsyncGenerator<Uint8Array> {
      const pieces: Uint8Array[] = [];
      for await (const piece of store.get(cid)) pieces.push(piece);
      const bytes = Buffer.concat(pieces);
      if (!options?.allocate) {
        yield bytes;
        return;
      }
      const into = options.allocate(bytes.length);
      bytes.copy(into);
      yield into;
    },
  });
  const bytes = randomBytes(20_000);
  let cid;
  for await (const entry of importer([{ content: bytes }], store, {
    cidVersion: 0,
    rawLeaves: false,
    layout: balanced({ maxChildrenPerNode: 3 }),
    chunker: fixedSize({ chunkSize: 100 }),
  }))
    cid = entry.cid;
  const file = await openFile(pooled, cid!);
  for (const range of [undefined, { offset: 250, length: 12_345 }]) {
    const lent = lentChunks(file.stream(range))!;
    expect(lent).toBeDefined();
    const got: Buffer[] = [];
    const before = blockBuffers.stats.created + blockBuffers.stats.reused;
    for (let next = await lent.chunks.next(); !next.done; next = await lent.chunks.next()) {
      got.push(Buffer.from(next.value));
      lent.give(next.value);
      // Another reader takes the memory at once and writes over it.
      const other = blockBuffers.take(256 * 1024);
      other.fill(0xaa);
      blockBuffers.give(other);
    }
    const expected = range ? bytes.subarray(range.offset, range.offset + range.length) : bytes;
    expect(Buffer.concat(got).equals(expected)).toBe(true);
    expect(blockBuffers.stats.created + blockBuffers.stats.reused - before).toBeGreaterThan(got.length); // the reads went through the pool
  }
});
