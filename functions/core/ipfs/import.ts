/**
 * Imports a file's bytes as Kubo would and pins the result.
 */
import type { GraphNode, GraphWalkerFactory } from '@helia/interface';
import type { Blockstore } from 'interface-blockstore';
import { createUnsafe } from 'multiformats/block';
import type { CID } from 'multiformats/cid';
import { KUBO_CHUNK_SIZE, KUBO_MAX_CHILDREN } from './cid.js';
import { buildFileDag } from './file-dag.js';
import type { IpfsNode } from './node.js';

export interface ImportedFile {
  cid: CID;
  /** The file's length in bytes (not the DAG size). */
  size: number;
}

/**
 * Chunks, hashes and stores a file; returns its root CID, the one `ipfs add`
 * prints. Blocks are unpinned until `pinFile`. Memory stays at a few blocks
 * whatever the file's size.
 */
export async function importFile(blockstore: Blockstore, content: AsyncIterable<Uint8Array>): Promise<ImportedFile> {
  return buildFileDag(blockstore, content, { chunkSize: KUBO_CHUNK_SIZE, maxChildren: KUBO_MAX_CHILDREN });
}

/** Blocks the pin walker reads ahead of the pin loop, per level of the DAG. */
const PIN_READ_AHEAD = 4;

/**
 * Helia's default pin walker reads blocks on its own schedule and queues
 * them until the pin loop takes them, and the pin loop is slower (it writes a
 * datastore record per block), so pinning a large file queued most of it in
 * memory (+300 MiB for 1 GiB). This walker goes depth first and reads at most
 * PIN_READ_AHEAD blocks ahead of the loop at each level.
 */
export function pullDepthFirstWalker(): GraphWalkerFactory {
  return ({ blockstore, getCodec }) => ({
    async *walk<T>(root: CID, options: { depth?: number; signal?: AbortSignal; includeChild?(child: CID, parent: never): boolean } = {}) {
      const maxDepth = options.depth ?? Infinity;
      const load = async (cid: CID): Promise<Uint8Array> => {
        const pieces: Uint8Array[] = [];
        for await (const piece of blockstore.get(cid, { signal: options.signal })) pieces.push(piece);
        return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
      };
      async function* visit(cid: CID, depth: number, path: CID[], bytes: Promise<Uint8Array>): AsyncGenerator<GraphNode<T>> {
        const block = createUnsafe({ cid, bytes: await bytes, codec: await getCodec(cid.code) });
        const children: CID[] = [];
        if (depth < maxDepth) {
          for (const [, child] of block.links()) if (options.includeChild?.(child, block as never) !== false) children.push(child);
        }
        yield { block, depth, path } as unknown as GraphNode<T>;
        const pending: Array<Promise<Uint8Array>> = [];
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

export async function pinFile(node: IpfsNode, cid: CID, signal?: AbortSignal): Promise<void> {
  if (await node.helia.pins.isPinned(cid, { signal })) return;
  for await (const _ of node.helia.pins.add(cid, { signal, walker: pullDepthFirstWalker() })) {
    // pins.add is lazy: iterating it walks the DAG and records the pin
  }
}
