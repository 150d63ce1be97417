/**
 * Bucket policies: S3's JSON access policy language, parsed strictly and
 * evaluated against one request's facts. Pure: no I/O, no S3 wire format
 * (functions/s3/bucket-policy.ts turns a PolicyError into MalformedPolicy).
 *
 * A policy is a stranger's JSON, so its work is bounded before anything
 * else: at most MAX_POLICY_BYTES (S3's 20 KB), nested at most MAX_DEPTH
 * deep (checked by a scan before JSON.parse), at most MAX_VALUES strings in
 * all. Parsing expands every Action pattern against the actions Cairn knows
 * (so an action check is a set lookup), checks every Resource against the
 * bucket the policy is for, and compiles every condition; evaluating is one
 * pass over the statements. Wildcards (`*`, `?`) are matched segment by
 * segment without backtracking into earlier segments, so a match costs at
 * most |pattern| x |text| character comparisons, never an exponential
 * blow-up (`a*a*a*...b`).
 *
 * Principals are Cairn's account ids: an account's id is also its S3
 * canonical user id (the Owner ID of GetBucketAcl), so `{"AWS": "<id>"}`,
 * `{"AWS": "arn:aws:iam::<id>:root"}` and `{"CanonicalUser": "<id>"}` all
 * name the account; `"*"` and `{"AWS": "*"}` name everyone, anonymous
 * callers included.
 */
import ipaddr from 'ipaddr.js';

/** S3's limit on a bucket policy's size. */
export const MAX_POLICY_BYTES = 20 * 1024;
/** Deepest nesting a valid policy needs: policy > Statement[] > {} > Condition > operator > key > [values] is 6. */
export const MAX_DEPTH = 8;
/** Every string a policy may hold in its Principal, Action, Resource and Condition values together. */
export const MAX_VALUES = 2_000;

export class PolicyError extends Error {
  override name = 'PolicyError';
}

/** The S3 actions Cairn has, as IAM names them (a policy may name only these, with wildcards). */
export const BUCKET_ACTIONS = [
  's3:ListBucket',
  's3:ListBucketVersions',
  's3:ListBucketMultipartUploads',
  's3:DeleteBucket',
  's3:GetBucketLocation',
  's3:GetBucketVersioning',
  's3:PutBucketVersioning',
  's3:GetBucketAcl',
  's3:PutBucketAcl',
  's3:GetBucketCORS',
  's3:PutBucketCORS',
  's3:GetBucketTagging',
  's3:PutBucketTagging',
  's3:GetBucketPolicy',
  's3:PutBucketPolicy',
  's3:DeleteBucketPolicy',
  's3:GetBucketPolicyStatus',
  's3:GetBucketPublicAccessBlock',
  's3:PutBucketPublicAccessBlock',
  's3:GetBucketOwnershipControls',
  's3:PutBucketOwnershipControls',
  's3:GetLifecycleConfiguration',
  's3:PutLifecycleConfiguration',
] as const;
export const OBJECT_ACTIONS = [
  's3:GetObject',
  's3:GetObjectAttributes',
  's3:PutObject',
  's3:DeleteObject',
  's3:GetObjectAcl',
  's3:PutObjectAcl',
  's3:GetObjectTagging',
  's3:PutObjectTagging',
  's3:DeleteObjectTagging',
  // What a request naming a versionId is instead of the action above it ("Amazon S3 condition key
  // examples" and "Actions, resources, and condition keys for Amazon S3" in the S3 and IAM docs).
  's3:GetObjectVersion',
  's3:DeleteObjectVersion',
  's3:GetObjectVersionAcl',
  's3:PutObjectVersionAcl',
  's3:GetObjectVersionTagging',
  's3:PutObjectVersionTagging',
  's3:DeleteObjectVersionTagging',
  's3:AbortMultipartUpload',
  's3:ListMultipartUploadParts',
] as const;
export type PolicyAction = (typeof BUCKET_ACTIONS)[number] | (typeof OBJECT_ACTIONS)[number];
const ALL_ACTIONS: readonly string[] = [...BUCKET_ACTIONS, ...OBJECT_ACTIONS];

