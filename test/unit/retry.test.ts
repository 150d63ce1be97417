/**
 * The one retry helper: a bounded number of tries, pauses that grow and
 * stop growing at their cap, only retryable failures retried, and batch
 * rounds that end in a clear error instead of spinning.
 */
import { pauseBefore, retry, RetriesExhaustedError, untilNoneLeft } from '../../functions/core/retry.js';

test('pauses double from the base (or grow by it) up to the cap; full jitter stays below the bound', () => {
  expect([1, 2, 3, 4, 5, 6].map((n) => pauseBefore(n, { baseMs: 50, maxMs: 1000 }))).toEqual([50, 100, 200, 400, 800, 1000]);
  expect([1, 2, 3].map((n) => pauseBefore(n, { baseMs: 10, growth: 'linear' }))).toEqual([10, 20, 30]);
  const drawn = Array.from({ length: 200 }, () => pauseBefore(8, { baseMs: 10, maxMs: 640, jitter: 'full' }));
  expect(drawn.every((ms) => ms >= 0 && ms < 640)).toBe(true);
  expect(new Set(drawn).size).toBeGreaterThan(100);
});

test('a retryable failure is tried again until it succeeds, with the try number', async () => {
  const seen: number[] = [];
  const out = await retry(
    async (attempt) => {
      seen.push(attempt);
      if (attempt < 3) throw new Error('busy');
      return 'done';
    },
    { attempts: 5, baseMs: 1 },
  );
  expect(out).toBe('done');
  expect(seen).toEqual([1, 2, 3]);
});

test('after the last try its failure is thrown as it is; a failure the predicate refuses is thrown at once', async () => {
  let tries = 0;
  const busy = new Error('busy');
  await expect(
    retry(
      async () => {
        tries++;
        throw busy;
      },
      { attempts: 4, baseMs: 1 },
    ),
  ).rejects.toBe(busy);
  expect(tries).toBe(4);

  tries = 0;
  const fatal = new TypeError('fatal');
  await expect(
    retry(
      async () => {
        tries++;
        throw fatal;
      },
      { attempts: 4, baseMs: 1, retryable: (err) => !(err instanceof TypeError) },
    ),
  ).rejects.toBe(fatal);
  expect(tries).toBe(1);
});

test('batch rounds send what was left over until nothing is, and give up with a clear error after the bound', async () => {
  const sent: number[][] = [];
  await untilNoneLeft(
    [1, 2, 3, 4],
    async (pending) => {
      sent.push(pending);
      return pending.length > 1 ? pending.slice(1) : undefined;
    },
    { attempts: 10, baseMs: 1, what: 'a batch' },
  );
  expect(sent).toEqual([[1, 2, 3, 4], [2, 3, 4], [3, 4], [4]]);

  let rounds = 0;
  const never = untilNoneLeft(
    ['x'],
    async (pending) => {
      rounds++;
      return pending;
    },
    { attempts: 3, baseMs: 1, what: 'writing 1 deploy' },
  );
  await expect(never).rejects.toThrow(RetriesExhaustedError);
  await expect(never).rejects.toThrow('writing 1 deploy: DynamoDB left part of it unprocessed after 3 tries');
  expect(rounds).toBe(3);
});
