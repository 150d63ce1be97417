/**
 * The local site cache (functions/local/site-cache.ts): bounded in bytes,
 * least recently used out first, and a purge that drops one site's answers
 * and host entries only. The gateway asks it for a key and answers HIT when
 * it gets one, MISS otherwise (test/api/sites.test.ts).
 */
import { CID } from 'multiformats/cid';
import { LocalSiteCache } from '../../functions/local/site-cache.js';

const answer = (bytes: number) => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: new Uint8Array(bytes) });
const ROOT = CID.parse('bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi');

describe('LocalSiteCache', () => {
  test('past its byte bound the least recently used answers go; one read lately stays; the bound holds', () => {
    const bound = 64 * 1024;
    const cache = new LocalSiteCache(bound);
    expect(cache.maxEntryBytes).toBe(8 * 1024);
    cache.setResponse('a', 'a/0', answer(4000));
    for (let i = 1; i < 40; i++) {
      expect(cache.setResponse('a', `a/${i}`, answer(4000))).toBe(true);
      // Read on every round: the oldest entry stays the most recently used.
      expect(cache.getResponse('a/0')).toBeDefined();
      expect(cache.size).toBeLessThanOrEqual(bound);
    }
    expect(cache.getResponse('a/0')?.body.byteLength).toBe(4000);
    expect(cache.getResponse('a/39')).toBeDefined();
    // The old ones nobody read again were evicted: a MISS again for the gateway.
    expect(cache.getResponse('a/1')).toBeUndefined();
    expect(cache.getResponse('a/2')).toBeUndefined();
    const kept = Array.from({ length: 40 }, (_, i) => `a/${i}`).filter((k) => cache.getResponse(k) !== undefined);
    expect(kept.length).toBeGreaterThan(5);
    expect(kept.length).toBeLessThan(16);
    // Evicted keys leave the site's index too, so a purge never walks dead keys.
    expect(cache.entriesOf('a')).toBe(kept.length);
    expect(cache.size).toBeGreaterThan(bound - 2 * 4600);
  });

  test('an answer larger than the per-entry cap is not kept; the cap is an eighth of the bound, at most 4 MiB', () => {
    const cache = new LocalSiteCache(64 * 1024);
    expect(cache.setResponse('a', 'big', answer(8 * 1024 + 1))).toBe(false);
    expect(cache.getResponse('big')).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(new LocalSiteCache(256 * 1024 * 1024).maxEntryBytes).toBe(4 * 1024 * 1024);
  });

  test('purging a site drops its answers and host entries only, and counts the purge', async () => {
    const cache = new LocalSiteCache(1024 * 1024);
    cache.setResponse('a', 'a/1', answer(10));
    cache.setResponse('a', 'a/2', answer(10));
    cache.setResponse('b', 'b/1', answer(10));
    cache.setHost('slug-a', { siteId: 'a', deployId: 'd', root: ROOT }, cache.purges);
    cache.setHost('slug-b', { siteId: 'b', deployId: 'e', root: ROOT }, cache.purges);
    const before = cache.purges;
    await cache.purgeSite('a');
    expect([cache.getResponse('a/1'), cache.getResponse('a/2'), cache.getHost('slug-a')]).toEqual([undefined, undefined, undefined]);
    expect(cache.getResponse('b/1')).toBeDefined();
    expect(cache.getHost('slug-b')?.siteId).toBe('b');
    expect([cache.entriesOf('a'), cache.entriesOf('b')]).toEqual([0, 1]);
    // A host read before the purge is not kept after it.
    cache.setHost('slug-a', { siteId: 'a', deployId: 'old', root: ROOT }, before);
    expect(cache.getHost('slug-a')).toBeUndefined();
  });
});
