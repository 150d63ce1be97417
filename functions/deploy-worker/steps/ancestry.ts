/**
 * Whether a deploy's commit is older than the site's published one: the
 * publish step asks before an automatic publication, so that a push that
 * is replayed (GitHub signs only the body; the sender picks the delivery
 * id) or arrives late never moves the site backwards. Only publishDeploy,
 * a person's act, rolls a site back.
 *
 * The answer comes from the branch's history as the host has it now,
 * fetched anew into a directory of the deploy's own: at publish time the
 * checkout is either gone (a build on another machine) or has been in a
 * build's hands, and its history was cut at the deploy's commit. Only
 * commits are wanted: git's command line asks for none of the trees and
 * files (`--filter=tree:0`, which GitHub and GitLab honour; a host that
 * does not sends them anyway, and the answer is the same). isomorphic-git
 * (Lambda) cannot filter and gets each commit's files too. Either is the
 * clone step's git backend (clone/backend.ts), chosen the same way.
 *
 * The history arrives as the clone's does: two commits deep, then twice as
 * deep each round, until the question is settled, so the usual push (whose
 * parent is the published commit) costs one small fetch and a replay of a
 * commit k pushes old about log2(k) rounds.
 *
 * "Older" means: the published commit is still on the branch and the
 * deploy's commit is a strict ancestor of it. A published commit the
 * branch no longer holds was abandoned by a force-push, which a person
 * made: the branch's commits then publish again as they come (a
 * force-push to an unrelated commit, or back to an older one, publishes).
 * A replay cannot do that: a commit the branch no longer holds cannot be
 * cloned at all, and one it holds is older than what it holds after it.
 *
 * The host passes the outbound address policy as the clone's does
 * (functions/core/net/outbound.ts): resolved once, checked, and every
 * request of the fetch connects to the checked addresses only, following
 * no redirect.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { outboundRules } from '../../core/config.js';
import { resolveOutbound, type OutboundRules, type Resolver } from '../../core/net/outbound.js';
import type { GitBackend } from './clone/backend.js';
import { GitCommandError } from './clone/git-cli.js';
import type { Services } from '../../core/services.js';
import type { Deploy, DeploySource } from '../../core/data/deploys.js';
import type { Site } from '../../core/data/sites.js';

/**
 * How the deploy's commit stands to the published one:
 * - `older`: a strict ancestor of the published commit, which the branch still holds;
 * - `newer`: the published commit is a strict ancestor of it;
 * - `same`: the same commit;
 * - `diverged`: both on the branch, neither an ancestor of the other (a merged side branch's commit);
 * - `off-branch`: the branch no longer holds the published commit (a force-push moved it).
 */
export type Ancestry = 'older' | 'newer' | 'same' | 'diverged' | 'off-branch';

/** Why the question could not be answered (the host failed, the history passed the cap): one line for the log. */
export class AncestryUnknown extends Error {
  override name = 'AncestryUnknown';
}

/**
 * What is known of the branch's history: each commit's parents, or null
 * for a commit at the edge of a shallow fetch (parents not fetched), and
 * whether the fetch reached the branch's first commits (nothing shallow).
 */
export interface History {
  parents: Map<string, string[] | null>;
  complete: boolean;
}

/** Every commit reachable from `from` in the history; `edge` when the walk met a commit whose parents are not here. */
function reachable(history: History, from: string): { seen: Set<string>; edge: boolean } {
  const seen = new Set<string>();
  let edge = false;
  const stack = [from];
  while (stack.length > 0) {
    const oid = stack.pop()!;
    if (seen.has(oid)) continue;
    seen.add(oid);
    const parents = history.parents.get(oid);
    if (parents === null || parents === undefined) edge = edge || parents === null || !history.complete;
    else for (const p of parents) if (!seen.has(p)) stack.push(p);
  }
  return { seen, edge };
}

/**
 * The answer the history gives, or `more` when it is too shallow to give
 * one. Iterative walks: a history of any length is read without recursion.
 */
export function judge(history: History, commit: string, published: string): Ancestry | 'more' {
  if (commit === published) return 'same';
  const hasCommit = history.parents.has(commit);
  const hasPublished = history.parents.has(published);
  // The usual case first: the published commit is in the new one's past (often its parent).
  const fromCommit = hasCommit ? reachable(history, commit) : undefined;
  if (fromCommit?.seen.has(published)) return 'newer';
  if (hasPublished) {
    const fromPublished = reachable(history, published);
    if (fromPublished.seen.has(commit)) return 'older';
    // Neither past holds the other, and both pasts are whole (or the commit is not on the branch at all).
    if (!fromPublished.edge && (fromCommit ? !fromCommit.edge : history.complete)) return 'diverged';
  }
  if (!hasPublished && history.complete) return 'off-branch';
  return 'more';
}

