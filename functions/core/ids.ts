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

/** Site ids are newId's UUIDs; nothing else is looked up by id (site hosts, CDN paths). */
export const SITE_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Tokens that must differ from every other one minted anywhere (request
 * ids, a record's write version), not be unguessable: 64 random bits drawn
 * once per process, then a counter. A draw from the CSPRNG per request cost
 * about 12 µs, several times per PUT.
 */
const PROCESS_BITS = randomBytes(8);
const PROCESS_HEX = PROCESS_BITS.toString('hex');
const REQUEST_PREFIX = PROCESS_HEX.slice(0, 8).toUpperCase();
let tokens = 0;
let requests = PROCESS_BITS.readUInt32BE(4);

/** A unique token: this process's 16 random hex digits, then a base36 counter. */
export const uniqueToken = (): string => PROCESS_HEX + (++tokens).toString(36);

/** An S3-style request id: 16 uppercase hex digits (this process's 8, then a counter that wraps after 2^32 requests). */
export function newRequestId(): string {
  requests = (requests + 1) >>> 0;
  return REQUEST_PREFIX + requests.toString(16).toUpperCase().padStart(8, '0');
}

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
