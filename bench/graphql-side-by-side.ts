/**
 * `npm run bench:graphql`'s first part: Cairn's GraphQL reads against a bare
 * Apollo Server answering the same shapes from memory, side by side in one
 * run.
 *
 * - "Cairn": the local service as `npm start` runs it (a child process with
 *   its flags; node:http door, embedded DynamoDB, API-key authentication
 *   as the command line sends it), on a data directory seeded beforehand
 *   with SITES sites in the bootstrap account's team, each with a latest
 *   and a published deploy.
 * - "Apollo": bench/bare-graphql.mjs, Apollo Server's standalone server
 *   over the same schema, answering Cairn's own answers from memory (the
 *   two are checked byte for byte before any load).
 *
 * The reads, each connection sending them in turn: `getSitesByTeam`'s first
 * page of 20 with the fields the web app's site list asks for (each site's
 * latest and published deploy among them), and `getSiteBySlug` with the
 * command line's site fields (`cairn sites show <name>`).
 *
 * The load: autocannon in this process, CONNECTIONS keep-alive connections
 * (32, and 1), each sending its next request when its previous answer
 * arrived; first every case once BENCH_WARMUP_SECONDS unmeasured (no
 * round measures a server's first seconds), then in each round each case
 * BENCH_WARMUP_SECONDS unmeasured, then BENCH_SECONDS measured; the four cases run in turn, for BENCH_ROUNDS rounds, each
 * round starting one case later. Every figure is the median of its rounds,
 * a ratio the median of the rounds' ratios. Every answer's status (and
 * length, where one is given) is checked; any other counts as wrong. Each line also prints the
 * server's CPU per read (all its threads, and its main thread apart) and
 * the rest of the machine's CPU, so a figure the machine bounds can be told
 * from one the server bounds.
 *
 * Goals (issue 35): at 32 clients Cairn's reads/s at least 0.8x Apollo's,
 * with p99 at most 1.5x Apollo's p99.
 *
 * BENCH_BEFORE (a directory holding another checkout of Cairn, with its
 * node_modules) adds a third server, "before": that tree's service, as
 * `npm start` runs it, on a copy of the same data, measured in the same
 * rounds, so a change is judged against its parent under the same load.
 *
 * Knobs: BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (2), BENCH_ROUNDS (3),
 * BENCH_CPU_PROF (a directory: Cairn runs with --cpu-prof and writes its
 * profile there on exit), BENCH_NODE_FLAGS (more flags for Cairn).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../functions/core/config.js';
import type { Deploy } from '../functions/core/data/deploys.js';
import { newSortableId } from '../functions/core/ids.js';
import { startLocalService } from '../functions/local/service.js';
import { npmStartArgs, ROOT, startChildService, stopChild, type ChildService } from '../test/support/child-service.js';
import { BOOT, freePort, serviceEnv } from '../test/support/service-env.js';
import { percentile, table } from './site-fixture.js';
import { autocannon, log, num, type AutocannonClient } from './harness.js';

const SECONDS = num('BENCH_SECONDS', 10);
const WARMUP_SECONDS = num('BENCH_WARMUP_SECONDS', 2);
const ROUNDS = num('BENCH_ROUNDS', 3);
const CPU_PROF = process.env.BENCH_CPU_PROF;
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const SITES = 25;
const PAGE = 20;

const DEPLOY_SUMMARY = `
  id status phase startedAt completedAt totalTime ipfsHash previewImage published preview
  repository { commit branch owner name message }`;
/** The web app's site list (functions/web-app/ui/queries.ts), one page of 20. */
const SITES_QUERY = `query Sites($teamId: ID!, $nextToken: String) {
  getSitesByTeam(teamId: $teamId, limit: ${PAGE}, nextToken: $nextToken) { sites {
    id name slug description createdAt
    deploySettings { autoPublishing prDeployPreviews forkPullRequests source { __typename ... on Repository { url branch } ... on IpfsSource { cid } } }
    latestDeploy { ${DEPLOY_SUMMARY} }
    publishedDeploy { ${DEPLOY_SUMMARY} }
  } nextToken }
}`;
/** The command line's `cairn sites show <name>` (functions/cli/sites.ts). */
const SITE_QUERY = `query ($slug: String!) { site: getSiteBySlug(slug: $slug) { ...CliSite } }
fragment CliSite on Site {
  id name slug description platform createdAt updatedAt teamId
  buildSettings { buildCommand baseDirectoryPath publishDirectoryPath dockerImage environmentVariables { name value } }
  deploySettings { autoPublishing prDeployPreviews source { __typename ... on Repository { type url branch } ... on IpfsSource { cid } } }
  publishedDeploy { id status ipfsHash startedAt completedAt }
  latestDeploy { id status ipfsHash startedAt completedAt }
  ipnsName
}`;

