/**
 * Lifecycle configuration through each door with the real
 * @aws-sdk/client-s3: PutBucketLifecycleConfiguration /
 * GetBucketLifecycleConfiguration / DeleteBucketLifecycle with S3's shapes
 * and errors (API_PutBucketLifecycleConfiguration.html, ceph's s3-tests
 * test_lifecycle_set*, _id_too_long, _same_id, _invalid_status,
 * _set_invalid_date, _expiration_days0, _expiration_header_*), and the
 * answers that announce a rule: `x-amz-expiration` on PUT/GET/HEAD,
 * `x-amz-abort-date` / `x-amz-abort-rule-id` on CreateMultipartUpload.
 * The expiry run itself is test/components/s3-lifecycle-run.test.ts.
 */
import {
  CreateBucketCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListPartsCommand,
  DeleteBucketLifecycleCommand,
  GetBucketLifecycleConfigurationCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketLifecycleConfigurationCommand,
  PutBucketPolicyCommand,
  PutObjectCommand,
  type LifecycleRule,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { failure, s3Doors, uploadParts } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const RUN = Date.now().toString(36);
const DAY = 86_400_000;

beforeAll(async () => {
  target = await apiTarget();
});

afterAll(async () => {
  await target?.close();
});

/**
 * Sends `body` in place of the command's own XML (the SDK writes only valid
 * documents), with its Content-MD5 (`md5: 'none'` sends none, `'wrong'` another body's).
 */
function withBody(s3: S3Client, body: string, { md5 = 'right' }: { md5?: 'right' | 'none' | 'wrong' } = {}): S3Client {
  s3.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers: Record<string, string>; body: unknown };
      request.body = body;
      request.headers['content-length'] = String(Buffer.byteLength(body));
      for (const name of Object.keys(request.headers))
        if (/^(content-md5|x-amz-checksum-|x-amz-sdk-checksum|x-amz-trailer)/i.test(name)) delete request.headers[name];
      if (md5 !== 'none')
        request.headers['content-md5'] = createHash('md5')
          .update(md5 === 'right' ? body : `${body} `)
          .digest('base64');
      return next(args);
    },
    { step: 'build', priority: 'low' },
  );
  return s3;
}

const doc = (rules: string) => `<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${rules}</LifecycleConfiguration>`;
const rule = (inner: string) => `<Rule>${inner}</Rule>`;
const days1 = '<Expiration><Days>1</Days></Expiration>';
const plain = (id: string, more = days1) => rule(`<ID>${id}</ID><Filter><Prefix>p/</Prefix></Filter><Status>Enabled</Status>${more}`);
/** A document of one plain rule whose action is `action`. */
const withAction = (action: string) => doc(plain('a', action));
/** The status S3 answers each error code with (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html#ErrorCodeList). */
const REFUSAL_STATUS = {
  MalformedXML: 400,
  InvalidArgument: 400,
  InvalidRequest: 400,
  InvalidTag: 400,
  MaxMessageLengthExceeded: 400,
  NotImplemented: 501,
} as const;
type RefusalCode = keyof typeof REFUSAL_STATUS;

/** Every shape S3 answers back: each filter form, the deprecated Prefix, each action. */
const EVERY_SHAPE: LifecycleRule[] = [
  { ID: 'days-by-prefix', Filter: { Prefix: 'logs/' }, Status: 'Enabled', Expiration: { Days: 30 } },
  {
    ID: 'date-by-tag',
    Filter: { Tag: { Key: 'class', Value: 'temp' } },
    Status: 'Enabled',
    Expiration: { Date: new Date('2031-01-01T00:00:00Z') },
  },
  {
    ID: 'and',
    Filter: {
      And: {
        Prefix: 'media/',
        Tags: [
          { Key: 'a', Value: '1' },
          { Key: 'b', Value: '' },
        ],
        ObjectSizeGreaterThan: 10,
        ObjectSizeLessThan: 1000,
      },
    },
    Status: 'Enabled',
    NoncurrentVersionExpiration: { NoncurrentDays: 7, NewerNoncurrentVersions: 3 },
  },
  { ID: 'size-only', Filter: { ObjectSizeGreaterThan: 1048576 }, Status: 'Disabled', Expiration: { Days: 1 } },
  { ID: 'markers', Filter: { Prefix: '' }, Status: 'Enabled', Expiration: { ExpiredObjectDeleteMarker: true } },
  { ID: 'uploads', Filter: {}, Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 2 } },
  { ID: 'legacy-prefix', Prefix: 'old/', Status: 'Enabled', NoncurrentVersionExpiration: { NoncurrentDays: 1 } },
];

