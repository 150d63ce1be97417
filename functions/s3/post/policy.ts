/**
 * The POST policy of a browser upload, as S3 documents it ("POST Policy",
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html):
 * a base64 JSON document with `expiration` (ISO 8601) and `conditions`, each
 * an exact match (`{"acl": "public-read"}` or `["eq", "$acl", "public-read"]`),
 * a prefix (`["starts-with", "$key", "user/"]`, an empty prefix allowing
 * anything) or the file's size (`["content-length-range", min, max]`). Field
 * names are case-insensitive, values are not. Every form field but
 * `x-amz-signature`, `file`, `policy` and `x-ignore-*` must be named by a
 * condition; a field a condition names must be present.
 *
 * The signature ("Calculating a Signature",
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-post-example.html):
 * the string to sign is the base64 policy itself, signed with the SigV4
 * signing key of `x-amz-credential`'s scope.
 */
import { S3Error, errors } from '../errors.js';
import { ALGORITHM, hmac, parseAmzDate, signaturesEqual, signingKey } from '../sigv4/canonical.js';
import { checkHeaderRegion, parseCredential } from '../sigv4/header.js';
import type { StorageKeyStore } from '../../core/data/storage-keys.js';
import type { Authenticated } from '../auth.js';

export type PolicyCondition =
  { kind: 'eq' | 'starts-with'; field: string; value: string; text: string } | { kind: 'content-length-range'; min: number; max: number };

export interface PostPolicy {
  expiration: Date;
  conditions: PolicyCondition[];
}

/** At most this many conditions: a policy is checked against every field, so its size bounds the work. */
const MAX_CONDITIONS = 100;

const invalidPolicy = (why: string) => new S3Error('InvalidPolicyDocument', 400, `Invalid Policy: ${why}`);

export const policyFailed = (why: string) => new S3Error('AccessDenied', 403, `Invalid according to Policy: ${why}`);

/** Fields the policy need not name (the doc's list; AWSAccessKeyId and signature are SigV2's, refused before). */
const UNCONDITIONED = new Set(['x-amz-signature', 'file', 'policy']);

export function parsePostPolicy(base64: string): PostPolicy {
  let doc: unknown;
  try {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64.trim())) throw new Error('not base64');
    doc = JSON.parse(Buffer.from(base64.trim(), 'base64').toString('utf8'));
  } catch {
    throw invalidPolicy('Invalid JSON.');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw invalidPolicy('Invalid JSON.');
  const { expiration, conditions } = doc as Record<string, unknown>;
  // The names are case-sensitive: "EXPIRATION" is not "expiration" (ceph's s3-tests check it).
  if (typeof expiration !== 'string') throw invalidPolicy('Policy missing expiration.');
  const when = new Date(expiration);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(expiration) || Number.isNaN(when.getTime())) {
    throw invalidPolicy(`Invalid 'expiration' value: '${expiration}'`);
  }
  if (!Array.isArray(conditions)) throw invalidPolicy('Policy missing conditions.');
  if (conditions.length > MAX_CONDITIONS) throw invalidPolicy(`More than ${MAX_CONDITIONS} conditions.`);
  return { expiration: when, conditions: conditions.map(parseCondition) };
}

function parseCondition(c: unknown): PolicyCondition {
  const text = JSON.stringify(c);
  if (Array.isArray(c)) {
    const [op, a, b] = c as unknown[];
    if (typeof op !== 'string' || c.length !== 3) throw invalidPolicy(`Invalid condition: ${text}`);
    const kind = op.toLowerCase();
    if (kind === 'content-length-range') {
      const min = Number(a);
      const max = Number(b);
      if (!isSize(a) || !isSize(b) || min > max) throw invalidPolicy(`Invalid content-length-range: ${text}`);
      return { kind, min, max };
    }
    if (kind !== 'eq' && kind !== 'starts-with') throw invalidPolicy(`Invalid condition type: ${text}`);
    if (typeof a !== 'string' || !a.startsWith('$') || typeof b !== 'string') throw invalidPolicy(`Invalid condition: ${text}`);
    return { kind, field: a.slice(1).toLowerCase(), value: b, text };
  }
  if (typeof c === 'object' && c !== null) {
    const entries = Object.entries(c);
    if (entries.length !== 1 || typeof entries[0]![1] !== 'string') throw invalidPolicy(`Invalid condition: ${text}`);
    return {
      kind: 'eq',
      field: entries[0]![0].toLowerCase(),
      value: entries[0]![1],
      text: JSON.stringify(['eq', `$${entries[0]![0]}`, entries[0]![1]]),
    };
  }
  throw invalidPolicy(`Invalid condition: ${text}`);
}

