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
import { isIP } from 'node:net';
import type { Services } from '../services.js';
import type { Deploy } from '../data/deploys.js';
import type { Site } from '../data/sites.js';
import type { DeployEvent } from '../data/notification-urls.js';
import type { DeliveryRef, NotificationDelivery } from '../data/notification-deliveries.js';
import { deployLogKey } from '../ports/log-store.js';
import { checkUrlShape, guardedLookup, isRefusedAddress } from './notification-urls.js';
import { signNotification } from './notification-signature.js';

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
export function siteAddresses(services: Pick<Services, 'config'>, site: Pick<Site, 'slug'>, deployId: string): { site: string; deploy: string } {
  const scheme = new URL(services.config.urls.gatewayUrl).protocol;
  const domain = services.config.sites.domain;
  return { site: `${scheme}//${site.slug}.${domain}`, deploy: `${scheme}//${deployId.toLowerCase()}--${site.slug}.${domain}` };
}

export function notificationPayload(services: Services, event: DeployEvent, site: Site, deploy: Deploy, logTail?: string[]): NotificationPayload {
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

async function logTailOf(services: Services, deploy: Deploy): Promise<string[]> {
  const text = (await services.deployLogs.read(deployLogKey(deploy.siteId, deploy.id))) ?? '';
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.slice(-LOG_TAIL_LINES).map((l) => (l.length > MAX_LOG_LINE ? `${l.slice(0, MAX_LOG_LINE)}…` : l));
}

/**
 * Records the event's delivery to each of the site's URLs that wants it and
 * hands each to the outbox. Never throws (a failure is logged): the deploy
 * goes on whatever happens here.
 */
export async function notifyDeploy(services: Services, event: DeployEvent, deploy: Deploy | undefined): Promise<void> {
  if (!deploy) return;
  try {
    const urls = (await services.notificationUrls.list(deploy.siteId)).filter((u) => u.events.includes(event));
    if (urls.length === 0) return;
    const site = await services.sites.getById(deploy.siteId);
    if (!site) return;
    const logTail = event === 'FAILED' ? await logTailOf(services, deploy) : undefined;
    const body = JSON.stringify(notificationPayload(services, event, site, deploy, logTail));
    for (const url of urls) {
      const delivery = await services.notificationDeliveries.create({ siteId: site.id, urlId: url.id, deployId: deploy.id, event, body });
      await services.notificationOutbox.queued(refOf(delivery), 0).catch((err: unknown) => {
        // The record is the outbox: the local loop finds it; in AWS it is lost unless sent again (logged).
        services.logger.warn('could not queue a deploy notification', { ...refOf(delivery), err });
      });
    }
  } catch (err) {
    services.logger.warn('could not record a deploy notification', { event, deployId: deploy.id, siteId: deploy.siteId, err });
  }
}

export const refOf = (d: NotificationDelivery): DeliveryRef => ({ siteId: d.siteId, urlId: d.urlId, deliveryId: d.id });

/** The delay before attempt `attempt + 1` (attempts made so far: `attempt`). */
export function retryDelaySeconds(baseSeconds: number, attempt: number): number {
  return Math.min(MAX_RETRY_DELAY_SECONDS, baseSeconds * 2 ** Math.max(0, attempt - 1));
}

export interface AttemptResult {
  statusCode?: number;
  error?: string;
}

/**
 * One POST of `body`: the status code of the answer, or why there was none
 * (a refused address, a connection error, no answer within 5 s).
 */
export async function postNotification(
  target: string,
  body: string,
  headers: Record<string, string>,
  options: { allowPrivateAddresses: boolean; signal?: AbortSignal; timeoutMs?: number },
): Promise<AttemptResult> {
  let url: URL;
  try {
    url = checkUrlShape(target, options);
  } catch (err) {
    return { error: (err as Error).message };
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!options.allowPrivateAddresses && isIP(host) && isRefusedAddress(host)) return { error: `${host} is a loopback, private, link-local or reserved address: not connected to` };
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const done = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const req = send(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        ...(options.allowPrivateAddresses ? {} : { lookup: guardedLookup() }),
      },
      (res: IncomingMessage) => {
        // Only the status matters; the body is read and dropped.
        res.resume();
        res.on('error', () => {});
        done({ statusCode: res.statusCode });
        req.destroy();
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      done({ error: `no answer within ${timeoutMs / 1000} s` });
    }, timeoutMs);
    const onAbort = () => {
      req.destroy();
      done({ error: 'the service stopped during the attempt' });
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err: NodeJS.ErrnoException) => done({ error: (err.code && !err.message.includes(err.code) ? `${err.code}: ${err.message}` : err.message).slice(0, 300) }));
    req.end(body);
  });
}

/**
 * One attempt of a delivery, recorded. Retries are handed back to the
 * outbox with their delay. Throws only when the record cannot be read or
 * written (the caller tries the whole attempt again).
 */
export async function sendNotification(services: Services, ref: DeliveryRef, options: { signal?: AbortSignal } = {}): Promise<NotificationDelivery | undefined> {
  const { notificationDeliveries: deliveries, config, logger } = services;
  const delivery = await deliveries.get(ref);
  if (!delivery || delivery.status !== 'PENDING') return delivery;
  const waitMs = Date.parse(delivery.nextAttemptAt ?? '') - Date.now();
  if (waitMs > 1000) {
    // A message that came back early (its handling failed after the attempt was recorded): not due yet.
    await services.notificationOutbox.queued(ref, Math.ceil(waitMs / 1000));
    return delivery;
  }
  const target = await services.notificationUrls.withSecret(ref.siteId, ref.urlId);
  if (!target) return deliveries.recordAttempt(delivery, { delivered: false, error: 'the notification URL was removed', retryAt: null });
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
    { allowPrivateAddresses: config.notifications.allowPrivateAddresses, signal: options.signal },
  );
  const delivered = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
  const error = delivered ? undefined : (result.error ?? `the receiver answered ${result.statusCode}`);
  let retryAt: Date | null = null;
  if (!delivered && !options.signal?.aborted) {
    const now = Date.now();
    const giveUpAt = Date.parse(delivery.createdAt) + config.notifications.retryForSeconds * 1000;
    if (now < giveUpAt) retryAt = new Date(Math.min(giveUpAt, now + retryDelaySeconds(config.notifications.retryBaseSeconds, delivery.attempt + 1) * 1000));
  } else if (!delivered) {
    // Stopped mid-attempt (the local server shutting down): due again at once when it starts.
    retryAt = new Date();
  }
  const recorded = await deliveries.recordAttempt(delivery, { statusCode: result.statusCode, error, delivered, retryAt });
  if (!recorded) return undefined;
  if (recorded.status === 'FAILED') {
    logger.warn('a deploy notification was given up: its URL did not take it for an hour', { ...ref, deployId: delivery.deployId, event: delivery.event, attempts: recorded.attempt, error });
  }
  if (recorded.status === 'PENDING' && retryAt && !options.signal?.aborted) {
    await services.notificationOutbox.queued(ref, Math.max(0, Math.ceil((retryAt.getTime() - Date.now()) / 1000)));
  }
  return recorded;
}
