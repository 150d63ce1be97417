/**
 * The bucket policy language (functions/core/storage/bucket-policy.ts):
 * strict parsing with S3's messages, evaluation (Deny over Allow,
 * principals, actions and resources with wildcards, the condition
 * operators and keys), S3's definition of a public policy, and hostile
 * input: oversized, deeply nested, pathological wildcards.
 */
import {
  evaluatePolicy,
  globMatch,
  isPublicPolicy,
  MAX_POLICY_BYTES,
  parseBucketPolicy,
  PolicyError,
  type RequestFacts,
} from '../../functions/core/storage/bucket-policy.js';
import { effectiveAcl, policyVerdict } from '../../functions/core/storage/bucket-access.js';
import type { Bucket } from '../../functions/core/data/buckets.js';

const B = 'photos';
const OWNER = 'acct-owner';
const OTHER = 'acct-other';

type Statement = Record<string, unknown>;
const policy = (...Statement: Statement[]) => JSON.stringify({ Version: '2012-10-17', Statement });
const allow = (extra: Statement = {}): Statement => ({
  Effect: 'Allow',
  Principal: '*',
  Action: 's3:GetObject',
  Resource: `arn:aws:s3:::${B}/*`,
  ...extra,
});
const parse = (text: string) => parseBucketPolicy(text, B);
const refusal = (text: string, bucket = B) => {
  try {
    parseBucketPolicy(text, bucket);
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyError);
    return (err as Error).message;
  }
  throw new Error('the policy was accepted');
};
const facts = (over: Partial<RequestFacts> = {}): RequestFacts => ({
  action: 's3:GetObject',
  resource: `${B}/a.txt`,
  context: {},
  ...over,
});
const verdict = (text: string, over: Partial<RequestFacts> = {}) => evaluatePolicy(parse(text), facts(over));

