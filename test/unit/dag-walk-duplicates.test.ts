/**
 * walkDag with `duplicates` (a CAR with dups=y): every block as often as a
 * link leads to it, depth first, and `onRepeat` told of each repeat before
 * it is visited, so a caller bounds a walk that repeats exponentially.
 */
import * as dagPb from '@ipld/dag-pb';
import { MemoryBlockstore } from 'blockstore-core/memory';
import { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { sha256 } from 'multiformats/hashes/sha2';
import { walkDag } from '../../functions/core/storage/dag-walk.js';

async function put(store: MemoryBlockstore, code: number, bytes: Uint8Array): Promise<CID> {
  const cid = CID.createV1(code, await sha256.digest(bytes));
  await store.put(cid, bytes);
  return cid;
}

/** A leaf, a node linking it three times, and a root linking that node three times: 1 + 3 + 9 visits with duplicates. */
async function diamond(store: MemoryBlockstore) {
  const leaf = await put(store, raw.code, new Uint8Array([1, 2, 3]));
  const links = (cid: CID) => [0, 1, 2].map((i) => ({ Hash: cid, Name: `l${i}`, Tsize: 3 }));
  const mid = await put(store, dagPb.code, dagPb.encode(dagPb.prepare({ Links: links(leaf) })));
  const root = await put(store, dagPb.code, dagPb.encode(dagPb.prepare({ Links: links(mid) })));
  return { leaf, mid, root };
}

async function all(walk: AsyncIterable<CID>): Promise<string[]> {
  const out: string[] = [];
  for await (const cid of walk) out.push(cid.toString());
  return out;
}

test('without duplicates each block comes once; with them, each time a link leads to it, depth first', async () => {
  const store = new MemoryBlockstore();
  const { leaf, mid, root } = await diamond(store);
  const [r, m, l] = [root, mid, leaf].map(String) as [string, string, string];
  expect(await all(walkDag(store, root))).toEqual([r, m, l]);
  const repeats: string[] = [];
  const walked = await all(walkDag(store, root, { duplicates: true, onRepeat: (cid) => repeats.push(cid.toString()) }));
  expect(walked).toEqual([r, m, l, l, l, m, l, l, l, m, l, l, l]);
  // Told of every block visited again: 2 mids, and every leaf but the first.
  expect(repeats).toHaveLength(walked.length - 3);
});

test('onRepeat bounds the walk: what it throws ends the walk', async () => {
  const store = new MemoryBlockstore();
  const { root } = await diamond(store);
  let n = 0;
  const walk = walkDag(store, root, {
    duplicates: true,
    onRepeat: () => {
      if (++n > 4) throw new Error('too many repeats');
    },
  });
  const seen: CID[] = [];
  await expect(
    (async () => {
      for await (const cid of walk) seen.push(cid);
    })(),
  ).rejects.toThrow('too many repeats');
  expect(seen.length).toBeLessThan(13);
});
