/**
 * `npm run bench:edge`: a site's cache hit against the ceilings, side by
 * side in one run. The same 4 KiB `index.html` is asked for, with `wrk -t1
 * -c32`, from:
 *
 * - "Cairn HIT": the local server as `npm start` runs it (a child process,
 *   CAIRN_GC_INTERVAL=0), at the site's address: `GET /` with
 *   `Host: <slug>.sites.localhost:<port>`, answered from its site cache
 *   (every answer is checked to be a HIT before and after each round);
 *   twice, side by side: the gateway on its main thread alone
 *   (CAIRN_GATEWAY_THREADS=1) and on BENCH_GATEWAY_THREADS threads (by
 *   default the machine's cores, as `npm start` runs it);
 * - "nginx": nginx from Debian (`/usr/sbin/nginx`) serving the publish
 *   directory written to disk, started by the benchmark as a non-daemon
 *   child on a free port, as the current user, with a config it writes into
 *   a temporary directory (Debian's defaults for what matters here:
 *   `worker_processes auto`, sendfile, no access log; keep-alive without a
 *   request limit, as Node's);
 * - "node:http": a bare `node:http` server in a child process answering
 *   the page from one Buffer with `res.writeHead` and `res.end` (what Node
 *   itself can serve, the floor of any Node path).
 *
 * Each round runs every server for BENCH_WARMUP_SECONDS unmeasured, then
 * BENCH_SECONDS measured, one after another, the order turned by one each
 * round; every figure is the median of its rounds and a ratio the median
 * of the rounds' ratios. Beside each: the server's CPU (all its processes
 * and threads, % of one core, and µs per request), wrk's, and the rest of
 * the machine's, from /proc, so a figure the machine bounds can be told
 * from one the server bounds. The goal line: Cairn's hits at least 0.5x
 * nginx's requests per second (issue 35).
 *
 * Needs `wrk` and `nginx` (Debian packages; installed here when missing
 * and root or password-less sudo is at hand). Knobs (environment):
 * BENCH_SECONDS (5), BENCH_WARMUP_SECONDS (1), BENCH_ROUNDS (5),
 * BENCH_CONNECTIONS (32), BENCH_NGINX_WORKERS (auto), BENCH_GATEWAY_THREADS
 * (the cores, at most 8), BENCH_CPU_PROF (a
 * directory: Cairn runs with --cpu-prof and writes its profile there on
 * exit), BENCH_NODE_FLAGS (more flags for Cairn's Node), and any CAIRN_*
 * variable given to the Cairn servers as it is.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGitServer, type GitServer } from '../test/support/git-server.js';
import { hostFetch } from '../test/support/http.js';
import { freePort } from '../test/support/service-env.js';
import { npmStartArgs, startChildService, stopChild, waitForHttp, type ChildService } from '../test/support/child-service.js';
import { api, prng, siteWords, table, textFile } from './site-fixture.js';
import { log, num } from './harness.js';

const SECONDS = num('BENCH_SECONDS', 5);
const WARMUP_SECONDS = num('BENCH_WARMUP_SECONDS', 1);
const ROUNDS = num('BENCH_ROUNDS', 5);
const CONNECTIONS = num('BENCH_CONNECTIONS', 32);
const NGINX_WORKERS = process.env.BENCH_NGINX_WORKERS ?? 'auto';
const CPU_PROF = process.env.BENCH_CPU_PROF;
const THREADS = String(num('BENCH_GATEWAY_THREADS', Math.min(cpus().length, 8)));
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const GOAL = 0.5;
const PAGE_BYTES = 4096;
const SEED = 35;

/** Installs the Debian packages the benchmark drives, when missing (as test/setup/debian-packages.sh does for the tests). */
function ensurePackages(): void {
  const missing = [
    ['wrk', '/usr/bin/wrk'],
    ['nginx', '/usr/sbin/nginx'],
  ].filter(([, bin]) => !existsSync(bin!));
  if (!missing.length) return;
  const names = missing.map(([pkg]) => pkg!);
  const root = process.getuid?.() === 0;
  const sudo = root ? [] : ['sudo', '-n'];
  log(`  installing ${names.join(', ')} (Debian packages)`);
  try {
    const [cmd, ...args] = [
      ...sudo,
      'env',
      'DEBIAN_FRONTEND=noninteractive',
      'apt-get',
      '-o',
      'DPkg::Lock::Timeout=600',
      'install',
      '-y',
      '-qq',
      '--no-install-recommends',
      ...names,
    ];
    execFileSync(cmd!, args, { stdio: 'inherit' });
  } catch {
    throw new Error(`bench:edge needs ${names.join(' and ')}: sudo apt-get install -y ${names.join(' ')}`);
  }
}