/**
 * The condition keys Cairn fills in (lower case: IAM compares key names
 * case-insensitively, https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition.html
 * "Condition key names are not case-sensitive"). Which S3 actions carry
 * which key is S3's table ("Actions, resources, and condition keys for
 * Amazon S3" in the Service Authorization Reference,
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html);
 * the S3 door fills a key in only for the actions that carry it
 * (functions/s3/access.ts), so on another action it is absent, as in S3.
 */
export const CONDITION_KEYS = [
  'aws:sourceip',
  'aws:referer',
  'aws:securetransport',
  'aws:useragent',
  'aws:principalaccount',
  'aws:userid',
  'aws:principaltype',
  's3:prefix',
  's3:delimiter',
  's3:max-keys',
  's3:x-amz-acl',
  's3:x-amz-grant-read',
  's3:x-amz-grant-write',
  's3:x-amz-grant-read-acp',
  's3:x-amz-grant-write-acp',
  's3:x-amz-grant-full-control',
  's3:x-amz-copy-source',
  's3:x-amz-metadata-directive',
  's3:versionid',
  // Multivalued (ArrayOfString in S3's table): the request's tag keys.
  's3:requestobjecttagkeys',
] as const;

/**
 * Keys named by a tag key after the slash (`s3:ExistingObjectTag/<key>`, the
 * object's current tags; `s3:RequestObjectTag/<key>`, the tags a request
 * sets: https://docs.aws.amazon.com/AmazonS3/latest/userguide/tagging-and-policies.html).
 * The prefix is case-insensitive like every key name; the tag key after it
 * is kept as written, since S3's tag keys are case-sensitive
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-tagging.html).
 */
export const EXISTING_TAG_PREFIX = 's3:existingobjecttag/';
export const REQUEST_TAG_PREFIX = 's3:requestobjecttag/';
/** S3's longest tag key (object-tagging.html): a longer one could never match. */
const MAX_TAG_KEY = 128;

/** A fixed key, or a tag key (`s3:existingobjecttag/<Key>`, `s3:requestobjecttag/<Key>`). */
export type ConditionKey =
  (typeof CONDITION_KEYS)[number] | `${typeof EXISTING_TAG_PREFIX}${string}` | `${typeof REQUEST_TAG_PREFIX}${string}`;

/** A request's condition values: one string, or for a multivalued key a list (empty when the request has none). */
export type ConditionContext = Partial<Record<ConditionKey, string | readonly string[]>>;

/** An object's tags as s3:ExistingObjectTag/<key> values (the door decides which actions carry them). */
export function existingTagContext(tags: readonly { key: string; value: string }[]): ConditionContext {
  const out: ConditionContext = {};
  for (const t of tags) out[`${EXISTING_TAG_PREFIX}${t.key}`] = t.value;
  return out;
}

/** What one request is, as a policy sees it. */
export interface RequestFacts {
  /** The caller's account id; undefined for an anonymous caller. */
  account?: string;
  action: PolicyAction;
  /** `bucket` or `bucket/key`: the resource ARN after `arn:aws:s3:::`. */
  resource: string;
  /** The request's condition values; a key absent here is absent from the request. */
  context: ConditionContext;
}

export type Verdict = 'deny' | 'allow' | 'none';

type Base =
  | 'StringEquals'
  | 'StringNotEquals'
  | 'StringEqualsIgnoreCase'
  | 'StringNotEqualsIgnoreCase'
  | 'StringLike'
  | 'StringNotLike'
  | 'NumericEquals'
  | 'NumericNotEquals'
  | 'NumericLessThan'
  | 'NumericLessThanEquals'
  | 'NumericGreaterThan'
  | 'NumericGreaterThanEquals'
  | 'Bool'
  | 'IpAddress'
  | 'NotIpAddress'
  | 'Null';
