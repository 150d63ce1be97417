/**
 * How a recorded notification delivery gets sent: locally the server's own
 * loop (functions/local/notification-outbox.ts) is woken and finds it in
 * the deliveries table; in AWS a message goes to the deploy queue, delayed
 * by the delivery's back-off, and the deploy worker sends it
 * (aws/sqs-deploy-queue.ts). Either way nothing is sent from the code
 * that recorded the event (a GraphQL request, a deploy's pipeline): only
 * recorded and handed on, so a slow receiver never slows anything else.
 */
import type { DeliveryRef } from '../data/notification-deliveries.js';

export interface NotificationOutbox {
  /** A delivery is due in `delaySeconds` (0: now). */
  queued(delivery: DeliveryRef, delaySeconds: number): Promise<void>;
}

/** An outbox that only records: the local server sets its loop, which finds what is due by polling. */
export const recordOnlyOutbox: NotificationOutbox = {
  queued: async () => {},
};
