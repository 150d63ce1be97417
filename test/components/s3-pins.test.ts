/**
 * Pins follow references: content stays pinned while any object names it,
 * is unpinned and collected when the last one goes, and collection never
 * takes blocks from an upload in flight. Failed or abandoned uploads leave
 * no object and no pin.
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { startTestService, type TestService } from '../support/service.js';
import { captureHeaders } from '../support/s3-doors.js';
import { waitFor } from '../support/wait.js';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { ObjectReferences } from '../../functions/core/data/object-references.js';
import { isRootPinned, listRoots } from '../../functions/core/storage/pins.js';
import { parseCid } from '../../functions/core/ipfs/cid.js';
import type { CID } from 'multiformats/cid';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
});
afterAll(async () => {
  await service.close();
});

const B = 'default-bucket';

async function put(key: string, body: Buffer | string, bucket = B): Promise<CID> {
  // No retries: every upload must be answered well the first time, a racing one included.
  const s3 = service.s3(undefined, { maxAttempts: 1 });
  const seen = captureHeaders(s3);
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  return parseCid(seen.headers['x-service-ipfs-hash-v0']!)!;
}

/** A new bucket with versioning as asked. */
async function versionedBucket(name: string, Status: 'Enabled' | 'Suspended'): Promise<string> {
  await service.s3().send(new CreateBucketCommand({ Bucket: name }));
  await service.s3().send(new PutBucketVersioningCommand({ Bucket: name, VersioningConfiguration: { Status } }));
  return name;
}

async function present(cid: CID): Promise<{ pinned: boolean; root: boolean }> {
  const node = await service.services.ipfs();
  return { pinned: await isRootPinned(node, cid), root: await node.blockstore.has(cid) };
}

async function pinsOf(cid: CID): Promise<string[]> {
  const node = await service.services.ipfs();
  const out: string[] = [];
  for await (const { root } of listRoots(node.datastore)) if (root === cid.toV1().toString()) out.push(root);
  return out;
}

test('shared content stays pinned until its last reference goes, then its blocks are collected', async () => {
  const x = randomBytes(700 * 1024); // three chunks and a root
  const y = randomBytes(10);
  const cidX = await put('pins/a', x);
  expect(await put('pins/b', x)).toEqual(cidX);
  expect(await present(cidX)).toEqual({ pinned: true, root: true });

  const cidY = await put('pins/a', y); // overwrite: b still holds X
  await collectGarbage(service.services);
  expect(await present(cidX)).toEqual({ pinned: true, root: true });

  await service.s3().send(new DeleteObjectCommand({ Bucket: B, Key: 'pins/b' }));
  const result = await collectGarbage(service.services);
  expect(result.unpinned).toBeGreaterThanOrEqual(1);
  expect(result.blocksDeleted).toBe(4);
  expect(await present(cidX)).toEqual({ pinned: false, root: false });
  expect(await pinsOf(cidX)).toEqual([]);
  expect(await present(cidY)).toEqual({ pinned: true, root: true });
  const got = await service.s3().send(new GetObjectCommand({ Bucket: B, Key: 'pins/a' }));
  expect(Buffer.from(await got.Body!.transformToByteArray())).toEqual(y);
});

test('collection waits for an upload in flight that re-uses the blocks it would delete', async () => {
  const content = randomBytes(600 * 1024);
  const cid = await put('race/old', content);
  await service.s3().send(new DeleteObjectCommand({ Bucket: B, Key: 'race/old' })); // a candidate now

  const body = new PassThrough();
  const upload = service.s3().send(new PutObjectCommand({ Bucket: B, Key: 'race/new', Body: body, ContentLength: content.length }));
  body.write(content.subarray(0, 400 * 1024));
  await waitFor(() => service.services.gate.uploadsInFlight === 1, { what: 'the upload to be in flight' });
  let collected = false;
  const collection = collectGarbage(service.services).then((r) => {
    collected = true;
    return r;
  });
  // The local gate's count of waiting collections is private; the test reads it to know the collection is queued.
  await waitFor(() => (service.services.gate as unknown as { waitingExclusive: number }).waitingExclusive === 1, {
    what: 'the collection to wait for the upload',
  });
  expect(collected).toBe(false); // held back by the upload in flight
  body.end(content.subarray(400 * 1024));
  await upload;
  const result = await collection;
  expect(result.examined).toBeGreaterThanOrEqual(1);
  expect(await present(cid)).toEqual({ pinned: true, root: true });
  const got = await service.s3().send(new GetObjectCommand({ Bucket: B, Key: 'race/new' }));
  const bytes = Buffer.from(await got.Body!.transformToByteArray());
  expect(createHash('md5').update(bytes).digest('hex')).toBe(createHash('md5').update(content).digest('hex'));
});

