/**
 * A 64 KiB `_redirects` of 10,000 rules, parsed while the event loop keeps
 * turning (functions/core/hosting/redirects.ts, parseRedirectsInSlices): the
 * same rules and the same refusals as the synchronous parse, without a
 * gap of 50 ms.
 */
import { matchRedirect, parseRedirects, parseRedirectsInSlices, SiteFileError } from '../../functions/core/hosting/redirects.js';
import { leastCpuMs, leastStalled, stallsDuring } from '../support/event-loop.js';

/** 10,000 rules in under 64 KiB: the most the file can hold. */
const TEN_THOUSAND = Array.from({ length: 10_000 }, (_, i) => (i % 20 ? '/a /b' : '/a/* /:splat')).join('\n');

test('10,000 rules parse in slices to exactly what the synchronous parse gives', async () => {
  expect(Buffer.byteLength(TEN_THOUSAND)).toBeLessThanOrEqual(64 * 1024);
  const sliced = await parseRedirectsInSlices(TEN_THOUSAND);
  expect(sliced).toHaveLength(10_000);
  expect(sliced).toEqual(parseRedirects(TEN_THOUSAND));
  expect(matchRedirect(sliced, '/a/x/y')?.location).toBe('/x/y');
  expect(sliced[9_999]).toMatchObject({ line: 10_000, from: '/a', to: '/b', status: 301 });
});

test('a bad line deep in the file is refused naming it, as the synchronous parse does', async () => {
  const lines = TEN_THOUSAND.split('\n');
  lines[8_000] = '/only-a-source';
  const bad = lines.join('\n');
  const line = 8_001;
  await expect(parseRedirectsInSlices(bad)).rejects.toThrow(
    new SiteFileError('_redirects', line, 'a rule needs a source path and a target', '/only-a-source'),
  );
  expect(() => parseRedirects(bad)).toThrow(`_redirects line ${line}: a rule needs a source path`);
  await expect(parseRedirectsInSlices('#'.repeat(64 * 1024 + 1))).rejects.toThrow(/redirects file size cannot exceed 65536 bytes/);
});

test('parsing 10,000 rules five times over (five sites loaded at once) never holds the event loop for 50 ms', async () => {
  const runs = await leastStalled(
    () => TEN_THOUSAND,
    async (text) => {
      for (let i = 0; i < 5; i++) await parseRedirectsInSlices(text);
    },
  );
  const stalls = { cpuMs: leastCpuMs(runs) };
  expect(stalls.cpuMs).toBeLessThan(50);
  // The synchronous parse, for scale: one gap as long as all of it. In wall
  // time: its CPU time less the collections within it can come to nothing on
  // a loaded machine, where a collection's wall time includes waiting for a
  // core (a run at load 8 measured 0 ms here); a gap's wall time never falls
  // below the work done in it.
  const whole = await stallsDuring(async () => {
    for (let i = 0; i < 5; i++) parseRedirects(TEN_THOUSAND);
  });
  expect(whole.wallMs).toBeGreaterThan(stalls.cpuMs);
});
