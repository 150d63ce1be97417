/**
 * Byte sources and byte results without Node-only imports: Uint8Array and
 * web streams everywhere, Node Readables through their async iterator.
 */
import { invalidArgument } from './errors.js';
import type { UploadData, UploadStream } from './types.js';

const encoder = new TextEncoder();

interface BufferLike {
  from(buffer: ArrayBufferLike, byteOffset: number, length: number): Uint8Array;
  isBuffer(value: unknown): boolean;
}

/** Node's Buffer when there is one (no import, so bundles for browsers stay clean). */
const NodeBuffer = (globalThis as { Buffer?: BufferLike }).Buffer;

/** Bytes as callers get them back: a Buffer (sharing memory) in Node, the Uint8Array elsewhere. */
export function outputBytes<Data extends Uint8Array>(bytes: Uint8Array): Data {
  if (NodeBuffer && !NodeBuffer.isBuffer(bytes)) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) as Data;
  return bytes as Data;
}

const tag = (value: unknown) => Object.prototype.toString.call(value);

/** Bytes viewed as a Uint8Array without copying; checks that also hold across realms (vm contexts, iframes). */
export function asBytes(value: unknown): Uint8Array | undefined {
  if (typeof value === 'string') return encoder.encode(value);
  if (ArrayBuffer.isView(value)) {
    return tag(value) === '[object Uint8Array]' ? (value as Uint8Array) : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  if (tag(value) === '[object ArrayBuffer]' || tag(value) === '[object SharedArrayBuffer]') return new Uint8Array(value as ArrayBuffer);
  return undefined;
}

export function isWebStream(value: unknown): value is ReadableStream<Uint8Array> {
  return typeof value === 'object' && value !== null && typeof (value as ReadableStream).getReader === 'function';
}

export function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';
}

function isBlob(value: unknown): value is Blob {
  if (typeof Blob !== 'undefined' && value instanceof Blob) return true;
  const b = value as Blob | null;
  return (
    typeof b === 'object' &&
    b !== null &&
    typeof b.size === 'number' &&
    typeof b.stream === 'function' &&
    typeof b.arrayBuffer === 'function'
  );
}

/** A chunk from a stream as bytes (Node streams with an encoding set give strings). */
export function chunkBytes(chunk: unknown): Uint8Array {
  const bytes = asBytes(chunk);
  if (bytes) return bytes;
  throw invalidArgument(`stream chunks must be bytes or strings, got ${chunk === null ? 'null' : typeof chunk}`);
}

/** Reads a web stream; stopping early (return/throw) cancels it. */
async function* readWebStream(stream: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  const reader = stream.getReader();
  let done = false;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) {
        done = true;
        return;
      }
      yield next.value;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/** Any stream the SDK accepts as an async iterable of byte chunks. Returning early closes the source. */
export async function* streamChunks(stream: UploadStream | ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const source: AsyncIterable<unknown> = isWebStream(stream) ? readWebStream(stream) : (stream as AsyncIterable<unknown>);
  for await (const chunk of source) {
    const bytes = chunkBytes(chunk);
    if (bytes.byteLength) yield bytes;
  }
}

export function isUploadStream(value: unknown): value is UploadStream {
  return isWebStream(value) || isAsyncIterable(value);
}

/** Upload data as bytes in memory, or as a stream (with its length when known, as for a Blob). */
export type PreparedData = { kind: 'bytes'; bytes: Uint8Array } | { kind: 'stream'; stream: UploadStream; total?: number };

export function prepareData(data: UploadData): PreparedData {
  const bytes = asBytes(data);
  if (bytes) return { kind: 'bytes', bytes };
  if (isBlob(data)) return { kind: 'stream', stream: data.stream() as ReadableStream<Uint8Array>, total: data.size };
  if (isUploadStream(data)) return { kind: 'stream', stream: data };
  throw invalidArgument('data must be a string, Uint8Array/Buffer, ArrayBuffer, Blob, Node Readable or web ReadableStream');
}
