/**
 * `cairn deploy <site>` (a commit of the site's repository, its CID, or a
 * local folder with --dir) and `cairn deploys list|show`. With --watch the
 * deploy is followed until it ends: its phases as a progress display, its
 * log as it grows, and an exit status CI can use (0 DEPLOYED, 3 FAILED,
 * 4 CANCELLED).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { Settings } from './config-store.js';
import type { Context } from './context.js';
import type { DirectoryUpload } from './directory-upload.js';
import { ApiError, type GraphqlClient } from './graphql-client.js';
import { CliError, EXIT, formatBytes, formatDuration, formatTime, table } from './output.js';
import type { Progress } from './progress.js';
import { deployUrl, findSite, ipfsUrl, positiveInt, siteUrl, type Site } from './sites.js';
import { sleep } from '../core/retry.js';

export interface Deploy {
  id: string;
  status: 'IN_PROGRESS' | 'DEPLOYED' | 'FAILED' | 'CANCELLED';
  startedAt?: string | null;
  completedAt?: string | null;
  totalTime?: number | null;
  ipfsHash?: string | null;
  published: boolean;
  autoPublish: boolean;
  preview?: boolean;
  previewImage?: string | null;
  repository?: { commit?: string | null; branch?: string | null; message?: string | null } | null;
  log?: string | null;
  phase?: string | null;
}

const DEPLOY_FIELDS =
  'id status startedAt completedAt totalTime ipfsHash published autoPublish preview previewImage repository { commit branch message }';

/** Where an IN_PROGRESS deploy is, in order (the pipeline's phases). */
export const PHASES = ['queued', 'cloning', 'building', 'uploading', 'publishing'] as const;

/**
 * The phase a log shows, for a service whose API has no Deploy.phase: the
 * pipeline writes "<phase> done in" as it leaves each one. A deploy of a
 * CID checks it while "cloning" and goes on to "uploading".
 */
export function phaseFromLog(log: string): (typeof PHASES)[number] {
  if (!log.trim()) return 'queued';
  if (/\buploading done in\b/.test(log)) return 'publishing';
  if (/\bbuilding done in\b/.test(log)) return 'uploading';
  if (/\bcloning done in\b/.test(log)) return /Checking that this node holds/.test(log) ? 'uploading' : 'building';
  return 'cloning';
}

/** Reads deploys, with Deploy.phase while the service's schema has it. */
class DeployReader {
  private withPhase = true;
  constructor(private readonly api: GraphqlClient) {}

  async get(siteId: string, deployId: string, withLog: boolean): Promise<Deploy | null> {
    const fields = `${DEPLOY_FIELDS}${withLog ? ' log' : ''}`;
    const ask = (extra: string) =>
      this.api.request<{ getDeployById: Deploy | null }>(
        `query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ${fields}${extra} } }`,
        { s: siteId, d: deployId },
      );
    if (this.withPhase) {
      try {
        return (await ask(' phase')).getDeployById;
      } catch (err) {
        if (!(err instanceof ApiError) || !/Cannot query field "phase"/.test(err.message)) throw err;
        this.withPhase = false;
      }
    }
    return (await ask('')).getDeployById;
  }
}

/** The deploy as --json prints it: the record, its site and its addresses. */
function deployJson(settings: Settings, site: Site, deploy: Deploy, upload?: DirectoryUpload) {
  return {
    ...deploy,
    site: { id: site.id, name: site.name },
    url: deployUrl(settings, site.slug, deploy.id) ?? null,
    siteUrl: deploy.published ? (siteUrl(settings, site.slug) ?? null) : null,
    ipfsUrl: deploy.ipfsHash ? ipfsUrl(settings, deploy.ipfsHash) : null,
    ...(upload ? { upload } : {}),
  };
}

const lastLine = (log: string | null | undefined) =>
  (log ?? '')
    .trim()
    .split('\n')
    .at(-1)
    ?.replace(/^\S+Z\s+/, '') ?? '';

/** The lines of a deploy's end: where it is served, or why it did not get there. */
function endLines(settings: Settings, site: Site, deploy: Deploy): string[] {
  if (deploy.status === 'DEPLOYED') {
    const address = deployUrl(settings, site.slug, deploy.id);
    return [
      `Deployed ${deploy.id} in ${deploy.totalTime ? formatDuration(deploy.totalTime) : '?'}: ${deploy.ipfsHash}`,
      ...(address ? [`Deploy address: ${address}`] : []),
      ...(deploy.published
        ? [`Published at:   ${siteUrl(settings, site.slug) ?? ipfsUrl(settings, deploy.ipfsHash!)}`]
        : ['Not published (cairn sites show, publishDeploy)']),
      ...(deploy.ipfsHash ? [`On the gateway: ${ipfsUrl(settings, deploy.ipfsHash)}`] : []),
    ];
  }
  return [];
}

