/**
 * Bad input gets S3's error code and status, as S3 XML, and changes nothing:
 * clock skew, expired presigns, long or malformed keys, bad ranges, lying or
 * truncated bodies; writes asking for what Cairn does not have. And the
 * Lambda object route's size limit and streamed downloads.
 */
import {
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { apiTarget, localDescribe, localTest, REMOTE, type ApiTarget } from '../support/api-target.js';
import { absent, s3Doors, failure } from '../support/s3-doors.js';
import { waitFor } from '../support/wait.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const savedEnv = { ...process.env };
/** The account's own bucket. */
let B: string;

beforeAll(async () => {
  target = await apiTarget();
  B = target.account.bucket;
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

/** A raw HTTP exchange, for what SDKs refuse to send. */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
  endEarly = false,
): Promise<{ status: number; text: string }> {
  const url = new URL(target.endpoints.s3);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', (err) => (endEarly ? resolve({ status: 0, text: String(err) }) : reject(err)));
    if (body) req.write(body);
    // Time is the subject here: a client that sends part of its body, goes
    // quiet, and hangs up a moment later, whatever the server did meanwhile.
    if (endEarly) setTimeout(() => req.destroy(), 300);
    else req.end();
  });
}

const doors = s3Doors(() => target);

describe.each(doorsFor(doors))('through the $name', (door) => {
  const { tag } = door;

  test('a request signed 20 minutes off the server clock is RequestTimeTooSkewed', async () => {
    // One attempt: the SDK would otherwise correct its clock from the error and retry.
    const s3 = door.client(target.account, { systemClockOffset: -20 * 60 * 1000, maxAttempts: 1 });
    const err = await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: `skew-${tag}`, Body: 'x' })));
    expect(err).toMatchObject({ name: 'RequestTimeTooSkewed', $metadata: { httpStatusCode: 403 } });
    expect(await absent(door.client(), B, `skew-${tag}`)).toBe(true);
  });

  test('missing bucket and missing key are NoSuchBucket and NoSuchKey', async () => {
    const s3 = door.client();
    expect(await failure(s3.send(new GetObjectCommand({ Bucket: 'no-such-bucket', Key: 'k' })))).toMatchObject({
      name: 'NoSuchBucket',
      $metadata: { httpStatusCode: 404 },
    });
    expect(await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: `missing-${tag}` })))).toMatchObject({
      name: 'NoSuchKey',
      $metadata: { httpStatusCode: 404 },
    });
  });

  test('a key over 1024 bytes is KeyTooLongError', async () => {
    const err = await failure(door.client().send(new PutObjectCommand({ Bucket: B, Key: 'k'.repeat(1025), Body: 'x' })));
    expect(err).toMatchObject({ name: 'KeyTooLongError', $metadata: { httpStatusCode: 400 } });
  });

  // Another region than the service's own: one S3 never serves (it names the one it expected).
  const otherRegion = () => (target.region === 'eu-west-1' ? 'eu-central-1' : 'eu-west-1');

  test('a request signed for another region is AuthorizationHeaderMalformed naming the expected region, and stores nothing', async () => {
    const s3 = door.client(target.account, { region: otherRegion(), maxAttempts: 1 });
    const err = await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: `region-${tag}`, Body: 'x' })));
    expect([err.name, err.$metadata.httpStatusCode, err.message]).toEqual([
      'AuthorizationHeaderMalformed',
      400,
      `The authorization header is malformed; the region '${otherRegion()}' is wrong; expecting '${target.region}'`,
    ]);
    expect((err as unknown as { Region?: string }).Region).toBe(target.region);
    expect(await absent(door.client(), B, `region-${tag}`)).toBe(true);
    // Reads are refused alike: the region is part of the signature's scope, whatever the operation.
    await door.client().send(new PutObjectCommand({ Bucket: B, Key: `region-read-${tag}`, Body: 'secret' }));
    expect(await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: `region-read-${tag}` })))).toMatchObject({
      name: 'AuthorizationHeaderMalformed',
    });
  });

  test('a streamed (aws-chunked) upload signed for another region is refused before its body is stored', async () => {
    const { Readable } = await import('node:stream');
    const s3 = door.client(target.account, { region: otherRegion(), maxAttempts: 1 });
    const body = Buffer.from('streamed body');
    const err = await failure(
      s3.send(new PutObjectCommand({ Bucket: B, Key: `region-stream-${tag}`, Body: Readable.from([body]), ContentLength: body.length })),
    );
    expect([err.name, err.$metadata.httpStatusCode]).toEqual(['AuthorizationHeaderMalformed', 400]);
    expect(await absent(door.client(), B, `region-stream-${tag}`)).toBe(true);
  });

  test('a presigned URL signed for another region is AuthorizationQueryParametersError naming the expected region', async () => {
    await door.client().send(new PutObjectCommand({ Bucket: B, Key: `region-presign-${tag}`, Body: 'secret' }));
    const url = await getSignedUrl(
      door.client(target.account, { region: otherRegion() }),
      new GetObjectCommand({ Bucket: B, Key: `region-presign-${tag}` }),
      { expiresIn: 60 },
    );
    const res = await door.fetch(url);
    const text = await res.text();
    expect(res.status).toBe(400);
    expect(text).toContain('<Code>AuthorizationQueryParametersError</Code>');
    expect(text).toContain(
      `<Message>Error parsing the X-Amz-Credential parameter; the region &apos;${otherRegion()}&apos; is wrong; expecting &apos;${target.region}&apos;</Message>`,
    );
    expect(text).toContain(`<Region>${target.region}</Region>`);
    expect(text).not.toContain('secret');
    // The same URL signed for the service's region reads the object: only the region was wrong.
    const good = await getSignedUrl(door.client(), new GetObjectCommand({ Bucket: B, Key: `region-presign-${tag}` }), { expiresIn: 60 });
    expect(await (await door.fetch(good)).text()).toBe('secret');
  });

  test('a write asking for encryption, object lock, a website redirect or another storage class is NotImplemented and stores nothing', async () => {
    const s3 = door.client();
    const key = `unsupported-${tag}`;
    const notImplemented = { name: 'NotImplemented', $metadata: { httpStatusCode: 501 } };
    const asks = [
      { ServerSideEncryption: 'AES256' as const },
      { ServerSideEncryption: 'aws:kms' as const, SSEKMSKeyId: 'alias/some-key' },
      { SSECustomerAlgorithm: 'AES256', SSECustomerKey: 'k'.repeat(32) },
      { ObjectLockMode: 'GOVERNANCE' as const, ObjectLockRetainUntilDate: new Date(Date.now() + 86_400_000) },
      { ObjectLockLegalHoldStatus: 'ON' as const },
      { WebsiteRedirectLocation: '/elsewhere.html' },
      { StorageClass: 'GLACIER' as const },
    ];
    for (const ask of asks) {
      const put = await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'x', ...ask })));
      expect([Object.keys(ask).join(), put]).toMatchObject([Object.keys(ask).join(), notImplemented]);
      const upload = await failure(s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key, ...ask })));
      expect([Object.keys(ask).join(), upload]).toMatchObject([Object.keys(ask).join(), notImplemented]);
    }
    expect(await absent(s3, B, key)).toBe(true);
    // A copy too; what asks for nothing passes (the legal hold OFF, the STANDARD class).
    await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: 'plain', StorageClass: 'STANDARD', ObjectLockLegalHoldStatus: 'OFF' }));
    const copy = await failure(
      s3.send(new CopyObjectCommand({ Bucket: B, Key: `${key}-copy`, CopySource: `${B}/${key}`, ServerSideEncryption: 'AES256' })),
    );
    expect(copy).toMatchObject(notImplemented);
    expect(await absent(s3, B, `${key}-copy`)).toBe(true);
    // A bucket with object lock is not made.
    const bucket = `lock-${tag}-${Date.now().toString(36)}`;
    expect(await failure(s3.send(new CreateBucketCommand({ Bucket: bucket, ObjectLockEnabledForBucket: true })))).toMatchObject(
      notImplemented,
    );
    expect(await failure(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'k' })))).toMatchObject({ name: 'NoSuchBucket' });
  });

  test('an unsatisfiable range is 416 InvalidRange', async () => {
    const s3 = door.client();
    await s3.send(new PutObjectCommand({ Bucket: B, Key: `range-${tag}`, Body: '0123456789' }));
    expect(await failure(s3.send(new GetObjectCommand({ Bucket: B, Key: `range-${tag}`, Range: 'bytes=10-20' })))).toMatchObject({
      name: 'InvalidRange',
      $metadata: { httpStatusCode: 416 },
    });
    const part = await s3.send(new GetObjectCommand({ Bucket: B, Key: `range-${tag}`, Range: 'bytes=-3' }));
    expect(await part.Body!.transformToString()).toBe('789');
    expect(part.ContentRange).toBe('bytes 7-9/10');
  });
});

