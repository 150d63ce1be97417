/**
 * What a team does with deploys, whatever the door: trigger one (from the
 * site's source and settings as they are now), retry one, cancel one,
 * publish one. Each records the change in the deploys table and tells the
 * deploy queue; the pipeline (functions/deploy-worker) does the work.
 */
import type { Services, SiteEdgeServices } from '../services.js';
import type { Deploy, DeployBuild, DeployPullRequest, DeploySource, NewDeploy } from '../data/deploys.js';
import type { Site } from '../data/sites.js';
import type { CID } from 'multiformats/cid';
import { parseRepositoryUrl } from './repository-url.js';
import { deployLogKey } from '../ports/log-store.js';
import { syncSiteHosts } from './site-host-map.js';
import { notifyDeploy, recordCommitStatus, type NotifyServices, type StatusRecordServices } from './notifications.js';
import { parseCid } from '../ipfs/cid.js';
import { syncSiteName } from './ipns-names.js';
import { syncSiteDnsLinks } from './dnslink.js';

/** Owner and name for the deploy's `repository`, from a URL the site already holds. */
function ownerAndName(url: string): { owner: string | null; name: string | null } {
  try {
    const { owner, name } = parseRepositoryUrl(url);
    return { owner, name };
  } catch {
    return { owner: null, name: null };
  }
}

