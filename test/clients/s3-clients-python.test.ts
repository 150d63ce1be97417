/**
 * boto3 (Debian's python3-boto3) against Cairn, through test/clients/boto3_ops.py:
 * objects, checksums, listings, copies, deletes, buckets, presigned URLs and
 * the managed transfers (ranged downloads; multipart uploads past 8 MiB),
 * GetObjectAttributes and partNumber reads of a multipart object, and a
 * browser-upload form from generate_presigned_post.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { startTestService, type TestService } from '../support/service.js';
import {
  AWKWARD_NAMES,
  DEBIAN_CLIENTS,
  cidsOf,
  clientWorkspace,
  headObject,
  md5,
  multipartEtag,
  randomFile,
  requireClient,
  run,
  type ClientWorkspace,
} from '../support/clients.js';
import { bytesOf, vectorNamed } from '../support/vectors.js';

const SCRIPT = fileURLToPath(new URL('./boto3_ops.py', import.meta.url));

let service: TestService;
let ws: ClientWorkspace;

beforeAll(async () => {
  await requireClient('python3');
  [service, ws] = await Promise.all([startTestService(), clientWorkspace()]);
});

afterAll(async () => {
  await service?.close();
  await ws?.cleanup();
});

type Result = Record<string, any> & { headers: Record<string, string>; error?: { code: string; status: number; message: string } };

/** Runs boto3 operations in one Python process; returns one result per operation. */
async function boto3(...ops: object[]): Promise<Result[]> {
  const { stdout } = await run(DEBIAN_CLIENTS.python3.bin, [SCRIPT], {
    env: ws.env,
    input: JSON.stringify({ endpoint: service.endpoints.s3, ops }),
  });
  return JSON.parse(stdout) as Result[];
}

async function ok(...ops: object[]): Promise<Result[]> {
  const results = await boto3(...ops);
  for (const r of results) if (r.error) throw new Error(`boto3 failed: ${JSON.stringify(r.error)}`);
  return results;
}

const hello = vectorNamed('"hello world\\n"');
const chunk2 = vectorNamed('chacha "chunk-v0-seed" 262145 B (2 chunks)');

test('put_object answers the MD5 ETag and Kubo CIDs (headers); get_object and head_object return bytes, type, metadata', async () => {
  const file = await ws.file('hello.txt');
  await writeFile(file, bytesOf(hello));
  const [put, got, head] = await ok(
    {
      call: 'put_object',
      args: { Bucket: 'default-bucket', Key: 'py/hello.txt', ContentType: 'text/plain', Metadata: { from: 'boto3' } },
      body_file: file,
    },
    { call: 'get_object', args: { Bucket: 'default-bucket', Key: 'py/hello.txt' } },
    { call: 'head_object', args: { Bucket: 'default-bucket', Key: 'py/hello.txt' } },
  );
  expect(put!.ETag).toBe(`"${md5(bytesOf(hello))}"`);
  expect(put!.headers['x-service-ipfs-hash']).toBe(hello.cidV1);
  expect(put!.headers['x-service-ipfs-hash-v0']).toBe(hello.cidV0);
  expect(got).toMatchObject({
    body_text: 'hello world\n',
    ContentType: 'text/plain',
    Metadata: { from: 'boto3' },
    ETag: put!.ETag,
    ContentLength: 12,
  });
  expect(got!.headers['x-service-ipfs-hash']).toBe(hello.cidV1);
  expect(head).toMatchObject({ ContentLength: 12, ETag: put!.ETag, Metadata: { from: 'boto3' } });
  expect(head!.headers['x-service-ipfs-hash-v0']).toBe(hello.cidV0);
});

test('a two-chunk vector gets the CID Kubo gives it', async () => {
  const file = await ws.file('chunk2.bin');
  await writeFile(file, bytesOf(chunk2));
  const [put, got] = await ok(
    { call: 'put_object', args: { Bucket: 'default-bucket', Key: 'py/chunk2.bin' }, body_file: file },
    { call: 'get_object', args: { Bucket: 'default-bucket', Key: 'py/chunk2.bin' } },
  );
  expect(put!.headers['x-service-ipfs-hash']).toBe(chunk2.cidV1);
  expect(put!.headers['x-service-ipfs-hash-v0']).toBe(chunk2.cidV0);
  expect(got!.body_md5).toBe(md5(bytesOf(chunk2)));
});

