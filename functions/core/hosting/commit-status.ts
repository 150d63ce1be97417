/**
 * Commit statuses: a deploy's state and its address on the commit it
 * builds, in GitHub or GitLab, where they show as a check on the commit and
 * on its pull request ("cairn/deploy-preview — Deploy preview ready"), as
 * Netlify and Vercel post theirs.
 *
 * Only for deploys of a git repository whose site has a repository access
 * token (the one the clone uses, data/site-secrets.ts), on a host whose API
 * is known: github.com, gitlab.com, and those CAIRN_GIT_HOST_APIS names
 * (config.gitHostApis). The status goes to the site's own repository, also
 * for a pull request from a fork (its head commit is part of the base
 * repository's pull request).
 *
 * A status is one more delivery of the notification machinery
 * (notifications.ts): recorded where a deploy changes state, in the same
 * outbox, sent by the same loop or queue with the same back-off. What is
 * recorded is the status alone; the token is opened only for the request
 * itself and is never written to a record, a queue message or a log. Each
 * deploy's statuses are one channel (`commit-status:<deployId>` in place of
 * a notification URL's id), so they go out in order, and one that comes
 * back for a retry after a newer one was recorded is dropped: on a commit,
 * the last status posted is the one shown.
 */
import type { GitHostApi } from '../config.js';
import type { Services } from '../services.js';
import type { Deploy } from '../data/deploys.js';
import type { Site } from '../data/sites.js';
import type { DeployEvent } from '../data/notification-urls.js';
import { deployLogKey } from '../ports/log-store.js';
import { parseRepositoryUrl } from './repository-url.js';

/** The events a status is posted on: the notifications' own, and a deploy cancelled. */
export type CommitStatusEvent = DeployEvent | 'CANCELLED';

/** A status in Cairn's words, posted in each host's own (STATES). */
export type CommitState = 'pending' | 'running' | 'success' | 'failure' | 'cancelled';

const STATES: Record<GitHostApi['kind'], Record<CommitState, string>> = {
  github: { pending: 'pending', running: 'pending', success: 'success', failure: 'failure', cancelled: 'error' },
  gitlab: { pending: 'pending', running: 'running', success: 'success', failure: 'failed', cancelled: 'canceled' },
};

const HOST_NAMES: Record<GitHostApi['kind'], string> = { github: 'GitHub', gitlab: 'GitLab' };

/** What a token lacks when the host refuses it. */
const TOKEN_NEEDS: Record<GitHostApi['kind'], string> = {
  github: 'the token needs commit statuses: write (a classic token: the repo:status scope)',
  gitlab: 'the token needs the api scope and at least the Developer role',
};

/** GitHub's limit on a status's description. */
export const MAX_DESCRIPTION = 140;

/** The body of a commit status delivery, as recorded: never the token. */
export interface CommitStatus {
  kind: 'commit-status';
  /** The site's repository URL when the status was recorded: the token goes to its host's API only while the site still names it. */
  repository: string;
  sha: string;
  state: CommitState;
  /** `cairn/deploy`, or `cairn/deploy-preview` for a pull-request preview. */
  context: string;
  targetUrl: string;
  description: string;
}

const CHANNEL = 'commit-status:';
/** The channel of a deploy's statuses, where a notification delivery names its URL. */
export const commitStatusChannel = (deployId: string) => `${CHANNEL}${deployId}`;
export const isCommitStatusChannel = (urlId: string) => urlId.startsWith(CHANNEL);

/** Where a site's statuses go, or why nowhere (`note`: what a deploy's log says of it, when the user can change it). */
export type StatusTarget = { repository: string; api: GitHostApi; hostName: string; owner: string; name: string };
export type NoStatus = { none: true; note?: string };

/**
 * The repository and API a status of `deploy` goes to. A deploy of another
 * repository than the site's (the site's changed since) gets none; a pull
 * request from a fork gets the site's (its base) repository's.
 */
export async function statusTargetOf(
  services: Pick<Services, 'config' | 'siteSecrets'>,
  site: Site,
  deploy: Deploy,
): Promise<StatusTarget | NoStatus> {
  const source = site.deploySettings.source;
  if (deploy.source?.kind !== 'git' || source.kind !== 'repository') return { none: true };
  if (deploy.source.url !== source.url && !deploy.pullRequest?.fork) return { none: true };
  return siteStatusTarget(services, site);
}

