/**
 * The API's incoming hooks, written once against the HTTP seam for both doors:
 *
 *   POST /hooks/git/<siteId>     push and pull-request events of GitHub and
 *                                GitLab, checked against the site's webhook secret
 *   POST /hooks/build/<hookId>?token=<token>
 *                                a build hook (Netlify's name): deploys the head
 *                                of its branch, for CI systems and CMSs
 *
 * A git event is checked before its body is parsed: GitHub's
 * `X-Hub-Signature-256` (HMAC-SHA256 of the raw body with the secret),
 * GitLab's `X-Gitlab-Token` (the secret itself), both compared in constant
 * time. Only then is the content type looked at: JSON, or (GitHub's default,
 * which users who keep it must not find broken) a form with the JSON in its
 * `payload` field, signed as the raw form bytes. A site that does not exist
 * and a site without a webhook secret answer the same 404. Each delivery id
 * is claimed once (data/hook-deliveries.ts) before anything is done, so a
 * redelivered event is acknowledged and not acted on twice. A delivery id
 * is the sender's to choose, though (GitHub signs only the body): an old
 * push sent again under a new id builds, but the publish step never lets
 * it move the site backwards (deploy-worker/steps/ancestry.ts). An old
 * pull-request event sent again builds a preview of the old head at that
 * deploy's own address: previews are never published and have no shared
 * address, so the newer head's preview stays as it was.
 *
 * A pull request from a fork (GitHub: a head repository other than the
 * base; GitLab: another source project) is a stranger's code: it is built
 * only when the site says so (deploySettings.forkPullRequests is
 * BUILT_WITHOUT_SECRETS), from the fork, without the site's access token
 * or secret variables; otherwise it is acknowledged and ignored, saying
 * why. Every answer is
 * JSON: `{ ok: true, deployId, url }` when a deploy was queued (`url` its own
 * address, where a preview is seen), `{ ok: true, ignored: "<why>" }` when
 * the event asks for nothing, `{ ok: false, error }` otherwise.
 *
 * The HTTP side (paths, methods, reading the body, statuses) is the API
 * door's, functions/graphql/hooks-http.ts; here events are taken as plain
 * values (a site id, the headers as a record, the body's bytes) and what
 * was done comes back as a HookOutcome.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Services } from '../services.js';
import type { Site } from '../data/sites.js';
import type { Deploy, DeployPullRequest } from '../data/deploys.js';
import { DeployRequestError, triggerDeploy, triggerPreview, type DeployRequestServices } from './deploys.js';
import { siteAddresses } from './notifications.js';

/** The largest event body taken: GitHub caps its payloads at 25 MB, but a push event past 1 MiB is one with thousands of commits listed. */
export const MAX_HOOK_BODY_BYTES = 1024 * 1024;

/** The secret URL of a build hook, shown once when it is made. */
export const buildHookUrl = (baseUrl: string, hookId: string, token: string): string =>
  `${baseUrl.replace(/\/+$/, '')}/hooks/build/${encodeURIComponent(hookId)}?token=${encodeURIComponent(token)}`;

/** The URL a git host posts a site's events to. */
export const gitHookUrl = (baseUrl: string, siteId: string): string =>
  `${baseUrl.replace(/\/+$/, '')}/hooks/git/${encodeURIComponent(siteId)}`;

/** An event's headers, by lowercase name. */
export type HookHeaders = Readonly<Record<string, string | undefined>>;

/** What a hook did, for the door to answer with. */
export type HookOutcome =
  /** A deploy was queued (or was before, by the same delivery): its id and its own address. */
  | { kind: 'deployed'; deployId: string; url: string; ignored?: string; alreadyHandled?: true }
  | { kind: 'ignored'; why: string; alreadyHandled?: true }
  /** `not-found`: no such site, hook, or a site without a webhook secret (the same answer for all). */
  | { kind: 'refused'; reason: 'not-found' | 'unauthorized' | 'invalid' | 'unsupported-type'; error: string };

const refused = (reason: Extract<HookOutcome, { kind: 'refused' }>['reason'], error: string): HookOutcome => ({
  kind: 'refused',
  reason,
  error,
});
const notFound = () => refused('not-found', 'no such hook');
const ignored = (why: string, alreadyHandled?: true): HookOutcome => ({
  kind: 'ignored',
  why,
  ...(alreadyHandled ? { alreadyHandled } : {}),
});
/** The outcome of a deploy started (or started before, by the same delivery). */
const deployed = (
  services: Pick<Services, 'config'>,
  site: Site,
  deployId: string,
  extra: { ignored?: string; alreadyHandled?: true } = {},
): HookOutcome => ({
  kind: 'deployed',
  ...extra,
  deployId,
  url: siteAddresses(services, site, deployId).deploy,
});

/** Constant-time equality of two strings of any lengths (compared as SHA-256 digests). */
function sameSecret(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}