const BASES: readonly Base[] = [
  'StringEquals',
  'StringNotEquals',
  'StringEqualsIgnoreCase',
  'StringNotEqualsIgnoreCase',
  'StringLike',
  'StringNotLike',
  'NumericEquals',
  'NumericNotEquals',
  'NumericLessThan',
  'NumericLessThanEquals',
  'NumericGreaterThan',
  'NumericGreaterThanEquals',
  'Bool',
  'IpAddress',
  'NotIpAddress',
  'Null',
];
/** Operators that hold when the key matches none of the values (and so hold when the key is absent). */
const NEGATED: ReadonlySet<Base> = new Set([
  'StringNotEquals',
  'StringNotEqualsIgnoreCase',
  'StringNotLike',
  'NumericNotEquals',
  'NotIpAddress',
]);

interface Condition {
  base: Base;
  ifExists: boolean;
  set?: 'any' | 'all';
  key: ConditionKey;
  values: string[];
  /** For IpAddress/NotIpAddress: the parsed ranges. */
  ranges?: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
}

interface Principals {
  everyone: boolean;
  accounts: ReadonlySet<string>;
}

export interface PolicyStatement {
  sid?: string;
  effect: 'Allow' | 'Deny';
  principal: Principals;
  /** NotPrincipal (Deny only): the statement applies to everyone but these. */
  notPrincipal: boolean;
  actions: ReadonlySet<string>;
  notAction: boolean;
  resources: string[];
  notResource: boolean;
  conditions: Condition[];
}

export interface BucketPolicy {
  version: string;
  id?: string;
  statements: PolicyStatement[];
  /** Whether some condition reads an object's current tags (so a request must load them first) or a request's tags. */
  uses: { existingTags: boolean; requestTags: boolean };
}

function fail(message: string): never {
  throw new PolicyError(message);
}

/** Nesting depth of a JSON text, outside strings, found in one pass before it is parsed. */
function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) max = Math.max(max, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The policy text's statements, checked against the bucket it is for. Throws PolicyError with S3's message. */
export function parseBucketPolicy(text: string, bucket: string): BucketPolicy {
  if (Buffer.byteLength(text) > MAX_POLICY_BYTES) fail('Policies must be less than 20 KB');
  if (jsonDepth(text) > MAX_DEPTH) fail('Policies must not be nested more than 8 levels deep');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    fail('This policy contains invalid Json');
  }
  if (!isObject(doc)) fail('This policy contains invalid Json');
  const root = doc as Record<string, unknown>;
  for (const field of Object.keys(root)) {
    if (field !== 'Version' && field !== 'Id' && field !== 'Statement') fail(`Policy has an invalid field: ${field}`);
  }
  const version = root.Version ?? '2008-10-17';
  if (version !== '2012-10-17' && version !== '2008-10-17') fail('The policy must contain a valid version string');
  if (root.Id !== undefined && typeof root.Id !== 'string') fail('Policy Id must be a string');
  const raw = root.Statement;
  if (raw === undefined) fail('Missing required field Statement');
  const list = Array.isArray(raw) ? raw : [raw];
  if (list.length === 0) fail('Could not parse the policy: Statement is empty!');
  const budget = { left: MAX_VALUES };
  const sids = new Set<string>();
  const statements = list.map((s) => parseStatement(s, bucket, budget, sids));
  const keys = statements.flatMap((s) => s.conditions.map((c) => c.key));
  const uses = {
    existingTags: keys.some((k) => k.startsWith(EXISTING_TAG_PREFIX)),
    requestTags: keys.some((k) => k.startsWith(REQUEST_TAG_PREFIX) || k === 's3:requestobjecttagkeys'),
  };
  return { version: version as string, ...(typeof root.Id === 'string' ? { id: root.Id } : {}), statements, uses };
}

