/**
 * `Expect: 100-continue` on the node:http door (RFC 9110 §10.1.1): an
 * upload that will be stored gets `100 Continue` before its body is sent; one
 * that will be refused (no such bucket, a bad signature, AccessDenied, a body
 * too large) gets its final answer at once, and the client never sends the
 * body. The AWS SDK sends the header with bodies of 2 MB and more
 * (its `requestChecksumCalculation`-independent expect-continue middleware);
 * a raw node:http client shows what goes over the wire. Behind API Gateway
 * the front answers Expect itself, so this is the local door's own.
 */
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { apiTarget, localDescribe, type ApiTarget } from '../support/api-target.js';
import { absent } from '../support/s3-doors.js';

let target: ApiTarget;
const RUN = Date.now().toString(36);

beforeAll(async () => {
  target = await apiTarget();
});

afterAll(async () => {
  await target?.close();
});

interface Sent {
  status: number;
  /** Whether the server said 100 Continue. */
  continued: boolean;
  /** Bytes the client wrote on the socket (headers and any body). */
  written: number;
  text: string;
}

/** A request that announces `body` with Expect: 100-continue and sends it only when told to continue. */
function withExpect(url: string, method: string, body: Buffer, headers: Record<string, string> = {}): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({
      host: u.hostname,
      port: u.port,
      path: u.pathname + u.search,
      method,
      // A socket of its own: what it wrote is this request's alone.
      agent: false,
      headers: { expect: '100-continue', 'content-length': String(body.length), ...headers },
    });
    let continued = false;
    req.on('continue', () => {
      continued = true;
      req.end(body);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const written = req.socket?.bytesWritten ?? 0;
        if (!continued) req.destroy();
        resolve({ status: res.statusCode!, continued, written, text: Buffer.concat(chunks).toString() });
      });
    });
    req.on('error', (err) => (continued ? reject(err) : undefined));
    req.flushHeaders();
  });
}

localDescribe('Expect: 100-continue on the node:http door', () => {
  let s3: S3Client;
  let B: string;
  const BODY = randomBytes(3 * 1024 * 1024);
  beforeAll(() => {
    s3 = target.s3(target.account);
    B = target.account.bucket;
  });
  const presign = (command: PutObjectCommand | UploadPartCommand, client = s3) =>
    getSignedUrl(client, command as PutObjectCommand, { expiresIn: 300 });

  test('a PutObject and an UploadPart that will be stored get 100 Continue, then their answer', async () => {
    const key = `continue-${RUN}-put`;
    const put = await withExpect(await presign(new PutObjectCommand({ Bucket: B, Key: key })), 'PUT', BODY);
    expect([put.status, put.continued]).toEqual([200, true]);
    expect(put.written).toBeGreaterThan(BODY.length);
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(BODY)).toBe(true);

    const partKey = `continue-${RUN}-part`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: partKey }));
    const part = await withExpect(await presign(new UploadPartCommand({ Bucket: B, Key: partKey, UploadId, PartNumber: 1 })), 'PUT', BODY);
    expect([part.status, part.continued]).toEqual([200, true]);
  });

  test('a request that will be refused is answered before its body is sent: no bucket, bad signature, AccessDenied, too large', async () => {
    const key = `continue-${RUN}-refused`;
    const refusals: Array<[string, Promise<Sent>, number, string]> = [
      [
        'no such bucket',
        presign(new PutObjectCommand({ Bucket: `no-bucket-${RUN}`, Key: key })).then((u) => withExpect(u, 'PUT', BODY)),
        404,
        'NoSuchBucket',
      ],
      [
        'bad signature',
        presign(new PutObjectCommand({ Bucket: B, Key: key })).then((u) =>
          withExpect(u.replace(/X-Amz-Signature=[0-9a-f]+/, `X-Amz-Signature=${'0'.repeat(64)}`), 'PUT', BODY),
        ),
        403,
        'SignatureDoesNotMatch',
      ],
      [
        'another account',
        presign(new PutObjectCommand({ Bucket: B, Key: key }), target.s3(target.other)).then((u) => withExpect(u, 'PUT', BODY)),
        403,
        'AccessDenied',
      ],
      [
        'an unsigned upload to a private bucket',
        Promise.resolve(withExpect(`${target.endpoints.s3}/${B}/${key}`, 'PUT', BODY)),
        403,
        'AccessDenied',
      ],
    ];
    for (const [what, sending, status, code] of refusals) {
      const sent = await sending;
      expect([what, sent.status, sent.continued, /<Code>([^<]*)<\/Code>/.exec(sent.text)?.[1]]).toEqual([what, status, false, code]);
      // Only the request's head went out.
      expect([what, sent.written < 64 * 1024]).toEqual([what, true]);
    }
    expect(await absent(s3, B, key)).toBe(true);
  });

  test('the AWS SDK sends Expect: 100-continue with a 3 MB body and its PutObject and UploadPart go through', async () => {
    const seen: string[] = [];
    const client = target.s3(target.account);
    client.middlewareStack.add(
      (next) => async (args) => {
        const headers = (args.request as { headers: Record<string, string> }).headers;
        seen.push(headers.Expect ?? headers.expect ?? '');
        return next(args);
      },
      { step: 'finalizeRequest', priority: 'low' },
    );
    const key = `continue-${RUN}-sdk`;
    await client.send(new PutObjectCommand({ Bucket: B, Key: key, Body: BODY }));
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: B, Key: `${key}-mp` }));
    const part = await client.send(new UploadPartCommand({ Bucket: B, Key: `${key}-mp`, UploadId, PartNumber: 1, Body: BODY }));
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: B,
        Key: `${key}-mp`,
        UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
      }),
    );
    expect(seen.filter((h) => h === '100-continue')).toHaveLength(2);
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: `${key}-mp` }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(BODY)).toBe(true);
  });
});
