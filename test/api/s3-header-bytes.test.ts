/**
 * Header values that are not ASCII, through every door: SigV4 covers the
 * bytes the client sent (UTF-8 from boto3 and the AWS SDKs), user metadata
 * is stored as text and answered as S3 answers it (an RFC 2047
 * encoded-word), other stored headers come back as the bytes they came
 * in, and what a header cannot carry is S3's error, never a 500. Every door
 * always: how a door hands header bytes over is what this checks.
 */
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { absent, captureHeaders, failure, s3Doors, type S3Door } from '../support/s3-doors.js';
import { signedPut as signedPutBytes, utf8Bytes } from '../support/s3-signed-bytes.js';

let target: ApiTarget;
let B: string;

beforeAll(async () => {
  target = await apiTarget();
  B = target.account.bucket;
});

afterAll(async () => {
  await target?.close();
});

/** A raw signed PUT of header bytes to B. */
const signedPut = (door: S3Door, key: string, extra: Record<string, string>) => signedPutBytes(target, door, B, key, extra);

describe.each(s3Doors(() => target))('through the $name', (door) => {
  const { tag } = door;
  let s3: S3Client;
  beforeAll(() => {
    s3 = door.client();
  });

  test('the AWS SDK puts UTF-8 metadata; it is answered as RFC 2047 encoded-words', async () => {
    const Key = `meta-sdk-${tag}`;
    // The SDK writes these as UTF-8 (Node's HTTP client refuses characters above U+00FF, which a raw request sends below).
    await s3.send(
      new PutObjectCommand({
        Bucket: B,
        Key,
        Body: 'x',
        Metadata: { latin: 'Hello World\u00e9', plain: 'as it is', under: 'a_b?c=d \u00e0' },
      }),
    );
    const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key }));
    expect(head.Metadata).toEqual({
      latin: '=?UTF-8?Q?Hello_World=C3=A9?=',
      plain: 'as it is',
      under: '=?UTF-8?Q?a=5Fb=3Fc=3Dd_=C3=A0?=',
    });
  });

  test('encoded-words sent are decoded before storing; a control character comes back base64', async () => {
    const Key = `meta-words-${tag}`;
    await s3.send(
      new PutObjectCommand({
        Bucket: B,
        Key,
        Body: 'x',
        Metadata: {
          b: '=?UTF-8?B?YWJj?=',
          q: '=?UTF-8?Q?actually-ascii?=',
          two: '=?UTF-8?Q?caf=C3=A9?= =?UTF-8?B?IGF1IGxhaXQ=?=',
          ctl: '=?UTF-8?B?AAECAw==?=',
          other: '=?KOI8-R?Q?x?=',
        },
      }),
    );
    const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key }));
    expect(head.Metadata).toEqual({
      b: 'abc',
      q: 'actually-ascii',
      two: '=?UTF-8?Q?caf=C3=A9_au_lait?=',
      ctl: '=?UTF-8?B?AAECAw==?=',
      other: '=?KOI8-R?Q?x?=',
    });
  });

  test('a raw signed PUT of UTF-8 header bytes verifies (0xA0 inside "à" is no space) and keeps them', async () => {
    const Key = `meta-raw-${tag}`;
    const res = await signedPut(door, Key, {
      'x-amz-meta-x': utf8Bytes('voil\u00e0'),
      'x-amz-meta-cjk': utf8Bytes('\u4e2d\u6587 text'),
      'content-disposition': utf8Bytes('attachment; filename="\u00e0 \u2014.txt"'),
    });
    expect(res.status).toBe(200);
    const seen = captureHeaders(s3);
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key }));
    await got.Body!.transformToString();
    expect(got.Metadata).toEqual({ x: '=?UTF-8?Q?voil=C3=A0?=', cjk: '=?UTF-8?Q?=E4=B8=AD=E6=96=87_text?=' });
    // Other stored headers go back as the bytes they came in, as S3 sends them.
    expect(seen.headers['content-disposition']).toBe(utf8Bytes('attachment; filename="\u00e0 \u2014.txt"'));
  });

  test('a header whose bytes are not UTF-8 verifies where its bytes reach the server (node:http), and fails cleanly where a Lambda front loses them', async () => {
    const Key = `meta-latin1-${tag}`;
    const res = await signedPut(door, Key, { 'x-amz-meta-x': 'caf\u00e9' });
    if (door.lambda) {
      // The front reads the bytes as UTF-8: 0xE9 alone becomes U+FFFD before the function runs.
      expect(res.status).toBe(403);
      expect(await res.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
      expect(await absent(s3, B, Key)).toBe(true);
    } else {
      expect(res.status).toBe(200);
      const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key }));
      expect(head.Metadata).toEqual({ x: '=?UTF-8?Q?caf=C3=A9?=' });
    }
  });

  test('bytes that differ stay apart: a value UTF-8-encoded twice is not the value', async () => {
    const Key = `meta-forged-${tag}`;
    // Each signed over its own bytes; each stored as its own text.
    const res = await signedPut(door, Key, { 'x-amz-meta-x': utf8Bytes(utf8Bytes('\u00e9')) });
    expect(res.status).toBe(200);
    const other = await signedPut(door, `${Key}-2`, { 'x-amz-meta-x': utf8Bytes('\u00e9') });
    expect(other.status).toBe(200);
    const a = await s3.send(new HeadObjectCommand({ Bucket: B, Key }));
    const b = await s3.send(new HeadObjectCommand({ Bucket: B, Key: `${Key}-2` }));
    expect(a.Metadata!.x).toBe('=?UTF-8?Q?=C3=83=C2=A9?=');
    expect(b.Metadata!.x).toBe('=?UTF-8?Q?=C3=A9?=');
  });

  test('user metadata over 2 KB is MetadataTooLarge and stores nothing; 2 KB exactly is taken', async () => {
    const Key = `meta-big-${tag}`;
    // Key "k" (1 byte) + a value of 2047 bytes, "é" counting two.
    const fits = 'a'.repeat(2045) + '\u00e9';
    await s3.send(new PutObjectCommand({ Bucket: B, Key, Body: 'x', Metadata: { k: fits } }));
    const over = `${Key}-over`;
    const err = await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: over, Body: 'x', Metadata: { k: `${fits}a` } })));
    expect(err.name).toBe('MetadataTooLarge');
    expect(err.$metadata.httpStatusCode).toBe(400);
    expect(await absent(s3, B, over)).toBe(true);
  });

  test('a response-* override Latin-1 cannot hold is InvalidArgument, not a 500', async () => {
    const Key = `meta-override-${tag}`;
    await s3.send(new PutObjectCommand({ Bucket: B, Key, Body: 'x' }));
    for (const value of ['name \u2014 dash', 'line\nbreak']) {
      const err = await failure(s3.send(new GetObjectCommand({ Bucket: B, Key, ResponseContentDisposition: value })));
      expect(err.name).toBe('InvalidArgument');
      expect(err.$metadata.httpStatusCode).toBe(400);
    }
    const ok = await s3.send(new GetObjectCommand({ Bucket: B, Key, ResponseContentDisposition: 'inline' }));
    expect(ok.ContentDisposition).toBe('inline');
    await ok.Body!.transformToString();
  });
});