/** A whole number of bytes, as a JSON number or a numeric string. */
function isSize(v: unknown): boolean {
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

/**
 * Checks the form against the policy: expiry, every condition, every field
 * named. `fields` holds the form fields (key with `${filename}` already
 * replaced) and `bucket`, which the request's address gives. Returns the
 * content-length-range, if the policy sets one.
 */
export function checkPostPolicy(policy: PostPolicy, fields: Map<string, string>, now: Date): { min: number; max: number } | undefined {
  if (now.getTime() > policy.expiration.getTime()) throw policyFailed('Policy expired.');
  let range: { min: number; max: number } | undefined;
  const named = new Set<string>();
  for (const c of policy.conditions) {
    if (c.kind === 'content-length-range') {
      range = { min: c.min, max: c.max };
      continue;
    }
    named.add(c.field);
    const value = fields.get(c.field);
    if (value === undefined) throw policyFailed(`Policy Condition failed: ${c.text}`);
    if (c.kind === 'eq' ? value !== c.value : !value.startsWith(c.value)) throw policyFailed(`Policy Condition failed: ${c.text}`);
  }
  for (const name of fields.keys()) {
    if (name === 'bucket' || UNCONDITIONED.has(name) || name.startsWith('x-ignore-') || named.has(name)) continue;
    throw policyFailed(`Extra input fields: ${name}`);
  }
  return range;
}

const missingField = (name: string) =>
  new S3Error(
    'InvalidArgument',
    400,
    `Bucket POST must contain a field named '${name}'.  If it is specified, please check the order of the fields.`,
    {
      ArgumentName: name,
      ArgumentValue: '',
    },
  );

/**
 * Who is uploading: the key pair whose signature over the policy verifies,
 * or nobody, when the form has no policy (an anonymous upload, which the
 * bucket's policy or ACL then decides).
 */
export async function authenticatePost(
  fields: Map<string, string>,
  storageKeys: StorageKeyStore,
  now: Date,
  region: string,
): Promise<{ auth: Authenticated; policy?: PostPolicy }> {
  if (fields.has('awsaccesskeyid') || fields.has('signature')) {
    throw new S3Error('InvalidRequest', 400, 'Signature Version 2 is not supported; use AWS4-HMAC-SHA256 (Signature Version 4).');
  }
  const policyText = fields.get('policy');
  if (policyText === undefined) {
    for (const name of ['x-amz-signature', 'x-amz-credential']) {
      if (fields.has(name)) throw missingField('policy');
    }
    return { auth: { principal: { kind: 'anonymous' } } };
  }
  for (const name of ['x-amz-algorithm', 'x-amz-credential', 'x-amz-date', 'x-amz-signature']) {
    if (!fields.has(name)) throw missingField(name);
  }
  if (fields.get('x-amz-algorithm') !== ALGORITHM) {
    throw errors.invalidArgument('Only AWS4-HMAC-SHA256 is supported.', 'x-amz-algorithm', fields.get('x-amz-algorithm'));
  }
  const credential = parseCredential(fields.get('x-amz-credential')!);
  checkHeaderRegion(credential, region);
  const amzDate = fields.get('x-amz-date')!;
  const date = parseAmzDate(amzDate);
  if (!date || !amzDate.startsWith(credential.date)) {
    throw errors.invalidArgument("X-Amz-Date must be in the ISO8601 Long Format and on the credential's date.", 'x-amz-date', amzDate);
  }
  const key = await storageKeys.get(credential.accessKeyId);
  if (!key) throw errors.invalidAccessKeyId(credential.accessKeyId);
  const expected = hmac(signingKey(key.secretAccessKey, credential.date, credential.region, 's3'), policyText).toString('hex');
  if (!signaturesEqual(expected, fields.get('x-amz-signature')!.toLowerCase())) throw errors.signatureDoesNotMatch();
  const policy = parsePostPolicy(policyText);
  if (now.getTime() > policy.expiration.getTime()) throw policyFailed('Policy expired.');
  return {
    auth: { principal: { kind: 'account', accountId: key.accountId, accessKeyId: credential.accessKeyId } },
    policy,
  };
}
