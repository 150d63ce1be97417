/** Reads a file's bytes (or a range of them) back out of the blockstore. */
import { exporter } from 'ipfs-unixfs-exporter';
import type { Blockstore } from 'interface-blockstore';
import type { CID } from 'multiformats/cid';

export interface FileEntry {
  /** File length in bytes. */
  size: number;
  /** A lazy stream of `[offset, offset+length)`. */
  stream(range?: { offset: number; length: number }): ReadableStream<Uint8Array>;
}

export class NotAFileError extends Error {
  override name = 'NotAFileError';
}

/** Resolves a CID to a file; throws NotFoundError-like errors when blocks are missing. */
export async function openFile(blockstore: Blockstore, cid: CID, signal?: AbortSignal): Promise<FileEntry> {
  const entry = await exporter(cid, blockstore, { signal });
  if (entry.type !== 'file' && entry.type !== 'raw' && entry.type !== 'identity') throw new NotAFileError(`${cid} is a ${entry.type}`);
  const size = Number(entry.size);
  return {
    size,
    stream(range) {
      let iterator: AsyncIterator<Uint8Array> | undefined;
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          iterator ??= entry.content({ ...(range ?? {}), signal })[Symbol.asyncIterator]();
          try {
            const next = await iterator.next();
            if (next.done) controller.close();
            else controller.enqueue(next.value);
          } catch (err) {
            controller.error(err);
          }
        },
        async cancel() {
          await iterator?.return?.();
        },
      });
    },
  };
}

/** True for the errors a blockstore throws for a block it does not hold. */
export function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; code?: string };
  return e?.name === 'NotFoundError' || e?.code === 'ERR_NOT_FOUND';
}
