/**
 * Parts staged around the S3 function (functions/s3/multipart/staged.ts):
 * the S3 Lambda handler behind its REST API door, with
 * CAIRN_PART_STAGING_BUCKET naming a bucket of a second S3 endpoint, the
 * local service's own node:http door, which stands in for S3 (metadata,
 * MD5 ETags, If-Match, ListObjectsV2, DeleteObjects) and which the real
 * S3 adapter (functions/aws/s3-staged-parts.ts) talks to through
 * @aws-sdk/client-s3 (AWS_ENDPOINT_URL_S3). A staged part is what the
 * storage API's S3 integration stores: the body as the client sent it,
 * aws-chunked framing included, and the request's headers as
 * `x-amz-meta-<name>`.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { failure, s3Doors } from '../support/s3-doors.js';

const MiB = 1024 * 1024;
const RUN = Date.now().toString(36);
const STAGING = `staging-${RUN}`;
let target: ApiTarget;
let rest: S3Client;
let standIn: S3Client;
const savedEnv = { ...process.env };

beforeAll(async () => {
  target = await apiTarget();
  // Read when the Lambda handler builds its services, at its first request.
  process.env.CAIRN_PART_STAGING_BUCKET = STAGING;
  process.env.AWS_ENDPOINT_URL_S3 = target.endpoints.s3;
  process.env.AWS_ACCESS_KEY_ID = target.account.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = target.account.secretAccessKey;
  const doors = s3Doors(() => target);
  rest = doors.find((d) => d.tag === 'r')!.client();
  standIn = doors.find((d) => d.tag === 'n')!.client();
  await standIn.send(new CreateBucketCommand({ Bucket: STAGING }));
}, 120_000);

afterAll(async () => {
  rest?.destroy();
  standIn?.destroy();
  process.env = savedEnv;
  await target?.close();
});

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const crc32b64 = (b: Buffer) => {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(crc32(b));
  return out.toString('base64');
};

/** An aws-chunked body as botocore sends it with STREAMING-UNSIGNED-PAYLOAD-TRAILER: hex-sized chunks, a CRC32 trailer. */
function unsignedTrailerBody(data: Buffer, chunk = 64 * 1024): Buffer {
  const pieces: Buffer[] = [];
  for (let at = 0; at < data.length; at += chunk) {
    const piece = data.subarray(at, at + chunk);
    pieces.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
  }
  pieces.push(Buffer.from(`0\r\nx-amz-checksum-crc32:${crc32b64(data)}\r\n\r\n`));
  return Buffer.concat(pieces);
}

/** Stages a part as the storage API's S3 integration would; returns the ETag S3 (here the stand-in) answered. */
async function stage(uploadId: string, partNumber: number, body: Buffer, headers: Record<string, string>): Promise<string> {
  const out = await standIn.send(
    new PutObjectCommand({ Bucket: STAGING, Key: `part-staging/${uploadId}/${partNumber}`, Body: body, Metadata: headers }),
  );
  return out.ETag!;
}

async function stagedKeys(uploadId: string): Promise<string[]> {
  const out = await standIn.send(new ListObjectsV2Command({ Bucket: STAGING, Prefix: `part-staging/${uploadId}/` }));
  return (out.Contents ?? []).map((o) => o.Key!);
}

const signed = { authorization: 'unused', 'x-amz-date': '20260101T000000Z' };

