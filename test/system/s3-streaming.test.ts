/**
 * Uploads and downloads stream: a 1 GiB PUT and GET through the local server
 * (a child process, so its memory is its own) keep the server's peak RSS
 * under 300 MiB. The body is generated as it is sent, never held whole.
 * The server runs with `npm start`'s Node flags (npmStartArgs in
 * child-service.ts says why each).
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { startChildService, type ChildService } from '../support/child-service.js';

const GIB = 1024 ** 3;
const PIECE = 1024 * 1024;
const LIMIT_MIB = 300;

let service: ChildService;

beforeAll(async () => {
  service = await startChildService();
}, 60_000);

afterAll(async () => {
  await service?.stop();
});

/** `size` bytes in 1 MiB pieces, each distinct (so every 256 KiB block is new), hashed as they are produced. */
function generated(size: number): { stream: Readable; md5: () => string } {
  const base = randomBytes(PIECE);
  const md5 = createHash('md5');
  let digest: string | undefined;
  function* pieces() {
    for (let offset = 0, i = 0; offset < size; offset += PIECE, i++) {
      const piece = Buffer.from(base.subarray(0, Math.min(PIECE, size - offset)));
      for (let at = 0; at + 8 <= piece.length; at += 262144) piece.writeUInt32BE(i, at);
      md5.update(piece);
      yield piece;
    }
    digest = md5.digest('hex');
  }
  return {
    stream: Readable.from(pieces(), { objectMode: false }),
    md5: () => {
      if (!digest) throw new Error('the stream was not read to the end');
      return digest;
    },
  };
}

test('a 1 GiB object streams in and out with the server under 300 MiB peak RSS', async () => {
  const s3 = service.s3();
  const body = generated(GIB);
  const started = Date.now();
  const put = await s3.send(
    new PutObjectCommand({
      Bucket: 'default-bucket',
      Key: 'one-gib.bin',
      Body: body.stream,
      ContentLength: GIB,
      ContentType: 'application/octet-stream',
    }),
  );
  const putMs = Date.now() - started;
  const peakAfterPut = service.peakRssMiB();
  expect(put.ETag).toBe(`"${body.md5()}"`);

  const got = await s3.send(new GetObjectCommand({ Bucket: 'default-bucket', Key: 'one-gib.bin' }));
  expect(got.ContentLength).toBe(GIB);
  const md5 = createHash('md5');
  let size = 0;
  for await (const chunk of got.Body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    md5.update(chunk);
  }
  const getMs = Date.now() - started - putMs;
  expect(size).toBe(GIB);
  expect(md5.digest('hex')).toBe(body.md5());

  const peak = service.peakRssMiB();
  process.stderr.write(
    `1 GiB: PUT ${putMs} ms, GET ${getMs} ms, server peak RSS ${peakAfterPut.toFixed(0)} MiB after the PUT, ${peak.toFixed(0)} MiB after the GET\n`,
  );
  expect(peak).toBeLessThan(LIMIT_MIB);
  s3.destroy();
}, 180_000);
