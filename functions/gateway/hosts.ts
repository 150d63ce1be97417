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
