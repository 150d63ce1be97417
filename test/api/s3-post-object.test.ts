/**
 * POST Object (browser uploads with a signed policy) through each door: the
 * AWS SDK's createPresignedPost makes the form, as a web page would be
 * given it; policies it cannot make (expired, malformed, a condition
 * broken on purpose) are signed here as S3 documents it ("POST Policy",
 * "Calculating a Signature": the base64 policy signed with the SigV4 key).
 * What ceph's s3-tests check of it (test_post_object_*) is here, and what an
 * attacker would send: a huge field, thousands of fields, a body that never
 * closes, an unsigned upload to a private bucket.
 */
import { createHash, createHmac } from 'node:crypto';
import {
  CreateBucketCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  PutBucketCorsCommand,
  PutBucketPolicyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createPresignedPost, type PresignedPostOptions } from '@aws-sdk/s3-presigned-post';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { absent, s3Doors, type S3Door } from '../support/s3-doors.js';
import { signedPut, utf8Bytes } from '../support/s3-signed-bytes.js';
import { doorsFor } from '../support/test-set.js';
import { bytesOf, vectorNamed } from '../support/vectors.js';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { isRootPinned } from '../../functions/core/storage/pins.js';
import { CID } from 'multiformats/cid';

let target: ApiTarget;
const RUN = Date.now().toString(36);

beforeAll(async () => {
  target = await apiTarget();
});

afterAll(async () => {
  await target?.close();
});

/** A form field: its name and its value (a string is sent as UTF-8, as browsers send one; bytes as they are). */
type Field = [string, string | Buffer];
interface FilePart {
  filename?: string;
  type?: string;
  data: Uint8Array | string;
}

const BOUNDARY = '----CairnFormBoundary7MA4YWxkTrZu0gW';

/** A multipart/form-data body as a browser sends one: the fields, the file, then (ignored) fields after it. */
function formBody(fields: Field[], file?: FilePart, after: Field[] = []): Buffer {
  const parts: Buffer[] = [];
  const field = ([name, value]: Field) =>
    parts.push(
      Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`),
      Buffer.from(value),
      Buffer.from('\r\n'),
    );
  fields.forEach(field);
  if (file) {
    parts.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${file.filename ?? 'upload.bin'}"\r\n` +
          `Content-Type: ${file.type ?? 'application/octet-stream'}\r\n\r\n`,
      ),
      Buffer.from(file.data),
      Buffer.from('\r\n'),
    );
  }
  after.forEach(field);
  parts.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(parts);
}

const FORM_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

/** A policy signed with `creds` as S3 documents it (for the policies createPresignedPost will not make). */
function signedFields(creds: { accessKeyId: string; secretAccessKey: string }, region: string, policy: unknown, now = new Date()): Field[] {
  const date = now.toISOString().slice(0, 10).replace(/-/g, '');
  const amzDate = `${date}T000000Z`;
  const credential = `${creds.accessKeyId}/${date}/${region}/s3/aws4_request`;
  // As createPresignedPost does: the signing fields are form fields, which the policy must name.
  const named =
    typeof policy === 'object' && policy !== null && Array.isArray((policy as { conditions?: unknown }).conditions)
      ? {
          ...policy,
          conditions: [
            ...(policy as { conditions: unknown[] }).conditions,
            { 'x-amz-algorithm': 'AWS4-HMAC-SHA256' },
            { 'x-amz-credential': credential },
            { 'x-amz-date': amzDate },
          ],
        }
      : policy;
  const doc = typeof named === 'string' ? named : JSON.stringify(named);
  const base64 = Buffer.from(doc).toString('base64');
  const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
  const key = hmac(hmac(hmac(hmac(`AWS4${creds.secretAccessKey}`, date), region), 's3'), 'aws4_request');
  return [
    ['x-amz-algorithm', 'AWS4-HMAC-SHA256'],
    ['x-amz-credential', credential],
    ['x-amz-date', amzDate],
    ['policy', base64],
    ['x-amz-signature', createHmac('sha256', key).update(base64).digest('hex')],
  ];
}

const soon = () => new Date(Date.now() + 3600_000).toISOString();

