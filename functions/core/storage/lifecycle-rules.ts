/**
 * What a bucket's lifecycle rules say of one object or upload: whether a
 * rule applies (its prefix, tags and sizes) and when it expires. Shared by
 * the expiry run (lifecycle.ts) and the S3 answers that announce it
 * (`x-amz-expiration`, `x-amz-abort-date`).
 *
 * S3 counts days to the next midnight UTC: "Amazon S3 calculates the time
 * by adding the number of days specified in the rule to the object creation
 * time and rounding the resulting time to the next day's midnight UTC. For
 * example, if an object was created on 1/15/2014 10:30 AM UTC and you
 * specify 3 days in a transition rule, the transition date of the object
 * would be calculated as 1/19/2014 00:00 UTC"
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-expire-general-considerations.html,
 * and the same for noncurrent versions, counted from when they became
 * noncurrent, and for AbortIncompleteMultipartUpload from initiation).
 */
import type { LifecycleRule, LifecycleTag } from '../data/lifecycle.js';

/**
 * A lifecycle day. Every function here takes the day's length too
 * (`dayMs`, this by default): CAIRN_LIFECYCLE_DAY_SECONDS makes it
 * shorter for tests of the rules, as RGW's rgw_lc_debug_interval does;
 * days are then counted from the epoch in that length, as midnights UTC
 * are in days.
 */
export const DAY_MS = 86_400_000;

/** What a rule's filter asks of an object, however it was written. */
export interface RuleCriteria {
  prefix: string;
  tags: LifecycleTag[];
  sizeGreaterThan?: number;
  sizeLessThan?: number;
}

export function criteriaOf(rule: LifecycleRule): RuleCriteria {
  const f = rule.filter;
  if (!f) return { prefix: rule.prefix ?? '', tags: [] };
  if (f.and) {
    return {
      prefix: f.and.prefix ?? '',
      tags: f.and.tags,
      ...(f.and.sizeGreaterThan !== undefined ? { sizeGreaterThan: f.and.sizeGreaterThan } : {}),
      ...(f.and.sizeLessThan !== undefined ? { sizeLessThan: f.and.sizeLessThan } : {}),
    };
  }
  return {
    prefix: f.prefix ?? '',
    tags: f.tag ? [f.tag] : [],
    ...(f.sizeGreaterThan !== undefined ? { sizeGreaterThan: f.sizeGreaterThan } : {}),
    ...(f.sizeLessThan !== undefined ? { sizeLessThan: f.sizeLessThan } : {}),
  };
}

/** Whether the rule's filter needs more than a key (tags or sizes: a delete marker or an upload has neither). */
export function needsObject(criteria: RuleCriteria): boolean {
  return criteria.tags.length > 0 || criteria.sizeGreaterThan !== undefined || criteria.sizeLessThan !== undefined;
}

/** Whether an object (or, without size and tags, a delete marker) is one the rule is about. */
export function ruleApplies(rule: LifecycleRule, target: { key: string; size?: number; tags?: LifecycleTag[] }): boolean {
  if (rule.status !== 'Enabled') return false;
  const c = criteriaOf(rule);
  if (!target.key.startsWith(c.prefix)) return false;
  if (target.size === undefined) return !needsObject(c);
  if (c.sizeGreaterThan !== undefined && !(target.size > c.sizeGreaterThan)) return false;
  if (c.sizeLessThan !== undefined && !(target.size < c.sizeLessThan)) return false;
  const tags = target.tags ?? [];
  return c.tags.every((want) => tags.some((t) => t.key === want.key && t.value === want.value));
}

/** `from` plus `days`, rounded up to the next midnight UTC (a time already at midnight stays). */
export function afterDays(from: string | number, days: number, dayMs = DAY_MS): number {
  const at = (typeof from === 'number' ? from : Date.parse(from)) + days * dayMs;
  return Math.ceil(at / dayMs) * dayMs;
}

/** The UTC day of a time, as YYYY-MM-DD (for another day length, the ISO time its day starts at: the two order alike). */
export const utcDay = (at: number, dayMs = DAY_MS): string =>
  dayMs === DAY_MS ? new Date(at).toISOString().slice(0, 10) : new Date(Math.floor(at / dayMs) * dayMs).toISOString();

/**
 * When the current version expires and by which rule: the earliest of the
 * rules with Expiration Days or Date that apply to it (undefined when none).
 */