test('ChecksumAlgorithm CRC32 and SHA256 are verified on put and returned with ChecksumMode ENABLED', async () => {
  const file = await ws.file('sum.bin');
  const bytes = await randomFile(file, 100_000);
  const sha256 = createHash('sha256').update(bytes).digest('base64');
  const [crcPut, shaPut, crcGet, shaGet] = await ok(
    { call: 'put_object', args: { Bucket: 'default-bucket', Key: 'py/crc.bin', ChecksumAlgorithm: 'CRC32' }, body_file: file },
    { call: 'put_object', args: { Bucket: 'default-bucket', Key: 'py/sha.bin', ChecksumAlgorithm: 'SHA256' }, body_file: file },
    { call: 'get_object', args: { Bucket: 'default-bucket', Key: 'py/crc.bin', ChecksumMode: 'ENABLED' } },
    { call: 'get_object', args: { Bucket: 'default-bucket', Key: 'py/sha.bin', ChecksumMode: 'ENABLED' } },
  );
  expect(crcPut!.ChecksumCRC32).toMatch(/^[A-Za-z0-9+/]{6}==$/);
  expect(crcGet!.ChecksumCRC32).toBe(crcPut!.ChecksumCRC32);
  expect(shaPut!.ChecksumSHA256).toBe(sha256);
  expect(shaGet!.ChecksumSHA256).toBe(sha256);
  expect(crcGet!.body_md5).toBe(md5(bytes));
  expect(shaGet!.body_md5).toBe(md5(bytes));
});

test('listings: paginated list_objects_v2 with prefix and delimiter, list_objects (v1) with a marker', async () => {
  const keys = ['py/list/a.txt', 'py/list/b/1.txt', 'py/list/b/2.txt', 'py/list/c.txt', 'py/list/d.txt'];
  const puts = keys.map((Key) => ({ call: 'put_object', args: { Bucket: 'default-bucket', Key, Body: Key } }));
  await ok(...puts);
  const [pages, grouped, v1] = await ok(
    {
      call: 'paginate',
      operation: 'list_objects_v2',
      args: { Bucket: 'default-bucket', Prefix: 'py/list/', PaginationConfig: { PageSize: 2 } },
    },
    { call: 'list_objects_v2', args: { Bucket: 'default-bucket', Prefix: 'py/list/', Delimiter: '/' } },
    { call: 'list_objects', args: { Bucket: 'default-bucket', Prefix: 'py/list/', Marker: 'py/list/b/2.txt' } },
  );
  const pageList = pages as unknown as Result[];
  expect(pageList.map((p) => p.KeyCount)).toEqual([2, 2, 1]);
  const listed = pageList.flatMap((p) => p.Contents as Array<{ Key: string; ETag: string; Size: number; StorageClass: string }>);
  expect(listed.map((c) => c.Key)).toEqual(keys);
  for (const c of listed) expect(c).toMatchObject({ ETag: `"${md5(c.Key)}"`, Size: c.Key.length, StorageClass: 'STANDARD' });
  expect((grouped!.Contents as Array<{ Key: string }>).map((c) => c.Key)).toEqual(['py/list/a.txt', 'py/list/c.txt', 'py/list/d.txt']);
  expect(grouped!.CommonPrefixes).toEqual([{ Prefix: 'py/list/b/' }]);
  expect((v1!.Contents as Array<{ Key: string }>).map((c) => c.Key)).toEqual(['py/list/c.txt', 'py/list/d.txt']);
});

