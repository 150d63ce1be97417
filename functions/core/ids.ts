/** Identifiers and credentials Cairn mints. */
import { randomBytes, randomUUID, createHash } from 'node:crypto';

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function pick(alphabet: string, n: number): string {
  // 256 % 32 == 0 keeps the base32 draw unbiased; base62 rejects the biased tail.
  let out = '';
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      if (b < Math.floor(256 / alphabet.length) * alphabet.length) out += alphabet[b % alphabet.length];
      if (out.length === n) break;
    }
  }
  return out;
}

export const newId = (): string => randomUUID();

/** Sorts by creation time: 10 base36 digits of milliseconds, then randomness. */
export function newSortableId(now = Date.now()): string {
  return now.toString(36).padStart(10, '0') + pick(BASE62, 12);
}

/** An S3-style access key id (20 characters, like AWS's). */
export const newAccessKeyId = (): string => 'CAIRN' + pick(UPPER, 15);
export const newSecretAccessKey = (): string => pick(BASE62, 40);
export const newApiToken = (): string => 'cairn_' + pick(BASE62, 40);

/** API tokens are stored by hash only: they are bearer secrets that are never needed again. */
export const tokenDigest = (token: string): string => createHash('sha256').update(token).digest('hex');