/** A field that is one string or a non-empty array of strings. */
function strings(value: unknown, field: string, budget: { left: number }): string[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0) fail(`${field} must not be empty`);
  budget.left -= list.length;
  if (budget.left < 0) fail('Policy has too many values');
  for (const v of list) if (typeof v !== 'string') fail(`${field} must be a string or an array of strings`);
  return list as string[];
}

function parseStatement(raw: unknown, bucket: string, budget: { left: number }, sids: Set<string>): PolicyStatement {
  if (!isObject(raw)) fail('Statement must be an object');
  const s = raw as Record<string, unknown>;
  const allowed = ['Sid', 'Effect', 'Principal', 'NotPrincipal', 'Action', 'NotAction', 'Resource', 'NotResource', 'Condition'];
  for (const field of Object.keys(s)) if (!allowed.includes(field)) fail(`Policy has an invalid field: ${field}`);
  if (s.Sid !== undefined) {
    if (typeof s.Sid !== 'string') fail('Statement IDs (SID) must be strings');
    if (sids.has(s.Sid as string)) fail('Statement IDs (SID) in a single policy must be unique');
    sids.add(s.Sid as string);
  }
  if (s.Effect !== 'Allow' && s.Effect !== 'Deny') fail('Invalid effect: ' + JSON.stringify(s.Effect ?? null).slice(0, 64));
  const effect = s.Effect as 'Allow' | 'Deny';

  const hasPrincipal = s.Principal !== undefined;
  if (hasPrincipal === (s.NotPrincipal !== undefined))
    fail(hasPrincipal ? 'Policy has both Principal and NotPrincipal' : 'Missing required field Principal');
  if (!hasPrincipal && effect === 'Allow') fail('NotPrincipal is supported with "Effect": "Deny" only');
  const principal = parsePrincipal(hasPrincipal ? s.Principal : s.NotPrincipal, budget);

  if ((s.Action === undefined) === (s.NotAction === undefined))
    fail(s.Action === undefined ? 'Missing required field Action' : 'Policy has both Action and NotAction');
  const notAction = s.Action === undefined;
  const actions = new Set<string>();
  for (const pattern of strings(notAction ? s.NotAction : s.Action, 'Action', budget)) {
    const matched = ALL_ACTIONS.filter((a) => globMatch(pattern, a, true));
    if (matched.length === 0) fail('Policy has invalid action');
    for (const a of matched) actions.add(a);
  }

  if ((s.Resource === undefined) === (s.NotResource === undefined))
    fail(s.Resource === undefined ? 'Missing required field Resource' : 'Policy has both Resource and NotResource');
  const notResource = s.Resource === undefined;
  const resources = strings(notResource ? s.NotResource : s.Resource, 'Resource', budget).map((r) => parseResource(r, bucket));

  const conditions = s.Condition === undefined ? [] : parseConditions(s.Condition, budget);
  return {
    ...(typeof s.Sid === 'string' ? { sid: s.Sid } : {}),
    effect,
    principal,
    notPrincipal: !hasPrincipal,
    actions,
    notAction,
    resources,
    notResource,
    conditions,
  };
}

/** An account id as Cairn makes them, or the ARN of an account's root. */
const ACCOUNT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const ROOT_ARN = /^arn:aws:iam::([^:]+):root$/;

function parsePrincipal(raw: unknown, budget: { left: number }): Principals {
  if (raw === '*') return { everyone: true, accounts: new Set() };
  if (!isObject(raw)) fail('Invalid principal in policy');
  const accounts = new Set<string>();
  let everyone = false;
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length === 0) fail('Invalid principal in policy');
  for (const [kind, value] of entries) {
    if (kind !== 'AWS' && kind !== 'CanonicalUser') fail('Invalid principal in policy');
    for (const id of strings(value, 'Principal', budget)) {
      if (id === '*' && kind === 'AWS') {
        everyone = true;
        continue;
      }
      const account = kind === 'AWS' ? (ROOT_ARN.exec(id)?.[1] ?? id) : id;
      if (!ACCOUNT_ID.test(account)) fail('Invalid principal in policy');
      accounts.add(account);
    }
  }
  return { everyone, accounts };
}

