/**
 * The lifecycle expiry run against the service's real stores: rules are put
 * and objects written through the S3 API (the real SDK), the run is called
 * with a clock moved forward (S3 counts days), and what it did is read back
 * through the API: current versions expired (deleted, or hidden behind a
 * delete marker in a versioned or suspended bucket), noncurrent versions
 * deleted keeping the newest, lone delete markers removed, incomplete
 * uploads aborted, filters by prefix, tag and size, a bucket larger than
 * one call's budget finished over several calls, and garbage collection
 * then freeing the blocks of what expired. Also through the deploy
 * worker's scheduled tick, which runs it in AWS.
 */
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  PutBucketLifecycleConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
  type LifecycleRule,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { startTestService, type TestService } from '../support/service.js';
import { captureHeaders } from '../support/s3-doors.js';
import { waitFor } from '../support/wait.js';
import { expireByLifecycle } from '../../functions/core/storage/lifecycle.js';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { parseCid } from '../../functions/core/ipfs/cid.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_S3_MIN_PART_SIZE: '0' });
});
afterAll(async () => {
  await service.close();
});

const DAY = 86_400_000;
const inDays = (days: number) => new Date(Date.now() + days * DAY);
let buckets = 0;

async function bucketWith(rules: LifecycleRule[], versioning?: 'Enabled' | 'Suspended'): Promise<string> {
  const name = `lc-run-${++buckets}-${Date.now().toString(36)}`;
  const s3 = service.s3();
  await s3.send(new CreateBucketCommand({ Bucket: name }));
  if (versioning) await s3.send(new PutBucketVersioningCommand({ Bucket: name, VersioningConfiguration: { Status: versioning } }));
  await s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket: name, LifecycleConfiguration: { Rules: rules } }));
  return name;
}

async function put(bucket: string, key: string, body: string | Buffer = key, Tagging?: string) {
  const s3 = service.s3();
  const seen = captureHeaders(s3);
  const out = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ...(Tagging ? { Tagging } : {}) }));
  return { versionId: out.VersionId, cid: parseCid(seen.headers['x-service-ipfs-hash-v0']!)! };
}

async function keys(bucket: string): Promise<string[]> {
  const out = await service.s3().send(new ListObjectsV2Command({ Bucket: bucket }));
  return (out.Contents ?? []).map((c) => c.Key!);
}

async function versions(bucket: string) {
  const out = await service.s3().send(new ListObjectVersionsCommand({ Bucket: bucket }));
  return [
    ...(out.Versions ?? []).map((v) => ({ key: v.Key!, id: v.VersionId!, latest: v.IsLatest!, marker: false })),
    ...(out.DeleteMarkers ?? []).map((m) => ({ key: m.Key!, id: m.VersionId!, latest: m.IsLatest!, marker: true })),
  ];
}

/** Runs the rules over every bucket at `now` until every pass is done (a generous budget per call). */
async function runAt(now: Date) {
  let total = { expired: 0, noncurrentDeleted: 0, markersRemoved: 0, uploadsAborted: 0, failed: 0 };
  for (let i = 0; i < 50; i++) {
    const r = await expireByLifecycle(service.services, { now });
    total = {
      expired: total.expired + r.expired,
      noncurrentDeleted: total.noncurrentDeleted + r.noncurrentDeleted,
      markersRemoved: total.markersRemoved + r.markersRemoved,
      uploadsAborted: total.uploadsAborted + r.uploadsAborted,
      failed: total.failed + r.failed,
    };
    if (r.buckets === 0) return total;
  }
  throw new Error('the run did not finish');
}

const hasBlock = async (cid: ReturnType<typeof parseCid>) => (await service.services.ipfs()).blockstore.has(cid!);

test('unversioned: a current version past Days is deleted, not before; others stay; collection then frees its blocks', async () => {
  const b = await bucketWith([{ ID: 'old', Filter: { Prefix: 'old/' }, Status: 'Enabled', Expiration: { Days: 2 } }]);
  const gone = await put(b, 'old/a', randomBytes(3000));
  await put(b, 'keep/b');
  await runAt(inDays(1));
  expect(await keys(b)).toEqual(['keep/b', 'old/a']);
  const r = await runAt(inDays(3));
  expect(r.expired).toBe(1);
  expect(await keys(b)).toEqual(['keep/b']);
  expect(await hasBlock(gone.cid)).toBe(true);
  await collectGarbage(service.services);
  expect(await hasBlock(gone.cid)).toBe(false);
});

