/**
 * The deploy pipeline: one claimed deploy, moved through its phases —
 * cloning (or checking the CID), building, uploading (the publish
 * directory becomes one UnixFS DAG), publishing — each recorded on the
 * deploy before it starts and written to its log with its duration. A
 * cancel (asked through the API, seen between phases and during the build)
 * ends it CANCELLED; any failure ends it FAILED with the reason as the
 * log's last line. Nothing here knows which machine it runs on: the build
 * runner, the log store and the workspace come from the caller.
 *
 * A build runs here and is waited for (bubblewrap), or is detached: handed
 * to another machine (CodeBuild) with the checkout, after which runDeploy
 * returns the deploy still in its building phase; resumeDeploy takes it up
 * when the build's end is reported. Both share the phases before the build
 * (clone, path checks) and after it (import, pin, publish).
 */
import { mkdir, mkdtemp, readdir, realpath, rm, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { CID } from 'multiformats/cid';
import type { Services } from '../core/services.js';
import type { Site } from '../core/data/sites.js';
import type { Deploy, DeployBuild, DeployEnd, DeployPhase, DeployRepository } from '../core/data/deploys.js';
import { PublishedMeanwhile, referenceCidOf } from '../core/data/deploys.js';
import { deployLogKey, type LogStore } from '../core/ports/log-store.js';
import { BuildRefused, isDetached, type BuildRunner, type DetachedBuildEnd, type DetachedBuildRunner } from '../core/ports/build-runner.js';
import { cidOf } from '../core/ipfs/cid.js';
import { pinRoot } from '../core/storage/pins.js';
import { MissingBlockError, walkDag } from '../core/storage/dag-walk.js';
import { DeployLog } from '../core/logs/deploy-log.js';
// The clone step (isomorphic-git in Lambda, 236 KB of the worker's bundle)
// is imported when a deploy first clones: the worker's other events (a
// build's end, the minute's tick) never clone, and its cold start is spent
// without it.
import type { ClonedCommit } from './steps/clone/index.js';
import { CloneError } from './steps/clone/clone-error.js';
import { publicationOf, shortCommit, skippedNewer, type Publication } from './steps/ancestry.js';
import { retryDeploy } from '../core/hosting/deploys.js';
import type { SourceMirrors } from './steps/checkout/mirrors.js';
import type { KnownFiles } from './steps/checkout/known-files.js';
import { importDirectory, PublishDirectoryError } from '../core/ipfs/import-directory.js';
import type { Screenshotter } from '../core/ports/screenshotter.js';
import { announce, type AnnounceServices } from './steps/announce.js';
import { notifyDeploy, recordCommitStatus } from '../core/hosting/notifications.js';
import { statusTargetOf } from '../core/hosting/commit-status.js';
import { checkSiteFiles, siteRules } from '../core/hosting/site-rules.js';
import { SiteFileError } from '../core/hosting/redirects.js';

/**
 * What a deploy's run reads and writes itself (its record and log, the
 * site's secrets, the blocks under the upload gate), besides what
 * announcing it does (the CDN, notifications, the picture).
 */
export type PipelineServices = AnnounceServices &
  Pick<Services, 'config' | 'deployLogs' | 'deployQueue' | 'deploys' | 'gate' | 'ipfs' | 'logger' | 'objects' | 'siteSecrets' | 'sites'>;

export interface PipelineOptions {
  services: PipelineServices;
  /** Builds here and waits (bubblewrap), or hands builds to another machine (CodeBuild). */
  runner: BuildRunner | DetachedBuildRunner;
  /** Where checkouts are made (each deploy gets its own directory, removed afterwards). */
  workspace: string;
  /** Repositories kept between deploys (fetched into, copied from); none: each deploy clones anew. */
  sources?: SourceMirrors;
  buildTimeoutMs: number;
  logs?: LogStore;
  /** Takes the preview image of a deploy built here; none: no preview images. */
  screenshotter?: Screenshotter;
  previewTimeoutMs?: number;
}

const PREVIEW_TIMEOUT_MS = 30_000;

/** A failure the deploy's log ends with as it is (the user's to fix). */
export class DeployFailure extends Error {
  override name = 'DeployFailure';
}

class Cancelled extends Error {
  override name = 'Cancelled';
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The same words whichever machine stopped the build. */
export const timedOutReason = (timeoutMs: number) =>
  `the build ran past the time limit (${Math.round(timeoutMs / 60000)} min) and was stopped`;

/**
 * What the log should say of the `_redirects` and `_headers` of content
 * deployed by CID (a directory's are checked on disk, checkSiteFiles): one
 * line per file that stops its rules. A root that is no directory has none.
 */
async function siteFileWarnings(services: Pick<Services, 'ipfs' | 'logger'>, root: CID): Promise<string[]> {
  let rules: Awaited<ReturnType<typeof siteRules>>;
  try {
    rules = await siteRules((await services.ipfs()).blockstore, root);
  } catch (err) {
    services.logger.debug('could not read the rules of content deployed by CID', { root: root.toString(), err });
    return [];
  }
  return [rules.redirects, rules.headers]
    .filter((r): r is SiteFileError => r instanceof SiteFileError)
    .map((err) => `${err.message}; the site answers 500 where the file is needed until it is fixed`);
}

/**
 * A path inside the checkout, from settings the user wrote: relative, and
 * never out of it (`..`, an absolute path, or a symlink pointing out).
 */
async function insideCheckout(checkout: string, ...parts: Array<string | null | undefined>): Promise<string> {
  const rel = parts.filter((p): p is string => !!p && p !== '.' && p !== './').join('/');
  if (isAbsolute(rel) || rel.split(/[\\/]/).includes('..'))
    throw new DeployFailure(`the path "${rel}" leaves the repository; paths are relative to it`);
  const path = resolve(checkout, rel);
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return path; // the caller says what is missing
    throw err;
  }
  const root = await realpath(checkout);
  if (real !== root && !real.startsWith(root + sep))
    throw new DeployFailure(`the path "${rel}" leads out of the repository (through a symlink)`);
  return real;
}

/** The publish directory as the user named it (for the log), relative to the repository. */
const publishPathOf = (build: DeployBuild) =>
  build.publishDirectory ? join(build.baseDirectory ?? '', build.publishDirectory) : build.baseDirectory || '.';

/** What the build sees: the site's variables its scope gets (secret ones opened), and the deploy's own. */
const buildEnv = (
  deployId: string,
  build: DeployBuild,
  secrets: Record<string, string>,
  cloned: Pick<ClonedCommit, 'commit' | 'branch'>,
) => ({
  ...build.env,
  ...secrets,
  CI: 'true',
  CAIRN_DEPLOY_ID: deployId,
  COMMIT_REF: cloned.commit,
  BRANCH: cloned.branch,
});

/**
 * One turn of the pipeline over a deploy (a whole run, or a resumed one):
 * its log, its phase, and what it holds until it ends (the collection gate,
 * an imported root not yet referenced, a workspace).
 */
class DeployTurn {
  readonly log: DeployLog;
  readonly services: PipelineServices;
  repository: DeployRepository;
  phase: DeployPhase;
  phaseStarted: number;
  release?: () => void;
  imported?: string;
  /** The built directory this turn imported: what the preview image pictures. */
  publishDir?: string;
  /** What the import need not read again (files unchanged since git wrote them). */
  known?: KnownFiles;
  private work?: string;

  private constructor(
    readonly options: PipelineOptions,
    readonly deploy: Deploy,
    readonly signal: AbortSignal,
    log: DeployLog,
    phase: DeployPhase,
    phaseStarted: number,
  ) {
    this.services = options.services;
    this.log = log;
    this.repository = deploy.repository ?? {};
    this.phase = phase;
    this.phaseStarted = phaseStarted;
  }

  static begin(options: PipelineOptions, claimed: Deploy, signal: AbortSignal): DeployTurn {
    const log = new DeployLog(
      options.logs ?? options.services.deployLogs,
      deployLogKey(claimed.siteId, claimed.id),
      options.services.logger,
    );
    return new DeployTurn(options, claimed, signal, log, 'cloning', Date.now());
  }

  /** The turn that takes a deploy up where another process left it (its log goes on). */
  static async resume(options: PipelineOptions, deploy: Deploy, phase: DeployPhase, since: number): Promise<DeployTurn> {
    const log = await DeployLog.continued(
      options.logs ?? options.services.deployLogs,
      deployLogKey(deploy.siteId, deploy.id),
      options.services.logger,
    );
    return new DeployTurn(options, deploy, new AbortController().signal, log, phase, since);
  }

  get started(): number {
    return Date.parse(this.deploy.startedAt ?? this.deploy.createdAt);
  }

  /** This turn's own directory under the workspace, removed when the turn ends. */
  async workDir(): Promise<string> {
    await mkdir(this.options.workspace, { recursive: true });
    return (this.work ??= await mkdtemp(join(this.options.workspace, `${this.deploy.id}-`)));
  }

  /** Records the next phase; a cancel asked meanwhile (in the record or by signal) stops here. */
  async advance(next: DeployPhase, set: { repository?: DeployRepository } = {}): Promise<void> {
    this.log.line(`${this.phase} done in ${seconds(Date.now() - this.phaseStarted)}`);
    if (this.signal.aborted || !(await this.services.deploys.advance(this.deploy.siteId, this.deploy.id, next, set))) throw new Cancelled();
    this.phase = next;
    this.phaseStarted = Date.now();
  }

  async finish(end: DeployEnd): Promise<Deploy | undefined> {
    // The log says why before the record says it ended: whoever sees the end reads the reason.
    await this.log.flush();
    // The log's last line is written before the record ends, so a reader of the ended deploy sees why.
    await this.log.close();
    // The reason goes to the API and to notifications: a secret the build's failure quoted is masked there as in the log.
    const reason = end.reason === undefined ? {} : { reason: this.log.masked(end.reason) };
    return this.services.deploys.finish(this.deploy.siteId, this.deploy.id, { repository: this.repository, ...end, ...reason });
  }

  /**
   * Opens the deploy's secret variables (sealed in its record) and masks
   * their values in its log from here on: the build's environment gets
   * them, its log and reason never do. Opened again when another process
   * takes the deploy up (resumeDeploy), from the same sealed copies.
   */
  async openSecrets(build: DeployBuild): Promise<Record<string, string>> {
    const sealed = build.secretEnv ?? {};
    let secrets: Record<string, string>;
    try {
      secrets = await this.services.sites.openVariables(this.deploy.siteId, sealed);
    } catch (err) {
      this.services.logger.warn("could not open a deploy's secret variables", { deployId: this.deploy.id, err });
      throw new DeployFailure(
        "the site's secret variables could not be opened (the service's secret key may have changed): set their values again, then retry",
      );
    }
    this.log.maskSecrets(Object.values(secrets));
    return secrets;
  }

  /** One line naming the variables the build gets (never a value). */
  logVariables(build: DeployBuild): void {
    const plain = Object.keys(build.env ?? {});
    const secret = Object.keys(build.secretEnv ?? {});
    if (plain.length || secret.length) {
      this.log.line(`Build variables: ${[...plain, ...secret.map((n) => `${n} (secret, masked in this log)`)].join(', ')}`);
    }
    if (this.deploy.pullRequest?.fork)
      this.log.line(`Pull request #${this.deploy.pullRequest.number} comes from a fork: built without the site's secret variables`);
  }

  /** The publish directory as a DAG: refused when missing or empty, imported with collection held off. */
  async importPublishDirectory(publish: string, publishPath: string): Promise<CID> {
    const kind = await stat(publish).then(
      (s) => (s.isDirectory() ? 'dir' : 'other'),
      () => 'missing',
    );
    if (kind === 'missing') throw new DeployFailure(`the publish directory "${publishPath}" does not exist after the build`);
    if (kind !== 'dir') throw new DeployFailure(`the publish directory "${publishPath}" is not a directory`);
    if ((await readdir(publish)).filter((n) => n !== '.git').length === 0)
      throw new DeployFailure(`the publish directory "${publishPath}" is empty`);
    for (const warning of await checkSiteFiles(publish)) this.log.line(`Warning: ${warning}`);
    this.log.line(`Uploading "${publishPath}" to IPFS`);
    this.publishDir = publish;
    // From the first block imported until the deploy references the root,
    // garbage collection must wait (storage/gate.ts).
    this.release = await this.services.gate.enterShared();
    const node = await this.services.ipfs();
    const result = await importDirectory(node.blockstore, publish, { signal: this.signal, known: this.known?.forImport(node.blockstore) });
    const skipped = this.known?.hits ? ` (${this.known.hits} unchanged since the last deploy, not read again)` : '';
    this.log.line(`Imported ${result.files} files (${(result.bytes / 1e6).toFixed(1)} MB)${skipped}: ${result.cid.toV1().toString()}`);
    await this.known
      ?.save()
      .catch((err: unknown) => this.services.logger.warn('could not keep what a deploy imported', { deployId: this.deploy.id, err }));
    return result.cid;
  }

  /** Pins the root, ends the deploy DEPLOYED and publishes it if it should be; then announces it (steps/announce.ts). */
  async publish(imported: CID): Promise<Deploy | undefined> {
    let root = imported;
    const { services, deploy: claimed, log } = this;
    // Until the deploy references the root, collection may take it: a
    // deploy that does not end DEPLOYED leaves it a candidate.
    this.imported = referenceCidOf(root.toString());
    await this.advance('publishing');
    this.release ??= await services.gate.enterShared();
    try {
      await pinRoot(await services.ipfs(), root, { signal: this.signal });
    } catch (err) {
      // Pinning walks every block: a file taken as imported before whose blocks were collected after all is caught here.
      if (!(err instanceof MissingBlockError) || !this.known?.hits || !this.publishDir) throw err;
      log.line(`Block ${err.cid} of a file taken as imported before is gone; importing every file again`);
      await this.known.forget();
      this.known = undefined;
      root = (await importDirectory((await services.ipfs()).blockstore, this.publishDir, { signal: this.signal })).cid;
      this.imported = referenceCidOf(root.toString());
      await pinRoot(await services.ipfs(), root, { signal: this.signal });
    }
    const ipfsHash = root.toV1().toString();
    log.line(`Pinned ${ipfsHash}`);
    // Never backwards by itself: a commit older than the published one is not published (steps/ancestry.ts),
    // judged against the deploy published when this one ends, and again if another is published meanwhile.
    const decide = async (): Promise<Publication> =>
      claimed.autoPublish && !claimed.preview
        ? publicationOf(services, claimed, this.repository.commit, {
            dir: join(await this.workDir(), 'history'),
            signal: this.signal,
            log: (l) => log.line(l),
          })
        : { publish: false };
    let publication = await decide();
    log.line(`phase publishing done in ${seconds(Date.now() - this.phaseStarted)}; deployed in ${seconds(Date.now() - this.started)}`);
    await log.flush();
    let done: Awaited<ReturnType<typeof services.deploys.finish>>;
    for (let attempt = 1; ; attempt++) {
      try {
        const over = publication.over === undefined ? {} : { publishOver: publication.over };
        done = await services.deploys.finish(claimed.siteId, claimed.id, {
          status: 'DEPLOYED',
          ipfsHash,
          referenceCid: referenceCidOf(ipfsHash),
          repository: this.repository,
          publish: publication.publish,
          ...over,
        });
        break;
      } catch (err) {
        if (!(err instanceof PublishedMeanwhile)) throw err;
        // Past a few rounds of deploys published under it, creation order decides, as it did before.
        publication = attempt < 3 ? await decide() : { publish: true };
      }
    }
    const published = publication.publish;
    if (done) this.imported = undefined;
    this.release();
    this.release = undefined;
    if (!done) {
      log.line('The deploy had already ended (cancelled meanwhile); nothing was published');
      await log.close();
      return undefined;
    }
    const { screenshotter } = this.options;
    return announce(services, {
      deploy: done,
      published,
      notPublished: publication.line,
      log,
      preview: screenshotter && {
        screenshotter,
        publishDir: this.publishDir,
        timeoutMs: this.options.previewTimeoutMs ?? PREVIEW_TIMEOUT_MS,
        signal: this.signal,
      },
    });
  }

  /** Ends the deploy on what stopped the turn: CANCELLED on a cancel, FAILED with the reason otherwise. */
  async failed(err: unknown): Promise<Deploy | undefined> {
    const { services, deploy: claimed, log } = this;
    if (err instanceof Cancelled || this.signal.aborted) {
      const current = await services.deploys.get(claimed.siteId, claimed.id);
      const reason = current?.reason ?? 'cancelled';
      log.line(`Cancelled: ${reason}`);
      const cancelled = await this.finish({ status: 'CANCELLED', reason });
      await recordCommitStatus(services, 'CANCELLED', cancelled);
      return cancelled;
    }
    const known =
      err instanceof DeployFailure || err instanceof CloneError || err instanceof PublishDirectoryError || err instanceof BuildRefused;
    const reason = known ? (err as Error).message : 'an internal error stopped the deploy (the service log has the details)';
    if (!known) services.logger.error('deploy failed on an internal error', { deployId: claimed.id, siteId: claimed.siteId, err });
    log.line(`Failed: ${reason}`);
    const ended = await this.finish({ status: 'FAILED', reason });
    await notifyDeploy(services, 'FAILED', ended);
    return ended;
  }

  /** Lets go of what the turn held, however it ended. */
  async end(): Promise<void> {
    const { services } = this;
    this.release?.();
    const imported = this.imported;
    if (imported !== undefined) {
      await services.objects
        .addCandidate(imported)
        .catch((err: unknown) => services.logger.warn('could not record a collection candidate', { cid: imported, err }));
    }
    const work = this.work;
    if (work)
      await rm(work, { recursive: true, force: true }).catch((err: unknown) =>
        services.logger.warn('could not remove a deploy workspace', { work, err }),
      );
  }
}

export async function runDeploy(options: PipelineOptions, claimed: Deploy, signal: AbortSignal): Promise<Deploy | undefined> {
  const { services } = options;
  const turn = DeployTurn.begin(options, claimed, signal);
  const { log } = turn;
  const queuedFor = Date.parse(claimed.startedAt ?? new Date().toISOString()) - Date.parse(claimed.createdAt);
  log.line(`Deploy ${claimed.id} started (queued for ${seconds(Math.max(0, queuedFor))})`);
  const work = await turn.workDir();
  try {
    const source = claimed.source;
    if (!source) throw new DeployFailure('the deploy has no source (recorded before deploys kept one)');
    let root: CID;
    if (source.kind === 'ipfs') {
      log.line(`Checking that this node holds ${source.cid}`);
      root = cidOf(source.cid);
      // Held from the check until the deploy references the CID: collection must not take it between.
      turn.release = await services.gate.enterShared();
      try {
        for await (const _ of walkDag((await services.ipfs()).blockstore, root, { signal })) {
          // every block must be here
        }
      } catch (err) {
        if (err instanceof MissingBlockError)
          throw new DeployFailure(
            `${source.cid} is not held by this node (block ${err.cid} is missing): upload it through the S3 API or import it with POST /imports/car first`,
          );
        throw err;
      }
      for (const warning of await siteFileWarnings(services, root)) log.line(`Warning: ${warning}`);
      await turn.advance('uploading');
    } else {
      const checkout = join(work, 'checkout');
      // The site as it is now, read once: whose token the clone may use, and whether a commit status is set.
      const site = await services.sites.getById(claimed.siteId);
      const credentials = await repositoryCredentials(services, claimed, site, source.url, (line) => log.line(line));
      const statusNote = await commitStatusNote(services, claimed, site);
      if (statusNote) log.line(statusNote);
      // The runner's checks of this machine (its sandbox) run beside the clone, not in the first build.
      if (claimed.build?.command && !isDetached(options.runner)) options.runner.prepare?.();
      const { cloneRepository } = await import('./steps/clone/index.js');
      const cloned = await cloneRepository({
        url: source.url,
        branch: source.branch,
        commit: source.commit ?? undefined,
        dir: checkout,
        signal,
        log: (line) => log.line(line),
        mirrors: options.sources,
        outbound: services.config.outbound,
        ...(credentials ? { credentials, mirrorScope: `site:${claimed.siteId}` } : {}),
      });
      turn.repository = { commit: cloned.commit, branch: cloned.branch, owner: cloned.owner, name: cloned.name, message: cloned.message };
      turn.known = cloned.known;
      // A late or replayed push skips the newer push's deploy still queued (deploys supersede by arrival):
      // the newer commit is deployed again, and this one, older, stops here.
      const newer =
        site &&
        (await skippedNewer(services, claimed, site, cloned.commit, { dir: join(work, 'skipped'), signal, log: (l) => log.line(l) }));
      if (newer) {
        const again = await retryDeploy(services, site, newer.deploy.id);
        await services.deploys.requestCancel(
          claimed.siteId,
          claimed.id,
          `${shortCommit(newer.commit)} (deploy ${newer.deploy.id}), skipped for this deploy, comes after ${shortCommit(cloned.commit)}: deploying it again as ${again.id}`,
        );
        throw new Cancelled();
      }
      await turn.advance('building', { repository: turn.repository });
      await notifyDeploy(services, 'BUILDING', { ...claimed, phase: 'building', repository: turn.repository });

      const build = claimed.build ?? { env: {} };
      const secrets = await turn.openSecrets(build);
      const base = await insideCheckout(checkout, build.baseDirectory);
      const publishBefore = await insideCheckout(checkout, build.baseDirectory, build.publishDirectory); // refused before building, too
      const runner = options.runner;
      if (build.command) {
        if (
          !(await stat(base).then(
            (s) => s.isDirectory(),
            () => false,
          ))
        )
          throw new DeployFailure(`the base directory "${build.baseDirectory}" does not exist in the repository`);
        log.line(`Building with ${runner.name}: ${build.command}`);
        turn.logVariables(build);
        const request = {
          deployId: claimed.id,
          checkout,
          directory: relative(checkout, base),
          command: build.command,
          env: buildEnv(claimed.id, build, secrets, cloned),
          timeoutMs: options.buildTimeoutMs,
          image: build.image ?? undefined,
        };
        if (isDetached(runner)) {
          const real = await realpath(checkout);
          return await handOver(turn, runner, {
            ...request,
            directory: relative(real, base),
            siteId: claimed.siteId,
            publishDirectory: relative(real, publishBefore),
            secretNames: Object.keys(secrets),
          });
        }
        const result = await runner.run({ ...request, signal, onOutput: (text) => log.output(text) });
        if (result.outcome === 'cancelled') throw new Cancelled();
        if (result.outcome === 'timed-out') throw new DeployFailure(timedOutReason(options.buildTimeoutMs));
        // Ended at one of its limits: the log's failure line names it ("memory limit 3 GiB reached").
        if (result.limit) throw new DeployFailure(`the build was ended: ${result.limit}`);
        if (result.outcome === 'failed') {
          throw new DeployFailure(
            `the build command failed (${result.exitCode !== undefined ? `exit code ${result.exitCode}` : `ended by ${result.signal}`})`,
          );
        }
      } else {
        log.line('No build command: publishing the directory as it is');
      }
      await turn.advance('uploading');

      // Again after the build: it may have made the path a symlink out of the checkout.
      const publish = await insideCheckout(checkout, build.baseDirectory, build.publishDirectory);
      if (publish === (await realpath(checkout))) await rm(join(checkout, '.git'), { recursive: true, force: true }); // the repository's own history is not the site
      root = await turn.importPublishDirectory(publish, publishPathOf(build));
    }
    return await turn.publish(root);
  } catch (err) {
    return await turn.failed(err);
  } finally {
    await turn.end();
  }
}

/**
 * The site's access token for this deploy's clone: only for the site's own
 * repository (as the site names it now), never for a fork's or any other
 * URL, which would receive the token. Read and opened here, when the
 * deploy runs, so the deploy record never holds it.
 */
async function repositoryCredentials(
  services: Pick<Services, 'siteSecrets'>,
  deploy: Deploy,
  site: Site | undefined,
  url: string,
  log: (line: string) => void,
): Promise<{ username: string; password: string } | undefined> {
  const pr = deploy.pullRequest;
  if (pr) log(`Preview of pull request #${pr.number}${pr.title ? `: ${pr.title}` : ''}${pr.url ? ` (${pr.url})` : ''}`);
  if (pr?.fork) {
    log(`Pull request #${pr.number} comes from a fork: cloning ${url} as a public repository, without the site's access token`);
    return undefined;
  }
  const source = site?.deploySettings.source;
  if (!site || source?.kind !== 'repository' || source.url !== url) return undefined;
  const credentials = await services.siteSecrets.repositoryCredentials(site.id);
  if (!credentials) return undefined;
  log(`Cloning with the site's repository access token (user name ${credentials.username})`);
  return { username: credentials.username, password: credentials.token };
}

/**
 * Why the deploy's commit gets no status on its git host, when the user can
 * change that (a host with a known API, a site without a token): one line
 * for its log. Never fails the deploy.
 */
async function commitStatusNote(
  services: Pick<Services, 'config' | 'logger' | 'siteSecrets'>,
  deploy: Deploy,
  site: Site | undefined,
): Promise<string | undefined> {
  try {
    const target = site ? await statusTargetOf(services, site, deploy) : undefined;
    return target && 'none' in target ? target.note : undefined;
  } catch (err) {
    services.logger.warn('could not tell whether a deploy sets commit statuses', { deployId: deploy.id, err });
    return undefined;
  }
}

/** Starts the build elsewhere and records it; the deploy stays in its building phase until the build's end is reported. */
async function handOver(
  turn: DeployTurn,
  runner: DetachedBuildRunner,
  request: Parameters<DetachedBuildRunner['start']>[0],
): Promise<Deploy | undefined> {
  const { services, deploy, log } = turn;
  const started = await runner.start(request);
  const recorded = await services.deploys.recordRemoteBuild(deploy.siteId, deploy.id, {
    id: started.id,
    startedAt: new Date().toISOString(),
    logUrl: started.logUrl ?? null,
  });
  if (!recorded) {
    // Cancelled while the build started: nobody else knows of the build to stop it.
    await runner
      .stop(started.id)
      .catch((err: unknown) =>
        services.logger.warn('could not stop the build of a cancelled deploy', { deployId: deploy.id, buildId: started.id, err }),
      );
    throw new Cancelled();
  }
  log.line(`The build runs in ${runner.name} (build ${started.id}); the deploy goes on when it ends`);
  await log.close();
  return services.deploys.get(deploy.siteId, deploy.id);
}

/**
 * Takes up a deploy whose detached build ended: on success imports what the
 * build left, pins and publishes it (as after a build here); otherwise ends
 * it FAILED with the reason, or CANCELLED when it was stopped on request.
 * Undefined when the report is not for the deploy's running build (a
 * repeated or late event): nothing is done then.
 */
export async function resumeDeploy(options: PipelineOptions, deploy: Deploy, end: DetachedBuildEnd): Promise<Deploy | undefined> {
  const { services, runner } = options;
  if (!isDetached(runner)) throw new Error('resumeDeploy needs a detached build runner');
  if (!(await services.deploys.endRemoteBuild(deploy.siteId, deploy.id, end.buildId))) return undefined;
  const since = Date.parse(deploy.remoteBuild?.startedAt ?? '') || Date.now();
  const turn = await DeployTurn.resume(options, deploy, 'building', since);
  const { log } = turn;
  const build = deploy.build ?? { env: {} };
  const of = { siteId: deploy.siteId, deployId: deploy.id };
  try {
    // Masked in what this turn writes as in the build's own turn (a reason quoting the build's words).
    await turn.openSecrets(build);
    const logUrl = end.logUrl ?? deploy.remoteBuild?.logUrl;
    if (logUrl) log.line(`The build's own log: ${logUrl}`);
    if (end.outcome === 'stopped') {
      const current = await services.deploys.get(deploy.siteId, deploy.id);
      if (current?.cancelRequested) throw new Cancelled();
      throw new DeployFailure(`the build was stopped in ${runner.name}, not through Cairn`);
    }
    if (end.outcome === 'timed-out') throw new DeployFailure(timedOutReason(options.buildTimeoutMs));
    if (end.outcome === 'failed') throw new DeployFailure(failureReason(end, publishPathOf(build)));
    await turn.advance('uploading');
    const publish = join(await turn.workDir(), 'publish');
    await runner.fetchOutput(of, publish, { withoutGit: publishPathOf(build) === '.' });
    return await turn.publish(await turn.importPublishDirectory(publish, publishPathOf(build)));
  } catch (err) {
    return await turn.failed(err);
  } finally {
    await turn.end();
    await runner
      .discard({ ...of, hadSecrets: Object.keys(build.secretEnv ?? {}).length > 0 })
      .catch((err: unknown) => services.logger.warn("could not remove a build's files", { deployId: deploy.id, err }));
  }
}

function failureReason(end: DetachedBuildEnd, publishPath: string): string {
  const phase = end.detail?.phase;
  const said = end.detail?.context ? `: ${end.detail.context}` : '';
  if (phase === 'BUILD') return `the build command failed${said ? ` (${said.slice(2)})` : ''}`;
  if (phase === 'UPLOAD_ARTIFACTS') return `the publish directory "${publishPath}" does not exist after the build, or is empty`;
  return `the build failed${phase ? ` in its ${phase} phase` : ''}${said}`;
}
