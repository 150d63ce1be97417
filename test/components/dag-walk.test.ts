/**
 * Cairn's DAG walk (functions/core/storage/dag-walk.ts) on the real local
 * blockstore: its contract (each block once, parents before children,
 * missing and undecodable blocks named or skipped), its linear work on
 * chains and lattices of any depth (counted in reads, not timed), the
 * limits a DAG someone sent is held to, and the event loop kept turning
 * while it walks blocks that are read without waiting.
 */
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encode as encodeDagPb, prepare } from '@ipld/dag-pb';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { PackedBlockstore } from '../../functions/core/ipfs/local-blockstore.js';
import { leastCpuMs, leastStalled } from '../support/event-loop.js';
import {
  CorruptBlockError,
  DAG_LIMITS,
  DagLimitError,
  MissingBlockError,
  walkDag,
  type WalkLimits,
  type WalkOptions,
} from '../../functions/core/storage/dag-walk.js';

let work: string;
let blockstore: PackedBlockstore;

beforeAll(async () => {
  work = await realpath(await mkdtemp(join(tmpdir(), 'cairn-dag-walk-')));
  blockstore = new PackedBlockstore({ smallBlocks: join(work, 'small'), packs: join(work, 'packs') });
  await blockstore.open();
});

afterAll(async () => {
  await blockstore.close();
  await rm(work, { recursive: true, force: true });
});

let made = 0;

/** A raw leaf with content of its own, stored. */
async function leaf(): Promise<CID> {
  const bytes = new TextEncoder().encode(`leaf ${++made} ${Math.random()}`);
  const cid = CID.createV1(0x55, await sha256.digest(bytes));
  await blockstore.put(cid, bytes);
  return cid;
}

/** A dag-pb node linking `children` in order (with data of its own, so that no two nodes are one block), stored unless `store` is false. */
async function node(children: CID[], store = true): Promise<CID> {
  const bytes = encodeDagPb(
    prepare({ Data: new TextEncoder().encode(`node ${++made}`), Links: children.map((Hash, i) => ({ Hash, Name: `${i}`, Tsize: 1 })) }),
  );
  const cid = CID.createV1(0x70, await sha256.digest(bytes));
  if (store) await blockstore.put(cid, bytes);
  return cid;
}

/** A chain of `blocks` blocks (`blocks - 1` levels deep): its root first, its leaf last. */
async function chain(blocks: number): Promise<CID[]> {
  const cids = [await leaf()];
  while (cids.length < blocks) cids.push(await node([cids[cids.length - 1]!]));
  return cids.reverse();
}

async function walked(root: CID, options: WalkOptions = {}): Promise<{ order: string[]; reads: number }> {
  let reads = 0;
  const order: string[] = [];
  for await (const cid of walkDag(blockstore, root, { ...options, onRead: () => reads++ })) order.push(cid.toString());
  return { order, reads };
}

test('each block once, parents before children, depth first in link order, however often a block is linked', async () => {
  // A block is taken by the first block to link it in that order: x by the root, ahead of a's subtree and b's.
  const [x, y, z] = [await leaf(), await leaf(), await leaf()];
  const shared = await node([z]);
  const a = await node([x, shared, x]);
  const b = await node([shared, y, a]);
  const root = await node([a, b, x]);
  const { order, reads } = await walked(root);
  expect(order).toEqual([root, a, shared, z, b, y, x].map(String));
  expect(reads).toBe(order.length);
});

