/**
 * The storage slice through both doors: PutObject answers Kubo's CIDs,
 * GetObject returns the bytes, a wrong secret is S3's SignatureDoesNotMatch.
 */
import { GetObjectCommand, PutObjectCommand, ListBucketsCommand, S3ServiceException } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { readFileSync } from 'node:fs';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { absent, captureHeaders, s3Doors } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

const vectors = JSON.parse(readFileSync(new URL('../fixtures/cid-vectors.json', import.meta.url), 'utf8')) as Array<{
  name: string;
  kind: string;
  generator: string;
  cidV0: string;
  cidV1: string;
}>;
const helloWorld = vectors.find((v) => v.name === '"hello world" (no newline)')!;

let target: ApiTarget;
const savedEnv = { ...process.env };
let B: string;

beforeAll(async () => {
  target = await apiTarget();
  B = target.account.bucket;
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

const doors = s3Doors(() => target);

describe.each(doorsFor(doors))('S3 slice through the $name', (door) => {
  test('PutObject answers the CIDs Kubo gives and GetObject returns the bytes', async () => {
    const s3 = door.client();
    const seen = captureHeaders(s3);
    const key = `greeting-${door.name.replace(/\W/g, '')}.txt`;
    const put = await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'hello world', ContentType: 'text/plain' }));
    expect(put.ETag).toBe('"5eb63bbbe01eeed093cb22bb8f5acdc3"');
    expect(seen.headers['x-service-ipfs-hash']).toBe(helloWorld.cidV1);
    expect(seen.headers['x-service-ipfs-hash-v0']).toBe(helloWorld.cidV0);

    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key }));
    expect(await got.Body!.transformToString()).toBe('hello world');
    expect(got.ContentType).toBe('text/plain');
    expect(got.ETag).toBe(put.ETag);
  });

  test('a streamed body of unknown length (aws-chunked) is stored decoded', async () => {
    const s3 = door.client();
    const key = `streamed-${door.name.replace(/\W/g, '')}.txt`;
    const body = door.lambda ? Buffer.from('hello world') : Readable.from([Buffer.from('hello '), Buffer.from('world')]);
    await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: body, ContentLength: 11 }));
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key }));
    expect(await got.Body!.transformToString()).toBe('hello world');
    expect(got.ContentEncoding).toBeUndefined();
  });

  test('a wrong secret is SignatureDoesNotMatch with status 403 and stores nothing', async () => {
    const s3 = door.client({ accessKeyId: target.account.accessKeyId, secretAccessKey: 'not-the-secret-0000000000000000000000000' });
    const key = `forbidden-${door.name.replace(/\W/g, '')}.txt`;
    const err = await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'nope' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(S3ServiceException);
    expect((err as S3ServiceException).name).toBe('SignatureDoesNotMatch');
    expect((err as S3ServiceException).$metadata.httpStatusCode).toBe(403);
    expect(await absent(door.client(), B, key)).toBe(true);
    await target.whenLocal(async (service) => expect(await service.services.objects.get(B, key)).toBeUndefined());
  });

  test('an unknown access key is InvalidAccessKeyId', async () => {
    const s3 = door.client({ accessKeyId: 'CAIRNUNKNOWNKEY00000', secretAccessKey: target.account.secretAccessKey });
    const err = (await s3.send(new ListBucketsCommand({})).catch((e: unknown) => e)) as S3ServiceException;
    expect(err.name).toBe('InvalidAccessKeyId');
    expect(err.$metadata.httpStatusCode).toBe(403);
  });

  test('ListBuckets lists the default bucket first', async () => {
    const out = await door.client().send(new ListBucketsCommand({}));
    expect(out.Buckets?.[0]?.Name).toBe(B);
  });
});

test('an S3 error is S3 XML, not a stack trace', async () => {
  const res = await fetch(`${target.endpoints.s3}/${B}/anything`, {
    headers: {
      authorization: `AWS4-HMAC-SHA256 Credential=${target.account.accessKeyId}/20200101/${target.region}/s3/aws4_request, SignedHeaders=host, Signature=${'0'.repeat(64)}`,
    },
  });
  const text = await res.text();
  expect(res.headers.get('content-type')).toBe('application/xml');
  expect(text).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<Error><Code>InvalidRequest<\/Code>/);
  expect(text).not.toMatch(/at \w+ \(/);
});
