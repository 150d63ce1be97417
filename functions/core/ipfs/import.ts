/**
 * Imports a file's bytes as Kubo would, and the DAG walker pinning uses.
 */
import type { GraphNode, GraphWalkerFactory } from '@helia/interface';
import type { Blockstore } from 'interface-blockstore';
import { createUnsafe } from 'multiformats/block';
import type { CID } from 'multiformats/cid';
import { KUBO_CHUNK_SIZE, KUBO_MAX_CHILDREN } from './cid.js';
import { buildFileDag } from './file-dag.js';
import type { LeafHasher } from '../hashing/leaf-hasher.js';

export interface ImportedFile {
  cid: CID;
  /** The file's length in bytes (not the DAG size). */
  size: number;
}

/**
 * Chunks, hashes and stores a file; returns its root CID, the one `ipfs add`
 * prints. `leaves` also computes digests over the file's bytes (file-dag.ts). Blocks stay unpinned until `pinRoot` (pins.ts). Memory stays at a few blocks
 * whatever the file's size.
 */
export async function importFile(blockstore: Blockstore, content: AsyncIterable<Uint8Array>, options: { leaves?: LeafHasher } = {}): Promise<ImportedFile> {
  return buildFileDag(blockstore, content, { chunkSize: KUBO_CHUNK_SIZE, maxChildren: KUBO_MAX_CHILDREN, leaves: options.leaves });
}

/** Blocks the pin walker reads ahead of the pin loop, per level of the DAG. */
const PIN_READ_AHEAD = 4;

const DAG_PB = 0x70;
const RAW = 0x55;
const IDENTITY = 0x00;

/** A blockstore that can read the start of a block alone (the local FileBlockstore). */
export interface PrefixReader {
  readPrefix(cid: CID, length: number, options?: { signal?: AbortSignal }): Promise<Uint8Array>;
}

/**
 * The walker Helia's pins.add follows. Helia's default reads blocks on its
 * own schedule and queues them until the pin loop takes them, and the pin
 * loop is slower (it writes a datastore record per block), so pinning a
 * large file queued most of it in memory (+300 MiB for 1 GiB). This one goes
 * depth first and reads at most PIN_READ_AHEAD blocks ahead of the loop at
 * each level.
 *
 * The loop only needs each block's CID, and the walk only needs links. A
 * dag-pb block lists its links before its data (dag-pb's canonical order,
 * which decoders enforce), so a block that starts with the Data field (0x0a)
 * has none: with `prefixes`, such a leaf is checked by reading its first
 * byte instead of all 256 KiB. Raw and identity blocks have no links.
 */
export function pullDepthFirstWalker(prefixes?: PrefixReader): GraphWalkerFactory {
  return ({ blockstore, getCodec }) => ({
    async *walk<T>(root: CID, options: { depth?: number; signal?: AbortSignal; includeChild?(child: CID, parent: never): boolean } = {}) {
      const maxDepth = options.depth ?? Infinity;
      const signal = options.signal;
      /** The block's bytes, or undefined when it is known to have no links. */
      const load = async (cid: CID): Promise<Uint8Array | undefined> => {
        if (cid.multihash.code === IDENTITY) return undefined;
        if (prefixes && (cid.code === RAW || cid.code === DAG_PB)) {
          const head = await prefixes.readPrefix(cid, 1, { signal }); // also proves the block is here
          if (cid.code === RAW || head.length === 0 || head[0] === 0x0a) return undefined;
        }
        const pieces: Uint8Array[] = [];
        for await (const piece of blockstore.get(cid, { signal })) pieces.push(piece);
        return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
      };
      async function* visit(cid: CID, depth: number, path: CID[], loading: Promise<Uint8Array | undefined>): AsyncGenerator<GraphNode<T>> {
        const bytes = await loading;
        if (bytes === undefined) {
          yield { block: { cid }, depth, path } as unknown as GraphNode<T>;
          return;
        }
        const block = createUnsafe({ cid, bytes, codec: await getCodec(cid.code) });
        const children: CID[] = [];
        if (depth < maxDepth) {
          for (const [, child] of block.links()) if (options.includeChild?.(child, block as never) !== false) children.push(child);
        }
        yield { block, depth, path } as unknown as GraphNode<T>;
        const pending: Array<Promise<Uint8Array | undefined>> = [];
        let next = 0;
        for (const child of children) {
          while (next < children.length && pending.length < PIN_READ_AHEAD) {
            const read = load(children[next++]!);
            read.catch(() => {}); // awaited in order below
            pending.push(read);
          }
          yield* visit(child, depth + 1, [...path, child], pending.shift()!);
        }
      }
      yield* visit(root, 0, [root], load(root));
    },
  }) as ReturnType<GraphWalkerFactory>;
}
