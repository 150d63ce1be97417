/**
 * The seven methods of the service description (section 4.3) over one
 * configuration: one S3 client per credential pair, reused, each resolving
 * the account's default bucket once.
 */
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListBucketsCommand, type S3Client } from '@aws-sdk/client-s3';
import { CID } from 'multiformats/cid';
import pLimit from 'p-limit';
import { createS3Client, HASH_HEADER, HASH_V0_HEADER, headersOf, listPage, type Platform } from './client.js';
import { CairnStorageError, invalidArgument, toStorageError } from './errors.js';
import { isUploadStream, outputBytes, prepareData } from './bytes.js';
import { choosePartSize, endpointLimit, limitSeen } from './limits.js';
import { resolveOptions } from './options.js';
import { uploadBytes, uploadStream, type PutTarget } from './uploads.js';
import { verifyBytes } from './verify.js';
import type {
  Acl,
  BucketEntry,
  Credentials,
  FileInfo,
  GetFileFromHashOption,
  GetOption,
  ListFilesOption,
  Storage,
  StorageOptions,
} from './types.js';

const GET_OPTIONS: readonly GetOption[] = ['data', 'bucket', 'key', 'hash', 'hashV0', 'publicUrl'];
const LIST_OPTIONS: readonly ListFilesOption[] = ['bucket', 'key', 'hash', 'hashV0', 'publicUrl'];
const HASH_OPTIONS: readonly GetFileFromHashOption[] = ['buffer'];
/** Clients kept per storage; the least recently used goes first. */
const MAX_CLIENTS = 64;
/** HEADs at once when a server cannot list hashes. */
const HEAD_CONCURRENCY = 8;

interface ClientEntry {
  s3: S3Client;
  defaultBucket?: Promise<string>;
}

function requireString(params: Record<string, unknown>, name: string): string {
  const value = params[name];
  if (value === undefined || value === null || value === '') throw invalidArgument(`${name} is required`);
  if (typeof value !== 'string') throw invalidArgument(`${name} must be a string, got ${typeof value}`);
  return value;
}

function optionalString(params: Record<string, unknown>, name: string): string | undefined {
  const value = params[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '') throw invalidArgument(`${name} must be a non-empty string when given`);
  return value;
}

function checkKey(params: Record<string, unknown>): string {
  const key = requireString(params, 'key');
  if (new TextEncoder().encode(key).byteLength > 1024) throw invalidArgument('key must be at most 1024 bytes (UTF-8)');
  return key;
}

function checkOptions<T extends string>(
  name: string,
  given: unknown,
  allowed: readonly T[],
  fallback: readonly T[],
  allowEmpty = false,
): T[] {
  if (given === undefined || given === null) return [...fallback];
  if (!Array.isArray(given)) throw invalidArgument(`${name} must be an array of ${allowed.map((a) => `'${a}'`).join(', ')}`);
  for (const item of given) {
    if (!allowed.includes(item as T))
      throw invalidArgument(`${name}: "${String(item)}" is not one of ${allowed.map((a) => `'${a}'`).join(', ')}`);
  }
  if (!allowEmpty && given.length === 0) throw invalidArgument(`${name} must not be empty`);
  return [...new Set(given as T[])];
}

function checkAcl(params: Record<string, unknown>): Acl {
  const acl = params.ACL ?? 'public-read';
  if (acl !== 'public-read' && acl !== 'private') throw invalidArgument(`ACL must be 'public-read' or 'private', got "${String(acl)}"`);
  return acl;
}

function checkCallback(params: Record<string, unknown>): ((e: { loaded: number; total: number | undefined }) => void) | undefined {
  const cb = params.httpUploadProgressCallback;
  if (cb === undefined || cb === null) return undefined;
  if (typeof cb !== 'function') throw invalidArgument('httpUploadProgressCallback must be a function');
  return cb as (e: { loaded: number; total: number | undefined }) => void;
}

