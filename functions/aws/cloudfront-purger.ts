/**
 * Purges in AWS: one CloudFront invalidation of the site's prefix. The
 * distribution's viewer-request function (functions/cdn/viewer-request.js)
 * rewrites every site host to `/sites/<siteId>/<path>`, which is the cache
 * key, so `/sites/<siteId>/*` (one wildcard path, query-string variants
 * included) drops exactly that site's answers. A deploy's own address
 * (`/previews/...`) needs no purge: its content never changes, and its
 * answers tell the CDN not to keep them.
 *
 * CloudFront allows 15 wildcard invalidations in progress; past that it
 * answers TooManyInvalidationsInProgress. That, and any other failure, puts
 * the purge off on the deploy queue (cdn-retry.ts) and resolves, so the
 * mutation or the publish that asked for it goes on.
 */
import { randomUUID } from 'node:crypto';
import { CreateInvalidationCommand, type CloudFrontClient } from '@aws-sdk/client-cloudfront';
import type { Logger } from '../core/logger.js';
import type { CdnAttempt, CdnPurger, CdnRetries } from '../core/ports/site-cache.js';
import { SITE_ID_PATTERN } from '../core/ids.js';
import { putOff } from '../core/hosting/cdn-retry.js';

/** What the CDN keeps of a site: every answer under its rewritten prefix. */
export const sitePurgePath = (siteId: string): string => `/sites/${siteId}/*`;

export class CloudFrontPurger implements CdnPurger {
  constructor(
    private readonly cloudFront: CloudFrontClient,
    private readonly distributionId: string,
    private readonly retries: CdnRetries,
    private readonly logger: Logger,
    private readonly random: () => number = Math.random,
  ) {}

  async purgeSite(siteId: string, options: CdnAttempt = {}): Promise<void> {
    // A path is built from it: anything but a site id is refused, not invalidated.
    if (!SITE_ID_PATTERN.test(siteId)) throw new Error(`not a site id: "${siteId.slice(0, 80)}"`);
    const attempt = options.attempt ?? 0;
    try {
      const out = await this.cloudFront.send(
        new CreateInvalidationCommand({
          DistributionId: this.distributionId,
          // Unique per call: the same reference twice would be taken for a repeat of the first invalidation.
          InvalidationBatch: { CallerReference: `${siteId}/${randomUUID()}`, Paths: { Quantity: 1, Items: [sitePurgePath(siteId)] } },
        }),
      );
      this.logger.info('site purged from the CDN', { siteId, invalidationId: out.Invalidation?.Id, attempt });
    } catch (err) {
      await putOff(this.retries, this.logger, { kind: 'purge', siteId, attempt }, err, this.random);
    }
  }
}
