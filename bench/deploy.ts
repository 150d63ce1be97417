/**
 * `npm run bench:deploy`: a deploy end to end through the local server. A
 * real git server (test/support/git-server.ts: git-http-backend, offline)
 * holds a static site of 2,000 files, about 50 MB (1,900 HTML, CSS and JS
 * files of 1-30 KB in nested directories, 100 images of 100-600 KB; the
 * bytes come from a fixed seed, so every run deploys the same tree; the
 * site and the GraphQL calls are bench/site-fixture.ts, shared with
 * bench:sites), and Cairn's local server runs as a child process with the
 * flags `npm start` passes. Through the GraphQL API the benchmark creates
 * a site (build command `true`, publish directory `public`), triggers a
 * deploy and polls it to DEPLOYED, then deploys the same commit again; each
 * phase's time is read from the deploy's log (its lines carry timestamps;
 * the pipeline writes "<phase> done in X s" as each phase ends).
 *
 * Then the API's latency while a build runs: a site whose build is
 * `sleep 30` is deployed, and while its build runs, BENCH_TRIGGERS
 * sequential `triggerDeploy` calls go to a second site, each timed by the
 * client (after BENCH_WARMUP unmeasured ones). Each trigger supersedes the
 * one queued before it, which is cancelled: what counts here is the API's
 * answer, not those deploys. As a control, as many sequential reads
 * (getDeployById) follow in the same conditions: when they are as slow, the
 * machine is. Beside the clone phase, `git clone --depth 1` of the same
 * repository from the same server, timed before the service starts.
 *
 * Goals, printed beside the figures: everything outside the build command
 * (queue, clone, import, pin, publish) within 5 s for the first deploy; the
 * second deploy of the unchanged tree within 2 s, all of it; triggerDeploy
 * p99 under 50 ms while a build runs.
 *
 * A preview screenshot, if the pipeline takes one, comes after DEPLOYED and
 * outside these phases: its log lines, when there are any, are reported
 * apart.
 *
 * Old and new designs side by side, on a machine whose load cannot be
 * controlled: BENCH_BASELINE names another checkout of Cairn (say, the
 * commit before a change, unpacked with `git archive` beside this one and
 * given this tree's node_modules); its own test/support/child-service.ts
 * starts its service beside this tree's, and each round deploys the site
 * twice on each, with fresh data directories (a cold kept repository for
 * the first deploy), alternating which goes first. Every figure is printed
 * with the machine's load average when its deploy began.
 *
 * Knobs (environment): BENCH_SEED (20), BENCH_SITE_MB (50), BENCH_FILES
 * (2000, of which 100 images), BENCH_TRIGGERS (200), BENCH_WARMUP (20),
 * BENCH_ROUNDS (1), BENCH_BASELINE (none), BENCH_CPU_PROF (a directory:
 * this tree's server runs with --cpu-prof and writes its profile there on
 * exit), BENCH_NODE_FLAGS (more V8 flags for the servers).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { startGitServer, type GitServer } from '../test/support/git-server.js';
import { npmStartArgs, peakRssMiB, startChildService, type ChildService, type ChildServiceOptions } from '../test/support/child-service.js';
import { api, percentile, siteFiles, table, type Api } from './site-fixture.js';
import { log, num } from './harness.js';

const SEED = num('BENCH_SEED', 20);
const SITE_BYTES = num('BENCH_SITE_MB', 50) * 1e6;
const FILES = num('BENCH_FILES', 2000);
const TRIGGERS = num('BENCH_TRIGGERS', 200);
const WARMUP = num('BENCH_WARMUP', 20);
const ROUNDS = num('BENCH_ROUNDS', 1);
const BASELINE = process.env.BENCH_BASELINE;
const CPU_PROF = process.env.BENCH_CPU_PROF;
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const POLL_MS = 50;

/** A server to deploy on: this tree's, or a baseline's. */
interface Design {
  label: string;
  start(): Promise<ChildService>;
}