function params(p: unknown, method: string): Record<string, unknown> {
  if (p === undefined) return {};
  if (typeof p !== 'object' || p === null || Array.isArray(p)) throw invalidArgument(`${method} takes one object of named parameters`);
  return p as Record<string, unknown>;
}

/** Runs `fn` over items with at most `limit` at once, keeping order. */
function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const run = pLimit(limit);
  return Promise.all(items.map((item) => run(() => fn(item))));
}

export function createCoreStorage<Data extends Uint8Array = Uint8Array>(
  storageOptions: StorageOptions = {},
  platform: Platform = {},
): Storage<Data> {
  const options = Object.freeze(resolveOptions(storageOptions));
  const clients = new Map<string, ClientEntry>();
  const scheme = new URL(options.gatewayUrl).protocol;

  function client(p: Record<string, unknown>): ClientEntry {
    const creds: Credentials = {
      apiKey: (p.apiKey ?? storageOptions.apiKey) as string,
      apiSecret: (p.apiSecret ?? storageOptions.apiSecret) as string,
    };
    requireString(creds as unknown as Record<string, unknown>, 'apiKey');
    requireString(creds as unknown as Record<string, unknown>, 'apiSecret');
    const id = `${creds.apiKey}\n${creds.apiSecret}`;
    let entry = clients.get(id);
    if (entry) {
      clients.delete(id);
    } else {
      entry = { s3: createS3Client(options, creds, storageOptions.clientConfig) };
      if (clients.size >= MAX_CLIENTS) {
        const oldest = clients.keys().next().value!;
        clients.delete(oldest);
      }
    }
    clients.set(id, entry);
    return entry;
  }

  /** The bucket a call names, or the account's default: the first bucket ListBuckets answers, asked once per client. */
  function bucketOf(entry: ClientEntry, p: Record<string, unknown>): Promise<string> {
    const named = optionalString(p, 'bucket');
    if (named) return Promise.resolve(named);
    entry.defaultBucket ??= (async () => {
      let out;
      try {
        out = await entry.s3.send(new ListBucketsCommand({}));
      } catch (err) {
        throw toStorageError(err, 'finding the default bucket (ListBuckets)');
      }
      const first = out.Buckets?.[0]?.Name;
      if (!first)
        throw new CairnStorageError('the account has no bucket: create one or pass bucket', { code: 'NoDefaultBucket', status: 404 });
      return first;
    })();
    const pending = entry.defaultBucket;
    // A failure is not remembered: the next call asks again.
    pending.catch(() => {
      if (entry.defaultBucket === pending) entry.defaultBucket = undefined;
    });
    return pending;
  }

  /** The endpoint's body limit as last seen by any of this storage's clients. */
  let knownLimit: number | undefined;

  /** The part size for one upload to `bucket`: options.partSize within what the endpoint takes per request (limits.ts). */
  async function partSizeFor(entry: ClientEntry, bucket: string, total: number | undefined, key: string): Promise<number> {
    const limit = limitSeen(entry.s3) ?? knownLimit ?? (await endpointLimit(entry.s3, bucket));
    if (limit !== undefined) knownLimit = limit;
    return choosePartSize(options.partSize, limit, total, `upload of "${key}"`);
  }

  function publicUrl(bucket: string, key: string): string {
    return `${scheme}//${bucket}.${options.publicDomain}/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  function target(entry: ClientEntry, p: Record<string, unknown>, bucket: string, key: string): PutTarget {
    const ContentType = optionalString(p, 'ContentType');
    return {
      s3: entry.s3,
      platform,
      bucket,
      key,
      ContentType,
      ACL: checkAcl(p),
      partSize: options.partSize,
      concurrency: options.concurrency,
      onProgress: checkCallback(p),
    };
  }

  const storage: Storage<Data> = {
    options,

    async get(input) {
      const p = params(input, 'get');
      const entry = client(p);
      const getOptions = checkOptions('getOptions', p.getOptions, GET_OPTIONS, ['data']);
      const key = checkKey(p);
      const bucket = await bucketOf(entry, p);
      const operation = `get of "${key}" in "${bucket}"`;
      const file: Partial<FileInfo<Data>> = { key, bucket };
      if (getOptions.includes('publicUrl')) file.publicUrl = publicUrl(bucket, key);
      const wantsHash = getOptions.includes('hash') || getOptions.includes('hashV0');
      let headers: Record<string, string | undefined> | undefined;
      if (getOptions.includes('data')) {
        try {
          const out = await entry.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
          headers = headersOf(out);
          const bytes = out.Body ? await out.Body.transformToByteArray() : new Uint8Array(0);
          file.data = outputBytes<Data>(bytes);
        } catch (err) {
          throw toStorageError(err, operation);
        }
      } else if (wantsHash) {
        try {
          headers = headersOf(await entry.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })));
        } catch (err) {
          throw toStorageError(err, operation);
        }
      }
      if (wantsHash) {
        const hash = headers?.[HASH_HEADER];
        if (!hash)
          throw new CairnStorageError(`${operation}: the server answered no ${HASH_HEADER} header`, { code: 'MissingHash', status: 200 });
        file.hash = hash;
        file.hashV0 = headers?.[HASH_V0_HEADER] ?? CID.parse(hash).toV0().toString();
      }
      const result: Record<string, unknown> = {};
      for (const o of getOptions) result[o] = file[o];
      return result as never;
    },

    async upload(input) {
      const p = params(input, 'upload');
      const entry = client(p);
      const key = checkKey(p);
      if (p.data === undefined || p.data === null) throw invalidArgument('data is required');
      const data = prepareData(p.data as never);
      const t = target(entry, p, '', key);
      t.bucket = await bucketOf(entry, p);
      t.partSize = await partSizeFor(entry, t.bucket, data.kind === 'bytes' ? data.bytes.byteLength : data.total, key);
      const hashes = data.kind === 'bytes' ? await uploadBytes(t, data.bytes) : await uploadStream(t, data.stream, data.total);
      return { ...hashes, publicUrl: publicUrl(t.bucket, key), key, bucket: t.bucket };
    },

    async streamUpload(input) {
      const p = params(input, 'streamUpload');
      const entry = client(p);
      const key = checkKey(p);
      if (p.stream === undefined || p.stream === null) throw invalidArgument('stream is required');
      if (!isUploadStream(p.stream))
        throw invalidArgument('stream must be a Node Readable, a web ReadableStream or an async iterable of bytes');
      const t = target(entry, p, '', key);
      t.bucket = await bucketOf(entry, p);
      t.partSize = await partSizeFor(entry, t.bucket, undefined, key);
      const hashes = await uploadStream(t, p.stream);
      return { ...hashes, publicUrl: publicUrl(t.bucket, key), key, bucket: t.bucket };
    },

    async deleteFile(input) {
      const p = params(input, 'deleteFile');
      const entry = client(p);
      const key = checkKey(p);
      const bucket = await bucketOf(entry, p);
      try {
        await entry.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
      } catch (err) {
        const e = toStorageError(err, `deleteFile of "${key}" in "${bucket}"`);
        // Deleting what is not there is a success (S3 says so too; this covers servers that answer 404).
        if (e.code !== 'NoSuchKey') throw e;
      }
      return { key, bucket };
    },

    async listFiles(input) {
      const p = params(input, 'listFiles');
      const entry = client(p);
      const getOptions = checkOptions('getOptions', p.getOptions, LIST_OPTIONS, ['key', 'bucket', 'publicUrl']);
      const prefix = p.prefix === undefined || p.prefix === null ? '' : p.prefix;
      if (typeof prefix !== 'string') throw invalidArgument('prefix must be a string');
      const bucket = await bucketOf(entry, p);
      const wantsHash = getOptions.includes('hash') || getOptions.includes('hashV0');
      const files: Array<{ key: string; hash?: string; hashV0?: string }> = [];
      const missing: number[] = [];
      let token: string | undefined;
      try {
        do {
          const page = await listPage(entry.s3, { Bucket: bucket, Prefix: prefix || undefined, ContinuationToken: token }, wantsHash);
          const contents = page.output.Contents ?? [];
          contents.forEach((c, i) => {
            const found = page.hashes?.[i];
            if (wantsHash && !found) missing.push(files.length);
            files.push({ key: c.Key!, ...found });
          });
          token = page.output.IsTruncated ? page.output.NextContinuationToken : undefined;
        } while (token);
        // A server without Cairn's listing extension: one HEAD per file.
        await mapLimit(missing, HEAD_CONCURRENCY, async (i) => {
          const file = files[i]!;
          const headers = headersOf(await entry.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: file.key })));
          file.hash = headers[HASH_HEADER];
          file.hashV0 = headers[HASH_V0_HEADER] ?? (file.hash ? CID.parse(file.hash).toV0().toString() : undefined);
        });
      } catch (err) {
        throw toStorageError(err, `listFiles of "${bucket}"`);
      }
      return files.map((f) => {
        const all: Record<string, unknown> = { key: f.key, bucket, hash: f.hash, hashV0: f.hashV0 };
        if (getOptions.includes('publicUrl')) all.publicUrl = publicUrl(bucket, f.key);
        const out: Record<string, unknown> = {};
        for (const o of getOptions) out[o] = all[o];
        return out;
      }) as never;
    },

    async listBuckets(input) {
      const p = params(input, 'listBuckets');
      const entry = client(p);
      try {
        const out = await entry.s3.send(new ListBucketsCommand({}));
        return (out.Buckets ?? []).map((b): BucketEntry => ({ name: b.Name! }));
      } catch (err) {
        throw toStorageError(err, 'listBuckets');
      }
    },

    async getFileFromHash(input) {
      const p = params(input, 'getFileFromHash');
      const hash = requireString(p, 'hash').trim();
      const hashOptions = checkOptions('getFileFromHashOptions', p.getFileFromHashOptions, HASH_OPTIONS, [], true);
      const verify = p.verify ?? true;
      if (typeof verify !== 'boolean') throw invalidArgument('verify must be a boolean');
      let cid: CID;
      try {
        cid = CID.parse(hash);
      } catch {
        throw invalidArgument(`hash is not a valid CID: "${hash}"`);
      }
      const fetchFn = storageOptions.fetch ?? globalThis.fetch;
      if (typeof fetchFn !== 'function') throw invalidArgument('no fetch available: pass createStorage({ fetch })');
      const url = `${options.gatewayUrl}/ipfs/${hash}`;
      const operation = `getFileFromHash of ${hash}`;
      let bytes: Uint8Array;
      let status: number;
      try {
        const response = await fetchFn(url);
        status = response.status;
        if (!response.ok) {
          const body = (await response.text().catch(() => '')).trim().slice(0, 200);
          const code = status === 404 ? 'NotFound' : status === 400 ? 'InvalidArgument' : 'GatewayError';
          throw new CairnStorageError(`${operation}: the gateway answered ${status}${body ? `: ${body}` : ''}`, { code, status });
        }
        bytes = new Uint8Array(await response.arrayBuffer());
      } catch (err) {
        throw toStorageError(err, operation);
      }
      if (verify) {
        const verdict = await verifyBytes(cid, bytes);
        if (verdict === 'mismatch') {
          throw new CairnStorageError(
            `${operation}: the ${bytes.byteLength} bytes the gateway (${options.gatewayUrl}) returned do not hash to ${hash}`,
            {
              code: 'CidMismatch',
              status,
            },
          );
        }
        if (verdict === 'unverifiable') {
          throw new CairnStorageError(
            `${operation}: this SDK cannot check content of this CID's codec or hash; pass verify: false to accept it unchecked`,
            {
              code: 'UnverifiableCid',
              status,
            },
          );
        }
      }
      if (hashOptions.includes('buffer')) return outputBytes<Data>(bytes) as never;
      return new TextDecoder().decode(bytes) as never;
    },

    destroy() {
      for (const entry of clients.values()) entry.s3.destroy();
      clients.clear();
    },
  };
  return storage;
}
