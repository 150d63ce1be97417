/**
 * `npm run bench:sites`: serving a static site from Cairn's gateway against
 * serving the same directory from disk with http-server (`npx
 * http-server`), under load from autocannon.
 *
 * The site is bench:deploy's (bench/site-fixture.ts: 2,000 files, about
 * 50 MB, seeded, so every run serves the same tree), with one of its
 * files a 4 KiB HTML page at /bench/page-4k.html. A real git server
 * (test/support/git-server.ts) holds it; two Cairn local servers run as
 * child processes with the flags `npm start` passes, and each deploys it
 * through the GraphQL API (build command `true`, publish directory
 * `public`), which is then served at `http://127.0.0.1:<gateway port>/<path>`
 * with `Host: <slug>.sites.localhost:<gateway port>`:
 *
 * - "Cairn HIT": the server as `npm start` runs it, whose response cache
 *   (256 MiB by default) answers every request after the first.
 * - "Cairn MISS": a second server with `CAIRN_SITE_CACHE_BYTES=1` (the
 *   least the configuration takes: no response fits, so every request
 *   resolves the host from its one-second host cache, then walks the
 *   UnixFS DAG from the root, reads `_redirects`/`_headers` from the
 *   parsed-rules cache and streams the file's blocks from the blockstore).
 * - "http-server": http-server 14 (the `http-server` npm package, its bin
 *   run as a child process on the same Node) serving the publish directory
 *   written to disk, with its default caching headers and `-s` (silent).
 *
 * Both Cairn servers run with CAIRN_GC_INTERVAL=0: the block collector's
 * walk every minute is no part of serving a page, and would land in some
 * rounds and not others.
 *
 * Before any load every file of the site is fetched from each server and
 * compared with the bytes it should be (which also fills Cairn HIT's cache);
 * under load every response's status, Content-Length and X-Cache (HIT for
 * Cairn HIT, MISS for Cairn MISS) are checked, and any other counts as a
 * wrong answer in the tables.
 *
 * The load: autocannon's API in this process, BENCH_CONNECTIONS keep-alive
 * connections, each request sent when the connection's previous answer
 * arrived. Each case gets BENCH_WARMUP_SECONDS of unmeasured load, then
 * BENCH_SECONDS measured; the cases run one after another, interleaved,
 * for BENCH_ROUNDS rounds, each round starting one case later; every
 * figure is the median of its rounds, and a ratio is the median of the
 * rounds' ratios (both servers measured minutes apart at most, on the same
 * machine's mood). The cases: the 4 KiB page on each of the three, and a
 * mixed one: every HTML, CSS and JS file of the site (1,900 of 1-30 KB,
 * not the 100 images), each connection walking the list in turn, on Cairn
 * HIT and http-server.
 *
 * Client and servers share the machine (2 cores here): each round's line
 * prints the CPU each server process used (all its threads, and its main
 * thread, the event loop, apart: from /proc/<pid>/stat and
 * /proc/<pid>/task/<pid>/stat), per request too, this client's, the rest
 * of the machine's (other processes, and kernel work no process was
 * charged for) and the machine's as a whole (/proc/stat), in percent of
 * one core, so a figure the machine bounds can be told from one the server
 * bounds. Beside each ratio, the same ratio by the main thread's CPU per
 * request (about what it would be were each event loop given a core of its
 * own) and the median over the quiet rounds, those where the rest of the
 * machine used under a quarter of a core during both measurements. The
 * Cairn servers' logs (warnings and errors) are counted at the end.
 *
 * Goals (the issue), printed beside the figures: Cairn's requests per
 * second on cache hits at least 1.0x http-server's, on misses at least
 * 0.5x.
 *
 * Knobs (environment): BENCH_CONNECTIONS (32), BENCH_SECONDS (10),
 * BENCH_WARMUP_SECONDS (2), BENCH_ROUNDS (3), BENCH_CASES (a comma list of
 * hit, miss, peer, mixed-hit, mixed-peer: all by default), BENCH_SEED (20),
 * BENCH_SITE_MB (50), BENCH_FILES (2000), BENCH_CPU_PROF (a directory: both
 * Cairn servers run with --cpu-prof and write their profiles there on
 * exit), BENCH_NODE_FLAGS (more V8 flags for the Cairn servers).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startGitServer, type GitServer } from '../test/support/git-server.js';
import { hostFetch } from '../test/support/http.js';
import { freePort } from '../test/support/service-env.js';
import { npmStartArgs, ROOT, startChildService, stopChild, waitForHttp, type ChildService } from '../test/support/child-service.js';
import { api, percentile, prng, siteFiles, siteWords, table, textFile } from './site-fixture.js';
import { autocannon, log, num, type AutocannonClient } from './harness.js';

const CONNECTIONS = num('BENCH_CONNECTIONS', 32);
const SECONDS = num('BENCH_SECONDS', 10);
const WARMUP_SECONDS = num('BENCH_WARMUP_SECONDS', 2);
const ROUNDS = num('BENCH_ROUNDS', 3);
const SEED = num('BENCH_SEED', 20);
const SITE_BYTES = num('BENCH_SITE_MB', 50) * 1e6;
const FILES = num('BENCH_FILES', 2000);
const CPU_PROF = process.env.BENCH_CPU_PROF;
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const CASE_NAMES = ['hit', 'miss', 'peer', 'mixed-hit', 'mixed-peer'] as const;
type CaseName = (typeof CASE_NAMES)[number];
const CASES = new Set(
  (process.env.BENCH_CASES ?? CASE_NAMES.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean) as CaseName[],
);

/** A round is quiet when the rest of the machine (not the servers, not this client) used less than this, % of a core. */
const QUIET_REST = 25;