export function currentExpiry(
  rules: readonly LifecycleRule[],
  object: { key: string; size: number; tags?: LifecycleTag[]; lastModified: string },
  dayMs = DAY_MS,
): { at: number; ruleId: string } | undefined {
  let best: { at: number; ruleId: string } | undefined;
  for (const rule of rules) {
    const exp = rule.expiration;
    if (!exp || (exp.days === undefined && exp.date === undefined)) continue;
    if (!ruleApplies(rule, object)) continue;
    const at = exp.days !== undefined ? afterDays(object.lastModified, exp.days, dayMs) : Date.parse(exp.date!);
    if (!best || at < best.at) best = { at, ruleId: rule.id };
  }
  return best;
}

/** When an incomplete multipart upload is aborted and by which rule (the earliest), if any rule applies. */
export function abortDate(
  rules: readonly LifecycleRule[],
  upload: { key: string; initiated: string },
  dayMs = DAY_MS,
): { at: number; ruleId: string } | undefined {
  let best: { at: number; ruleId: string } | undefined;
  for (const rule of rules) {
    if (rule.abortAfterDays === undefined || !ruleApplies(rule, { key: upload.key })) continue;
    const at = afterDays(upload.initiated, rule.abortAfterDays, dayMs);
    if (!best || at < best.at) best = { at, ruleId: rule.id };
  }
  return best;
}

/**
 * Whether a noncurrent version (the `index`-th newest, from 0, that became
 * noncurrent at `since`) is past a NoncurrentVersionExpiration rule that
 * applies to it: NewerNoncurrentVersions keeps that many newest ones.
 */
export function noncurrentExpired(
  rules: readonly LifecycleRule[],
  version: { key: string; size?: number; tags?: LifecycleTag[] },
  since: string,
  index: number,
  now: number,
  dayMs = DAY_MS,
): boolean {
  return rules.some((rule) => {
    const nc = rule.noncurrentExpiration;
    if (!nc || !ruleApplies(rule, version)) return false;
    return index >= (nc.newerNoncurrentVersions ?? 0) && now >= afterDays(since, nc.noncurrentDays, dayMs);
  });
}

/**
 * Whether a delete marker that is its key's only version (an expired
 * object delete marker) is due for removal: at once under a rule with
 * ExpiredObjectDeleteMarker, and under a rule that expires current
 * versions (Days or Date) once the marker is as old as the rule asks, its
 * days counted from the marker's creation. "If the lifecycle configuration
 * is set to delete current versions, or the ExpiredObjectDeleteMarker
 * action is explicitly set, Amazon S3 removes the expired object's delete
 * marker"
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ManagingDelMarkers.html);
 * "When you specify the Days tag, Amazon S3 automatically performs
 * ExpiredObjectDeleteMarker cleanup when the delete markers are old enough
 * to satisfy the age criteria"
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-configuration-examples.html#lifecycle-config-conceptual-ex7).
 * A rule with a tag or size filter does not apply to a marker, which has
 * neither.
 */
export function loneMarkerDue(
  rules: readonly LifecycleRule[],
  marker: { key: string; lastModified: string },
  now: number,
  dayMs = DAY_MS,
): boolean {
  return rules.some((rule) => {
    const exp = rule.expiration;
    if (!exp || !ruleApplies(rule, { key: marker.key })) return false;
    if (exp.expiredObjectDeleteMarker === true) return true;
    if (exp.days !== undefined) return now >= afterDays(marker.lastModified, exp.days, dayMs);
    return exp.date !== undefined && now >= Date.parse(exp.date);
  });
}

/**
 * A rule id as a header's quoted string: any character a header cannot
 * carry (controls, non-ASCII: an id is any XML text) percent-encoded, and
 * `"` and backslash escaped.
 */
export function quotedRuleId(id: string): string {
  return id.replace(/[^\x20-\x7e]|["\\%]/gu, (c) => (c === '"' || c === '\\' ? `\\${c}` : encodeURIComponent(c)));
}

/** S3's `x-amz-expiration` value: `expiry-date="<HTTP date>", rule-id="<id>"`. */
export function expirationHeader(expiry: { at: number; ruleId: string }): string {
  return `expiry-date="${new Date(expiry.at).toUTCString()}", rule-id="${quotedRuleId(expiry.ruleId)}"`;
}