/** CPU time (user + system, ms) of a process's threads, or of one of its threads. */
function cpuMs(pid: number, tid?: number): number {
  try {
    const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0; // gone (a worker restarted): its time is lost, not fatal
  }
}

/** A process and its descendants (nginx's workers, a cluster's workers). */
function treeOf(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const tid of readdirSync(`/proc/${out[i]}/task`)) {
        const children = readFileSync(`/proc/${out[i]}/task/${tid}/children`, 'utf8').trim();
        if (children) out.push(...children.split(' ').map(Number));
      }
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

function machineCpuMs(): number {
  const t = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.split(/\s+/).slice(1, 9).map(Number);
  return (t.reduce((s, n) => s + n, 0) - t[3]! - t[4]!) * 10;
}

interface Target {
  name: 'cairn' | 'cairnN' | 'nginx' | 'node';
  label: string;
  pid: number;
  url: string;
  host?: string;
}

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  bad: number;
  serverCpu: number;
  serverUs: number;
  /** The main thread's (the event loop's) CPU per request, µs: Node's other threads (GC, the embedded database's) apart. */
  mainUs: number;
  wrkCpu: number;
  restCpu: number;
}

/** wrk's latency figure (`812.00us`, `1.20ms`, `2.00s`) in ms. */
function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

async function wrk(t: Target, seconds: number): Promise<Figures> {
  const pids = treeOf(t.pid);
  const server0 = pids.reduce((s, p) => s + cpuMs(p), 0);
  const main0 = cpuMs(t.pid, t.pid);
  const machine0 = machineCpuMs();
  const started = performance.now();
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', ...(t.host ? ['-H', `Host: ${t.host}`] : []), `${t.url}/`];
  const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const wrkPid = child.pid!;
  let wrkMs = 0;
  // Sampled just before it ends (its /proc entry goes with it): the last sample is within 50 ms of the whole.
  const sampler = setInterval(() => (wrkMs = cpuMs(wrkPid) || wrkMs), 50);
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  clearInterval(sampler);
  const wallMs = performance.now() - started;
  const serverMs = treeOf(t.pid).reduce((s, p) => s + cpuMs(p), 0) - server0;
  const mainMs = cpuMs(t.pid, t.pid) - main0;
  const machineMs = machineCpuMs() - machine0;
  if (code !== 0) throw new Error(`wrk ended ${code}: ${out}`);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const bad = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0) + Number(/Socket errors: .*/.test(out) ? 1 : 0);
  const pct = (x: number) => (100 * x) / wallMs;
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50: ms(/ 50%\s+(\S+)/.exec(out)?.[1] ?? ''),
    p99: ms(/ 99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    requests,
    bad,
    serverCpu: pct(serverMs),
    serverUs: (serverMs * 1000) / Math.max(1, requests),
    mainUs: (mainMs * 1000) / Math.max(1, requests),
    wrkCpu: pct(wrkMs),
    restCpu: pct(machineMs - serverMs - wrkMs),
  };
}