/** The 4 KiB page, at this path on every server. */
const PAGE = '/bench/page-4k.html';
const PAGE_BYTES = 4096;

/** One server, as the load sees it. */
interface Target {
  label: string;
  pid: number;
  url: string;
  host?: string;
  /** The X-Cache every answer must carry, if any. */
  xCache?: 'HIT' | 'MISS';
}

interface Case {
  name: CaseName;
  label: string;
  target: Target;
  paths: string[];
  /** The Content-Length every answer must carry (one path only). */
  length?: number;
}

interface RoundFigures {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  non2xx: number;
  wrong: number;
  xCache: string;
  serverCpu: number; // % of one core
  /** The server's CPU per request, µs. */
  serverUs: number;
  /** The server's main thread (its event loop), % of one core and µs per request. */
  mainCpu: number;
  mainUs: number;
  clientCpu: number;
  machineCpu: number;
  /** The machine less the three servers and this client: other processes, and interrupts no process was charged for. */
  restCpu: number;
}

/** CPU time (user + system, ms) of a process, all its threads; or of one of its threads. */
function processCpuMs(pid: number, tid?: number): number {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime in USER_HZ (100) ticks
}

/** The machine's busy CPU time (all cores, ms): /proc/stat's first line less idle and iowait. */
function machineCpuMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const t = line.split(/\s+/).slice(1, 9).map(Number);
  return (t.reduce((s, n) => s + n, 0) - t[3]! - t[4]!) * 10;
}

const clientCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Every server's pid (all three are counted, so what is left of the machine is neither them nor the client). */
const serverPids: number[] = [];

