/**
 * `npm run bench:s3`: Cairn's local server and s3rver 3.7.1 side by side in
 * the same run, driven by @aws-sdk/client-s3 v3 (default checksums on
 * what it sends; a GET's answer not checked, for every server alike, as
 * the client below says) over loopback. Every server runs as a child process the whole
 * time (so each one's peak RSS, VmHWM, is its own), and each step runs on
 * one server after another, for BENCH_ROUNDS rounds (starting one server
 * later each round), each time after a short unmeasured rehearsal; each
 * figure is the median of its rounds. Interleaving matters on a shared
 * machine: its speed drifts by tens of percent over minutes, and a server
 * measured after the others would meet a different machine. Each measured
 * step also prints the server's CPU time per operation, by thread, and the
 * client's, and after it each server's RSS then and its peak so far (where
 * the peak steps up). Then CID import throughput against SHA-256.
 *
 * A third server, "bare" (bare-s3.mjs), does no S3 work at all: its ratio to
 * s3rver is the ceiling this client and machine allow any server, printed
 * beside each goal.
 *
 * Cairn runs with `npm start`'s flags and the test environment
 * (test/support/service-env.ts: its ports, account and data directory,
 * warnings only, no preview pictures) but for the gateway's threads, which
 * are `npm start`'s default (one per core): their memory is counted.
 *
 * The client (this process) loads nothing of the service, and `npm run
 * bench:s3` runs it with two of the server's flags (npmStartArgs in
 * test/support/child-service.ts explains them): `--external-memory-accounted-in-global-limit`, without
 * which the client spends most of a big GET in full collections its own
 * socket buffers start and, the slowest party on two cores, sets the pace
 * whichever server it reads from; and a floor under its old generation's
 * limit, `--initial-old-space-size=128`.
 *
 * A step that fails prints "n/a (<error code>)" and the run goes on.
 *
 * Knobs (environment): BENCH_BIG_MIB (256), BENCH_SMALL_COUNT (2000),
 * BENCH_SMALL_KIB (4), BENCH_CONCURRENCY (16), BENCH_ROUNDS (3),
 * BENCH_SERVERS ("cairn,s3rver,bare", or "none" for the CID import alone;
 * "cairn+--FLAG+NAME=value" adds a Cairn run with extra Node flags and
 * environment, to compare settings in one run), BENCH_STEPS (a subset of
 * "bigPut,bigGet,smallPut,smallGet,list"; the GETs and the listing read what
 * the PUTs wrote), BENCH_CPU_PROF (a directory: Cairn runs with --cpu-prof
 * and writes its profile there on exit; with BENCH_STEPS, one phase at a time),
 * BENCH_NODE_FLAGS (extra V8 flags for both servers; by default Cairn runs
 * with the flags `npm start` passes, and s3rver as its own command does).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from '../test/support/service-env.js';
import { peakRssMiB, ROOT, rssMiB, startChildService, stopChild, waitForHttp } from '../test/support/child-service.js';

const num = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const BIG_BYTES = num('BENCH_BIG_MIB', 256) * 1024 * 1024;
const SMALL_COUNT = num('BENCH_SMALL_COUNT', 2000);
const SMALL_BYTES = num('BENCH_SMALL_KIB', 4) * 1024;
const CONCURRENCY = num('BENCH_CONCURRENCY', 16);
const ROUNDS = num('BENCH_ROUNDS', 3);
/** The unmeasured run before each step: 16 MiB of a big transfer, 100 small operations. */
const REHEARSAL_BYTES = Math.min(16 * 1024 * 1024, BIG_BYTES);
const REHEARSAL_COUNT = Math.min(100, SMALL_COUNT);
const SERVERS = (process.env.BENCH_SERVERS ?? 'cairn,s3rver,bare')
  .split(',')
  .map((s) => s.trim())
  .filter((s) => s && s !== 'none');
const CPU_PROF = process.env.BENCH_CPU_PROF;
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const STEPS = new Set((process.env.BENCH_STEPS ?? 'bigPut,bigGet,smallPut,smallGet,list').split(',').map((s) => s.trim()));
const skipped: Measure = { error: 'skipped' };

interface Server {
  name: string;
  endpoint: string;
  bucket: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  pid: number;
  stop(): Promise<void>;
}

