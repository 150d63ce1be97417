/**
 * PutBucketLifecycleConfiguration / GetBucketLifecycleConfiguration /
 * DeleteBucketLifecycle (`?lifecycle`), validated as S3 validates them
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html,
 * API_LifecycleRule.html, API_LifecycleRuleFilter.html,
 * API_LifecycleExpiration.html, API_NoncurrentVersionExpiration.html;
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/intro-lifecycle-rules.html):
 * up to 1,000 rules; an ID of at most 255 characters, unique; a rule has a
 * `Filter` (one of Prefix, Tag, ObjectSizeGreaterThan, ObjectSizeLessThan,
 * And) or the deprecated rule-level `Prefix`, not both; Status `Enabled` or
 * `Disabled`; at least one action. What S3's schema refuses is
 * `MalformedXML`, a value out of range `InvalidArgument`, actions that do
 * not go together `InvalidRequest`. Cairn has one storage class, so a
 * well-formed `Transition` or `NoncurrentVersionTransition` is
 * `NotImplemented`, named (a malformed one is S3's 400).
 * The rules are run by core/storage/lifecycle.ts.
 */
import { randomUUID } from 'node:crypto';
import type { BucketLifecycle, LifecycleFilter, LifecycleRule, LifecycleTag } from '../core/data/lifecycle.js';
import type { Bucket } from '../core/data/buckets.js';
import type { ObjectRecord } from '../core/data/objects.js';
import { abortDate, criteriaOf, currentExpiry, expirationHeader, needsObject, quotedRuleId } from '../core/storage/lifecycle-rules.js';
import type { S3Context } from './context.js';
import { errors, S3Error } from './errors.js';
import { checkedTags, MAX_BUCKET_TAGS } from './tagging.js';
import { xmlResponse, type XmlNode } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';

export const MAX_LIFECYCLE_RULES = 1000;
const MAX_ID = 255;
/**
 * Cairn's bound on the document (S3 states none but the rule count): 1,000
 * plain rules take about 150 KB, and the rules live on the bucket's item,
 * which DynamoDB keeps under 400 KB with the bucket's other settings.
 */
export const MAX_LIFECYCLE_BODY = 256 * 1024;
/** NewerNoncurrentVersions: "You can specify up to 100 noncurrent versions to retain" (API_NoncurrentVersionExpiration.html). */
const MAX_NEWER_NONCURRENT = 100;
/** `x-amz-transition-default-minimum-object-size`'s values; S3's default since September 2024 is the first. */
const MINIMUM_SIZES = ['all_storage_classes_128K', 'varies_by_storage_class'];
const MIN_SIZE_HEADER = 'x-amz-transition-default-minimum-object-size';
const DAY_MS = 86_400_000;
/** The last time a JavaScript Date holds: Days up to 2^31 - 1 reach past it, and such a date is not announced. */
const LAST_DATE = 8.64e15;

type Node = Record<string, unknown>;

/** The element's children, none but `allowed` (whitespace between them is fine); `''` (an empty element) is none. */
function element(value: unknown, allowed: readonly string[]): Node {
  if (value === '') return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw errors.malformedXml();
  for (const [name, child] of Object.entries(value)) {
    if (name === '#text' ? typeof child === 'string' && child.trim() !== '' : !allowed.includes(name)) throw errors.malformedXml();
  }
  return value as Node;
}