describe('a body whose SHA-256 is not the signed x-amz-content-sha256 is XAmzContentSHA256Mismatch and stores nothing', () => {
  /** A client that signs a false payload hash (the signer takes the header as given). */
  const lying = () => {
    const s3 = target.s3();
    s3.middlewareStack.add(
      (next) => async (args) => {
        (args.request as { headers: Record<string, string> }).headers['x-amz-content-sha256'] = createHash('sha256')
          .update('something else')
          .digest('hex');
        return next(args);
      },
      { step: 'build', name: 'lieAboutThePayload' },
    );
    return s3;
  };

  // 1 KiB is hashed on the request thread, 9 MiB on the local server's hash
  // thread (HASH_THREAD_MIN_BYTES); a deployed stack's Lambda takes at most 4 MiB.
  test.each(REMOTE ? [1024] : [1024, 9 * 1024 * 1024])('PutObject, %i bytes', async (size) => {
    // A key of this run's own: a deployed stack keeps the one the last run stored.
    const Key = `payload-lie-${size}-${Date.now().toString(36)}`;
    const err = await failure(lying().send(new PutObjectCommand({ Bucket: B, Key, Body: randomBytes(size) })));
    expect(err).toMatchObject({ name: 'XAmzContentSHA256Mismatch', $metadata: { httpStatusCode: 400 } });
    expect(await absent(target.s3(), B, Key)).toBe(true);
    // The same bytes with their true hash go in.
    await target.s3().send(new PutObjectCommand({ Bucket: B, Key, Body: randomBytes(size) }));
    expect((await target.s3().send(new HeadObjectCommand({ Bucket: B, Key }))).ContentLength).toBe(size);
  });

  localTest("UploadPart, 9 MiB (the local server's hash thread)", async () => {
    const s3 = target.s3();
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: 'payload-lie-part' }));
    const err = await failure(
      lying().send(
        new UploadPartCommand({ Bucket: B, Key: 'payload-lie-part', UploadId, PartNumber: 1, Body: randomBytes(9 * 1024 * 1024) }),
      ),
    );
    expect(err).toMatchObject({ name: 'XAmzContentSHA256Mismatch', $metadata: { httpStatusCode: 400 } });
    expect((await s3.send(new ListPartsCommand({ Bucket: B, Key: 'payload-lie-part', UploadId }))).Parts ?? []).toEqual([]);
  });
});