test('ceph/s3-tests listing cases: encoding-type=url (%20 and %2B), max-keys=0, an empty continuation token', async () => {
  const keys = ['foo+1/bar', 'foo/bar/xyzzy', 'quux ab/thud', 'asdf+b'].map((k) => `py-enc/${k}`);
  await ok(...keys.map((Key) => ({ call: 'put_object', args: { Bucket: 'default-bucket', Key, Body: Key } })));
  const listing = { Bucket: 'default-bucket', Prefix: 'py-enc/' };
  // An explicit EncodingType makes botocore hand back what the server sent, undecoded.
  const [v2, v1, zero, zeroV2, emptyToken] = await ok(
    { call: 'list_objects_v2', args: { ...listing, Delimiter: '/', EncodingType: 'url' } },
    { call: 'list_objects', args: { ...listing, Delimiter: '/', EncodingType: 'url' } },
    { call: 'list_objects', args: { ...listing, MaxKeys: 0 } },
    { call: 'list_objects_v2', args: { ...listing, MaxKeys: 0 } },
    { call: 'list_objects_v2', args: { ...listing, ContinuationToken: '' } },
  );
  for (const out of [v2!, v1!]) {
    expect((out.Contents as Array<{ Key: string }>).map((c) => c.Key)).toEqual(['py-enc/asdf%2Bb']);
    expect((out.CommonPrefixes as Array<{ Prefix: string }>).map((p) => p.Prefix)).toEqual([
      'py-enc/foo%2B1/',
      'py-enc/foo/',
      'py-enc/quux%20ab/',
    ]);
  }
  for (const out of [zero!, zeroV2!]) {
    expect(out.IsTruncated).toBe(false);
    expect(out.Contents).toBeUndefined();
  }
  expect(emptyToken).toMatchObject({ ContinuationToken: '', IsTruncated: false, KeyCount: 4 });
});

test('copy_object, delete_object, delete_objects (quiet), and S3 errors for missing things', async () => {
  const [copy, head, del, missingDel, batch, list, gone, headGone, noBucket] = await boto3(
    {
      call: 'copy_object',
      args: { Bucket: 'default-bucket', Key: 'py/copy.txt', CopySource: { Bucket: 'default-bucket', Key: 'py/hello.txt' } },
    },
    { call: 'head_object', args: { Bucket: 'default-bucket', Key: 'py/copy.txt' } },
    { call: 'delete_object', args: { Bucket: 'default-bucket', Key: 'py/copy.txt' } },
    { call: 'delete_object', args: { Bucket: 'default-bucket', Key: 'py/never-there' } },
    {
      call: 'delete_objects',
      args: {
        Bucket: 'default-bucket',
        Delete: { Quiet: true, Objects: ['a.txt', 'b/1.txt', 'b/2.txt', 'c.txt', 'd.txt'].map((k) => ({ Key: `py/list/${k}` })) },
      },
    },
    { call: 'list_objects_v2', args: { Bucket: 'default-bucket', Prefix: 'py/list/' } },
    { call: 'get_object', args: { Bucket: 'default-bucket', Key: 'py/copy.txt' } },
    { call: 'head_object', args: { Bucket: 'default-bucket', Key: 'py/copy.txt' } },
    { call: 'get_object', args: { Bucket: 'no-such-bucket-here', Key: 'x' } },
  );
  expect(copy!.CopyObjectResult.ETag).toBe(`"${md5(bytesOf(hello))}"`);
  expect(head!.Metadata).toEqual({ from: 'boto3' });
  expect(head!.headers['x-service-ipfs-hash']).toBe(hello.cidV1);
  expect(del!.status).toBe(204);
  expect(missingDel!.status).toBe(204);
  expect(batch!.Deleted).toBeUndefined(); // quiet: only errors are reported
  expect(batch!.Errors).toBeUndefined();
  expect(list!.KeyCount).toBe(0);
  expect(gone!.error).toMatchObject({ code: 'NoSuchKey', status: 404 });
  expect(headGone!.error).toMatchObject({ code: '404', status: 404 });
  expect(noBucket!.error).toMatchObject({ code: 'NoSuchBucket', status: 404 });
});

test('buckets: create_bucket, head_bucket, get_bucket_location, list_buckets, delete_bucket (BucketNotEmpty first)', async () => {
  const [created, , location, listed, , notEmpty, , , listedAfter, dup] = await boto3(
    { call: 'create_bucket', args: { Bucket: 'py-bucket' } },
    { call: 'head_bucket', args: { Bucket: 'py-bucket' } },
    { call: 'get_bucket_location', args: { Bucket: 'py-bucket' } },
    { call: 'list_buckets' },
    { call: 'put_object', args: { Bucket: 'py-bucket', Key: 'k', Body: 'v' } },
    { call: 'delete_bucket', args: { Bucket: 'py-bucket' } },
    { call: 'delete_object', args: { Bucket: 'py-bucket', Key: 'k' } },
    { call: 'delete_bucket', args: { Bucket: 'py-bucket' } },
    { call: 'list_buckets' },
    { call: 'create_bucket', args: { Bucket: 'default-bucket' } },
  );
  expect(created!.status).toBe(200);
  expect(location!.LocationConstraint ?? null).toBeNull();
  expect((listed!.Buckets as Array<{ Name: string }>).map((b) => b.Name)).toEqual(['default-bucket', 'py-bucket']);
  expect(notEmpty!.error).toMatchObject({ code: 'BucketNotEmpty', status: 409 });
  expect((listedAfter!.Buckets as Array<{ Name: string }>).map((b) => b.Name)).toEqual(['default-bucket']);
  // Re-creating a bucket one owns succeeds in us-east-1, as S3 does there.
  expect(dup!.status).toBe(200);
});