const ARN_PREFIX = 'arn:aws:s3:::';

/** A Resource pattern (after the ARN prefix), which must be able to name this bucket or something in it. */
function parseResource(raw: string, bucket: string): string {
  if (raw === '*') return '*';
  if (!raw.startsWith(ARN_PREFIX)) fail('Policy has invalid resource');
  const pattern = raw.slice(ARN_PREFIX.length);
  const slash = pattern.indexOf('/');
  const bucketPart = slash < 0 ? pattern : pattern.slice(0, slash);
  if (pattern === '' || !globMatch(bucketPart, bucket)) fail('Policy has invalid resource');
  return pattern;
}

function parseConditions(raw: unknown, budget: { left: number }): Condition[] {
  if (!isObject(raw)) fail('Condition must be an object');
  const out: Condition[] = [];
  for (const [operator, block] of Object.entries(raw as Record<string, unknown>)) {
    let name = operator;
    let set: Condition['set'];
    if (name.startsWith('ForAnyValue:')) [set, name] = ['any', name.slice('ForAnyValue:'.length)];
    else if (name.startsWith('ForAllValues:')) [set, name] = ['all', name.slice('ForAllValues:'.length)];
    const ifExists = name.endsWith('IfExists') && name !== 'IfExists';
    if (ifExists) name = name.slice(0, -'IfExists'.length);
    const base = BASES.find((b) => b === name);
    if (!base || (ifExists && base === 'Null')) fail(`Invalid Condition type : ${operator}`);
    if (!isObject(block)) fail(`Condition ${operator} must be an object`);
    for (const [rawKey, rawValues] of Object.entries(block as Record<string, unknown>)) {
      const key = conditionKey(rawKey);
      if (key === undefined) fail(`Policy has an invalid condition key: ${rawKey.slice(0, 128)}`);
      const list = Array.isArray(rawValues) ? rawValues : [rawValues];
      if (list.length === 0) fail(`Condition ${operator} has no values for ${rawKey}`);
      budget.left -= list.length;
      if (budget.left < 0) fail('Policy has too many values');
      const values = list.map((v) => {
        if (typeof v === 'string') return v;
        if (typeof v === 'number' || typeof v === 'boolean') return String(v);
        return fail(`Condition values must be strings, numbers or booleans (${operator} ${rawKey})`);
      });
      const condition: Condition = { base: base!, ifExists, ...(set ? { set } : {}), key, values };
      checkValues(condition, operator, rawKey);
      out.push(condition);
    }
  }
  return out;
}

/** The key as conditions compare it (see CONDITION_KEYS and EXISTING_TAG_PREFIX), or undefined when Cairn has no such key. */
function conditionKey(raw: string): ConditionKey | undefined {
  const lower = raw.toLowerCase();
  for (const prefix of [EXISTING_TAG_PREFIX, REQUEST_TAG_PREFIX] as const) {
    if (!lower.startsWith(prefix)) continue;
    const tag = raw.slice(prefix.length);
    return tag.length > 0 && [...tag].length <= MAX_TAG_KEY ? `${prefix}${tag}` : undefined;
  }
  return (CONDITION_KEYS as readonly string[]).includes(lower) ? (lower as ConditionKey) : undefined;
}