describe('parsing', () => {
  test('both versions, Statement as an array or one object, Sid, Id; the text is checked, not reshaped', () => {
    for (const Version of ['2012-10-17', '2008-10-17']) {
      expect(parse(JSON.stringify({ Version, Id: 'p1', Statement: allow({ Sid: 'one' }) })).statements).toHaveLength(1);
    }
    expect(parse(policy(allow(), allow({ Effect: 'Deny' }))).statements.map((s) => s.effect)).toEqual(['Allow', 'Deny']);
  });

  test.each([
    ['not JSON', '{"Version":', 'This policy contains invalid Json'],
    ['an array', '[]', 'This policy contains invalid Json'],
    ['a bad version', JSON.stringify({ Version: '2020-01-01', Statement: allow() }), 'The policy must contain a valid version string'],
    ['no Statement', JSON.stringify({ Version: '2012-10-17' }), 'Missing required field Statement'],
    ['an empty Statement', policy(), 'Could not parse the policy: Statement is empty!'],
    ['an unknown field', JSON.stringify({ Version: '2012-10-17', Statement: allow(), Foo: 1 }), 'Policy has an invalid field: Foo'],
    ['a bad Effect', policy(allow({ Effect: 'allow' })), 'Invalid effect: "allow"'],
    [
      'no Principal',
      policy({ Effect: 'Allow', Action: 's3:GetObject', Resource: `arn:aws:s3:::${B}/*` }),
      'Missing required field Principal',
    ],
    ['a Service principal', policy(allow({ Principal: { Service: 'lambda.amazonaws.com' } })), 'Invalid principal in policy'],
    ['an IAM user ARN', policy(allow({ Principal: { AWS: 'arn:aws:iam::123:user/bob' } })), 'Invalid principal in policy'],
    [
      'NotPrincipal with Allow',
      policy({ ...allow(), Principal: undefined, NotPrincipal: { AWS: OTHER } }),
      'NotPrincipal is supported with "Effect": "Deny" only',
    ],
    ['an unknown action', policy(allow({ Action: 's3:GetObjectVersionTorrent' })), 'Policy has invalid action'],
    ['a non-S3 action', policy(allow({ Action: 'iam:PassRole' })), 'Policy has invalid action'],
    ['both Action and NotAction', policy(allow({ NotAction: 's3:PutObject' })), 'Policy has both Action and NotAction'],
    ['another bucket', policy(allow({ Resource: 'arn:aws:s3:::other/*' })), 'Policy has invalid resource'],
    ['a bucket that only starts the same', policy(allow({ Resource: `arn:aws:s3:::${B}x/*` })), 'Policy has invalid resource'],
    ['a non-S3 resource', policy(allow({ Resource: 'arn:aws:sqs:::photos' })), 'Policy has invalid resource'],
    ['an unknown operator', policy(allow({ Condition: { StringSorta: { 'aws:Referer': 'x' } } })), 'Invalid Condition type : StringSorta'],
    [
      'an unknown key',
      policy(allow({ Condition: { StringEquals: { 'aws:FavouriteColour': 'x' } } })),
      'Policy has an invalid condition key: aws:FavouriteColour',
    ],
    [
      'a bad CIDR',
      policy(allow({ Condition: { IpAddress: { 'aws:SourceIp': '10.0.0.0/33' } } })),
      'Invalid value for IpAddress aws:SourceIp',
    ],
    [
      'IpAddress on a string key',
      policy(allow({ Condition: { IpAddress: { 'aws:Referer': '10.0.0.0/8' } } })),
      'IpAddress takes only aws:SourceIp, not aws:Referer',
    ],
    [
      'a non-boolean Bool',
      policy(allow({ Condition: { Bool: { 'aws:SecureTransport': 'yes' } } })),
      'Invalid value for Bool aws:SecureTransport',
    ],
    [
      'an object as a value',
      policy(allow({ Condition: { StringEquals: { 'aws:Referer': { a: 1 } } } })),
      'Condition values must be strings, numbers or booleans (StringEquals aws:Referer)',
    ],
    ['a repeated Sid', policy(allow({ Sid: 'x' }), allow({ Sid: 'x' })), 'Statement IDs (SID) in a single policy must be unique'],
  ])('refuses %s with S3 message', (_what, text, message) => {
    expect(refusal(text)).toBe(message);
  });

  test('resources may name this bucket with wildcards (s3-tests test_bucket_policy_another_bucket), never another', () => {
    expect(() => parse(policy(allow({ Action: 's3:ListBucket', Resource: ['arn:aws:s3:::*', 'arn:aws:s3:::*/*'] })))).not.toThrow();
    expect(() => parse(policy(allow({ Resource: 'arn:aws:s3:::pho?os/*' })))).not.toThrow();
    expect(refusal(policy(allow({ Resource: 'arn:aws:s3:::x*/*' })))).toBe('Policy has invalid resource');
    expect(refusal(policy(allow({ Resource: `arn:aws:s3:::${B}` })), 'other')).toBe('Policy has invalid resource');
  });

  test('hostile documents: over 20 KB, nested too deep, too many values are refused before any work', () => {
    const big = policy(allow({ Sid: 'x'.repeat(MAX_POLICY_BYTES) }));
    expect(refusal(big)).toBe('Policies must be less than 20 KB');
    expect(refusal('['.repeat(5000) + ']'.repeat(5000))).toBe('Policies must not be nested more than 8 levels deep');
    // Braces inside strings do not count as nesting.
    expect(() => parse(policy(allow({ Sid: '[[[[[[[[[[{{{{{{{{{{' })))).not.toThrow();
    const many = policy(allow({ Action: Array.from({ length: 2001 }, () => 's3:*') }));
    expect(Buffer.byteLength(many)).toBeLessThan(MAX_POLICY_BYTES);
    expect(refusal(many)).toBe('Policy has too many values');
  });
});

