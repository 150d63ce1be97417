/**
 * The local door (functions/core/http/node.ts) when a client hangs up
 * mid-body: the writer stops and lets the body go (a plain stream is
 * cancelled, lent chunks' iterator is closed) instead of waiting forever
 * for a drain that a destroyed response never emits; and an answer given
 * before the request body arrived lingers, bounded, so the client reads it.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
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

describe('an answer given before the body arrived (lingering close)', () => {
  const REFUSAL = JSON.stringify({ error: 'the body is larger than the limit' });
  let server: ReturnType<typeof createNodeServer>;
  let port: number;
  beforeAll(async () => {
    // Refuses every request without reading its body, as a 413 on a declared or streamed length does.
    server = createNodeServer(async () => new Response(REFUSAL, { status: 413 }), createLogger('error'));
    port = await listen(server, 0, '127.0.0.1');
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** Sends `head`, then `body` (all of it, at once, without waiting), and reads until the server closes: what came back and how long the server kept the socket after the answer. */
  function send(head: string, body: Buffer | undefined, keepSending = false): Promise<{ answer: string; error?: string; heldMs: number }> {
    return new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      const parts: Buffer[] = [];
      let answeredAt = 0;
      let error: string | undefined;
      let ticker: NodeJS.Timeout | undefined;
      socket.on('data', (part: Buffer) => {
        if (!answeredAt) answeredAt = Date.now();
        parts.push(part);
      });
      socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code));
      socket.on('close', () => {
        clearInterval(ticker);
        resolve({ answer: Buffer.concat(parts).toString('latin1'), error, heldMs: answeredAt ? Date.now() - answeredAt : -1 });
      });
      socket.write(head);
      if (body) socket.write(body);
      if (keepSending) ticker = setInterval(() => !socket.destroyed && socket.write(Buffer.alloc(1024)), 200);
    });
  }
  const head = (length: number, extra = '') =>
    `POST /imports/car HTTP/1.1\r\nhost: x\r\ncontent-type: application/vnd.ipld.car\r\ncontent-length: ${length}\r\n${extra}\r\n`;

  test('a client still sending its body reads the whole answer, not a reset', async () => {
    const body = Buffer.alloc(32 * 1024 * 1024);
    const { answer, error } = await send(head(body.length), body);
    expect(error).toBeUndefined();
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answer).toMatch(new RegExp(`\\r\\ncontent-length: ${REFUSAL.length}\\r\\n`, 'i'));
    expect(answer.endsWith(REFUSAL)).toBe(true);
  });

  test('the wait is bounded: a client that goes quiet is let go after about a second', async () => {
    const { answer, heldMs } = await send(head(1024 * 1024 * 1024), Buffer.alloc(1024));
    expect(answer.endsWith(REFUSAL)).toBe(true);
    expect(heldMs).toBeGreaterThanOrEqual(900);
    expect(heldMs).toBeLessThan(3000);
  });

  test('and a client that never stops sending is let go after about five seconds', async () => {
    const { answer, heldMs } = await send(head(1024 * 1024 * 1024), Buffer.alloc(1024), true);
    expect(answer.endsWith(REFUSAL)).toBe(true);
    expect(heldMs).toBeGreaterThanOrEqual(4500);
    expect(heldMs).toBeLessThan(8000);
  });

  test('a client waiting for 100 Continue has sent nothing: the socket closes with the answer', async () => {
    const { answer, heldMs } = await send(head(1024 * 1024, 'expect: 100-continue\r\n'), undefined);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain(REFUSAL);
    expect(heldMs).toBeLessThan(500);
  });
});