/** A measured value, or why there is none. */
type Measure = { value: number } | { error: string };

interface Results {
  bigPut: Measure; // MB/s
  bigGet: Measure; // MB/s
  smallPut: Measure; // ops/s
  smallGet: Measure; // ops/s
  list: Measure; // ms
  rss: Measure; // MiB
}

const log = (line: string) => process.stderr.write(line + '\n');

/** Data directories are removed at the very end: on ext4, creating files soon after deleting thousands is slow, and that would land on whichever server runs next. */
const leftovers: string[] = [];

/** Starts Cairn; `extra` are more Node flags (`--...`) and environment settings (`NAME=value`). */
async function startCairn(extra: string[] = []): Promise<Server> {
  const extraFlags = extra.filter((e) => e.startsWith('--'));
  // npm start's gateway threads (one per core), not the test environment's one: each thread's memory is counted.
  // An empty value is an unset one to the service's configuration (functions/core/config.ts).
  const env: Record<string, string> = { CAIRN_GATEWAY_THREADS: '' };
  for (const setting of extra.filter((e) => !e.startsWith('--'))) {
    const [, name, value] = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(setting) ?? [];
    if (name === undefined) throw new Error(`"${setting}" in BENCH_SERVERS is neither a Node flag (--...) nor NAME=value`);
    env[name] = value!;
  }
  const cairn = await startChildService({
    env,
    nodeArgs: [...NODE_FLAGS, ...extraFlags, ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : [])],
  });
  leftovers.push(cairn.dataDir);
  return {
    name: extra.length ? `Cairn ${extra.join(' ')}` : 'Cairn',
    endpoint: cairn.endpoints.s3,
    bucket: 'default-bucket',
    credentials: cairn.credentials,
    pid: cairn.pid,
    stop: () => cairn.stop({ keepData: true }),
  };
}

async function startS3rver(): Promise<Server> {
  const dataDir = await mkdtemp(join(tmpdir(), 's3rver-bench-'));
  const port = await freePort();
  const bin = createRequire(import.meta.url).resolve('s3rver/bin/s3rver.js');
  // s3rver pages listings with a DES continuation token: OpenSSL 3 needs the legacy provider.
  const child = spawn(
    process.execPath,
    [
      ...NODE_FLAGS,
      '--openssl-legacy-provider',
      bin,
      '-d',
      dataDir,
      '-a',
      '127.0.0.1',
      '-p',
      String(port),
      '--silent',
      '--configure-bucket',
      'bench',
    ],
    { cwd: ROOT, stdio: ['ignore', 'inherit', 'pipe'] },
  );
  leftovers.push(dataDir);
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(child, 's3rver', endpoint);
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  return {
    name: 's3rver',
    endpoint,
    bucket: 'bench',
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    pid: child.pid!,
    stop: () => stopChild(child),
  };
}

/** The ceiling: a server that does no S3 work at all (see bare-s3.mjs). */
async function startBare(): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, [...NODE_FLAGS, join(ROOT, 'bench/bare-s3.mjs')], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the bare server exited (${code})`)));
    child.stdout!.once('data', () => resolve());
  });
  return {
    name: 'bare',
    endpoint: `http://127.0.0.1:${port}`,
    bucket: 'bench',
    credentials: { accessKeyId: 'BARE', secretAccessKey: 'BARE' },
    pid: child.pid!,
    stop: () => stopChild(child),
  };
}

