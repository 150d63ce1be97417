/**
 * The stores' time-bounded cache (bucket records, opened secrets): a value
 * is answered until its time is up and never after, a writer's delete is
 * seen at once, a load's answer is kept only when there is one, and past
 * `max` entries the least recently used goes first.
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
