/**
 * Deploy notifications: a JSON POST to each of a site's notification URLs
 * when one of its deploys is created, starts building, fails, succeeds or
 * is published, signed with the URL's secret (notification-signature.ts).
 *
 * Two halves, apart on purpose. `notifyDeploy` runs where a deploy changes
 * state (a GraphQL request, the pipeline): it only records one PENDING
 * delivery per URL and hands it to the outbox (ports/notifications.ts),
 * and never throws, so a notification can neither fail nor slow a deploy.
 * `sendNotification` makes one attempt of a delivery (the local server's
 * loop, or the deploy worker in AWS): a 2xx answer within 5 s delivers it;
 * anything else is tried again after a back-off that doubles from
 * config.notifications.retryBaseSeconds up to 900 s, for an hour, then the
 * delivery is given up with a log line. Delivery is at least once: an
 * attempt whose result could not be recorded is made again.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Services } from '../services.js';
import type { Deploy } from '../data/deploys.js';
import type { Site } from '../data/sites.js';
import type { DeployEvent } from '../data/notification-urls.js';
import type { DeliveryRef, NotificationDelivery } from '../data/notification-deliveries.js';
import { deployLogKey } from '../ports/log-store.js';
import { checkUrlShape } from './notification-urls.js';
import { OutboundRefused, pinnedLookup, resolveOutbound, type OutboundRules, type OutboundTarget, type Resolver } from '../net/outbound.js';
import { signNotification } from './notification-signature.js';
import {
  commitOf,
  commitStatusChannel,
  commitStatusOf,
  commitStatusRequest,
  isCommitStatusChannel,
  noteRefusal,
  parseCommitStatus,
  statusAnswerOf,
  siteStatusTarget,
  statusTargetOf,
  type CommitStatusEvent,
} from './commit-status.js';

/** How long a receiver has to answer (connection and response headers). */
export const DELIVERY_TIMEOUT_MS = 5000;
/** SQS delays a message 15 minutes at most: the back-off stops growing there. */
export const MAX_RETRY_DELAY_SECONDS = 900;
/** How many of a failed deploy's last log lines a notification carries. */
export const LOG_TAIL_LINES = 50;
const MAX_LOG_LINE = 1000;

/** The JSON body of a notification. */
export interface NotificationPayload {
  event: DeployEvent;
  /** When the event happened. */
  occurredAt: string;
  site: { id: string; slug: string; name: string; url: string };
  deploy: {
    id: string;
    siteId: string;
    status: Deploy['status'];
    commit: string | null;
    branch: string | null;
    ipfsHash: string | null;
    /** The deploy's own address (`<deployId>--<slug>.<sites domain>`). */
    url: string;
    published: boolean;
    preview: boolean;
    createdAt: string;
    startedAt: string | null;
    completedAt: string | null;
    /** Why it ended FAILED or CANCELLED. */
    reason: string | null;
  };
  /** FAILED only: the deploy log's last lines. */
  logTail?: string[];
}

/**
 * A site's addresses on the gateway, with the scheme the gateway is reached
 * by: the site's own and one deploy's (`<deployId>--<slug>`). The one place
 * these are written: notifications, the GraphQL Deploy and the git hooks'
 * answers all take them from here.
 */
export function siteAddresses(
  services: Pick<Services, 'config'>,
  site: Pick<Site, 'slug'>,
  deployId: string,
): { site: string; deploy: string } {
  const scheme = new URL(services.config.urls.gatewayUrl).protocol;
  const domain = services.config.sites.domain;
  return { site: `${scheme}//${site.slug}.${domain}`, deploy: `${scheme}//${deployId.toLowerCase()}--${site.slug}.${domain}` };
}