function errorCode(err: unknown): string {
  const e = err as { name?: string; Code?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e?.$metadata?.httpStatusCode;
  const code = e?.Code ?? e?.name ?? e?.code ?? 'Error';
  return status ? `${code} ${status}` : code === 'Error' ? String(e?.message ?? err).slice(0, 60) : code;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** CPU time (user + system, ms) of each of a process's threads, by thread name. */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const name =
        stat
          .slice(stat.indexOf('(') + 1, close)
          .replace(/[0-9]+$/, '')
          .trim() || 'thread';
      const fields = stat.slice(close + 2).split(' ');
      const ms = (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime, stime
      out.set(name, (out.get(name) ?? 0) + ms);
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** "main 812, libuv-worker 95, ..." in CPU microseconds per operation, busiest thread first. */
function cpuPerOp(before: Map<string, number>, after: Map<string, number>, ops: number): string {
  const rows = [...after].map(([name, ms]) => [name, ms - (before.get(name) ?? 0)] as const).filter(([, ms]) => ms > 0);
  const total = rows.reduce((sum, [, ms]) => sum + ms, 0);
  const per = (ms: number) => ((ms * 1000) / ops).toFixed(0);
  return `server CPU ${per(total)} µs/op (${rows
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${per(ms)}`)
    .join(', ')})`;
}

let serverPid = 0;

async function measure(label: string, run: () => Promise<number>, step?: keyof Results, ops = 1): Promise<Measure> {
  if (step && !STEPS.has(step)) return skipped;
  try {
    const before = serverPid ? threadCpu(serverPid) : undefined;
    const client = process.cpuUsage();
    const value = await run();
    const clientUs = process.cpuUsage(client);
    const clientPerOp = ((clientUs.user + clientUs.system) / ops).toFixed(0);
    const cpu = before ? `  [${cpuPerOp(before, threadCpu(serverPid), ops)}; client ${clientPerOp} µs/op]` : '';
    log(`    ${label}: ${value.toFixed(1)}${cpu}`);
    return { value };
  } catch (err) {
    log(`    ${label}: failed (${errorCode(err)})`);
    return { error: errorCode(err) };
  }
}

async function drain(body: unknown): Promise<number> {
  let n = 0;
  for await (const chunk of body as AsyncIterable<Uint8Array>) n += chunk.byteLength;
  return n;
}

/** Runs `count` jobs on `workers` concurrent clients; returns elapsed ms. */
async function parallel(count: number, workers: number, job: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < count) await job(next++);
    }),
  );
  return performance.now() - started;
}

/** The client and keys one server is driven with. */
interface Target {
  server: Server;
  s3: S3Client;
  results: Partial<Record<keyof Results, number[]>>;
  failed: Partial<Record<keyof Results, string>>;
}

async function warmUp(t: Target, big: Buffer, small: Buffer): Promise<void> {
  const { s3 } = t;
  const Bucket = t.server.bucket;
  // The JIT and connection pool of both sides, outside any measurement.
  await parallel(100, CONCURRENCY, async (i) => {
    await s3.send(new PutObjectCommand({ Bucket, Key: `warmup/${i}`, Body: small.subarray(i * SMALL_BYTES, (i + 1) * SMALL_BYTES) }));
    await drain((await s3.send(new GetObjectCommand({ Bucket, Key: `warmup/${i}` }))).Body);
  }).catch(() => {});
  await s3.send(new PutObjectCommand({ Bucket, Key: 'warmup/big', Body: big.subarray(0, 16 * 1024 * 1024) })).catch(() => {});
}

/** A small unmeasured run of a step's kind of work (see step()). */
async function rehearse(t: Target, name: keyof Results, big: Buffer, small: Buffer): Promise<void> {
  const { s3 } = t;
  const Bucket = t.server.bucket;
  const body = (i: number) => small.subarray(i * SMALL_BYTES, (i + 1) * SMALL_BYTES);
  if (name === 'bigPut')
    await s3.send(new PutObjectCommand({ Bucket, Key: 'rehearsal/big', Body: big.subarray(BIG_BYTES - REHEARSAL_BYTES) }));
  if (name === 'bigGet') await drain((await s3.send(new GetObjectCommand({ Bucket, Key: 'warmup/big' }))).Body);
  if (name === 'smallPut' || name === 'smallGet') {
    await parallel(REHEARSAL_COUNT, CONCURRENCY, async (i) => {
      if (name === 'smallPut') await s3.send(new PutObjectCommand({ Bucket, Key: `rehearsal/${i}`, Body: body(i) }));
      else await drain((await s3.send(new GetObjectCommand({ Bucket, Key: `warmup/${i}` }))).Body);
    });
  }
  if (name === 'list') await s3.send(new ListObjectsV2Command({ Bucket, Prefix: 'warmup/', MaxKeys: 1000 }));
}

/** One measurement of one step on one server, in round `round` (each round writes its own keys). */
async function step(t: Target, name: keyof Results, round: number, big: Buffer, small: Buffer): Promise<void> {
  const { s3 } = t;
  const Bucket = t.server.bucket;
  const smallKey = (i: number) => `small/${round}/${String(i).padStart(6, '0')}`;
  const smallBody = (i: number) => small.subarray(i * SMALL_BYTES, (i + 1) * SMALL_BYTES);
  const runs: Record<string, [label: string, ops: number, run: () => Promise<number>]> = {
    bigPut: [
      `PUT ${BIG_BYTES / 2 ** 20} MiB, MB/s`,
      1,
      async () => {
        // New bytes in every 4 KiB, so no round re-uploads blocks Cairn already has (it stores a block once).
        for (let at = round % 4096; at < big.length; at += 4096) big[at] = (big[at]! + 1) & 0xff;
        const started = performance.now();
        await s3.send(new PutObjectCommand({ Bucket, Key: `big/${round}`, Body: big }));
        return BIG_BYTES / 1e6 / ((performance.now() - started) / 1000);
      },
    ],
    bigGet: [
      `GET ${BIG_BYTES / 2 ** 20} MiB, MB/s`,
      1,
      async () => {
        const started = performance.now();
        const out = await s3.send(new GetObjectCommand({ Bucket, Key: `big/${round}` }));
        const n = await drain(out.Body);
        if (n !== BIG_BYTES) throw new Error(`GET returned ${n} bytes, not ${BIG_BYTES}`);
        return BIG_BYTES / 1e6 / ((performance.now() - started) / 1000);
      },
    ],
    smallPut: [
      `PUT ${SMALL_COUNT} x ${SMALL_BYTES / 1024} KiB, ops/s`,
      SMALL_COUNT,
      async () => {
        const ms = await parallel(SMALL_COUNT, CONCURRENCY, async (i) => {
          await s3.send(new PutObjectCommand({ Bucket, Key: smallKey(i), Body: smallBody(i) }));
        });
        return SMALL_COUNT / (ms / 1000);
      },
    ],
    smallGet: [
      `GET ${SMALL_COUNT} x ${SMALL_BYTES / 1024} KiB, ops/s`,
      SMALL_COUNT,
      async () => {
        const ms = await parallel(SMALL_COUNT, CONCURRENCY, async (i) => {
          const out = await s3.send(new GetObjectCommand({ Bucket, Key: smallKey(i) }));
          const n = await drain(out.Body);
          if (n !== SMALL_BYTES) throw new Error(`GET ${smallKey(i)} returned ${n} bytes`);
        });
        return SMALL_COUNT / (ms / 1000);
      },
    ],
    list: [
      `list ${SMALL_COUNT} keys, ms`,
      1,
      async () => {
        const started = performance.now();
        let token: string | undefined;
        let keys = 0;
        do {
          const page = await s3.send(
            new ListObjectsV2Command({ Bucket, Prefix: `small/${round}/`, MaxKeys: 1000, ContinuationToken: token }),
          );
          keys += page.Contents?.length ?? 0;
          token = page.IsTruncated ? page.NextContinuationToken : undefined;
        } while (token);
        const ms = performance.now() - started;
        if (keys !== SMALL_COUNT) throw new Error(`listed ${keys} keys, not ${SMALL_COUNT}`);
        return ms;
      },
    ],
  };
  const [label, ops, run] = runs[name]!;
  if (t.failed[name]) return;
  // The same kind of work, briefly and unmeasured, first: while the other
  // server ran, this one sat idle long enough for V8 to drop compiled code,
  // and recompiling it (V8's threads, up to a second of CPU) would
  // otherwise land in the measurement.
  await rehearse(t, name, big, small).catch(() => {});
  serverPid = t.server.pid;
  const m = await measure(`${t.server.name}, round ${round}: ${label}`, run, name, ops);
  if ('value' in m) (t.results[name] ??= []).push(m.value);
  else t.failed[name] = m.error;
  logRss(t, `after round ${round}'s ${name}`);
}

