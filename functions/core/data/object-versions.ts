/**
 * The items of a versioned bucket's keys, beside the object records in the
 * objects table (data/object-versions-store.ts writes them, in the same
 * transactions as the records of data/objects.ts):
 *
 *   <bucket> / <key>                   the latest version, when it is an object (as before versions)
 *   #VER#<bucket>/<key> / <sort>       every other version, and every delete marker, newest first
 *   #KEYS#<bucket> / <key>             the key's anchor: exists while the key has versions written
 *                                      under versioning; every versioned write of the key is
 *                                      conditioned on it, and it lists the keys for ListObjectVersions
 *
 * So ListObjects reads only `<bucket>` items (the current objects), as
 * before, and a bucket never versioned has no other item: its records, reads
 * and answers are exactly what they were. A key's versions hold a partition
 * of their own (a partition key may be 2048 bytes; a sort key of key and
 * version together would not fit a 1024-byte key).
 *
 * `<sort>` is 16 decimal digits that fall as time goes on (newest first in
 * a Query), strictly below the key's previous versions' (the anchor's
 * `top`), whatever the clock says. A version id is its sort followed by 16
 * random URL-safe characters, so a read by id is one GetItem, and a forged
 * id with a right sort and wrong tail finds nothing. The null version (a
 * write while versioning is suspended, or an object written before
 * versioning) is found through the anchor's `nullSort`.
 *
 * Each version references its CID under a holder of its own
 * (versionHolder), so a version's blocks stay pinned until that version is
 * deleted, whether it is current or not. An object written before
 * versioning keeps its old holder (objectHolder) as long as it lives.
 */
import { createHash, randomBytes } from 'node:crypto';

export const NULL_VERSION = 'null';

/** The version id clients see for a record: its own, or `null` for one written before versioning. */
export const versionIdOf = (v: { versionId?: string }): string => v.versionId ?? NULL_VERSION;

/** The partition holding a key's non-current versions and delete markers. */
export const versionPartition = (bucket: string, key: string): string => `#VER#${bucket}/${key}`;

/** The partition holding the anchors of a bucket's versioned keys. */
export const anchorPartition = (bucket: string): string => `#KEYS#${bucket}`;

const SORT_DIGITS = 16;
const SORT_CEILING = Number.MAX_SAFE_INTEGER;

/** A sort for the instant `n` (microsecond-ish ticks): later instants sort first. */
export function sortToken(n: number): string {
  return String(SORT_CEILING - n).padStart(SORT_DIGITS, '0');
}

function sortTicks(token: string): number {
  return SORT_CEILING - Number(token);
}

/** The sort of a new version: now, or just after the newest the key has had if the clock says otherwise. */
export function nextSort(now: Date, newest: string | undefined): string {
  const ticks = now.getTime() * 1000;
  return sortToken(newest === undefined ? ticks : Math.max(ticks, sortTicks(newest) + 1));
}

/** The sort a record written before versioning takes when it stops being current. */
export function sortOfTime(iso: string): string {
  const ms = Date.parse(iso);
  return sortToken(Number.isFinite(ms) ? ms * 1000 : 0);
}

const ID_PATTERN = /^\d{16}[A-Za-z0-9_-]{16}$/;

/** A new version id for a version with this sort. */
export function newVersionId(sort: string): string {
  return sort + randomBytes(12).toString('base64url');
}

/**
 * What a client's version id names: the null version, a sort to look up,
 * or (undefined) nothing Cairn ever made, which S3 answers as an invalid
 * argument.
 */
export function parseVersionId(id: string): { null: true } | { null: false; sort: string } | undefined {
  if (id === NULL_VERSION) return { null: true };
  if (!ID_PATTERN.test(id)) return undefined;
  return { null: false, sort: id.slice(0, SORT_DIGITS) };
}

export const isWellFormedVersionId = (id: string): boolean => parseVersionId(id) !== undefined;

/** Names one version of `<bucket>/<key>` in its CID reference (short whatever the key's length). */
export function versionHolder(bucket: string, key: string, versionId: string): string {
  return `#VER#${bucket}/${createHash('sha256').update(key, 'utf8').digest('hex')}/${versionId}`;
}