/** autocannon on one case for `seconds`: its figures and the CPU each side used. */
async function load(c: Case, seconds: number): Promise<RoundFigures> {
  let wrong = 0;
  const xCache = new Map<string, number>();
  const latencies: number[] = [];
  const setupClient = (client: AutocannonClient) => {
    client.on('headers', ({ statusCode, headers }) => {
      let length: string | undefined;
      let cache = '-';
      for (let i = 0; i < headers.length; i += 2) {
        const name = headers[i]!.toLowerCase();
        if (name === 'content-length') length = headers[i + 1];
        else if (name === 'x-cache') cache = headers[i + 1]!;
      }
      xCache.set(cache, (xCache.get(cache) ?? 0) + 1);
      if (statusCode !== 200 || (c.length !== undefined && length !== String(c.length)) || (c.target.xCache && cache !== c.target.xCache))
        wrong++;
    });
    client.on('response', (_status, _bytes, ms) => latencies.push(ms));
  };
  const server0 = processCpuMs(c.target.pid);
  const main0 = processCpuMs(c.target.pid, c.target.pid);
  const servers0 = serverPids.reduce((s, pid) => s + processCpuMs(pid), 0);
  const client0 = clientCpuMs();
  const machine0 = machineCpuMs();
  const started = performance.now();
  const result = await autocannon({
    url: c.target.url,
    connections: CONNECTIONS,
    duration: seconds,
    headers: c.target.host ? { host: c.target.host } : {},
    requests: c.paths.map((path) => ({ path })),
    setupClient,
  });
  const wallMs = performance.now() - started;
  const pct = (ms: number) => (100 * ms) / wallMs;
  const serverMs = processCpuMs(c.target.pid) - server0;
  const mainMs = processCpuMs(c.target.pid, c.target.pid) - main0;
  const serversMs = serverPids.reduce((s, pid) => s + processCpuMs(pid), 0) - servers0;
  const clientMs = clientCpuMs() - client0;
  const machineMs = machineCpuMs() - machine0;
  latencies.sort((a, b) => a - b);
  return {
    rps: (result.requests.total * 1000) / wallMs,
    p50: latencies.length ? percentile(latencies, 50) : NaN,
    p99: latencies.length ? percentile(latencies, 99) : NaN,
    requests: result.requests.total,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    wrong,
    xCache: [...xCache].map(([k, n]) => `${k} ${n}`).join(', '),
    serverCpu: pct(serverMs),
    serverUs: (serverMs * 1000) / Math.max(1, result.requests.total),
    mainCpu: pct(mainMs),
    mainUs: (mainMs * 1000) / Math.max(1, result.requests.total),
    clientCpu: pct(clientMs),
    machineCpu: pct(machineMs),
    restCpu: pct(machineMs - serversMs - clientMs),
  };
}