test('a Date rule expires what it applies to once the date has come; a Disabled rule does nothing', async () => {
  const midnight = new Date(Math.floor(Date.now() / DAY) * DAY + DAY);
  const b = await bucketWith([
    { ID: 'date', Filter: { Prefix: 'd/' }, Status: 'Enabled', Expiration: { Date: midnight } },
    { ID: 'off', Filter: { Prefix: '' }, Status: 'Disabled', Expiration: { Days: 1 } },
  ]);
  await put(b, 'd/1');
  await put(b, 'e/1');
  await runAt(new Date(midnight.getTime() - 1000));
  expect(await keys(b)).toEqual(['d/1', 'e/1']);
  await runAt(new Date(midnight.getTime() + 1000));
  expect(await keys(b)).toEqual(['e/1']);
  await runAt(inDays(30));
  expect(await keys(b)).toEqual(['e/1']);
});

test('versioned: expiring the current version makes a delete marker and keeps the version; suspended: a null marker', async () => {
  const rules: LifecycleRule[] = [{ ID: 'all', Filter: {}, Status: 'Enabled', Expiration: { Days: 1 } }];
  const enabled = await bucketWith(rules, 'Enabled');
  const v1 = await put(enabled, 'k');
  const suspended = await bucketWith(rules, 'Enabled');
  await put(suspended, 'k');
  await service.s3().send(new PutBucketVersioningCommand({ Bucket: suspended, VersioningConfiguration: { Status: 'Suspended' } }));
  const r = await runAt(inDays(2));
  expect(r.expired).toBe(2);
  expect(await keys(enabled)).toEqual([]);
  const ev = await versions(enabled);
  expect(ev).toHaveLength(2);
  expect(ev).toEqual(
    expect.arrayContaining([
      { key: 'k', id: v1.versionId, latest: false, marker: false },
      expect.objectContaining({ key: 'k', latest: true, marker: true }),
    ]),
  );
  const sv = await versions(suspended);
  expect(sv).toEqual(expect.arrayContaining([{ key: 'k', id: 'null', latest: true, marker: true }]));
  expect(sv.filter((v) => !v.marker)).toHaveLength(1);
  // The blocks of the hidden version stay: it is still a version.
  await collectGarbage(service.services);
  expect(await hasBlock(v1.cid)).toBe(true);
});

test('NoncurrentVersionExpiration deletes versions NoncurrentDays after they became noncurrent, keeping NewerNoncurrentVersions', async () => {
  const b = await bucketWith(
    [
      {
        ID: 'nc',
        Filter: { Prefix: '' },
        Status: 'Enabled',
        NoncurrentVersionExpiration: { NoncurrentDays: 1, NewerNoncurrentVersions: 1 },
      },
    ],
    'Enabled',
  );
  const written = [];
  for (let i = 0; i < 4; i++) written.push(await put(b, 'doc', `version ${i} ${randomBytes(8).toString('hex')}`));
  await put(b, 'other');
  await runAt(new Date());
  expect(await versions(b)).toHaveLength(5);
  const r = await runAt(inDays(2));
  expect(r.noncurrentDeleted).toBe(2);
  const left = (await versions(b)).filter((v) => v.key === 'doc');
  expect(left.map((v) => v.id)).toEqual([written[3]!.versionId, written[2]!.versionId]);
  await collectGarbage(service.services);
  expect(await hasBlock(written[0]!.cid)).toBe(false);
  expect(await hasBlock(written[1]!.cid)).toBe(false);
  expect(await hasBlock(written[2]!.cid)).toBe(true);
});

test('ExpiredObjectDeleteMarker removes a delete marker that is the only version left, not one with versions behind it', async () => {
  const b = await bucketWith(
    [{ ID: 'markers', Filter: { Prefix: '' }, Status: 'Enabled', Expiration: { ExpiredObjectDeleteMarker: true } }],
    'Enabled',
  );
  const s3 = service.s3();
  await s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'lone' }));
  await put(b, 'backed');
  await s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'backed' }));
  const r = await runAt(new Date());
  expect(r.markersRemoved).toBe(1);
  const left = await versions(b);
  expect(left.map((v) => [v.key, v.marker]).sort()).toEqual([
    ['backed', false],
    ['backed', true],
  ]);
});

