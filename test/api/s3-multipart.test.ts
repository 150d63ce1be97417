/**
 * Multipart uploads through both doors with the real @aws-sdk/client-s3:
 * the whole-file CID (Kubo's vectors, parts of 5 MiB and of odd sizes), S3's
 * multipart ETag, listings and their pages, abort and collection, every
 * error S3 gives, part re-uploads, UploadPartCopy, checksums, DeleteBucket
 * ending open uploads, and CAIRN_ETAG=cid. What parts, pins and collection
 * do inside the service is checked locally only (whenLocal, localTest); a
 * second service configured with CAIRN_ETAG=cid is local too.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import type { SerializeHandler, SerializeHandlerArguments } from '@smithy/types';
import { CID } from 'multiformats/cid';
import { startTestService, type TestService } from '../support/service.js';
import { apiTarget, localDescribe, localTest, type ApiTarget } from '../support/api-target.js';
import { captureHeaders, s3Doors, failure, uploadParts } from '../support/s3-doors.js';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { ObjectReferences } from '../../functions/core/data/object-references.js';
import { isRootPinned } from '../../functions/core/storage/pins.js';
import { doorsFor } from '../support/test-set.js';

interface Vector {
  name: string;
  kind: string;
  generator: string;
  size: number;
  cidV0: string;
  cidV1: string;
  inputSha256: string;
}
const vectors = JSON.parse(readFileSync(new URL('../fixtures/cid-vectors.json', import.meta.url), 'utf8')) as Vector[];

/** The ChaCha20 vectors' bytes, by the generator each vector names (Kubo's deterministic reader). */
function vectorBytes(size: number): { vector: Vector; bytes: Buffer } {
  const vector = vectors.find((v) => v.kind === 'file' && v.size === size && v.generator.includes('chacha20'))!;
  const seed = /update\("([^"]*)"\)/.exec(vector.generator)![1]!;
  const key = createHash('sha256').update(seed).digest();
  const bytes = createCipheriv('chacha20', key, Buffer.alloc(16)).update(Buffer.alloc(size));
  expect(createHash('sha256').update(bytes).digest('hex')).toBe(vector.inputSha256);
  return { vector, bytes };
}

const MiB = 1024 * 1024;
const md5 = (b: Buffer | string) => createHash('md5').update(b).digest('hex');
const multipartEtag = (parts: Buffer[]) => `"${md5(Buffer.concat(parts.map((p) => Buffer.from(md5(p), 'hex'))))}-${parts.length}"`;

function split(data: Buffer, sizes: number[]): Buffer[] {
  const parts: Buffer[] = [];
  let at = 0;
  for (const size of sizes) {
    parts.push(data.subarray(at, at + size));
    at += size;
  }
  if (at < data.length) parts.push(data.subarray(at));
  return parts;
}

/** Uploads `parts` (a few at once, as SDKs do) as a multipart upload and completes it; returns the response and its headers. */
async function uploadInParts(s3: S3Client, bucket: string, key: string, parts: Buffer[], concurrency = 3) {
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const completed: CompletedPart[] = [];
  const queue = [...parts.entries()];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const [i, body] = next;
        const out = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: body }));
        expect(out.ETag).toBe(`"${md5(body)}"`);
        completed[i] = { PartNumber: i + 1, ETag: out.ETag };
      }
    }),
  );
  const seen = captureHeaders(s3);
  const done = await s3.send(
    new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: completed } }),
  );
  return { done, headers: { ...seen.headers }, uploadId: UploadId! };
}

let target: ApiTarget;
/** For keys whose absence a test checks: a deployed stack keeps what earlier runs completed. */
const RUN = Date.now().toString(36);
const savedEnv = { ...process.env };
let B: string;

