/**
 * The embedded Helia node: locally blocks in files (small ones in LevelDB,
 * see local-blockstore.ts) and a LevelDB datastore (pin records, storage/pins.ts)
 * under the data directory, an S3 bucket in AWS (functions/aws/s3-ipfs-stores.ts). It runs without libp2p
 * networking (Helia "light"): it stores, pins and serves blocks; content is
 * reachable by CID through Cairn's gateway.
 *
 * Cairn's own paths use the node's stores directly (imports write blocks,
 * storage/pins.ts keeps the pin index, @helia/unixfs reads them), so the
 * Helia instance over the same stores is made when something first asks
 * for Helia's own API, not at start: `helia`'s entry point loads libp2p
 * with it (865 modules, where the rest of the service is about 500), which
 * every process, every Lambda cold start and every test suite paid for an
 * object nothing called.
 */
import { join, resolve } from 'node:path';
import type { Helia } from 'helia';
import type { Blockstore } from 'interface-blockstore';
import type { Datastore, Key } from 'interface-datastore';
import type { Config } from '../config.js';
import { groupCommits, type GroupCommitLevel } from '../group-commit.js';
import { LEVEL_MEMORY } from '../level-memory.js';

export interface IpfsNode {
  /** Helia over this node's stores, started on the first call (see above); stopped with the node. */
  helia(): Promise<Helia>;
  /** The raw blockstore: imports write here directly (Helia's own layer checks has() per put). */
  blockstore: Blockstore;
  /** Where Cairn's pin records live (storage/pins.ts), beside Helia's own. */
  datastore: Datastore;
  /** Resolves once every pin record written so far is on disk (see PinDatastore); absent where each write is durable when it resolves. */
  pinsWritten?(): Promise<void>;
  stop(): Promise<void>;
}

/** What Helia's stores throw for a missing key (it checks the name). Helia asks for absent records on every pin, so no stack is captured. */
export class PinNotFoundError extends Error {
  override name = 'NotFoundError';
  constructor(message: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}

/** What a node keeps its blocks and records in: the data directory here, a bucket in AWS (functions/aws/s3-ipfs-stores.ts). */
export interface IpfsStores {
  blockstore: Blockstore;
  datastore: Datastore;
  /** Resolves once every record written so far is durable (absent where each write is). */
  written?: () => Promise<void>;
  close?: () => Promise<void>;
}

/** The data directory's stores: blocks in LevelDB and pack files, pin records in LevelDB. */
async function localStores(config: Config): Promise<IpfsStores> {
  const { PackedBlockstore } = await import('./local-blockstore.js');
  const { LevelDatastore } = await import('datastore-level');
  // Pin records are small and written on every upload: a LevelDB write
  // costs microseconds where a file (temporary file, rename) costs a
  // directory update. Reads are synchronous LevelDB gets (a few
  // microseconds, where the asynchronous get hands off to the thread pool).
  //
  // Writes do not wait for the disk: Helia pins a DAG one block at a time,
  // awaiting each block's record, and a group-committed write resolves only
  // when its batch is written (a thread-pool round trip, about 0.2 s per
  // 1024-block file). Here put() and delete() resolve at once (reads see
  // the write already, see groupCommits) and the records go to disk in
  // batches; whoever needs them durable (pinRoot before the object is
  // committed, garbage collection before it deletes blocks) awaits written().
  class PinDatastore extends LevelDatastore {
    private readonly unwritten = new Set<Promise<void>>();
    private failure: unknown;

    private track(write: Promise<void>): void {
      this.unwritten.add(write);
      write.then(
        () => this.unwritten.delete(write),
        (err: unknown) => {
          this.unwritten.delete(write);
          this.failure ??= err;
        },
      );
    }

    /** Resolves once every write asked for so far is on disk; rejects if one failed (and forgets the failure). */
    async written(): Promise<void> {
      await Promise.allSettled([...this.unwritten]);
      const failure = this.failure;
      this.failure = undefined;
      if (failure !== undefined) throw failure;
    }

    override async put(key: Key, value: Uint8Array, options?: { signal?: AbortSignal }): Promise<Key> {
      options?.signal?.throwIfAborted();
      this.track(this.db.put(key.toString(), value));
      return key;
    }
    override async delete(key: Key, options?: { signal?: AbortSignal }): Promise<void> {
      options?.signal?.throwIfAborted();
      this.track(this.db.del(key.toString()));
    }

    override async get(key: Key, options?: { signal?: AbortSignal }): Promise<Uint8Array> {
      options?.signal?.throwIfAborted();
      const data = this.db.getSync(key.toString());
      if (data == null) throw new PinNotFoundError(`no record ${key}`);
      return data;
    }
    override async has(key: Key, options?: { signal?: AbortSignal }): Promise<boolean> {
      options?.signal?.throwIfAborted();
      return this.db.getSync(key.toString()) != null;
    }
  }
  const datastore = new PinDatastore(join(config.dataDir, 'ipfs', 'pins'), LEVEL_MEMORY);
  await datastore.open();
  groupCommits(datastore.db as unknown as GroupCommitLevel);
  const blockstore = new PackedBlockstore({
    smallBlocks: join(config.dataDir, 'ipfs', 'small-blocks'),
    packs: join(config.dataDir, 'ipfs', 'packs'),
  });
  try {
    await blockstore.open();
  } catch (err) {
    await datastore.close();
    throw err;
  }
  return {
    blockstore,
    datastore,
    written: () => datastore.written(),
    close: async () => {
      await datastore.written().catch(() => {});
      await blockstore.close();
      await datastore.close();
    },
  };
}

/** A node on `stores`; stopping it stops its Helia, if one was asked for, and closes them. */
export async function openIpfsNode(stores: IpfsStores): Promise<IpfsNode> {
  const { blockstore, datastore, written, close } = stores;
  let helia: Promise<Helia> | undefined;
  const startHelia = async (): Promise<Helia> => {
    const { createHeliaLight } = await import('helia');
    const started = createHeliaLight({ blockstore, datastore });
    await started.start();
    return started;
  };
  return {
    helia: () => {
      helia ??= startHelia();
      // A start that failed is tried again by the next caller.
      helia.catch(() => (helia = undefined));
      return helia;
    },
    blockstore,
    datastore,
    pinsWritten: written,
    stop: async () => {
      const started = await helia?.catch(() => undefined);
      await started?.stop();
      await close?.();
    },
  };
}

/** Local nodes by data directory: LevelDB admits one opener, so services in one process share the node. */
const local = new Map<string, { node: Promise<IpfsNode>; users: number }>();

/** The node on the data directory's stores, shared by every caller in this process until the last one stops it. */
export async function createIpfsNode(config: Config): Promise<IpfsNode> {
  const dir = resolve(config.dataDir);
  let entry = local.get(dir);
  if (!entry) {
    const opening = { node: localStores(config).then(openIpfsNode), users: 0 };
    opening.node.catch(() => local.delete(dir));
    local.set(dir, (entry = opening));
  }
  entry.users++;
  const owner = entry;
  let node: IpfsNode;
  try {
    node = await owner.node;
  } catch (err) {
    owner.users--;
    throw err;
  }
  let stopped = false;
  return {
    helia: () => node.helia(),
    blockstore: node.blockstore,
    datastore: node.datastore,
    pinsWritten: node.pinsWritten,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      if (--owner.users > 0) return;
      local.delete(dir);
      await node.stop();
    },
  };
}