describe.each(doorsFor(s3Doors(() => target)))('lifecycle configuration through the $name', (door) => {
  let s3: S3Client;
  const bucket = `lc-${door.tag}-${RUN}`;
  beforeAll(async () => {
    s3 = door.client();
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  const get = () => s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }));

  test('none at first (NoSuchLifecycleConfiguration); PUT, then GET answers every shape as given; DELETE removes it', async () => {
    const none = await failure(get());
    expect(none).toMatchObject({ name: 'NoSuchLifecycleConfiguration', $metadata: { httpStatusCode: 404 } });
    const put = await s3.send(
      new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: { Rules: EVERY_SHAPE } }),
    );
    expect(put.TransitionDefaultMinimumObjectSize).toBe('all_storage_classes_128K');
    const got = await get();
    expect(got.Rules).toEqual(EVERY_SHAPE);
    expect(got.TransitionDefaultMinimumObjectSize).toBe('all_storage_classes_128K');
    // A new configuration replaces the whole of the old one.
    await s3.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket: bucket,
        LifecycleConfiguration: { Rules: [EVERY_SHAPE[0]!] },
        TransitionDefaultMinimumObjectSize: 'varies_by_storage_class',
      }),
    );
    const replaced = await get();
    expect(replaced.Rules).toEqual([EVERY_SHAPE[0]]);
    expect(replaced.TransitionDefaultMinimumObjectSize).toBe('varies_by_storage_class');
    expect((await s3.send(new DeleteBucketLifecycleCommand({ Bucket: bucket }))).$metadata.httpStatusCode).toBe(204);
    expect(await failure(get())).toMatchObject({ name: 'NoSuchLifecycleConfiguration' });
  });

  test('PUT needs Content-MD5 or a checksum (InvalidRequest), which must match (BadDigest); either way the rules in place stay', async () => {
    const body = doc(plain('kept'));
    await withBody(door.client(), body).send(
      new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: { Rules: [] } }),
    );
    const other = doc(plain('other'));
    const missing = await failure(
      withBody(door.client(), other, { md5: 'none' }).send(
        new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: { Rules: [] } }),
      ),
    );
    expect(missing).toMatchObject({ name: 'InvalidRequest', message: 'Missing required header for this request: Content-MD5' });
    expect(missing.$metadata.httpStatusCode).toBe(400);
    const wrong = await failure(
      withBody(door.client(), other, { md5: 'wrong' }).send(
        new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: { Rules: [] } }),
      ),
    );
    expect(wrong).toMatchObject({ name: 'BadDigest', $metadata: { httpStatusCode: 400 } });
    expect((await get()).Rules!.map((r) => r.ID)).toEqual(['kept']);
    await s3.send(new DeleteBucketLifecycleCommand({ Bucket: bucket }));
  });

  test('a rule without an ID is given one; 1,000 rules are taken', async () => {
    const name = `lc-many-${door.tag}-${RUN}`;
    await s3.send(new CreateBucketCommand({ Bucket: name }));
    const rules = Array.from({ length: 1000 }, (_, i) => ({
      ID: `r${i}`,
      Filter: { Prefix: `p${i}/` },
      Status: 'Enabled',
      Expiration: { Days: 1 + i },
    }));
    await s3.send(
      new PutBucketLifecycleConfigurationCommand({ Bucket: name, LifecycleConfiguration: { Rules: rules as LifecycleRule[] } }),
    );
    expect((await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: name }))).Rules).toHaveLength(1000);
    await withBody(door.client(), doc(rule('<Filter/><Status>Enabled</Status>' + days1))).send(
      new PutBucketLifecycleConfigurationCommand({ Bucket: name, LifecycleConfiguration: { Rules: [] } }),
    );
    const [only] = (await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: name }))).Rules!;
    expect(only!.ID).toMatch(/^\S{8,}$/);
    expect(only).toMatchObject({ Filter: {}, Status: 'Enabled', Expiration: { Days: 1 } });
  });

  describe('what S3 refuses is refused with its error, and the configuration in place stays', () => {
    const PLACED: LifecycleRule[] = [{ ID: 'placed', Filter: { Prefix: 'keep/' }, Status: 'Enabled', Expiration: { Days: 9 } }];
    beforeAll(async () => {
      await s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: { Rules: PLACED } }));
    });
    const tag = '<Tag><Key>k</Key><Value>v</Value></Tag>';
    test.each<[string, RefusalCode, string]>([
      ['not XML', 'MalformedXML', 'lifecycle, please'],
      ['no rule', 'MalformedXML', doc('')],
      ['another root', 'MalformedXML', `<Lifecycle>${plain('a')}</Lifecycle>`],
      ['a Status in lower case', 'MalformedXML', doc(rule(`<ID>a</ID><Filter/><Status>enabled</Status>${days1}`))],
      ['both Filter and Prefix', 'MalformedXML', doc(rule(`<ID>a</ID><Prefix>x</Prefix><Filter/><Status>Enabled</Status>${days1}`))],
      ['neither Filter nor Prefix', 'MalformedXML', doc(rule(`<ID>a</ID><Status>Enabled</Status>${days1}`))],
      [
        'a Filter of Prefix and Tag without And',
        'MalformedXML',
        doc(rule(`<Filter><Prefix>x</Prefix>${tag}</Filter><Status>Enabled</Status>${days1}`)),
      ],
      // S3 refuses these too ("exactly one of Prefix, Tag, ObjectSizeGreaterThan, ObjectSizeLessThan, or And":
      // API_LifecycleRuleFilter.html); they are the shapes of ceph's *_tags*, *_size_* cases, which RGW takes.
      [
        'a Filter of Prefix and ObjectSizeGreaterThan without And',
        'MalformedXML',
        doc(rule(`<Filter><Prefix></Prefix><ObjectSizeGreaterThan>2000</ObjectSizeGreaterThan></Filter><Status>Enabled</Status>${days1}`)),
      ],
      [
        'a Filter of Prefix, Tag and And',
        'MalformedXML',
        doc(rule(`<Filter><Prefix>x</Prefix>${tag}<And><Prefix>y</Prefix>${tag}</And></Filter><Status>Enabled</Status>${days1}`)),
      ],
      ['an unknown element in a rule', 'MalformedXML', withAction(`${days1}<Colour>red</Colour>`)],
      ['both Days and Date', 'MalformedXML', withAction('<Expiration><Days>1</Days><Date>2031-01-01T00:00:00Z</Date></Expiration>')],
      ['Days that are not a number', 'MalformedXML', withAction('<Expiration><Days>soon</Days></Expiration>')],
      [
        'ExpiredObjectDeleteMarker with Days',
        'MalformedXML',
        withAction('<Expiration><Days>1</Days><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>'),
      ],
      ['Days 0', 'InvalidArgument', withAction('<Expiration><Days>0</Days></Expiration>')],
      ['a Date not at midnight', 'InvalidArgument', withAction('<Expiration><Date>2031-01-01T12:00:00Z</Date></Expiration>')],
      ['a Date that is no date', 'InvalidArgument', withAction('<Expiration><Date>20200101</Date></Expiration>')],
      ['an ID of 256 characters', 'InvalidArgument', doc(plain('x'.repeat(256)))],
      ['the same ID twice', 'InvalidArgument', doc(plain('twin') + plain('twin'))],
      [
        'NoncurrentDays 0',
        'InvalidArgument',
        withAction('<NoncurrentVersionExpiration><NoncurrentDays>0</NoncurrentDays></NoncurrentVersionExpiration>'),
      ],
      [
        'NewerNoncurrentVersions 101',
        'InvalidArgument',
        withAction(
          '<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101</NewerNoncurrentVersions></NoncurrentVersionExpiration>',
        ),
      ],
      [
        'DaysAfterInitiation 0',
        'InvalidArgument',
        withAction('<AbortIncompleteMultipartUpload><DaysAfterInitiation>0</DaysAfterInitiation></AbortIncompleteMultipartUpload>'),
      ],
      ['1,001 rules', 'InvalidRequest', doc(Array.from({ length: 1001 }, (_, i) => plain(`r${i}`)).join(''))],
      ['a rule with no action', 'InvalidRequest', doc(rule('<ID>a</ID><Filter/><Status>Enabled</Status>'))],
      [
        'AbortIncompleteMultipartUpload with a tag filter',
        'InvalidRequest',
        doc(
          rule(
            `<Filter>${tag}</Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>`,
          ),
        ),
      ],
      [
        'ObjectSizeGreaterThan not below ObjectSizeLessThan',
        'InvalidRequest',
        doc(
          rule(
            `<Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>10</ObjectSizeLessThan></And></Filter><Status>Enabled</Status>${days1}`,
          ),
        ),
      ],
      [
        'a tag key with aws:',
        'InvalidTag',
        doc(rule(`<Filter><Tag><Key>aws:x</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status>${days1}`)),
      ],
      [
        'a Transition (one storage class)',
        'NotImplemented',
        withAction('<Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition>'),
      ],
      // A malformed transition is S3's 400 (ceph's test_lifecycle_transition_set_invalid_date), not NotImplemented.
      [
        'a Transition whose Date is not at midnight',
        'InvalidArgument',
        withAction('<Transition><Date>1970-08-23T01:35:27Z</Date><StorageClass>GLACIER</StorageClass></Transition>'),
      ],
      ['a Transition without a StorageClass', 'MalformedXML', withAction('<Transition><Days>30</Days></Transition>')],
      [
        'a Transition with both Days and Date',
        'MalformedXML',
        withAction('<Transition><Days>1</Days><Date>2031-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass></Transition>'),
      ],
      [
        'a NoncurrentVersionTransition of -1 days',
        'InvalidArgument',
        withAction(
          '<NoncurrentVersionTransition><NoncurrentDays>-1</NoncurrentDays><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition>',
        ),
      ],
      [
        'a NoncurrentVersionTransition (one storage class)',
        'NotImplemented',
        withAction(
          '<NoncurrentVersionTransition><NoncurrentDays>0</NoncurrentDays><StorageClass>DEEP_ARCHIVE</StorageClass></NoncurrentVersionTransition>',
        ),
      ],
      ['a body over 256 KiB', 'MaxMessageLengthExceeded', doc(`<!--${'x'.repeat(256 * 1024)}-->${plain('a')}`)],
    ])('%s is %s', async (_, code, body) => {
      const err = await failure(
        withBody(door.client(), body).send(
          new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: { Rules: [] } }),
        ),
      );
      expect(err).toMatchObject({ name: code, $metadata: { httpStatusCode: REFUSAL_STATUS[code] } });
      expect((await get()).Rules).toEqual(PLACED);
    });

    test('an unknown x-amz-transition-default-minimum-object-size is InvalidArgument', async () => {
      const err = await failure(
        s3.send(
          new PutBucketLifecycleConfigurationCommand({
            Bucket: bucket,
            LifecycleConfiguration: { Rules: PLACED },
            TransitionDefaultMinimumObjectSize: 'tiny' as never,
          }),
        ),
      );
      expect(err).toMatchObject({ name: 'InvalidArgument', $metadata: { httpStatusCode: 400 } });
    });
  });

  test('only the owner, or whom the bucket policy grants s3:GetLifecycleConfiguration, reads it; granting Get does not grant Put', async () => {
    const name = `lc-policy-${door.tag}-${RUN}`;
    await s3.send(new CreateBucketCommand({ Bucket: name }));
    await s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket: name, LifecycleConfiguration: { Rules: [EVERY_SHAPE[0]!] } }));
    const other = door.client(target.other);
    const asOther = () => other.send(new GetBucketLifecycleConfigurationCommand({ Bucket: name }));
    expect(await failure(asOther())).toMatchObject({ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
    await s3.send(
      new PutBucketPolicyCommand({
        Bucket: name,
        Policy: JSON.stringify({
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Principal: '*', Action: 's3:GetLifecycleConfiguration', Resource: `arn:aws:s3:::${name}` }],
        }),
      }),
    );
    expect((await asOther()).Rules).toEqual([EVERY_SHAPE[0]]);
    expect(await failure(other.send(new DeleteBucketLifecycleCommand({ Bucket: name })))).toMatchObject({ name: 'AccessDenied' });
    expect(
      await failure(
        other.send(new PutBucketLifecycleConfigurationCommand({ Bucket: name, LifecycleConfiguration: { Rules: EVERY_SHAPE } })),
      ),
    ).toMatchObject({ name: 'AccessDenied' });
    expect((await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: name }))).Rules).toEqual([EVERY_SHAPE[0]]);
  });

  test('objects a rule applies to answer x-amz-expiration (next midnight UTC after creation + days) on PUT, GET and HEAD; uploads x-amz-abort-date', async () => {
    const name = `lc-headers-${door.tag}-${RUN}`;
    await s3.send(new CreateBucketCommand({ Bucket: name }));
    await s3.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket: name,
        LifecycleConfiguration: {
          Rules: [
            { ID: 'ten "days"', Filter: { Prefix: 'tmp/' }, Status: 'Enabled', Expiration: { Days: 10 } },
            {
              ID: 'three-ü',
              Filter: { And: { Prefix: 'tmp/', Tags: [{ Key: 'short', Value: 'yes' }] } },
              Status: 'Enabled',
              Expiration: { Days: 3 },
            },
            { ID: 'off', Filter: { Prefix: '' }, Status: 'Disabled', Expiration: { Days: 1 } },
            { ID: 'abort', Filter: { Prefix: 'up/' }, Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 2 } },
          ],
        },
      }),
    );
    const midnightAfter = (at: Date, days: number) => new Date(Math.ceil((at.getTime() + days * DAY) / DAY) * DAY).toUTCString();
    const put = await s3.send(new PutObjectCommand({ Bucket: name, Key: 'tmp/a', Body: 'a' }));
    const head = await s3.send(new HeadObjectCommand({ Bucket: name, Key: 'tmp/a' }));
    const created = new Date(head.LastModified!.getTime() + 999);
    expect(put.Expiration).toBe(`expiry-date="${midnightAfter(created, 10)}", rule-id="ten \\"days\\""`);
    expect(head.Expiration).toBe(put.Expiration);
    expect((await s3.send(new GetObjectCommand({ Bucket: name, Key: 'tmp/a' }))).Expiration).toBe(put.Expiration);
    // The earliest of the rules that apply.
    const tagged = await s3.send(new PutObjectCommand({ Bucket: name, Key: 'tmp/b', Body: 'b', Tagging: 'short=yes' }));
    // A character a header cannot carry is percent-encoded.
    expect(tagged.Expiration).toBe(`expiry-date="${midnightAfter(created, 3)}", rule-id="three-%C3%BC"`);
    // None applies (the disabled rule does not count).
    expect((await s3.send(new PutObjectCommand({ Bucket: name, Key: 'keep/c', Body: 'c' }))).Expiration).toBeUndefined();
    expect((await s3.send(new HeadObjectCommand({ Bucket: name, Key: 'keep/c' }))).Expiration).toBeUndefined();

    const before = Date.now();
    const upload = await s3.send(new CreateMultipartUploadCommand({ Bucket: name, Key: 'up/big' }));
    expect(upload.AbortRuleId).toBe('abort');
    expect(upload.AbortDate!.getTime() % DAY).toBe(0);
    expect(upload.AbortDate!.getTime()).toBeGreaterThan(before + 2 * DAY - 1000);
    expect(upload.AbortDate!.getTime()).toBeLessThanOrEqual(before + 3 * DAY + 1000);
    // ListParts says the same of the upload.
    const listed = await s3.send(new ListPartsCommand({ Bucket: name, Key: 'up/big', UploadId: upload.UploadId }));
    expect(listed.AbortRuleId).toBe('abort');
    expect(listed.AbortDate).toEqual(upload.AbortDate);
    // CompleteMultipartUpload announces the object's expiry as PutObject does.
    const mp = await s3.send(new CreateMultipartUploadCommand({ Bucket: name, Key: 'tmp/mp' }));
    const parts = await uploadParts(s3, { Bucket: name, Key: 'tmp/mp', UploadId: mp.UploadId }, [Buffer.from('one part')]);
    const done = await s3.send(
      new CompleteMultipartUploadCommand({ Bucket: name, Key: 'tmp/mp', UploadId: mp.UploadId, MultipartUpload: { Parts: parts } }),
    );
    const mpHead = await s3.send(new HeadObjectCommand({ Bucket: name, Key: 'tmp/mp' }));
    expect(done.Expiration).toBe(
      `expiry-date="${midnightAfter(new Date(mpHead.LastModified!.getTime() + 999), 10)}", rule-id="ten \\"days\\""`,
    );
    // A GET or HEAD by versionId of the current version announces it too.
    const byId = await s3.send(new HeadObjectCommand({ Bucket: name, Key: 'tmp/mp', VersionId: 'null' }));
    expect(byId.Expiration).toBe(done.Expiration);
    // Days as large as S3's schema takes reach past any date a header can carry: none is announced, and nothing fails.
    await s3.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket: name,
        LifecycleConfiguration: {
          Rules: [
            { ID: 'ages', Filter: { Prefix: 'tmp/' }, Status: 'Enabled', Expiration: { Days: 2 ** 31 - 1 } },
            {
              ID: 'ages-up',
              Filter: { Prefix: 'up/' },
              Status: 'Enabled',
              AbortIncompleteMultipartUpload: { DaysAfterInitiation: 2 ** 31 - 1 },
            },
          ],
        },
      }),
    );
    expect((await s3.send(new PutObjectCommand({ Bucket: name, Key: 'tmp/far', Body: 'f' }))).Expiration).toBeUndefined();
    expect((await s3.send(new CreateMultipartUploadCommand({ Bucket: name, Key: 'up/far' }))).AbortDate).toBeUndefined();
    const other = await s3.send(new CreateMultipartUploadCommand({ Bucket: name, Key: 'else/big' }));
    expect(other.AbortRuleId).toBeUndefined();
    expect(other.AbortDate).toBeUndefined();
  });
});
