/**
 * Flexible checksums (`x-amz-checksum-<algorithm>`): computed while the body
 * streams, verified against the header or the aws-chunked trailer that
 * carries them, stored with the object and returned when asked for.
 */
import { createDigest as hasher, type Digest } from '../core/hashing/digests.js';
import { S3Error } from './errors.js';

export const ALGORITHMS = ['crc32', 'crc32c', 'crc64nvme', 'sha1', 'sha256'] as const;
export type ChecksumAlgorithm = (typeof ALGORITHMS)[number];

const DIGEST_BYTES: Record<ChecksumAlgorithm, number> = { crc32: 4, crc32c: 4, crc64nvme: 8, sha1: 20, sha256: 32 };

const headerName = (algorithm: ChecksumAlgorithm) => `x-amz-checksum-${algorithm}`;

function isAlgorithm(name: string): name is ChecksumAlgorithm {
  return (ALGORITHMS as readonly string[]).includes(name);
}

function invalid(name: string): S3Error {
  return new S3Error('InvalidRequest', 400, `Value for ${name} header is invalid.`);
}

export interface ChecksumPlan {
  algorithm: ChecksumAlgorithm;
  /** The value sent in a header, or undefined when it comes in the trailer. */
  expected?: string;
  update(chunk: Uint8Array): void;
  /**
   * Verifies against the header or trailer value; returns the base64
   * checksum. `computed`: the digest, when the bytes went elsewhere to be
   * hashed (the hash thread) instead of through update().
   */
  finish(trailers: Map<string, string>, computed?: Uint8Array): Promise<string>;
}

/**
 * What the request asks to be checked: at most one algorithm, from an
 * `x-amz-checksum-*` header, an `x-amz-trailer` naming one, or
 * `x-amz-sdk-checksum-algorithm` (computed and stored, nothing to compare).
 */
export function checksumPlan(headers: Headers): ChecksumPlan | undefined {
  const sent = ALGORITHMS.filter((a) => headers.has(headerName(a)));
  if (sent.length > 1) throw new S3Error('InvalidRequest', 400, 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.');
  const trailer = headers.get('x-amz-trailer')?.trim().toLowerCase();
  let algorithm: ChecksumAlgorithm | undefined = sent[0];
  let fromTrailer = false;
  if (trailer) {
    const name = trailer.replace(/^x-amz-checksum-/, '');
    if (!trailer.startsWith('x-amz-checksum-') || !isAlgorithm(name)) {
      throw new S3Error('InvalidRequest', 400, `The value specified in the x-amz-trailer header is not supported: ${trailer}`);
    }
    if (algorithm && algorithm !== name) throw new S3Error('InvalidRequest', 400, 'Expecting a single x-amz-checksum- header.');
    algorithm = name;
    fromTrailer = !sent.length;
  }
  const sdk = headers.get('x-amz-sdk-checksum-algorithm')?.toLowerCase();
  if (!algorithm && sdk) {
    if (!isAlgorithm(sdk)) throw new S3Error('InvalidRequest', 400, `Checksum algorithm ${sdk} is not supported.`);
    algorithm = sdk;
  }
  if (!algorithm) return undefined;
  const name = headerName(algorithm);
  const expected = fromTrailer ? undefined : headers.get(name) ?? undefined;
  if (expected !== undefined) validateEncoding(algorithm, expected, name);
  const alg = algorithm;
  // Made on first use: an upload's own hasher usually computes the digest (finish's `computed`).
  let h: Digest | undefined;
  const own = () => (h ??= hasher(alg));
  return {
    algorithm: alg,
    expected,
    update: (chunk) => own().update(chunk),
    async finish(trailers, computed) {
      const actual = Buffer.from(computed ?? (await own().digest())).toString('base64');
      const claimed = fromTrailer ? trailers.get(name) : expected;
      if (fromTrailer && claimed === undefined) {
        throw new S3Error('InvalidRequest', 400, `The x-amz-trailer header named ${name}, but the body's trailer did not carry it.`);
      }
      if (claimed !== undefined) {
        validateEncoding(alg, claimed, name);
        if (claimed !== actual) {
          throw new S3Error('BadDigest', 400, `The ${alg.toUpperCase()} you specified did not match the calculated checksum.`);
        }
      }
      return actual;
    },
  };
}

function validateEncoding(algorithm: ChecksumAlgorithm, value: string, name: string): void {
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length !== DIGEST_BYTES[algorithm] || bytes.toString('base64') !== value) throw invalid(name);
}

/** Response headers for stored checksums (GET/HEAD with `x-amz-checksum-mode: ENABLED`, PUT always). */
export function checksumHeaders(checksums: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [algorithm, value] of Object.entries(checksums ?? {})) out[headerName(algorithm as ChecksumAlgorithm)] = value;
  return out;
}

/** A checksum computed over the bytes with nothing to compare it to (parts of an upload that asked for one). */
export function computedChecksum(algorithm: ChecksumAlgorithm): ChecksumPlan {
  let h: Digest | undefined;
  const own = () => (h ??= hasher(algorithm));
  return {
    algorithm,
    update: (chunk) => own().update(chunk),
    finish: async (_trailers, computed) => Buffer.from(computed ?? (await own().digest())).toString('base64'),
  };
}

/** `x-amz-checksum-algorithm` values (CRC32, SHA256, ...) as the lowercase names used here. */
export function parseAlgorithm(value: string, header: string): ChecksumAlgorithm {
  const name = value.trim().toLowerCase();
  if (!isAlgorithm(name)) throw new S3Error('InvalidRequest', 400, `Value for ${header} header is invalid.`);
  return name;
}

/**
 * S3's composite checksum of a multipart object: the algorithm over the
 * concatenated binary checksums of the parts, then `-<part count>`.
 */
export async function compositeChecksum(algorithm: ChecksumAlgorithm, parts: string[]): Promise<string> {
  const h = hasher(algorithm);
  for (const part of parts) h.update(Buffer.from(part, 'base64'));
  return `${Buffer.from(await h.digest()).toString('base64')}-${parts.length}`;
}