test('presigned URLs work until they expire, then are AccessDenied', async () => {
  const s3 = target.s3();
  await s3.send(new PutObjectCommand({ Bucket: B, Key: 'presigned.txt', Body: 'signed for you' }));
  const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: B, Key: 'presigned.txt' }), { expiresIn: 60 });
  const ok = await fetch(url);
  expect(ok.status).toBe(200);
  expect(await ok.text()).toBe('signed for you');
  const old = await getSignedUrl(s3, new GetObjectCommand({ Bucket: B, Key: 'presigned.txt' }), {
    expiresIn: 60,
    signingDate: new Date(Date.now() - 120_000),
  });
  const expired = await fetch(old);
  expect(expired.status).toBe(403);
  const text = await expired.text();
  expect(text).toContain('<Code>AccessDenied</Code>');
  expect(text).toContain('Request has expired');
  const put = await getSignedUrl(s3, new PutObjectCommand({ Bucket: B, Key: 'presigned-put.txt' }), { expiresIn: 60 });
  expect((await fetch(put, { method: 'PUT', body: 'uploaded by URL' })).status).toBe(200);
  const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: 'presigned-put.txt' }));
  expect(await got.Body!.transformToString()).toBe('uploaded by URL');
});

test('a key that is not valid UTF-8 is InvalidURI', async () => {
  // fetch keeps the URL's escapes as given.
  const res = await fetch(`${target.endpoints.s3}/${B}/bad%FFkey`);
  expect(res.status).toBe(400);
  expect(await res.text()).toContain('<Code>InvalidURI</Code>');
});

