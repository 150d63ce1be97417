/**
 * Writing a file: one PutObject when it fits in one part, else a multipart
 * upload in parts of `partSize` with at most `concurrency` in flight, read
 * from the source only as parts free up, so at most (concurrency + 1) parts
 * are in memory whatever the file's length. Any failure cancels the parts in
 * flight, aborts the multipart upload and rejects; nothing is left thrown at
 * the process.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import { CID } from 'multiformats/cid';
import { HASH_HEADER, HASH_V0_HEADER, headersOf, type Platform } from './client.js';
import { CairnStorageError, toStorageError } from './errors.js';
import { streamChunks } from './bytes.js';
import { MAX_PARTS } from './limits.js';
import type { Acl, ProgressCallback, UploadStream } from './types.js';

export interface PutTarget {
  s3: S3Client;
  platform: Platform;
  bucket: string;
  key: string;
  ContentType?: string;
  ACL: Acl;
  partSize: number;
  concurrency: number;
  onProgress?: ProgressCallback;
}

export interface Hashes {
  hash: string;
  hashV0: string;
}

interface Part {
  bytes: Uint8Array;
  release(): void;
}

class Progress {
  private completed = 0;
  private readonly inflight = new Map<number, number>();
  private last = -1;

  constructor(
    private readonly callback: ProgressCallback | undefined,
    private total: number | undefined,
  ) {}

  sent(part: number, bytesThisAttempt: number): void {
    this.inflight.set(part, bytesThisAttempt);
    this.emit();
  }

  done(part: number, size: number): void {
    this.inflight.delete(part);
    this.completed += size;
    this.emit();
  }

  finish(total: number): void {
    const learned = this.total !== total;
    this.total = total;
    // A stream's length is known only now: say so even though loaded did not move.
    this.emit(learned);
  }

  start(): void {
    this.emit(true);
  }

  private emit(force = false): void {
    if (!this.callback) return;
    let loaded = this.completed;
    for (const n of this.inflight.values()) loaded += n;
    // A retried part starts again from zero; callers see loaded only grow.
    if (!force && loaded <= this.last) return;
    this.last = Math.max(this.last, loaded);
    try {
      this.callback({ loaded: this.last, total: this.total });
    } catch {
      // A throwing progress callback must not break the upload.
    }
  }
}

function hashesFrom(output: object, etag: string | undefined, operation: string): Hashes {
  const headers = headersOf(output);
  let hash = headers[HASH_HEADER];
  let hashV0 = headers[HASH_V0_HEADER];
  if (!hash && etag) {
    // Servers in Fleek's mode answer the CID as the ETag.
    try {
      hash = CID.parse(etag.replace(/^"|"$/g, '')).toV1().toString();
    } catch {
      hash = undefined;
    }
  }
  if (!hash) {
    throw new CairnStorageError(`${operation}: the server answered no ${HASH_HEADER} header (is the endpoint a Cairn server?)`, {
      code: 'MissingHash',
      status: 200,
    });
  }
  if (!hashV0) {
    try {
      hashV0 = CID.parse(hash).toV0().toString();
    } catch {
      hashV0 = hash;
    }
  }
  return { hash, hashV0 };
}

async function putSingle(target: PutTarget, bytes: Uint8Array, progress: Progress): Promise<Hashes> {
  const command = new PutObjectCommand({
    Bucket: target.bucket,
    Key: target.key,
    Body: bytes,
    ContentLength: bytes.byteLength,
    ContentType: target.ContentType,
    ACL: target.ACL,
  });
  if (bytes.byteLength) target.platform.trackBody?.(command, (n) => progress.sent(1, n));
  let output;
  try {
    output = await target.s3.send(command);
  } catch (err) {
    throw toStorageError(err, `upload of "${target.key}"`);
  }
  progress.done(1, bytes.byteLength);
  return hashesFrom(output, output.ETag, `upload of "${target.key}"`);
}

/** Reusable part buffers: a part's memory goes back to the pool once the part is sent. */
class BufferPool {
  private readonly free: Uint8Array[] = [];
  constructor(private readonly size: number) {}
  take(): Uint8Array {
    return this.free.pop() ?? new Uint8Array(this.size);
  }
  give(buffer: Uint8Array): void {
    this.free.push(buffer);
  }
}