beforeAll(async () => {
  // Odd parts on purpose (Kubo's vectors cut anywhere), so no least part size: s3-part-size.test.ts checks S3's.
  target = await apiTarget({ CAIRN_S3_MIN_PART_SIZE: '0' });
  B = target.account.bucket;
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

async function pinned(service: TestService, cid: string): Promise<{ pinned: boolean; root: boolean }> {
  const node = await service.services.ipfs();
  const parsed = CID.parse(cid);
  return { pinned: await isRootPinned(node, parsed), root: await node.blockstore.has(parsed) };
}

describe.each(doorsFor(s3Doors(() => target)))('multipart uploads through the $name', (door) => {
  const { tag } = door;
  /** The largest part the door takes: S3's 5 MiB minimum, or the 4 MiB a Lambda request carries (Cairn takes smaller parts). */
  const FULL_PART = door.lambda ? 4 * MiB : 5 * MiB;
  let s3: S3Client;
  beforeAll(() => {
    s3 = door.client();
  });

  test("the full flow: two full parts and an odd last part make one object with S3's multipart ETag and the whole file's CID", async () => {
    const key = `flow-${tag}/video.bin`;
    const data = randomBytes(2 * FULL_PART + 12345);
    const parts = split(data, [FULL_PART, FULL_PART]);
    const { UploadId } = await s3.send(
      new CreateMultipartUploadCommand({
        Bucket: B,
        Key: key,
        ContentType: 'video/mp4',
        Metadata: { colour: 'green' },
        CacheControl: 'max-age=60',
      }),
    );
    expect(UploadId).toMatch(/^[0-9A-Za-z]+$/);
    const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: B, Prefix: `flow-${tag}/` }));
    expect(listed.Uploads!.map((u) => [u.Key, u.UploadId])).toEqual([[key, UploadId]]);
    expect(listed.Uploads![0]!.Initiated).toBeInstanceOf(Date);

    const etags: string[] = [];
    for (const [i, body] of parts.entries()) {
      const out = await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: i + 1, Body: body }));
      expect(out.ETag).toBe(`"${md5(body)}"`);
      expect(out.ChecksumCRC32).toBeTruthy(); // the SDK's default checksum, verified and returned
      etags.push(out.ETag!);
    }
    const partList = await s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId }));
    expect(partList.Parts!.map((p) => [p.PartNumber, p.ETag, p.Size])).toEqual(parts.map((p, i) => [i + 1, etags[i], p.length]));
    expect(partList.IsTruncated).toBe(false);
    expect(partList.Owner?.DisplayName).toBe('default');

    const seen = captureHeaders(s3);
    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: B,
        Key: key,
        UploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
      }),
    );
    expect(done.ETag).toBe(multipartEtag(parts));
    expect(done.ETag).toMatch(/^"[0-9a-f]{32}-3"$/);
    expect(done.Bucket).toBe(B);
    expect(done.Key).toBe(key);
    const { importFile } = await import('../../functions/core/ipfs/import.js');
    const { MemoryBlockstore } = await import('blockstore-core/memory');
    const whole = await importFile(
      new MemoryBlockstore(),
      (async function* () {
        yield data;
      })(),
    );
    expect(seen.headers['x-service-ipfs-hash-v0']).toBe(whole.cid.toString());
    expect(seen.headers['x-service-ipfs-hash']).toBe(whole.cid.toV1().toString());

    const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: key }));
    expect(head).toMatchObject({
      ETag: done.ETag,
      ContentLength: data.length,
      ContentType: 'video/mp4',
      Metadata: { colour: 'green' },
      CacheControl: 'max-age=60',
      PartsCount: 3,
    });
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key }));
    expect(md5(Buffer.from(await got.Body!.transformToByteArray()))).toBe(md5(data));

    // The upload is gone, and so are its parts and their references.
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: B, Prefix: `flow-${tag}/` }))).Uploads ?? []).toEqual([]);
    expect(await failure(s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId })))).toMatchObject({
      name: 'NoSuchUpload',
      $metadata: { httpStatusCode: 404 },
    });
    await target.whenLocal(async (service) => {
      expect(await service.services.uploads.allParts(UploadId!)).toEqual([]);
      expect(await new ObjectReferences(service.services.db).isReferenced(whole.cid.toString())).toBe(true);
    });
  });

  test("the 262145 B vector, in one part and in odd parts, gets Kubo's CID", async () => {
    const { vector, bytes } = vectorBytes(262145);
    for (const [n, sizes] of [[], [100000, 100001], [1, 262143]].entries()) {
      const parts = split(bytes, sizes);
      const { done, headers } = await uploadInParts(s3, B, `vector-${tag}/small-${n}`, parts);
      expect([n, headers['x-service-ipfs-hash-v0'], headers['x-service-ipfs-hash']]).toEqual([n, vector.cidV0, vector.cidV1]);
      expect(done.ETag).toBe(multipartEtag(parts));
    }
  });

  test('ListParts pages with max-parts and part-number-marker', async () => {
    const key = `pages-${tag}`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
    for (const n of [1, 2, 3, 5, 8])
      await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: n, Body: `part ${n}` }));
    const pages: number[][] = [];
    let marker: string | undefined;
    for (;;) {
      const out = await s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId, MaxParts: 2, PartNumberMarker: marker }));
      pages.push(out.Parts!.map((p) => p.PartNumber!));
      expect(out.MaxParts).toBe(2);
      if (!out.IsTruncated) break;
      marker = out.NextPartNumberMarker;
    }
    expect(pages).toEqual([[1, 2], [3, 5], [8]]);
    await s3.send(new AbortMultipartUploadCommand({ Bucket: B, Key: key, UploadId }));
  });

  test('ListMultipartUploads lists by key then initiation, pages with markers, rolls up prefixes', async () => {
    // A name of this run's own: a stack keeps what an interrupted run left.
    const bucket = `uploads-${tag}-${Date.now().toString(36)}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const ids: Array<[string, string]> = [];
    for (const key of ['b', 'a', 'b', 'c/x', 'c/y', 'd']) {
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
      ids.push([key, UploadId!]);
      await new Promise((r) => setTimeout(r, 2)); // distinct initiation times
    }
    const expected = [...ids].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : 1));
    expect(expected.filter(([k]) => k === 'b').map(([, id]) => id)).toEqual(ids.filter(([k]) => k === 'b').map(([, id]) => id));
    const seen: Array<[string, string]> = [];
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    let pages = 0;
    for (;;) {
      const out = await s3.send(
        new ListMultipartUploadsCommand({ Bucket: bucket, MaxUploads: 2, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
      );
      pages++;
      seen.push(...out.Uploads!.map((u) => [u.Key!, u.UploadId!] as [string, string]));
      if (!out.IsTruncated) break;
      keyMarker = out.NextKeyMarker;
      uploadIdMarker = out.NextUploadIdMarker;
    }
    expect(seen).toEqual(expected);
    expect(pages).toBe(3);

    const rolled = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Delimiter: '/' }));
    expect(rolled.Uploads!.map((u) => u.Key)).toEqual(['a', 'b', 'b', 'd']);
    expect(rolled.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['c/']);
    const inC = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: 'c/' }));
    expect(inC.Uploads!.map((u) => u.Key)).toEqual(['c/x', 'c/y']);
    const afterB = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, KeyMarker: 'b' }));
    expect(afterB.Uploads!.map((u) => u.Key)).toEqual(['c/x', 'c/y', 'd']);

    // Open uploads do not keep the bucket: they end with it (see s3-conformance.test.ts).
    await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
  });

  test('Abort ends the upload (then NoSuchUpload) and its parts are unpinned and collected', async () => {
    const key = `aborted-${tag}-${RUN}`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
    await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 1, Body: randomBytes(300 * 1024) }));
    await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 2, Body: randomBytes(1000) }));
    const listed = (await s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId }))).Parts!;
    expect(listed.map((p) => p.PartNumber)).toEqual([1, 2]);
    let parts: Array<{ cid: string }> = [];
    await target.whenLocal(async (service) => {
      parts = await service.services.uploads.allParts(UploadId!);
      expect(parts).toHaveLength(2);
      for (const p of parts) expect(await pinned(service, p.cid)).toEqual({ pinned: true, root: true });
      // Collection leaves an open upload's parts alone.
      await collectGarbage(service.services);
      for (const p of parts) expect(await pinned(service, p.cid)).toEqual({ pinned: true, root: true });
    });

    await s3.send(new AbortMultipartUploadCommand({ Bucket: B, Key: key, UploadId }));
    const gone = { name: 'NoSuchUpload', $metadata: { httpStatusCode: 404 } };
    expect(await failure(s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId })))).toMatchObject(gone);
    expect(await failure(s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 3, Body: 'late' })))).toMatchObject(
      gone,
    );
    expect(
      await failure(
        s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: B,
            Key: key,
            UploadId,
            MultipartUpload: { Parts: [{ PartNumber: 1, ETag: listed[0]!.ETag }] },
          }),
        ),
      ),
    ).toMatchObject(gone);
    expect(await failure(s3.send(new AbortMultipartUploadCommand({ Bucket: B, Key: key, UploadId })))).toMatchObject(gone);
    expect(await failure(s3.send(new HeadObjectCommand({ Bucket: B, Key: key })))).toMatchObject({ $metadata: { httpStatusCode: 404 } });

    await target.whenLocal(async (service) => {
      await collectGarbage(service.services);
      for (const p of parts) expect(await pinned(service, p.cid)).toEqual({ pinned: false, root: false });
    });
  });

  test('re-uploading a part number replaces it; the replaced content is collected', async () => {
    const key = `reupload-${tag}`;
    const first = randomBytes(1000);
    const second = randomBytes(2000);
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
    await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 1, Body: first }));
    let old: { cid: string } | undefined;
    await target.whenLocal(async (service) => {
      [old] = await service.services.uploads.allParts(UploadId!);
    });
    const again = await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 1, Body: second }));
    const list = await s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId }));
    expect(list.Parts!.map((p) => [p.PartNumber, p.ETag, p.Size])).toEqual([[1, `"${md5(second)}"`, 2000]]);
    // The first content's ETag no longer names part 1.
    expect(
      await failure(
        s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: B,
            Key: key,
            UploadId,
            MultipartUpload: { Parts: [{ PartNumber: 1, ETag: `"${md5(first)}"` }] },
          }),
        ),
      ),
    ).toMatchObject({ name: 'InvalidPart', $metadata: { httpStatusCode: 400 } });
    await target.whenLocal(async (service) => {
      await collectGarbage(service.services);
      expect(await pinned(service, old!.cid)).toEqual({ pinned: false, root: false });
    });
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: B,
        Key: key,
        UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: again.ETag }] },
      }),
    );
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key }));
    expect(Buffer.from(await got.Body!.transformToByteArray())).toEqual(second);
  });

  test('a wrong ETag (InvalidPart), parts out of order (InvalidPartOrder), a missing part and an empty list change nothing', async () => {
    const key = `refused-${tag}-${RUN}`;
    const bodies = ['one', 'two', 'three'].map((s) => Buffer.from(s));
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
    const parts = await uploadParts(s3, { Bucket: B, Key: key, UploadId }, bodies);
    const complete = (Parts: CompletedPart[]) =>
      s3.send(new CompleteMultipartUploadCommand({ Bucket: B, Key: key, UploadId, MultipartUpload: { Parts } }));
    expect(await failure(complete([parts[0]!, { PartNumber: 2, ETag: `"${md5('not two')}"` }, parts[2]!]))).toMatchObject({
      name: 'InvalidPart',
      $metadata: { httpStatusCode: 400 },
    });
    expect(await failure(complete([parts[1]!, parts[0]!, parts[2]!]))).toMatchObject({
      name: 'InvalidPartOrder',
      $metadata: { httpStatusCode: 400 },
    });
    // A number named twice in a row is one part (s3-conformance); named again after a higher one, out of order.
    expect(await failure(complete([parts[0]!, parts[1]!, parts[1]!, parts[0]!]))).toMatchObject({ name: 'InvalidPartOrder' });
    expect(await failure(complete([parts[0]!, { PartNumber: 4, ETag: parts[0]!.ETag }]))).toMatchObject({ name: 'InvalidPart' });
    expect(await failure(complete([]))).toMatchObject({ name: 'MalformedXML', $metadata: { httpStatusCode: 400 } });

    expect(await failure(s3.send(new HeadObjectCommand({ Bucket: B, Key: key })))).toMatchObject({ $metadata: { httpStatusCode: 404 } });
    const list = await s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId }));
    expect(list.Parts!.map((p) => p.ETag)).toEqual(parts.map((p) => p.ETag));

    // Any subset in ascending order completes (small parts too, with CAIRN_S3_MIN_PART_SIZE=0 as here).
    const done = await complete([parts[0]!, parts[2]!]);
    expect(done.ETag).toBe(multipartEtag([bodies[0]!, bodies[2]!]));
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key }));
    expect(await got.Body!.transformToString()).toBe('onethree');
  });

  test('bad part numbers, max-parts and max-uploads are InvalidArgument; unknown upload ids are NoSuchUpload', async () => {
    const key = `args-${tag}`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
    for (const PartNumber of [0, 10001, -1]) {
      const err = await failure(s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber, Body: 'x' })));
      expect([PartNumber, err.name, err.$metadata.httpStatusCode]).toEqual([PartNumber, 'InvalidArgument', 400]);
    }
    await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 10000, Body: 'last' }));
    expect(await failure(s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId, MaxParts: -1 })))).toMatchObject({
      name: 'InvalidArgument',
      $metadata: { httpStatusCode: 400 },
    });
    expect(await failure(s3.send(new ListMultipartUploadsCommand({ Bucket: B, MaxUploads: -5 })))).toMatchObject({
      name: 'InvalidArgument',
    });
    const gone = { name: 'NoSuchUpload', $metadata: { httpStatusCode: 404 } };
    expect(
      await failure(s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId: 'nope', PartNumber: 1, Body: 'x' }))),
    ).toMatchObject(gone);
    // An upload id is only good for its own key.
    expect(await failure(s3.send(new ListPartsCommand({ Bucket: B, Key: `${key}-other`, UploadId })))).toMatchObject(gone);
    expect(await failure(s3.send(new AbortMultipartUploadCommand({ Bucket: B, Key: key, UploadId: 'nope' })))).toMatchObject(gone);
    await s3.send(new AbortMultipartUploadCommand({ Bucket: B, Key: key, UploadId }));
  });

  test('a part over 5 GiB is EntityTooLarge; bad checksums and Content-MD5 are BadDigest and store no part', async () => {
    const key = `limits-${tag}`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
    const client = door.client();
    // Declare a 5 GiB + 1 byte body (before signing, so only the size is wrong).
    const huge = (next: SerializeHandler<object, object>) => (args: SerializeHandlerArguments<object>) => {
      const req = args.request as { headers: Record<string, string> };
      req.headers['content-length'] = String(5 * 1024 ** 3 + 1);
      return next(args);
    };
    client.middlewareStack.addRelativeTo(huge as never, { relation: 'after', toMiddleware: 'serializerMiddleware', name: 'huge' });
    const err = await failure(
      client.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 1, Body: 'tiny', ChecksumAlgorithm: undefined })),
    );
    expect(err).toMatchObject({ name: 'EntityTooLarge', $metadata: { httpStatusCode: 400 } });

    expect(
      await failure(
        s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 1, Body: 'body', ChecksumCRC32: 'AAAAAA==' })),
      ),
    ).toMatchObject({ name: 'BadDigest' });
    expect(
      await failure(
        s3.send(
          new UploadPartCommand({
            Bucket: B,
            Key: key,
            UploadId,
            PartNumber: 1,
            Body: 'body',
            ContentMD5: Buffer.from(md5('other'), 'hex').toString('base64'),
          }),
        ),
      ),
    ).toMatchObject({ name: 'BadDigest' });
    const sha = await s3.send(
      new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 2, Body: 'body', ChecksumAlgorithm: 'SHA256' }),
    );
    expect(sha.ChecksumSHA256).toBe(createHash('sha256').update('body').digest('base64'));
    const list = await s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId }));
    expect(list.Parts!.map((p) => [p.PartNumber, p.ChecksumSHA256])).toEqual([[2, sha.ChecksumSHA256]]);
    await s3.send(new AbortMultipartUploadCommand({ Bucket: B, Key: key, UploadId }));
  });

  test('UploadPartCopy copies a whole object or a byte range; bad ranges are InvalidArgument or InvalidRange', async () => {
    const source = randomBytes(700 * 1024);
    const src = `copy-src-${tag}`;
    await s3.send(new PutObjectCommand({ Bucket: B, Key: src, Body: source }));
    const key = `copy-dst-${tag}`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
    const ranged = await s3.send(
      new UploadPartCopyCommand({
        Bucket: B,
        Key: key,
        UploadId,
        PartNumber: 1,
        CopySource: `${B}/${src}`,
        CopySourceRange: 'bytes=0-299999',
      }),
    );
    expect(ranged.CopyPartResult?.ETag).toBe(`"${md5(source.subarray(0, 300000))}"`);
    const whole = await s3.send(new UploadPartCopyCommand({ Bucket: B, Key: key, UploadId, PartNumber: 2, CopySource: `/${B}/${src}` }));
    expect(whole.CopyPartResult?.ETag).toBe(`"${md5(source)}"`);

    for (const range of ['0-10', 'bytes=5', 'bytes=-10', 'bytes=a-b']) {
      const err = await failure(
        s3.send(
          new UploadPartCopyCommand({ Bucket: B, Key: key, UploadId, PartNumber: 3, CopySource: `${B}/${src}`, CopySourceRange: range }),
        ),
      );
      expect([range, err.name, err.$metadata.httpStatusCode]).toEqual([range, 'InvalidArgument', 400]);
    }
    for (const range of [`bytes=0-${source.length}`, 'bytes=10-5']) {
      const err = await failure(
        s3.send(
          new UploadPartCopyCommand({ Bucket: B, Key: key, UploadId, PartNumber: 3, CopySource: `${B}/${src}`, CopySourceRange: range }),
        ),
      );
      expect([range, err.name, err.$metadata.httpStatusCode]).toEqual([range, 'InvalidRange', 416]);
    }
    expect(
      await failure(
        s3.send(new UploadPartCopyCommand({ Bucket: B, Key: key, UploadId, PartNumber: 3, CopySource: `${B}/missing-${tag}` })),
      ),
    ).toMatchObject({ name: 'NoSuchKey' });
    expect(
      await failure(
        s3.send(
          new UploadPartCopyCommand({
            Bucket: B,
            Key: key,
            UploadId,
            PartNumber: 3,
            CopySource: `${B}/${src}`,
            CopySourceIfMatch: '"nope"',
          }),
        ),
      ),
    ).toMatchObject({ $metadata: { httpStatusCode: 412 } });

    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: B,
        Key: key,
        UploadId,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: ranged.CopyPartResult!.ETag },
            { PartNumber: 2, ETag: whole.CopyPartResult!.ETag },
          ],
        },
      }),
    );
    const expected = Buffer.concat([source.subarray(0, 300000), source]);
    expect(done.ETag).toBe(multipartEtag([source.subarray(0, 300000), source]));
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key }));
    expect(md5(Buffer.from(await got.Body!.transformToByteArray()))).toBe(md5(expected));
  });

  test('an upload created with a checksum algorithm gets composite or full-object checksums', async () => {
    const bodies = [randomBytes(3000), randomBytes(100)];
    const crc = (b: Buffer) => {
      const out = Buffer.alloc(4);
      out.writeUInt32BE(crc32(b) >>> 0);
      return out.toString('base64');
    };
    for (const type of ['COMPOSITE', 'FULL_OBJECT'] as const) {
      const key = `sums-${tag}-${type}`;
      const created = await s3.send(
        new CreateMultipartUploadCommand({ Bucket: B, Key: key, ChecksumAlgorithm: 'CRC32', ChecksumType: type }),
      );
      expect([created.ChecksumAlgorithm, created.ChecksumType]).toEqual(['CRC32', type]);
      const parts: CompletedPart[] = [];
      for (const [i, Body] of bodies.entries()) {
        const out = await s3.send(
          new UploadPartCommand({ Bucket: B, Key: key, UploadId: created.UploadId, PartNumber: i + 1, Body, ChecksumAlgorithm: 'CRC32' }),
        );
        expect(out.ChecksumCRC32).toBe(crc(Body));
        parts.push({ PartNumber: i + 1, ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32 });
      }
      const done = await s3.send(
        new CompleteMultipartUploadCommand({ Bucket: B, Key: key, UploadId: created.UploadId, MultipartUpload: { Parts: parts } }),
      );
      const composite = `${crc(Buffer.concat(bodies.map((b) => Buffer.from(crc(b), 'base64'))))}-2`;
      expect(done.ChecksumCRC32).toBe(type === 'COMPOSITE' ? composite : crc(Buffer.concat(bodies)));
      expect(done.ChecksumType).toBe(type);
      const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key, ChecksumMode: 'ENABLED' }));
      expect(got.ChecksumCRC32).toBe(done.ChecksumCRC32);
      expect(Buffer.from(await got.Body!.transformToByteArray())).toEqual(Buffer.concat(bodies));
    }
    // A part checksum in the Complete list that is not the part's is InvalidPart.
    const key = `sums-${tag}-wrong`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key, ChecksumAlgorithm: 'CRC32' }));
    const out = await s3.send(
      new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 1, Body: bodies[0], ChecksumAlgorithm: 'CRC32' }),
    );
    expect(
      await failure(
        s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: B,
            Key: key,
            UploadId,
            MultipartUpload: { Parts: [{ PartNumber: 1, ETag: out.ETag, ChecksumCRC32: 'AAAAAA==' }] },
          }),
        ),
      ),
    ).toMatchObject({ name: 'InvalidPart' });
    await s3.send(new AbortMultipartUploadCommand({ Bucket: B, Key: key, UploadId }));
  });
});

test("the 45613057 B vector (175 leaves, two levels) uploaded in 5 MiB parts and in odd parts gets Kubo's CID", async () => {
  const { vector, bytes } = vectorBytes(45613057);
  const s3 = target.s3();
  for (const [n, sizes] of [Array(8).fill(5 * MiB) as number[], [1, 262143, 7_000_001, 5 * MiB + 3, 9_999_999, 12_345_678]].entries()) {
    const parts = split(bytes, sizes);
    const { done, headers } = await uploadInParts(s3, B, `vector/big-${n}`, parts);
    expect([n, headers['x-service-ipfs-hash-v0'], headers['x-service-ipfs-hash']]).toEqual([n, vector.cidV0, vector.cidV1]);
    expect(done.ETag).toBe(multipartEtag(parts));
  }
  const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: 'vector/big-1' }));
  expect(head.ContentLength).toBe(bytes.length);
});

test('a malformed CompleteMultipartUpload body is MalformedXML', async () => {
  const s3 = target.s3();
  const key = 'malformed';
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
  const part = await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 1, Body: 'x' }));
  for (const body of [
    '<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>',
    '<CompleteMultipartUpload><Part><PartNumber>one</PartNumber><ETag>"x"</ETag></Part></CompleteMultipartUpload>',
  ]) {
    const client = target.s3();
    const breakBody = (next: SerializeHandler<object, object>) => (args: SerializeHandlerArguments<object>) => {
      const req = args.request as { body: string; headers: Record<string, string> };
      req.body = body;
      req.headers['content-length'] = String(Buffer.byteLength(body));
      return next(args);
    };
    client.middlewareStack.addRelativeTo(breakBody as never, {
      relation: 'after',
      toMiddleware: 'serializerMiddleware',
      name: 'breakBody',
    });
    const err = await failure(
      client.send(
        new CompleteMultipartUploadCommand({
          Bucket: B,
          Key: key,
          UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
        }),
      ),
    );
    expect(err).toMatchObject({ name: 'MalformedXML', $metadata: { httpStatusCode: 400 } });
  }
  await s3.send(new AbortMultipartUploadCommand({ Bucket: B, Key: key, UploadId }));
});

// A crash is staged by ending the upload in the store behind the service's back.
localTest('a cleanup a crash interrupted leaks nothing for long: garbage collection finishes it', async () => {
  const service = target.local!;
  const s3 = target.s3();
  const key = 'crashed';
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
  await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 1, Body: randomBytes(5000) }));
  const [part] = await service.services.uploads.allParts(UploadId!);
  // The upload ends (as Abort and Complete end it) but the process dies before removing the parts.
  const { uploads } = service.services;
  await uploads.end({ bucket: B, key, uploadId: UploadId! });
  expect(await failure(s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId })))).toMatchObject({ name: 'NoSuchUpload' });
  await collectGarbage(service.services);
  expect(await pinned(service, part!.cid)).toEqual({ pinned: true, root: true }); // a recent cleanup may still be running
  expect(await uploads.resumeCleanups(0)).toBe(1);
  expect(await uploads.allParts(UploadId!)).toEqual([]);
  await collectGarbage(service.services);
  expect(await pinned(service, part!.cid)).toEqual({ pinned: false, root: false });
});

localDescribe('with CAIRN_ETAG=cid', () => {
  let cidService: TestService;
  beforeAll(async () => {
    cidService = await startTestService({ CAIRN_ETAG: 'cid', CAIRN_GC_INTERVAL: '0', CAIRN_S3_MIN_PART_SIZE: '0' });
  });
  afterAll(async () => {
    await cidService.close();
  });

  test('CompleteMultipartUpload answers the CIDv1 as the ETag, as HEAD does', async () => {
    const { vector, bytes } = vectorBytes(262145);
    const s3 = cidService.s3();
    const { done, headers } = await uploadInParts(s3, B, 'fleek/streamed.bin', split(bytes, [131072]));
    expect(done.ETag).toBe(`"${vector.cidV1}"`);
    expect(headers['x-service-ipfs-hash-v0']).toBe(vector.cidV0);
    const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: 'fleek/streamed.bin' }));
    expect(head.ETag).toBe(`"${vector.cidV1}"`);
    expect(head.PartsCount).toBe(2);
  });
});
