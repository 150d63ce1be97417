/**
 * The local door (functions/core/http/node.ts) when a client hangs up
 * mid-body: the writer stops and lets the body go (a plain stream is
 * cancelled, lent chunks' iterator is closed) instead of waiting forever
 * for a drain that a destroyed response never emits.
 */
import { request } from 'node:http';
import { lendable } from '../../functions/core/buffer-pool.js';
import { createNodeServer, listen } from '../../functions/core/http/node.js';
import { createLogger } from '../../functions/core/logger.js';

const CHUNK = 64 * 1024;
/** Serves one body from `body()`, reads its first chunk as a client, hangs up, and resolves once the body was let go. */
async function hangUpAfterFirstChunk(
  body: (clientGone: Promise<void>, released: () => void) => ReadableStream<Uint8Array>,
): Promise<boolean> {
  let released!: () => void;
  const wasReleased = new Promise<boolean>((resolve) => (released = () => resolve(true)));
  // eslint-disable-next-line prefer-const -- assigned below, once the server it waits on exists
  let clientGone!: Promise<void>;
  const server = createNodeServer(
    async () => new Response(body(clientGone, released), { headers: { 'content-length': String(64 * CHUNK) } }),
    createLogger('error'),
  );
  // Gone as the server sees it: its socket closed, and the close handlers node:http queued have run.
  clientGone = new Promise<void>((resolve) => server.once('connection', (socket) => socket.once('close', () => setImmediate(resolve))));
  const port = await listen(server, 0, '127.0.0.1');
  // The deadlines are cleared when the test ends: a pending timer kept jest from exiting after the run.
  const timers: NodeJS.Timeout[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
        res.once('data', () => {
          req.destroy();
          res.destroy();
          resolve();
        });
      });
      req.on('error', () => {});
      req.once('close', () => resolve());
      req.end();
      timers.push(setTimeout(() => reject(new Error('no first chunk')), 5000));
    });
    return await Promise.race([wasReleased, new Promise<boolean>((resolve) => timers.push(setTimeout(() => resolve(false), 3000)))]);
  } finally {
    timers.forEach(clearTimeout);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** A chunk, then, once the client is gone (and the server has seen it go), more chunks. */
async function* chunks(clientGone: Promise<void>, released: () => void): AsyncGenerator<Uint8Array> {
  try {
    yield new Uint8Array(CHUNK);
    await clientGone;
    for (let i = 0; i < 63; i++) yield new Uint8Array(CHUNK);
  } finally {
    released();
  }
}

test('a plain body is cancelled when the client hangs up while its next chunk is being read', async () => {
  const released = await hangUpAfterFirstChunk((clientGone, done) => {
    const it = chunks(clientGone, () => {});
    return new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          const next = await it.next();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        },
        cancel: () => done(),
      },
      { highWaterMark: 0 },
    );
  });
  expect(released).toBe(true);
});

test('lent chunks are let go (their iterator closed) when the client hangs up while the next one is being read', async () => {
  const given: Uint8Array[] = [];
  const released = await hangUpAfterFirstChunk((clientGone, done) =>
    lendable(new ReadableStream<Uint8Array>(), () => ({ chunks: chunks(clientGone, done), give: (chunk) => void given.push(chunk) })),
  );
  expect(released).toBe(true);
  expect(given.length).toBeLessThanOrEqual(1); // only what was written is given back
});
