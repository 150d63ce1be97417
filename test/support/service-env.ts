/**
 * What a test service is started with (its account, ports and environment),
 * apart from the service itself: a benchmark's or a test's client process
 * that runs the service as a child imports this without loading the
 * service's modules (Helia and libp2p alone make its heap several times
 * larger, and every garbage collection, with it its socket reads, slower).
 */
import { createServer } from 'node:net';

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
/** Where this process starts in its range: at random, so two jest runs at once (two checkouts, a helper's run) rarely probe the same ports in step. */
let nextPort = Math.floor(Math.random() * PORTS_PER_WORKER);

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
 * directory, three free ports, the BOOT account, warnings only, and private
 * outbound addresses allowed (the tests' git servers and notification
 * receivers listen on 127.0.0.1), and no preview pictures: each deploy's
 * picture is a Chromium page load beside the next test's work (a third of
 * deploys.test.ts's time), so the suites that check pictures ask for them
 * with CAIRN_PREVIEW=on; and the gateway on one thread; `extra` wins.
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
    CAIRN_OUTBOUND_PRIVATE: 'allow',
    CAIRN_PREVIEW: 'off',
    // The gateway on the main thread alone: each thread is another isolate to start beside every suite's service;
    // the suites of the gateway's threads ask for them (test/api/site-hits.test.ts).
    CAIRN_GATEWAY_THREADS: '1',
    ...extra,
  };
}
