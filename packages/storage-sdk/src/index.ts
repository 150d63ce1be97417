/**
 * @cairn/storage for browsers and bundlers (no Node-only imports). Node gets
 * node.ts, which adds byte-level upload progress and Buffers.
 */
import { createCoreStorage } from './storage.js';
import { defaultFunctions } from './entry.js';
import type { Storage, StorageOptions } from './types.js';

export { CairnStorageError, type CairnStorageErrorCode } from './errors.js';
export { DEFAULTS, ENV } from './options.js';
export type * from './types.js';
export type { StorageFunctions } from './entry.js';

export function createStorage(options?: StorageOptions): Storage<Uint8Array> {
  return createCoreStorage<Uint8Array>(options);
}

const functions = defaultFunctions(createStorage);
export const { get, upload, streamUpload, deleteFile, listFiles, listBuckets, getFileFromHash, configure } = functions;
export default functions;
