/**
 * The local blockstore's pack files (functions/core/ipfs/pack-store.ts):
 * large blocks are appended to packs and found through the index, across
 * restarts; emptied packs are removed and sparse ones compacted without
 * losing a live block or reviving a deleted one; what a crash leaves behind
 * (a torn record at a pack's end, a pack gone) is dropped at start.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { appendFile, mkdtemp, readdir, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { sha256 } from 'multiformats/hashes/sha2';
import { PackedBlockstore } from '../../functions/core/ipfs/local-blockstore.js';
import type { PackStore } from '../../functions/core/ipfs/pack-store.js';

const LEAF = 262144;
/** Three leaves fill a pack. */
const PACK_BYTES = 600_000;

let dir: string;
let store: PackedBlockstore;

async function openStore(): Promise<PackedBlockstore> {
  const opened = new PackedBlockstore({ smallBlocks: join(dir, 'small-blocks'), packs: join(dir, 'packs'), packBytes: PACK_BYTES });
  await opened.open();
  return opened;
}

async function block(size = LEAF): Promise<{ cid: CID; bytes: Uint8Array }> {
  const bytes = randomBytes(size);
  return { cid: CID.createV1(raw.code, await sha256.digest(bytes)), bytes };
}

const read_ = (cid: CID) => read(cid);
async function read(cid: CID, from = store): Promise<Buffer> {
  const pieces: Uint8Array[] = [];
  for await (const piece of from.get(cid)) pieces.push(piece);
  return Buffer.concat(pieces);
}

/** Puts `count` new blocks one after another (so each pack fills in order). */
async function putBlocks(count: number, size: (i: number) => number = () => LEAF): Promise<Array<{ cid: CID; bytes: Uint8Array }>> {
  const blocks: Array<{ cid: CID; bytes: Uint8Array }> = [];
  for (let i = 0; i < count; i++) {
    const b = await block(size(i));
    await store.put(b.cid, b.bytes);
    blocks.push(b);
  }
  return blocks;
}

const packFiles = async () => (await readdir(join(dir, 'packs'))).filter((f) => f.endsWith('.pack')).sort();
const packs = (): PackStore => store.packStore!;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-packs-'));
  store = await openStore();
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

test('large blocks are appended to packs (a new one once a pack is full), not files, and read back after a restart', async () => {
  const blocks = await putBlocks(10);
  expect(await packFiles()).toEqual(['00000001.pack', '00000002.pack', '00000003.pack', '00000004.pack']);
  expect((await readdir(dir)).sort()).toEqual(['packs', 'small-blocks']); // no file per block anywhere
  for (const b of blocks) expect((await read(b.cid)).equals(b.bytes)).toBe(true);

  await store.close();
  store = await openStore();
  for (const b of blocks) {
    expect(await store.has(b.cid)).toBe(true);
    expect((await read(b.cid)).equals(b.bytes)).toBe(true);
    expect(Buffer.from(await store.readPrefix(b.cid, 7)).equals(b.bytes.subarray(0, 7))).toBe(true);
  }
  // Listed by multihash, as blockstore-fs lists its files (the codec is not stored).
  const hex = (cid: CID) => Buffer.from(cid.multihash.bytes).toString('hex');
  const listed: string[] = [];
  for await (const { cid, bytes } of store.getAll()) {
    listed.push(hex(cid));
    const piece: Uint8Array[] = [];
    for await (const p of bytes) piece.push(p);
    expect(Buffer.concat(piece).equals(blocks.find((b) => hex(b.cid) === hex(cid))!.bytes)).toBe(true);
  }
  expect(listed.sort()).toEqual(blocks.map((b) => hex(b.cid)).sort());
  // Writes after the restart go to a pack of their own.
  const late = await block();
  await store.put(late.cid, late.bytes);
  expect(await packFiles()).toContain('00000005.pack');
});

test('two puts of one block at once write it once', async () => {
  const b = await block();
  await Promise.all([store.put(b.cid, b.bytes), store.put(b.cid, b.bytes), store.put(b.cid, Uint8Array.from(b.bytes))]);
  const sizes = [...packs().packSizes().values()];
  expect(sizes).toEqual([6 + 34 + LEAF]);
  expect((await read(b.cid)).equals(b.bytes)).toBe(true);
});