const BEFORE = process.env.BENCH_BEFORE;

interface Target {
  label: 'Cairn' | 'Apollo' | 'before';
  pid: number;
  url: string;
}

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  wrong: number;
  /** The server's CPU per read, µs: all its threads, and its main thread (the event loop). */
  serverUs: number;
  mainUs: number;
  /** % of one core: the machine less both servers and this client. */
  restCpu: number;
  clientCpu: number;
}

/** CPU time (user + system, ms) of a process, all its threads; or of one of its threads. */
function processCpuMs(pid: number, tid?: number): number {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
function machineCpuMs(): number {
  const t = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.split(/\s+/).slice(1, 9).map(Number);
  return (t.reduce((s, n) => s + n, 0) - t[3]! - t[4]!) * 10;
}
const clientCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const pids: number[] = [];

async function load(target: Target, bodies: string[], lengths: Set<string>, connections: number, seconds: number): Promise<Figures> {
  let wrong = 0;
  const latencies: number[] = [];
  const setupClient = (client: AutocannonClient) => {
    client.on('headers', ({ statusCode, headers }) => {
      let length: string | undefined;
      for (let i = 0; i < headers.length; i += 2) if (headers[i]!.toLowerCase() === 'content-length') length = headers[i + 1];
      // Cairn frames its answers chunked; a length, when given, must be one of the two answers'.
      if (statusCode !== 200 || (length !== undefined && !lengths.has(length))) wrong++;
    });
    client.on('response', (_s, _b, ms) => latencies.push(ms));
  };
  const headers = { 'content-type': 'application/json', authorization: BOOT.apiToken };
  const server0 = processCpuMs(target.pid);
  const main0 = processCpuMs(target.pid, target.pid);
  const all0 = pids.reduce((s, pid) => s + processCpuMs(pid), 0);
  const client0 = clientCpuMs();
  const machine0 = machineCpuMs();
  const started = performance.now();
  const result = await autocannon({
    url: target.url,
    connections,
    duration: seconds,
    requests: bodies.map((body) => ({ method: 'POST', path: '/graphql', headers, body })),
    setupClient,
  });
  const wallMs = performance.now() - started;
  const n = Math.max(1, result.requests.total);
  const serverMs = processCpuMs(target.pid) - server0;
  const mainMs = processCpuMs(target.pid, target.pid) - main0;
  const allMs = pids.reduce((s, pid) => s + processCpuMs(pid), 0) - all0;
  const clientMs = clientCpuMs() - client0;
  const machineMs = machineCpuMs() - machine0;
  latencies.sort((a, b) => a - b);
  return {
    rps: (result.requests.total * 1000) / wallMs,
    p50: latencies.length ? percentile(latencies, 50) : NaN,
    p99: latencies.length ? percentile(latencies, 99) : NaN,
    wrong: wrong + result.errors + result.timeouts,
    serverUs: (serverMs * 1000) / n,
    mainUs: (mainMs * 1000) / n,
    restCpu: (100 * (machineMs - allMs - clientMs)) / wallMs,
    clientCpu: (100 * clientMs) / wallMs,
  };
}

/** A data directory with the bootstrap account's team holding SITES sites, each with a latest and a published deploy. */
async function seed(dataDir: string, env: Record<string, string>): Promise<void> {
  const service = await startLocalService(loadConfig({ ...env, CAIRN_DATA_DIR: dataDir, CAIRN_LOG_LEVEL: 'error' }));
  try {
    const { services } = service;
    const account = (await services.accounts.getAccountByName('default'))!;
    const start = Date.UTC(2026, 0, 1);
    for (let i = 0; i < SITES; i++) {
      const site = await services.sites.create({
        teamId: account.defaultTeamId,
        createdBy: account.id,
        description: `Bench site ${i}`,
        buildSettings: {
          buildCommand: 'npm run build',
          publishDirectoryPath: 'dist',
          environmentVariables: [{ name: 'NODE_ENV', value: 'production' }],
        },
        deploySettings: {
          autoPublishing: true,
          prDeployPreviews: false,
          source: { kind: 'repository', type: 'GIT_HOST', url: `https://git.example.com/team/site-${i}.git`, branch: 'main' },
        },
      });
      const deploys: Deploy[] = [0, 1].map((j) => {
        const at = start + (i * 2 + j) * 60_000;
        return {
          id: newSortableId(at),
          siteId: site.id,
          status: 'DEPLOYED',
          createdAt: new Date(at).toISOString(),
          startedAt: new Date(at).toISOString(),
          completedAt: new Date(at + 45_000).toISOString(),
          totalTime: 45_000,
          ipfsHash: 'bafybeihykld7uyxzogax6vgyvag42y7464eywpf55gxi5qpoisibh3c5wa',
          published: j === 0,
          autoPublish: true,
          repository: { commit: (i * 2 + j).toString(16).padStart(40, '0'), branch: 'main', message: `Commit ${i}.${j}` },
        };
      });
      await services.deploys.putMany(deploys);
      await services.sites.publishDeploy(site.id, deploys[0]!.id, { onlyIfNewer: false });
      await services.sites.setLatestDeploy(site.id, deploys[1]!.id);
    }
  } finally {
    await service.stop();
  }
}

async function post(url: string, body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: BOOT.apiToken },
    body,
  });
  return { status: res.status, text: await res.text() };
}

