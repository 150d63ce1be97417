/**
 * The embedded DynamoDB-compatible server (dynalite on LevelDB under the data
 * directory), started in-process on a loopback port behind a small front
 * that adds transactions (see transactions.ts). Local only: no Lambda
 * handler imports this module.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Server } from 'node:http';
import { transactionFront } from './transactions.js';

export interface EmbeddedDynamo {
  endpoint: string;
  close(): Promise<void>;
}

export async function startEmbeddedDynamo(dataDir: string, host = '127.0.0.1'): Promise<EmbeddedDynamo> {
  const { default: dynalite } = await import('dynalite');
  const path = join(dataDir, 'dynamodb');
  await mkdir(path, { recursive: true });
  const server: Server = dynalite({ path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const front = transactionFront({ host, port });
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(0, host, () => resolve());
  });
  const frontAddr = front.address();
  const frontPort = typeof frontAddr === 'object' && frontAddr ? frontAddr.port : 0;
  const close = (s: Server) =>
    new Promise<void>((resolve) => {
      s.closeAllConnections?.();
      s.close(() => resolve());
    });
  return {
    endpoint: `http://${host}:${frontPort}`,
    close: async () => {
      await close(front);
      await close(server);
    },
  };
}