export function notificationPayload(
  services: Pick<Services, 'config'>,
  event: DeployEvent,
  site: Site,
  deploy: Deploy,
  logTail?: string[],
): NotificationPayload {
  const at = siteAddresses(services, site, deploy.id);
  return {
    event,
    occurredAt: new Date().toISOString(),
    site: { id: site.id, slug: site.slug, name: site.name, url: at.site },
    deploy: {
      id: deploy.id,
      siteId: deploy.siteId,
      status: deploy.status,
      commit: deploy.repository?.commit ?? null,
      branch: deploy.repository?.branch ?? null,
      ipfsHash: deploy.ipfsHash ?? null,
      url: at.deploy,
      // The record says so only once the site points at it; the event itself is the news.
      published: event === 'PUBLISHED' || deploy.published === true,
      preview: deploy.preview === true,
      createdAt: deploy.createdAt,
      startedAt: deploy.startedAt ?? null,
      completedAt: deploy.completedAt ?? null,
      reason: deploy.reason ?? null,
    },
    ...(logTail ? { logTail } : {}),
  };
}

async function logTailOf(services: Pick<Services, 'deployLogs'>, deploy: Deploy): Promise<string[]> {
  const text = (await services.deployLogs.read(deployLogKey(deploy.siteId, deploy.id))) ?? '';
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.slice(-LOG_TAIL_LINES).map((l) => (l.length > MAX_LOG_LINE ? `${l.slice(0, MAX_LOG_LINE)}…` : l));
}

/**
/**
 * What recording a commit status reads and writes: the site and its token
 * (whether its git host takes statuses), the deploy's log (the last line of
 * an end), and the delivery handed to the outbox.
 */
export type StatusRecordServices = Pick<
  Services,
  'config' | 'deployLogs' | 'logger' | 'notificationDeliveries' | 'notificationOutbox' | 'siteSecrets' | 'sites'
>;

/** What recording a deploy's notifications reads and writes: the site's notification URLs besides what a commit status needs. */
export type NotifyServices = StatusRecordServices & Pick<Services, 'notificationUrls'>;

/**
 * Records the event's delivery to each of the site's URLs that wants it,
 * and the commit status it sets (commit-status.ts) unless `commitStatus` is
 * false (the caller records that later, recordCommitStatus), and hands each
 * to the outbox. Never throws (a failure is logged): the deploy goes on
 * whatever happens here.
 *
 * A URL hears what happens after it was added: the URLs are read here,
 * after the change was written, so one added in between (a moment, or
 * longer on a busy machine) is skipped by the time of the change:
 * `occurredAt`, or the deploy's own (created, started, completed: the
 * pipeline publishes in the write that completes a deploy). A publish of an
 * older deploy (publishDeploy) passes its own time.
 */
export async function notifyDeploy(
  services: NotifyServices,
  event: DeployEvent,
  deploy: Deploy | undefined,
  options: { commitStatus?: boolean; occurredAt?: string } = {},
): Promise<void> {
  if (!deploy) return;
  try {
    const occurredAt = options.occurredAt ?? eventTime(event, deploy);
    const urls = (await services.notificationUrls.list(deploy.siteId)).filter(
      (u) => u.events.includes(event) && (occurredAt === undefined || u.createdAt <= occurredAt),
    );
    const site = await services.sites.getById(deploy.siteId);
    if (!site) return;
    if (urls.length > 0) {
      const logTail = event === 'FAILED' ? await logTailOf(services, deploy) : undefined;
      const body = JSON.stringify(notificationPayload(services, event, site, deploy, logTail));
      for (const url of urls) await recordDelivery(services, { siteId: site.id, urlId: url.id, deployId: deploy.id, event, body });
    }
    if (options.commitStatus !== false) await recordStatus(services, event, site, deploy);
  } catch (err) {
    services.logger.warn('could not record a deploy notification', { event, deployId: deploy.id, siteId: deploy.siteId, err });
  }
}

/** When the event's change was written, as the deploy records it (undefined: unknown, every URL hears it). */
function eventTime(event: DeployEvent, deploy: Deploy): string | undefined {
  if (event === 'CREATED') return deploy.createdAt;
  if (event === 'BUILDING') return deploy.startedAt ?? undefined;
  return deploy.completedAt ?? undefined;
}

/**
 * Records the commit status an event sets on the deploy's commit, when it
 * sets one (notifyDeploy records it with the other deliveries; this is for
 * a cancel, which notifies no URL, and for a status recorded after the
 * deploy's log is closed). Never throws.
 */
