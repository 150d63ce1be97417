/**
 * Which bucket a request's Host names: `<bucket>.<storage public domain>` (the
 * public URL of a file) or `<bucket>.<bucket endpoint domain>` (the
 * bucket-specific address). Ports are ignored, as the S3 router ignores them:
 * a proxy in front may listen on another port than the one configured.
 */
import type { Config } from '../core/config.js';

export interface BucketHost {
  bucket: string;
  via: 'public-domain' | 'bucket-endpoint';
}

export function hostname(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return (colon < 0 ? h : h.slice(0, colon)).replace(/\.$/, '');
}

export function bucketHost(host: string | null, urls: Config['urls']): BucketHost | undefined {
  if (!host) return undefined;
  const name = hostname(host);
  const forms: Array<[string, BucketHost['via']]> = [
    [hostname(urls.storagePublicDomain), 'public-domain'],
    [hostname(urls.bucketEndpointDomain), 'bucket-endpoint'],
  ];
  for (const [domain, via] of forms) {
    if (name.length > domain.length + 1 && name.endsWith(`.${domain}`)) {
      return { bucket: name.slice(0, name.length - domain.length - 1), via };
    }
  }
  return undefined;
}

export interface SiteHost {
  slug: string;
  /** A deploy's id as the host gives it: DNS lowercases it. */
  deployLabel?: string;
}

/**
 * Which site a Host names: `<slug>.<sites domain>` (its published deploy) or
 * `<deployId>--<slug>.<sites domain>` (one deploy). Undefined for any other host.
 */
export function siteHost(host: string | null, sitesDomain: string): SiteHost | undefined {
  if (!host) return undefined;
  const name = hostname(host);
  const domain = hostname(sitesDomain);
  if (name.length <= domain.length + 1 || !name.endsWith(`.${domain}`)) return undefined;
  const label = name.slice(0, name.length - domain.length - 1);
  if (label.includes('.')) return undefined;
  const split = label.indexOf('--');
  // A slug may itself hold "--"; only a deploy id's shape before it makes the label a deploy's.
  if (split > 0 && /^[0-9a-z]{22}$/.test(label.slice(0, split))) return { slug: label.slice(split + 2), deployLabel: label.slice(0, split) };
  return { slug: label };
}
