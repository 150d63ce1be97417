/**
 * The CID-import part of `npm run bench:s3` (loaded after the servers'
 * steps): Cairn's importer with Kubo's settings against plain SHA-256 of the
 * same bytes.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { MemoryBlockstore } from 'blockstore-core/memory';
import type { CID } from 'multiformats/cid';
import { PackedBlockstore } from '../functions/core/ipfs/local-blockstore.js';
import { importFile } from '../functions/core/ipfs/import.js';
import { createIpfsNode } from '../functions/core/ipfs/node.js';
import { loadConfig } from '../functions/core/config.js';
import { pinRoot } from '../functions/core/storage/pins.js';

/** Throws blocks away (and, like the file blockstore, lets their buffers be reused): the importer's own cost. */
class DiscardingBlockstore extends MemoryBlockstore {
  readonly releasesBytesOnPut = true;
  override put(key: CID): Promise<CID> {
    return Promise.resolve(key);
  }
}

/** CID import (Kubo's settings) of `bytes` in 64 KiB pieces, as an upload arrives, against SHA-256 of the same pieces. */
export async function cidImport(
  bytes: Buffer,
  tempDir: () => Promise<string>,
): Promise<{ sha256: number; hashing: number; memory: number; fs: number; stored: number; storedZeros: number }> {
  const pieces = function* () {
    for (let o = 0; o < bytes.length; o += 65536) yield bytes.subarray(o, o + 65536);
  };
  const rate = (ms: number) => bytes.length / 1e6 / (ms / 1000);
  const time = async (run: () => Promise<unknown>) => {
    const t = performance.now();
    await run();
    return performance.now() - t;
  };
  const source = () =>
    (async function* () {
      yield* pieces();
    })();
  const sha = () =>
    time(async () => {
      const h = createHash('sha256');
      for (const p of pieces()) h.update(p);
      h.digest();
    });
  const hashing = () => time(() => importFile(new DiscardingBlockstore(), source()));
  const mem = () => time(() => importFile(new MemoryBlockstore(), source()));
  const fsImport = async () => {
    // The local node's store: small blocks in LevelDB, the rest in packs.
    const dir = await tempDir();
    const store = new PackedBlockstore({ smallBlocks: join(dir, 'small-blocks'), packs: join(dir, 'packs') });
    await store.open();
    try {
      return await time(() => importFile(store, source()));
    } finally {
      await store.close();
    }
  };
  /** What an upload does with its bytes: import into the local node's store and pin the DAG (storage/pins.ts). */
  const importAndPin = async (content: Buffer) => {
    const dir = await tempDir();
    const node = await createIpfsNode(loadConfig({ CAIRN_DATA_DIR: dir }));
    try {
      const from = async function* () {
        for (let o = 0; o < content.length; o += 65536) yield content.subarray(o, o + 65536);
      };
      return await time(async () => {
        const { cid } = await importFile(node.blockstore, from());
        await pinRoot(node, cid);
      });
    } finally {
      await node.stop();
    }
  };
  // A file of zeros links one leaf block hundreds of times: it must store as fast as random bytes.
  const zeros = Buffer.alloc(bytes.length);
  // Warm up, then keep the best of three.
  await sha();
  await hashing();
  const bestOf = async (run: () => Promise<number>) => Math.min(await run(), await run(), await run());
  return {
    sha256: rate(await bestOf(sha)),
    hashing: rate(await bestOf(hashing)),
    memory: rate(await bestOf(mem)),
    fs: rate(await bestOf(fsImport)),
    stored: rate(await bestOf(() => importAndPin(bytes))),
    storedZeros: rate(await bestOf(() => importAndPin(zeros))),
  };
}