/** How long an ended deploy's log is read on for its last lines. */
const END_GRACE_MS = 5000;

interface WatchOptions {
  timeoutMs?: number;
  intervalMs: number;
}

/** Follows the deploy until it ends: phases on the progress display (or as lines), the log as it grows. */
async function watchDeploy(reader: DeployReader, site: Site, started: Deploy, progress: Progress, options: WatchOptions): Promise<Deploy> {
  const bar = progress.bar({ total: PHASES.length, unit: 'steps', payload: { label: 'queued' } });
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  let printed = 0;
  let shownPhase: string | undefined;
  let deploy = started;
  let endedAt: number | undefined;
  let logAtEnd: string | undefined;
  for (;;) {
    const current = await reader.get(site.id, started.id, true);
    if (!current) throw new CliError(`deploy ${started.id} is gone (was the site deleted?)`);
    const log = current.log ?? '';
    if (current.status !== 'IN_PROGRESS') {
      // The pipeline writes its last lines (whether it published) just after the deploy ends:
      // read on until the log stops growing, for a few seconds at most.
      endedAt ??= Date.now();
      const settled = logAtEnd === log || Date.now() - endedAt > END_GRACE_MS;
      logAtEnd = log;
      if (!settled) {
        await sleep(Math.min(options.intervalMs, 500));
        continue;
      }
    }
    deploy = current;
    const ended = deploy.status !== 'IN_PROGRESS';
    if (log.length < printed) printed = 0; // the log was cut to its head and tail: show what it is now
    // While it runs, whole lines only; at the end, everything.
    const upTo = ended ? log.length : log.lastIndexOf('\n') + 1;
    if (upTo > printed) {
      for (const line of log.slice(printed, upTo).replace(/\n$/, '').split('\n')) progress.line(line);
      printed = upTo;
    }
    // The API's phase is an enum (BUILDING); the display's names are the pipeline's (building).
    // An ended deploy has none: how far it got is in its log.
    const reached = ended ? phaseFromLog(log) : ((deploy.phase?.toLowerCase() as (typeof PHASES)[number] | undefined) ?? phaseFromLog(log));
    const phase = ended ? deploy.status : reached;
    if (phase !== shownPhase) {
      const upTo = Math.max(0, PHASES.indexOf(reached));
      bar.update(ended ? PHASES.length : upTo, { label: ended ? deploy.status : `${phase} (${upTo + 1}/${PHASES.length})` });
      if (!progress.live) {
        // Phases passed between two polls are named too (but building for a CID's deploy, which builds nothing).
        const from = shownPhase === undefined ? 0 : PHASES.indexOf(shownPhase as (typeof PHASES)[number]) + 1;
        for (let i = Math.min(from, ended ? from : upTo); i <= upTo; i++) {
          if (i < upTo && PHASES[i] === 'building' && /Checking that this node holds/.test(log)) continue;
          progress.line(`==> ${PHASES[i]}`);
        }
      }
      shownPhase = phase;
    }
    if (ended) break;
    if (Date.now() > deadline) {
      progress.stop();
      throw new CliError(
        `deploy ${deploy.id} is still ${deploy.status} after --timeout; it goes on (cairn deploys show ${site.name} ${deploy.id})`,
      );
    }
    await sleep(options.intervalMs);
  }
  progress.stop();
  return deploy;
}

interface DeployOptions {
  commit?: string;
  dir?: string;
  watch?: boolean;
  timeout?: string;
  interval?: string;
  carBytes?: string;
}