function text(node: Node, name: string): string | undefined {
  const value = node[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw errors.malformedXml();
  return value;
}

/** An xsd:int or long as S3's schema has it: digits (a sign is refused as not an integer S3 takes). */
function integer(node: Node, name: string, max = 2 ** 31 - 1): number | undefined {
  const raw = text(node, name);
  if (raw === undefined) return undefined;
  const trimmed = raw.trim();
  if (!/^-?\d{1,16}$/.test(trimmed) || Number(trimmed) > max) throw errors.malformedXml();
  return Number(trimmed);
}

function positive(node: Node, name: string, action: string): number | undefined {
  const value = integer(node, name);
  if (value !== undefined && value <= 0)
    throw errors.invalidArgument(`'${name}' for ${action} action must be a positive integer`, name, String(value));
  return value;
}

function tagOf(raw: unknown): LifecycleTag {
  const node = element(raw, ['Key', 'Value']);
  const key = text(node, 'Key');
  const value = text(node, 'Value');
  if (key === undefined || value === undefined) throw errors.malformedXml();
  return { key, value };
}

function size(node: Node, name: string): number | undefined {
  return integer(node, name, Number.MAX_SAFE_INTEGER);
}

function checkSizes(gt: number | undefined, lt: number | undefined): void {
  if (gt !== undefined && lt !== undefined && gt >= lt) {
    throw errors.invalidRequest('ObjectSizeGreaterThan must be less than ObjectSizeLessThan');
  }
}

function filterOf(raw: unknown): LifecycleFilter {
  const node = element(raw, ['Prefix', 'Tag', 'And', 'ObjectSizeGreaterThan', 'ObjectSizeLessThan']);
  const present = Object.keys(node).filter((k) => k !== '#text');
  // "The Filter is used to identify objects that a Lifecycle Rule applies to. A Filter can have exactly one of
  // Prefix, Tag, ObjectSizeGreaterThan, ObjectSizeLessThan, or And specified."
  if (present.length > 1) throw errors.malformedXml();
  const filter: LifecycleFilter = {};
  const prefix = text(node, 'Prefix');
  if (prefix !== undefined) filter.prefix = prefix;
  if (node.Tag !== undefined) {
    const tags = node.Tag as unknown[];
    if (tags.length !== 1) throw errors.malformedXml();
    filter.tag = checkedTags([tagOf(tags[0])], 1)[0]!;
  }
  const gt = size(node, 'ObjectSizeGreaterThan');
  const lt = size(node, 'ObjectSizeLessThan');
  if (gt !== undefined) filter.sizeGreaterThan = gt;
  if (lt !== undefined) filter.sizeLessThan = lt;
  if (node.And !== undefined) {
    const and = element(node.And, ['Prefix', 'Tag', 'ObjectSizeGreaterThan', 'ObjectSizeLessThan']);
    const andPrefix = text(and, 'Prefix');
    const tags = checkedTags(((and.Tag as unknown[] | undefined) ?? []).map(tagOf), MAX_BUCKET_TAGS);
    const andGt = size(and, 'ObjectSizeGreaterThan');
    const andLt = size(and, 'ObjectSizeLessThan');
    checkSizes(andGt, andLt);
    filter.and = {
      ...(andPrefix !== undefined ? { prefix: andPrefix } : {}),
      tags,
      ...(andGt !== undefined ? { sizeGreaterThan: andGt } : {}),
      ...(andLt !== undefined ? { sizeLessThan: andLt } : {}),
    };
  }
  return filter;
}

/** `Date`: ISO 8601, at midnight UTC ("The date value must conform to the ISO 8601 format. The time is always midnight UTC."). */
function dateOf(raw: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:?\d{2})?)?$/.exec(raw.trim());
  const at = match ? Date.parse(`${match[1]}T${match[2] ?? '00:00'}${match[3] ?? 'Z'}`.replace(/\.(\d{3})\d+/, '.$1')) : NaN;
  if (!Number.isFinite(at)) throw errors.invalidArgument("'Date' must be a valid ISO 8601 date", 'Date', raw);
  if (at % DAY_MS !== 0) throw errors.invalidArgument("'Date' must be at midnight GMT", 'Date', raw);
  return new Date(at).toISOString();
}

const RULE_ELEMENTS = [
  'ID',
  'Prefix',
  'Filter',
  'Status',
  'Expiration',
  'NoncurrentVersionExpiration',
  'AbortIncompleteMultipartUpload',
  'Transition',
  'NoncurrentVersionTransition',
];

/** The storage classes a transition may name (API_Transition.html, API_NoncurrentVersionTransition.html: StorageClass). */
const TRANSITION_CLASSES = ['GLACIER', 'STANDARD_IA', 'ONEZONE_IA', 'INTELLIGENT_TIERING', 'DEEP_ARCHIVE', 'GLACIER_IR'];

/**
 * Checks the rule's Transition and NoncurrentVersionTransition elements as
 * S3 checks them (API_Transition.html: Days, 0 or more, or a Date at
 * midnight UTC, one of the two, and a StorageClass;
 * API_NoncurrentVersionTransition.html: NoncurrentDays, StorageClass,
 * NewerNoncurrentVersions), so a malformed one is S3's 400 before Cairn,
 * which has one storage class, answers a well-formed one NotImplemented.
 * Returns the first one's name, if any.
 */