/** One deploy's figures, in ms, from its log's timestamped lines. */
interface DeployFigures {
  queued: number; // trigger sent -> "Deploy ... started"
  cloning: number;
  fetch: number; // "Cloning ..." -> "Fetched ..."
  tree: number; // "Fetched ..." -> "Checked out ...": the tree written, the checkout made
  load: number; // the machine's 1-minute load average when the deploy was triggered
  building: number;
  uploading: number;
  importOnly: number; // "Uploading ..." -> "Imported ..."
  publishing: number; // pin, up to "phase publishing done"
  sitePublished: number; // "phase publishing done" -> "Published: ..."
  total: number; // trigger sent -> "Published: ..."
  outsideBuild: number; // total minus the building phase
  seen: number; // trigger sent -> the client's poll saw DEPLOYED
  imported: string; // "2000 files (50.0 MB)"
  extra: string[]; // lines after "Published" (a screenshot step), with their offsets
}

function figuresOf(logText: string, triggeredAt: number, seenAt: number, load = 0): DeployFigures {
  const lines = logText.split('\n').flatMap((l) => {
    const m = /^(\d{4}-\d\d-\d\dT[\d:.]+Z) {2}(.*)$/.exec(l);
    return m ? [{ at: Date.parse(m[1]!), text: m[2]! }] : [];
  });
  const at = (re: RegExp) => {
    const line = lines.find((l) => re.test(l.text));
    if (!line) throw new Error(`no line matching ${re} in the deploy's log:\n${logText}`);
    return line.at;
  };
  const started = at(/^Deploy \S+ started/);
  const cloned = at(/^cloning done in/);
  const built = at(/^building done in/);
  const uploaded = at(/^uploading done in/);
  const pinned = at(/^phase publishing done in/);
  const published = at(/^(Published|Not published)/);
  const publishedIndex = lines.findIndex((l) => /^(Published|Not published)/.test(l.text));
  const extra = lines.slice(publishedIndex + 1).map((l) => `+${((l.at - published) / 1000).toFixed(2)} s  ${l.text}`);
  const building = built - cloned;
  const fetched = at(/^Fetched /);
  return {
    queued: started - triggeredAt,
    cloning: cloned - started,
    fetch: fetched - at(/^Cloning /),
    tree: at(/^Checked out /) - fetched,
    load,
    building,
    uploading: uploaded - built,
    importOnly: at(/^Imported \d+ files/) - at(/^Uploading /),
    publishing: pinned - uploaded,
    sitePublished: published - pinned,
    total: published - triggeredAt,
    outsideBuild: published - triggeredAt - building,
    seen: seenAt - triggeredAt,
    imported: /^Imported (.*?):/.exec(lines.find((l) => l.text.startsWith('Imported '))!.text)![1]!,
    extra,
  };
}

async function deployOnce(a: Api, siteId: string, label: string): Promise<{ id: string; triggeredAt: number; figures: DeployFigures }> {
  const load = loadavg()[0]!;
  const triggeredAt = Date.now();
  const queued = await a.trigger(siteId);
  const { deploy, seenAt } = await a.waitFor(siteId, queued.id);
  let full = await a.deploy(siteId, queued.id);
  if (deploy.status !== 'DEPLOYED') throw new Error(`${label} ended ${deploy.status}:\n${full.log}`);
  // The pipeline says whether it published just after the record says DEPLOYED: read the log once that line is in it.
  for (const until = Date.now() + 10_000; !/^\S+ {2}(Published|Not published)/m.test(full.log) && Date.now() < until;) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    full = await a.deploy(siteId, queued.id);
  }
  const figures = figuresOf(full.log, triggeredAt, seenAt, load);
  log(
    `  ${label} (load ${load.toFixed(2)}): ${full.ipfsHash}, ${figures.imported}, deployed in ${(figures.total / 1000).toFixed(2)} s; its log:`,
  );
  log(full.log.trimEnd().replace(/^/gm, '    '));
  return { id: queued.id, triggeredAt, figures };
}