async function deployDirectory(
  settings: Settings,
  api: GraphqlClient,
  site: Site,
  dir: string,
  options: DeployOptions,
  ctx: Context,
): Promise<{ deploy: Deploy; upload: DirectoryUpload }> {
  // The importer and the CAR writer load only for --dir.
  const [{ uploadDirectory, DEFAULT_CAR_BYTES, MIN_CAR_BYTES }, { ImportClient }] = await Promise.all([
    import('./directory-upload.js'),
    import('./import-client.js'),
  ]);
  const carBytes = options.carBytes === undefined ? DEFAULT_CAR_BYTES : positiveInt(options.carBytes, '--car-bytes');
  if (carBytes < MIN_CAR_BYTES) throw new CliError(`--car-bytes must be at least ${MIN_CAR_BYTES}`);
  const progress = ctx.progress();
  const bar = progress.bar({ total: 1, unit: 'bytes', payload: { label: 'hashing' } });
  let stage = '';
  const upload = await uploadDirectory(new ImportClient(settings.apiUrl, api.apiKey), resolve(ctx.cwd, dir), {
    carBytes,
    onProgress: (p) => {
      if (p.stage !== stage) {
        stage = p.stage;
        bar.setTotal(Math.max(1, p.total));
      }
      bar.update(p.done, {
        label: p.stage === 'hashing' ? `hashing ${dir}` : p.stage === 'checking' ? 'asking what the service lacks' : 'uploading blocks',
      });
    },
  });
  progress.stop();
  const held = upload.blocks - upload.blocksSent;
  progress.line(
    `Uploaded ${dir}: ${upload.files} files, ${formatBytes(upload.bytes)}, root ${upload.cid} (${upload.blocksSent} of ${upload.blocks} blocks sent, ${formatBytes(upload.bytesSent)}${held ? `; ${held} already held` : ''})`,
  );
  const deploy = (
    await api.request<{ deployCid: Deploy }>(`mutation ($s: ID!, $c: String!) { deployCid(siteId: $s, cid: $c) { ${DEPLOY_FIELDS} } }`, {
      s: site.id,
      c: upload.cid,
    })
  ).deployCid;
  return { deploy, upload };
}

async function deploy(ref: string, options: DeployOptions, ctx: Context): Promise<void> {
  if (options.dir !== undefined && options.commit !== undefined)
    throw new CliError("--commit deploys a commit of the site's repository; --dir a local folder: give one");
  const timeoutMs = options.timeout === undefined ? undefined : positiveInt(options.timeout, '--timeout') * 1000;
  const intervalMs = options.interval === undefined ? 1000 : positiveInt(options.interval, '--interval');
  const settings = await ctx.settings();
  const api = await ctx.api();
  const site = await findSite(api, ref);
  let started: Deploy;
  let upload: DirectoryUpload | undefined;
  if (options.dir !== undefined) {
    ({ deploy: started, upload } = await deployDirectory(settings, api, site, options.dir, options, ctx));
  } else {
    started = (
      await api.request<{ triggerDeploy: Deploy }>(
        `mutation ($s: ID!, $c: String) { triggerDeploy(siteId: $s, commit: $c) { ${DEPLOY_FIELDS} } }`,
        {
          s: site.id,
          c: options.commit ?? null,
        },
      )
    ).triggerDeploy;
  }
  if (!options.watch) {
    const address = deployUrl(settings, site.slug, started.id);
    ctx.out.result(deployJson(settings, site, started, upload), () => [
      `Deploy ${started.id} of ${site.name} started (${started.status}).`,
      ...(address ? [`It will answer at ${address}`] : []),
      `Follow it: cairn deploys show ${site.name} ${started.id} --log`,
    ]);
    return;
  }
  ctx.out.line(`Deploy ${started.id} of ${site.name} started.`);
  const ended = await watchDeploy(new DeployReader(api), site, started, ctx.progress(), { timeoutMs, intervalMs });
  ctx.out.result(deployJson(settings, site, ended, upload), () => endLines(settings, site, ended));
  if (ended.status === 'FAILED') throw new CliError(`deploy ${ended.id} FAILED: ${lastLine(ended.log)}`, EXIT.deployFailed);
  if (ended.status === 'CANCELLED') throw new CliError(`deploy ${ended.id} was CANCELLED: ${lastLine(ended.log)}`, EXIT.deployCancelled);
}