test('a missing block fails the walk naming it, or is skipped and told of; an undecodable one is yielded without links', async () => {
  const kept = await leaf();
  const absent = await node([await leaf()], false);
  const root = await node([kept, absent]);
  await expect(walked(root)).rejects.toThrow(new MissingBlockError(absent, root));
  const damage: string[] = [];
  const skipped = await walked(root, { missing: 'skip', onDamage: (cid, what) => damage.push(`${what} ${cid}`) });
  expect(skipped.order).toEqual([root, kept].map(String));
  expect(damage).toEqual([`missing ${absent}`]);

  const garbage = Uint8Array.of(0x12, 0xff, 0xff);
  const broken = CID.createV1(0x70, await sha256.digest(garbage));
  await blockstore.put(broken, garbage);
  const above = await node([broken]);
  await expect(walked(above)).rejects.toBeInstanceOf(CorruptBlockError);
  const told: string[] = [];
  expect((await walked(above, { missing: 'skip', onDamage: (cid, what) => told.push(`${what} ${cid}`) })).order).toEqual(
    [above, broken].map(String),
  );
  expect(told).toEqual([`undecodable ${broken}`]);
});

test('a chain 10,000 blocks deep is walked whole, each block read once, root to leaf', async () => {
  const cids = await chain(10_000);
  const { order, reads } = await walked(cids[0]!);
  expect(order).toEqual(cids.map(String));
  expect(reads).toBe(10_000);
});

test('a lattice of 2^40 paths is 81 blocks and 81 reads: work follows blocks and links, not paths', async () => {
  // Each level's two nodes both link both nodes of the level below.
  let below = [await leaf(), await leaf()];
  const blocks = new Set(below.map(String));
  for (let level = 0; level < 39; level++) {
    below = [await node(below), await node([below[1]!, below[0]!])];
    for (const cid of below) blocks.add(cid.toString());
  }
  const root = await node(below);
  blocks.add(root.toString());
  const { order, reads } = await walked(root);
  expect(order.length).toBe(81);
  expect(new Set(order)).toEqual(blocks);
  expect(reads).toBe(81);
});

test('with the limits, a DAG deeper, larger or more linked than they allow stops with DagLimitError', async () => {
  // DAG_LIMITS' depth: 4,096 levels below the root pass, 4,097 do not.
  const deepest = await chain(DAG_LIMITS.maxDepth + 1);
  expect((await walked(deepest[0]!, { limits: DAG_LIMITS })).reads).toBe(DAG_LIMITS.maxDepth + 1);
  const tooDeep = await node([deepest[0]!]);
  const deep = walked(tooDeep, { limits: DAG_LIMITS });
  await expect(deep).rejects.toThrow(new DagLimitError(tooDeep, 'maxDepth', DAG_LIMITS.maxDepth));
  await expect(deep).rejects.toThrow(`the DAG of ${tooDeep} is deeper than 4096 levels`);

  const small: WalkLimits = { maxDepth: 10, maxBlocks: 5, maxLinks: 8 };
  const four = await Promise.all([leaf(), leaf(), leaf(), leaf()]);
  expect((await walked(await node(four), { limits: small })).order).toHaveLength(5);
  const five = await node([...four, await leaf()]);
  await expect(walked(five, { limits: small })).rejects.toThrow(new DagLimitError(five, 'maxBlocks', 5));
  // One leaf linked nine times is two blocks, but nine links.
  const one = await leaf();
  const repeated = await node(Array.from({ length: 9 }, () => one));
  await expect(walked(repeated, { limits: small })).rejects.toThrow(`the DAG of ${repeated} has more than 8 links`);
  expect((await walked(repeated)).order).toEqual([repeated, one].map(String));
});

test('walking 20,000 blocks read without waiting never holds the event loop for 50 ms', async () => {
  const wide: CID[] = [];
  for (let i = 0; i < 20; i++) wide.push(await node(await Promise.all(Array.from({ length: 1000 }, leaf))));
  const root = await node(wide);
  const runs = await leastStalled(
    () => root,
    async (from) => {
      let count = 0;
      for await (const _ of walkDag(blockstore, from)) count++;
      return count;
    },
  );
  for (const run of runs) {
    expect(run.result).toBe(20_021);
    expect(run.turns).toBeGreaterThan(10);
  }
  // Work, not waiting for a CPU on a busy machine: see stallsDuring. (Walked in one go, as before, it was one gap of over a second.)
  expect(leastCpuMs(runs)).toBeLessThan(50);
});
