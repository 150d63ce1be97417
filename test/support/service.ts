/**
 * Test fixtures: a real local service (embedded DynamoDB, IPFS node on disk,
 * three HTTP servers) in a temporary data directory, and clients for it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { loadConfig } from '../../functions/core/config.js';
import { startLocalService, type LocalService } from '../../functions/local/service.js';

export const BOOT = {
  accessKeyId: 'CAIRNTESTKEY00000001',
  secretAccessKey: 'test-secret-key-0123456789abcdefghijklmn',
  apiToken: 'cairn_test_token_0123456789abcdefghijklmnop',
};

/**
 * A free loopback port. Asking the kernel for any port and closing it races
 * other jest workers doing the same (the kernel hands the same ephemeral
 * ports around), so each worker takes ports from its own range below the
 * kernel's ephemeral range (32768 and up), in turn, skipping any in use.
 */
const PORTS_PER_WORKER = 1200;
let nextPort = 0;

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  const worker = Number(process.env.JEST_WORKER_ID ?? 0) % 10;
  const base = 20000 + worker * PORTS_PER_WORKER;
  for (let tries = 0; tries < PORTS_PER_WORKER; tries++) {
    const port = base + (nextPort++ % PORTS_PER_WORKER);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port in ${base}-${base + PORTS_PER_WORKER - 1}`);
}

/**
 * The environment of a test service (in this process or a child): its data
 * directory, three free ports, the BOOT account, warnings only; `extra` wins.
 */
export async function serviceEnv(dataDir: string, extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    CAIRN_DATA_DIR: dataDir,
    CAIRN_API_PORT: String(await freePort()),
    CAIRN_S3_PORT: String(await freePort()),
    CAIRN_GATEWAY_PORT: String(await freePort()),
    CAIRN_BOOTSTRAP_ACCESS_KEY: BOOT.accessKeyId,
    CAIRN_BOOTSTRAP_SECRET_KEY: BOOT.secretAccessKey,
    CAIRN_BOOTSTRAP_API_TOKEN: BOOT.apiToken,
    CAIRN_LOG_LEVEL: 'warn',
    ...extra,
  };
}

export interface TestService extends LocalService {
  dataDir: string;
  /** The environment that points a Lambda handler in this process at the same data. */
  env: Record<string, string>;
  s3(credentials?: { accessKeyId: string; secretAccessKey: string }, extra?: Partial<S3ClientConfig>): S3Client;
  close(): Promise<void>;
}

export async function startTestService(extraEnv: Record<string, string> = {}, dataDir?: string): Promise<TestService> {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'cairn-test-')));
  const env = await serviceEnv(dir, extraEnv);
  const service = await startLocalService(loadConfig(env));
  return {
    ...service,
    dataDir: dir,
    env: { ...env, DYNAMODB_ENDPOINT: service.config.dynamodb.endpoint! },
    s3(credentials = BOOT, extra = {}) {
      return new S3Client({
        endpoint: service.endpoints.s3,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials,
        ...extra,
      });
    },
    async close() {
      await service.stop();
      if (!dataDir) await rm(dir, { recursive: true, force: true });
    },
  };
}