export async function recordCommitStatus(
  services: StatusRecordServices,
  event: CommitStatusEvent,
  deploy: Deploy | undefined,
): Promise<void> {
  if (!deploy) return;
  try {
    const site = await services.sites.getById(deploy.siteId);
    if (site) await recordStatus(services, event, site, deploy);
  } catch (err) {
    services.logger.warn('could not record a commit status', { event, deployId: deploy.id, siteId: deploy.siteId, err });
  }
}

async function recordStatus(
  services: Omit<StatusRecordServices, 'sites'>,
  event: CommitStatusEvent,
  site: Site,
  deploy: Deploy,
): Promise<void> {
  const sha = commitOf(deploy);
  if (!sha) return;
  const target = await statusTargetOf(services, site, deploy);
  if ('none' in target) return;
  const at = siteAddresses(services, site, deploy.id);
  const app = `${services.config.urls.baseUrl}/#/sites/${encodeURIComponent(site.id)}/deploys/${encodeURIComponent(deploy.id)}`;
  const ended = event === 'FAILED' || event === 'CANCELLED';
  const lastLine = ended ? (await logTailOf(services, deploy)).at(-1) : undefined;
  const status = commitStatusOf(event, deploy, target.repository, sha, { ...at, app }, lastLine);
  // The record's event is a notification's: a cancel is kept as the unsuccessful end it is (the body says cancelled).
  await recordDelivery(services, {
    siteId: site.id,
    urlId: commitStatusChannel(deploy.id),
    deployId: deploy.id,
    event: event === 'CANCELLED' ? 'FAILED' : event,
    body: JSON.stringify(status),
  });
}

/** A delivery recorded PENDING, and handed to the outbox. */
async function recordDelivery(
  services: Pick<Services, 'logger' | 'notificationDeliveries' | 'notificationOutbox'>,
  init: Parameters<Services['notificationDeliveries']['create']>[0],
): Promise<void> {
  const delivery = await services.notificationDeliveries.create(init);
  await services.notificationOutbox.queued(refOf(delivery), 0).catch((err: unknown) => {
    // The record is the outbox: the local loop finds it; in AWS it is lost unless sent again (logged).
    services.logger.warn('could not queue a deploy notification', { ...refOf(delivery), err });
  });
}

export const refOf = (d: NotificationDelivery): DeliveryRef => ({ siteId: d.siteId, urlId: d.urlId, deliveryId: d.id });

/** The delay before attempt `attempt + 1` (attempts made so far: `attempt`). */
export function retryDelaySeconds(baseSeconds: number, attempt: number): number {
  return Math.min(MAX_RETRY_DELAY_SECONDS, baseSeconds * 2 ** Math.max(0, attempt - 1));
}

export interface AttemptResult {
  statusCode?: number;
  error?: string;
  /** The address was not connected to (a private one where they are refused, or a URL of the wrong shape). */
  refused?: boolean;
  /** The start of an error answer's body, when `answerBytes` asked for it. */
  answer?: string;
}

/**
 * One POST of `body`: the status code of the answer, or why there was none
 * (an address the outbound policy refuses, a connection error, no answer
 * within 5 s, the name's resolution included). The host is resolved once
 * and the connection pinned to the addresses checked (net/outbound.ts);
 * a redirect is an answer like any other, not followed. With
 * `answerBytes`, an answer that is no 2xx has that much of its body read
 * too (within the same 5 s), for the error it gives.
 */
