/**
 * Flexible checksums (`x-amz-checksum-<algorithm>`): computed while the body
 * streams, verified against the header or the aws-chunked trailer that
 * carries them, stored with the object and returned when asked for. A
 * multipart object's checksum is settled here too: which algorithm and type
 * an upload may ask for, and how the parts' checksums make the object's.
 */
import { createDigest as hasher, type Digest } from '../core/hashing/digests.js';
import type { ChecksumType, UploadRecord } from '../core/data/uploads.js';
import { errors, S3Error } from './errors.js';

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
  if (sent.length > 1)
    throw new S3Error('InvalidRequest', 400, 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.');
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
  const expected = fromTrailer ? undefined : (headers.get(name) ?? undefined);
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

/** `x-amz-checksum-algorithm` and `x-amz-checksum-type` of CreateMultipartUpload, and which of them go together. */
export function uploadChecksum(headers: Headers): { checksumAlgorithm?: ChecksumAlgorithm; checksumType?: ChecksumType } {
  const rawAlgorithm = headers.get('x-amz-checksum-algorithm');
  const rawType = headers.get('x-amz-checksum-type');
  if (rawAlgorithm === null) {
    if (rawType !== null)
      throw errors.invalidRequest('The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.');
    return {};
  }
  const algorithm = parseAlgorithm(rawAlgorithm, 'x-amz-checksum-algorithm');
  const type = (rawType ?? (algorithm === 'crc64nvme' ? 'FULL_OBJECT' : 'COMPOSITE')).toUpperCase();
  if (type !== 'COMPOSITE' && type !== 'FULL_OBJECT') throw errors.invalidRequest('Value for x-amz-checksum-type header is invalid.');
  if (type === 'COMPOSITE' && algorithm === 'crc64nvme') {
    throw errors.invalidRequest('The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm.');
  }
  if (type === 'FULL_OBJECT' && (algorithm === 'sha1' || algorithm === 'sha256')) {
    throw errors.invalidRequest(`The FULL_OBJECT checksum type cannot be used with the ${algorithm} checksum algorithm.`);
  }
  return { checksumAlgorithm: algorithm, checksumType: type };
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

/**
 * The checksum of a completed multipart object. COMPOSITE is known before
 * a byte streams (from the parts' checksums), so it is returned whole;
 * FULL_OBJECT is computed over the assembled bytes, so it comes back as
 * a plan to stream them through and a check of the Complete request's
 * claim once they have.
 */
export interface MultipartChecksum {
  algorithm?: ChecksumAlgorithm;
  type?: ChecksumType;
  composite?: string;
  plan?: ChecksumPlan;
  verify?: (assembled: { checksums?: Record<string, string> }) => void;
}

/** The whole-object checksum: the upload's (composite or streamed), or the one the Complete request asks to verify. */
export async function multipartChecksum(
  headers: Headers,
  upload: Pick<UploadRecord, 'checksumAlgorithm' | 'checksumType'>,
  parts: ReadonlyArray<{ checksums?: Record<string, string> }>,
): Promise<MultipartChecksum> {
  const sent = ALGORITHMS.filter((a) => headers.has(headerName(a)));
  if (sent.length > 1) throw errors.invalidRequest('Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.');
  const claimedAlgorithm = sent[0];
  const claimed = claimedAlgorithm ? headers.get(headerName(claimedAlgorithm))!.trim() : undefined;
  const algorithm = (upload.checksumAlgorithm as ChecksumAlgorithm | undefined) ?? claimedAlgorithm;
  if (!algorithm) return {};
  if (claimedAlgorithm && claimedAlgorithm !== algorithm) {
    throw errors.invalidRequest(
      `Checksum Type mismatch occurred, expected checksum Type: ${algorithm}, actual checksum Type: ${claimedAlgorithm}`,
    );
  }
  const mismatch = () =>
    new S3Error('BadDigest', 400, `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`);
  const type: ChecksumType = upload.checksumAlgorithm ? (upload.checksumType ?? 'COMPOSITE') : 'FULL_OBJECT';
  if (type === 'COMPOSITE') {
    const values = parts.map((p) => p.checksums?.[algorithm]);
    if (values.some((v) => v === undefined)) throw errors.invalidRequest(`Every part needs a ${algorithm.toUpperCase()} checksum.`);
    const composite = await compositeChecksum(algorithm, values as string[]);
    if (claimed !== undefined && claimed.replace(/-\d+$/, '') !== composite.replace(/-\d+$/, '')) throw mismatch();
    return { type, composite, algorithm };
  }
  const plan = computedChecksum(algorithm);
  const verify = (assembled: { checksums?: Record<string, string> }) => {
    if (claimed !== undefined && assembled.checksums?.[algorithm] !== claimed) throw mismatch();
  };
  return { type, plan, verify, algorithm };
}
