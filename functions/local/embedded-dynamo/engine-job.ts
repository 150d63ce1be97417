/**
 * The embedded database as a job of the helper thread (../helper-thread.ts):
 * opens the engine and its HTTP endpoint (engine.ts), then answers the
 * calls the service's thread posts on the job's port (database.ts).
 * Bodies travel as JSON text, parsed and written here.
 */
import type { MessagePort } from 'node:worker_threads';
import { serveEmbeddedDynamo } from './engine.js';
import { perTurn, type EngineAnswer, type EngineCall, type FromEngine, type ToEngine } from './messages.js';

export async function serveEngineJob(port: MessagePort, { dataDir, host }: { dataDir: string; host: string }): Promise<void> {
  const post = (m: FromEngine) => port.postMessage(m);
  try {
    const served = await serveEmbeddedDynamo(dataDir, host);
    port.on('message', (m: ToEngine) => {
      if ('close' in m) {
        served.close().then(
          () => post({ closed: true }),
          () => post({ closed: true }),
        );
        return;
      }
      for (const call of m.calls) answerCall(call);
    });
    const answer = perTurn<EngineAnswer>((answers) => post({ answers }));
    const answerCall = ({ id, op, body: text }: EngineCall) => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(text);
      } catch {
        answer({ id, status: 400, body: JSON.stringify({ __type: 'com.amazon.coral.service#SerializationException' }) });
        return;
      }
      served.execute(op, body).then(
        (out) => answer({ id, status: out.status, body: JSON.stringify(out.json) }),
        (err: Error) =>
          answer({
            id,
            status: 500,
            body: JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: err.message }),
          }),
      );
    };
    post({ ready: served.endpoint });
  } catch (err) {
    post({ failed: (err as Error).stack ?? String(err) });
  }
}
