/**
 * ListBuckets' paging through each door with the real @aws-sdk/client-s3,
 * as the ListBuckets API reference has it since 2024 (`max-buckets` 1 to
 * 10,000, an opaque `continuation-token` given only while buckets follow,
 * `prefix` echoed, `bucket-region`) and ceph's s3-tests check it
 * (test_list_buckets_paginated): the default bucket first, then names in
 * order, every bucket once across the pages, bad arguments refused with
 * InvalidArgument.
 */
import { CreateBucketCommand, ListBucketsCommand, type S3Client } from '@aws-sdk/client-s3';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { s3Doors } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const RUN = Date.now().toString(36);

beforeAll(async () => {
  target = await apiTarget();
});

afterAll(async () => {
  await target?.close();
});

describe.each(doorsFor(s3Doors(() => target)))('ListBuckets through the $name', (door) => {
  let s3: S3Client;
  const prefix = `lb-${door.tag}-${RUN}-`;
  const names = ['c', 'a', 'e', 'b', 'd'].map((n) => `${prefix}${n}`);
  beforeAll(async () => {
    s3 = door.client();
    for (const Bucket of names) await s3.send(new CreateBucketCommand({ Bucket }));
  });

  test('pages of max-buckets in name order, each bucket once; a token only while more follow (test_list_buckets_paginated)', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const out = await s3.send(new ListBucketsCommand({ MaxBuckets: 2, Prefix: prefix, ContinuationToken: token }));
      expect(out.Prefix).toBe(prefix);
      expect(out.Buckets!.length).toBeLessThanOrEqual(2);
      seen.push(...out.Buckets!.map((b) => b.Name!));
      token = out.ContinuationToken;
      pages += 1;
    } while (token && pages < 10);
    expect(seen).toEqual([...names].sort());
    expect(pages).toBe(3);
    // Exactly a page's worth left: no token after it.
    const last = await s3.send(new ListBucketsCommand({ MaxBuckets: 5, Prefix: prefix }));
    expect(last.Buckets!.map((b) => b.Name)).toEqual([...names].sort());
    expect(last.ContinuationToken).toBeUndefined();
  });

  test('without max-buckets every bucket comes, the account default one too; another region has none', async () => {
    const all = await s3.send(new ListBucketsCommand({}));
    const listed = all.Buckets!.map((b) => b.Name!);
    expect(listed).toEqual(expect.arrayContaining([...names, target.account.bucket]));
    // The default bucket first (the storage SDKs take the first as the default), then by name.
    expect(listed[0]).toBe(target.account.bucket);
    expect(listed.slice(1)).toEqual([...listed.slice(1)].sort());
    expect(all.ContinuationToken).toBeUndefined();
    expect(all.Prefix).toBeUndefined();
    const elsewhere = await s3.send(new ListBucketsCommand({ BucketRegion: 'eu-west-3' }));
    expect(elsewhere.Buckets ?? []).toEqual([]);
  });

  test.each([
    ['max-buckets 0', { MaxBuckets: 0 }],
    ['max-buckets 10001', { MaxBuckets: 10_001 }],
    ['a token that is no name', { ContinuationToken: 'not*a*token' }],
    ['a token of a bucket name that cannot be', { ContinuationToken: Buffer.from('1#UPPER_case').toString('base64url') }],
    ['a token of a bare name', { ContinuationToken: Buffer.from('some-bucket').toString('base64url') }],
  ])('%s is InvalidArgument (400)', async (_name, input) => {
    const err = await s3.send(new ListBucketsCommand(input)).then(
      () => undefined,
      (e: { name: string; $metadata: { httpStatusCode?: number } }) => e,
    );
    expect([err?.$metadata.httpStatusCode, err?.name]).toEqual([400, 'InvalidArgument']);
  });
});