test('staged parts, aws-chunked with a trailer and sha256-signed, complete into the object the same bytes make; the staged parts are removed', async () => {
  const B = target.account.bucket;
  const key = `staged-${RUN}`;
  const one = randomBytes(5 * MiB);
  const two = randomBytes(5 * MiB + 123);
  const three = Buffer.from('the last part, through the function');
  const { UploadId } = await rest.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
  // Part 1 as the AWS CLI sends it over HTTPS: unsigned payload, aws-chunked, CRC32 trailer.
  const etag1 = await stage(UploadId!, 1, unsignedTrailerBody(one), {
    'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
    'content-encoding': 'aws-chunked',
    'x-amz-decoded-content-length': String(one.length),
    'x-amz-trailer': 'x-amz-checksum-crc32',
  });
  // Part 2 with its SHA-256 promised in the signed headers (the AWS CLI over plain HTTP).
  const etag2 = await stage(UploadId!, 2, two, { ...signedHeaders(), 'x-amz-content-sha256': sha256(two) });
  const { UploadPartCommand } = await import('@aws-sdk/client-s3');
  const part3 = await rest.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 3, Body: three }));
  const done = await rest.send(
    new CompleteMultipartUploadCommand({
      Bucket: B,
      Key: key,
      UploadId,
      MultipartUpload: {
        Parts: [
          { PartNumber: 1, ETag: etag1 },
          { PartNumber: 2, ETag: etag2 },
          { PartNumber: 3, ETag: part3.ETag },
        ],
      },
    }),
  );
  // S3's multipart ETag over the ETags the client was given.
  const md5s = Buffer.concat([etag1, etag2, part3.ETag!].map((e) => Buffer.from(e.replace(/"/g, ''), 'hex')));
  expect(done.ETag).toBe(`"${createHash('md5').update(md5s).digest('hex')}-3"`);
  const whole = Buffer.concat([one, two, three]);
  const got = await rest.send(new GetObjectCommand({ Bucket: B, Key: key }));
  expect(Buffer.from(await got.Body!.transformToByteArray()).equals(whole)).toBe(true);
  // The CID is the one the whole file gets as one PutObject.
  const single = await standIn.send(new PutObjectCommand({ Bucket: B, Key: `${key}-single`, Body: whole }));
  expect(single.$metadata.httpStatusCode).toBe(200);
  const headSingle = await target.local!.services.objects.get(B, `${key}-single`);
  const headStaged = await target.local!.services.objects.get(B, key);
  expect(headStaged!.cid).toBe(headSingle!.cid);
  expect(await stagedKeys(UploadId!)).toEqual([]);
}, 120_000);

function signedHeaders(): Record<string, string> {
  return {
    authorization: `AWS4-HMAC-SHA256 Credential=${target.account.accessKeyId}/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${'0'.repeat(64)}`,
    'x-amz-date': signed['x-amz-date'],
  };
}

test('a staged body that is not what its headers promised fails the Complete with S3 XML; the upload stays; abort removes the staged parts', async () => {
  const B = target.account.bucket;
  const key = `staged-bad-${RUN}`;
  const body = randomBytes(5 * MiB);
  const { UploadId } = await rest.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
  const complete = (etag: string) =>
    rest.send(
      new CompleteMultipartUploadCommand({ Bucket: B, Key: key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: etag }] } }),
    );
  // A SHA-256 promise the bytes break.
  let etag = await stage(UploadId!, 1, body, { ...signedHeaders(), 'x-amz-content-sha256': sha256(Buffer.from('other')) });
  expect(await failure(complete(etag))).toMatchObject({ name: 'XAmzContentSHA256Mismatch', $metadata: { httpStatusCode: 400 } });
  // A trailer checksum the bytes break.
  const framed = unsignedTrailerBody(body);
  framed.write('AAAAAA==', framed.length - 12, 'latin1');
  etag = await stage(UploadId!, 1, framed, {
    'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
    'content-encoding': 'aws-chunked',
    'x-amz-decoded-content-length': String(body.length),
    'x-amz-trailer': 'x-amz-checksum-crc32',
  });
  expect(await failure(complete(etag))).toMatchObject({ name: 'BadDigest', $metadata: { httpStatusCode: 400 } });
  // An ETag no part has: InvalidPart.
  expect(await failure(complete(`"${'0'.repeat(32)}"`))).toMatchObject({ name: 'InvalidPart' });
  // Framing cut short of its declared length.
  etag = await stage(UploadId!, 1, framed.subarray(0, 1000), {
    'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
    'content-encoding': 'aws-chunked',
    'x-amz-decoded-content-length': String(body.length),
  });
  expect((await failure(complete(etag))).$metadata.httpStatusCode).toBe(400);
  expect(await target.local!.services.objects.get(B, key)).toBeUndefined();
  expect(await stagedKeys(UploadId!)).toEqual([`part-staging/${UploadId}/1`]);
  await rest.send(new AbortMultipartUploadCommand({ Bucket: B, Key: key, UploadId }));
  expect(await stagedKeys(UploadId!)).toEqual([]);
}, 120_000);
