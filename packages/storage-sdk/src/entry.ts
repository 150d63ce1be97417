/**
 * What both entry points export: createStorage, and the seven methods as
 * plain functions over a shared default storage (Fleek's call shape), so
 * `import * as fleekStorage from '@cairn/storage'` replaces Fleek's import.
 */
import type {
  BucketEntry,
  DeleteFileParams,
  DeleteFileResult,
  FileInfo,
  GetFileFromHashOption,
  GetFileFromHashParams,
  GetOption,
  GetParams,
  ListBucketsParams,
  ListFilesOption,
  ListFilesParams,
  Storage,
  StorageOptions,
  StreamUploadParams,
  UploadParams,
  UploadResult,
} from './types.js';

export interface StorageFunctions<Data extends Uint8Array> {
  get<O extends GetOption = 'data'>(params: GetParams<O>): Promise<Pick<FileInfo<Data>, O>>;
  upload(params: UploadParams): Promise<UploadResult>;
  streamUpload(params: StreamUploadParams): Promise<UploadResult>;
  deleteFile(params: DeleteFileParams): Promise<DeleteFileResult>;
  listFiles<O extends ListFilesOption = 'key' | 'bucket' | 'publicUrl'>(
    params: ListFilesParams<O>,
  ): Promise<Array<Pick<FileInfo<Data>, O>>>;
  listBuckets(params: ListBucketsParams): Promise<BucketEntry[]>;
  getFileFromHash<O extends GetFileFromHashOption = never>(params: GetFileFromHashParams<O>): Promise<[O] extends [never] ? string : Data>;
  /** Sets the default storage's options (endpoints, part size, ...) for the plain functions; before this they come from the environment. */
  configure(options: StorageOptions): void;
}

export function defaultFunctions<Data extends Uint8Array>(create: (options?: StorageOptions) => Storage<Data>): StorageFunctions<Data> {
  let current: Storage<Data> | undefined;
  // Created on first use, so environment variables set before the first call count.
  const shared = () => (current ??= create());
  return {
    get: (params) => shared().get(params),
    upload: (params) => shared().upload(params),
    streamUpload: (params) => shared().streamUpload(params),
    deleteFile: (params) => shared().deleteFile(params),
    listFiles: (params) => shared().listFiles(params),
    listBuckets: (params) => shared().listBuckets(params),
    getFileFromHash: (params) => shared().getFileFromHash(params),
    configure(options) {
      const next = create(options);
      current?.destroy();
      current = next;
    },
  };
}