/** The site's repository and its host's API, when the site has a token for it. */
export async function siteStatusTarget(services: Pick<Services, 'config' | 'siteSecrets'>, site: Site): Promise<StatusTarget | NoStatus> {
  const source = site.deploySettings.source;
  if (source.kind !== 'repository') return { none: true };
  const target = apiOf(services.config.gitHostApis, source.url);
  if (!target) return { none: true };
  if (!(await services.siteSecrets.status(site.id)).repositoryToken) {
    return {
      none: true,
      note: `No commit status on ${target.host}: the site has no repository access token (setRepositoryToken; one that may write commit statuses shows each deploy on its commit and pull request)`,
    };
  }
  return { repository: source.url, api: target.api, hostName: HOST_NAMES[target.api.kind], owner: target.owner, name: target.name };
}

function apiOf(
  apis: Record<string, GitHostApi>,
  repositoryUrl: string,
): { api: GitHostApi; host: string; owner: string; name: string } | undefined {
  let parsed: ReturnType<typeof parseRepositoryUrl>;
  try {
    parsed = parseRepositoryUrl(repositoryUrl);
  } catch {
    return undefined;
  }
  const api = apis[parsed.host.toLowerCase()];
  return api ? { api, host: parsed.host, owner: parsed.owner, name: parsed.name } : undefined;
}

/** A full commit hash (SHA-1, or SHA-256 repositories'): a status names one exactly. */
const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** The commit a status of the deploy is for: known once cloned, or from the start when the deploy names it whole. */
export function commitOf(deploy: Deploy): string | undefined {
  const sha = deploy.repository?.commit ?? (deploy.source?.kind === 'git' ? deploy.source.commit : undefined);
  return sha && FULL_SHA.test(sha) ? sha : undefined;
}

export interface StatusAddresses {
  site: string;
  deploy: string;
  /** The deploy's page in the web app (its log). */
  app: string;
}

/**
 * The status of an event: the deploy's address once it is ready (the
 * site's once published), its page in the web app (where its log is)
 * before that or when it failed. `lastLogLine` says why a deploy failed or
 * was cancelled.
 */
export function commitStatusOf(
  event: CommitStatusEvent,
  deploy: Deploy,
  repository: string,
  sha: string,
  at: StatusAddresses,
  lastLogLine?: string,
): CommitStatus {
  const context = deploy.preview ? 'cairn/deploy-preview' : 'cairn/deploy';
  const base = { kind: 'commit-status' as const, repository, sha, context };
  const why = (fallback: string) => clip((lastLogLine ?? '').replace(/^\d{4}-\d{2}-\d{2}T[\d:.]+Z\s+/, '').trim() || fallback);
  switch (event) {
    case 'CREATED':
      return { ...base, state: 'pending', targetUrl: at.app, description: 'Deploy queued' };
    case 'BUILDING':
      return { ...base, state: 'running', targetUrl: at.app, description: 'Deploy building' };
    case 'SUCCEEDED':
      return { ...base, state: 'success', targetUrl: at.deploy, description: deploy.preview ? 'Deploy preview ready' : 'Deploy ready' };
    case 'PUBLISHED':
      return { ...base, state: 'success', targetUrl: at.site, description: 'Deploy published' };
    case 'FAILED':
      return { ...base, state: 'failure', targetUrl: at.app, description: why(`Failed: ${deploy.reason ?? 'the deploy failed'}`) };
    case 'CANCELLED':
      return { ...base, state: 'cancelled', targetUrl: at.app, description: why(`Cancelled: ${deploy.reason ?? 'cancelled'}`) };
  }
}

function clip(text: string): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length > MAX_DESCRIPTION ? `${line.slice(0, MAX_DESCRIPTION - 1)}…` : line;
}