function transitionOf(node: Node): string | undefined {
  let found: string | undefined;
  for (const name of ['Transition', 'NoncurrentVersionTransition'] as const) {
    for (const raw of (node[name] as unknown[] | undefined) ?? []) {
      found ??= name;
      const current = name === 'Transition';
      const t = element(raw, current ? ['Days', 'Date', 'StorageClass'] : ['NoncurrentDays', 'NewerNoncurrentVersions', 'StorageClass']);
      const storageClass = text(t, 'StorageClass');
      if (storageClass === undefined || !TRANSITION_CLASSES.includes(storageClass)) throw errors.malformedXml();
      const daysName = current ? 'Days' : 'NoncurrentDays';
      const days = integer(t, daysName);
      if (days !== undefined && days < 0) {
        throw errors.invalidArgument(`'${daysName}' in the ${name} action must be nonnegative`, daysName, String(days));
      }
      const date = current ? text(t, 'Date') : undefined;
      if ((days === undefined) === (date === undefined)) throw errors.malformedXml();
      if (date !== undefined) dateOf(date);
      const newer = current ? undefined : integer(t, 'NewerNoncurrentVersions');
      if (newer !== undefined && (newer < 1 || newer > MAX_NEWER_NONCURRENT)) {
        throw errors.invalidArgument(
          `'NewerNoncurrentVersions' for ${name} action must be a positive integer up to ${MAX_NEWER_NONCURRENT}`,
          'NewerNoncurrentVersions',
          String(newer),
        );
      }
    }
  }
  return found;
}

function ruleOf(raw: unknown): LifecycleRule {
  const node = element(raw, RULE_ELEMENTS);
  const transition = transitionOf(node);
  const id = text(node, 'ID');
  if (id !== undefined && [...id].length > MAX_ID) {
    throw errors.invalidArgument(`ID length should not exceed allowed limit of ${MAX_ID}`, 'ID', id);
  }
  const status = text(node, 'Status');
  if (status !== 'Enabled' && status !== 'Disabled') throw errors.malformedXml();
  const prefix = text(node, 'Prefix');
  if ((prefix === undefined) === (node.Filter === undefined)) throw errors.malformedXml();
  const rule: LifecycleRule = { id: id || Buffer.from(randomUUID()).toString('base64'), status };
  if (prefix !== undefined) rule.prefix = prefix;
  else rule.filter = filterOf(node.Filter);
  const criteria = criteriaOf(rule);
  if (criteria.sizeGreaterThan !== undefined || criteria.sizeLessThan !== undefined)
    checkSizes(criteria.sizeGreaterThan, criteria.sizeLessThan);

  if (node.Expiration !== undefined) {
    const exp = element(node.Expiration, ['Days', 'Date', 'ExpiredObjectDeleteMarker']);
    const days = positive(exp, 'Days', 'Expiration');
    const date = text(exp, 'Date');
    const marker = text(exp, 'ExpiredObjectDeleteMarker');
    if (marker !== undefined && marker !== 'true' && marker !== 'false') throw errors.malformedXml();
    // "ExpiredObjectDeleteMarker ... cannot be specified with Days or Date" (API_LifecycleExpiration.html); one of the three.
    if ([days, date, marker].filter((v) => v !== undefined).length !== 1) throw errors.malformedXml();
    if (marker === 'true' && needsObject(criteria)) {
      throw errors.invalidRequest('ExpiredObjectDeleteMarker cannot be specified with a tag or object size filter');
    }
    rule.expiration =
      days !== undefined ? { days } : date !== undefined ? { date: dateOf(date) } : { expiredObjectDeleteMarker: marker === 'true' };
  }
  if (node.NoncurrentVersionExpiration !== undefined) {
    const nc = element(node.NoncurrentVersionExpiration, ['NoncurrentDays', 'NewerNoncurrentVersions']);
    const noncurrentDays = positive(nc, 'NoncurrentDays', 'NoncurrentVersionExpiration');
    if (noncurrentDays === undefined) throw errors.malformedXml();
    const newer = integer(nc, 'NewerNoncurrentVersions');
    if (newer !== undefined && (newer < 1 || newer > MAX_NEWER_NONCURRENT)) {
      throw errors.invalidArgument(
        `'NewerNoncurrentVersions' for NoncurrentVersionExpiration action must be a positive integer up to ${MAX_NEWER_NONCURRENT}`,
        'NewerNoncurrentVersions',
        String(newer),
      );
    }
    rule.noncurrentExpiration = { noncurrentDays, ...(newer !== undefined ? { newerNoncurrentVersions: newer } : {}) };
  }
  if (node.AbortIncompleteMultipartUpload !== undefined) {
    const abort = element(node.AbortIncompleteMultipartUpload, ['DaysAfterInitiation']);
    const days = positive(abort, 'DaysAfterInitiation', 'AbortIncompleteMultipartUpload');
    if (days === undefined) throw errors.malformedXml();
    // An upload has no tags or size yet: S3 refuses such a filter on this action.
    if (needsObject(criteria)) {
      throw errors.invalidRequest('AbortIncompleteMultipartUpload cannot be specified with a tag or object size filter');
    }
    rule.abortAfterDays = days;
  }
  // Checked whole first: what S3 would refuse is refused as S3 refuses it.
  if (transition !== undefined) throw errors.notImplemented(`${transition} (Cairn has one storage class, STANDARD)`);
  if (!rule.expiration && !rule.noncurrentExpiration && rule.abortAfterDays === undefined) {
    throw errors.invalidRequest('At least one action needs to be specified in a rule');
  }
  return rule;
}