/** Cuts a stream of arbitrary chunks into parts of exactly `partSize` bytes (the last one shorter). */
async function* streamParts(stream: UploadStream, partSize: number): AsyncGenerator<Part> {
  const pool = new BufferPool(partSize);
  let buffer: Uint8Array | undefined;
  let filled = 0;
  const part = (buf: Uint8Array, length: number): Part => ({ bytes: buf.subarray(0, length), release: () => pool.give(buf) });
  for await (const chunk of streamChunks(stream)) {
    let offset = 0;
    while (offset < chunk.byteLength) {
      buffer ??= pool.take();
      const n = Math.min(partSize - filled, chunk.byteLength - offset);
      buffer.set(chunk.subarray(offset, offset + n), filled);
      filled += n;
      offset += n;
      if (filled === partSize) {
        const full = buffer;
        buffer = undefined;
        filled = 0;
        yield part(full, partSize);
      }
    }
  }
  if (buffer && filled > 0) yield part(buffer, filled);
}

/** Bytes already in memory, as parts that share their memory. */
function* bytesParts(bytes: Uint8Array, partSize: number): Generator<Part> {
  for (let offset = 0; offset < bytes.byteLength; offset += partSize) {
    yield { bytes: bytes.subarray(offset, Math.min(offset + partSize, bytes.byteLength)), release: () => {} };
  }
}

function sourceError(err: unknown, key: string): CairnStorageError {
  if (err instanceof CairnStorageError) return err;
  const message = typeof (err as Error | undefined)?.message === 'string' ? (err as Error).message : String(err);
  return new CairnStorageError(`upload of "${key}": reading the data failed: ${message}`, { code: 'SourceStreamError', cause: err });
}

/** Stops reading a source we no longer want: the iterator, and the stream itself when it can be destroyed (Node) or cancelled (web). */
function closeSource(parts: AsyncIterator<Part> | Iterator<Part>, origin: unknown): void {
  void Promise.resolve()
    .then(() => parts.return?.())
    .catch(() => {});
  const o = origin as { destroy?: (err?: Error) => void; destroyed?: boolean; cancel?: () => Promise<void>; locked?: boolean } | undefined;
  try {
    if (typeof o?.destroy === 'function' && !o.destroyed) o.destroy();
    else if (typeof o?.cancel === 'function' && o.locked === false) void o.cancel().catch(() => {});
  } catch {
    // already closed
  }
}

