/** The pool of lent read buffers and the lending protocol of response bodies (buffer-pool.ts). */
import { BufferPool, lendable, lentChunks } from '../../functions/core/buffer-pool.js';

test('memory given back is what the next take gets; a buffer is exactly the length asked', () => {
  const pool = new BufferPool(1024, 4);
  const a = pool.take(1000);
  expect(a.length).toBe(1000);
  expect(a.buffer.byteLength).toBe(1024);
  pool.give(a.subarray(10, 20)); // any view of it gives the memory back
  const b = pool.take(512);
  expect(b.buffer).toBe(a.buffer);
  expect(b.length).toBe(512);
  expect(pool.stats).toEqual({ created: 1, reused: 1 });
});

test('memory is never lent twice at once: a second give, or a give of memory the pool did not lend, is ignored', () => {
  const pool = new BufferPool(1024, 4);
  const a = pool.take(100);
  pool.give(a);
  pool.give(a); // again: must not put the same memory on the free list twice
  pool.give(Buffer.alloc(100)); // not the pool's
  pool.give(new Uint8Array(new ArrayBuffer(1024))); // the pool's size, still not the pool's
  const first = pool.take(100);
  const second = pool.take(100);
  expect(first.buffer).toBe(a.buffer);
  expect(second.buffer).not.toBe(a.buffer);
  expect(pool.stats).toEqual({ created: 2, reused: 1 });
});

test('a take larger than the pool size gets a buffer of its own, which a give ignores', () => {
  const pool = new BufferPool(1024, 4);
  const big = pool.take(4096);
  expect(big.length).toBe(4096);
  pool.give(big);
  expect(pool.take(10).buffer).not.toBe(big.buffer);
  expect(pool.stats.created).toBe(1);
});

test('at most `keep` buffers are kept for reuse', () => {
  const pool = new BufferPool(64, 2);
  const taken = [pool.take(64), pool.take(64), pool.take(64)];
  for (const t of taken) pool.give(t);
  const again = [pool.take(64), pool.take(64), pool.take(64)];
  expect(again.filter((t) => taken.some((u) => u.buffer === t.buffer))).toHaveLength(2);
  expect(pool.stats).toEqual({ created: 4, reused: 2 });
});

test('a lendable stream lends its chunks once, only while unread; other streams lend nothing', async () => {
  const lent: Uint8Array[] = [];
  const make = () =>
    lendable(new ReadableStream<Uint8Array>({ pull: (c) => c.close() }), () => ({
      chunks: (async function* () {
        yield Uint8Array.of(1);
      })(),
      give: (chunk) => void lent.push(chunk),
    }));
  const stream = make();
  const first = lentChunks(stream);
  expect(first).toBeDefined();
  expect(await first!.chunks.next()).toEqual({ done: false, value: Uint8Array.of(1) });
  expect(lentChunks(stream)).toBeUndefined();

  const read = make();
  read.getReader(); // locked: someone reads it the usual way
  expect(lentChunks(read)).toBeUndefined();
  expect(lentChunks(new ReadableStream())).toBeUndefined();
  expect(lentChunks(null)).toBeUndefined();
});

test('lends() tells memory out on loan from memory given back or never lent', () => {
  const pool = new BufferPool(1024, 4);
  const a = pool.take(100);
  expect(pool.lends(a.subarray(5))).toBe(true);
  pool.give(a);
  expect(pool.lends(a)).toBe(false);
  expect(pool.lends(Buffer.alloc(10))).toBe(false);
});
