/**
 * Imports a file's bytes as Kubo would.
 */
import type { Blockstore } from 'interface-blockstore';
import type { CID } from 'multiformats/cid';
import { KUBO_CHUNK_SIZE, KUBO_MAX_CHILDREN } from './cid.js';
import { buildFileDag } from './file-dag.js';
import type { LeafHasher } from '../hashing/leaf-hasher.js';

export interface ImportedFile {
  cid: CID;
  /** The file's length in bytes (not the DAG size). */
  size: number;
  /** The DAG's size (the Tsize a directory's link to the file carries). */
  dagSize: number;
}

/**
 * Chunks, hashes and stores a file; returns its root CID, the one `ipfs add`
 * prints. `leaves` also computes digests over the file's bytes (file-dag.ts). Blocks stay unpinned until `pinRoot` (storage/pins.ts). Memory stays at a few blocks
 * whatever the file's size.
 */
export async function importFile(
  blockstore: Blockstore,
  content: AsyncIterable<Uint8Array>,
  options: { leaves?: LeafHasher } = {},
): Promise<ImportedFile> {
  return buildFileDag(blockstore, content, { chunkSize: KUBO_CHUNK_SIZE, maxChildren: KUBO_MAX_CHILDREN, leaves: options.leaves });
}