type Host = 'github' | 'gitlab';

function verify(host: Host, headers: HookHeaders, body: Buffer, secret: string): boolean {
  if (host === 'gitlab') {
    const token = headers['x-gitlab-token'];
    return token !== undefined && sameSecret(token, secret);
  }
  const signature = headers['x-hub-signature-256'];
  if (signature === undefined) return false;
  const expected = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  const given = Buffer.from(signature.trim().toLowerCase());
  const wanted = Buffer.from(expected);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

/** A site that takes git events, and its webhook secret. */
export interface GitHookTarget {
  site: Site;
  secret: string;
}

/** What a git event reads and writes: the deliveries already taken, and what a deploy request does. */
export type GitHookServices = DeployRequestServices & Pick<Services, 'hookDeliveries'>;

/** The site `siteId` names when it takes git events (it exists and has a webhook secret); undefined otherwise, before any body is read. */
export async function gitHookTarget(services: Pick<Services, 'siteSecrets' | 'sites'>, siteId: string): Promise<GitHookTarget | undefined> {
  const site = /^[0-9A-Za-z-]{1,64}$/.test(siteId) ? await services.sites.getById(siteId) : undefined;
  const secret = site ? await services.siteSecrets.webhookSecret(site.id) : undefined;
  return site && secret !== undefined ? { site, secret } : undefined;
}

/**
 * A git host's event for `target`: checked against its secret, parsed,
 * claimed by its delivery id, and acted on. Throws DeployRequestError when
 * the site cannot deploy what the event asks for.
 */
export async function receiveGitEvent(
  services: GitHookServices,
  target: GitHookTarget,
  headers: HookHeaders,
  body: Buffer,
): Promise<HookOutcome> {
  const { site, secret } = target;
  const host: Host = headers['x-gitlab-event'] !== undefined || headers['x-gitlab-token'] !== undefined ? 'gitlab' : 'github';
  if (!verify(host, headers, body, secret)) {
    return refused(
      'unauthorized',
      host === 'gitlab'
        ? "X-Gitlab-Token is missing or does not match the site's webhook secret"
        : "X-Hub-Signature-256 is missing or does not match the body signed with the site's webhook secret",
    );
  }
  const text = eventText(host, headers['content-type'], body);
  if (typeof text !== 'string') return text;
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    return refused('invalid', 'the event body is not JSON');
  }
  if (!event || typeof event !== 'object') return refused('invalid', 'the event body is not a JSON object');
  const name = (host === 'gitlab' ? headers['x-gitlab-event'] : headers['x-github-event']) ?? null;
  const action = host === 'gitlab' ? gitlabAction(site, name, event as GitlabEvent) : githubAction(site, name, event as GithubEvent);
  if ('error' in action) return refused('invalid', action.error);

  const deliveryId = (
    host === 'gitlab' ? (headers['x-gitlab-event-uuid'] ?? headers['idempotency-key']) : headers['x-github-delivery']
  )?.trim();
  if (deliveryId !== undefined && deliveryId !== '' && deliveryId.length <= 200) {
    const claim = await services.hookDeliveries.claim(site.id, deliveryId);
    if (!claim.claimed) {
      const why = `delivery ${deliveryId} was already handled`;
      return claim.previous.deployId
        ? deployed(services, site, claim.previous.deployId, { ignored: why, alreadyHandled: true })
        : ignored(why, true);
    }
    try {
      const answer = await act(services, site, action);
      await services.hookDeliveries
        .record(site.id, deliveryId, answer)
        .catch((err: unknown) => services.logger.warn('could not record what a delivery did', { siteId: site.id, deliveryId, err }));
      return answerOf(services, site, answer);
    } catch (err) {
      // Nothing was done: a redelivery may act.
      if (!(err instanceof DeployRequestError)) await services.hookDeliveries.release(site.id, deliveryId).catch(() => {});
      throw err;
    }
  }
  return answerOf(services, site, await act(services, site, action));
}

const answerOf = (services: Pick<Services, 'config'>, site: Site, outcome: { deployId?: string; ignored?: string }) =>
  outcome.deployId ? deployed(services, site, outcome.deployId) : ignored(outcome.ignored ?? 'nothing to do');

const FORM = 'application/x-www-form-urlencoded';

/**
 * The event's JSON text from a verified body, by its content type: JSON as
 * it is (also when no type is given); from GitHub, a form's `payload`
 * field, GitHub's default ("application/x-www-form-urlencoded"). Anything
 * else is 415, naming what is taken.
 */
function eventText(host: Host, contentType: string | undefined, body: Buffer): string | HookOutcome {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === '' || type === 'application/json') return body.toString('utf8');
  if (type === FORM && host === 'github') {
    const payload = new URLSearchParams(body.toString('utf8')).get('payload');
    return payload ?? refused('invalid', `the ${FORM} event has no payload field`);
  }
  const taken = host === 'github' ? `application/json or ${FORM}` : 'application/json';
  return refused('unsupported-type', `the content type ${type} is not taken: send the event as ${taken}`);
}