/** The server's memory now and its peak so far: where its peak RSS steps up, phase by phase. */
function logRss(t: Target, when: string): void {
  try {
    log(`      ${t.server.name} RSS ${when}: ${rssMiB(t.server.pid).toFixed(0)} MiB (peak ${peakRssMiB(t.server.pid).toFixed(0)})`);
  } catch {
    // the server has exited: its step says why
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Each server's medians over the rounds, and its peak RSS. */
function summarize(t: Target): Results {
  const out = {} as Results;
  for (const name of ['bigPut', 'bigGet', 'smallPut', 'smallGet', 'list'] as const) {
    const values = t.results[name];
    out[name] = t.failed[name] ? { error: t.failed[name]! } : values?.length ? { value: median(values) } : skipped;
  }
  try {
    out.rss = { value: peakRssMiB(t.server.pid) };
  } catch (err) {
    out.rss = { error: errorCode(err) };
  }
  return out;
}

const fmt = (m: Measure | undefined, digits = 0) => (!m ? '-' : 'value' in m ? m.value.toFixed(digits) : `n/a (${m.error})`);

function ratioCell(a: Measure | undefined, b: Measure | undefined): { text: string; value?: number } {
  if (!a || !b || !('value' in a) || !('value' in b) || b.value === 0) return { text: 'n/a' };
  const value = a.value / b.value;
  return { text: value.toFixed(2), value };
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ')).join('\n');
}

async function main(): Promise<void> {
  log(
    `bench:s3 on ${process.version}, ${BIG_BYTES / 2 ** 20} MiB big object, ${SMALL_COUNT} x ${SMALL_BYTES / 1024} KiB with ${CONCURRENCY} clients`,
  );
  const big = randomBytes(BIG_BYTES);
  const small = randomBytes(SMALL_COUNT * SMALL_BYTES);
  const results: Record<string, Results> = {};
  const starters: Record<string, () => Promise<Server>> = { cairn: startCairn, s3rver: startS3rver, bare: startBare };
  // Every server runs the whole time, and each step runs on each server in
  // turn, round after round: a machine whose speed drifts (other load, the
  // file system's state) then drifts for all of them alike.
  const targets: Target[] = [];
  try {
    for (const which of SERVERS) {
      // `cairn+--FLAG+NAME=value`: another Cairn with extra Node flags and environment, to compare settings side by side.
      const start = which.startsWith('cairn+') ? () => startCairn(which.split('+').slice(1)) : starters[which];
      if (!start) throw new Error(`unknown server "${which}" in BENCH_SERVERS`);
      let server: Server;
      try {
        server = await start();
      } catch (err) {
        log(`  ${which} could not start: ${(err as Error).message}`);
        continue;
      }
      // The same client work for every server: by default the SDK asks for a
      // GET's checksum (x-amz-checksum-mode: ENABLED) and checks it, in
      // JavaScript, when one comes back. Cairn sends it as S3 does (its PUT
      // kept the CRC32 the SDK sent); s3rver and the bare server send none.
      // Checked, it cost the client 0.8-1.5 s of CPU per 256 MiB from Cairn
      // alone, on the same two cores the server has (bench/RESULTS.md).
      const s3 = new S3Client({
        endpoint: server.endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: server.credentials,
        responseChecksumValidation: 'WHEN_REQUIRED',
      });
      targets.push({ server, s3, results: {}, failed: {} });
    }
    for (const t of targets) logRss(t, 'at start');
    for (const t of targets) {
      await warmUp(t, big, small);
      logRss(t, 'after the warm-up');
    }
    for (let round = 1; round <= ROUNDS; round++) {
      for (const name of ['bigPut', 'bigGet', 'smallPut', 'smallGet', 'list'] as const) {
        if (!STEPS.has(name)) continue;
        // The order turns each round, so no server is always the first to
        // meet what the previous step left in the client (after the big
        // PUTs, the first big GET's client cost 0.9-1.6 s of CPU against
        // 0.35-0.8 s for the servers after it).
        const shift = (round - 1) % targets.length;
        for (const t of [...targets.slice(shift), ...targets.slice(0, shift)]) await step(t, name, round, big, small);
      }
    }
    for (const t of targets) results[t.server.name] = summarize(t);
  } finally {
    for (const t of targets) {
      t.s3.destroy();
      await t.server.stop();
    }
  }
  log('  CID import');
  // Loaded only now: the servers' client process carries no IPFS modules (a
  // larger heap makes every collection, and so every socket read, dearer).
  const { cidImport } = await import('./cid-import.js');
  const cid = await cidImport(big, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-bench-blocks-'));
    leftovers.push(dir);
    return dir;
  });

  const c = results.Cairn;
  const s = results.s3rver;
  const b = results.bare;
  const goals: Array<[string, keyof Results, number, string, 'higher' | 'lower', number]> = [
    [`PUT one ${BIG_BYTES / 2 ** 20} MiB object, MB/s`, 'bigPut', 0, '>= 1.0', 'higher', 1.0],
    [`GET one ${BIG_BYTES / 2 ** 20} MiB object, MB/s`, 'bigGet', 0, '>= 1.1', 'higher', 1.1],
    [`PUT ${SMALL_COUNT} x ${SMALL_BYTES / 1024} KiB (${CONCURRENCY} clients), ops/s`, 'smallPut', 0, '>= 1.0', 'higher', 1.0],
    [`GET ${SMALL_COUNT} x ${SMALL_BYTES / 1024} KiB (${CONCURRENCY} clients), ops/s`, 'smallGet', 0, '>= 1.0', 'higher', 1.0],
    [`list ${SMALL_COUNT} keys (pages of 1000), ms`, 'list', 0, '<= 1.0', 'lower', 1.0],
    ['server peak RSS (VmHWM), MiB', 'rss', 0, '', 'lower', Infinity],
  ];
  const rows = [['', 'Cairn', 's3rver', 'Cairn/s3rver', 'goal', 'met', 'ceiling: bare/s3rver']];
  for (const [label, key, digits, goal, better, target] of goals) {
    const r = ratioCell(c?.[key], s?.[key]);
    const met = r.value === undefined || !goal ? '' : (better === 'higher' ? r.value >= target : r.value <= target) ? 'yes' : 'NO';
    rows.push([
      label,
      fmt(c?.[key], digits),
      fmt(s?.[key], digits),
      r.text,
      goal,
      met,
      key === 'rss' ? '' : ratioCell(b?.[key], s?.[key]).text,
    ]);
  }
  // Extra Cairns (BENCH_SERVERS "cairn+..."): their medians, each with its ratio to s3rver.
  const extras = Object.keys(results).filter((name) => !['Cairn', 's3rver', 'bare'].includes(name));
  const extraRows = extras.length
    ? [['', ...extras]].concat(
        goals.map(([label, key, digits]) => [
          label,
          ...extras.map((name) => {
            const r = ratioCell(results[name]![key], s?.[key]);
            return key === 'rss' || r.value === undefined
              ? fmt(results[name]![key], digits)
              : `${fmt(results[name]![key], digits)} (${r.text})`;
          }),
        ]),
      )
    : [];
  const cidRatio = cid.hashing / cid.sha256;
  const share = (v: number) => `${((v / cid.sha256) * 100).toFixed(0)}%`;
  const lines = [
    '',
    table(rows),
    ...(extras.length ? ['', table(extraRows)] : []),
    '',
    table([
      ['CID import (Kubo settings, 64 KiB pieces)', 'MB/s', 'of SHA-256', 'goal', 'met'],
      ['node:crypto SHA-256, same bytes', cid.sha256.toFixed(0), '', '', ''],
      [
        'importFile, blocks discarded (hashing and DAG)',
        cid.hashing.toFixed(0),
        share(cid.hashing),
        '>= 60%',
        cidRatio >= 0.6 ? 'yes' : 'NO',
      ],
      ['importFile into a MemoryBlockstore', cid.memory.toFixed(0), share(cid.memory), '', ''],
      ['importFile into the local PackedBlockstore (disk)', cid.fs.toFixed(0), share(cid.fs), '', ''],
      ['import and pin in the local node, random bytes', cid.stored.toFixed(0), share(cid.stored), '', ''],
      [
        'import and pin in the local node, all zeros',
        cid.storedZeros.toFixed(0),
        share(cid.storedZeros),
        '>= 100 MB/s',
        cid.storedZeros >= 100 ? 'yes' : 'NO',
      ],
    ]),
    '',
    `MB = 10^6 bytes. Each figure is the median of ${ROUNDS} rounds; in each round every step runs on each server in turn, starting one server later each round (servers are child processes on loopback, ${process.version}${NODE_FLAGS.length ? `, ${NODE_FLAGS.join(' ')}` : ''}).`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
  await Promise.all(leftovers.map((dir) => rm(dir, { recursive: true, force: true })));
}

main().catch(async (err: unknown) => {
  process.stderr.write(`bench:s3 failed: ${(err as Error)?.stack ?? err}\n`);
  await Promise.all(leftovers.map((dir) => rm(dir, { recursive: true, force: true })));
  process.exit(1);
});
