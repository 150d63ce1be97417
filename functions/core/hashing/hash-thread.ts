/**
 * A thread that only hashes (hash-jobs.ts), for a service without the
 * local helper thread to do it (DYNAMODB_ENDPOINT set, or in tests).
 */
import { parentPort } from 'node:worker_threads';
import { hashJobs } from './hash-jobs.js';

const port = parentPort!;
port.on(
  'message',
  hashJobs((m, transfer = []) => port.postMessage(m, transfer)),
);