async function putParts(
  target: PutTarget,
  parts: AsyncIterator<Part> | Iterator<Part>,
  origin: unknown,
  total: number | undefined,
): Promise<Hashes> {
  const { s3, bucket, key } = target;
  const progress = new Progress(target.onProgress, total);
  progress.start();
  const operation = `upload of "${key}"`;

  // Reading the source races a failure of the parts in flight, so a stalled source cannot hold a failed upload open.
  let failure: unknown;
  let signalFailure!: () => void;
  const failed = new Promise<'failed'>((resolve) => (signalFailure = () => resolve('failed')));
  const next = async (): Promise<Part | undefined | 'failed'> => {
    const pending = Promise.resolve(parts.next());
    pending.catch(() => {});
    let result;
    try {
      result = await Promise.race([pending, failed]);
    } catch (err) {
      throw sourceError(err, key);
    }
    if (result === 'failed') return 'failed';
    return result.done ? undefined : result.value;
  };

  let first: Part | undefined;
  let second: Part | undefined;
  try {
    first = (await next()) as Part | undefined;
    second = first ? ((await next()) as Part | undefined) : undefined;
  } catch (err) {
    closeSource(parts, origin);
    throw err;
  }
  if (!second) {
    // It fits in one request.
    const bytes = first?.bytes ?? new Uint8Array(0);
    try {
      const hashes = await putSingle(target, bytes, progress);
      progress.finish(bytes.byteLength);
      return hashes;
    } finally {
      first?.release();
    }
  }

  let uploadId: string | undefined;
  const controller = new AbortController();
  const inflight = new Set<Promise<void>>();
  const completed: CompletedPart[] = [];
  let partNumber = 0;
  let size = 0;
  const fail = (err: unknown) => {
    if (failure !== undefined) return;
    failure = err;
    controller.abort();
    signalFailure();
  };
  const start = (part: Part) => {
    const n = ++partNumber;
    const length = part.bytes.byteLength;
    size += length;
    const command = new UploadPartCommand({
      Bucket: bucket,
      Key: key,
      UploadId: uploadId,
      PartNumber: n,
      Body: part.bytes,
      ContentLength: length,
    });
    target.platform.trackBody?.(command, (sent) => progress.sent(n, sent));
    const task = (async () => {
      try {
        const out = await s3.send(command, { abortSignal: controller.signal });
        completed.push({
          PartNumber: n,
          ETag: out.ETag,
          ChecksumCRC32: out.ChecksumCRC32,
          ChecksumCRC32C: out.ChecksumCRC32C,
          ChecksumCRC64NVME: out.ChecksumCRC64NVME,
          ChecksumSHA1: out.ChecksumSHA1,
          ChecksumSHA256: out.ChecksumSHA256,
        });
        progress.done(n, length);
      } catch (err) {
        fail(failure === undefined ? toStorageError(err, `${operation}: part ${n}`) : err);
      } finally {
        part.release();
      }
    })();
    inflight.add(task);
    void task.finally(() => inflight.delete(task));
  };

  try {
    let created;
    try {
      created = await s3.send(
        new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: target.ContentType, ACL: target.ACL }),
      );
    } catch (err) {
      throw toStorageError(err, operation);
    }
    uploadId = created.UploadId;
    if (!uploadId) throw new CairnStorageError(`${operation}: the server answered no UploadId`, { code: 'InvalidResponse', status: 200 });
    const queue: Part[] = [first!, second];
    first = second = undefined;
    for (;;) {
      if (failure !== undefined) break;
      if (inflight.size >= target.concurrency) {
        await Promise.race(inflight);
        continue;
      }
      const part = queue.shift() ?? (await next());
      if (part === 'failed') break;
      if (part === undefined) break;
      if (partNumber >= MAX_PARTS) {
        part.release();
        throw new CairnStorageError(
          `${operation}: more than ${MAX_PARTS} parts of ${target.partSize} bytes; use a larger partSize for files over ${MAX_PARTS * target.partSize} bytes`,
          { code: 'TooManyParts' },
        );
      }
      start(part);
    }
    await Promise.all(inflight);
    if (failure !== undefined) throw failure;
    completed.sort((a, b) => a.PartNumber! - b.PartNumber!);
    let output;
    try {
      output = await s3.send(
        new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: completed } }),
      );
    } catch (err) {
      throw toStorageError(err, operation);
    }
    const hashes = hashesFrom(output, output.ETag, operation);
    progress.finish(size);
    return hashes;
  } catch (err) {
    fail(err);
    closeSource(parts, origin);
    await Promise.allSettled([...inflight]);
    let aborted: boolean | undefined;
    if (uploadId) {
      try {
        await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
        aborted = true;
      } catch {
        aborted = false;
      }
    }
    const e = toStorageError(err, operation);
    throw new CairnStorageError(
      aborted === false ? `${e.message} (and aborting multipart upload ${uploadId} failed: abort it with AbortMultipartUpload)` : e.message,
      { code: e.code, status: e.status, requestId: e.requestId, cause: e.cause ?? err, uploadId, aborted },
    );
  }
}

export function uploadBytes(target: PutTarget, bytes: Uint8Array): Promise<Hashes> {
  return putParts(target, bytesParts(bytes, target.partSize), undefined, bytes.byteLength);
}

export function uploadStream(target: PutTarget, stream: UploadStream, total?: number): Promise<Hashes> {
  return putParts(target, streamParts(stream, target.partSize), stream, total);
}