describe('evaluation', () => {
  test('Principal: everyone (anonymous too), an account id, its root ARN, its canonical id; nobody else', () => {
    expect(verdict(policy(allow()))).toBe('allow');
    expect(verdict(policy(allow({ Principal: { AWS: '*' } })), { account: OTHER })).toBe('allow');
    for (const Principal of [{ AWS: OTHER }, { AWS: `arn:aws:iam::${OTHER}:root` }, { CanonicalUser: OTHER }, { AWS: [OWNER, OTHER] }]) {
      const text = policy(allow({ Principal }));
      expect([verdict(text, { account: OTHER }), verdict(text, { account: 'acct-third' }), verdict(text)]).toEqual([
        'allow',
        'none',
        'none',
      ]);
    }
  });

  test('an explicit Deny wins over any Allow, in any order', () => {
    const deny = allow({ Effect: 'Deny', Principal: { AWS: OTHER } });
    expect(verdict(policy(allow(), deny), { account: OTHER })).toBe('deny');
    expect(verdict(policy(deny, allow()), { account: OTHER })).toBe('deny');
    expect(verdict(policy(deny, allow()), { account: OWNER })).toBe('allow');
  });

  test('NotPrincipal (with Deny) denies everyone but the named', () => {
    const text = policy(allow(), { ...allow({ Effect: 'Deny' }), Principal: undefined, NotPrincipal: { AWS: OWNER } });
    expect([verdict(text, { account: OWNER }), verdict(text, { account: OTHER }), verdict(text)]).toEqual(['allow', 'deny', 'deny']);
  });

  test('Action and NotAction with wildcards, case-insensitively', () => {
    expect(verdict(policy(allow({ Action: 's3:*' })), { action: 's3:DeleteObject' })).toBe('allow');
    expect(verdict(policy(allow({ Action: '*', Resource: `arn:aws:s3:::${B}` })), { action: 's3:PutBucketAcl', resource: B })).toBe(
      'allow',
    );
    expect(verdict(policy(allow({ Action: 's3:get*' })), { action: 's3:GetObjectAcl' })).toBe('allow');
    expect(verdict(policy(allow({ Action: 's3:Get*' })), { action: 's3:PutObject' })).toBe('none');
    expect(verdict(policy(allow({ Action: 'S3:GETOBJECT' })))).toBe('allow');
    const notPut = policy(allow({ Action: undefined, NotAction: 's3:Put*' }));
    expect([verdict(notPut), verdict(notPut, { action: 's3:PutObject' })]).toEqual(['allow', 'none']);
  });

  test('Resource and NotResource: the bucket, key patterns with * and ?', () => {
    const keys = policy(allow({ Resource: [`arn:aws:s3:::${B}/public/*`, `arn:aws:s3:::${B}/img-?.png`] }));
    const at = (resource: string) => verdict(keys, { resource });
    expect([at(`${B}/public/a/b`), at(`${B}/img-1.png`), at(`${B}/img-10.png`), at(`${B}/private/a`), at(B)]).toEqual([
      'allow',
      'allow',
      'none',
      'none',
      'none',
    ]);
    const bucketOnly = policy(allow({ Action: 's3:PutObject', Resource: `arn:aws:s3:::${B}` }));
    // s3-tests test_bucket_policy_multipart: the bucket's ARN does not cover its objects.
    expect(verdict(bucketOnly, { action: 's3:PutObject', resource: `${B}/mpobj` })).toBe('none');
    const notSecret = policy(allow({ Resource: undefined, NotResource: `arn:aws:s3:::${B}/secret/*` }));
    expect([verdict(notSecret), verdict(notSecret, { resource: `${B}/secret/x` })]).toEqual(['allow', 'none']);
  });

  test('aws:SourceIp: IPv4 and IPv6 CIDRs, IPv4-mapped addresses, NotIpAddress; no address is no match', () => {
    const text = policy(allow({ Condition: { IpAddress: { 'aws:SourceIp': ['192.0.2.0/24', '2001:db8::/32', '198.51.100.7'] } } }));
    const from = (ip?: string) => verdict(text, { context: ip === undefined ? {} : { 'aws:sourceip': ip } });
    expect([
      from('192.0.2.77'),
      from('::ffff:192.0.2.1'),
      from('2001:db8:1::5'),
      from('198.51.100.7'),
      from('198.51.100.8'),
      from(),
    ]).toEqual(['allow', 'allow', 'allow', 'allow', 'none', 'none']);
    const not = policy(allow({ Effect: 'Deny', Condition: { NotIpAddress: { 'aws:SourceIp': '10.0.0.0/8' } } }), allow());
    expect([
      verdict(not, { context: { 'aws:sourceip': '10.1.2.3' } }),
      verdict(not, { context: { 'aws:sourceip': '8.8.8.8' } }),
      verdict(not, { context: {} }),
    ]).toEqual(['allow', 'deny', 'deny']);
  });

  test('aws:Referer with StringLike, StringLikeIfExists (s3-tests test_bucket_policy_set_condition_operator_end_with_IfExists), StringNotLike', () => {
    const like = policy(allow({ Condition: { StringLikeIfExists: { 'aws:Referer': 'http://www.example.com/*' } } }));
    const ref = (r?: string) => verdict(like, { context: r === undefined ? {} : { 'aws:referer': r } });
    expect([ref('http://www.example.com/'), ref('http://www.example.com/index.html'), ref('http://example.com'), ref()]).toEqual([
      'allow',
      'allow',
      'none',
      'allow',
    ]);
    const strict = policy(allow({ Condition: { StringLike: { 'aws:Referer': 'http://www.example.com/*' } } }));
    expect(verdict(strict, { context: {} })).toBe('none');
    const notLike = policy(allow({ Condition: { StringNotLike: { 'aws:Referer': '*evil*' } } }));
    expect([verdict(notLike, { context: { 'aws:referer': 'https://evil.test/' } }), verdict(notLike, { context: {} })]).toEqual([
      'none',
      'allow',
    ]);
  });

  test('aws:SecureTransport with Bool; s3:prefix, s3:max-keys; StringEquals and its negation; ForAnyValue / ForAllValues', () => {
    const tls = policy(allow(), allow({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': false } } }));
    expect([
      verdict(tls, { context: { 'aws:securetransport': 'false' } }),
      verdict(tls, { context: { 'aws:securetransport': 'true' } }),
    ]).toEqual(['deny', 'allow']);
    const list = (c: Statement) => policy(allow({ Action: 's3:ListBucket', Resource: `arn:aws:s3:::${B}`, Condition: c }));
    const listing = (text: string, context: RequestFacts['context']) => verdict(text, { action: 's3:ListBucket', resource: B, context });
    const prefix = list({ StringEquals: { 's3:prefix': ['', 'home/'] } });
    expect([
      listing(prefix, { 's3:prefix': 'home/' }),
      listing(prefix, { 's3:prefix': '' }),
      listing(prefix, { 's3:prefix': 'etc/' }),
    ]).toEqual(['allow', 'allow', 'none']);
    const notPrefix = list({ StringNotEquals: { 's3:prefix': 'etc/' } });
    expect([listing(notPrefix, { 's3:prefix': 'etc/' }), listing(notPrefix, { 's3:prefix': 'x' }), listing(notPrefix, {})]).toEqual([
      'none',
      'allow',
      'allow',
    ]);
    const maxKeys = list({ NumericLessThanEquals: { 's3:max-keys': 10 } });
    expect([
      listing(maxKeys, { 's3:max-keys': '10' }),
      listing(maxKeys, { 's3:max-keys': '11' }),
      listing(maxKeys, { 's3:max-keys': 'x' }),
    ]).toEqual(['allow', 'none', 'none']);
    const any = list({ 'ForAnyValue:StringEquals': { 's3:prefix': 'a/' } });
    const all = list({ 'ForAllValues:StringEquals': { 's3:prefix': 'a/' } });
    expect([listing(any, {}), listing(all, {}), listing(any, { 's3:prefix': 'a/' }), listing(all, { 's3:prefix': 'b/' })]).toEqual([
      'none',
      'allow',
      'allow',
      'none',
    ]);
    const nullCheck = list({ Null: { 's3:delimiter': 'true' } });
    expect([listing(nullCheck, {}), listing(nullCheck, { 's3:delimiter': '/' })]).toEqual(['allow', 'none']);
  });

  test('a multivalued key (s3:RequestObjectTagKeys): ForAllValues every value, ForAnyValue one, negated operators per value; none: as IAM', () => {
    const put = (c: Statement) => policy(allow({ Action: 's3:PutObject', Condition: c }));
    const keys = (text: string, tagKeys?: string[]) =>
      verdict(text, { action: 's3:PutObject', context: tagKeys ? { 's3:requestobjecttagkeys': tagKeys } : {} });
    const all = put({ 'ForAllValues:StringEquals': { 's3:RequestObjectTagKeys': ['a', 'b'] } });
    expect([keys(all, ['a']), keys(all, ['a', 'b']), keys(all, ['a', 'c']), keys(all, []), keys(all)]).toEqual([
      'allow',
      'allow',
      'none',
      'allow',
      'allow',
    ]);
    const any = put({ 'ForAnyValue:StringLike': { 's3:RequestObjectTagKeys': 'secret*' } });
    expect([keys(any, ['x', 'secretive']), keys(any, ['x']), keys(any, []), keys(any)]).toEqual(['allow', 'none', 'none', 'none']);
    // ForAllValues:StringNotEquals: no value may be one of the condition's.
    const none = put({ 'ForAllValues:StringNotEquals': { 's3:RequestObjectTagKeys': ['secret'] } });
    expect([keys(none, ['a', 'b']), keys(none, ['a', 'secret'])]).toEqual(['allow', 'none']);
    const present = put({ Null: { 's3:RequestObjectTagKeys': 'false' } });
    expect([keys(present, ['a']), keys(present, []), keys(present)]).toEqual(['allow', 'none', 'none']);
  });

  test('tag keys: the prefix case-insensitive, the tag key exact; values case-sensitive unless IgnoreCase', () => {
    const text = policy(allow({ Condition: { StringEquals: { 'S3:EXISTINGOBJECTTAG/Team': 'Blue' } } }));
    const tagged = (key: string, value: string) => verdict(text, { context: { [`s3:existingobjecttag/${key}`]: value } });
    expect([tagged('Team', 'Blue'), tagged('team', 'Blue'), tagged('Team', 'blue'), verdict(text)]).toEqual([
      'allow',
      'none',
      'none',
      'none',
    ]);
    const loose = policy(allow({ Condition: { StringEqualsIgnoreCase: { 's3:ExistingObjectTag/Team': 'blue' } } }));
    expect(verdict(loose, { context: { 's3:existingobjecttag/Team': 'BLUE' } })).toBe('allow');
    expect(parse(text).uses).toEqual({ existingTags: true, requestTags: false });
    expect(parse(policy(allow({ Condition: { Null: { 's3:RequestObjectTagKeys': 'true' } } }))).uses).toEqual({
      existingTags: false,
      requestTags: true,
    });
    expect(refusal(policy(allow({ Condition: { StringEquals: { 's3:RequestObjectTag/': 'x' } } })))).toBe(
      'Policy has an invalid condition key: s3:RequestObjectTag/',
    );
  });

  test('every condition of a statement must hold', () => {
    const text = policy(allow({ Condition: { Bool: { 'aws:SecureTransport': 'true' }, StringEquals: { 'aws:PrincipalAccount': OTHER } } }));
    const ctx = (tls: string, account?: string) =>
      verdict(text, { context: { 'aws:securetransport': tls, ...(account ? { 'aws:principalaccount': account } : {}) } });
    expect([ctx('true', OTHER), ctx('false', OTHER), ctx('true', OWNER), ctx('true')]).toEqual(['allow', 'none', 'none', 'none']);
  });
});

describe('what is public (S3: "The meaning of public")', () => {
  const pub = (text: string) => isPublicPolicy(parse(text));
  test('Allow to * is public; to fixed accounts, a narrow aws:SourceIp or a fixed aws:PrincipalAccount is not; Deny never is', () => {
    expect(pub(policy(allow()))).toBe(true);
    expect(pub(policy(allow({ Principal: { AWS: '*' } })))).toBe(true);
    expect(pub(policy(allow({ Principal: { AWS: `arn:aws:iam::${OTHER}:root` } })))).toBe(false);
    expect(pub(policy(allow({ Condition: { IpAddress: { 'aws:SourceIp': '10.0.0.0/32' } } })))).toBe(false);
    expect(pub(policy(allow({ Condition: { IpAddress: { 'aws:SourceIp': '0.0.0.0/1' } } })))).toBe(true);
    expect(pub(policy(allow({ Condition: { IpAddressIfExists: { 'aws:SourceIp': '10.0.0.0/32' } } })))).toBe(true);
    expect(pub(policy(allow({ Condition: { StringEquals: { 'aws:PrincipalAccount': OTHER } } })))).toBe(false);
    expect(pub(policy(allow({ Condition: { StringLike: { 'aws:Referer': 'https://mine.test/*' } } })))).toBe(true);
    expect(pub(policy(allow({ Effect: 'Deny' })))).toBe(false);
  });
});

describe('combined with the bucket (core/storage/bucket-access.ts)', () => {
  const bucket = (over: Partial<Bucket> = {}): Bucket => ({
    name: B,
    accountId: OWNER,
    createdAt: '',
    isDefault: false,
    acl: 'private',
    ...over,
  });
  test('RestrictPublicBuckets drops a public policy Allow for everyone but the owner; a Deny still counts; a non-public Allow still counts', () => {
    const restrict = { blockPublicAcls: false, ignorePublicAcls: false, blockPublicPolicy: false, restrictPublicBuckets: true };
    const open = bucket({ policy: policy(allow()), publicAccessBlock: restrict });
    expect([
      policyVerdict(open, facts()),
      policyVerdict(open, facts({ account: OTHER })),
      policyVerdict(open, facts({ account: OWNER })),
    ]).toEqual(['none', 'none', 'allow']);
    const named = bucket({ policy: policy(allow({ Principal: { AWS: OTHER } })), publicAccessBlock: restrict });
    expect(policyVerdict(named, facts({ account: OTHER }))).toBe('allow');
    const denied = bucket({ policy: policy(allow({ Effect: 'Deny' })), publicAccessBlock: restrict });
    expect(policyVerdict(denied, facts({ account: OWNER }))).toBe('deny');
  });

  test('IgnorePublicAcls makes public ACLs private; BucketOwnerEnforced makes every ACL private', () => {
    const ignore = { blockPublicAcls: false, ignorePublicAcls: true, blockPublicPolicy: false, restrictPublicBuckets: false };
    expect(effectiveAcl(bucket(), 'public-read')).toBe('public-read');
    expect(
      ['public-read', 'public-read-write', 'authenticated-read'].map((a) =>
        effectiveAcl(bucket({ publicAccessBlock: ignore }), a as never),
      ),
    ).toEqual(['private', 'private', 'private']);
    expect(effectiveAcl(bucket({ ownership: 'BucketOwnerEnforced' }), 'public-read')).toBe('private');
    expect(effectiveAcl(bucket({ ownership: 'ObjectWriter' }), 'public-read')).toBe('public-read');
  });
});

describe('wildcards', () => {
  test('* and ? as IAM matches them', () => {
    expect(globMatch('a*c', 'abbbc')).toBe(true);
    expect(globMatch('a*c', 'abbbd')).toBe(false);
    expect(globMatch('a?c', 'abc')).toBe(true);
    expect(globMatch('a?c', 'ac')).toBe(false);
    expect(globMatch('*', '')).toBe(true);
    expect(globMatch('a*b*c', 'abc')).toBe(true);
    expect(globMatch('a*b*c', 'acb')).toBe(false);
    expect(globMatch('*x*?y', 'xxxy')).toBe(true);
    expect(globMatch('ab*ba', 'aba')).toBe(false);
    expect(globMatch('S3:GET*', 's3:getobject', true)).toBe(true);
  });

  test('a pathological pattern against a long key takes milliseconds, not exponential time', () => {
    const text = 'a'.repeat(1024);
    const pattern = `${'a*'.repeat(2000)}b`;
    const started = performance.now();
    expect(globMatch(pattern, text)).toBe(false);
    expect(globMatch('*?'.repeat(3000) + 'b', text)).toBe(false);
    expect(globMatch(`*${'a'.repeat(500)}b*`, text)).toBe(false);
    expect(globMatch(`*${'?'.repeat(500)}b*`, text)).toBe(false);
    expect(globMatch(`${'*a'.repeat(1000)}*`, text)).toBe(true);
    const doc = policy(allow({ Resource: `arn:aws:s3:::${B}/${'a*'.repeat(4000)}b` }));
    expect(verdict(doc, { resource: `${B}/${text}` })).toBe('none');
    expect(performance.now() - started).toBeLessThan(500);
  });
});