/** A LifecycleConfiguration document's rules, validated as S3 validates them. */
export function parseLifecycleConfiguration(body: Buffer): LifecycleRule[] {
  const doc = parseXmlBody(body, 'LifecycleConfiguration', ['Rule', 'Tag', 'Transition', 'NoncurrentVersionTransition']);
  const root = element(doc, ['Rule']);
  const raw = (root.Rule as unknown[] | undefined) ?? [];
  if (!raw.length) throw errors.malformedXml();
  if (raw.length > MAX_LIFECYCLE_RULES) {
    throw errors.invalidRequest(`Lifecycle configuration cannot have more than ${MAX_LIFECYCLE_RULES} rules`);
  }
  const rules = raw.map(ruleOf);
  const seen = new Set<string>();
  for (const rule of rules) {
    if (seen.has(rule.id)) throw errors.invalidArgument('Rule ID must be unique. Found same ID for more than one rule', 'ID', rule.id);
    seen.add(rule.id);
  }
  return rules;
}

const tagNode = (t: LifecycleTag) => ({ Key: t.key, Value: t.value });

function filterNode(f: LifecycleFilter): XmlNode {
  if (f.and) {
    return {
      And: {
        Prefix: f.and.prefix,
        Tag: f.and.tags.map(tagNode),
        ObjectSizeGreaterThan: f.and.sizeGreaterThan,
        ObjectSizeLessThan: f.and.sizeLessThan,
      },
    };
  }
  return {
    Prefix: f.prefix,
    Tag: f.tag && tagNode(f.tag),
    ObjectSizeGreaterThan: f.sizeGreaterThan,
    ObjectSizeLessThan: f.sizeLessThan,
  };
}

function ruleNode(rule: LifecycleRule): XmlNode {
  const exp = rule.expiration;
  return {
    Expiration: exp && {
      Days: exp.days,
      Date: exp.date,
      ExpiredObjectDeleteMarker: exp.expiredObjectDeleteMarker,
    },
    ID: rule.id,
    Filter: rule.filter && filterNode(rule.filter),
    Prefix: rule.prefix,
    Status: rule.status,
    NoncurrentVersionExpiration: rule.noncurrentExpiration && {
      NoncurrentDays: rule.noncurrentExpiration.noncurrentDays,
      NewerNoncurrentVersions: rule.noncurrentExpiration.newerNoncurrentVersions,
    },
    AbortIncompleteMultipartUpload: rule.abortAfterDays === undefined ? undefined : { DaysAfterInitiation: rule.abortAfterDays },
  };
}

function minimumSizeOf(ctx: S3Context): string {
  const asked = ctx.req.headers.get(MIN_SIZE_HEADER);
  if (asked === null) return MINIMUM_SIZES[0]!;
  if (!MINIMUM_SIZES.includes(asked)) throw errors.invalidArgument(`Invalid value for ${MIN_SIZE_HEADER}`, MIN_SIZE_HEADER, asked);
  return asked;
}