export interface AncestryRequest {
  /** The repository's http(s) clone URL, as the deploy cloned it. */
  url: string;
  branch: string;
  /** The deploy's commit (full hash). */
  commit: string;
  /** The published deploy's commit (full hash). */
  published: string;
  /** An empty directory of the caller's, for the fetched history (the caller removes it). */
  dir: string;
  signal: AbortSignal;
  /** The site's access token, when the repository is the site's own private one. */
  credentials?: { username: string; password: string };
  /** git's command line; `false`: isomorphic-git (as in Lambda); looked up on PATH when absent. */
  git?: string | false;
  /** Past this many bytes fetched the question is left unanswered. */
  maxBytes?: number;
  /** Whether the host may be a private address; absent: CAIRN_OUTBOUND_PRIVATE of the process's environment, as for the clone. */
  outbound?: OutboundRules;
  /** How the host's name is resolved (the system's resolver when absent). */
  resolver?: Resolver;
}

/** What the history fetch may download: commits only, where the host filters, are some hundreds of bytes each. */
export const DEFAULT_MAX_HISTORY_BYTES = 256 * 1024 * 1024;

/** Fetches the branch's history until it settles how `commit` stands to `published`; AncestryUnknown when it cannot. */
export async function compareCommits(request: AncestryRequest): Promise<Ancestry> {
  const { url, branch, commit, published, dir, signal } = request;
  if (commit === published) return 'same';
  const cap = request.maxBytes ?? DEFAULT_MAX_HISTORY_BYTES;
  const gitdir = join(dir, 'history.git');
  await rm(gitdir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  /** Opened once the host passed the policy, before any request. */
  let backend: GitBackend | undefined;
  let depth = 2;
  try {
    const target = await resolveOutbound(url, request.outbound ?? outboundRules(process.env), request.resolver);
    // The git backends load with the first fetch (isomorphic-git is none of the worker's cold start).
    const { openTransfer } = await import('./clone/index.js');
    const git = await openTransfer(request.git, { url, branch, signal, credentials: request.credentials, maxBytes: cap, target });
    backend = git;
    for (let round = 0; ; round++) {
      await git.fetch(gitdir, { fresh: round === 0, depth: round === 0 ? { depth } : { deepen: depth / 2 }, commitsOnly: true });
      const shallow = await shallowCommits(gitdir);
      const history: History = { parents: await git.parents(gitdir, shallow), complete: shallow.size === 0 };
      const answer = judge(history, commit, published);
      if (answer !== 'more') return answer;
      // A history already whole that cannot answer would not answer deeper either (judge settles every whole history).
      if (history.complete) throw new AncestryUnknown('the whole history did not settle it');
      depth *= 2;
    }
  } catch (err) {
    if (err instanceof AncestryUnknown) throw err;
    if (signal.aborted) throw signal.reason;
    if (backend?.tooLarge()) throw new AncestryUnknown(`the branch's history is larger than ${Math.round(cap / 1024 / 1024)} MB`);
    const said = err instanceof GitCommandError ? err.stderr.trim().split('\n').at(-1) : err instanceof Error ? err.message : String(err);
    const secret = request.credentials?.password;
    const line = (said ?? 'the fetch failed').replace(/\s+/g, ' ').slice(0, 200);
    throw new AncestryUnknown(`the branch's history could not be fetched: ${secret ? line.split(secret).join('[token]') : line}`);
  }
}

async function shallowCommits(gitdir: string): Promise<Set<string>> {
  const text = await readFile(join(gitdir, 'shallow'), 'utf8').catch(() => '');
  return new Set(
    text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /^[0-9a-f]{40}$/.test(l)),
  );
}

/**
 * What the publish step does with a deploy that would publish itself:
 * publish it (over `over` only, when set), or not (`line` says why). The
 * lines logged before the deploy ends never say "published": readers of
 * the log take that word for its end.
 */
export interface Publication {
  publish: boolean;
  /** The published deploy this one was found newer than: published over it even if it was created later (data/deploys.ts finish). */
  over?: string;
  /** Why it is not published, for the log. */
  line?: string;
}

/** A commit as logs name it: its first seven hex digits. */
export const shortCommit = (commit: string) => commit.slice(0, 7);

/**
 * Whether a deploy of a commit that would publish itself (auto-publishing,
 * not a preview) is published, against the site's published deploy as it
 * is now. Every such deploy is judged, whoever started it (a push, a build
 * hook, triggerDeploy): publishDeploy is the one way back. A deploy of
 * anything but a commit of the same repository and branch as the published
 * one is published as before (unless a deploy created after it is).
 */
