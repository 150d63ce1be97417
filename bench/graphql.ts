/**
 * `npm run bench:graphql`, in two parts (BENCH_PARTS: `side-by-side`,
 * `listings`, both by default):
 *
 * - side by side: Cairn's GraphQL reads against a bare Apollo Server
 *   answering the same shapes from memory, at 32 clients and at one
 *   (bench/graphql-side-by-side.ts);
 * - listings: latency of the GraphQL API's listings through the local
 *   server (node:http, embedded DynamoDB), with 10 000 deploys on one site
 *   and 1 000 sites in one team, as follows.
 *
 * Prints p50 and p99 of getDeploysBySite (first page and 50th page, 20 to a
 * page) and getSitesByTeam (first page, and the 50th, which is the last),
 * and checks the goals: the 50th page costs at most 1.5 times the first,
 * and every p99 is under 25 ms.
 *
 * The client runs on its own thread (a worker), as any real client would be
 * off the server's event loop; the server, its embedded DynamoDB and its
 * IPFS node share this process as in `npm start`.
 *
 *   BENCH_SAMPLES=500 (default) requests per measurement, one at a time,
 *   after BENCH_WARMUP=50 (default) unmeasured ones.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../functions/core/config.js';
import type { Deploy } from '../functions/core/data/deploys.js';
import { newSortableId } from '../functions/core/ids.js';
import { startLocalService } from '../functions/local/service.js';
import { sideBySide } from './graphql-side-by-side.js';

const DEPLOYS = 10_000;
const SITES = 1_000;
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 500);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 50);
const API_KEY = 'cairn_bench_0123456789abcdefghijklmnopqrstuvwxyzAB';

const DEPLOYS_QUERY = `query ($siteId: ID!, $nextToken: String) {
  getDeploysBySite(siteId: $siteId, nextToken: $nextToken) {
    deploys { id status startedAt completedAt ipfsHash published autoPublish totalTime repository { commit branch message } }
    nextToken
  }
}`;
const SITES_QUERY = `query ($teamId: ID!, $nextToken: String) {
  getSitesByTeam(teamId: $teamId, nextToken: $nextToken) {
    sites { id name slug createdAt updatedAt platform deploySettings { autoPublishing source { __typename ... on IpfsSource { cid } } } }
    nextToken
  }
}`;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

/**
 * The measuring client: sequential POSTs with keep-alive, timing each round
 * trip. The listings take turns, request by request, so whatever else the
 * machine does falls on all of them alike.
 */
