/**
 * The GraphQL API under hostile concurrency, measured on `npm start`'s
 * server in a child process (issue 29): eight deploys with logs of the
 * largest size (4 MiB), and clients sending at once, round after round, the
 * issue's attack (20 aliases of a page of 100 deploys' logs: 500 after
 * 8.7 s and 2.4 GB, 3.9 GB for three at once, 3.4 GB still held after),
 * the largest queries that pass validation (pages of 10 deploys' logs,
 * which their real size then refuses) and the largest answers that are
 * given (16 MiB of logs), while a prober times the gateway and the S3 port.
 *
 * Every answer is the right one (the data whole, or the clear error), the
 * server's resident memory stays bounded during the attack, its live heap
 * after a full collection comes back to where it was before, the other
 * ports answer within a bound meanwhile, and nothing is logged at error
 * level. The deploys and logs are written through the stores by a service
 * in this process first (through the API they come only from real builds),
 * then the child serves the same data directory.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { deployLogKey } from '../../functions/core/ports/log-store.js';
import { MAX_LOG_BYTES } from '../../functions/core/logs/deploy-log.js';
import { startChildService, type ChildService } from '../support/child-service.js';
import { seedDeploys } from '../support/graphql.js';
import { connectInspector } from '../support/inspector.js';
import { BOOT, freePort, startTestService } from '../support/service.js';

const MiB = 1024 * 1024;
const DEPLOYS = 8;
const CLIENTS = 8;
const ROUNDS = 2;
/**
 * How far the server's resident memory may rise over its warm level while
 * under attack. What the answers may hold is 64 MiB of logs at once (the
 * gate); V8 keeps garbage of the strings read and written (4 MiB each,
 * never in the young generation) until its next full collection, and with
 * `npm start`'s flags that comes late (storage-soak.test.ts). Before the
 * byte budget one such request alone took 2.4 GB.
 */
const RSS_RISE_LIMIT_MIB = 512;
/** How much more the live heap may hold after the attack than before it, after a full collection. */
const LIVE_HEAP_GROWTH_LIMIT_MIB = 8;
/**
 * The slowest answer the gateway and the S3 port may give while the attack
 * runs (it was 7.6 s). Timed from a process of its own: this one is busy
 * parsing 16 MiB answers. The machine's two cores are shared with other
 * test runs, so this bounds stalls, not speed.
 */
const PROBE_LIMIT_MS = 1000;
/** The server's event loop: the 99th percentile of its delays during the attack (the goal is no turn over 50 ms; this machine is shared). */
const LOOP_DELAY_P99_LIMIT_MS = 100;
/**
 * The timing bounds are judged only on a machine that is not oversubscribed
 * (1-minute load average at most 1.5 runnable threads per core, before and
 * after). At a load of 16-22 on two cores (other test runs) the server gets
 * a fraction of a core: during the attack its event loop lagged p99
 * 240-490 ms, at most about 2 s, and the slowest probe took 2.5-4.4 s,
 * against p99 42 ms, at most 80 ms and 370 ms in the control window with
 * only the prober asking: eight answers' queued pieces and the collections
 * of their garbage, stretched by the CPU the server does not get. The
 * numbers are written out either way; the CPU each piece of an answer
 * costs is bounded in graphql-parts.test.ts, where the load does not count.
 */
const CALM_LOAD_PER_CORE = 1.5;
const calm = () => loadavg()[0]! <= CALM_LOAD_PER_CORE * availableParallelism();

/**
 * A process that asks each URL in turn, every 50 ms, until its stdin ends,
 * then prints how long each answer took.
 */
