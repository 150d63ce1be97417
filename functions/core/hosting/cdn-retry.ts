/**
 * When a CDN change that could not be made is tried again. CloudFront
 * allows 15 wildcard invalidations in flight and throttles its APIs; a
 * purge or a host-map write refused for that (or anything else) is put off
 * on the deploy queue rather than failing the mutation that asked for it.
 *
 * 30 s, doubling up to SQS's longest delay (900 s), with a quarter of
 * jitter so that purges refused together do not all come back together:
 * eight deferrals span 45 to 60 minutes, after which the change is given up
 * and logged as an error (the next publish or purgeCache of the site purges
 * afresh; the next change of the site writes its host entry afresh).
 */
import type { Logger } from '../logger.js';
import type { CdnRetries, CdnRetry } from '../ports/site-cache.js';

/** SQS's longest DelaySeconds. */
export const SQS_MAX_DELAY_SECONDS = 900;
export const CDN_RETRY_FIRST_DELAY_SECONDS = 30;
export const CDN_RETRY_MAX_ATTEMPTS = 8;

/** The delay before attempt `attempt` (1 for the first retry). */
export function cdnRetryDelaySeconds(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(SQS_MAX_DELAY_SECONDS, CDN_RETRY_FIRST_DELAY_SECONDS * 2 ** Math.max(0, attempt - 1));
  return Math.max(1, Math.min(SQS_MAX_DELAY_SECONDS, Math.round(base * (0.75 + 0.25 * random()))));
}

function reason(err: unknown): string {
  const e = err as { name?: string; message?: string } | undefined;
  return e?.name && e.name !== 'Error' ? e.name : (e?.message ?? String(err));
}

/**
 * Puts off `failed` (the change as it was just tried, `attempt` times put
 * off before) after `err`: the next attempt goes to the queue with its
 * delay, or past the last the change is given up. Rejects only when the
 * queue refused it too.
 */
export async function putOff(retries: CdnRetries, logger: Logger, failed: CdnRetry, err: unknown, random?: () => number): Promise<void> {
  const attempt = failed.attempt + 1;
  if (attempt > CDN_RETRY_MAX_ATTEMPTS) {
    logger.error('a CDN change kept failing for about an hour; given up', { ...failed, reason: reason(err), err });
    return;
  }
  const delaySeconds = cdnRetryDelaySeconds(attempt, random);
  await retries.later({ ...failed, attempt }, delaySeconds);
  logger.warn('a CDN change could not be made now; put off', { ...failed, attempt, delaySeconds, reason: reason(err) });
}