async function main(): Promise<void> {
  log(
    `bench:deploy on ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  let git: GitServer | undefined;
  let cairn: ChildService | undefined;
  try {
    git = await startGitServer();
    let began = Date.now();
    const files = siteFiles({ seed: SEED, bytes: SITE_BYTES, files: FILES });
    const bytes = Object.entries(files)
      .filter(([p]) => p.startsWith('public/'))
      .reduce((s, [, b]) => s + b.length, 0);
    const count = Object.keys(files).filter((p) => p.startsWith('public/')).length;
    log(
      `  site: ${count} files, ${(bytes / 1e6).toFixed(1)} MB under public/ (seed ${SEED}), made in ${((Date.now() - began) / 1000).toFixed(1)} s`,
    );
    began = Date.now();
    await git.commit('bench/site', files, 'The benchmark site');
    await git.commit('bench/sleeper', { 'index.html': '<p>sleeps</p>' }, 'A site whose build sleeps');
    await git.commit('bench/target', { 'index.html': '<p>target</p>' }, 'The site triggerDeploy is timed on');
    // Served from one pack, as a git host serves a repository.
    await git.pack('bench/site');
    log(`  committed and pushed in ${((Date.now() - began) / 1000).toFixed(1)} s`);

    // A reference for the clone phase: git's own command line, the same shallow clone from the same server.
    const scratch = await mkdtemp(join(tmpdir(), 'cairn-bench-clone-'));
    began = Date.now();
    await promisify(execFile)('git', [
      'clone',
      '--quiet',
      '--depth',
      '1',
      '--single-branch',
      '--branch',
      'main',
      '--no-tags',
      git.repoUrl('bench/site'),
      scratch,
    ]);
    const gitCliMs = Date.now() - began;
    await rm(scratch, { recursive: true, force: true });
    log(`  reference: \`git clone --depth 1\` of the site took ${(gitCliMs / 1000).toFixed(2)} s`);

    if (CPU_PROF) await mkdir(CPU_PROF, { recursive: true });
    const nodeArgs = (profile: boolean) => [...NODE_FLAGS, ...(profile && CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : [])];
    const designs: Design[] = [{ label: 'this tree', start: () => startChildService({ nodeArgs: nodeArgs(true) }) }];
    if (BASELINE) {
      // The other checkout's own launcher: its ROOT, its bin/local.ts, its flags.
      const other = (await import(pathToFileURL(join(resolve(BASELINE), 'test/support/child-service.ts')).href)) as {
        startChildService(o: ChildServiceOptions): Promise<ChildService>;
      };
      designs.push({ label: `baseline (${BASELINE})`, start: () => other.startChildService({ nodeArgs: nodeArgs(false) }) });
    }
    const rounds: Array<Array<{ design: string; first: DeployFigures; second: DeployFigures; rss: number }>> = [];
    let first!: { id: string; triggeredAt: number; figures: DeployFigures };
    let second!: { id: string; triggeredAt: number; figures: DeployFigures };
    let site!: string;
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? designs : [...designs].reverse();
      const done: Array<{ design: string; first: DeployFigures; second: DeployFigures; rss: number }> = [];
      for (const design of order) {
        log(`round ${round + 1}: ${design.label}`);
        const server = await design.start();
        try {
          const a = api(server.endpoints.graphql, POLL_MS);
          const id = (await a.createSite(git.repoUrl('bench/site'), { buildCommand: 'true', publishDirectoryPath: 'public' })).id;
          const one = await deployOnce(a, id, 'first deploy');
          const two = await deployOnce(a, id, 'second deploy, unchanged tree');
          done.push({ design: design.label, first: one.figures, second: two.figures, rss: peakRssMiB(server.pid) });
          if (design === designs[0] && round === ROUNDS - 1) {
            // This tree's server of the last round stays up for the latency measurement below.
            cairn = server;
            [first, second, site] = [one, two, id];
            continue;
          }
        } catch (err) {
          await server.stop();
          throw err;
        }
        await server.stop();
      }
      rounds.push(done);
    }
    const a = api(cairn!.endpoints.graphql, POLL_MS);
    log(`triggerDeploy while a build runs (this tree's last server), load ${loadavg()[0]!.toFixed(2)}`);

    // triggerDeploy while a build runs on another site.
    const sleeper = (await a.createSite(git.repoUrl('bench/sleeper'), { buildCommand: 'echo sleeping; sleep 30' })).id;
    const target = (await a.createSite(git.repoUrl('bench/target'), {})).id;
    const sleeping = await a.trigger(sleeper);
    await a.waitFor(sleeper, sleeping.id, (d) => (d.log ?? '').includes('sleeping') || d.status !== 'IN_PROGRESS', 60_000, 'status log');
    const times: number[] = [];
    let lastTarget = '';
    const window0 = Date.now();
    for (let i = 0; i < WARMUP + TRIGGERS; i++) {
      const t0 = performance.now();
      lastTarget = (await a.trigger(target)).id;
      if (i >= WARMUP) times.push(performance.now() - t0);
    }
    const windowMs = Date.now() - window0;
    // A control: as many sequential reads (getDeployById) in the same conditions. When they are as slow, the machine is, not triggerDeploy.
    const reads: number[] = [];
    for (let i = 0; i < TRIGGERS; i++) {
      const t0 = performance.now();
      await a.deploy(target, lastTarget, 'id status');
      reads.push(performance.now() - t0);
    }
    const stillBuilding = (await a.deploy(sleeper, sleeping.id, 'status')).status === 'IN_PROGRESS';
    await a.cancel(sleeper, sleeping.id).catch(() => {});
    const sorted = [...times].sort((x, y) => x - y);
    const p50 = percentile(sorted, 50);
    const p99 = percentile(sorted, 99);
    const mean = times.reduce((s, t) => s + t, 0) / times.length;
    const readsSorted = [...reads].sort((x, y) => x - y);
    log(
      `  ${TRIGGERS} triggerDeploy (after ${WARMUP} unmeasured) in ${(windowMs / 1000).toFixed(1)} s; the sleeping build was ${stillBuilding ? 'still running at the end' : 'NO LONGER running at the end'}`,
    );

    // A screenshot step, if any, logs after "Published": its lines have had the trigger run's time to appear.
    const extraOf = async (id: string, triggeredAt: number) => {
      const d = await a.deploy(site, id, 'log');
      return figuresOf(d.log, triggeredAt, triggeredAt).extra;
    };
    const extras = [await extraOf(first.id, first.triggeredAt), await extraOf(second.id, second.triggeredAt)];
    const rss = peakRssMiB(cairn!.pid);

    const s = (ms: number) => (ms / 1000).toFixed(2);
    const median = (xs: number[]) => {
      const sorted = [...xs].sort((x, y) => x - y);
      return sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
    };
    const of = (design: string) => rounds.flatMap((r) => r.filter((d) => d.design === design));
    const rows: Array<[string, keyof DeployFigures]> = [
      ['queued (trigger sent -> pipeline started)', 'queued'],
      ['cloning', 'cloning'],
      ['  fetch (Cloning -> Fetched)', 'fetch'],
      ['  tree and checkout (Fetched -> Checked out)', 'tree'],
      ['building (`true` in the sandbox)', 'building'],
      ['uploading (import into the blockstore)', 'uploading'],
      ['  of which importDirectory', 'importOnly'],
      ['publishing (pin the root)', 'publishing'],
      ['site published (pointer moved)', 'sitePublished'],
      ['total: trigger sent -> "Published"', 'total'],
      ['outside the build command', 'outsideBuild'],
      ['trigger sent -> client saw DEPLOYED', 'seen'],
    ];
    const cloneRow = rows.findIndex(([, key]) => key === 'cloning') + 1;
    const mine = of(designs[0]!.label);
    const f1 = { outsideBuild: median(mine.map((r) => r.first.outsideBuild)) };
    const f2 = { total: median(mine.map((r) => r.second.total)) };
    const metIn = (ok: (r: (typeof mine)[number]) => boolean) => `${mine.filter(ok).length} of ${mine.length}`;
    const out = [
      '',
      `Site: ${first.figures.imported}, build command \`true\`, publish directory public/ (seed ${SEED}). ${ROUNDS} round(s)${BASELINE ? `, each deploying on ${designs.map((d) => d.label).join(' and ')} in turn (alternating which first)` : ''}; medians of the rounds.`,
      '',
      table([
        ['phase, s (median)', ...designs.flatMap((d) => [`${d.label}: first`, 'second (unchanged)'])],
        ...rows
          .map(([label, key]) => [
            label,
            ...designs.flatMap((d) => [
              s(median(of(d.label).map((r) => r.first[key] as number))),
              s(median(of(d.label).map((r) => r.second[key] as number))),
            ]),
          ])
          .toSpliced(cloneRow, 0, [
            '  (reference: `git clone --depth 1`, same server, before the servers)',
            s(gitCliMs),
            ...designs.flatMap(() => ['', '']).slice(1),
          ]),
        [
          'load average when triggered (1 min)',
          ...designs.flatMap((d) => [
            median(of(d.label).map((r) => r.first.load)).toFixed(2),
            median(of(d.label).map((r) => r.second.load)).toFixed(2),
          ]),
        ],
        ['server peak RSS, MiB', ...designs.flatMap((d) => [median(of(d.label).map((r) => r.rss)).toFixed(0), ''])],
      ]),
      '',
      table([
        ['round', 'design', 'first: outside the build, s', 'load', 'second: all of it, s', 'load'],
        ...rounds.flatMap((r, i) =>
          r.map((d) => [
            String(i + 1),
            d.design,
            s(d.first.outsideBuild),
            d.first.load.toFixed(2),
            s(d.second.total),
            d.second.load.toFixed(2),
          ]),
        ),
      ]),
      '',
      table([
        ['triggerDeploy while a build runs, ms', 'p50', 'p99', 'max', 'mean'],
        [
          `${TRIGGERS} sequential calls${stillBuilding ? '' : ' (the build had ENDED)'}`,
          p50.toFixed(1),
          p99.toFixed(1),
          sorted.at(-1)!.toFixed(1),
          mean.toFixed(1),
        ],
        [
          `control: ${TRIGGERS} getDeployById, right after`,
          percentile(readsSorted, 50).toFixed(1),
          percentile(readsSorted, 99).toFixed(1),
          readsSorted.at(-1)!.toFixed(1),
          (reads.reduce((x, t) => x + t, 0) / reads.length).toFixed(1),
        ],
      ]),
      '',
      table([
        ['goal', 'figure', 'goal', 'met'],
        [
          `first deploy, outside the build (queue, clone, import, pin, publish; median, ${designs[0]!.label})`,
          `${s(f1.outsideBuild)} s`,
          '<= 5 s',
          `${f1.outsideBuild <= 5000 ? 'met' : 'NOT met'} (rounds: ${metIn((r) => r.first.outsideBuild <= 5000)})`,
        ],
        [
          `second deploy of the unchanged tree, all of it (median, ${designs[0]!.label})`,
          `${s(f2.total)} s`,
          '<= 2 s',
          `${f2.total <= 2000 ? 'met' : 'NOT met'} (rounds: ${metIn((r) => r.second.total <= 2000)})`,
        ],
        ['triggerDeploy p99 while a build runs', `${p99.toFixed(1)} ms`, '< 50 ms', p99 < 50 && stillBuilding ? 'met' : 'NOT met'],
      ]),
      '',
      ...(extras.some((e) => e.length)
        ? [
            'After "Published" (outside the phases; a preview screenshot):',
            ...extras.flatMap((e, i) => e.map((l) => `  ${i ? 'second' : 'first'}: ${l}`)),
            '',
          ]
        : ['No log lines after "Published" (no screenshot step).', '']),
      `This tree's last server: peak RSS ${rss.toFixed(0)} MiB. Times from the deploy log's timestamps (ms); the client polls every ${POLL_MS} ms. Server: a child process with \`npm start\`'s flags (${[...npmStartArgs().nodeArgs, ...NODE_FLAGS].join(' ')}), ${process.version}.`,
    ];
    process.stdout.write(out.join('\n') + '\n');
  } finally {
    await cairn?.stop();
    await git?.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:deploy failed: ${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