async function startBare(answers: string): Promise<{ child: ChildProcess; url: string; version: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'bench/bare-graphql.mjs')], {
    env: { ...process.env, PORT: String(port), ANSWERS: answers, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bare-graphql.mjs exited (${code})`)));
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve();
    });
  });
  const version = (JSON.parse(readFileSync(join(ROOT, 'node_modules/@apollo/server/package.json'), 'utf8')) as { version: string }).version;
  return { child, url: `http://127.0.0.1:${port}`, version };
}

/** The service of another checkout (`dir`), as npm start runs it, with `env`; resolves once it is running. */
async function startBefore(dir: string, env: Record<string, string>): Promise<ChildProcess> {
  const start = npmStartArgs();
  const child = spawn(process.execPath, [...start.nodeArgs, join(dir, start.script)], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the service in ${dir} exited (${code}):\n${stderr}`)));
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
      if (stderr.includes('Cairn is running.')) resolve();
    });
  });
  return child;
}

export interface SideBySideResult {
  met: boolean;
}

export async function sideBySide(): Promise<SideBySideResult> {
  log(
    `bench:graphql side by side on ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const scratch = await mkdtemp(join(tmpdir(), 'cairn-bench-gql-'));
  const dataDir = join(scratch, 'data');
  let cairn: ChildService | undefined;
  let bare: ChildProcess | undefined;
  let stopBefore = async () => {};
  try {
    const env = await serviceEnv(dataDir, { CAIRN_GC_INTERVAL: '0' });
    await seed(dataDir, env);
    let before: ChildProcess | undefined;
    let beforeUrl: string | undefined;
    if (BEFORE) {
      const beforeData = join(scratch, 'data-before');
      await cp(dataDir, beforeData, { recursive: true });
      const beforeEnv = await serviceEnv(beforeData, { CAIRN_GC_INTERVAL: '0', CAIRN_LOG_LEVEL: 'warn' });
      before = await startBefore(BEFORE, beforeEnv);
      beforeUrl = `http://127.0.0.1:${beforeEnv.CAIRN_API_PORT}`;
      stopBefore = () => stopChild(before!);
    }
    if (CPU_PROF) await mkdir(CPU_PROF, { recursive: true });
    const nodeArgs = [...NODE_FLAGS, ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : [])];
    cairn = await startChildService({ dataDir, nodeArgs, captureLog: true, env: { ...env, CAIRN_LOG_LEVEL: 'warn' } });
    const graphql = cairn.endpoints.graphql;

    const account = JSON.parse((await post(graphql, JSON.stringify({ query: '{ getCurrentTeam { id } }' }))).text) as {
      data: { getCurrentTeam: { id: string } };
    };
    const teamId = account.data.getCurrentTeam.id;
    const sitesBody = JSON.stringify({ query: SITES_QUERY, variables: { teamId } });
    const pageAnswer = await post(graphql, sitesBody);
    const page = JSON.parse(pageAnswer.text) as { data: { getSitesByTeam: { sites: Array<{ slug: string }> } } };
    if (pageAnswer.status !== 200 || page.data?.getSitesByTeam?.sites.length !== PAGE)
      throw new Error(`getSitesByTeam: ${pageAnswer.text}`);
    const siteBody = JSON.stringify({ query: SITE_QUERY, variables: { slug: page.data.getSitesByTeam.sites[3]!.slug } });
    const siteAnswer = await post(graphql, siteBody);
    const site = JSON.parse(siteAnswer.text) as { data: { site: unknown } };
    if (siteAnswer.status !== 200 || !site.data?.site) throw new Error(`getSiteBySlug: ${siteAnswer.text}`);
    const answers = join(scratch, 'answers.json');
    await writeFile(answers, JSON.stringify({ page: page.data.getSitesByTeam, site: site.data.site }));
    const started = await startBare(answers);
    bare = started.child;

    // The same bytes from both, for both reads.
    for (const [name, body, expected] of [
      ['getSitesByTeam', sitesBody, pageAnswer.text],
      ['getSiteBySlug', siteBody, siteAnswer.text],
    ] as const) {
      const got = await post(`${started.url}/graphql`, body);
      if (got.status !== 200 || got.text.trim() !== expected.trim())
        throw new Error(`the bare Apollo's ${name} differs from Cairn's:\n${got.text.slice(0, 400)}\n${expected.slice(0, 400)}`);
    }
    const lengths = new Set([String(Buffer.byteLength(pageAnswer.text)), String(Buffer.byteLength(siteAnswer.text))]);
    log(
      `  ${SITES} sites; answers of ${[...lengths].join(' and ')} bytes; Apollo Server ${started.version}; Cairn pid ${cairn.pid}, Apollo pid ${bare.pid}`,
    );
    const targets: Target[] = [
      { label: 'Cairn', pid: cairn.pid, url: cairn.endpoints.graphql.replace(/\/graphql$/, '') },
      { label: 'Apollo', pid: bare.pid!, url: started.url },
    ];
    pids.push(cairn.pid, bare.pid!);
    if (before && beforeUrl) {
      for (const [name, body, expected] of [
        ['getSitesByTeam', sitesBody, pageAnswer.text],
        ['getSiteBySlug', siteBody, siteAnswer.text],
      ] as const) {
        const got = await post(`${beforeUrl}/graphql`, body);
        // Page tokens are signed with each service's own key.
        const unsigned = (text: string) => text.trim().replace(/("nextToken":"[^".]*\.)[^"]*"/, '$1"');
        if (got.status !== 200 || unsigned(got.text) !== unsigned(expected)) {
          let at = 0;
          while (at < got.text.length && got.text[at] === expected[at]) at++;
          const around = (text: string) => text.slice(Math.max(0, at - 200), at + 200);
          throw new Error(`the service before's ${name} differs at ${at}:\n${around(got.text)}\n${around(expected)}`);
        }
      }
      targets.push({ label: 'before', pid: before.pid!, url: beforeUrl });
      pids.push(before.pid!);
      log(`  before: ${BEFORE}, pid ${before.pid}`);
    }
    const bodies = [sitesBody, siteBody];
    const cases = [32, 1].flatMap((connections) => targets.map((target) => ({ target, connections })));
    const figures = new Map<string, Figures[]>();
    const key = (label: string, connections: number) => `${label} ${connections}`;
    // Every server's first seconds under load (its code still being
    // compiled, its heap still growing) fall in no round: each case runs
    // once unmeasured before the first.
    for (const c of cases) await load(c.target, bodies, lengths, c.connections, WARMUP_SECONDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < cases.length; i++) {
        const c = cases[(i + round) % cases.length]!;
        await load(c.target, bodies, lengths, c.connections, WARMUP_SECONDS);
        const f = await load(c.target, bodies, lengths, c.connections, SECONDS);
        figures.set(key(c.target.label, c.connections), [...(figures.get(key(c.target.label, c.connections)) ?? []), f]);
        log(
          `  round ${round + 1} ${c.target.label.padEnd(6)} ${String(c.connections).padStart(2)} clients: ${f.rps.toFixed(0)} reads/s, p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms, ${f.wrong} wrong; server ${f.serverUs.toFixed(0)} µs/read (main thread ${f.mainUs.toFixed(0)}), client ${f.clientCpu.toFixed(0)}%, rest of the machine ${f.restCpu.toFixed(0)}%`,
        );
      }
    }

    const rows = [['clients', 'server', 'reads/s', 'p50 ms', 'p99 ms', 'CPU µs/read', 'main thread µs/read', 'wrong']];
    for (const connections of [32, 1])
      for (const t of targets) {
        const fs = figures.get(key(t.label, connections))!;
        rows.push([
          String(connections),
          t.label,
          median(fs.map((f) => f.rps)).toFixed(0),
          median(fs.map((f) => f.p50)).toFixed(2),
          median(fs.map((f) => f.p99)).toFixed(2),
          median(fs.map((f) => f.serverUs)).toFixed(0),
          median(fs.map((f) => f.mainUs)).toFixed(0),
          String(fs.reduce((s, f) => s + f.wrong, 0)),
        ]);
      }
    console.log(
      `\nGraphQL reads side by side: getSitesByTeam (20 sites, the web app's fields) and getSiteBySlug (the CLI's) in turn; ${ROUNDS} rounds of ${SECONDS} s (after ${WARMUP_SECONDS} s), medians; load average ${loadavg()[0]!.toFixed(2)} at the end\n`,
    );
    console.log(table(rows));
    const ratio = (connections: number, of: (f: Figures) => number) => {
      const c = figures.get(key('Cairn', connections))!;
      const a = figures.get(key('Apollo', connections))!;
      return median(c.map((f, i) => of(f) / of(a[i]!)));
    };
    const rps32 = ratio(32, (f) => f.rps);
    const p99at32 = ratio(32, (f) => f.p99);
    const rps1 = ratio(1, (f) => f.rps);
    const wrong = [...figures.values()].flat().reduce((s, f) => s + f.wrong, 0);
    if (BEFORE) {
      const vsBefore = (connections: number, of: (f: Figures) => number) => {
        const c = figures.get(key('Cairn', connections))!;
        const b = figures.get(key('before', connections))!;
        return median(c.map((f, i) => of(f) / of(b[i]!)));
      };
      console.log(
        `\nCairn / before: 32 clients ${vsBefore(32, (f) => f.rps).toFixed(2)}x reads/s, CPU per read ${vsBefore(32, (f) => f.serverUs).toFixed(2)}x; 1 client ${vsBefore(1, (f) => f.rps).toFixed(2)}x reads/s, CPU per read ${vsBefore(1, (f) => f.serverUs).toFixed(2)}x`,
      );
    }
    console.log(
      `\nCairn / Apollo: 32 clients ${rps32.toFixed(2)}x reads/s, p99 ${p99at32.toFixed(2)}x; 1 client ${rps1.toFixed(2)}x reads/s, p50 ${ratio(1, (f) => f.p50).toFixed(2)}x`,
    );
    const goals = [
      { goal: '32 clients: reads/s >= 0.8x Apollo', ok: rps32 >= 0.8, value: `${rps32.toFixed(2)}x` },
      { goal: '32 clients: p99 <= 1.5x Apollo', ok: p99at32 <= 1.5, value: `${p99at32.toFixed(2)}x` },
      { goal: 'every answer right', ok: wrong === 0, value: `${wrong} wrong` },
    ];
    for (const g of goals) console.log(`${g.ok ? 'met ' : 'MISSED'}  ${g.goal}: ${g.value}`);
    const warnings = cairn
      .log()
      .split('\n')
      .filter((l) => /"level":"(warn|error)"/i.test(l));
    if (warnings.length) log(`  Cairn logged ${warnings.length} warnings or errors; the first: ${warnings[0]!.slice(0, 300)}`);
    return { met: goals.every((g) => g.ok) };
  } finally {
    if (bare) await stopChild(bare);
    await stopBefore();
    await cairn?.stop();
    await rm(scratch, { recursive: true, force: true });
  }
}
