/**
 * The relay between a gateway thread and the main thread
 * (functions/local/gateway-relay.ts), its two ends joined directly, each
 * message delivered on a later turn as a port would: what a hostile client
 * can do through a thread. A reader that stops reading stops the main
 * thread's reads of the answer (a chunk per pull, nothing read ahead); a
 * sender that trickles its body is pulled only as the handler reads it; a
 * client gone mid-answer cancels the answer's source and aborts the
 * handler's signal; a handler that fails answers a plain failure; and the
 * end of an exchange leaves nothing behind on either side.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '../../functions/core/logger.js';
import type { HttpHandler, HttpRequest } from '../../functions/core/http/types.js';
import { RelayClient, RelayServer, type ToMain, type ToThread } from '../../functions/local/gateway-relay.js';

const logger = createLogger('error', {}, () => {});

/** A client and a server joined as two threads would be: each message arrives on a later turn. */
function joined(handler: HttpHandler) {
  const toMain: ToMain[] = [];
  const toThread: ToThread[] = [];
  const ends: { server?: RelayServer } = {};
  const client = new RelayClient((m) => {
    toMain.push(m);
    setImmediate(() => ends.server!.receive(m));
  });
  const server = new RelayServer(
    handler,
    (m) => {
      toThread.push(m);
      setImmediate(() => client.receive(m));
    },
    logger,
  );
  ends.server = server;
  return { client, server, toMain, toThread };
}

/** A body of `chunks` chunks of `size` bytes that counts how many the relay pulled, and whether it was cancelled. */
function countedBody(chunks: number, size = 64 * 1024) {
  const seen = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (seen.pulled === chunks) return controller.close();
        seen.pulled++;
        controller.enqueue(new Uint8Array(size).fill(seen.pulled & 0xff));
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, seen };
}

function request(init: Partial<HttpRequest> = {}): HttpRequest {
  return {
    method: 'GET',
    rawPath: '/ipfs/bafy/big.bin',
    rawQuery: '',
    headers: new Headers({ host: 'localhost' }),
    body: null,
    signal: new AbortController().signal,
    ...init,
  };
}

test('a reader that stops reading stops the main thread reading the answer: nothing is read ahead', async () => {
  const source = countedBody(1000);
  const { client } = joined(async () => new Response(source.stream, { headers: { 'content-type': 'application/octet-stream' } }));
  const response = await client.handler(request());
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  for (let i = 0; i < 3; i++) expect((await reader.read()).value!.byteLength).toBe(64 * 1024);
  // The reader stops: however long it waits, the source is not read on.
  await sleep(200);
  const pulled = source.seen.pulled;
  expect(pulled).toBeLessThanOrEqual(4);
  await sleep(200);
  expect(source.seen.pulled).toBe(pulled);
  // It reads again: one more pull per chunk taken.
  for (let i = 0; i < 5; i++) await reader.read();
  await sleep(50);
  expect(source.seen.pulled).toBeLessThanOrEqual(pulled + 5 + 1);
  await reader.cancel();
});

test('a client gone mid-answer: the answer is cancelled at its source, the handler aborted, and nothing is left', async () => {
  const source = countedBody(1000);
  let signal!: AbortSignal;
  const { client, server, toMain } = joined(async (req) => {
    signal = req.signal;
    return new Response(source.stream);
  });
  const door = new AbortController();
  const response = await client.handler(request({ signal: door.signal }));
  const reader = response.body!.getReader();
  await reader.read();
  // What the door does when the socket closes: aborts the request and cancels the answer's body.
  door.abort();
  await reader.cancel();
  await sleep(50);
  expect(signal.aborted).toBe(true);
  expect(source.seen.cancelled).toBe(true);
  expect(source.seen.pulled).toBeLessThanOrEqual(3);
  expect(toMain.map((m) => m.t)).toContain('cancelRes');
  expect(client.inFlight).toBe(0);
  expect((server as unknown as { exchanges: Map<number, unknown> }).exchanges.size).toBe(0);
});

test('a body that trickles in is read only as the handler reads it: answered after one chunk, no more of it is pulled', async () => {
  let handlerRead = 0;
  let reads!: () => Promise<void>;
  const { client, server } = joined(async (req) => {
    const reader = req.body!.getReader();
    reads = async () => {
      const { value } = await reader.read();
      handlerRead += value?.byteLength ?? 0;
    };
    await reads();
    // Answered after one chunk, the rest never read (a refusal before the body is over).
    return new Response('refused', { status: 400 });
  });
  const sent = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        sent.pulled++;
        await sleep(5); // a slow sender
        controller.enqueue(new Uint8Array(1024));
      },
      cancel() {
        sent.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  const response = await client.handler(request({ method: 'PUT', body }));
  expect([response.status, await response.text()]).toEqual([400, 'refused']);
  await sleep(100);
  expect(handlerRead).toBe(1024);
  // The client side read one chunk for the handler, perhaps one more on its way, then stopped.
  expect(sent.pulled).toBeLessThanOrEqual(2);
  expect(client.inFlight).toBe(0);
  expect((server as unknown as { exchanges: Map<number, unknown> }).exchanges.size).toBe(0);
});

test('a handler that throws answers a plain failure to the thread, which its door answers as a 500', async () => {
  const { client, toThread } = joined(async () => {
    throw new Error('secret detail');
  });
  await expect(client.handler(request())).rejects.toThrow('the gateway failed: Internal Server Error');
  // Nothing of the error itself crossed.
  expect(JSON.stringify(toThread)).not.toContain('secret detail');
  expect(client.inFlight).toBe(0);
});
