/**
 * @cairn/storage for Node: the same API, files returned as Buffers, and
 * upload progress counted as the request body is handed to the socket.
 */
import { Readable } from 'node:stream';
import type { Buffer } from 'node:buffer';
import { createCoreStorage } from './storage.js';
import { defaultFunctions } from './entry.js';
import { stackOf, type Platform } from './client.js';
import type { Storage, StorageOptions } from './types.js';

export { CairnStorageError, type CairnStorageErrorCode } from './errors.js';
export { DEFAULTS, ENV } from './options.js';
export type * from './types.js';
export type { StorageFunctions } from './entry.js';

/** Slices the body is fed to the socket in: progress events come at most this far apart. */
const SLICE = 64 * 1024;

function countingBody(bytes: Uint8Array, onSent: (n: number) => void): Readable {
  let offset = 0;
  return new Readable({
    highWaterMark: SLICE,
    read() {
      if (offset >= bytes.byteLength) {
        this.push(null);
        return;
      }
      const end = Math.min(offset + SLICE, bytes.byteLength);
      const slice = bytes.subarray(offset, end);
      offset = end;
      this.push(slice);
      onSent(offset);
    },
  });
}

const nodePlatform: Platform = {
  trackBody(command, onSent) {
    stackOf(command).add(
      (next) => async (args) => {
        // Innermost, once per attempt and after signing: the signed bytes go out as a counted stream.
        const request = args.request as { body?: unknown };
        const body = request.body;
        if (body instanceof Uint8Array && body.byteLength > 0) {
          onSent(0);
          request.body = countingBody(body, onSent);
        }
        return next(args);
      },
      { step: 'deserialize', priority: 'low', name: 'cairnUploadProgress' },
    );
  },
};

export function createStorage(options?: StorageOptions): Storage<Buffer> {
  return createCoreStorage<Buffer>(options, nodePlatform);
}

const functions = defaultFunctions(createStorage);
export const { get, upload, streamUpload, deleteFile, listFiles, listBuckets, getFileFromHash, configure } = functions;
export default functions;