test('awkward key names: put, list, get, delete_objects', async () => {
  const keys = AWKWARD_NAMES.map((n) => `py/awkward/${n}`);
  const results = await ok(
    ...keys.map((Key) => ({ call: 'put_object', args: { Bucket: 'default-bucket', Key, Body: Key } })),
    { call: 'list_objects_v2', args: { Bucket: 'default-bucket', Prefix: 'py/awkward/' } },
    ...keys.map((Key) => ({ call: 'get_object', args: { Bucket: 'default-bucket', Key } })),
    { call: 'delete_objects', args: { Bucket: 'default-bucket', Delete: { Objects: keys.map((Key) => ({ Key })) } } },
    { call: 'list_objects_v2', args: { Bucket: 'default-bucket', Prefix: 'py/awkward/' } },
  );
  const listed = results[keys.length]!;
  expect((listed.Contents as Array<{ Key: string }>).map((c) => c.Key).sort()).toEqual([...keys].sort());
  keys.forEach((key, i) => expect(results[keys.length + 1 + i]!.body_text).toBe(key));
  const deleted = results[2 * keys.length + 1]!;
  expect((deleted.Deleted as Array<{ Key: string }>).map((d) => d.Key).sort()).toEqual([...keys].sort());
  expect(results[2 * keys.length + 2]!.KeyCount).toBe(0);
});

test('presigned GET and PUT URLs from boto3 work without credentials', async () => {
  const [getUrl, putUrl] = await ok(
    { call: 'presign', method: 'get_object', args: { Params: { Bucket: 'default-bucket', Key: 'py/hello.txt' }, ExpiresIn: 300 } },
    { call: 'presign', method: 'put_object', args: { Params: { Bucket: 'default-bucket', Key: 'py/presigned.txt' }, ExpiresIn: 300 } },
  );
  const got = await fetch(getUrl!.url as string);
  expect(got.status).toBe(200);
  expect(await got.text()).toBe('hello world\n');
  const put = await fetch(putUrl!.url as string, { method: 'PUT', body: 'sent with a presigned URL' });
  expect(put.status).toBe(200);
  const stored = await headObject(service, 'default-bucket', 'py/presigned.txt');
  expect(stored.etag).toBe(md5('sent with a presigned URL'));
  expect(stored.cidV1).toBe((await cidsOf(Buffer.from('sent with a presigned URL'))).v1);
});

test('download_file of a 10 MiB single-part object (ranged GETs, 4 at once) gets the same bytes', async () => {
  const file = await ws.file('ten.bin');
  const bytes = await randomFile(file, 10 * 1024 * 1024);
  const back = await ws.file('ten.back');
  const [put] = await ok(
    { call: 'put_object', args: { Bucket: 'default-bucket', Key: 'py/ten.bin' }, body_file: file },
    { call: 'download_file', args: { Bucket: 'default-bucket', Key: 'py/ten.bin', Filename: back } },
  );
  expect(put!.ETag).toBe(`"${md5(bytes)}"`);
  expect(put!.headers['x-service-ipfs-hash']).toBe((await cidsOf(bytes)).v1);
  expect(md5(await readFile(back))).toBe(md5(bytes));
});

