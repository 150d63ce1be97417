/**
 * S3 behaviours measured against AWS S3 and ceph/s3-tests: Expect headers
 * other than 100-continue on the local door.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { connect } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';
import type { SourceData } from '@smithy/types';
import { startTestService, BOOT, type TestService } from '../support/service.js';

let service: TestService;
const savedEnv = { ...process.env };

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
});

afterAll(async () => {
  process.env = savedEnv;
  await service.close();
});

const bytes = (data: SourceData): string | Uint8Array =>
  typeof data === 'string' ? data : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);

/** node:crypto in the shape SignatureV4 wants. */
class Sha256 {
  private readonly hash: Hash | Hmac;
  constructor(secret?: SourceData) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: SourceData): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

/**
 * A SigV4-signed PUT written on a raw socket, with `expect` added unsigned as
 * the client sends it (`''` is an empty `Expect:` line). With 100-continue,
 * the body waits for the interim answer as a client's would.
 */
async function rawSignedPut(path: string, body: string, expect: string): Promise<{ status: number; interim: boolean }> {
  const url = new URL(service.endpoints.s3);
  const signer = new SignatureV4({ credentials: BOOT, region: 'us-east-1', service: 's3', sha256: Sha256, uriEscapePath: false });
  const signed = await signer.sign({
    method: 'PUT',
    protocol: 'http:',
    hostname: url.hostname,
    port: Number(url.port),
    path,
    headers: {
      host: url.host,
      'content-length': String(Buffer.byteLength(body)),
      'x-amz-content-sha256': createHash('sha256').update(body).digest('hex'),
    },
    body,
  });
  const head = [`PUT ${path} HTTP/1.1`, ...Object.entries(signed.headers).map(([k, v]) => `${k}: ${v}`), `Expect:${expect ? ` ${expect}` : ''}`, 'Connection: close'];
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let received = '';
    let sent = false;
    const send = () => {
      sent = true;
      socket.write(body);
    };
    socket.on('connect', () => {
      socket.write(`${head.join('\r\n')}\r\n\r\n`);
      if (expect !== '100-continue') send();
    });
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (!sent && received.startsWith('HTTP/1.1 100 ')) send();
    });
    socket.on('error', reject);
    socket.on('end', () => {
      const interim = received.startsWith('HTTP/1.1 100 ');
      const final = interim ? received.slice(received.indexOf('\r\n\r\n') + 4) : received;
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(final)?.[1] ?? 0), interim });
    });
    setTimeout(() => socket.destroy(new Error(`no answer; got ${JSON.stringify(received)}`)), 5000).unref();
  });
}

describe('Expect headers on the local door', () => {
  const s3 = () => service.s3();

  test.each([
    ['a bogus Expect', 'foo'],
    ['an empty Expect', ''],
  ])('a signed PUT with %s is stored as if the header were absent (S3 ignores it; Node alone answers 417)', async (_what, value) => {
    const key = `expect-${value || 'empty'}.txt`;
    const answer = await rawSignedPut(`/default-bucket/${key}`, `sent with Expect: ${value}`, value);
    expect(answer).toEqual({ status: 200, interim: false });
    const got = await s3().send(new GetObjectCommand({ Bucket: 'default-bucket', Key: key }));
    expect(await got.Body!.transformToString()).toBe(`sent with Expect: ${value}`);
  });

  test('Expect: 100-continue still gets its interim 100 before the body is sent', async () => {
    const answer = await rawSignedPut('/default-bucket/expect-continue.txt', 'after the interim answer', '100-continue');
    expect(answer).toEqual({ status: 200, interim: true });
    const got = await s3().send(new GetObjectCommand({ Bucket: 'default-bucket', Key: 'expect-continue.txt' }));
    expect(await got.Body!.transformToString()).toBe('after the interim answer');
  });
});
