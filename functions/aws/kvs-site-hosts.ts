/**
 * The CDN's host map in AWS: a CloudFront KeyValueStore from each site's
 * host label (its slug) to its id, and from each active domain of a site
 * to its id (or `>` and the primary it redirects to), read by the
 * distributions' viewer-request function (functions/cdn/viewer-request.js).
 *
 * Every write to a store names the store's current version (IfMatch, from
 * DescribeKeyValueStore). A change is written as: learn the version, then
 * read who holds the slug now (the sites table), then write that, or
 * nothing if the store already says so. A write by anyone else in between
 * changes the version, the store refuses ours (ConflictException), and we
 * read both again: so two sites trading a slug cannot leave the entry
 * naming the one that let go of it.
 *
 * The KeyValueStore API is global and signed with SigV4a; the SDK signs
 * that way only once a SigV4a signer is registered, which importing
 * @aws-sdk/signature-v4a does (the JavaScript one: no native CRT in Lambda).
 *
 * A write that fails for any other reason does not fail the site change
 * that asked for it (the site's record is written already): it is put off
 * on the deploy queue (cdn-retry.ts) and the deploy worker does it again,
 * reading the sites table afresh then.
 */
import '@aws-sdk/signature-v4a';
import {
  DeleteKeyCommand,
  DescribeKeyValueStoreCommand,
  GetKeyCommand,
  PutKeyCommand,
  type CloudFrontKeyValueStoreClient,
} from '@aws-sdk/client-cloudfront-keyvaluestore';
import type { Logger } from '../core/logger.js';
import type { CdnAttempt, CdnRetries, SiteHostMap } from '../core/ports/site-cache.js';
import { SLUG_PATTERN } from '../core/data/sites.js';
import { putOff } from '../core/hosting/cdn-retry.js';

/** A site's own domain (core/hosting/domain-names.ts normalizes them so); a KeyValueStore key has at most 512 bytes. */
const DOMAIN_KEY = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

/** Writers racing on one store are few (the API and the worker); past this many refusals in a row the change is put off. */
const CONFLICT_RETRIES = 5;

const nameOf = (err: unknown) => (err as { name?: string } | undefined)?.name;

export class KvsSiteHostMap implements SiteHostMap {
  constructor(
    private readonly kvs: CloudFrontKeyValueStoreClient,
    private readonly kvsArn: string,
    private readonly retries: CdnRetries,
    private readonly logger: Logger,
    private readonly random: () => number = Math.random,
  ) {}

  async reconcile(label: string, siteIdNow: () => Promise<string | undefined>, options: CdnAttempt = {}): Promise<void> {
    // Host names are case-insensitive; the edge function looks the label up lowercased.
    const key = label.toLowerCase();
    if (!SLUG_PATTERN.test(key) && !DOMAIN_KEY.test(key)) return; // no host can name it
    const attempt = options.attempt ?? 0;
    try {
      await this.write(key, siteIdNow);
    } catch (err) {
      await putOff(this.retries, this.logger, { kind: 'site-host', label: key, attempt }, err, this.random);
    }
  }

  private async write(key: string, siteIdNow: () => Promise<string | undefined>): Promise<void> {
    for (let refused = 0; ; refused++) {
      const { ETag } = await this.kvs.send(new DescribeKeyValueStoreCommand({ KvsARN: this.kvsArn }));
      const wanted = await siteIdNow();
      if ((await this.current(key)) === wanted) return;
      try {
        if (wanted) await this.kvs.send(new PutKeyCommand({ KvsARN: this.kvsArn, Key: key, Value: wanted, IfMatch: ETag }));
        else await this.kvs.send(new DeleteKeyCommand({ KvsARN: this.kvsArn, Key: key, IfMatch: ETag }));
        this.logger.info('CDN host map updated', { label: key, siteId: wanted ?? null });
        return;
      } catch (err) {
        if (!wanted && nameOf(err) === 'ResourceNotFoundException') return; // gone already
        if (nameOf(err) !== 'ConflictException' || refused >= CONFLICT_RETRIES) throw err;
      }
    }
  }

  private async current(key: string): Promise<string | undefined> {
    try {
      return (await this.kvs.send(new GetKeyCommand({ KvsARN: this.kvsArn, Key: key }))).Value;
    } catch (err) {
      if (nameOf(err) === 'ResourceNotFoundException') return undefined;
      throw err;
    }
  }
}