/** What an event asks for. */
type Action =
  | { ignored: string }
  | { error: string }
  | { deploy: { commit: string } }
  | { preview: { url?: string; branch: string; commit: string; pullRequest: DeployPullRequest } };

async function act(
  services: DeployRequestServices,
  site: Site,
  action: Exclude<Action, { error: string }>,
): Promise<{ deployId?: string; ignored?: string }> {
  let deploy: Deploy;
  if ('ignored' in action) return { ignored: action.ignored };
  if ('deploy' in action) deploy = await triggerDeploy(services, site, action.deploy.commit);
  else deploy = await triggerPreview(services, site, action.preview);
  return { deployId: deploy.id };
}

const ZERO_COMMIT = /^0{40}$/;
const FULL_COMMIT = /^[0-9a-f]{40}$/;

/** The site's branch, or why its events are not acted on. */
function siteBranch(site: Site): string | { ignored: string } {
  const source = site.deploySettings.source;
  if (source.kind !== 'repository') return { ignored: 'the site deploys a CID, not a repository' };
  return source.branch;
}

/** A push: deploy `after` when it is to the site's branch; why not otherwise. */
function pushAction(site: Site, ref: unknown, after: unknown, deleted: boolean): Action {
  const branch = siteBranch(site);
  if (typeof branch !== 'string') return branch;
  if (typeof ref !== 'string') return { error: 'the push event has no ref' };
  if (ref.startsWith('refs/tags/'))
    return { ignored: `a tag push (${ref.slice('refs/tags/'.length)}): only pushes to branch ${branch} deploy` };
  if (!ref.startsWith('refs/heads/')) return { ignored: `a push to ${ref}, not to a branch` };
  const pushed = ref.slice('refs/heads/'.length);
  if (pushed !== branch) return { ignored: `a push to branch ${pushed}: this site deploys branch ${branch}` };
  if (deleted || (typeof after === 'string' && ZERO_COMMIT.test(after)))
    return { ignored: `branch ${pushed} was deleted: nothing to deploy` };
  if (typeof after !== 'string' || !FULL_COMMIT.test(after.toLowerCase())) return { error: 'the push event names no commit (after)' };
  return { deploy: { commit: after.toLowerCase() } };
}

interface GithubRepo {
  full_name?: string;
  clone_url?: string;
  id?: number;
}
interface GithubEvent {
  ref?: unknown;
  after?: unknown;
  deleted?: unknown;
  action?: unknown;
  number?: unknown;
  pull_request?: {
    number?: number;
    title?: string;
    html_url?: string;
    head?: { ref?: string; sha?: string; repo?: GithubRepo | null };
    base?: { ref?: string; repo?: GithubRepo | null };
  };
}

function githubAction(site: Site, event: string | null, body: GithubEvent): Action {
  if (event === 'ping') return { ignored: 'ping: the webhook is set up' };
  if (event === 'push') return pushAction(site, body.ref, body.after, body.deleted === true);
  if (event !== 'pull_request')
    return {
      ignored: `${event ? `the ${event} event` : 'an event without X-GitHub-Event'} is not acted on (only push and pull_request are)`,
    };
  const pr = body.pull_request;
  if (!pr || typeof pr !== 'object') return { error: 'the pull_request event has no pull_request' };
  const number = typeof pr.number === 'number' ? pr.number : typeof body.number === 'number' ? body.number : undefined;
  if (number === undefined) return { error: 'the pull_request event has no number' };
  const action = String(body.action ?? '');
  if (!['opened', 'reopened', 'synchronize'].includes(action))
    return { ignored: `pull request #${number} ${action || 'changed'}: only opened, reopened and synchronize build a preview` };
  const fork =
    !!pr.head?.repo && !!pr.base?.repo && (pr.head.repo.id ?? pr.head.repo.full_name) !== (pr.base.repo.id ?? pr.base.repo.full_name);
  return previewAction(site, {
    number,
    title: pr.title,
    url: pr.html_url,
    base: pr.base?.ref,
    head: pr.head?.ref,
    sha: pr.head?.sha,
    headRepoUrl: pr.head?.repo === null ? null : pr.head?.repo?.clone_url,
    fork,
  });
}

interface GitlabEvent {
  object_kind?: unknown;
  ref?: unknown;
  after?: unknown;
  checkout_sha?: unknown;
  object_attributes?: {
    iid?: number;
    title?: string;
    url?: string;
    action?: string;
    oldrev?: string;
    source_branch?: string;
    target_branch?: string;
    source_project_id?: number;
    target_project_id?: number;
    last_commit?: { id?: string };
    source?: { git_http_url?: string };
  };
}