/** nginx as a non-daemon child of this process, on a free port, serving `root`. */
async function startNginx(dir: string, root: string): Promise<{ child: ChildProcess; url: string; version: string }> {
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  const temp = (name: string) => join(dir, name);
  for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) await mkdir(temp(d), { recursive: true });
  await writeFile(
    conf,
    `daemon off;
worker_processes ${NGINX_WORKERS};
pid ${temp('nginx.pid')};
error_log ${temp('error.log')} warn;
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  keepalive_timeout 65;
  client_body_temp_path ${temp('client_body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
  server {
    listen 127.0.0.1:${port};
    root ${root};
    index index.html;
  }
}
`,
  );
  const version = spawnSync('/usr/sbin/nginx', ['-v'], { encoding: 'utf8' }).stderr.trim() || 'nginx';
  const child = spawn('/usr/sbin/nginx', ['-c', conf, '-p', dir, '-e', temp('error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(child, 'nginx', `${url}/`);
  return { child, url, version };
}

/** The floor: node:http answering one Buffer, in a child process on this Node. */
async function startBareNode(page: Buffer): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const code = `
const http = require('node:http');
const body = Buffer.from(process.env.PAGE, 'base64');
const headers = { 'content-type': 'text/html; charset=utf-8', 'content-length': String(body.length) };
const server = http.createServer((req, res) => { res.writeHead(200, headers); res.end(body); });
server.keepAliveTimeout = 65000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
`;
  const child = spawn(process.execPath, ['-e', code], {
    env: { PATH: process.env.PATH, PORT: String(port), PAGE: page.toString('base64') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(child, 'node:http', `${url}/`);
  return { child, url };
}

const median = (xs: number[]) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main(): Promise<void> {
  log(
    `bench:edge (sites) on ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  ensurePackages();
  let git: GitServer | undefined;
  let cairn: ChildService | undefined;
  let cairnN: ChildService | undefined;
  const children: ChildProcess[] = [];
  const scratch = await mkdtemp(join(tmpdir(), 'cairn-bench-edge-'));
  try {
    const page = textFile(prng(SEED), siteWords(SEED), 'html', PAGE_BYTES);
    const files = { 'README.md': Buffer.from('bench:edge\n'), 'public/index.html': page };
    const root = join(scratch, 'public');
    await mkdir(root, { recursive: true });
    // Run as root, nginx's workers are `nobody`: they must reach the page through mkdtemp's 0700 directory.
    await chmod(scratch, 0o755);
    await writeFile(join(root, 'index.html'), page);

    git = await startGitServer();
    await git.commit('bench/edge', files, 'The benchmark page');
    if (CPU_PROF) await mkdir(CPU_PROF, { recursive: true });
    const env: Record<string, string> = { CAIRN_GC_INTERVAL: '0' };
    for (const [k, v] of Object.entries(process.env)) if (k.startsWith('CAIRN_') && v !== undefined) env[k] = v;
    const nodeArgs = [...NODE_FLAGS, ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : [])];
    cairn = await startChildService({ captureLog: true, env: { ...env, CAIRN_GATEWAY_THREADS: '1' }, nodeArgs });
    cairnN = await startChildService({ captureLog: true, env: { ...env, CAIRN_GATEWAY_THREADS: THREADS }, nodeArgs });
    /** The page's site on `service`, deployed; its slug. */
    const deployed = async (service: ChildService) => {
      const a = api(service.endpoints.graphql);
      const site = await a.createSite(git!.repoUrl('bench/edge'), { buildCommand: 'true', publishDirectoryPath: 'public' });
      const { id } = await a.trigger(site.id);
      const { deploy } = await a.waitFor(site.id, id);
      if (deploy.status !== 'DEPLOYED') throw new Error(`the deploy ended ${deploy.status}:\n${(await a.deploy(site.id, id)).log}`);
      return site.slug;
    };
    const slug = await deployed(cairn);
    const slugN = await deployed(cairnN);
    const nginx = await startNginx(scratch, root);
    children.push(nginx.child);
    const bare = await startBareNode(page);
    children.push(bare.child);

    const targets: Target[] = [
      {
        name: 'cairn',
        label: 'Cairn HIT, 1 thread',
        pid: cairn.pid,
        url: cairn.endpoints.gateway,
        host: `${slug}.sites.localhost:${cairn.env.CAIRN_GATEWAY_PORT}`,
      },
      {
        name: 'cairnN',
        label: `Cairn HIT, ${THREADS} threads`,
        pid: cairnN.pid,
        url: cairnN.endpoints.gateway,
        host: `${slugN}.sites.localhost:${cairnN.env.CAIRN_GATEWAY_PORT}`,
      },
      { name: 'nginx', label: `nginx (${NGINX_WORKERS} workers)`, pid: nginx.child.pid!, url: nginx.url },
      { name: 'node', label: 'node:http, one Buffer', pid: bare.child.pid!, url: bare.url },
    ];
    /** The page, right, from each; Cairn's from its cache. */
    const check = async (t: Target, first = false) => {
      const res = await hostFetch(`${t.url}/`, { headers: t.host ? { host: t.host } : {} });
      const body = Buffer.from(await res.arrayBuffer());
      const cache = res.headers.get('x-cache');
      if (res.status !== 200 || !body.equals(page) || (t.name.startsWith('cairn') && !first && cache !== 'HIT'))
        throw new Error(`${t.label}: ${res.status}, ${body.length} bytes (${body.equals(page) ? 'right' : 'WRONG'}), X-Cache ${cache}`);
      return res;
    };
    for (const t of targets) await check(t, true);
    for (const t of targets) {
      const res = await check(t);
      log(
        `  ${t.label}: ${[...res.headers]
          .filter(([k]) => k !== 'date')
          .map(([k, v]) => `${k}: ${v}`)
          .join('; ')}`,
      );
    }

    // What each server spends with nothing asked of it (timers, pollers, other threads): part of its CPU per request under load.
    const idle0 = targets.map((t) => treeOf(t.pid).reduce((s, p) => s + cpuMs(p), 0));
    await new Promise((r) => setTimeout(r, 3000));
    const idle = targets.map((t, i) => (100 * (treeOf(t.pid).reduce((s, p) => s + cpuMs(p), 0) - idle0[i]!)) / 3000);
    log(`  CPU at rest over 3 s, % of a core: ${targets.map((t, i) => `${t.label} ${idle[i]!.toFixed(1)}`).join(', ')}`);
    const rounds = new Map<Target['name'], Figures[]>(targets.map((t) => [t.name, []]));
    const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
    const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');
    for (let r = 0; r < ROUNDS; r++) {
      log(`  round ${r + 1} of ${ROUNDS} (load ${loadavg()[0]!.toFixed(2)}):`);
      for (let i = 0; i < targets.length; i++) {
        const t = targets[(i + r) % targets.length]!;
        await wrk(t, WARMUP_SECONDS);
        const f = await wrk(t, SECONDS);
        await check(t);
        rounds.get(t.name)!.push(f);
        log(
          `    ${t.label.padEnd(24)} ${f0(f.rps).padStart(6)} req/s, p50 ${f2(f.p50)} ms, p99 ${f2(f.p99)} ms, ${f.bad} bad; CPU % of a core: server ${f0(f.serverCpu)} (${f0(f.serverUs)} µs/req; main thread ${f0(f.mainUs)}), wrk ${f0(f.wrkCpu)}, rest ${f0(f.restCpu)}`,
        );
      }
    }
    const med = (name: Target['name'], key: keyof Figures) => median(rounds.get(name)!.map((f) => f[key]));
    const ratio = (a: Target['name'], b: Target['name']) => {
      const ra = rounds.get(a)!;
      const rb = rounds.get(b)!;
      const each = ra.map((f, i) => f.rps / rb[i]!.rps);
      const cpu = ra.map((f, i) => rb[i]!.serverUs / f.serverUs);
      return { median: median(each), each, cpu: median(cpu) };
    };
    const vsNginx = ratio('cairn', 'nginx');
    const vsNode = ratio('cairn', 'node');
    const nVsNginx = ratio('cairnN', 'nginx');
    const nVsOne = ratio('cairnN', 'cairn');
    const out = [
      '',
      `A 4 KiB index.html; wrk -t1 -c${CONNECTIONS}, ${WARMUP_SECONDS} s warm-up + ${SECONDS} s measured per server, ${ROUNDS} rounds interleaved; medians. ${cpus().length} cores, load at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}.`,
      '',
      table([
        ['server', 'req/s', 'p50 ms', 'p99 ms', 'bad', 'server CPU %', 'µs/req', 'main µs/req', 'wrk %', 'rest %'],
        ...targets.map((t) => [
          t.label,
          f0(med(t.name, 'rps')),
          f2(med(t.name, 'p50')),
          f2(med(t.name, 'p99')),
          String(rounds.get(t.name)!.reduce((s, f) => s + f.bad, 0)),
          f0(med(t.name, 'serverCpu')),
          f0(med(t.name, 'serverUs')),
          f0(med(t.name, 'mainUs')),
          f0(med(t.name, 'wrkCpu')),
          f0(med(t.name, 'restCpu')),
        ]),
      ]),
      '',
      table([
        ['ratio, req/s', 'median', 'rounds', 'by CPU/req', 'goal', 'met'],
        [
          'Cairn HIT, 1 thread / nginx',
          f2(vsNginx.median),
          vsNginx.each.map(f2).join(' '),
          f2(vsNginx.cpu),
          `>= ${GOAL}`,
          vsNginx.median >= GOAL ? 'met' : 'NOT met',
        ],
        [
          `Cairn HIT, ${THREADS} threads / nginx`,
          f2(nVsNginx.median),
          nVsNginx.each.map(f2).join(' '),
          f2(nVsNginx.cpu),
          `>= ${GOAL}`,
          nVsNginx.median >= GOAL ? 'met' : 'NOT met',
        ],
        [`Cairn HIT, ${THREADS} threads / 1 thread`, f2(nVsOne.median), nVsOne.each.map(f2).join(' '), f2(nVsOne.cpu), '', ''],
        ['Cairn HIT, 1 thread / node:http', f2(vsNode.median), vsNode.each.map(f2).join(' '), f2(vsNode.cpu), '', ''],
      ]),
      '',
      `Cairn: \`npm start\`'s flags (${[...npmStartArgs().nodeArgs, ...NODE_FLAGS].join(' ')}), ${Object.entries(env)
        .map(([k, v]) => `${k}=${v}`)
        .join(
          ' ',
        )}; ${nginx.version.replace(/^nginx version: /, '')}; ${process.version}. CPU from /proc: the server's processes and threads, wrk's, and the rest of the machine (other processes, kernel work no process was charged for), in % of one core.`,
    ];
    for (const [label, service] of [
      ['1 thread', cairn],
      [`${THREADS} threads`, cairnN],
    ] as const) {
      const logged = service
        .log()
        .split('\n')
        .filter((l) => l.trim());
      out.push(
        logged.length
          ? `Cairn (${label}) logged ${logged.length} lines; the first: ${logged[0]!.slice(0, 300)}`
          : `Cairn (${label}) logged nothing.`,
      );
    }
    process.stdout.write(out.join('\n') + '\n');
  } finally {
    for (const c of children) await stopChild(c);
    await cairn?.stop();
    await cairnN?.stop();
    await git?.close();
    await rm(scratch, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:edge failed: ${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