/** A request the caller must change: the door renders it as its own bad-input error. */
export class DeployRequestError extends Error {
  override name = 'DeployRequestError';
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

export class DeployNotFoundError extends Error {
  override name = 'DeployNotFoundError';
  constructor() {
    super('deploy not found');
  }
}

const FULL_COMMIT = /^[0-9a-f]{40}$/;

/**
 * What a deploy request reads and writes besides the site it is given: the
 * deploys table and the queue that is told, the log of a deploy it ends,
 * and the notifications and commit statuses each change records.
 */
export type DeployRequestServices = NotifyServices & Pick<Services, 'deployQueue' | 'deploys'>;

/** A line at the end of a deploy that never ran (cancelled while queued): its log says why. */
async function endLog(services: Pick<Services, 'deployLogs' | 'logger'>, deploy: Deploy, text: string): Promise<void> {
  const key = deployLogKey(deploy.siteId, deploy.id);
  try {
    const before = (await services.deployLogs.read(key)) ?? '';
    await services.deployLogs.write(key, `${before}${new Date().toISOString()}  ${text}\n`);
  } catch (err) {
    services.logger.warn('could not write a deploy log', { deployId: deploy.id, err });
  }
}
const COMMIT_PREFIX = /^[0-9a-f]{7,40}$/;

/** What kind of deploy a build is for: what decides which of the site's variables it gets. */
interface DeployKind {
  /** A pull request's head or another branch than the site's: never published. */
  preview: boolean;
  /** A pull request from a fork: someone else's code. */
  fork: boolean;
}

/**
 * The site's build settings for one deploy. A production deploy gets the
 * variables scoped ALL and PRODUCTION, a preview ALL and PREVIEWS, and a
 * pull request from a fork no secret one at all (whatever its scope: the
 * fork's author wrote the build command's code). Secret values are copied
 * sealed, as the site holds them; the pipeline opens them for the build.
 */
function buildOf(site: Site, kind: DeployKind): DeployBuild {
  const b = site.buildSettings;
  const env: Record<string, string> = {};
  const secretEnv: Record<string, string> = {};
  for (const v of b.environmentVariables ?? []) {
    const scope = v.scope ?? 'ALL';
    if (scope !== 'ALL' && scope !== (kind.preview ? 'PREVIEWS' : 'PRODUCTION')) continue;
    if (!v.secret) env[v.name] = v.value ?? '';
    else if (!kind.fork && v.sealed) secretEnv[v.name] = v.sealed;
  }
  return {
    command: b.buildCommand ?? null,
    baseDirectory: b.baseDirectoryPath ?? null,
    publishDirectory: b.publishDirectoryPath ?? null,
    image: b.dockerImage ?? null,
    env,
    ...(Object.keys(secretEnv).length ? { secretEnv } : {}),
  };
}

function refuseAltPlatform(site: Site): void {
  if (site.platform === 'alt') {
    throw new DeployRequestError(
      'The site is on the alternative platform (the Internet Computer), which this service cannot deploy to; set its platform to IPFS to deploy it here.',
      'siteId',
    );
  }
}

function sourceOf(site: Site, commit: string | undefined): DeploySource {
  refuseAltPlatform(site);
  const source = site.deploySettings.source;
  if (source.kind === 'ipfs') {
    if (!source.cid)
      throw new DeployRequestError("The site's source is IPFS but names no CID; set deploySettings.source.ipfs.cid first.", 'siteId');
    if (commit !== undefined)
      throw new DeployRequestError('The site deploys a CID, not a repository: a commit means nothing here.', 'commit');
    return { kind: 'ipfs', cid: source.cid };
  }
  if (commit !== undefined && !COMMIT_PREFIX.test(commit)) {
    throw new DeployRequestError('commit must be a commit hash: 7 to 40 lowercase hexadecimal digits.', 'commit');
  }
  return { kind: 'git', url: source.url, branch: source.branch, commit: commit ?? null };
}

async function enqueue(
  services: DeployRequestServices,
  site: Site,
  init: Omit<NewDeploy, 'siteId' | 'autoPublish' | 'build'>,
): Promise<Deploy> {
  const deploy = await services.deploys.enqueue({
    siteId: site.id,
    autoPublish: site.deploySettings.autoPublishing,
    build: buildOf(site, { preview: init.preview === true, fork: init.pullRequest?.fork === true }),
    ...init,
  });
  await services.sites.setLatestDeploy(site.id, deploy.id);
  await supersede(services, deploy);
  await services.deployQueue.enqueued(deploy).catch((err: unknown) => {
    // The record is the queue: a worker polling finds it anyway.
    services.logger.warn('could not wake the deploy queue; the deploy waits for the next poll', { deployId: deploy.id, err });
  });
  await notifyDeploy(services, 'CREATED', deploy);
  return deploy;
}

/**
 * Older deploys of the same branch still waiting are skipped: only the
 * newest commit is worth building (a running one finishes).
 */
async function supersede(services: StatusRecordServices & Pick<Services, 'deploys'>, deploy: Deploy): Promise<void> {
  if (deploy.source?.kind !== 'git') return;
  const branch = deploy.source.branch;
  for (const older of await services.deploys.listQueuedOfSite(deploy.siteId)) {
    if (older.id >= deploy.id || older.source?.kind !== 'git' || older.source.branch !== branch) continue;
    // A preview supersedes only older previews of the same pull request; a site deploy only site deploys.
    if (!!older.preview !== !!deploy.preview || older.pullRequest?.number !== deploy.pullRequest?.number) continue;
    const ended = await services.deploys.requestCancel(older.siteId, older.id, `superseded by ${deploy.id}`);
    if (ended?.status === 'CANCELLED') {
      await endLog(services, ended, `Cancelled: superseded by ${deploy.id}`);
      await recordCommitStatus(services, 'CANCELLED', ended);
    }
  }
}

export async function triggerDeploy(services: DeployRequestServices, site: Site, commit?: string | null): Promise<Deploy> {
  const source = sourceOf(site, commit ?? undefined);
  const repository =
    source.kind === 'git'
      ? { commit: source.commit ?? null, branch: source.branch, ...ownerAndName(source.url), message: null }
      : { commit: null, branch: null, owner: null, name: null, message: null };
  return enqueue(services, site, { source, repository });
}

/** A deploy's repository when it builds none. */
const NO_REPOSITORY = { commit: null, branch: null, owner: null, name: null, message: null };

/**
 * A deploy of content this service holds whole, whatever the site's source
 * (`deployCid`): a DAG imported as CARs (POST /imports/car), or any CID the
 * node has every block of. It runs as a deploy of an IPFS-sourced site
 * does; the CID is checked here too, so a caller learns at once that the
 * import is not finished.
 */
export async function deployCid(services: DeployRequestServices & Pick<Services, 'ipfs'>, site: Site, text: string): Promise<Deploy> {
  refuseAltPlatform(site);
  const cid = parseCid(text.trim());
  if (!cid) throw new DeployRequestError('cid must be a CID: a CIDv0 (Qm...) or a CIDv1 (bafy...).', 'cid');
  // The CAR checks and the DAG walk (IPLD codecs) load with the first deployCid, not with every function that deploys.
  const [{ rootProblem }, { dagLimitMessage, missingUnder }, { DagLimitError, UnsupportedCodecError }] = await Promise.all([
    import('../ipfs/car-import.js'),
    import('../storage/car-ingest.js'),
    import('../storage/dag-walk.js'),
  ]);
  const problem = rootProblem(cid);
  if (problem) throw new DeployRequestError(`${problem.charAt(0).toUpperCase()}${problem.slice(1)}.`, 'cid');
  let missing: { missing: number; first?: CID };
  try {
    missing = await missingUnder(await services.ipfs(), cid);
  } catch (err) {
    if (err instanceof UnsupportedCodecError)
      throw new DeployRequestError(`The DAG of ${text.trim()} links to ${err.cid}, whose codec this service does not store.`, 'cid');
    if (err instanceof DagLimitError) throw new DeployRequestError(`${dagLimitMessage(err).replace(/^t/, 'T')}.`, 'cid');
    throw err;
  }
  if (missing.missing > 0) {
    const what =
      missing.first && missing.first.equals(cid)
        ? 'its root block is not here'
        : `${missing.missing === 1 ? 'a block is' : `${missing.missing} blocks are`} missing, ${missing.first} first`;
    throw new DeployRequestError(
      `The DAG of ${text.trim()} is not complete on this service (${what}): import it first with POST /imports/car.`,
      'cid',
    );
  }
  return enqueue(services, site, { source: { kind: 'ipfs', cid: cid.toV1().toString() }, repository: { ...NO_REPOSITORY } });
}

/**
 * A deploy that is never published: a pull request's head commit (from its
 * head repository, which is a fork's when `pullRequest.fork`), or the head
 * of a branch other than the site's (a build hook for that branch). It is
 * reachable at its own deploy address only.
 */
export async function triggerPreview(
  services: DeployRequestServices,
  site: Site,
  init: { url?: string; branch: string; commit?: string | null; pullRequest?: DeployPullRequest },
): Promise<Deploy> {
  const siteSource = sourceOf(site, undefined);
  if (siteSource.kind !== 'git')
    throw new DeployRequestError('The site deploys a CID, not a repository: there is no branch to preview.', 'siteId');
  if (init.commit != null && !COMMIT_PREFIX.test(init.commit))
    throw new DeployRequestError('commit must be a commit hash: 7 to 40 lowercase hexadecimal digits.', 'commit');
  const source: DeploySource = { kind: 'git', url: init.url ?? siteSource.url, branch: init.branch, commit: init.commit ?? null };
  const repository = { commit: source.commit ?? null, branch: init.branch, ...ownerAndName(source.url), message: null };
  return enqueue(services, site, { source, repository, preview: true, ...(init.pullRequest ? { pullRequest: init.pullRequest } : {}) });
}

async function existing(services: Pick<Services, 'deploys'>, site: Site, deployId: string): Promise<Deploy> {
  const deploy = await services.deploys.get(site.id, deployId);
  if (!deploy) throw new DeployNotFoundError();
  return deploy;
}

/** A new deploy of the same commit (or CID) with the site's current settings; the old one stays as it was. */
export async function retryDeploy(services: DeployRequestServices, site: Site, deployId: string): Promise<Deploy> {
  const old = await existing(services, site, deployId);
  if (old.status === 'IN_PROGRESS')
    throw new DeployRequestError(`Deploy ${deployId} is still in progress; cancel it first or wait for it to end.`, 'deployId');
  // Another's code, built again: only while the site still builds forks' pull requests (without secrets, as any fork's).
  if (old.pullRequest?.fork && (site.deploySettings.forkPullRequests ?? 'NOT_BUILT') === 'NOT_BUILT') {
    throw new DeployRequestError(
      `Deploy ${deployId} built a pull request from a fork, and the site does not build those (deploySettings.forkPullRequests is NOT_BUILT); set it to BUILT_WITHOUT_SECRETS to build it again.`,
      'deployId',
    );
  }
  if (site.platform === 'alt') sourceOf(site, undefined); // the same refusal as triggerDeploy
  let source: DeploySource;
  if (old.source?.kind === 'ipfs') source = old.source;
  else if (old.source?.kind === 'git') {
    const commit = old.repository?.commit ?? old.source.commit ?? null;
    source = {
      kind: 'git',
      url: old.source.url,
      branch: old.source.branch,
      commit: commit && FULL_COMMIT.test(commit) ? commit : (old.source.commit ?? null),
    };
  } else {
    source = sourceOf(site, old.repository?.commit ?? undefined);
  }
  const repository =
    source.kind === 'git'
      ? { commit: source.commit ?? null, branch: source.branch, ...ownerAndName(source.url), message: null }
      : { commit: null, branch: null, owner: null, name: null, message: null };
  return enqueue(services, site, {
    source,
    repository,
    retryOf: old.id,
    preview: old.preview ?? undefined,
    ...(old.pullRequest ? { pullRequest: old.pullRequest } : {}),
  });
}

export async function cancelDeploy(
  services: StatusRecordServices & Pick<Services, 'deployQueue' | 'deploys'>,
  site: Site,
  deployId: string,
): Promise<Deploy> {
  const deploy = await existing(services, site, deployId);
  if (deploy.status !== 'IN_PROGRESS')
    throw new DeployRequestError(
      `Deploy ${deployId} has already ended (${deploy.status}); only a deploy in progress can be cancelled.`,
      'deployId',
    );
  const now = await services.deploys.requestCancel(site.id, deployId, 'cancelled by request');
  if (!now) {
    const ended = await existing(services, site, deployId);
    throw new DeployRequestError(
      `Deploy ${deployId} has already ended (${ended.status}); only a deploy in progress can be cancelled.`,
      'deployId',
    );
  }
  if (now.status === 'CANCELLED') {
    await endLog(services, now, 'Cancelled: cancelled by request');
    await recordCommitStatus(services, 'CANCELLED', now);
  }
  if (now.status === 'IN_PROGRESS') {
    await services.deployQueue.cancelled(now).catch((err: unknown) => {
      services.logger.warn('could not stop a cancelled build at once; its worker stops at its next check', { deployId, err });
    });
  }
  return now;
}

/**
 * Drops what the cache in front of the site holds. A purge that fails is
 * logged, not raised: the publish it follows has happened, and the local
 * cache's host entries expire within a second anyway. In AWS the CloudFront
 * purger puts a refused invalidation (15 wildcard ones in flight at most)
 * off on the deploy queue itself, so only a queue that refuses it too is
 * logged here; purgeCache still answers true.
 *
 * A site with nothing published has nothing in any cache: its address
 * answers a 404 that says `no-store`, and a site never goes back to having
 * nothing published. Purging it does nothing (no invalidation spends one of
 * CloudFront's 15 slots). The site is read consistently, so a publish that
 * has just happened is seen; a site that cannot be read is purged anyway.
 * Every publish comes through here, so here the site's IPNS name is made
 * to point at its published deploy (ipns-names.ts), and its domains'
 * DNSLink records where Cairn writes their zone (dnslink.ts).
 */
export async function purgeSite(services: SiteEdgeServices, siteId: string): Promise<void> {
  let site: Site | undefined | 'unread';
  try {
    site = await services.sites.getById(siteId);
  } catch (err) {
    services.logger.warn('could not read the site to purge; purging it anyway', { siteId, err });
    site = 'unread';
  }
  if (site === 'unread' || site?.publishedDeployId) await dropCached(services, siteId);
  // The CDN must also know the site's host: asserted again here, which heals a lost entry.
  if (site !== 'unread' && site) await syncSiteHosts(services, site.slug);
  // The site's IPNS name follows its published deploy. A failure is logged, not raised, like a purge's:
  // the publish has happened, and the next publish, purgeCache or the tick's republish signs afresh.
  if (site !== 'unread' && site?.publishedDeployId) {
    try {
      await syncSiteName(services, site);
    } catch (err) {
      services.logger.warn('could not sign the site IPNS record', { siteId, err });
    }
    // Never rejects: a failed write is marked for the scheduled work.
    await syncSiteDnsLinks(services, site.id);
  }
}

/**
 * After deleteSite: what any cache holds of the site goes with it (locally
 * its entries, in AWS one invalidation of its prefix), since nobody can ask
 * for those answers any more. Nothing to drop if it never published.
 */
export async function purgeDeletedSite(services: Pick<Services, 'cdn' | 'logger'>, site: Site): Promise<void> {
  if (site.publishedDeployId) await dropCached(services, site.id);
}

async function dropCached(services: Pick<Services, 'cdn' | 'logger'>, siteId: string): Promise<void> {
  try {
    await services.cdn.purgeSite(siteId);
  } catch (err) {
    services.logger.warn('could not purge the site cache', { siteId, err });
  }
}

/** Points the site at the deploy and purges its cache, so its address serves the deploy at once. Whether it is now published. */
export async function publishToSite(
  services: SiteEdgeServices,
  siteId: string,
  deployId: string,
  options: { onlyIfNewer: boolean },
): Promise<boolean> {
  const published = await services.sites.publishDeploy(siteId, deployId, options);
  if (published) await purgeSite(services, siteId);
  return published;
}

/** Publishes any DEPLOYED deploy of the site (a rollback, or publishing with auto-publishing off). */
export async function publishDeploy(
  services: NotifyServices & SiteEdgeServices & Pick<Services, 'deploys'>,
  site: Site,
  deployId: string,
): Promise<Deploy> {
  const deploy = await existing(services, site, deployId);
  if (deploy.status !== 'DEPLOYED')
    throw new DeployRequestError(`Deploy ${deployId} is ${deploy.status}; only a DEPLOYED deploy can be published.`, 'deployId');
  if (deploy.preview) throw new DeployRequestError(`Deploy ${deployId} is a pull-request preview; previews are not published.`, 'deployId');
  const occurredAt = new Date().toISOString();
  if (!(await publishToSite(services, site.id, deployId, { onlyIfNewer: false }))) throw new DeployNotFoundError();
  await notifyDeploy(services, 'PUBLISHED', { ...deploy, published: true }, { occurredAt });
  return deploy;
}