function startProber(urls: string[]) {
  const script = `
    const urls = ${JSON.stringify(urls)};
    const times = [];
    let running = true;
    process.stdin.on('data', () => {}).on('end', () => (running = false));
    (async () => {
      while (running) {
        for (const url of urls) {
          const started = performance.now();
          await fetch(url).then((r) => r.arrayBuffer());
          times.push(performance.now() - started);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      process.stdout.write(JSON.stringify(times));
    })();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const done = new Promise<number[]>((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(`the prober exited ${code}`)))),
  );
  return { stop: () => (child.stdin.end(), done) };
}

const rssMiB = (pid: number) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

let service: ChildService | undefined;
let dataDir: string;
afterAll(async () => {
  await service?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** The log of deploy `i`: lines of build output, ANSI colours and text beyond ASCII included, of exactly MAX_LOG_BYTES. */
function logOf(i: number): string {
  const line = `deploy ${i}: \u001b[32mcompiled\u001b[0m "src/page-é.tsx" in 12 ms\n`;
  const body = line.repeat(Math.floor(MAX_LOG_BYTES / Buffer.byteLength(line)));
  return body + 'x'.repeat(MAX_LOG_BYTES - Buffer.byteLength(body));
}

async function seed(dir: string): Promise<{ siteId: string; deployIds: string[] }> {
  const local = await startTestService({ CAIRN_GC_INTERVAL: '0' }, dir);
  try {
    const created = await fetch(local.endpoints.graphql, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: BOOT.apiToken },
      body: JSON.stringify({ query: 'mutation { createSite(input: { deploySettings: { source: { ipfs: {} } } }) { id teamId } }' }),
    }).then((r) => r.json() as Promise<{ data: { createSite: { id: string; teamId: string } } }>);
    const site = created.data.createSite;
    const deploys = await seedDeploys(local, site.id, DEPLOYS);
    for (const [i, d] of deploys.entries()) await local.services.deployLogs.write(deployLogKey(site.id, d.id), logOf(i));
    await local.services.sites.update(site.id, site.teamId, (s) => ({
      ...s,
      publishedDeployId: deploys[0]!.id,
      latestDeployId: deploys[1]!.id,
    }));
    return { siteId: site.id, deployIds: deploys.map((d) => d.id) };
  } finally {
    await local.close();
  }
}

test(`${CLIENTS} clients sending the largest GraphQL answers and the issue's attack at once: bounded memory, returned after, other ports answering`, async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cairn-graphql-memory-'));
  const { siteId, deployIds } = await seed(dataDir);
  const inspectorPort = await freePort();
  service = await startChildService({ dataDir, captureLog: true, nodeArgs: [`--inspect=127.0.0.1:${inspectorPort}`] });
  const inspector = await connectInspector(inspectorPort);
  const pid = service.pid;
  const endpoint = service.endpoints.graphql;
  const gql = async (query: string) => {
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: BOOT.apiToken },
      body: JSON.stringify({ query }),
    });
    return {
      status: res.status,
      body: (await res.json()) as { data?: any; errors?: Array<{ message: string; extensions: { code: string } }> },
    };
  };

  const attack = `{ ${Array.from({ length: 20 }, (_, i) => `d${i}: getDeploysBySite(siteId: "${siteId}", limit: 100) { deploys { log } }`).join(' ')} }`;
  const page = `{ getDeploysBySite(siteId: "${siteId}", limit: 10) { deploys { id log } } }`;
  const four = `{ ${deployIds
    .slice(0, 4)
    .map((d, i) => `d${i}: getDeployById(siteId: "${siteId}", deployId: "${d}") { id log }`)
    .join(' ')} }`;
  const site = `{ getSiteById(siteId: "${siteId}") { publishedDeploy { id log } latestDeploy { id log } } }`;
  const logs = new Map(deployIds.map((d, i) => [d, logOf(i)]));

  // Warm: every kind of request seen once, then the baseline.
  for (const q of [attack, page, four, site]) await gql(q);
  const baseline = await inspector.liveHeapBytes();
  const warmRss = rssMiB(pid);

  const outcomes: Record<string, number> = {};
  const note = (what: string) => (outcomes[what] = (outcomes[what] ?? 0) + 1);
  // The server's own event loop, measured inside it (10 ms resolution).
  const measureLoop = () =>
    inspector.evaluate(
      "globalThis.loopDelay = process.getBuiltinModule('node:perf_hooks').monitorEventLoopDelay({ resolution: 10 }); loopDelay.enable(); true",
    );
  const loopDelays = () =>
    inspector.evaluate<{ p50: number; p99: number; max: number }>(
      'loopDelay.disable(), { p50: loopDelay.percentile(50) / 1e6, p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 }',
    );
  const say = (l: { p50: number; p99: number; max: number }) =>
    `p50 ${l.p50.toFixed(0)} ms, p99 ${l.p99.toFixed(0)} ms, max ${l.max.toFixed(0)} ms`;
  // A control window: the same probes and measure with no GraphQL requests, for what the machine alone does.
  const calmBefore = calm();
  await measureLoop();
  const control = startProber([`${service.endpoints.gateway}/`, `${service.endpoints.s3}/`]);
  await new Promise((r) => setTimeout(r, 5000));
  const controlProbes = await control.stop();
  const controlLoop = await loopDelays();

  const prober = startProber([`${service.endpoints.gateway}/`, `${service.endpoints.s3}/`]);
  await measureLoop();
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMiB(pid))), 100);

  // A request the gate could not make room for within its wait (LIMITS.answerWaitMs)
  // is told so, to come back: on a loaded machine that happens, and it is right.
  const busy = (status: number, body: Awaited<ReturnType<typeof gql>>['body']) => {
    if (status !== 503) return false;
    expect(body.errors).toEqual([expect.objectContaining({ extensions: { code: 'SERVICE_UNAVAILABLE' } })]);
    note('busy: come back later');
    return true;
  };
  const client = async (n: number) => {
    for (let round = 0; round < ROUNDS; round++) {
      const kind = (n + round) % 4;
      if (kind === 0) {
        const { status, body } = await gql(attack);
        expect(status).toBe(400);
        expect(body.data).toBeUndefined();
        expect(body.errors).toEqual([
          expect.objectContaining({
            message: expect.stringContaining('exceeds the limit of 64 MiB'),
            extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED' }),
          }),
        ]);
        note('attack refused by its estimate');
      } else if (kind === 1) {
        const { status, body } = await gql(page);
        if (busy(status, body)) continue;
        expect(status).toBe(400);
        expect(body.data).toBeUndefined();
        expect(body.errors).toEqual([
          expect.objectContaining({
            message: expect.stringContaining('larger than the limit of 16 MiB'),
            extensions: expect.objectContaining({ code: 'RESPONSE_TOO_LARGE' }),
          }),
        ]);
        note('page of logs refused as read');
      } else if (kind === 2) {
        const { status, body } = await gql(four);
        if (busy(status, body)) continue;
        expect(status).toBe(200);
        for (const i of [0, 1, 2, 3]) expect(body.data[`d${i}`].log === logs.get(body.data[`d${i}`].id)).toBe(true);
        note('16 MiB of logs given');
      } else {
        const { status, body } = await gql(site);
        if (busy(status, body)) continue;
        expect(status).toBe(200);
        for (const d of [body.data.getSiteById.publishedDeploy, body.data.getSiteById.latestDeploy])
          expect(d.log === logs.get(d.id)).toBe(true);
        note("a site's two logs given");
      }
    }
  };
  const started = Date.now();
  try {
    await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(n)));
  } finally {
    clearInterval(sampler);
  }
  const probes = await prober.stop();
  const loop = await loopDelays();
  const seconds = (Date.now() - started) / 1000;
  const end = await inspector.liveHeapBytes();
  inspector.close();
  const slowest = Math.max(...probes);
  process.stderr.write(
    `graphql memory: ${JSON.stringify(outcomes)} in ${seconds.toFixed(1)} s; RSS ${warmRss.toFixed(0)} MiB warm, ${peakRss.toFixed(0)} MiB at most during; ` +
      `live heap ${(baseline / MiB).toFixed(1)} MiB before, ${(end / MiB).toFixed(1)} MiB after; ${probes.length} probes of the other ports, slowest ${slowest.toFixed(0)} ms; ` +
      `server event loop delay ${say(loop)}; with no GraphQL requests (5 s before): event loop ${say(controlLoop)}, slowest probe ${Math.max(...controlProbes).toFixed(0)} ms; ` +
      `load ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores\n`,
  );
  expect(Object.values(outcomes).reduce((a, b) => a + b, 0)).toBe(CLIENTS * ROUNDS);
  // Every kind of answer was given at least once.
  expect(Object.keys(outcomes).filter((k) => !k.startsWith('busy')).length).toBe(4);
  expect(peakRss - warmRss).toBeLessThan(RSS_RISE_LIMIT_MIB);
  expect((end - baseline) / MiB).toBeLessThan(LIVE_HEAP_GROWTH_LIMIT_MIB);
  expect(probes.length).toBeGreaterThan(4);
  if (calmBefore && calm()) {
    expect(slowest).toBeLessThan(PROBE_LIMIT_MS);
    expect(loop.p99).toBeLessThan(LOOP_DELAY_P99_LIMIT_MS);
  } else process.stderr.write('graphql memory: the machine is oversubscribed: the timing bounds were not judged\n');
  expect(service.child.exitCode).toBeNull();
  expect(
    service
      .log()
      .split('\n')
      .filter((l) => l.includes('"level":"error"')),
  ).toEqual([]);
}, 300_000);
