/**
 * Imports a file's bytes as Kubo would.
 */
import { importer } from 'ipfs-unixfs-importer';
import type { CID } from 'multiformats/cid';
import type { Blockstore } from 'interface-blockstore';
import { kuboImportOptions } from './cid.js';

export interface ImportedFile {
  cid: CID;
  /** The file's length in bytes (not the DAG size). */
  size: number;
}

/** Chunks, hashes and stores a file; returns its root CID. Blocks stay unpinned until `pinRoot` (pins.ts). */
export async function importFile(blockstore: Blockstore, content: AsyncIterable<Uint8Array>): Promise<ImportedFile> {
  let size = 0;
  async function* counted() {
    for await (const chunk of content) {
      size += chunk.byteLength;
      yield chunk;
    }
  }
  let root: CID | undefined;
  for await (const entry of importer([{ content: counted() }], blockstore, kuboImportOptions())) {
    root = entry.cid;
  }
  if (!root) throw new Error('importer produced no root');
  return { cid: root, size };
}
