/**
 * The SDK's public types. Parameter and result names are the service
 * description's (section 4.3), which are also Fleek's storage SDK's.
 * `Data` is the byte type files come back as: Buffer in Node, Uint8Array elsewhere.
 */
import type { S3ClientConfig } from '@aws-sdk/client-s3';

export interface Credentials {
  /** The storage API key (the S3 access key id). */
  apiKey: string;
  /** The storage API secret (the S3 secret access key). */
  apiSecret: string;
}

/** With createStorage({ apiKey, apiSecret }) the credentials may be left out of each call. */
export type WithCredentials<T> = T & Partial<Credentials>;

export interface StorageOptions {
  /** S3-compatible endpoint. Default: env CAIRN_STORAGE_ENDPOINT, else http://127.0.0.1:4001. */
  endpoint?: string;
  /** Gateway serving /ipfs/<cid>. Default: env CAIRN_GATEWAY_URL, else http://127.0.0.1:4002. */
  gatewayUrl?: string;
  /** Public URLs are <gateway scheme>://<bucket>.<publicDomain>/<key>. Default: env CAIRN_STORAGE_PUBLIC_DOMAIN, else storage.localhost:4002. */
  publicDomain?: string;
  /**
   * Preferred multipart part size in bytes. Default 5 MiB, S3's least part size. An upload never uses parts larger than
   * the endpoint takes in one request (Cairn's says so in x-cairn-max-request-body: 4 MiB behind
   * AWS Lambda), and raises them for a file of known size that would need more than 10,000.
   */
  partSize?: number;
  /** Parts uploaded at once. Default 4. At most (concurrency + 1) parts are held in memory. */
  concurrency?: number;
  /** Default credentials for calls that leave them out. */
  apiKey?: string;
  apiSecret?: string;
  /** Region to sign for. Default us-east-1. */
  region?: string;
  /** fetch used for the gateway (getFileFromHash). Default: globalThis.fetch. */
  fetch?: typeof fetch;
  /** Extra S3Client settings (requestHandler, maxAttempts, logger, ...). Endpoint, region, path style and credentials are the SDK's. */
  clientConfig?: Omit<S3ClientConfig, 'endpoint' | 'region' | 'credentials' | 'forcePathStyle'>;
}

export interface ResolvedOptions {
  endpoint: string;
  gatewayUrl: string;
  publicDomain: string;
  partSize: number;
  concurrency: number;
  region: string;
}

export interface UploadProgress {
  /** Bytes sent so far. */
  loaded: number;
  /** The file's size; undefined while a stream of unknown length is still being read. */
  total: number | undefined;
}

export type ProgressCallback = (event: UploadProgress) => void;

export type Acl = 'public-read' | 'private';

/** Anything a file's bytes can come from. Streams (Node Readable, web ReadableStream, async iterables) are uploaded like streamUpload. */
export type UploadData =
  string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>;

/** A Node Readable, a web ReadableStream, or any async iterable of byte chunks. */
export type UploadStream = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>;

export interface FileInfo<Data = Uint8Array> {
  /** The file's bytes. */
  data: Data;
  bucket: string;
  key: string;
  /** CIDv1 (base32, bafy...). */
  hash: string;
  /** CIDv0 (Qm...), the same DAG. */
  hashV0: string;
  publicUrl: string;
}

export type GetOption = 'data' | 'bucket' | 'key' | 'hash' | 'hashV0' | 'publicUrl';
export type ListFilesOption = 'bucket' | 'key' | 'hash' | 'hashV0' | 'publicUrl';
export type GetFileFromHashOption = 'buffer';

export interface GetParams<O extends GetOption = GetOption> extends Credentials {
  key: string;
  /** Default: the account's default bucket (the first one ListBuckets returns). */
  bucket?: string;
  /** What to return. Default ['data']. `hashV0` is Cairn's addition. */
  getOptions?: readonly O[];
}

export interface UploadParams extends Credentials {
  key: string;
  bucket?: string;
  data: UploadData;
  /** MIME type stored with the file and served back. */
  ContentType?: string;
  httpUploadProgressCallback?: ProgressCallback;
  /** Default 'public-read', as Fleek's SDK uploads (files have public URLs). */
  ACL?: Acl;
}

export interface StreamUploadParams extends Credentials {
  key: string;
  bucket?: string;
  stream: UploadStream;
  ContentType?: string;
  httpUploadProgressCallback?: ProgressCallback;
  ACL?: Acl;
}

export interface UploadResult {
  hash: string;
  hashV0: string;
  publicUrl: string;
  key: string;
  bucket: string;
}

export interface DeleteFileParams extends Credentials {
  key: string;
  bucket?: string;
}

export interface DeleteFileResult {
  key: string;
  bucket: string;
}

export interface ListFilesParams<O extends ListFilesOption = ListFilesOption> extends Credentials {
  bucket?: string;
  /** Only keys that start with this. Default ''. */
  prefix?: string;
  /** What to return for each file. Default ['key', 'bucket', 'publicUrl']. */
  getOptions?: readonly O[];
}

export type ListBucketsParams = Credentials;

/** Fleek's SDK returns the names as objects with `name`; so does this one, so code written for it keeps working. */
export interface BucketEntry {
  name: string;
}

export interface GetFileFromHashParams<O extends GetFileFromHashOption = never> {
  hash: string;
  /** ['buffer'] returns the bytes; default [] returns the content as text (UTF-8). */
  getFileFromHashOptions?: readonly O[];
  /** Check the bytes against the CID before returning them. Default true. */
  verify?: boolean;
}

/** The seven methods. */
export interface Storage<Data extends Uint8Array = Uint8Array> {
  get<O extends GetOption = 'data'>(params: WithCredentials<Omit<GetParams<O>, keyof Credentials>>): Promise<Pick<FileInfo<Data>, O>>;
  upload(params: WithCredentials<Omit<UploadParams, keyof Credentials>>): Promise<UploadResult>;
  streamUpload(params: WithCredentials<Omit<StreamUploadParams, keyof Credentials>>): Promise<UploadResult>;
  deleteFile(params: WithCredentials<Omit<DeleteFileParams, keyof Credentials>>): Promise<DeleteFileResult>;
  listFiles<O extends ListFilesOption = 'key' | 'bucket' | 'publicUrl'>(
    params?: WithCredentials<Omit<ListFilesParams<O>, keyof Credentials>>,
  ): Promise<Array<Pick<FileInfo<Data>, O>>>;
  listBuckets(params?: Partial<Credentials>): Promise<BucketEntry[]>;
  getFileFromHash<O extends GetFileFromHashOption = never>(params: GetFileFromHashParams<O>): Promise<[O] extends [never] ? string : Data>;
  /** The settings in use, after defaults. */
  readonly options: Readonly<ResolvedOptions>;
  /** Closes the sockets of every client this storage made. */
  destroy(): void;
}