export function parseCommitStatus(body: string): CommitStatus | undefined {
  try {
    const parsed = JSON.parse(body) as CommitStatus;
    return parsed?.kind === 'commit-status' && typeof parsed.sha === 'string' && typeof parsed.repository === 'string' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The one request that posts a status: the token in its header only. */
export function commitStatusRequest(
  target: StatusTarget,
  status: CommitStatus,
  token: string,
): { url: string; headers: Record<string, string>; body: string } {
  const { api } = target;
  const state = STATES[api.kind][status.state];
  const common = { 'content-type': 'application/json', 'user-agent': 'Cairn-Commit-Status/1' };
  if (api.kind === 'github') {
    return {
      url: `${api.baseUrl}/repos/${encodeURIComponent(target.owner)}/${encodeURIComponent(target.name)}/statuses/${status.sha}`,
      headers: { ...common, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', authorization: `Bearer ${token}` },
      body: JSON.stringify({ state, target_url: status.targetUrl, description: status.description, context: status.context }),
    };
  }
  return {
    url: `${api.baseUrl}/projects/${encodeURIComponent(`${target.owner}/${target.name}`)}/statuses/${status.sha}`,
    headers: { ...common, accept: 'application/json', 'private-token': token },
    body: JSON.stringify({ state, target_url: status.targetUrl, description: status.description, name: status.context }),
  };
}

/** What became of one request: posted, worth trying again, or refused for good with the line the deploy's log gets. */
export type StatusAnswer = { posted: true } | { retry: string } | { refused: string };

/**
 * Reads the host's answer. 5xx, 429, a rate limit and no answer at all are
 * tried again; any other 4xx (a token without the right, a repository it
 * cannot see, a commit the host does not know) would be refused again.
 */
export function statusAnswerOf(
  target: StatusTarget,
  result: { statusCode?: number; error?: string; refused?: boolean; answer?: string },
  token: string,
): StatusAnswer {
  const host = target.hostName;
  const code = result.statusCode;
  if (code === undefined) {
    const error = result.error ?? 'no answer';
    if (result.refused)
      return { refused: `Commit status not set: the ${host} API address ${target.api.baseUrl} is refused here (${error})` };
    return { retry: error };
  }
  if (code >= 200 && code < 300) return { posted: true };
  const said = messageOf(result.answer, token);
  const answered = `${host} answered ${code}${said ? ` (${said})` : ''}`;
  if (code >= 500 || code === 429 || (code === 403 && /rate limit/i.test(said))) return { retry: answered };
  const repo = `${target.owner}/${target.name}`;
  const hint = code === 401 || code === 403 || code === 404 ? `; ${TOKEN_NEEDS[target.api.kind]} on ${repo}` : '';
  return { refused: `Commit status not set: ${answered}${hint}` };
}

/** The host's own words from an error answer (GitHub's and GitLab's JSON `message`), one short line, the token never in it. */
function messageOf(answer: string | undefined, token: string): string {
  if (!answer) return '';
  let text = answer;
  try {
    const parsed = JSON.parse(answer) as { message?: unknown; error?: unknown };
    const said = parsed.message ?? parsed.error;
    if (said !== undefined) text = typeof said === 'string' ? said : JSON.stringify(said);
  } catch {
    // not JSON: the text as it is
  }
  const line = text.split(token).join('[token]').replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/**
 * Says on the deploy's log, once, why its statuses are not set. Only once
 * the deploy has ended: until then its pipeline rewrites the whole log,
 * and would write over the line. (A refused status is refused again at the
 * deploy's end, which writes it then.) Never throws.
 */
export async function noteRefusal(
  services: Pick<Services, 'deploys' | 'deployLogs' | 'logger'>,
  siteId: string,
  deployId: string,
  line: string,
): Promise<void> {
  try {
    const deploy = await services.deploys.get(siteId, deployId);
    if (!deploy || deploy.status === 'IN_PROGRESS') return;
    const key = deployLogKey(siteId, deployId);
    const before = (await services.deployLogs.read(key)) ?? '';
    if (before.includes('  Commit status not set: ')) return;
    await services.deployLogs.write(key, `${before}${new Date().toISOString()}  ${line}\n`);
  } catch (err) {
    services.logger.warn('could not write why a commit status was not set to the deploy log', { siteId, deployId, err });
  }
}
