/**
 * The local IPFS store: blocks written by the importer read back through
 * the file blockstore (whole file and ranges, across levels of the DAG), and
 * pinning records every block of the DAG.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decode } from '@ipld/dag-pb';
import { CID } from 'multiformats/cid';
import { exporter } from 'ipfs-unixfs-exporter';
import { loadConfig } from '../../functions/core/config.js';
import { createIpfsNode, type IpfsNode } from '../../functions/core/ipfs/node.js';
import { importFile } from '../../functions/core/ipfs/import.js';
import { isBlockReferenced, isRootPinned, listRoots, pinRoot } from '../../functions/core/storage/pins.js';
import { isNotFound, openFile } from '../../functions/core/ipfs/read.js';
import type { PackedBlockstore } from '../../functions/core/ipfs/local-blockstore.js';
import { PackStore } from '../../functions/core/ipfs/pack-store.js';

let dir: string;
let node: IpfsNode;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-ipfs-'));
  node = await createIpfsNode(loadConfig({ CAIRN_DATA_DIR: dir }));
});

afterAll(async () => {
  await node.stop();
  await rm(dir, { recursive: true, force: true });
});

async function* pieces(bytes: Uint8Array, size = 65536) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function dagBlocks(root: CID): Promise<CID[]> {
  const entry = await exporter(root, node.blockstore);
  if (entry.type !== 'file') throw new Error(`${root} is a ${entry.type}`);
  const out: CID[] = [root];
  for (const link of entry.node.Links) out.push(...(await dagBlocks(link.Hash)));
  return out;
}

test('a file of several blocks reads back whole and by range', async () => {
  const bytes = randomBytes(5 * 262144 + 999);
  const { cid, size } = await importFile(node.blockstore, pieces(bytes));
  expect(size).toBe(bytes.length);
  const file = await openFile(node.blockstore, cid);
  expect(file.size).toBe(bytes.length);
  expect((await readAll(file.stream())).equals(bytes)).toBe(true);
  for (const [offset, length] of [
    [0, 1],
    [262143, 2],
    [262144, 262144],
    [300000, 700000],
    [bytes.length - 5, 5],
    [10, 0],
  ] as const) {
    expect((await readAll(file.stream({ offset, length }))).equals(bytes.subarray(offset, offset + length))).toBe(true);
  }
});

test('a missing block is a NotFoundError', async () => {
  const err = await openFile(node.blockstore, CID.parse('QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o')).catch((e: unknown) => e);
  expect(isNotFound(err)).toBe(true);
});

test('pinning records every block of the DAG, and a second pin is a no-op', async () => {
  const bytes = randomBytes(3 * 262144 + 1);
  const { cid } = await importFile(node.blockstore, pieces(bytes));
  const blocks = await dagBlocks(cid);
  expect(blocks).toHaveLength(5);
  for (const block of blocks) expect(await isBlockReferenced(node.datastore, block)).toBe(false);
  await pinRoot(node, cid);
  for (const block of blocks) expect(await isBlockReferenced(node.datastore, block)).toBe(true);
  expect(await isRootPinned(node, cid)).toBe(true);
  await pinRoot(node, cid);
  const roots = [];
  for await (const { root } of listRoots(node.datastore)) roots.push(root);
  expect(roots.filter((r) => r === cid.toV1().toString())).toHaveLength(1);
});

test('pinning a DAG with a missing block fails', async () => {
  const { cid } = await importFile(node.blockstore, pieces(randomBytes(2 * 262144 + 5)));
  const blocks = await dagBlocks(cid);
  await node.blockstore.delete(blocks[2]!);
  await expect(pinRoot(node, cid)).rejects.toMatchObject({ name: 'MissingBlockError', cid: blocks[2] });
  expect(await isRootPinned(node, cid)).toBe(false);
});

test('small blocks live in the LevelDB database, large ones in packs; deletes reach both', async () => {
  const store = node.blockstore as PackedBlockstore;
  const packs = store.packStore!;
  const { cid: small } = await importFile(store, pieces(randomBytes(3000)));
  const { cid: large } = await importFile(store, pieces(randomBytes(200 * 1024)));
  const name = (cid: CID) => PackStore.nameOf(cid.multihash.bytes);
  expect(packs.locate(name(small))).toBeUndefined();
  expect(packs.locate(name(large))).toBeDefined();
  for (const cid of [small, large]) {
    expect(await store.has(cid)).toBe(true);
    await store.delete(cid);
    expect(await store.has(cid)).toBe(false);
    await expect(openFile(store, cid)).rejects.toMatchObject({ name: 'NotFoundError' });
  }
});

test('a block already stored is not written again: its pack stays as it was, and the bytes read back', async () => {
  const bytes = randomBytes(3 * 262144);
  const first = await importFile(node.blockstore, pieces(bytes));
  const rootBytes: Uint8Array[] = [];
  for await (const piece of node.blockstore.get(first.cid)) rootBytes.push(piece);
  const leaves = decode(Buffer.concat(rootBytes)).Links.map((link) => link.Hash);
  expect(leaves.length).toBe(3);
  const packs = (node.blockstore as PackedBlockstore).packStore!;
  const where = () => leaves.map((cid) => packs.locate(PackStore.nameOf(cid.multihash.bytes)));
  const before = { at: where(), sizes: packs.packSizes() };
  expect(before.at.every((loc) => loc !== undefined)).toBe(true); // full leaves live in packs
  const again = await importFile(node.blockstore, pieces(bytes, 10007));
  expect(again.cid.equals(first.cid)).toBe(true);
  expect(where()).toEqual(before.at);
  expect(packs.packSizes()).toEqual(before.sizes);
  expect((await readAll((await openFile(node.blockstore, again.cid)).stream())).equals(bytes)).toBe(true);
});

test('pinRoot resolves only once the pin records are on disk: a failed write fails the pin', async () => {
  const { cid } = await importFile(node.blockstore, pieces(randomBytes(3 * 262144)));
  const db = (node.datastore as unknown as { db: { batch: (...args: unknown[]) => Promise<void> } }).db;
  const batch = db.batch;
  db.batch = () => Promise.reject(new Error('disk full'));
  try {
    await expect(pinRoot(node, cid)).rejects.toThrow('disk full');
  } finally {
    db.batch = batch;
  }
  // Nothing half-written: what the failed batch held is not read back either.
  expect(await isRootPinned(node, cid)).toBe(false);
  expect(await isBlockReferenced(node.datastore, cid)).toBe(false);
  await pinRoot(node, cid);
  expect(await isRootPinned(node, cid)).toBe(true);
});

test("Helia over the node's stores is started when first asked for, once, and reads what Cairn imported", async () => {
  const bytes = randomBytes(3 * 262144 + 5);
  const { cid } = await importFile(node.blockstore, pieces(bytes));
  const helia = await node.helia();
  expect(await node.helia()).toBe(helia);
  // Helia's own block layer, over the same blockstore: the root block is there, byte for byte.
  // A block comes as pieces, read in one piece or several.
  const bytesOf = async (got: AsyncIterable<Uint8Array> | Iterable<Uint8Array>) => {
    const parts: Uint8Array[] = [];
    for await (const part of got) parts.push(part);
    return Buffer.concat(parts);
  };
  expect((await bytesOf(await helia.blockstore.get(cid))).equals(await bytesOf(await node.blockstore.get(cid)))).toBe(true);
  // And its own pins over the same datastore (Cairn keeps its own index beside them: storage/pins.ts).
  for await (const _ of helia.pins.add(cid));
  expect(await helia.pins.isPinned(cid)).toBe(true);
  for await (const _ of helia.pins.rm(cid));
  expect(await helia.pins.isPinned(cid)).toBe(false);
});
