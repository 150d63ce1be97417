/**
 * The stores' time-bounded cache (bucket records, opened secrets, API key
 * checks, the GraphQL reads' records): a value is answered until its time
 * is up and never after, a writer's delete is seen at once, a load's
 * answer is kept only when there is one and nothing changed while it ran,
 * and past `max` entries (or their sizes) the least recently used goes
 * first. Shared loads and refresh ahead are tested through the stores that
 * rely on them (recent-reads, api-key-checks).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TtlCache } from '../../functions/core/cache.js';

test('a value is answered within its time and not after it', async () => {
  const cache = new TtlCache<string, string>(150);
  cache.set('k', 'v');
  expect(cache.get('k')).toBe('v');
  await sleep(250);
  expect(cache.get('k')).toBeUndefined();
});

test('through loads once, keeps a found value, and does not keep an absent one', async () => {
  const cache = new TtlCache<string, number>(60_000);
  let loads = 0;
  const load = async () => ++loads;
  expect(await cache.through('a', load)).toBe(1);
  expect(await cache.through('a', load)).toBe(1);
  expect(loads).toBe(1);

  let missing = 0;
  const none = async () => {
    missing++;
    return undefined;
  };
  expect(await cache.through('gone', none)).toBeUndefined();
  expect(await cache.through('gone', none)).toBeUndefined();
  expect(missing).toBe(2);

  cache.delete('a');
  expect(await cache.through('a', load)).toBe(2);
});

test('past max entries the least recently used goes first', () => {
  const cache = new TtlCache<string, number>(60_000, 2);
  cache.set('a', 1);
  cache.set('b', 2);
  expect(cache.get('a')).toBe(1); // a is now the more recently used
  cache.set('c', 3);
  expect(cache.get('b')).toBeUndefined();
  expect(cache.get('a')).toBe(1);
  expect(cache.get('c')).toBe(3);
});

test('a load that began before a delete or clear answers its callers but is not kept, and is not shared after it', async () => {
  for (const change of ['delete', 'clear'] as const) {
    const cache = new TtlCache<string, number>(60_000);
    let loads = 0;
    let release!: () => void;
    const slow = () =>
      new Promise<number>((resolve) => {
        const n = ++loads;
        release = () => resolve(n);
      });
    const before = cache.through('k', slow);
    if (change === 'delete') cache.delete('k');
    else cache.clear();
    const after = cache.through('k', async () => ++loads);
    release();
    expect(await before).toBe(1);
    expect(await after).toBe(2);
    // What the later load read is kept; the earlier one is not.
    expect(cache.get('k')).toBe(2);
    expect(cache.loadsUnderWay).toBe(0);
  }
});

test('sizeOf: a value counts as that many entries against max', () => {
  const cache = new TtlCache<string, number[]>(60_000, { max: 5, sizeOf: (v) => v.length });
  cache.set('a', [1, 2, 3]);
  cache.set('b', [1, 2]);
  expect(cache.get('a')).toEqual([1, 2, 3]);
  cache.set('c', [1]);
  // 3 + 2 + 1 > 5: the least recently used (b) went.
  expect(cache.get('b')).toBeUndefined();
  expect(cache.get('a')).toEqual([1, 2, 3]);
  expect(cache.get('c')).toEqual([1]);
});