const unescapeXml = (text: string) =>
  text.replace(/&(quot|apos|lt|gt|amp);/g, (_, e: string) => ({ quot: '"', apos: "'", lt: '<', gt: '>', amp: '&' })[e]!);

const errorOf = async (res: Response) => {
  const text = unescapeXml(await res.text());
  return { status: res.status, code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1], message: /<Message>([^<]*)<\/Message>/.exec(text)?.[1] };
};

describe.each(doorsFor(s3Doors(() => target)))('POST Object through the $name', (door: S3Door) => {
  let s3: S3Client;
  let B: string;
  /** The bucket's POST URL through this door (createPresignedPost's, with this door's endpoint). */
  let url: string;
  let n = 0;
  const key = (what: string) => `post-${door.tag}-${RUN}-${what}-${++n}`;
  beforeAll(async () => {
    s3 = door.client();
    B = target.account.bucket;
    url = (await createPresignedPost(s3, { Bucket: B, Key: 'x' })).url;
  });

  const post = (fields: Field[], file?: FilePart, init: { after?: Field[]; headers?: Record<string, string>; to?: string } = {}) =>
    door.fetch(init.to ?? url, {
      method: 'POST',
      headers: { 'content-type': FORM_TYPE, ...init.headers },
      body: new Uint8Array(formBody(fields, file, init.after)),
      // A browser would follow the 303; the test reads it (the Lambda doors never follow).
      ...({ redirect: 'manual' } as object),
    });
  /** createPresignedPost's fields for `options`, then `extra` (which the options' Conditions must allow). */
  const presigned = async (options: Omit<PresignedPostOptions, 'Bucket'> & { Bucket?: string }, extra: Field[] = []) => {
    const { fields } = await createPresignedPost(s3, { Bucket: B, ...options });
    return [...Object.entries(fields), ...extra] as Field[];
  };
  const own = (policy: unknown) => signedFields(target.account, target.region, policy);
  /** A PutObject of `metadata` as x-amz-meta-* headers in UTF-8 (Node's HTTP client, and so the SDK, cannot send them above U+00FF). */
  const putWithMetadata = (k: string, metadata: Record<string, string>) =>
    signedPut(
      target,
      door,
      B,
      k,
      Object.fromEntries(Object.entries(metadata).map(([name, value]) => [`x-amz-meta-${name}`, utf8Bytes(value)])),
    );

  test('a presigned POST stores the file with its Content-Type, metadata, tags and ACL, and answers 204', async () => {
    const k = key('full');
    const tagging = '<Tagging><TagSet><Tag><Key>colour</Key><Value>blue &amp; green</Value></Tag></TagSet></Tagging>';
    const fields = await presigned({
      Key: k,
      Conditions: [
        ['starts-with', '$Content-Type', 'text/'],
        ['eq', '$x-amz-meta-origin', 'form'],
        ['eq', '$tagging', tagging],
        { acl: 'private' },
        ['content-length-range', 1, 1000],
      ],
      Fields: { 'Content-Type': 'text/plain; charset=utf-8', 'x-amz-meta-origin': 'form', tagging, acl: 'private' },
    });
    const res = await post(fields, { data: 'hello from a form', type: 'image/png' });
    expect(res.status).toBe(204);
    expect(res.headers.get('etag')).toBe(`"${createHash('md5').update('hello from a form').digest('hex')}"`);
    expect(res.headers.get('x-service-ipfs-hash')).toMatch(/^bafy/);
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: k }));
    expect(await got.Body!.transformToString()).toBe('hello from a form');
    // The form's Content-Type field, not the file part's.
    expect(got.ContentType).toBe('text/plain; charset=utf-8');
    expect(got.Metadata).toEqual({ origin: 'form' });
    expect((await s3.send(new GetObjectTaggingCommand({ Bucket: B, Key: k }))).TagSet).toEqual([{ Key: 'colour', Value: 'blue & green' }]);
  });

  test('x-amz-meta-* fields that are not ASCII are stored and answered as the same values in PutObject headers', async () => {
    const metadata = {
      city: 'Z\u00fcrich',
      cjk: '\u4e2d\u6587 text',
      emoji: 'snow \u2603 \u{1f600}',
      word: '=?UTF-8?Q?caf=C3=A9?=',
      plain: 'as it is',
    };
    const k = key('meta');
    const fields = await presigned({
      Key: k,
      Fields: Object.fromEntries(Object.entries(metadata).map(([name, value]) => [`x-amz-meta-${name}`, value])),
    });
    expect((await post(fields, { data: 'by form' })).status).toBe(204);
    // The same values as PutObject headers, sent as UTF-8 as boto3 and the SDKs send them.
    const put = `${k}-put`;
    expect((await putWithMetadata(put, metadata)).status).toBe(200);
    const answered = {
      city: '=?UTF-8?Q?Z=C3=BCrich?=',
      cjk: '=?UTF-8?Q?=E4=B8=AD=E6=96=87_text?=',
      emoji: '=?UTF-8?Q?snow_=E2=98=83_=F0=9F=98=80?=',
      word: '=?UTF-8?Q?caf=C3=A9?=',
      plain: 'as it is',
    };
    for (const Key of [k, put]) {
      expect((await s3.send(new HeadObjectCommand({ Bucket: B, Key }))).Metadata).toEqual(answered);
      const got = await s3.send(new GetObjectCommand({ Bucket: B, Key }));
      await got.Body!.transformToString();
      expect(got.Metadata).toEqual(answered);
    }
    // A field whose bytes are not UTF-8 is read as such a header's bytes are: one character a byte.
    const latin = key('meta-latin1');
    const res = await post(
      [
        ...(await presigned({ Key: latin, Conditions: [['starts-with', '$x-amz-meta-x', '']] })),
        ['x-amz-meta-x', Buffer.from([0x63, 0x61, 0x66, 0xe9])],
      ],
      { data: 'latin-1' },
    );
    expect(res.status).toBe(204);
    expect((await s3.send(new HeadObjectCommand({ Bucket: B, Key: latin }))).Metadata).toEqual({ x: '=?UTF-8?Q?caf=C3=A9?=' });
    // A value a header cannot carry (a line break) is refused, not stored.
    const broken = key('meta-newline');
    const refused = await post(
      [...(await presigned({ Key: broken, Conditions: [['starts-with', '$x-amz-meta-x', '']] })), ['x-amz-meta-x', 'two\r\nlines']],
      { data: 'no' },
    );
    expect(await errorOf(refused)).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await absent(s3, B, broken)).toBe(true);
  });

  test('user metadata in a form is at most 2 KB counted in UTF-8, as in PutObject headers: over it is MetadataTooLarge and stores nothing', async () => {
    // Name "k" (1 byte) + 2044 bytes + "中" (3 bytes in UTF-8) = 2048 bytes: taken; one byte more is not.
    const fits = `${'a'.repeat(2044)}\u4e2d`;
    const form = async (k: string, value: string) =>
      post(await presigned({ Key: k, Conditions: [['starts-with', '$x-amz-meta-k', '']] }, [['x-amz-meta-k', value]]), { data: 'm' });
    const k = key('meta-2k');
    expect((await form(k, fits)).status).toBe(204);
    expect((await putWithMetadata(`${k}-put`, { k: fits })).status).toBe(200);
    const stored = (await s3.send(new HeadObjectCommand({ Bucket: B, Key: k }))).Metadata;
    expect(stored).toEqual((await s3.send(new HeadObjectCommand({ Bucket: B, Key: `${k}-put` }))).Metadata);
    expect(stored!.k).toMatch(/^=\?UTF-8\?Q\?a+=E4=B8=AD\?=$/);

    const over = key('meta-over');
    const refused = await form(over, `${fits}a`);
    expect(await errorOf(refused)).toEqual({
      status: 400,
      code: 'MetadataTooLarge',
      message: 'Your metadata headers exceed the maximum allowed metadata size.',
    });
    expect(await absent(s3, B, over)).toBe(true);
    expect(await errorOf(await putWithMetadata(`${over}-put`, { k: `${fits}a` }))).toEqual(
      await errorOf(await form(`${over}-2`, `${fits}a`)),
    );
    expect(await absent(s3, B, `${over}-put`)).toBe(true);
  });

  test('success_action_status 201 answers the PostResponse XML, 200 an empty 200, anything else 204', async () => {
    const k = key('status');
    const fields = (status: string) =>
      presigned({ Key: k, Conditions: [{ success_action_status: status }], Fields: { success_action_status: status } });
    const created = await post(await fields('201'), { data: 'one' });
    expect(created.status).toBe(201);
    const xml = unescapeXml(await created.text());
    expect(xml).toContain('<PostResponse>');
    expect(xml).toContain(`<Bucket>${B}</Bucket>`);
    expect(xml).toContain(`<Key>${k}</Key>`);
    expect(xml).toMatch(/<ETag>"[0-9a-f]{32}"<\/ETag>/);
    expect(xml).toMatch(new RegExp(`<Location>https?://[^<]+/${k}</Location>`));
    const ok = await post(await fields('200'), { data: 'two' });
    expect([ok.status, await ok.text()]).toEqual([200, '']);
    const other = await post(await fields('404'), { data: 'three' });
    expect(other.status).toBe(204);
    expect(await (await s3.send(new GetObjectCommand({ Bucket: B, Key: k }))).Body!.transformToString()).toBe('three');
  });

  test('success_action_redirect answers 303 to the URL with bucket, key and etag; ${filename} becomes the file name', async () => {
    const redirect = 'https://app.example/done?from=form';
    const prefix = `${key('named')}/`;
    const fields = await presigned({
      Key: `${prefix}\${filename}`,
      Conditions: [{ success_action_redirect: redirect }],
      Fields: { success_action_redirect: redirect },
    });
    const res = await post(fields, { data: 'redirected', filename: 'C:\\Users\\me\\report.txt' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!);
    expect(location.origin + location.pathname).toBe('https://app.example/done');
    expect(location.searchParams.get('from')).toBe('form');
    expect(location.searchParams.get('bucket')).toBe(B);
    expect(location.searchParams.get('key')).toBe(`${prefix}report.txt`);
    expect(location.searchParams.get('etag')).toBe(res.headers.get('etag'));
    expect(await (await s3.send(new GetObjectCommand({ Bucket: B, Key: `${prefix}report.txt` }))).Body!.transformToString()).toBe(
      'redirected',
    );
  });

  test('fields after the file are ignored; field names are case-insensitive; x-ignore- fields need no condition', async () => {
    const k = key('after');
    const fields = (
      await presigned({ Key: k, Conditions: [['starts-with', '$x-amz-meta-a', '']], Fields: { 'X-Amz-Meta-A': 'before' } })
    ).map(([name, value]): Field => [name === 'key' ? 'KEY' : name, value]);
    const res = await post([...fields, ['x-ignore-note', 'anything']], { data: 'body' }, { after: [['x-amz-meta-b', 'after']] });
    expect(res.status).toBe(204);
    expect((await s3.send(new HeadObjectCommand({ Bucket: B, Key: k }))).Metadata).toEqual({ a: 'before' });
  });

  test('every broken condition is AccessDenied "Invalid according to Policy", and stores nothing', async () => {
    const k = key('denied');
    const base = (conditions: unknown[], expiration = soon()) => ({
      expiration,
      conditions: [{ bucket: B }, ['starts-with', '$key', k], ...conditions],
    });
    const cases: Array<[string, Field[], RegExp]> = [
      [
        'wrong bucket',
        [['key', k], ...own({ expiration: soon(), conditions: [{ bucket: `${B}-other` }, ['starts-with', '$key', '']] })],
        /Policy Condition failed: \["eq","\$bucket"/,
      ],
      ['key outside the prefix', [['key', `elsewhere-${k}`], ...own(base([]))], /Policy Condition failed: \["starts-with","\$key"/],
      ['a field the policy names is missing', [['key', k], ...own(base([['eq', '$x-amz-meta-foo', 'bar']]))], /Policy Condition failed/],
      [
        'a field value the policy refuses',
        [['key', k], ['x-amz-meta-foo', 'barclamp'], ...own(base([['starts-with', '$x-amz-meta-foo', 'foo']]))],
        /Policy Condition failed/,
      ],
      [
        'a field the policy does not name',
        [['key', k], ['x-amz-meta-extra', '1'], ...own(base([]))],
        /Extra input fields: x-amz-meta-extra/,
      ],
      ['an expired policy', [['key', k], ...own(base([], new Date(Date.now() - 60_000).toISOString()))], /Policy expired/],
    ];
    for (const [what, fields, message] of cases) {
      const res = await post(fields, { data: 'nope' });
      expect([what, await errorOf(res)]).toEqual([what, { status: 403, code: 'AccessDenied', message: expect.stringMatching(message) }]);
    }
    expect(await absent(s3, B, k)).toBe(true);
    expect(await absent(s3, B, `elsewhere-${k}`)).toBe(true);
  });

  test('signatures and credentials: a wrong signature, an unknown key, a missing signature or policy', async () => {
    const k = key('sig');
    const good = own({ expiration: soon(), conditions: [{ bucket: B }, { key: k }] });
    const swap = (name: string, value: string) => good.map(([f, v]): Field => [f, f === name ? value : v]);
    const drop = (name: string) => good.filter(([f]) => f !== name);
    const cases: Array<[string, Field[], number, string]> = [
      ['wrong signature', swap('x-amz-signature', '0'.repeat(64)), 403, 'SignatureDoesNotMatch'],
      [
        'unknown key',
        signedFields({ accessKeyId: 'AKIANOBODY', secretAccessKey: 'x' }, target.region, { expiration: soon(), conditions: [] }),
        403,
        'InvalidAccessKeyId',
      ],
      ['no signature', drop('x-amz-signature'), 400, 'InvalidArgument'],
      ['a signature without a policy', drop('policy'), 400, 'InvalidArgument'],
      [
        'another region',
        signedFields(target.account, 'eu-west-3', { expiration: soon(), conditions: [] }),
        400,
        'AuthorizationHeaderMalformed',
      ],
      [
        'SigV2',
        [
          ['AWSAccessKeyId', target.account.accessKeyId],
          ['signature', 'x'],
          ['policy', 'e30='],
        ],
        400,
        'InvalidRequest',
      ],
    ];
    for (const [what, fields, status, code] of cases) {
      const { status: got, code: named } = await errorOf(await post([['key', k], ...fields], { data: 'nope' }));
      expect([what, got, named]).toEqual([what, status, code]);
    }
    expect(await absent(s3, B, k)).toBe(true);
    // The good one goes through.
    expect((await post([['key', k], ...good], { data: 'yes' })).status).toBe(204);
  });

  test('malformed policies are InvalidPolicyDocument (400): bad JSON, bad expiration, no conditions, upper-case names, a bad range', async () => {
    const k = key('badpolicy');
    const cases: Array<[string, unknown]> = [
      ['not JSON', '{"expiration":'],
      ['bad expiration', { expiration: 'tomorrow', conditions: [] }],
      ['no expiration', { conditions: [] }],
      ['no conditions', { expiration: soon() }],
      ['EXPIRATION', { EXPIRATION: soon(), conditions: [] }],
      ['CONDITIONS', { expiration: soon(), CONDITIONS: [] }],
      ['empty', {}],
      ['range without a max', { expiration: soon(), conditions: [['content-length-range', 0]] }],
      ['negative range', { expiration: soon(), conditions: [['content-length-range', -1, 0]] }],
      ['unknown operator', { expiration: soon(), conditions: [['matches', '$key', '.*']] }],
    ];
    for (const [what, policy] of cases) {
      const res = await post([['key', k], ...own(policy)], { data: 'nope' });
      expect([what, await errorOf(res)]).toEqual([what, expect.objectContaining({ status: 400, code: 'InvalidPolicyDocument' })]);
    }
    expect(await absent(s3, B, k)).toBe(true);
  });

  test('content-length-range: larger is EntityTooLarge, smaller EntityTooSmall; neither stores or pins anything', async () => {
    const k = key('range');
    const fields = await presigned({ Key: k, Conditions: [['content-length-range', 5, 10]] });
    expect(await errorOf(await post(fields, { data: 'x'.repeat(11) }))).toMatchObject({ status: 400, code: 'EntityTooLarge' });
    const vector = vectorNamed('"badname\\n"');
    expect(
      await errorOf(await post(await presigned({ Key: k, Conditions: [['content-length-range', 100, 200]] }), { data: bytesOf(vector) })),
    ).toMatchObject({
      status: 400,
      code: 'EntityTooSmall',
    });
    expect(await absent(s3, B, k)).toBe(true);
    await target.whenLocal(async (service) => {
      await collectGarbage(service.services);
      const node = await service.services.ipfs();
      expect(await isRootPinned(node, CID.parse(vector.cidV0))).toBe(false);
      expect(await node.blockstore.has(CID.parse(vector.cidV0))).toBe(false);
    });
    expect((await post(fields, { data: 'x'.repeat(10) })).status).toBe(204);
  });

  test('a checksum field is verified: the right one is stored, a wrong one is BadDigest and stores nothing', async () => {
    const k = key('checksum');
    const sha = (text: string) => createHash('sha256').update(text).digest('base64');
    const with_ = async (value: string) =>
      presigned({ Key: k, Conditions: [{ 'x-amz-checksum-sha256': value }], Fields: { 'x-amz-checksum-sha256': value } });
    expect(await errorOf(await post(await with_(sha('other')), { data: 'checked' }))).toMatchObject({ status: 400, code: 'BadDigest' });
    expect(await absent(s3, B, k)).toBe(true);
    const res = await post(await with_(sha('checked')), { data: 'checked' });
    expect(res.status).toBe(204);
    const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: k, ChecksumMode: 'ENABLED' }));
    expect(head.ChecksumSHA256).toBe(sha('checked'));
  });

  test('a form asking for server-side encryption or object lock is NotImplemented, as PutObject is, and stores nothing', async () => {
    for (const [name, value] of [
      ['x-amz-server-side-encryption', 'AES256'],
      ['x-amz-object-lock-mode', 'GOVERNANCE'],
    ]) {
      const k = key('unsupported');
      const fields = await presigned({ Key: k, Conditions: [{ [name]: value }], Fields: { [name]: value } });
      expect([name, await errorOf(await post(fields, { data: 'kept out' }))]).toMatchObject([
        name,
        { status: 501, code: 'NotImplemented' },
      ]);
      expect(await absent(s3, B, k)).toBe(true);
    }
  });

  test('without a key, a file, or multipart/form-data: 400 and 412, as S3 answers', async () => {
    const fields = own({ expiration: soon(), conditions: [] });
    expect(await errorOf(await post(fields, { data: 'x' }))).toMatchObject({
      status: 400,
      code: 'InvalidArgument',
      message: expect.stringMatching(/field named 'key'/),
    });
    expect(await errorOf(await post([['key', key('nofile')], ...fields]))).toMatchObject({ status: 400, code: 'InvalidArgument' });
    const plain = await door.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'key=a',
    });
    expect(await errorOf(plain)).toMatchObject({ status: 412, code: 'PreconditionFailed' });
    // To a bucket that does not exist.
    const nowhere = url.replace(`/${B}`, `/no-such-bucket-${RUN}`);
    expect(await errorOf(await post([['key', 'k'], ...fields], { data: 'x' }, { to: nowhere }))).toMatchObject({
      status: 404,
      code: 'NoSuchBucket',
    });
  });

  test('hostile bodies end quickly in a clear error: a huge field, thousands of fields, a body that never closes, a bad boundary', async () => {
    const k = key('hostile');
    const started = Date.now();
    const huge = await post(
      [
        ['key', k],
        ['x-amz-meta-big', 'a'.repeat(1024 * 1024)],
      ],
      { data: 'x' },
    );
    expect(await errorOf(huge)).toMatchObject({ status: 400, code: 'MaxPostPreDataLengthExceededError' });
    const many = await post(
      Array.from({ length: 5000 }, (_, i): Field => [`x-amz-meta-f${i}`, 'v']),
      { data: 'x' },
    );
    expect(await errorOf(many)).toMatchObject({ status: 400, code: 'MaxPostPreDataLengthExceededError' });
    const open = Buffer.concat([
      formBody(await presigned({ Key: k })).subarray(0, -`--${BOUNDARY}--\r\n`.length),
      Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n`),
      Buffer.alloc(100_000, 'z'),
    ]);
    const unclosed = await door.fetch(url, { method: 'POST', headers: { 'content-type': FORM_TYPE }, body: new Uint8Array(open) });
    expect(await errorOf(unclosed)).toMatchObject({ status: 400, code: 'MalformedPOSTRequest' });
    const header = await door.fetch(url, {
      method: 'POST',
      headers: { 'content-type': FORM_TYPE },
      body: new Uint8Array(Buffer.from(`--${BOUNDARY}\r\n${'X-Header: y\r\n'.repeat(2000)}`)),
    });
    expect(await errorOf(header)).toMatchObject({ status: 400, code: 'MalformedPOSTRequest' });
    const noBoundary = await door.fetch(url, { method: 'POST', headers: { 'content-type': 'multipart/form-data' }, body: 'x' });
    expect(await errorOf(noBoundary)).toMatchObject({ status: 400, code: 'MalformedPOSTRequest' });
    expect(await absent(s3, B, k)).toBe(true);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  test('a file full of near-boundaries is stored byte for byte, in time linear in its size', async () => {
    const k = key('nearly');
    // Every line almost the delimiter: the search must not restart at each one.
    const line = `\r\n--${BOUNDARY.slice(0, -1)}`;
    const data = Buffer.from(line.repeat(Math.ceil((2 * 1024 * 1024) / line.length)));
    const fields = await presigned({ Key: k });
    const started = Date.now();
    const res = await post(fields, { data });
    expect(res.status).toBe(204);
    expect(Date.now() - started).toBeLessThan(15_000);
    const got = Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: B, Key: k }))).Body!.transformToByteArray());
    expect(got.equals(data)).toBe(true);
  });

  test('an anonymous POST is stored where a bucket policy allows s3:PutObject, and refused where nothing does', async () => {
    const bucket = `post-anon-${door.tag}-${RUN}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const to = url.replace(`/${B}`, `/${bucket}`);
    const k = key('anon');
    expect(await errorOf(await post([['key', k]], { data: 'anonymous' }, { to }))).toMatchObject({ status: 403, code: 'AccessDenied' });
    expect(await absent(s3, bucket, k)).toBe(true);
    await s3.send(
      new PutBucketPolicyCommand({
        Bucket: bucket,
        Policy: JSON.stringify({
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Principal: '*', Action: 's3:PutObject', Resource: `arn:aws:s3:::${bucket}/public/*` }],
        }),
      }),
    );
    // The policy's resource decides on the key the form names.
    expect(await errorOf(await post([['key', k]], { data: 'anonymous' }, { to }))).toMatchObject({ status: 403, code: 'AccessDenied' });
    const res = await post(
      [
        ['key', `public/${k}`],
        ['Content-Type', 'text/plain'],
      ],
      { data: 'anonymous' },
      { to },
    );
    expect(res.status).toBe(204);
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `public/${k}` }));
    expect([await got.Body!.transformToString(), got.ContentType]).toEqual(['anonymous', 'text/plain']);
  });

  test("the bucket's CORS rules answer a POST from another origin", async () => {
    const bucket = `post-cors-${door.tag}-${RUN}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3.send(
      new PutBucketCorsCommand({
        Bucket: bucket,
        CORSConfiguration: {
          CORSRules: [{ AllowedOrigins: ['https://uploads.example'], AllowedMethods: ['POST'], ExposeHeaders: ['ETag'] }],
        },
      }),
    );
    const to = url.replace(`/${B}`, `/${bucket}`);
    const { fields } = await createPresignedPost(s3, { Bucket: bucket, Key: key('cors') });
    const res = await post(Object.entries(fields), { data: 'cors' }, { to, headers: { origin: 'https://uploads.example' } });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://uploads.example');
    expect(res.headers.get('access-control-expose-headers')).toBe('ETag');
    const refused = await post([['key', 'x']], { data: 'cors' }, { to, headers: { origin: 'https://uploads.example' } });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBe('https://uploads.example');
    const elsewhere = await post(Object.entries(fields), { data: 'cors' }, { to, headers: { origin: 'https://evil.example' } });
    expect(elsewhere.headers.get('access-control-allow-origin')).toBeNull();
  });
});