test('a rejected upload and an abandoned one leave no object and no pin', async () => {
  const content = randomBytes(300 * 1024);
  const err = await service
    .s3()
    .send(new PutObjectCommand({ Bucket: B, Key: 'failed/md5', Body: content, ContentMD5: Buffer.alloc(16).toString('base64') }))
    .catch((e: Error) => e);
  expect((err as Error).name).toBe('BadDigest');
  expect(await service.services.objects.get(B, 'failed/md5')).toBeUndefined();

  const abort = new AbortController();
  const body = new PassThrough();
  const abandoned = service
    .s3()
    .send(new PutObjectCommand({ Bucket: B, Key: 'failed/abandoned', Body: body, ContentLength: 1024 * 1024 }), {
      abortSignal: abort.signal,
    });
  body.write(randomBytes(512 * 1024));
  await waitFor(() => service.services.gate.uploadsInFlight === 1, { what: 'the upload to be in flight' });
  abort.abort();
  await abandoned.catch(() => {});
  // The server lets the upload go once it sees the connection end.
  await waitFor(() => service.services.gate.uploadsInFlight === 0, { what: 'the abandoned upload to end' });
  expect(await service.services.objects.get(B, 'failed/abandoned')).toBeUndefined();

  await collectGarbage(service.services);
  const node = await service.services.ipfs();
  const { importFile } = await import('../../functions/core/ipfs/import.js');
  const { MemoryBlockstore } = await import('blockstore-core/memory');
  const { cid } = await importFile(
    new MemoryBlockstore(),
    (async function* () {
      yield content;
    })(),
  );
  expect(await isRootPinned(node, cid)).toBe(false);
  expect(await node.blockstore.has(cid)).toBe(false);
});

test('racing overwrites of one key: each is answered, the last record stands, and only its content stays pinned', async () => {
  const bodies = Array.from({ length: 12 }, () => randomBytes(2000));
  const cids = await Promise.all(bodies.map((b) => put('pins/raced', b)));
  const got = await service.s3().send(new GetObjectCommand({ Bucket: B, Key: 'pins/raced' }));
  const stored = Buffer.from(await got.Body!.transformToByteArray());
  const winner = bodies.findIndex((b) => b.equals(stored));
  expect(winner).toBeGreaterThanOrEqual(0);
  await collectGarbage(service.services);
  for (const [i, cid] of cids.entries()) {
    expect(await present(cid)).toEqual(i === winner ? { pinned: true, root: true } : { pinned: false, root: false });
  }
  expect(await new ObjectReferences(service.services.db).isReferenced(cids[winner]!.toString())).toBe(true);
  for (const [i, cid] of cids.entries())
    if (i !== winner) expect(await new ObjectReferences(service.services.db).isReferenced(cid.toString())).toBe(false);
});

test('versions keep their blocks through collection, a delete marker too; a version deleted for good is collected', async () => {
  const V = await versionedBucket('pins-versions', 'Enabled');
  const x = randomBytes(700 * 1024);
  const cidX = await put('k', x, V);
  const cidY = await put('k', randomBytes(10), V); // X is a non-current version now
  await service.s3().send(new DeleteObjectCommand({ Bucket: V, Key: 'k' })); // a delete marker over both
  await collectGarbage(service.services);
  expect(await present(cidX)).toEqual({ pinned: true, root: true });
  expect(await present(cidY)).toEqual({ pinned: true, root: true });
  const listed = await service.s3().send(new ListObjectVersionsCommand({ Bucket: V }));
  const xVersion = listed.Versions!.find((v) => v.Size === x.length)!.VersionId!;
  expect(xVersion).toBeDefined();
  const old = await service.s3().send(new GetObjectCommand({ Bucket: V, Key: 'k', VersionId: xVersion }));
  expect(Buffer.from(await old.Body!.transformToByteArray())).toEqual(x);
  await service.s3().send(new DeleteObjectCommand({ Bucket: V, Key: 'k', VersionId: xVersion }));
  const result = await collectGarbage(service.services);
  expect(result.blocksDeleted).toBe(4);
  expect(await present(cidX)).toEqual({ pinned: false, root: false });
  expect(await present(cidY)).toEqual({ pinned: true, root: true });
});

test('suspended writes replace the null version: its content is collected, the versions before stay', async () => {
  const V = await versionedBucket('pins-suspended', 'Enabled');
  const kept = await put('k', randomBytes(3000), V);
  await service.s3().send(new PutBucketVersioningCommand({ Bucket: V, VersioningConfiguration: { Status: 'Suspended' } }));
  const first = await put('k', randomBytes(3000), V);
  const second = await put('k', randomBytes(3000), V);
  await collectGarbage(service.services);
  expect(await present(kept)).toEqual({ pinned: true, root: true });
  expect(await present(first)).toEqual({ pinned: false, root: false });
  expect(await present(second)).toEqual({ pinned: true, root: true });
});

test('racing writes of one versioned key: each is answered and kept as its own version, every CID stays pinned', async () => {
  const V = await versionedBucket('pins-raced-versions', 'Enabled');
  const bodies = Array.from({ length: 12 }, () => randomBytes(2000));
  const cids = await Promise.all(bodies.map((b) => put('raced', b, V)));
  const listed = await service.s3().send(new ListObjectVersionsCommand({ Bucket: V }));
  expect(listed.Versions!.length).toBe(12);
  expect(listed.Versions!.filter((v) => v.IsLatest).length).toBe(1);
  await collectGarbage(service.services);
  for (const cid of cids) expect(await present(cid)).toEqual({ pinned: true, root: true });
});