test('a pack whose blocks are all deleted is removed; one less than half full is compacted into the current pack', async () => {
  const blocks = await putBlocks(7);
  // Packs 1 and 2 hold three blocks each, pack 3 (being written) one.
  for (const b of blocks.slice(0, 3)) await store.delete(b.cid);
  await packs().settled();
  expect(await packFiles()).toEqual(['00000002.pack', '00000003.pack']);

  await store.delete(blocks[3]!.cid);
  await packs().settled();
  expect(await packFiles()).toEqual(['00000002.pack', '00000003.pack']); // two of three still live: left alone
  await store.delete(blocks[4]!.cid);
  await packs().settled();
  expect(await packFiles()).toEqual(['00000003.pack']); // its last live block moved to pack 3
  expect(packs().packSizes().get(3)).toBe(2 * (6 + 34 + LEAF));

  for (const b of blocks.slice(0, 5)) expect(await store.has(b.cid)).toBe(false);
  for (const b of blocks.slice(5)) expect((await read(b.cid)).equals(b.bytes)).toBe(true);
  await store.close();
  store = await openStore();
  for (const b of blocks.slice(5)) expect((await read(b.cid)).equals(b.bytes)).toBe(true);
  for (const b of blocks.slice(0, 5)) expect(await store.has(b.cid)).toBe(false);
});

test('deletes and reads racing compactions: every live block reads back its bytes, no deleted block comes back', async () => {
  const blocks = await putBlocks(30, (i) => LEAF / 2 + i); // over the small-block limit, so packed; about four to a pack
  const deleted = new Set<number>();
  const work: Promise<unknown>[] = [];
  // Delete two of every three, in an order that empties some packs and thins others, reading as it goes.
  for (let round = 0; round < 3; round++) {
    for (let i = round; i < blocks.length; i += 3) {
      if (i % 3 === 2) continue;
      deleted.add(i);
      work.push(store.delete(blocks[i]!.cid));
      const survivor = blocks[i + 2 - ((i + 2) % 3) + 2];
      if (survivor) work.push(read(survivor.cid).then((bytes) => expect(bytes.equals(survivor.bytes)).toBe(true)));
      if (i % 4 === 0) await new Promise((r) => setImmediate(r));
    }
  }
  await Promise.all(work);
  await packs().settled();
  const check = async () => {
    for (const [i, b] of blocks.entries()) {
      if (deleted.has(i)) expect(await store.has(b.cid)).toBe(false);
      else expect((await read(b.cid)).equals(b.bytes)).toBe(true);
    }
  };
  await check();
  // Only the pack being written may be less than half live: the rest were compacted or removed.
  expect((await packFiles()).length).toBeLessThanOrEqual(4);
  await store.close();
  store = await openStore();
  await packs().settled();
  await check();
});

test('a block deleted while a compaction copies it stays deleted', async () => {
  const [a, b, c, d] = [await block(), await block(), await block(LEAF + 5), await block()];
  for (const x of [a, b, c, d]) await store.put(x.cid, x.bytes);
  // Pack 1 holds a, b and c; pack 2 (being written) d. Delete c just as the compaction has read its bytes.
  const read = fs.read;
  let deleting: Promise<void> | undefined;
  (fs as { read: unknown }).read = function (this: unknown, ...args: unknown[]) {
    if (args[3] === c.bytes.length && !deleting) deleting = store.delete(c.cid);
    return (read as (...a: unknown[]) => void).apply(this, args);
  };
  try {
    await store.delete(a.cid);
    await store.delete(b.cid); // a third live: compacted
    await packs().settled();
  } finally {
    (fs as { read: unknown }).read = read;
  }
  expect(deleting).toBeDefined();
  await deleting;
  expect(await store.has(c.cid)).toBe(false);
  expect(await packFiles()).toEqual(['00000002.pack']);
  await store.close();
  store = await openStore();
  expect(await store.has(c.cid)).toBe(false);
  expect((await read_(d.cid)).equals(d.bytes)).toBe(true);
});

test('at start, a torn record at the end of a pack and index entries whose pack is gone are dropped', async () => {
  const blocks = await putBlocks(6);
  await store.close();
  // A crash mid-append: a record header and part of its block, never indexed.
  await appendFile(join(dir, 'packs', '00000002.pack'), Buffer.concat([Buffer.from([0xca, 34, 0, 4, 0, 0]), randomBytes(1000)]));
  // A pack lost by other means.
  await unlink(join(dir, 'packs', '00000001.pack'));
  store = await openStore();
  for (const b of blocks.slice(0, 3)) {
    expect(await store.has(b.cid)).toBe(false);
    await expect(read(b.cid)).rejects.toMatchObject({ name: 'NotFoundError' });
  }
  for (const b of blocks.slice(3)) expect((await read(b.cid)).equals(b.bytes)).toBe(true);
  // The torn pack is compacted like any other once it thins out: the walk stops at the torn record.
  await store.delete(blocks[3]!.cid);
  await store.delete(blocks[4]!.cid);
  await packs().settled();
  expect(await packFiles()).toEqual(['00000003.pack']);
  expect((await read(blocks[5]!.cid)).equals(blocks[5]!.bytes)).toBe(true);
});