function checkValues(c: Condition, operator: string, key: string): void {
  const bad = () => fail(`Invalid value for ${operator} ${key}`);
  switch (c.base) {
    case 'IpAddress':
    case 'NotIpAddress':
      if (c.key !== 'aws:sourceip') fail(`${operator} takes only aws:SourceIp, not ${key}`);
      c.ranges = c.values.map((v) => parseRange(v) ?? bad());
      return;
    case 'Bool':
    case 'Null':
      for (const v of c.values) if (v !== 'true' && v !== 'false') bad();
      return;
    default:
      if (c.base.startsWith('Numeric')) for (const v of c.values) if (!/^-?\d+(\.\d+)?$/.test(v)) bad();
      if (c.key === 'aws:sourceip') fail(`aws:SourceIp takes IpAddress or NotIpAddress, not ${operator}`);
  }
}

function parseRange(v: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | undefined {
  try {
    if (v.includes('/')) return ipaddr.parseCIDR(v);
    const address = ipaddr.parse(v);
    return [address, address.kind() === 'ipv4' ? 32 : 128];
  } catch {
    return undefined;
  }
}

/**
 * Whether `text` matches `pattern`, where `*` matches any run of characters
 * and `?` any one. The pattern is cut at its stars; each piece is found at
 * its leftmost place after the previous one (leftmost is never worse), so
 * nothing is tried twice: at most |pattern| x |text| comparisons.
 */
export function globMatch(pattern: string, text: string, ignoreCase = false): boolean {
  if (ignoreCase) {
    pattern = pattern.toLowerCase();
    text = text.toLowerCase();
  }
  const pieces = pattern.split('*');
  const first = pieces[0]!;
  if (pieces.length === 1) return first.length === text.length && pieceAt(first, text, 0);
  const last = pieces[pieces.length - 1]!;
  if (first.length + last.length > text.length) return false;
  if (!pieceAt(first, text, 0) || !pieceAt(last, text, text.length - last.length)) return false;
  let at = first.length;
  const end = text.length - last.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const piece = pieces[i]!;
    if (piece === '') continue;
    const found = findPiece(piece, text, at, end);
    if (found < 0) return false;
    at = found + piece.length;
  }
  return true;
}

function pieceAt(piece: string, text: string, at: number): boolean {
  for (let i = 0; i < piece.length; i++) {
    const p = piece.charCodeAt(i);
    if (p !== 0x3f && p !== text.charCodeAt(at + i)) return false;
  }
  return true;
}

/** The first place in text[from, end) where the piece fits, or -1. */
function findPiece(piece: string, text: string, from: number, end: number): number {
  if (!piece.includes('?')) {
    const found = text.indexOf(piece, from);
    return found >= 0 && found + piece.length <= end ? found : -1;
  }
  for (let at = from; at + piece.length <= end; at++) if (pieceAt(piece, text, at)) return at;
  return -1;
}

/** An address as a condition compares it: IPv4-mapped IPv6 (`::ffff:1.2.3.4`, a dual-stack socket's) as its IPv4 address. */
export function sourceAddress(raw: string | undefined): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (!raw || !ipaddr.isValid(raw)) return undefined;
  return ipaddr.process(raw);
}

/**
 * Whether a condition holds for the request, as IAM evaluates it
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html,
 * reference_policies_condition-single-vs-multi-valued-context-keys.html):
 * a key absent from the request (or a multivalued one with no values)
 * matches nothing, so a positive operator fails and a negated one holds,
 * except that `...IfExists` and `ForAllValues:` hold and `ForAnyValue:`
 * fails; `Null` asks only whether the key is absent. With values,
 * `ForAllValues:` needs every one of the request's values to pass the
 * operator, `ForAnyValue:` (and a plain operator, which for a single value
 * is the same) one of them. A value passes a positive operator when it
 * matches one of the condition's values, a negated one when it matches
 * none. Work: request values x condition values comparisons.
 */
function conditionHolds(c: Condition, context: ConditionContext): boolean {
  const raw = context[c.key];
  const values: readonly string[] = raw === undefined ? [] : typeof raw === 'string' ? [raw] : raw;
  if (c.base === 'Null') return c.values.some((v) => (values.length === 0) === (v === 'true'));
  if (values.length === 0) {
    if (c.ifExists || c.set === 'all') return true;
    if (c.set === 'any') return false;
    return NEGATED.has(c.base);
  }
  const negated = NEGATED.has(c.base);
  const passes = (value: string) => c.values.some((v, i) => matches(c, value, v, i)) !== negated;
  return c.set === 'all' ? values.every(passes) : values.some(passes);
}

