/** onceUntilFailure: what a Lambda container builds once is shared, and a build that failed is tried again by the next call. */
import { onceUntilFailure } from '../../functions/core/once-until-failure.js';

test('the first call builds; later and concurrent calls share that build', async () => {
  let builds = 0;
  const get = onceUntilFailure(async () => ({ n: ++builds }));
  const [a, b] = await Promise.all([get(), get()]);
  expect(a).toBe(b);
  expect(await get()).toBe(a);
  expect(builds).toBe(1);
});

test('a build that fails fails its callers, and the next call builds again', async () => {
  let builds = 0;
  const get = onceUntilFailure(async () => {
    builds++;
    if (builds === 1) throw new Error('the secret could not be read (throttled)');
    return `services #${builds}`;
  });
  // Two requests that arrived during the failed build both see its error: one build, not one each.
  const first = await Promise.allSettled([get(), get()]);
  expect(first.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  expect(builds).toBe(1);
  await expect(get()).resolves.toBe('services #2');
  await expect(get()).resolves.toBe('services #2');
  expect(builds).toBe(2);
});

test('a call that came in after a failure started the next build: the old failure does not drop it', async () => {
  let fail!: (err: Error) => void;
  let builds = 0;
  const get = onceUntilFailure(() => {
    builds++;
    return builds === 1 ? new Promise<string>((_, reject) => (fail = reject)) : Promise.resolve('second');
  });
  const failing = get();
  fail(new Error('first build failed'));
  await expect(failing).rejects.toThrow('first build failed');
  const next = get();
  await expect(next).resolves.toBe('second');
  expect(get()).toBe(next);
  expect(builds).toBe(2);
});
