/**
 * The local server's sender of deploy notifications: a loop in this
 * process over the deliveries recorded PENDING (data/notification-deliveries.ts),
 * woken when one is recorded and polling every second for retries that
 * came due. The table is the outbox, so a restart loses nothing: what was
 * pending (or in flight when the process died) is sent when it starts.
 *
 * One delivery per URL at a time, oldest first, so a URL sees a deploy's
 * events in the order they happened (a delivery waiting for its retry
 * does not hold the newer ones back). Nothing here may take the process
 * down: every failure is caught, logged, and tried again at the next look.
 */
import { Poller } from './poller.js';
import type { Logger } from '../core/logger.js';
import type { NotificationOutbox } from '../core/ports/notifications.js';
import { refOf, sendNotification, type NotificationSendServices } from '../core/hosting/notifications.js';

const POLL_MS = 1000;
/** Deliveries in flight at once (each to a different URL). */
const CONCURRENCY = 8;

export class LocalNotificationOutbox implements NotificationOutbox {
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private readonly controller = new AbortController();

  private readonly poller = new Poller(
    () => this.pump(),
    (err) => this.logger.error('the notification outbox could not look for deliveries; it looks again shortly', { err }),
  );

  /** Set by start: the services are built with this outbox in them, so it gets them after. */
  private services?: NotificationSendServices;

  constructor(private readonly logger: Logger) {}

  start(services: NotificationSendServices): void {
    this.services = services;
    this.poller.start(POLL_MS);
  }

  async queued(): Promise<void> {
    // Before start the delivery waits in the table; start's first look finds it.
    if (this.services) this.poller.wake();
  }

  private async pump(): Promise<void> {
    const services = this.services;
    if (!services || this.inFlight.size >= CONCURRENCY) return;
    for (const delivery of await services.notificationDeliveries.due(new Date(), 50)) {
      if (this.poller.isStopped || this.inFlight.size >= CONCURRENCY) break;
      // The URL's older delivery goes first; this one is looked at again when it is done.
      if (this.inFlight.has(delivery.urlId)) continue;
      const ref = refOf(delivery);
      const sending = sendNotification(services, ref, { signal: this.controller.signal })
        .catch((err: unknown) => this.logger.error('a deploy notification attempt failed; tried again at the next look', { ...ref, err }))
        .finally(() => {
          this.inFlight.delete(delivery.urlId);
          this.poller.wake();
        });
      this.inFlight.set(delivery.urlId, sending);
    }
  }

  /** Stops looking; attempts in flight are cut short and stay pending for the next start. */
  async stop(): Promise<void> {
    const stopping = this.poller.stop();
    this.controller.abort();
    await stopping;
    await Promise.allSettled([...this.inFlight.values()]);
  }
}