test('upload_file of 17 MiB (multipart, 8 MiB parts): whole-file CID, multipart ETag, same bytes back', async () => {
  const file = await ws.file('big.bin');
  const bytes = await randomFile(file, 17 * 1024 * 1024);
  const back = await ws.file('big.back');
  await ok(
    {
      call: 'upload_file',
      args: { Bucket: 'default-bucket', Key: 'py/big.bin', Filename: file, ExtraArgs: { ContentType: 'application/x-big' } },
    },
    { call: 'download_file', args: { Bucket: 'default-bucket', Key: 'py/big.bin', Filename: back } },
  );
  const stored = await headObject(service, 'default-bucket', 'py/big.bin');
  expect(stored.etag).toBe(multipartEtag(bytes, 8 * 1024 * 1024));
  expect(stored.contentType).toBe('application/x-big');
  expect(stored.size).toBe(bytes.length);
  const cids = await cidsOf(bytes);
  expect(stored.cidV1).toBe(cids.v1);
  expect(stored.cidV0).toBe(cids.v0);
  expect(md5(await readFile(back))).toBe(md5(bytes));
});

test('get_object_attributes and PartNumber reads of an upload_file in two parts', async () => {
  const MiB = 1024 * 1024;
  const file = await ws.file('parts.bin');
  const bytes = await randomFile(file, 10 * MiB);
  const where = { Bucket: 'default-bucket', Key: 'py/parts.bin' };
  const [, attrs, page, part2, head1, past] = await boto3(
    { call: 'upload_file', args: { ...where, Filename: file } },
    { call: 'get_object_attributes', args: { ...where, ObjectAttributes: ['ETag', 'ObjectParts', 'ObjectSize', 'StorageClass'] } },
    { call: 'get_object_attributes', args: { ...where, ObjectAttributes: ['ObjectParts'], MaxParts: 1 } },
    { call: 'get_object', args: { ...where, PartNumber: 2 } },
    { call: 'head_object', args: { ...where, PartNumber: 1 } },
    { call: 'get_object', args: { ...where, PartNumber: 3 } },
  );
  expect(attrs!.ETag).toBe(multipartEtag(bytes, 8 * MiB).replace(/"/g, ''));
  expect([attrs!.ObjectSize, attrs!.StorageClass]).toEqual([10 * MiB, 'STANDARD']);
  expect(attrs!.ObjectParts.TotalPartsCount).toBe(2);
  expect(attrs!.ObjectParts.Parts.map((p: { PartNumber: number; Size: number }) => [p.PartNumber, p.Size])).toEqual([
    [1, 8 * MiB],
    [2, 2 * MiB],
  ]);
  expect([page!.ObjectParts.IsTruncated, String(page!.ObjectParts.NextPartNumberMarker), page!.ObjectParts.Parts.length]).toEqual([
    true,
    '1',
    1,
  ]);
  expect([part2!.status, part2!.ContentRange, part2!.PartsCount]).toEqual([206, `bytes ${8 * MiB}-${10 * MiB - 1}/${10 * MiB}`, 2]);
  expect(part2!.body_md5).toBe(md5(bytes.subarray(8 * MiB)));
  expect([head1!.status, head1!.ContentLength]).toEqual([206, 8 * MiB]);
  expect(past!.error).toMatchObject({ code: 'InvalidPartNumber', status: 416 });
});

test("generate_presigned_post's form uploads the file; a file its policy refuses is EntityTooLarge", async () => {
  const [form] = await ok({
    call: 'presign_post',
    args: {
      Bucket: 'default-bucket',
      Key: 'py/posted/${filename}',
      Fields: { 'Content-Type': 'text/plain', success_action_status: '201' },
      Conditions: [{ 'Content-Type': 'text/plain' }, { success_action_status: '201' }, ['content-length-range', 1, 100]],
    },
  });
  const send = (text: string) => {
    const body = new FormData();
    for (const [name, value] of Object.entries(form!.fields as Record<string, string>)) body.append(name, value);
    body.append('file', new Blob([text]), 'note.txt');
    return fetch(form!.url as string, { method: 'POST', body });
  };
  const created = await send('posted by boto3');
  expect(created.status).toBe(201);
  expect(await created.text()).toContain('<Key>py/posted/note.txt</Key>');
  const stored = await headObject(service, 'default-bucket', 'py/posted/note.txt');
  expect([stored.contentType, stored.etag]).toEqual(['text/plain', md5(Buffer.from('posted by boto3'))]);
  const refused = await send('x'.repeat(101));
  expect(refused.status).toBe(400);
  expect(await refused.text()).toContain('<Code>EntityTooLarge</Code>');
});