/**
 * PutBucketLifecycleConfiguration must carry an integrity check of its
 * body: Content-MD5 or a checksum (an `x-amz-checksum-*` header or one in
 * `x-amz-trailer`), which readSmallBody then verifies (BadDigest). S3's
 * model marks the operation `httpChecksum.requestChecksumRequired`, so
 * SDKs always send one; a request without is InvalidRequest "Missing
 * required header for this request: Content-MD5"
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html,
 * Content-MD5 and x-amz-sdk-checksum-algorithm; the message is S3's for a
 * missing Content-MD5, as ceph's s3-tests expect it).
 */
function requireIntegrityCheck(headers: Headers): void {
  if (headers.has('content-md5') || headers.has('x-amz-trailer')) return;
  for (const [name] of headers) if (name.startsWith('x-amz-checksum-') && name !== 'x-amz-checksum-type') return;
  throw errors.invalidRequest('Missing required header for this request: Content-MD5');
}

export async function putBucketLifecycle(ctx: S3Context): Promise<Response> {
  requireIntegrityCheck(ctx.req.headers);
  const minimumObjectSize = minimumSizeOf(ctx);
  const rules = parseLifecycleConfiguration(await readSmallBody(ctx, MAX_LIFECYCLE_BODY));
  const lifecycle: BucketLifecycle = { rules, minimumObjectSize };
  if (!(await ctx.services.buckets.setLifecycle(ctx.bucket!.name, lifecycle))) throw errors.noSuchBucket(ctx.bucket!.name);
  return new Response(null, { status: 200, headers: { [MIN_SIZE_HEADER]: minimumObjectSize } });
}

export async function getBucketLifecycle(ctx: S3Context): Promise<Response> {
  const lifecycle = ctx.bucket!.lifecycle;
  if (!lifecycle?.rules.length) {
    throw new S3Error('NoSuchLifecycleConfiguration', 404, 'The lifecycle configuration does not exist', { BucketName: ctx.bucket!.name });
  }
  return xmlResponse(
    'LifecycleConfiguration',
    { Rule: lifecycle.rules.map(ruleNode) },
    { headers: { [MIN_SIZE_HEADER]: lifecycle.minimumObjectSize } },
  );
}

export async function deleteBucketLifecycle(ctx: S3Context): Promise<Response> {
  if (!(await ctx.services.buckets.setLifecycle(ctx.bucket!.name, undefined))) throw errors.noSuchBucket(ctx.bucket!.name);
  return new Response(null, { status: 204 });
}

/*
 * The dates answered are in days whatever CAIRN_LIFECYCLE_DAY_SECONDS says,
 * as RGW's are with rgw_lc_debug_interval (ceph's s3-tests check the
 * announced date in days with the interval set); the day's length is the
 * expiry run's.
 */
/**
 * `x-amz-expiration` on PutObject, GetObject and HeadObject of a current
 * version, when an Expiration rule (Days or Date) applies to it, as S3
 * answers it ("expiry-date" and "rule-id": API_PutObject.html, API_HeadObject.html).
 */
export function expirationHeaders(
  bucket: Pick<Bucket, 'lifecycle'>,
  record: Pick<ObjectRecord, 'key' | 'size' | 'tags' | 'lastModified'>,
): Record<string, string> {
  const rules = bucket.lifecycle?.rules;
  if (!rules?.length) return {};
  const expiry = currentExpiry(rules, record);
  return expiry && expiry.at <= LAST_DATE ? { 'x-amz-expiration': expirationHeader(expiry) } : {};
}

/** `x-amz-abort-date` and `x-amz-abort-rule-id` on CreateMultipartUpload, when an AbortIncompleteMultipartUpload rule applies. */
export function abortHeaders(bucket: Pick<Bucket, 'lifecycle'>, upload: { key: string; initiated: string }): Record<string, string> {
  const rules = bucket.lifecycle?.rules;
  if (!rules?.length) return {};
  const due = abortDate(rules, upload);
  return due && due.at <= LAST_DATE
    ? { 'x-amz-abort-date': new Date(due.at).toUTCString(), 'x-amz-abort-rule-id': quotedRuleId(due.ruleId) }
    : {};
}
