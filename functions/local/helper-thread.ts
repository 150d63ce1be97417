/**
 * The local service's helper thread (started by helper.ts): the embedded
 * database (embedded-dynamo/engine-job.ts) and the hashing of large uploads
 * (core/hashing/hash-jobs.ts), each a job on a port of its own. One thread
 * for both rather than one each: a thread costs 12 MiB or more of memory,
 * and the hashing fits between the database's queries.
 */
import { parentPort, type MessagePort } from 'node:worker_threads';
import { hashJobs } from '../core/hashing/hash-jobs.js';
import { serveEngineJob } from './embedded-dynamo/engine-job.js';
import type { HelperJob, StartJob } from './helper.js';

const JOBS: Record<HelperJob, (port: MessagePort, data: unknown) => void> = {
  'embedded-dynamo': (port, data) => void serveEngineJob(port, data as { dataDir: string; host: string }),
  hashing: (port) =>
    void port.on(
      'message',
      hashJobs((m, transfer = []) => port.postMessage(m, transfer)),
    ),
};

parentPort!.on('message', ({ start, port, data }: StartJob) => JOBS[start](port, data));