function gitlabAction(site: Site, event: string | null, body: GitlabEvent): Action {
  if (event === 'Push Hook' || body.object_kind === 'push') {
    return pushAction(
      site,
      body.ref,
      body.after,
      body.checkout_sha === null && typeof body.after === 'string' && ZERO_COMMIT.test(body.after),
    );
  }
  if (event === 'Tag Push Hook' || body.object_kind === 'tag_push') {
    const ref = typeof body.ref === 'string' ? body.ref : 'refs/tags/?';
    return pushAction(site, ref.startsWith('refs/tags/') ? ref : `refs/tags/${ref}`, body.after, false);
  }
  if (event !== 'Merge Request Hook' && body.object_kind !== 'merge_request')
    return {
      ignored: `${event ? `the ${event} event` : 'an event without X-Gitlab-Event'} is not acted on (only Push Hook and Merge Request Hook are)`,
    };
  const mr = body.object_attributes;
  if (!mr || typeof mr !== 'object' || typeof mr.iid !== 'number') return { error: 'the merge request event has no object_attributes.iid' };
  const action = String(mr.action ?? '');
  if (action === 'update' && !mr.oldrev) return { ignored: `merge request !${mr.iid} updated without new commits: nothing to build` };
  if (!['open', 'reopen', 'update'].includes(action))
    return { ignored: `merge request !${mr.iid} ${action || 'changed'}: only open, reopen and update with new commits build a preview` };
  const fork =
    typeof mr.source_project_id === 'number' && typeof mr.target_project_id === 'number' && mr.source_project_id !== mr.target_project_id;
  return previewAction(site, {
    number: mr.iid,
    title: mr.title,
    url: mr.url,
    base: mr.target_branch,
    head: mr.source_branch,
    sha: mr.last_commit?.id,
    headRepoUrl: mr.source?.git_http_url,
    fork,
  });
}

function previewAction(
  site: Site,
  pr: {
    number: number;
    title?: string;
    url?: string;
    base?: string;
    head?: string;
    sha?: string;
    headRepoUrl?: string | null;
    fork: boolean;
  },
): Action {
  const branch = siteBranch(site);
  if (typeof branch !== 'string') return branch;
  if (pr.base !== branch)
    return { ignored: `pull request #${pr.number} is against branch ${pr.base ?? '?'}: this site deploys branch ${branch}` };
  if (!site.deploySettings.prDeployPreviews)
    return { ignored: `pull request #${pr.number}: pull-request previews are off for this site (deploySettings.prDeployPreviews)` };
  if (pr.fork && (site.deploySettings.forkPullRequests ?? 'NOT_BUILT') !== 'BUILT_WITHOUT_SECRETS') {
    // A fork's code is a stranger's: not run on the site's account unless the site asks (and then without its secrets).
    return {
      ignored: `pull request #${pr.number} comes from a fork: fork pull requests are not built for this site (deploySettings.forkPullRequests is NOT_BUILT; BUILT_WITHOUT_SECRETS builds them without the site's secret variables)`,
    };
  }
  if (typeof pr.head !== 'string' || pr.head === '') return { error: `pull request #${pr.number} names no head branch` };
  if (typeof pr.sha !== 'string' || !FULL_COMMIT.test(pr.sha.toLowerCase()))
    return { error: `pull request #${pr.number} names no head commit` };
  if (pr.fork && (typeof pr.headRepoUrl !== 'string' || !/^https?:\/\//.test(pr.headRepoUrl))) {
    return { ignored: `pull request #${pr.number} comes from a fork that is gone or has no http(s) clone URL` };
  }
  const pullRequest: DeployPullRequest = { number: pr.number, title: pr.title ?? null, url: pr.url ?? null, fork: pr.fork };
  return { preview: { ...(pr.fork ? { url: pr.headRepoUrl! } : {}), branch: pr.head, commit: pr.sha.toLowerCase(), pullRequest } };
}

/** A build hook called with `token`: deploys the head of the site's branch, or previews the hook's own branch. */
export async function runBuildHook(services: DeployRequestServices, hookId: string, token: string): Promise<HookOutcome> {
  const hook = /^[0-9A-Za-z]{1,64}$/.test(hookId) && token !== '' ? await services.siteSecrets.buildHookFor(hookId, token) : undefined;
  if (!hook) return notFound();
  const site = await services.sites.getById(hook.siteId);
  if (!site) return notFound();
  const branch = siteBranch(site);
  if (typeof branch !== 'string') return deployed(services, site, (await triggerDeploy(services, site)).id);
  const deploy =
    hook.branch === null || hook.branch === branch
      ? await triggerDeploy(services, site)
      : await triggerPreview(services, site, { branch: hook.branch });
  return deployed(services, site, deploy.id);
}
