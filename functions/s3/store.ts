/**
 * The one way bytes become stored content: hold the upload gate, stream the
 * bytes through the Kubo importer, whose leaf hasher also computes MD5 and
 * the flexible checksum (on the hash thread for large uploads), verify,
 * pin, commit whatever references the CID (an object record, a multipart
 * part) in one transaction, release. Whatever fails before the commit leaves
 * no record and no pin: a CID that was imported but not committed becomes a
 * collection candidate.
 */
import {
  NoSuchBucketError,
  type CommitAlso,
  type ObjectRecord,
  type Precondition,
  type PutOutcome,
  type VersioningState,
} from '../core/data/objects.js';
import { cidText } from '../core/ipfs/cid.js';
import { importFile } from '../core/ipfs/import.js';
import { pinRoot } from '../core/storage/pins.js';
import type { ObjectWriteServices, Services } from '../core/services.js';
import { errors, S3Error } from './errors.js';
import type { ChecksumPlan } from './checksums.js';
import type { DigestName } from '../core/hashing/digests.js';
import { checkPayloadHash, promisedPayloadHash, type PayloadMode } from './sigv4/payload.js';

export interface Ingested {
  cid: string;
  size: number;
  md5: string;
  checksums?: Record<string, string>;
}

export interface IngestOptions {
  /**
   * The bytes, or a function that opens them once the gate is held (content
   * read from stored blocks must be opened inside the gate, so collection
   * cannot reclaim those blocks while they are read).
   */
  content: AsyncIterable<Uint8Array> | (() => Promise<AsyncIterable<Uint8Array>>);
  checksum?: ChecksumPlan;
  /** Filled by the body decoder once the body ends (aws-chunked trailers). */
  trailers?: Map<string, string>;
  signal: AbortSignal;
  /** More bytes than this fail the upload with EntityTooLarge. */
  maxSize?: number;
  /** Checks the finished upload before anything is committed (Content-MD5, sizes). */
  verify?: (ingested: Ingested) => void;
  /** How many bytes are coming, when known: large uploads are hashed on the hash thread. */
  sizeHint?: number;
  /** The SigV4 payload check, when the body reader left it to this upload's hasher (requestBody's payloadHashByCaller). */
  payload?: PayloadMode;
}

/**
 * Imports, verifies and pins the content, then runs `commit`, which must
 * durably reference the CID (one transaction). Returns what `commit` returns.
 */
export async function ingest<T>(
  services: ObjectWriteServices,
  options: IngestOptions,
  commit: (ingested: Ingested) => Promise<T>,
): Promise<T> {
  const release = await services.gate.enterShared();
  let imported: string | undefined;
  const { checksum, maxSize } = options;
  const names = new Set<DigestName>(['md5']);
  if (checksum) names.add(checksum.algorithm);
  if (options.payload && promisedPayloadHash(options.payload)) names.add('sha256');
  const hasher = services.leafHasher([...names], options.sizeHint);
  try {
    const content = typeof options.content === 'function' ? await options.content() : options.content;
    async function* limited() {
      let length = 0;
      for await (const chunk of content) {
        length += chunk.byteLength;
        if (maxSize !== undefined && length > maxSize) throw errors.entityTooLarge(length, maxSize);
        yield chunk;
      }
    }
    const node = await services.ipfs();
    const { cid, size } = await importFile(node.blockstore, limited(), { leaves: hasher });
    imported = cidText(cid);
    const digests = await hasher.finish();
    if (options.payload) checkPayloadHash(options.payload, digests.sha256 ?? new Uint8Array(0));
    const ingested: Ingested = { cid: imported, size, md5: Buffer.from(digests.md5!).toString('hex') };
    if (checksum)
      ingested.checksums = { [checksum.algorithm]: await checksum.finish(options.trailers ?? new Map(), digests[checksum.algorithm]) };
    options.verify?.(ingested);
    if (options.signal.aborted) throw new S3Error('RequestAborted', 400, 'The client closed the connection.');
    await pinRoot(node, cid);
    const result = await commit(ingested);
    imported = undefined;
    return result;
  } finally {
    hasher.abort();
    if (imported !== undefined) {
      await services.objects.addCandidate(imported).catch((err: unknown) => {
        services.logger.warn('could not record a collection candidate', { err, cid: imported });
      });
    }
    release();
  }
}

/**
 * Commits an object record (with the extra writes in `also`), mapping a
 * vanished bucket to NoSuchBucket. In a versioned bucket the record gets its
 * version id (set on `record`).
 */
export async function putRecord(
  services: Pick<Services, 'objects'>,
  record: ObjectRecord,
  also?: CommitAlso,
  precondition?: Precondition,
  versioning?: VersioningState,
): Promise<PutOutcome> {
  const outcome = await services.objects.put(record, { also, precondition, versioning }).catch((err: unknown) => {
    if (err instanceof NoSuchBucketError) throw errors.noSuchBucket(err.bucket);
    throw err;
  });
  if (outcome.versionId !== undefined) record.versionId = outcome.versionId;
  return outcome;
}

/** Imports, verifies, pins and commits the record `build` makes. Returns the committed record. */
export async function storeObject(
  services: ObjectWriteServices,
  options: IngestOptions,
  build: (ingested: Ingested) => ObjectRecord,
  precondition?: Precondition,
  versioning?: VersioningState,
): Promise<{ record: ObjectRecord; replaced?: ObjectRecord }> {
  return ingest(services, options, async (ingested) => {
    const record = build(ingested);
    const { replaced } = await putRecord(services, record, undefined, precondition, versioning);
    return { record, replaced };
  });
}

/** Commits a record for content already stored and referenced (CopyObject): no import, same gate. */
export async function commitExisting(
  services: Pick<Services, 'gate' | 'objects'>,
  read: () => Promise<ObjectRecord>,
  build: (source: ObjectRecord) => ObjectRecord,
  versioning?: VersioningState,
  precondition?: Precondition,
): Promise<{ record: ObjectRecord; source: ObjectRecord }> {
  const release = await services.gate.enterShared();
  try {
    // Read the source inside the gate: while we hold it, no collection can
    // reclaim the source's blocks, even if the source is deleted meanwhile.
    const source = await read();
    const record = build(source);
    await putRecord(services, record, undefined, precondition, versioning);
    return { record, source };
  } finally {
    release();
  }
}
