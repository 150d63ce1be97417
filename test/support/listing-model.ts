/**
 * What a listing must answer, computed the plain way: every key of the
 * bucket in S3's order (UTF-8 bytes), filtered by prefix and marker, keys
 * under a common prefix folded into it, cut at max-keys. The listing
 * suites compare the stores' and the S3 API's answers with it over random
 * buckets, whatever the stores do to read less.
 */

/** S3's key order: UTF-8 bytes. */
export const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

export interface ModelQuery {
  prefix?: string;
  delimiter?: string;
  /** Keys strictly after this one. */
  after?: string;
  /** Keys at or after this one (wins over `after`). */
  startAt?: string;
  /** With `after`: that key's versions older than this one come first. */
  afterVersion?: string;
  maxKeys: number;
}

/** One version of a key, as the model keeps them (newest first). */
export interface ModelVersion {
  versionId: string;
  marker: boolean;
}

/** An entry as the comparisons spell it: `K <key>`, `P <prefix>`, or `V <key> <version id> latest|old object|marker`. */
export type ModelEntry = string;

export const objectEntry = (key: string): ModelEntry => `K ${key}`;
export const prefixEntry = (prefix: string): ModelEntry => `P ${prefix}`;
export const versionEntry = (key: string, versionId: string, latest: boolean, marker: boolean): ModelEntry =>
  `V ${key} ${versionId} ${latest ? 'latest' : 'old'} ${marker ? 'marker' : 'object'}`;

export interface ModelPage {
  entries: ModelEntry[];
  truncated: boolean;
}

function inRange(key: string, q: ModelQuery): boolean {
  if (!key.startsWith(q.prefix ?? '')) return false;
  if (q.startAt !== undefined) return byteOrder(key, q.startAt) >= 0;
  if (q.after !== undefined) return byteOrder(key, q.after) > 0;
  return true;
}

/** The common prefix `key` folds into, if any. */
function commonPrefix(key: string, q: ModelQuery): string | undefined {
  if (!q.delimiter) return undefined;
  const prefix = q.prefix ?? '';
  const at = key.indexOf(q.delimiter, prefix.length);
  return at >= 0 ? key.slice(0, at + q.delimiter.length) : undefined;
}

function page(all: ModelEntry[], maxKeys: number): ModelPage {
  return { entries: all.slice(0, maxKeys), truncated: all.length > maxKeys };
}

/** ListObjects' page over these current keys. */
export function expectedObjects(keys: Iterable<string>, q: ModelQuery): ModelPage {
  const all: ModelEntry[] = [];
  let last: string | undefined;
  for (const key of [...keys].sort(byteOrder)) {
    if (!inRange(key, q)) continue;
    const common = commonPrefix(key, q);
    if (common === undefined) all.push(objectEntry(key));
    else if (common !== last) all.push(prefixEntry(common));
    last = common;
  }
  return page(all, q.maxKeys);
}

/** ListObjectVersions' page over these keys' versions (each key's newest first). */
export function expectedVersions(versions: Map<string, ModelVersion[]>, q: ModelQuery): ModelPage {
  const all: ModelEntry[] = [];
  const emit = (key: string, list: ModelVersion[], from: number) => {
    for (let i = from; i < list.length; i++) all.push(versionEntry(key, list[i]!.versionId, i === 0, list[i]!.marker));
  };
  if (q.afterVersion !== undefined && q.after !== undefined && q.startAt === undefined && q.after.startsWith(q.prefix ?? '')) {
    const list = versions.get(q.after);
    const at = list?.findIndex((v) => v.versionId === q.afterVersion) ?? -1;
    if (list && at >= 0) emit(q.after, list, at + 1);
  }
  let last: string | undefined;
  for (const key of [...versions.keys()].sort(byteOrder)) {
    const list = versions.get(key)!;
    if (!list.length || !inRange(key, q)) continue;
    const common = commonPrefix(key, q);
    if (common === undefined) emit(key, list, 0);
    else if (common !== last) all.push(prefixEntry(common));
    last = common;
  }
  return page(all, q.maxKeys);
}

/** A small seeded random source (mulberry32), so a failing bucket can be made again from its seed. */
export function randomSource(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  return { next, int, pick };
}

export type Random = ReturnType<typeof randomSource>;

/**
 * Keys of a random bucket: folders of a few keys and a few large ones
 * (past the sizes a listing's queries ask for: 8, 100), nested folders,
 * loose keys between them, characters of one to four UTF-8 bytes (where
 * UTF-16's order and UTF-8's differ: U+E000 against a surrogate pair), and
 * keys near S3's 1,024 bytes.
 */
export function randomKeys(random: Random, alphabet: readonly string[], count: number): string[] {
  const keys = new Set<string>();
  const segment = () => Array.from({ length: 1 + random.int(3) }, () => random.pick(alphabet)).join('');
  const folders = Array.from({ length: 12 + random.int(12) }, () =>
    Array.from({ length: 1 + random.int(3) }, segment).join(random.next() < 0.8 ? '/' : '-'),
  );
  const sizes = [1, 1, 2, 3, 5, 7, 8, 9, 12, 20, 40, 130];
  while (keys.size < count) {
    const roll = random.next();
    if (roll < 0.1) keys.add(segment());
    else if (roll < 0.12) keys.add(`${'long/'.repeat(100)}${'x'.repeat(random.int(520))}${segment()}`);
    else {
      const folder = random.pick(folders);
      const n = random.pick(sizes);
      for (let i = 0; i < n && keys.size < count; i++) keys.add(`${folder}/${segment()}${i}`);
    }
  }
  return [...keys];
}

/** A prefix of `text` by code points (never half a surrogate pair). */
export function headOf(random: Random, text: string): string {
  const points = Array.from(text);
  return points.slice(0, random.int(points.length + 1)).join('');
}

/** A marker or start: a key, part of one, one just past one, something unrelated, or one longer than any key. */
export function randomMarker(random: Random, keys: readonly string[], alphabet: readonly string[]): string {
  const key = random.pick(keys);
  switch (random.int(6)) {
    case 0:
      return key;
    case 1:
      return headOf(random, key);
    case 2:
      return key + random.pick(alphabet);
    case 3:
      return `${'long/'.repeat(100)}${'x'.repeat(random.int(900))}`;
    case 4:
      return random.pick(alphabet) + random.pick(alphabet);
    default:
      return headOf(random, key) + random.pick(alphabet);
  }
}
