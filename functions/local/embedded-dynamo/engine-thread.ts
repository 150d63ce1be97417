/**
 * The embedded database's thread (see engine.ts): opens the engine and
 * its HTTP endpoint, then answers the requests the service's thread posts,
 * and its hash jobs (core/hashing/hash-jobs.ts).
 * Bodies travel as JSON text, parsed and written here.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { perTurn, serveEmbeddedDynamo, type EngineAnswer, type EngineCall, type FromEngine, type ToEngine } from './engine.js';
import { hashJobs } from '../../core/hashing/hash-jobs.js';
import { isHashMessage, type ToHashThread } from '../../core/hashing/leaf-hasher.js';

const port = parentPort!;
const { dataDir, host } = workerData as { dataDir: string; host: string };
const post = (m: FromEngine) => port.postMessage(m);

try {
  const served = await serveEmbeddedDynamo(dataDir, host);
  // The thread also serves the service's hash jobs (leaf-hasher.ts): a second thread would cost its own memory.
  const hash = hashJobs((m, transfer = []) => port.postMessage(m, transfer));
  port.on('message', (m: ToEngine | ToHashThread) => {
    if (isHashMessage(m)) return hash(m);
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
      (err: Error) => answer({ id, status: 500, body: JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: err.message }) }),
    );
  };
  post({ ready: served.endpoint });
} catch (err) {
  post({ failed: (err as Error).stack ?? String(err) });
}