export async function postNotification(
  target: string,
  body: string,
  headers: Record<string, string>,
  options: { outbound: OutboundRules; resolver?: Resolver; signal?: AbortSignal; timeoutMs?: number; answerBytes?: number },
): Promise<AttemptResult> {
  let url: URL;
  try {
    url = checkUrlShape(target, options.outbound);
  } catch (err) {
    return { error: (err as Error).message, refused: true };
  }
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    let req: ReturnType<typeof send> | undefined;
    const done = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const timer = setTimeout(() => {
      req?.destroy();
      done({ error: `no answer within ${timeoutMs / 1000} s` });
    }, timeoutMs);
    const onAbort = () => {
      req?.destroy();
      done({ error: 'the service stopped during the attempt' });
    };
    if (options.signal?.aborted) return onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const request = (checked: OutboundTarget) => {
      req = send(
        url,
        {
          method: 'POST',
          agent: false,
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          lookup: pinnedLookup(checked),
        },
        (res: IncomingMessage) => {
          res.on('error', () => {});
          const statusCode = res.statusCode;
          const limit = options.answerBytes ?? 0;
          if (limit === 0 || (statusCode !== undefined && statusCode >= 200 && statusCode < 300)) {
            // Only the status matters; the body is read and dropped.
            res.resume();
            done({ statusCode });
            req?.destroy();
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          const answered = () => {
            done({ statusCode, answer: Buffer.concat(chunks).subarray(0, limit).toString('utf8') });
            req?.destroy();
          };
          res.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            size += chunk.length;
            if (size >= limit) answered();
          });
          res.on('end', answered);
          res.on('close', answered);
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) =>
        done({
          error: (err.code && !err.message.includes(err.code) ? `${err.code}: ${err.message}` : err.message).slice(0, 300),
          ...(err instanceof OutboundRefused ? { refused: true } : {}),
        }),
      );
      req.end(body);
    };
    // Resolved within the attempt's time, once: the request connects only to what this checked.
    resolveOutbound(url, options.outbound, options.resolver).then(
      (checked) => {
        if (!settled) request(checked);
      },
      (err: NodeJS.ErrnoException | undefined) => {
        if (err instanceof OutboundRefused) done({ error: err.message, refused: true });
        else done({ error: `${url.hostname} does not resolve${err?.code ? ` (${err.code})` : ''}` });
      },
    );
  });
}

/** What one attempt came to. `final`: trying again would not help (it is not retried); `refusal`: what the deploy's log says of it. */
interface Attempt {
  delivered: boolean;
  statusCode?: number;
  error?: string;
  final?: boolean;
  refusal?: string;
}

const is2xx = (code: number | undefined) => code !== undefined && code >= 200 && code < 300;

/** A notification: the JSON POST to its URL, signed with the URL's secret. */
async function attemptNotification(
  services: Pick<Services, 'config' | 'notificationUrls'>,
  delivery: NotificationDelivery,
  signal: AbortSignal | undefined,
): Promise<Attempt> {
  const target = await services.notificationUrls.withSecret(delivery.siteId, delivery.urlId);
  if (!target) return { delivered: false, error: 'the notification URL was removed', final: true };
  const t = Math.floor(Date.now() / 1000);
  const result = await postNotification(
    target.url.url,
    delivery.body,
    {
      'content-type': 'application/json',
      'user-agent': 'Cairn-Notifications/1',
      'x-cairn-event': delivery.event,
      'x-cairn-delivery': delivery.id,
      'x-cairn-signature': signNotification(target.secret, delivery.body, t),
    },
    { outbound: services.config.outbound, signal },
  );
  const delivered = is2xx(result.statusCode);
  return {
    delivered,
    statusCode: result.statusCode,
    error: delivered ? undefined : (result.error ?? `the receiver answered ${result.statusCode}`),
  };
}

/**
 * A commit status: posted to the git host's API with the site's token,
 * opened here and only here. Not sent when a newer status of the deploy
 * was recorded meanwhile, or when the site no longer names the repository
 * (or has no token any more).
 */
async function attemptCommitStatus(
  services: Pick<Services, 'config' | 'notificationDeliveries' | 'siteSecrets' | 'sites'>,
  delivery: NotificationDelivery,
  signal: AbortSignal | undefined,
): Promise<Attempt> {
  const status = parseCommitStatus(delivery.body);
  if (!status) return { delivered: false, error: 'not a commit status', final: true };
  const [newest] = await services.notificationDeliveries.listOfUrl(delivery.siteId, delivery.urlId, 1);
  if (newest && newest.id !== delivery.id)
    return { delivered: false, error: 'a newer status of the deploy was recorded: this one is not sent', final: true };
  const site = await services.sites.getById(delivery.siteId);
  const target = site ? await siteStatusTarget(services, site) : undefined;
  if (!target || 'none' in target || target.repository !== status.repository)
    return { delivered: false, error: "the site's repository or its API changed: not sent", final: true };
  const credentials = await services.siteSecrets.repositoryCredentials(delivery.siteId);
  if (!credentials) return { delivered: false, error: 'the site has no repository access token any more: not sent', final: true };
  const request = commitStatusRequest(target, status, credentials.token);
  const result = await postNotification(request.url, request.body, request.headers, {
    outbound: services.config.outbound,
    signal,
    answerBytes: 4096,
  });
  const answer = statusAnswerOf(target, result, credentials.token);
  if ('posted' in answer) return { delivered: true, statusCode: result.statusCode };
  if ('retry' in answer) return { delivered: false, statusCode: result.statusCode, error: answer.retry };
  return { delivered: false, statusCode: result.statusCode, error: answer.refused, final: true, refusal: answer.refused };
}