export async function publicationOf(
  services: Pick<Services, 'config' | 'deploys' | 'siteSecrets' | 'sites'>,
  deploy: Deploy,
  commit: string | null | undefined,
  context: { dir: string; signal: AbortSignal; log(line: string): void; git?: string | false },
): Promise<Publication> {
  const asBefore: Publication = { publish: true };
  const source = deploy.source;
  if (source?.kind !== 'git' || !commit || !FULL_COMMIT.test(commit)) return asBefore;
  const site = await services.sites.getById(deploy.siteId);
  const publishedId = site?.publishedDeployId;
  if (!site || !publishedId || publishedId === deploy.id) return asBefore;
  const live = await services.deploys.get(site.id, publishedId);
  const liveCommit = live?.repository?.commit;
  if (
    !live ||
    live.source?.kind !== 'git' ||
    live.source.url !== source.url ||
    live.source.branch !== source.branch ||
    !liveCommit ||
    !FULL_COMMIT.test(liveCommit)
  )
    return asBefore;
  let relation: Ancestry;
  try {
    relation = await compareOnBranch(services, site, source, commit, liveCommit, context);
  } catch (err) {
    if (!(err instanceof AncestryUnknown)) throw err;
    // Not publishing would keep a legitimate push off the site whenever its host falters; a replay cannot make it falter.
    context.log(
      `Could not tell whether ${shortCommit(commit)} is older than ${shortCommit(liveCommit)}, the live deploy's commit (${err.message}): it goes live unless a deploy created after it is live`,
    );
    return asBefore;
  }
  switch (relation) {
    case 'older':
      return {
        publish: false,
        line: `Not published: ${shortCommit(commit)} is older than the published ${shortCommit(liveCommit)}; publishDeploy it to roll back`,
      };
    case 'newer':
      context.log(`${shortCommit(commit)} comes after ${shortCommit(liveCommit)}, the live deploy's commit, in branch ${source.branch}`);
      return { publish: true, over: live.id };
    case 'off-branch':
      context.log(
        `Branch ${source.branch} no longer holds ${shortCommit(liveCommit)}, the live deploy's commit (it was force-pushed): ${shortCommit(commit)} is not a rollback`,
      );
      return asBefore;
    case 'diverged':
      context.log(`Neither ${shortCommit(commit)} nor ${shortCommit(liveCommit)}, the live deploy's commit, is in the other's history`);
      return asBefore;
    default:
      return asBefore;
  }
}

const FULL_COMMIT = /^[0-9a-f]{40}$/;

/** compareCommits for a deploy of `site`: the site's token only for the site's own repository, as for the clone. */
async function compareOnBranch(
  services: Pick<Services, 'config' | 'siteSecrets'>,
  site: Site,
  source: Extract<DeploySource, { kind: 'git' }>,
  commit: string,
  other: string,
  context: { dir: string; signal: AbortSignal; git?: string | false },
): Promise<Ancestry> {
  const own = site.deploySettings.source;
  const token = own.kind === 'repository' && own.url === source.url ? await services.siteSecrets.repositoryCredentials(site.id) : undefined;
  return compareCommits({
    url: source.url,
    branch: source.branch,
    commit,
    published: other,
    dir: context.dir,
    signal: context.signal,
    outbound: services.config.outbound,
    ...(token ? { credentials: { username: token.username, password: token.token } } : {}),
    ...(context.git !== undefined ? { git: context.git } : {}),
  });
}

/** How many of the deploys created just before a deploy are looked through for those it skipped. */
const SKIPPED_LOOKED_AT = 25;

/**
 * A deploy this one skipped whose commit turns out to come after its own:
 * what a late or replayed push does when it arrives while the newer push's
 * deploy still waits in the queue (deploys supersede by arrival,
 * core/hosting/deploys.ts). Asked once the deploy's own commit is known
 * (after its clone), and only when it skipped some: those are the deploys
 * created just before it that were cancelled as `superseded by <its id>`,
 * of the same branch and kind (site deploy, or the same pull request's
 * preview), with a full commit of their own. The first (newest) whose
 * commit has this one's as a strict ancestor, on the branch as the host
 * has it now, is answered; one the branch no longer holds (a force-push)
 * or that diverged is not. A history that cannot be fetched answers none
 * (the deploy goes on as before), saying so in the log.
 */
export async function skippedNewer(
  services: Pick<Services, 'config' | 'deploys' | 'siteSecrets'>,
  deploy: Deploy,
  site: Site,
  commit: string,
  context: { dir: string; signal: AbortSignal; log(line: string): void; git?: string | false },
): Promise<{ deploy: Deploy; commit: string } | undefined> {
  const source = deploy.source;
  if (source?.kind !== 'git' || !FULL_COMMIT.test(commit)) return undefined;
  const before = await services.deploys.listBySite(deploy.siteId, SKIPPED_LOOKED_AT, deploy.id);
  const skipped = before.items.filter(
    (d) =>
      d.status === 'CANCELLED' &&
      d.reason === `superseded by ${deploy.id}` &&
      d.source?.kind === 'git' &&
      d.source.url === source.url &&
      d.source.branch === source.branch &&
      !!d.preview === !!deploy.preview &&
      d.pullRequest?.number === deploy.pullRequest?.number &&
      typeof d.repository?.commit === 'string' &&
      FULL_COMMIT.test(d.repository.commit) &&
      d.repository.commit !== commit,
  );
  for (const other of skipped) {
    const theirs = other.repository.commit!;
    try {
      if ((await compareOnBranch(services, site, source, commit, theirs, context)) === 'older') return { deploy: other, commit: theirs };
    } catch (err) {
      if (!(err instanceof AncestryUnknown)) throw err;
      context.log(
        `Could not tell whether ${shortCommit(theirs)}, skipped for this deploy, comes after ${shortCommit(commit)} (${err.message})`,
      );
    }
  }
  return undefined;
}