// Local only: a plain HTTP/1.1 socket, and the upload gate inside the service.
localTest('a body shorter than its Content-Length, then a hang-up, stores nothing', async () => {
  const service = target.local!;
  const res = await raw(
    'PUT',
    `/${B}/liar.txt`,
    { 'content-length': '1000', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
    Buffer.alloc(100),
    true,
  );
  expect([0, 400, 403]).toContain(res.status);
  // The server lets the upload go once it sees the hang-up.
  await waitFor(() => service.services.gate.uploadsInFlight === 0, { what: 'the cut-off upload to end' });
  expect(await absent(target.s3(), B, 'liar.txt')).toBe(true);
});

test('a truncated aws-chunked body is IncompleteBody and stores nothing', async () => {
  const s3 = target.s3();
  const body = Buffer.from('hello world');
  // Sign a real streaming request, then cut its final chunk off.
  s3.middlewareStack.add(
    (next) => async (args) => {
      const req = args.request as { headers: Record<string, string>; body: unknown };
      const chunks: Buffer[] = [];
      for await (const c of req.body as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
      const full = Buffer.concat(chunks);
      const cut = full.subarray(0, full.length - 20);
      req.body = cut;
      delete req.headers['transfer-encoding'];
      req.headers['content-length'] = String(cut.length);
      return next(args);
    },
    { step: 'finalizeRequest', priority: 'low' },
  );
  const { Readable } = await import('node:stream');
  const err = await failure(
    s3.send(new PutObjectCommand({ Bucket: B, Key: 'truncated.txt', Body: Readable.from([body]), ContentLength: body.length })),
  );
  expect([err.name, err.message, err.$metadata.httpStatusCode]).toEqual(['IncompleteBody', expect.any(String), 400]);
  expect(await absent(target.s3(), B, 'truncated.txt')).toBe(true);
});

// Local only: the in-process Lambda door beside the node:http one.
localDescribe('the Lambda object route', () => {
  const nodeDoor = doors.find((d) => !d.lambda);
  const lambdaDoor = doors.find((d) => d.lambda);
  test('refuses a body past what Lambda carries with EntityTooLarge and says to use multipart', async () => {
    const s3 = lambdaDoor!.client();
    // Past the function's 4 MiB, still inside Lambda's 6 MB event as base64 (5.67 MiB).
    const big = randomBytes(4.25 * 1024 * 1024);
    const err = await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: 'too-big.bin', Body: big })));
    expect(err).toMatchObject({ name: 'EntityTooLarge', $metadata: { httpStatusCode: 400 } });
    expect(err.message).toMatch(/multipart/);
    expect(await absent(s3, B, 'too-big.bin')).toBe(true);
    // 5 MiB is 6.67 MiB as base64: Lambda refuses the event before the
    // function runs, and the Function URL answers Lambda's 413, not S3 XML.
    const refused = await s3.send(new PutObjectCommand({ Bucket: B, Key: 'too-big.bin', Body: randomBytes(5 * 1024 * 1024) })).then(
      () => 'stored',
      (e: { $response?: { statusCode?: number } }) => e.$response?.statusCode,
    );
    expect(refused).toBe(413);
    expect(await absent(s3, B, 'too-big.bin')).toBe(true);
    // The node:http door (a long-lived server) takes it.
    await nodeDoor!.client().send(new PutObjectCommand({ Bucket: B, Key: 'too-big.bin', Body: big }));
  });

  test('streams a download larger than a buffered Lambda response', async () => {
    const big = randomBytes(8 * 1024 * 1024);
    await nodeDoor!.client().send(new PutObjectCommand({ Bucket: B, Key: 'big-download.bin', Body: big }));
    const got = await lambdaDoor!.client().send(new GetObjectCommand({ Bucket: B, Key: 'big-download.bin' }));
    const bytes = Buffer.from(await got.Body!.transformToByteArray());
    expect(bytes.length).toBe(big.length);
    expect(createHash('md5').update(bytes).digest('hex')).toBe(createHash('md5').update(big).digest('hex'));
  });
});
