/**
 * The parts a multipart object was completed from, as the object record
 * keeps them: their sizes (run-length encoded, [size, count] pairs: most
 * uploads are one size and a shorter last part, so this stays a few
 * numbers for 10,000 parts) and, when the upload had a checksum algorithm,
 * each part's checksum. GetObject's `partNumber` and GetObjectAttributes'
 * ObjectParts read them.
 */
import type { ObjectRecord } from '../core/data/objects.js';

/**
 * Part checksums are kept only while they fit this many bytes: an item
 * holds at most 400 KB (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-items),
 * and 10,000 SHA-256 checksums would not.
 */
const MAX_PART_CHECKSUM_BYTES = 64 * 1024;

/** The record fields that describe the parts of an upload completed from `parts`. */
export function partLayout(
  parts: ReadonlyArray<{ size: number; checksums?: Record<string, string> }>,
  algorithm: string | undefined,
): Pick<ObjectRecord, 'partSizes' | 'partChecksums'> {
  const sizes: [number, number][] = [];
  for (const { size } of parts) {
    const last = sizes[sizes.length - 1];
    if (last && last[0] === size) last[1]++;
    else sizes.push([size, 1]);
  }
  const out: Pick<ObjectRecord, 'partSizes' | 'partChecksums'> = { partSizes: sizes };
  if (algorithm) {
    const checksums = parts.map((p) => p.checksums?.[algorithm]);
    const bytes = checksums.reduce((sum, c) => sum + (c?.length ?? 0), 0);
    if (checksums.every((c) => c !== undefined) && bytes <= MAX_PART_CHECKSUM_BYTES) out.partChecksums = checksums as string[];
  }
  return out;
}

export interface ObjectPart {
  partNumber: number;
  /** The part's first byte in the object. */
  offset: number;
  size: number;
  checksum?: string;
}

/**
 * Part `n` (1-based) of the object, or undefined when it has fewer parts.
 * An object that was not a multipart upload is one part. A multipart
 * object completed before part sizes were kept says 'unknown'.
 */
export function objectPart(record: ObjectRecord, n: number): ObjectPart | 'unknown' | undefined {
  if (!record.parts) return n === 1 ? { partNumber: 1, offset: 0, size: record.size } : undefined;
  if (n > record.parts) return undefined;
  if (!record.partSizes) return 'unknown';
  let offset = 0;
  let index = 1;
  for (const [size, count] of record.partSizes) {
    if (n < index + count) {
      offset += (n - index) * size;
      const checksum = record.partChecksums?.[n - 1];
      return { partNumber: n, offset, size, ...(checksum !== undefined ? { checksum } : {}) };
    }
    offset += size * count;
    index += count;
  }
  return 'unknown';
}

/** The parts numbered after `marker`, at most `max` of them (GetObjectAttributes' paging). */
export function objectParts(record: ObjectRecord, marker: number, max: number): ObjectPart[] {
  const out: ObjectPart[] = [];
  if (!record.partSizes) return out;
  let offset = 0;
  let n = 1;
  for (const [size, count] of record.partSizes) {
    // Whole runs before the marker are skipped at once: the work is in the runs and the page, not the part count.
    if (n + count - 1 <= marker) {
      offset += size * count;
      n += count;
      continue;
    }
    const skip = Math.max(0, marker - n + 1);
    for (let i = skip; i < count; i++) {
      if (out.length >= max) return out;
      const number = n + i;
      const checksum = record.partChecksums?.[number - 1];
      out.push({ partNumber: number, offset: offset + i * size, size, ...(checksum !== undefined ? { checksum } : {}) });
    }
    offset += size * count;
    n += count;
  }
  return out;
}