test('Expiration Days also removes a lone delete marker once it is that old, not before, not with versions behind it, not under a tag filter', async () => {
  const b = await bucketWith(
    [
      {
        ID: 'days',
        Filter: { Prefix: 'd/' },
        Status: 'Enabled',
        Expiration: { Days: 2 },
        NoncurrentVersionExpiration: { NoncurrentDays: 1 },
      },
      { ID: 'tagged', Filter: { Tag: { Key: 'class', Value: 'temp' } }, Status: 'Enabled', Expiration: { Days: 1 } },
    ],
    'Enabled',
  );
  const s3 = service.s3();
  await s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'd/lone' }));
  await s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'x/lone' }));
  await put(b, 'd/backed');
  await s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'd/backed' }));
  const markers = async () => (await versions(b)).map((v) => [v.key, v.marker]).sort();
  expect((await runAt(inDays(1))).markersRemoved).toBe(0);
  expect(await markers()).toEqual([
    ['d/backed', false],
    ['d/backed', true],
    ['d/lone', true],
    ['x/lone', true],
  ]);
  // Two days on: the lone marker goes; the noncurrent version behind the other goes, its marker is not alone yet.
  const r = await runAt(inDays(3));
  expect([r.markersRemoved, r.noncurrentDeleted]).toEqual([1, 1]);
  expect(await markers()).toEqual([
    ['d/backed', true],
    ['x/lone', true],
  ]);
  // The next day's pass finds it alone and old enough; a marker has no tags, so the tag rule never takes one.
  expect((await runAt(inDays(4))).markersRemoved).toBe(1);
  expect(await markers()).toEqual([['x/lone', true]]);
});

test('filters: tags (every one, with And), object sizes, prefixes', async () => {
  const b = await bucketWith([
    {
      ID: 'tagged',
      Filter: {
        And: {
          Prefix: 't/',
          Tags: [
            { Key: 'class', Value: 'temp' },
            { Key: 'team', Value: 'a' },
          ],
        },
      },
      Status: 'Enabled',
      Expiration: { Days: 1 },
    },
    {
      ID: 'big',
      Filter: { And: { Prefix: 's/', ObjectSizeGreaterThan: 100, ObjectSizeLessThan: 1000 } },
      Status: 'Enabled',
      Expiration: { Days: 1 },
    },
  ]);
  await put(b, 't/both', 'x', 'class=temp&team=a');
  await put(b, 't/one', 'x', 'class=temp');
  await put(b, 'u/both', 'x', 'class=temp&team=a');
  await put(b, 's/small', 'x'.repeat(100));
  await put(b, 's/mid', 'x'.repeat(101));
  await put(b, 's/large', 'x'.repeat(1000));
  await runAt(inDays(2));
  expect(await keys(b)).toEqual(['s/large', 's/small', 't/one', 'u/both']);
});

test('AbortIncompleteMultipartUpload aborts uploads DaysAfterInitiation old under its prefix; their parts are freed', async () => {
  const b = await bucketWith([
    { ID: 'abort', Filter: { Prefix: 'up/' }, Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } },
  ]);
  const s3 = service.s3();
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'up/big' }));
  await s3.send(new UploadPartCommand({ Bucket: b, Key: 'up/big', UploadId, PartNumber: 1, Body: randomBytes(5000) }));
  const [stored] = await service.services.uploads.allParts(UploadId!);
  const part = parseCid(stored!.cid)!;
  expect(await hasBlock(part)).toBe(true);
  await s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'down/big' }));
  await runAt(new Date());
  expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: b }))).Uploads).toHaveLength(2);
  const r = await runAt(inDays(2));
  expect(r.uploadsAborted).toBe(1);
  expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: b }))).Uploads?.map((u) => u.Key)).toEqual(['down/big']);
  expect(await service.services.uploads.allParts(UploadId!)).toEqual([]);
  await collectGarbage(service.services);
  expect(await hasBlock(part)).toBe(false);
});