/** GETs every path from `target` and compares status, bytes and X-Cache with what they should be. */
async function check(target: Target, files: Map<string, Buffer>, xCache?: (first: boolean) => string): Promise<void> {
  const paths = [...files.keys()];
  let next = 0;
  const worker = async () => {
    while (next < paths.length) {
      const path = paths[next++]!;
      const expected = files.get(path)!;
      for (const first of xCache ? [true, false] : [true]) {
        const res = await hostFetch(`${target.url}${path}`, { headers: target.host ? { host: target.host } : {} });
        const body = Buffer.from(await res.arrayBuffer());
        const cache = res.headers.get('x-cache') ?? undefined;
        if (res.status !== 200 || !body.equals(expected) || (xCache && cache !== xCache(first))) {
          throw new Error(
            `${target.label} ${path}: ${res.status}, ${body.length} bytes (${body.equals(expected) ? 'right' : 'WRONG'} bytes, ${expected.length} expected), X-Cache ${cache}`,
          );
        }
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

/** http-server's bin as a child process on a free port, serving `dir`. */
async function startHttpServer(dir: string): Promise<{ child: ChildProcess; url: string; version: string }> {
  const port = await freePort();
  const pkg = join(ROOT, 'node_modules/http-server');
  const version = (JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string }).version;
  const child = spawn(process.execPath, [join(pkg, 'bin/http-server'), dir, '-p', String(port), '-a', '127.0.0.1', '-s'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(child, 'http-server', `${url}/`);
  return { child, url, version };
}

const median = (xs: number[]) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main(): Promise<void> {
  log(
    `bench:sites on ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  let git: GitServer | undefined;
  let peer: ChildProcess | undefined;
  const cairns: ChildService[] = [];
  const scratch = await mkdtemp(join(tmpdir(), 'cairn-bench-sites-'));
  try {
    // The site: bench:deploy's, one file fewer, and the 4 KiB page.
    const files = siteFiles({ seed: SEED, bytes: SITE_BYTES, files: FILES - 1 });
    files[`public${PAGE}`] = textFile(prng(SEED + 2), siteWords(SEED), 'html', PAGE_BYTES);
    const published = new Map(
      Object.entries(files)
        .filter(([p]) => p.startsWith('public/'))
        .map(([p, b]) => [p.slice('public'.length), b] as const),
    );
    const bytes = [...published.values()].reduce((s, b) => s + b.length, 0);
    log(
      `  site: ${published.size} files, ${(bytes / 1e6).toFixed(1)} MB under public/ (seed ${SEED}); the page ${PAGE}, ${PAGE_BYTES} bytes`,
    );

    // The publish directory on disk, for http-server.
    const dir = join(scratch, 'public');
    for (const [path, body] of published) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), body);
    }

    git = await startGitServer();
    await git.commit('bench/site', files, 'The benchmark site');

    if (CPU_PROF) await mkdir(CPU_PROF, { recursive: true });
    const nodeArgs = [...NODE_FLAGS, ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : [])];
    // The collector's walk every minute is no part of serving: off, on both.
    // Their logs (warnings and errors only) are kept and summed up at the end rather than interleaved with the figures.
    const start = (env: Record<string, string>) =>
      startChildService({ nodeArgs, captureLog: true, env: { CAIRN_GC_INTERVAL: '0', ...env } });
    const [hitServer, missServer] = await Promise.all([start({}), start({ CAIRN_SITE_CACHE_BYTES: '1' })]);
    cairns.push(hitServer, missServer);

    const deployTo = async (service: ChildService): Promise<string> => {
      const a = api(service.endpoints.graphql);
      const site = await a.createSite(git!.repoUrl('bench/site'), { buildCommand: 'true', publishDirectoryPath: 'public' });
      const began = Date.now();
      const { id } = await a.trigger(site.id);
      const { deploy } = await a.waitFor(site.id, id);
      if (deploy.status !== 'DEPLOYED') throw new Error(`the deploy ended ${deploy.status}:\n${(await a.deploy(site.id, id)).log}`);
      log(`  deployed to ${service.endpoints.gateway} as ${site.slug} in ${((Date.now() - began) / 1000).toFixed(1)} s`);
      return site.slug;
    };
    const hitSlug = await deployTo(hitServer);
    const missSlug = await deployTo(missServer);
    const hostOf = (service: ChildService, slug: string) => `${slug}.sites.localhost:${service.env.CAIRN_GATEWAY_PORT}`;

    const http = await startHttpServer(dir);
    peer = http.child;

    const hit: Target = {
      label: 'Cairn HIT',
      pid: hitServer.pid,
      url: hitServer.endpoints.gateway,
      host: hostOf(hitServer, hitSlug),
      xCache: 'HIT',
    };
    const miss: Target = {
      label: 'Cairn MISS',
      pid: missServer.pid,
      url: missServer.endpoints.gateway,
      host: hostOf(missServer, missSlug),
      xCache: 'MISS',
    };
    const peerTarget: Target = { label: `http-server ${http.version}`, pid: http.child.pid!, url: http.url };
    serverPids.push(hitServer.pid, missServer.pid, http.child.pid!);

    // Every file, right, from every server (the first request of each path fills Cairn HIT's cache).
    const began = Date.now();
    await check(hit, published, (first) => (first ? 'MISS' : 'HIT'));
    await check(miss, published, () => 'MISS');
    await check(peerTarget, published);
    log(`  every file checked on the three servers (status 200, the bytes, X-Cache) in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    const pageHeaders = async (t: Target) => {
      const res = await hostFetch(`${t.url}${PAGE}`, { headers: t.host ? { host: t.host } : {} });
      await res.arrayBuffer();
      return [...res.headers]
        .filter(([k]) => k !== 'date')
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ');
    };
    for (const t of [hit, miss, peerTarget]) log(`  ${t.label} answers ${PAGE} with ${await pageHeaders(t)}`);

    const text = [...published.keys()].filter((p) => /\.(html|css|js)$/.test(p));
    const cases: Case[] = (
      [
        { name: 'hit', label: 'Cairn HIT, 4 KiB page', target: hit, paths: [PAGE], length: PAGE_BYTES },
        { name: 'miss', label: 'Cairn MISS, 4 KiB page', target: miss, paths: [PAGE], length: PAGE_BYTES },
        { name: 'peer', label: 'http-server, 4 KiB page', target: peerTarget, paths: [PAGE], length: PAGE_BYTES },
        { name: 'mixed-hit', label: `Cairn HIT, ${text.length} files`, target: hit, paths: text },
        { name: 'mixed-peer', label: `http-server, ${text.length} files`, target: peerTarget, paths: text },
      ] satisfies Case[]
    ).filter((c) => CASES.has(c.name));

    const rounds = new Map<CaseName, RoundFigures[]>(cases.map((c) => [c.name, []]));
    const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
    const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
    for (let r = 0; r < ROUNDS; r++) {
      log(`  round ${r + 1} of ${ROUNDS} (load ${loadavg()[0]!.toFixed(2)}):`);
      const order = cases.map((_, i) => cases[(i + r) % cases.length]!);
      for (const c of order) {
        await load(c, WARMUP_SECONDS);
        const f = await load(c, SECONDS);
        rounds.get(c.name)!.push(f);
        log(
          `    ${c.label.padEnd(26)} ${f0(f.rps).padStart(6)} req/s, p50 ${f1(f.p50)} ms, p99 ${f1(f.p99)} ms, ${f.errors} errors, ${f.non2xx} non-2xx, ${f.wrong} wrong` +
            `${c.target.xCache ? ` (X-Cache ${f.xCache})` : ''}; CPU % of a core: server ${f0(f.serverCpu)} (${f0(f.serverUs)} µs/req; main thread ${f0(f.mainCpu)}, ${f0(f.mainUs)} µs/req), client ${f0(f.clientCpu)}, rest ${f0(f.restCpu)}, machine ${f0(f.machineCpu)} of ${cpus().length * 100}`,
        );
      }
    }

    // Medians; the ratios are per round (the same round's figures of both), then their median.
    const med = (name: CaseName, key: keyof RoundFigures) => median((rounds.get(name) ?? []).map((f) => f[key] as number));
    const sum = (name: CaseName, key: 'errors' | 'non2xx' | 'wrong' | 'requests') =>
      (rounds.get(name) ?? []).reduce((s, f) => s + f[key], 0);
    // Per round: Cairn's requests per second over http-server's, and the same by the main thread's CPU (http-server's µs per
    // request over Cairn's: about the throughput ratio were each event loop given a core of its own).
    const ratio = (a: CaseName, b: CaseName) => {
      const [ra, rb] = [rounds.get(a), rounds.get(b)];
      if (!ra?.length || !rb?.length) return undefined;
      const each = ra.map((f, i) => f.rps / rb[i]!.rps);
      const cpu = ra.map((f, i) => rb[i]!.mainUs / f.mainUs);
      // Rounds the rest of the machine left alone (under QUIET_REST % of a core beside both measurements): the figure a quiet machine gives.
      const quiet = each.filter((_, i) => ra[i]!.restCpu < QUIET_REST && rb[i]!.restCpu < QUIET_REST);
      return { median: median(each), each, cpu: median(cpu), quiet };
    };
    const goalRow = (label: string, r: ReturnType<typeof ratio>, goal?: number) =>
      r
        ? [
            label,
            r.median.toFixed(2),
            r.each.map((x) => x.toFixed(2)).join(' '),
            r.cpu.toFixed(2),
            r.quiet.length ? `${median(r.quiet).toFixed(2)} (${r.quiet.length})` : '-',
            goal === undefined ? '' : `>= ${goal.toFixed(1)}`,
            goal === undefined ? '' : r.median >= goal ? 'met' : 'NOT met',
          ]
        : [label, '-', '(not run)', '-', '-', goal === undefined ? '' : `>= ${goal.toFixed(1)}`, ''];
    const logged = (service: ChildService, label: string) => {
      const counts = new Map<string, number>();
      for (const line of service.log().split('\n')) {
        if (!line.trim()) continue;
        let what = line.slice(0, 200);
        try {
          const entry = JSON.parse(line) as { level?: string; msg?: string; err?: { message?: string } };
          what = `${entry.level}: ${entry.msg}${entry.err?.message ? ` (${entry.err.message})` : ''}`;
        } catch {
          // not a JSON line: counted as it is
        }
        counts.set(what, (counts.get(what) ?? 0) + 1);
      }
      return counts.size
        ? [`${label} logged: ${[...counts].map(([what, n]) => `${n} x "${what}"`).join('; ')}.`]
        : [`${label} logged nothing.`];
    };
    const out = [
      '',
      `Site: ${published.size} files, ${(bytes / 1e6).toFixed(1)} MB (seed ${SEED}); ${CONNECTIONS} connections, ${WARMUP_SECONDS} s warm-up + ${SECONDS} s measured per case, ${ROUNDS} rounds interleaved; medians of the rounds.`,
      '',
      table([
        [
          'case',
          'req/s',
          'p50 ms',
          'p99 ms',
          'errors',
          'non-2xx',
          'wrong',
          'server CPU %',
          'µs/req',
          'main %',
          'main µs/req',
          'client %',
          'rest %',
          'machine %',
        ],
        ...cases.map((c) => [
          c.label,
          f0(med(c.name, 'rps')),
          f1(med(c.name, 'p50')),
          f1(med(c.name, 'p99')),
          String(sum(c.name, 'errors')),
          String(sum(c.name, 'non2xx')),
          String(sum(c.name, 'wrong')),
          f0(med(c.name, 'serverCpu')),
          f0(med(c.name, 'serverUs')),
          f0(med(c.name, 'mainCpu')),
          f0(med(c.name, 'mainUs')),
          f0(med(c.name, 'clientCpu')),
          f0(med(c.name, 'restCpu')),
          f0(med(c.name, 'machineCpu')),
        ]),
      ]),
      '',
      table([
        ['Cairn / http-server, req/s', 'ratio', 'rounds', 'by main µs/req', 'quiet rounds', 'goal', 'met'],
        goalRow('cache hits, 4 KiB page', ratio('hit', 'peer'), 1),
        goalRow('misses (walk the DAG), 4 KiB page', ratio('miss', 'peer'), 0.5),
        goalRow(`cache hits, ${text.length} files (no goal)`, ratio('mixed-hit', 'mixed-peer')),
      ]),
      '',
      `CPU in % of one core over each measured ${SECONDS} s (${cpus().length} cores: ${cpus().length * 100} is all of the machine): the server under load (and its CPU per request, µs), this client, the rest (other processes, and the kernel's work no process was charged for) and the machine as a whole. ` +
        `Servers: Cairn as child processes with \`npm start\`'s flags (${[...npmStartArgs().nodeArgs, ...NODE_FLAGS].join(' ')}), CAIRN_GC_INTERVAL=0; http-server ${http.version} \`-s\`; ${process.version}. Load: autocannon, in this process.`,
      ...logged(hitServer, 'Cairn HIT'),
      ...logged(missServer, 'Cairn MISS'),
    ];
    process.stdout.write(out.join('\n') + '\n');
  } finally {
    if (peer) await stopChild(peer);
    await Promise.all(cairns.map((c) => c.stop()));
    await git?.close();
    await rm(scratch, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:sites failed: ${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