const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
(async () => {
  const { endpoint, apiKey, listings, warmup, samples } = workerData;
  const once = async (listing) => {
    const res = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', authorization: apiKey }, body: listing.body });
    const json = await res.json();
    if (res.status !== 200 || json.errors) throw new Error('request failed: ' + res.status + ' ' + JSON.stringify(json.errors));
    const page = Object.values(json.data)[0];
    const items = (page.deploys || page.sites).length;
    if (items !== listing.expectItems) throw new Error(listing.name + ': expected ' + listing.expectItems + ' items, got ' + items);
  };
  for (let i = 0; i < warmup; i++) for (const listing of listings) await once(listing);
  const times = listings.map(() => []);
  for (let i = 0; i < samples; i++) {
    for (let j = 0; j < listings.length; j++) {
      const t = performance.now();
      await once(listings[j]);
      times[j].push(performance.now() - t);
    }
  }
  parentPort.postMessage(times);
})().catch((err) => { throw err; });
`;

interface Listing {
  name: string;
  query: string;
  variables: Record<string, unknown>;
  expectItems: number;
}

function timeInWorker(endpoint: string, listings: Listing[]): Promise<number[][]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(CLIENT, {
      eval: true,
      workerData: {
        endpoint,
        apiKey: API_KEY,
        warmup: WARMUP,
        samples: SAMPLES,
        listings: listings.map((l) => ({
          name: l.name,
          expectItems: l.expectItems,
          body: JSON.stringify({ query: l.query, variables: l.variables }),
        })),
      },
    });
    worker.once('message', (times: number[][]) => {
      resolve(times);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function listings(): Promise<boolean> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cairn-bench-graphql-'));
  const config = loadConfig({
    CAIRN_DATA_DIR: dataDir,
    CAIRN_API_PORT: String(await freePort()),
    CAIRN_S3_PORT: String(await freePort()),
    CAIRN_GATEWAY_PORT: String(await freePort()),
    CAIRN_BOOTSTRAP_ACCESS_KEY: 'CAIRNBENCHKEY0000001',
    CAIRN_BOOTSTRAP_SECRET_KEY: 'bench-secret-0123456789abcdefghijklmnopqr',
    CAIRN_BOOTSTRAP_API_TOKEN: API_KEY,
    CAIRN_LOG_LEVEL: 'error',
  });
  const service = await startLocalService(config);
  try {
    const { services } = service;
    const account = (await services.accounts.getAccountByName('default'))!;
    const teamId = account.defaultTeamId;

    let t0 = performance.now();
    const newSite = () =>
      services.sites.create({
        teamId,
        createdBy: account.id,
        buildSettings: { buildCommand: 'npm run build', publishDirectoryPath: 'dist', environmentVariables: [] },
        deploySettings: { autoPublishing: true, prDeployPreviews: false, source: { kind: 'ipfs', cid: null } },
      });
    const busy = await newSite();
    for (let made = 1; made < SITES;) {
      const batch = Math.min(16, SITES - made);
      await Promise.all(Array.from({ length: batch }, newSite));
      made += batch;
    }
    const sitesSeconds = (performance.now() - t0) / 1000;

    t0 = performance.now();
    const start = Date.UTC(2024, 0, 1);
    const deploys: Deploy[] = Array.from({ length: DEPLOYS }, (_, i) => ({
      id: newSortableId(start + i * 60_000),
      siteId: busy.id,
      status: i % 10 === 3 ? 'FAILED' : 'DEPLOYED',
      createdAt: new Date(start + i * 60_000).toISOString(),
      startedAt: new Date(start + i * 60_000).toISOString(),
      completedAt: new Date(start + i * 60_000 + 45_000).toISOString(),
      totalTime: 45_000,
      ipfsHash: 'bafybeihykld7uyxzogax6vgyvag42y7464eywpf55gxi5qpoisibh3c5wa',
      published: i === DEPLOYS - 1,
      autoPublish: true,
      repository: { commit: i.toString(16).padStart(40, '0'), branch: 'main', message: `Commit ${i}` },
    }));
    for (let i = 0; i < deploys.length; i += 1000) await services.deploys.putMany(deploys.slice(i, i + 1000));
    const deploysSeconds = (performance.now() - t0) / 1000;
    console.log(
      `seeded ${SITES} sites in ${sitesSeconds.toFixed(1)} s and ${DEPLOYS} deploys on one site in ${deploysSeconds.toFixed(1)} s`,
    );

    const endpoint = service.endpoints.graphql;
    const post = async (query: string, variables: Record<string, unknown>) => {
      const res = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: API_KEY },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await res.json()) as {
        data?: Record<string, { nextToken: string | null; deploys?: unknown[]; sites?: unknown[] }>;
        errors?: unknown;
      };
      if (res.status !== 200 || body.errors) throw new Error(`request failed: ${res.status} ${JSON.stringify(body.errors)}`);
      return Object.values(body.data!)[0]!;
    };
    /** The token that fetches page `n` (1-based) of a listing, found by walking it. */
    const tokenForPage = async (query: string, variables: Record<string, unknown>, n: number) => {
      let token: string | null = null;
      for (let page = 1; page < n; page++) token = (await post(query, { ...variables, nextToken: token })).nextToken;
      if (n > 1 && !token) throw new Error(`the listing has fewer than ${n} pages`);
      return token;
    };

    const listings: Listing[] = [
      { name: 'getDeploysBySite, page 1', query: DEPLOYS_QUERY, variables: { siteId: busy.id }, expectItems: 20 },
      {
        name: 'getDeploysBySite, page 50',
        query: DEPLOYS_QUERY,
        variables: { siteId: busy.id, nextToken: await tokenForPage(DEPLOYS_QUERY, { siteId: busy.id }, 50) },
        expectItems: 20,
      },
      { name: 'getSitesByTeam, page 1', query: SITES_QUERY, variables: { teamId }, expectItems: 20 },
      {
        name: 'getSitesByTeam, page 50 (the last)',
        query: SITES_QUERY,
        variables: { teamId, nextToken: await tokenForPage(SITES_QUERY, { teamId }, 50) },
        expectItems: 20,
      },
    ];
    const load = loadavg()[0]!;
    // What the server's own thread went through meanwhile: garbage collection and event-loop stalls.
    const gc: number[] = [];
    const gcObserver = new PerformanceObserver((list) => gc.push(...list.getEntries().map((e) => e.duration)));
    gcObserver.observe({ entryTypes: ['gc'] });
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    loopDelay.enable();
    const times = await timeInWorker(endpoint, listings);
    loopDelay.disable();
    gcObserver.disconnect();
    const rows = listings.map((listing, i) => {
      const sorted = [...times[i]!].sort((x, y) => x - y);
      return {
        name: listing.name,
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        mean: sorted.reduce((sum, t) => sum + t, 0) / sorted.length,
      };
    });

    console.log(
      `\n${SAMPLES} requests each (after ${WARMUP} warm-up), one at a time from a client thread, the listings taking turns; 20 items a page; Node ${process.version}; ${cpus().length} CPUs, load average ${load.toFixed(1)} before and ${loadavg()[0]!.toFixed(1)} after:\n`,
    );
    console.log('| listing | p50 ms | p99 ms | mean ms |');
    console.log('| --- | ---: | ---: | ---: |');
    for (const r of rows) console.log(`| ${r.name} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.mean.toFixed(2)} |`);

    console.log(
      `\nserver thread meanwhile: ${gc.length} GC pauses, ${gc.reduce((a, b) => a + b, 0).toFixed(0)} ms in all, longest ${Math.max(0, ...gc).toFixed(1)} ms; event-loop delay p99 ${(loopDelay.percentile(99) / 1e6).toFixed(1)} ms, max ${(loopDelay.max / 1e6).toFixed(1)} ms`,
    );
    const [first, fiftieth] = rows as [(typeof rows)[0], (typeof rows)[0]];
    const ratio = fiftieth.p50 / first.p50;
    const worstP99 = Math.max(...rows.map((r) => r.p99));
    const goals = [
      { goal: 'deploys page 50 p50 / page 1 p50 <= 1.5', ok: ratio <= 1.5, value: ratio.toFixed(2) },
      { goal: 'every p99 < 25 ms', ok: worstP99 < 25, value: `${worstP99.toFixed(2)} ms` },
    ];
    console.log('');
    for (const g of goals) console.log(`${g.ok ? 'met ' : 'MISSED'}  ${g.goal}: ${g.value}`);
    return goals.every((g) => g.ok);
  } finally {
    await service.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const parts = new Set((process.env.BENCH_PARTS ?? 'side-by-side,listings').split(',').map((s) => s.trim()));
let met = true;
if (parts.has('side-by-side')) met = (await sideBySide()).met && met;
if (parts.has('listings')) met = (await listings()) && met;
process.exitCode = met ? 0 : 1;