async function listDeploys(ref: string, options: { limit?: string }, ctx: Context): Promise<void> {
  const settings = await ctx.settings();
  const api = await ctx.api();
  const want = options.limit === undefined ? 20 : positiveInt(options.limit, '--limit');
  const site = await findSite(api, ref);
  const deploys: Deploy[] = [];
  let nextToken: string | null = null;
  do {
    const page: { deploys: Deploy[]; nextToken: string | null } = (
      await api.request<{ getDeploysBySite: { deploys: Deploy[]; nextToken: string | null } }>(
        `query ($s: ID!, $n: String, $l: Int) { getDeploysBySite(siteId: $s, limit: $l, nextToken: $n) { deploys { ${DEPLOY_FIELDS} } nextToken } }`,
        { s: site.id, n: nextToken, l: Math.min(100, want - deploys.length) },
      )
    ).getDeploysBySite;
    deploys.push(...page.deploys);
    nextToken = page.nextToken;
  } while (nextToken && deploys.length < want);
  ctx.out.result(
    deploys.map((d) => deployJson(settings, site, d)),
    () =>
      deploys.length === 0
        ? `No deploys of ${site.name} yet: cairn deploy ${site.name}`
        : table(
            ['ID', 'STATUS', 'PUBLISHED', 'STARTED', 'TIME', 'COMMIT', 'CID'],
            deploys.map((d) => [
              d.id,
              d.status,
              d.published ? 'yes' : '',
              formatTime(d.startedAt),
              d.totalTime ? formatDuration(d.totalTime) : '-',
              d.repository?.commit?.slice(0, 10) ?? '-',
              d.ipfsHash ?? '-',
            ]),
          ),
  );
}

async function showDeploy(ref: string, deployId: string, options: { log?: boolean }, ctx: Context): Promise<void> {
  const settings = await ctx.settings();
  const api = await ctx.api();
  const site = await findSite(api, ref);
  const deploy = await new DeployReader(api).get(site.id, deployId, options.log === true || ctx.out.json);
  if (!deploy) throw new CliError(`no deploy ${deployId} of ${site.name}`);
  ctx.out.result(deployJson(settings, site, deploy), () => [
    `Deploy:    ${deploy.id} of ${site.name}`,
    `Status:    ${deploy.status}${deploy.status === 'IN_PROGRESS' && deploy.phase ? ` (${deploy.phase})` : ''}${deploy.published ? ', published' : ''}`,
    `Started:   ${formatTime(deploy.startedAt)}`,
    `Completed: ${formatTime(deploy.completedAt)}`,
    ...(deploy.repository?.commit
      ? [
          `Commit:    ${deploy.repository.commit} (${deploy.repository.branch ?? '?'})${deploy.repository.message ? ` ${deploy.repository.message}` : ''}`,
        ]
      : []),
    ...(deploy.ipfsHash ? [`CID:       ${deploy.ipfsHash}`] : []),
    ...(deploy.status === 'DEPLOYED' && deployUrl(settings, site.slug, deploy.id)
      ? [`Address:   ${deployUrl(settings, site.slug, deploy.id)}`]
      : []),
    ...(options.log ? ['', (deploy.log ?? '').trimEnd()] : []),
  ]);
}

export function registerDeploys(program: Command, context: (command: Command) => Context): void {
  program
    .command('deploy <site>')
    .description("deploy a site: its repository's branch head (or --commit), or a local folder (--dir)")
    .option('--commit <sha>', 'build this commit of the repository')
    .option('--dir <folder>', 'deploy this folder as it is: built into a DAG here, only the blocks the service lacks are sent')
    .option('-w, --watch', 'follow the deploy to its end; exit 0 when DEPLOYED, 3 when FAILED, 4 when CANCELLED')
    .option('--timeout <seconds>', 'with --watch: stop watching (exit 1) after this long')
    .option('--interval <ms>', 'with --watch: how often to ask (default 1000)')
    .option('--car-bytes <n>', 'with --dir: the most bytes of blocks per request (default 8 MiB)')
    .addHelpText(
      'after',
      `
Examples:
  cairn deploy my-blog --watch                 # the branch head, followed to its end
  cairn deploy my-blog --commit 3f2a9c1 --watch --json > deploy.json
  cairn deploy landing --dir ./public --watch  # a local folder, no git host`,
    )
    .action(async (ref: string, options: DeployOptions, command: Command) => deploy(ref, options, context(command)));

  const deploys = program.command('deploys').description("a site's deploys");
  deploys
    .command('list <site>')
    .description("the site's deploys, newest first")
    .option('--limit <n>', 'at most this many (default 20)')
    .action(async (ref: string, options: { limit?: string }, command: Command) => listDeploys(ref, options, context(command)));
  deploys
    .command('show <site> <deploy>')
    .description('one deploy: its status, commit, CID and address')
    .option('--log', 'print its log too')
    .action(async (ref: string, deployId: string, options: { log?: boolean }, command: Command) =>
      showDeploy(ref, deployId, options, context(command)),
    );
}