test('a bucket larger than one call budget finishes over several calls, each within it, resuming where the last stopped', async () => {
  const b = await bucketWith([{ ID: 'all', Filter: {}, Status: 'Enabled', Expiration: { Days: 1 } }]);
  for (let i = 0; i < 25; i++) await put(b, `k${String(i).padStart(2, '0')}`);
  const now = inDays(2);
  // Every other bucket's pass for that day first, so only this one is left to do.
  const calls: number[] = [];
  for (let i = 0; i < 20; i++) {
    const r = await expireByLifecycle(service.services, { now, maxItems: 10, pageSize: 4 });
    if (r.buckets === 0) break;
    expect(r.examined).toBeLessThanOrEqual(10);
    calls.push(r.expired);
  }
  expect(calls.reduce((a, n) => a + n, 0)).toBeGreaterThanOrEqual(25);
  expect(calls.filter((n) => n > 0).length).toBeGreaterThanOrEqual(3);
  expect(await keys(b)).toEqual([]);
  // Done for that day: another call the same day reads nothing.
  expect((await expireByLifecycle(service.services, { now })).examined).toBe(0);
});

test("the deploy worker's scheduled tick (AWS) applies the rules, then collects", async () => {
  const b = await bucketWith([{ ID: 'tick', Filter: { Prefix: 'x/' }, Status: 'Enabled', Expiration: { Days: 1 } }]);
  const gone = await put(b, 'x/1', randomBytes(2000));
  const { runScheduledTick } = await import('../../functions/deploy-worker/worker.js');
  const tick = await runScheduledTick(service.services, 10, inDays(40));
  expect(tick.lifecycle?.expired).toBeGreaterThanOrEqual(1);
  expect(await keys(b)).toEqual([]);
  expect(await hasBlock(gone.cid)).toBe(false);
});

test("the local service's collection timer applies the rules (a Date already passed) and then collects", async () => {
  const local = await startTestService({ CAIRN_GC_INTERVAL: '1' });
  try {
    const s3 = local.s3();
    const name = `lc-timer-${Date.now().toString(36)}`;
    await s3.send(new CreateBucketCommand({ Bucket: name }));
    const seen = captureHeaders(s3);
    await s3.send(new PutObjectCommand({ Bucket: name, Key: 'gone', Body: randomBytes(2000) }));
    const cid = parseCid(seen.headers['x-service-ipfs-hash-v0']!)!;
    const today = new Date(Math.floor(Date.now() / DAY) * DAY);
    await s3.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket: name,
        LifecycleConfiguration: { Rules: [{ ID: 'now', Filter: {}, Status: 'Enabled', Expiration: { Date: today } }] },
      }),
    );
    const node = await local.services.ipfs();
    await waitFor(async () => !(await node.blockstore.has(cid)), { timeoutMs: 20_000, what: 'the expired object collected' });
    expect((await s3.send(new ListObjectsV2Command({ Bucket: name }))).Contents).toBeUndefined();
  } finally {
    await local.close();
  }
});

test('CAIRN_LIFECYCLE_DAY_SECONDS makes a day that many seconds for the timer that expires; the date answered stays in days', async () => {
  const local = await startTestService({ CAIRN_GC_INTERVAL: '1', CAIRN_LIFECYCLE_DAY_SECONDS: '2' });
  try {
    const s3 = local.s3();
    const name = `lc-short-${Date.now().toString(36)}`;
    await s3.send(new CreateBucketCommand({ Bucket: name }));
    await s3.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket: name,
        LifecycleConfiguration: {
          Rules: [
            { ID: 'soon', Filter: { Prefix: 'soon/' }, Status: 'Enabled', Expiration: { Days: 1 } },
            { ID: 'later', Filter: { Prefix: 'later/' }, Status: 'Enabled', Expiration: { Days: 300 } },
          ],
        },
      }),
    );
    const before = Date.now();
    const soon = await s3.send(new PutObjectCommand({ Bucket: name, Key: 'soon/a', Body: 'a' }));
    await s3.send(new PutObjectCommand({ Bucket: name, Key: 'later/b', Body: 'b' }));
    // As RGW announces it with rgw_lc_debug_interval (ceph's header cases): the next midnight UTC a day on.
    const at = Date.parse(/expiry-date="([^"]+)"/.exec(soon.Expiration!)![1]!);
    expect(at).toBe(Math.ceil((before + DAY) / DAY) * DAY);
    await waitFor(async () => (await s3.send(new ListObjectsV2Command({ Bucket: name }))).KeyCount === 1, {
      timeoutMs: 20_000,
      what: 'the object of the one-day rule expired',
    });
    expect((await s3.send(new ListObjectsV2Command({ Bucket: name }))).Contents!.map((c) => c.Key)).toEqual(['later/b']);
  } finally {
    await local.close();
  }
});