/** Whether the request's value matches one of the condition's values (for negated operators: the positive test). */
function matches(c: Condition, value: string, expected: string, index: number): boolean {
  switch (c.base) {
    case 'StringEquals':
    case 'StringNotEquals':
      return value === expected;
    case 'StringEqualsIgnoreCase':
    case 'StringNotEqualsIgnoreCase':
      return value.toLowerCase() === expected.toLowerCase();
    case 'StringLike':
    case 'StringNotLike':
      return globMatch(expected, value);
    case 'Bool':
      return value.toLowerCase() === expected;
    case 'IpAddress':
    case 'NotIpAddress': {
      const address = sourceAddress(value);
      const range = c.ranges![index]!;
      return !!address && address.kind() === range[0].kind() && address.match(range);
    }
    default: {
      const a = Number(value);
      const b = Number(expected);
      if (!Number.isFinite(a)) return false;
      switch (c.base) {
        case 'NumericEquals':
        case 'NumericNotEquals':
          return a === b;
        case 'NumericLessThan':
          return a < b;
        case 'NumericLessThanEquals':
          return a <= b;
        case 'NumericGreaterThan':
          return a > b;
        default:
          return a >= b;
      }
    }
  }
}

function principalMatches(s: PolicyStatement, account: string | undefined): boolean {
  const named = s.principal.everyone || (account !== undefined && s.principal.accounts.has(account));
  return s.notPrincipal ? !named : named;
}

function statementApplies(s: PolicyStatement, facts: RequestFacts): boolean {
  if (!principalMatches(s, facts.account)) return false;
  if (s.actions.has(facts.action) === s.notAction) return false;
  const named = s.resources.some((r) => r === '*' || globMatch(r, facts.resource));
  if (named === s.notResource) return false;
  return s.conditions.every((c) => conditionHolds(c, facts.context));
}

/** The policy's verdict on one request: an explicit Deny, an Allow, or nothing said. */
export function evaluatePolicy(policy: BucketPolicy, facts: RequestFacts): Verdict {
  let verdict: Verdict = 'none';
  for (const s of policy.statements) {
    if (!statementApplies(s, facts)) continue;
    if (s.effect === 'Deny') return 'deny';
    verdict = 'allow';
  }
  return verdict;
}

/** Condition keys whose fixed value limits a statement to known callers (S3's "fixed values"). */
const FIXING_KEYS: ReadonlySet<ConditionKey> = new Set(['aws:principalaccount', 'aws:userid']);

/**
 * Whether the policy is public as S3 defines it (PublicAccessBlockConfiguration,
 * "The meaning of public"): some Allow statement grants to everyone without
 * a condition that pins the caller down: aws:SourceIp limited to ranges no
 * wider than an IPv4 /8 or an IPv6 /32, or a fixed aws:PrincipalAccount or
 * aws:userid. Every action Cairn has reads or writes data or settings, so
 * none is left out as S3 leaves out its few harmless ones.
 */
export function isPublicPolicy(policy: BucketPolicy): boolean {
  return policy.statements.some((s) => s.effect === 'Allow' && (s.principal.everyone || s.notPrincipal) && !pinned(s));
}

function pinned(s: PolicyStatement): boolean {
  return s.conditions.some((c) => {
    if (c.ifExists || c.set === 'all') return false;
    if (c.base === 'IpAddress') return c.ranges!.every(([address, bits]) => bits >= (address.kind() === 'ipv4' ? 8 : 32));
    return (c.base === 'StringEquals' || c.base === 'StringEqualsIgnoreCase') && FIXING_KEYS.has(c.key);
  });
}
