/**
 * The embedded database's thread (see embedded.ts): opens the engine and
 * its HTTP endpoint, then answers the requests the service's thread posts.
 * Bodies travel as JSON text, parsed and written here.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { serveEmbeddedDynamo, type FromEngine, type ToEngine } from './embedded.js';

const port = parentPort!;
const { dataDir, host } = workerData as { dataDir: string; host: string };
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
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(m.body);
    } catch {
      post({ id: m.id, status: 400, body: JSON.stringify({ __type: 'com.amazon.coral.service#SerializationException' }) });
      return;
    }
    served.execute(m.op, body).then(
      (out) => post({ id: m.id, status: out.status, body: JSON.stringify(out.json) }),
      (err: Error) => post({ id: m.id, status: 500, body: JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: err.message }) }),
    );
  });
  post({ ready: served.endpoint });
} catch (err) {
  post({ failed: (err as Error).stack ?? String(err) });
}