/**
 * What sending a delivery reads and writes: the delivery and its URL (or,
 * for a commit status, the site, its token and the newest status of the
 * deploy), the outbox for a retry, and the deploy's record and log for a
 * status the git host refused.
 */
export type NotificationSendServices = Pick<
  Services,
  | 'config'
  | 'deployLogs'
  | 'deploys'
  | 'logger'
  | 'notificationDeliveries'
  | 'notificationOutbox'
  | 'notificationUrls'
  | 'siteSecrets'
  | 'sites'
>;

/**
 * One attempt of a delivery, recorded. Retries are handed back to the
 * outbox with their delay. Throws only when the record cannot be read or
 * written (the caller tries the whole attempt again).
 */
export async function sendNotification(
  services: NotificationSendServices,
  ref: DeliveryRef,
  options: { signal?: AbortSignal } = {},
): Promise<NotificationDelivery | undefined> {
  const { notificationDeliveries: deliveries, config, logger } = services;
  const delivery = await deliveries.get(ref);
  if (!delivery || delivery.status !== 'PENDING') return delivery;
  const waitMs = Date.parse(delivery.nextAttemptAt ?? '') - Date.now();
  if (waitMs > 1000) {
    // A message that came back early (its handling failed after the attempt was recorded): not due yet.
    await services.notificationOutbox.queued(ref, Math.ceil(waitMs / 1000));
    return delivery;
  }
  const commitStatus = isCommitStatusChannel(ref.urlId);
  const result = commitStatus
    ? await attemptCommitStatus(services, delivery, options.signal)
    : await attemptNotification(services, delivery, options.signal);
  const { delivered, error } = result;
  let retryAt: Date | null = null;
  if (!delivered && result.final) {
    // Not tried again.
  } else if (!delivered && !options.signal?.aborted) {
    const now = Date.now();
    const giveUpAt = Date.parse(delivery.createdAt) + config.notifications.retryForSeconds * 1000;
    if (now < giveUpAt)
      retryAt = new Date(Math.min(giveUpAt, now + retryDelaySeconds(config.notifications.retryBaseSeconds, delivery.attempt + 1) * 1000));
  } else if (!delivered) {
    // Stopped mid-attempt (the local server shutting down): due again at once when it starts.
    retryAt = new Date();
  }
  const recorded = await deliveries.recordAttempt(delivery, { statusCode: result.statusCode, error, delivered, retryAt });
  if (!recorded) return undefined;
  if (recorded.status === 'FAILED' && result.refusal) {
    logger.warn('a commit status was refused by the git host; not tried again', { ...ref, deployId: delivery.deployId, error });
    await noteRefusal(services, delivery.siteId, delivery.deployId, result.refusal);
  } else if (recorded.status === 'FAILED' && !result.final) {
    const what = commitStatus
      ? 'a commit status was given up: its git host did not take it for an hour'
      : 'a deploy notification was given up: its URL did not take it for an hour';
    logger.warn(what, { ...ref, deployId: delivery.deployId, event: delivery.event, attempts: recorded.attempt, error });
  }
  if (recorded.status === 'PENDING' && retryAt && !options.signal?.aborted) {
    await services.notificationOutbox.queued(ref, Math.max(0, Math.ceil((retryAt.getTime() - Date.now()) / 1000)));
  }
  return recorded;
}
