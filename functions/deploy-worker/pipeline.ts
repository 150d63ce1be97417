/**
 * The deploy pipeline: one claimed deploy, moved through its phases —
 * cloning (or checking the CID), building, uploading (the publish
 * directory becomes one UnixFS DAG), publishing — each recorded on the
 * deploy before it starts and written to its log with its duration. A
 * cancel (asked through the API, seen between phases and during the build)
 * ends it CANCELLED; any failure ends it FAILED with the reason as the
 * log's last line. Nothing here knows which machine it runs on: the build
 * runner, the log store and the workspace come from the caller.
 */
import { mkdir, mkdtemp, readdir, realpath, rm, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { CID } from 'multiformats/cid';
import type { Services } from '../core/services.js';
import type { Deploy, DeployEnd, DeployPhase, DeployRepository } from '../core/data/deploys.js';
import { referenceCidOf } from '../core/data/deploys.js';
import { deployLogKey, type LogStore } from '../core/ports/log-store.js';
import { BuildRefused, type BuildRunner } from '../core/ports/build-runner.js';
import { cidOf } from '../core/ipfs/cid.js';
import { pinRoot } from '../core/storage/pins.js';
import { MissingBlockError, walkDag } from '../core/storage/dag-walk.js';
import { DeployLog } from './deploy-log.js';
import { cloneRepository, CloneError } from './steps/clone.js';
import { importDirectory, PublishDirectoryError } from '../core/ipfs/import-directory.js';

export interface PipelineOptions {
  services: Services;
  runner: BuildRunner;
  /** Where checkouts are made (each deploy gets its own directory, removed afterwards). */
  workspace: string;
  buildTimeoutMs: number;
  logs?: LogStore;
}

/** A failure the deploy's log ends with as it is (the user's to fix). */
export class DeployFailure extends Error {
  override name = 'DeployFailure';
}

class Cancelled extends Error {
  override name = 'Cancelled';
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * A path inside the checkout, from settings the user wrote: relative, and
 * never out of it (`..`, an absolute path, or a symlink pointing out).
 */
async function insideCheckout(checkout: string, ...parts: Array<string | null | undefined>): Promise<string> {
  const rel = parts.filter((p): p is string => !!p && p !== '.' && p !== './').join('/');
  if (isAbsolute(rel) || rel.split(/[\\/]/).includes('..')) throw new DeployFailure(`the path "${rel}" leaves the repository; paths are relative to it`);
  const path = resolve(checkout, rel);
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return path; // the caller says what is missing
    throw err;
  }
  const root = await realpath(checkout);
  if (real !== root && !real.startsWith(root + sep)) throw new DeployFailure(`the path "${rel}" leads out of the repository (through a symlink)`);
  return real;
}

export async function runDeploy(options: PipelineOptions, claimed: Deploy, signal: AbortSignal): Promise<Deploy | undefined> {
  const { services } = options;
  const logs = options.logs ?? services.deployLogs;
  const log = new DeployLog(logs, deployLogKey(claimed.siteId, claimed.id), services.logger);
  const started = Date.now();
  let repository: DeployRepository = claimed.repository ?? {};
  let phaseStarted = Date.now();
  let phase: DeployPhase = 'cloning';

  const cancelled = () => signal.aborted;
  /** Records the next phase; a cancel asked meanwhile (in the record or by signal) stops here. */
  const advance = async (next: DeployPhase, set: { repository?: DeployRepository } = {}) => {
    log.line(`${phase} done in ${seconds(Date.now() - phaseStarted)}`);
    if (cancelled() || !(await services.deploys.advance(claimed.siteId, claimed.id, next, set))) throw new Cancelled();
    phase = next;
    phaseStarted = Date.now();
  };
  const finish = async (end: DeployEnd) => {
    const done = await services.deploys.finish(claimed.siteId, claimed.id, { repository, ...end });
    await log.close();
    return done;
  };

  const queuedFor = Date.parse(claimed.startedAt ?? new Date().toISOString()) - Date.parse(claimed.createdAt);
  log.line(`Deploy ${claimed.id} started (queued for ${seconds(Math.max(0, queuedFor))})`);
  await mkdir(options.workspace, { recursive: true });
  const work = await mkdtemp(join(options.workspace, `${claimed.id}-`));
  let imported: string | undefined;
  let release: (() => void) | undefined;
  try {
    const source = claimed.source;
    if (!source) throw new DeployFailure('the deploy has no source (recorded before deploys kept one)');
    let root: CID;
    if (source.kind === 'ipfs') {
      log.line(`Checking that this node holds ${source.cid}`);
      root = cidOf(source.cid);
      // Held from the check until the deploy references the CID: collection must not take it between.
      release = await services.gate.enterShared();
      try {
        for await (const _ of walkDag((await services.ipfs()).blockstore, root, { signal })) {
          // every block must be here
        }
      } catch (err) {
        if (err instanceof MissingBlockError) throw new DeployFailure(`${source.cid} is not held by this node (block ${err.cid} is missing): upload it through the S3 API first`);
        throw err;
      }
      await advance('uploading');
    } else {
      const checkout = join(work, 'checkout');
      const cloned = await cloneRepository({ url: source.url, branch: source.branch, commit: source.commit ?? undefined, dir: checkout, signal, log: (line) => log.line(line) });
      repository = { commit: cloned.commit, branch: cloned.branch, owner: cloned.owner, name: cloned.name, message: cloned.message };
      await advance('building', { repository });

      const build = claimed.build ?? { env: {} };
      const base = await insideCheckout(checkout, build.baseDirectory);
      await insideCheckout(checkout, build.baseDirectory, build.publishDirectory); // refused before building, too
      if (build.command) {
        if (!(await stat(base).then((s) => s.isDirectory(), () => false))) throw new DeployFailure(`the base directory "${build.baseDirectory}" does not exist in the repository`);
        log.line(`Building with ${options.runner.name}: ${build.command}`);
        const result = await options.runner.run({
          deployId: claimed.id,
          checkout,
          directory: relative(checkout, base),
          command: build.command,
          env: { ...build.env, CI: 'true', CAIRN_DEPLOY_ID: claimed.id, COMMIT_REF: cloned.commit, BRANCH: cloned.branch },
          timeoutMs: options.buildTimeoutMs,
          image: build.image ?? undefined,
          signal,
          onOutput: (text) => log.output(text),
        });
        if (result.outcome === 'cancelled') throw new Cancelled();
        if (result.outcome === 'timed-out') throw new DeployFailure(`the build ran past the time limit (${Math.round(options.buildTimeoutMs / 60000)} min) and was stopped`);
        if (result.outcome === 'failed') {
          throw new DeployFailure(`the build command failed (${result.exitCode !== undefined ? `exit code ${result.exitCode}` : `ended by ${result.signal}`})`);
        }
      } else {
        log.line('No build command: publishing the directory as it is');
      }
      await advance('uploading');

      // Again after the build: it may have made the path a symlink out of the checkout.
      const publish = await insideCheckout(checkout, build.baseDirectory, build.publishDirectory);
      const publishPath = build.publishDirectory ? join(build.baseDirectory ?? '', build.publishDirectory) : build.baseDirectory || '.';
      const kind = await stat(publish).then((s) => (s.isDirectory() ? 'dir' : 'other'), () => 'missing');
      if (kind === 'missing') throw new DeployFailure(`the publish directory "${publishPath}" does not exist after the build`);
      if (kind !== 'dir') throw new DeployFailure(`the publish directory "${publishPath}" is not a directory`);
      if ((await readdir(publish)).filter((n) => n !== '.git').length === 0) throw new DeployFailure(`the publish directory "${publishPath}" is empty`);
      if (publish === (await realpath(checkout))) await rm(join(checkout, '.git'), { recursive: true, force: true }); // the repository's own history is not the site
      log.line(`Uploading "${publishPath}" to IPFS`);
      // From the first block imported until the deploy references the root,
      // garbage collection must wait (storage/gate.ts).
      release = await services.gate.enterShared();
      const node = await services.ipfs();
      const result = await importDirectory(node.blockstore, publish, { signal });
      root = result.cid;
      log.line(`Imported ${result.files} files (${(result.bytes / 1e6).toFixed(1)} MB): ${root.toV1().toString()}`);
    }

    // Until the deploy references the root, collection may take it: a
    // deploy that does not end DEPLOYED leaves it a candidate.
    imported = referenceCidOf(root.toString());
    await advance('publishing');
    release ??= await services.gate.enterShared();
    await pinRoot(await services.ipfs(), root, { signal });
    const ipfsHash = root.toV1().toString();
    log.line(`Pinned ${ipfsHash}`);
    const published = claimed.autoPublish && !claimed.preview;
    log.line(`phase publishing done in ${seconds(Date.now() - phaseStarted)}; deployed in ${seconds(Date.now() - started)}`);
    const done = await services.deploys.finish(claimed.siteId, claimed.id, { status: 'DEPLOYED', ipfsHash, referenceCid: referenceCidOf(ipfsHash), repository });
    if (done) imported = undefined;
    release();
    release = undefined;
    if (!done) {
      log.line('The deploy had already ended (cancelled meanwhile); nothing was published');
      await log.close();
      return undefined;
    }
    if (published) {
      const now = await services.sites.publishDeploy(claimed.siteId, claimed.id, { onlyIfNewer: true });
      log.line(now ? 'Published: the site now serves this deploy' : 'Not published: a newer deploy of the site is already published');
    } else {
      log.line(claimed.preview ? 'A preview: not published' : 'Auto-publishing is off: not published (publishDeploy publishes it)');
    }
    await log.close();
    return done;
  } catch (err) {
    if (err instanceof Cancelled || signal.aborted) {
      const current = await services.deploys.get(claimed.siteId, claimed.id);
      const reason = current?.reason ?? 'cancelled';
      log.line(`Cancelled: ${reason}`);
      return await finish({ status: 'CANCELLED', reason });
    }
    const known = err instanceof DeployFailure || err instanceof CloneError || err instanceof PublishDirectoryError || err instanceof BuildRefused;
    const reason = known ? (err as Error).message : 'an internal error stopped the deploy (the service log has the details)';
    if (!known) services.logger.error('deploy failed on an internal error', { deployId: claimed.id, siteId: claimed.siteId, err });
    log.line(`Failed: ${reason}`);
    return await finish({ status: 'FAILED', reason });
  } finally {
    release?.();
    if (imported !== undefined) {
      await services.objects.addCandidate(imported).catch((err: unknown) => services.logger.warn('could not record a collection candidate', { cid: imported, err }));
    }
    await rm(work, { recursive: true, force: true }).catch((err: unknown) => services.logger.warn('could not remove a deploy workspace', { work, err }));
  }
}
