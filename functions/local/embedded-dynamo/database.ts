/**
 * The embedded database as the service's thread sees it: the engine
 * (engine.ts) opened as a job of the helper thread (../helper.ts), and two
 * ways in:
 * - `transport`: an AWS SDK request handler that passes each request's JSON
 *   to the engine's job, for DynamoDB clients in this process (the local
 *   service's own stores), plus the direct send (direct-client.ts).
 *   Requests are unsigned: there is no network to cross.
 * - `endpoint`: the engine's loopback HTTP server, for other processes and
 *   for Lambda handlers pointed at it with DYNAMODB_ENDPOINT.
 */
import type { InProcessTransport } from '../../core/data/dynamo.js';
import type { HelperThread } from '../helper.js';
import { sendDirectly } from './direct-client.js';
import type { EmbeddedEngine } from './engine.js';
import { perTurn, type EngineCall, type FromEngine, type ToEngine } from './messages.js';

export interface EmbeddedDynamo extends EmbeddedEngine {
  /** The loopback HTTP endpoint (DynamoDB's JSON protocol). */
  endpoint: string;
  /** For DynamoDB clients in this process: no sockets, no signing. */
  transport: InProcessTransport;
}

/** Opens the database under `dataDir` on the helper thread and serves it on a loopback port. */
export async function startEmbeddedDynamo(helper: HelperThread, dataDir: string, host = '127.0.0.1'): Promise<EmbeddedDynamo> {
  const channel = helper.start<ToEngine, FromEngine>('embedded-dynamo', { dataDir, host });
  const pending = new Map<number, (answer: { status: number; body: string }) => void>();
  let nextId = 0;
  let closed: (() => void) | undefined;
  let down: string | undefined;
  const endpoint = await new Promise<string>((resolve, reject) => {
    channel.onMessage((m) => {
      if ('answers' in m) {
        for (const answer of m.answers) {
          pending.get(answer.id)?.(answer);
          pending.delete(answer.id);
        }
      } else if ('ready' in m) resolve(m.ready);
      else if ('failed' in m) reject(new Error(`the embedded DynamoDB did not start: ${m.failed}`));
      else if ('closed' in m) closed?.();
    });
    channel.onDown((err) => {
      down = err.message;
      reject(new Error(`the embedded DynamoDB did not start: ${down}`));
      for (const answer of pending.values()) answer(errorAnswer(down));
      pending.clear();
      closed?.();
    });
  });
  const send = perTurn<EngineCall>((calls) => {
    if (!down) channel.post({ calls });
  });
  const call = (op: string, body: string) =>
    new Promise<{ status: number; body: string }>((resolve) => {
      if (down) return resolve(errorAnswer(down));
      const id = nextId++;
      pending.set(id, resolve);
      send({ id, op, body });
    });
  const transport: InProcessTransport = {
    sendDirectly: (doc, options) => sendDirectly(doc, call, options),
    requestHandler: {
      async handle(request: { headers: Record<string, string>; body?: unknown }) {
        const target = String(request.headers['x-amz-target'] ?? request.headers['X-Amz-Target'] ?? '');
        const body = request.body;
        const text =
          body instanceof Uint8Array
            ? Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')
            : typeof body === 'string'
              ? body
              : '{}';
        const answer = await call(target.split('.')[1] ?? '', text);
        const bytes = Buffer.from(answer.body);
        return {
          response: {
            statusCode: answer.status,
            headers: {
              'content-type': 'application/x-amz-json-1.0',
              'content-length': String(bytes.length),
              'x-amzn-requestid': 'embedded',
            },
            body: bytes,
          },
        };
      },
      updateHttpClientConfig() {},
      httpHandlerConfigs: () => ({}),
      destroy() {},
    },
  };
  return {
    endpoint,
    transport,
    async execute(op, body) {
      const answer = await call(op, JSON.stringify(body));
      return { status: answer.status, json: JSON.parse(answer.body) };
    },
    async close() {
      if (down) return;
      const done = new Promise<void>((resolve) => (closed = resolve));
      await new Promise((resolve) => setImmediate(resolve)); // calls of this turn go first
      channel.post({ close: true });
      await done;
      // The helper thread goes on (its other jobs): later calls are answered here.
      down = 'it was closed';
      channel.close();
    },
  };
}

function errorAnswer(why: string): { status: number; body: string } {
  return {
    status: 500,
    body: JSON.stringify({
      __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
      message: `the embedded DynamoDB is down: ${why}`,
    }),
  };
}
