/**
 * Which bucket a request's Host names: `<bucket>.<storage public domain>` (the
 * public URL of a file) or `<bucket>.<bucket endpoint domain>` (the
 * bucket-specific address). Ports are ignored, as the S3 router ignores them:
 * a proxy in front may listen on another port than the one configured.
 */
import type { Config } from '../core/config.js';
import { SITE_ID_PATTERN } from '../core/ids.js';
import type { SiteAddress } from '../core/hosting/site-hosts.js';
import { normalizeDomain } from '../core/hosting/domain-names.js';

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

/**
 * Which site a request names: by its host (`{ slug, deployLabel? }`, the
 * deploy's id as the host gives it: DNS lowercases it) or, behind the CDN,
 * by the path the CDN rewrote (`{ siteId, deployLabel? }`).
 */
export type SiteHost = SiteAddress;

/**
 * Which site a Host names: `<slug>.<sites domain>` (its published deploy) or
 * `<deployId>--<slug>.<sites domain>` (one deploy). Undefined for any other host.
 */
export function siteHost(host: string | null, sitesDomain: string): { slug: string; deployLabel?: string } | undefined {
  if (!host) return undefined;
  const name = hostname(host);
  const domain = hostname(sitesDomain);
  if (name.length <= domain.length + 1 || !name.endsWith(`.${domain}`)) return undefined;
  const label = name.slice(0, name.length - domain.length - 1);
  if (label.includes('.')) return undefined;
  const split = label.indexOf('--');
  // A slug may itself hold "--"; only a deploy id's shape before it makes the label a deploy's.
  if (split > 0 && /^[0-9a-z]{22}$/.test(label.slice(0, split)))
    return { slug: label.slice(split + 2), deployLabel: label.slice(0, split) };
  return { slug: label };
}

/** A site path as the CDN's viewer-request function (functions/cdn/viewer-request.js) rewrote it. */
export interface SiteOriginPath {
  address: { siteId: string; deployLabel?: string };
  /** The path inside the site, as the viewer sent it (still percent-encoded). */
  rawPath: string;
}

const PUBLISHED_PATH = /^\/sites\/([0-9a-f-]{36})(\/.*)$/;
const PREVIEW_PATH = /^\/previews\/([0-9a-f-]{36})\/([0-9a-z]{22})(\/.*)$/;

/**
 * `/sites/<siteId>/<path>` (the site's published deploy) or
 * `/previews/<siteId>/<deployLabel>/<path>` (one deploy): what the CDN sends
 * for `<slug>.<sites domain>` and `<deployId>--<slug>.<sites domain>`.
 * Previews have a prefix of their own, so no path of a site can be read as
 * one of its deploys. Only the prefix is taken here; the rest is the site's
 * path and goes through the same decoding (`..` stops at the site's root)
 * as on a site host.
 */
export function siteOriginPath(rawPath: string): SiteOriginPath | undefined {
  const published = PUBLISHED_PATH.exec(rawPath);
  if (published && SITE_ID_PATTERN.test(published[1]!)) return { address: { siteId: published[1]! }, rawPath: published[2]! };
  const preview = PREVIEW_PATH.exec(rawPath);
  if (preview && SITE_ID_PATTERN.test(preview[1]!))
    return { address: { siteId: preview[1]!, deployLabel: preview[2]! }, rawPath: preview[3]! };
  return undefined;
}

/**
 * The name a Host gives when it could be a site's own domain: a valid domain
 * name that is none of the service's own (sites, buckets, the gateway) nor
 * an address or a local-only name. Whether a site has it is the data's to say.
 */
export function domainHost(host: string | null, config: Pick<Config, 'sites' | 'urls'>): string | undefined {
  if (!host || host.length > 300) return undefined;
  const name = hostname(host);
  if (!/^[a-z0-9.-]+$/.test(name)) return undefined;
  try {
    return normalizeDomain(name, config) === name ? name : undefined;
  } catch {
    return undefined;
  }
}
