/**
 * The S3 API's door in AWS, in what the shared S3 suites (which run through
 * it as the "REST API door") do not single out: the S3 Lambda handler driven
 * with API Gateway REST API events (payload 1.0), on the API's execute-api
 * address (the stage is part of the signed path) and on a custom domain
 * (path and virtual-host style), with base64 bodies both ways, query strings
 * rebuilt from decoded parameters, and request bodies held to
 * CAIRN_MAX_REQUEST_BODY whether or not API Gateway passes a Content-Length.
 * Also the gateway behind the public objects' REST API (custom domains):
 * `<bucket>.<storagePublicDomain>/<key>` reaches it with its Host.
 */
import { createHash, randomBytes } from 'node:crypto';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { toRestResult, toRestStreamingResult } from '../../functions/core/http/api-gateway-rest.js';
import { apiTarget, localDescribe, type ApiTarget } from '../support/api-target.js';
import { REST_API_ENDPOINT, restFetch, restRequestHandler, type LambdaFn } from '../support/lambda-door.js';
import { absent, failure } from '../support/s3-doors.js';

const DOMAIN = 's3.rest.example.test';
const PUBLIC_DOMAIN = 'storage.rest.example.test';
const MiB = 1024 * 1024;
let target: ApiTarget;
const B = 'default-bucket';

beforeAll(async () => {
  // Info lines on: the S3 function's invocation lines are checked below.
  target = await apiTarget({ CAIRN_BUCKET_ENDPOINT_DOMAIN: DOMAIN, CAIRN_STORAGE_PUBLIC_DOMAIN: PUBLIC_DOMAIN, CAIRN_LOG_LEVEL: 'info' });
}, 120_000);
afterAll(() => target?.close());

/** The S3 handler with a change to each event before it runs: what API Gateway might do differently. */
function altered(change: (event: APIGatewayProxyEvent) => void): LambdaFn {
  return (event, context) => {
    change(event as APIGatewayProxyEvent);
    return target.s3Lambda!(event, context);
  };
}

/** An SDK client whose every request reaches the S3 handler as a REST API event. */
function client(endpoint: string, extra: S3ClientConfig & { handler?: LambdaFn } = {}): S3Client {
  const { handler, ...config } = extra;
  return new S3Client({
    endpoint,
    region: target.region,
    forcePathStyle: true,
    credentials: target.account,
    maxAttempts: 1,
    requestHandler: restRequestHandler(handler ?? target.s3Lambda!) as never,
    ...config,
  });
}

function header(event: APIGatewayProxyEvent, name: string): string | undefined {
  const key = Object.keys(event.multiValueHeaders ?? {}).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : event.multiValueHeaders[key]![0];
}

function removeHeader(event: APIGatewayProxyEvent, name: string): void {
  for (const k of Object.keys(event.multiValueHeaders ?? {})) if (k.toLowerCase() === name) delete event.multiValueHeaders[k];
  for (const k of Object.keys(event.headers ?? {})) if (k.toLowerCase() === name) delete event.headers[k];
}

localDescribe('the signed host and path', () => {
  test('on the execute-api address the stage is signed: requests verify, and the same signature without the stage does not', async () => {
    const seen: APIGatewayProxyEvent[] = [];
    const s3 = client(REST_API_ENDPOINT, { handler: altered((e) => void seen.push(e)) });
    await s3.send(new PutObjectCommand({ Bucket: B, Key: 'rest/staged.txt', Body: 'staged' }));
    expect(await (await s3.send(new GetObjectCommand({ Bucket: B, Key: 'rest/staged.txt' }))).Body!.transformToString()).toBe('staged');
    expect(seen[0]!.path).toBe(`/${B}/rest/staged.txt`);
    expect(seen[0]!.requestContext.path).toBe(`/s3/${B}/rest/staged.txt`);

    // Had the function checked the path it routes on, the client's signature would not match.
    const stageless = client(REST_API_ENDPOINT, { handler: altered((e) => void (e.requestContext.path = e.path)) });
    const err = await failure(stageless.send(new PutObjectCommand({ Bucket: B, Key: 'rest/stageless.txt', Body: 'x' })));
    expect([err.name, err.$metadata.httpStatusCode]).toEqual(['SignatureDoesNotMatch', 403]);
    expect(await absent(s3, B, 'rest/stageless.txt')).toBe(true);
  });

  test('on a custom domain (no stage): path style and virtual-host style verify against the host they were signed for', async () => {
    const pathStyle = client(`https://${DOMAIN}`);
    await pathStyle.send(new PutObjectCommand({ Bucket: B, Key: 'rest/path-style.txt', Body: 'path' }));
    const seen: APIGatewayProxyEvent[] = [];
    const virtual = client(`https://${DOMAIN}`, { forcePathStyle: false, handler: altered((e) => void seen.push(e)) });
    expect(await (await virtual.send(new GetObjectCommand({ Bucket: B, Key: 'rest/path-style.txt' }))).Body!.transformToString()).toBe(
      'path',
    );
    expect(header(seen[0]!, 'host')).toBe(`${B}.${DOMAIN}`);
    expect(seen[0]!.path).toBe('/rest/path-style.txt');
    expect(seen[0]!.requestContext.path).toBe('/rest/path-style.txt');

    // Signed for one host, delivered with another: refused.
    const moved = client(`https://${DOMAIN}`, {
      handler: altered((e) => {
        removeHeader(e, 'host');
        e.multiValueHeaders.Host = [`other.${DOMAIN}.invalid`];
      }),
    });
    const err = await failure(moved.send(new PutObjectCommand({ Bucket: B, Key: 'rest/moved.txt', Body: 'x' })));
    expect(err.name).toBe('SignatureDoesNotMatch');
    expect(await absent(pathStyle, B, 'rest/moved.txt')).toBe(true);
  });

  test('query strings are rebuilt from the decoded parameters: keys and prefixes with reserved characters list and verify', async () => {
    const s3 = client(REST_API_ENDPOINT);
    const keys = ['rest/q/a b+c&d=e#f%g.txt', 'rest/q/a b+c&d=e#f%h.txt', 'rest/q/ü/日本.txt', 'rest/q/other.txt'];
    for (const Key of keys) await s3.send(new PutObjectCommand({ Bucket: B, Key, Body: Key }));
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: B, Prefix: 'rest/q/a b+c&d=e#f%' }));
    expect(listed.Contents!.map((c) => c.Key)).toEqual(keys.slice(0, 2));
    const unicode = await s3.send(new ListObjectsV2Command({ Bucket: B, Prefix: 'rest/q/', Delimiter: '/', StartAfter: keys[1] }));
    expect(unicode.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['rest/q/ü/']);
    expect(unicode.Contents!.map((c) => c.Key)).toEqual(['rest/q/other.txt']);
  });
});

localDescribe('bodies', () => {
  test('arrive base64-encoded and are stored and served byte for byte, every byte value included', async () => {
    const seen: APIGatewayProxyEvent[] = [];
    const s3 = client(REST_API_ENDPOINT, { handler: altered((e) => void seen.push(e)) });
    const bytes = Buffer.concat([
      Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
      randomBytes(300_000),
      Buffer.from([0xff, 0xfe, 0x00, 0x0d, 0x0a]),
    ]);
    await s3.send(new PutObjectCommand({ Bucket: B, Key: 'rest/binary.bin', Body: bytes, ContentType: 'text/plain; charset=utf-8' }));
    expect(seen[0]!.isBase64Encoded).toBe(true);
    expect(Buffer.from(seen[0]!.body!, 'base64').equals(bytes)).toBe(true);
    const got = Buffer.from(
      await (await s3.send(new GetObjectCommand({ Bucket: B, Key: 'rest/binary.bin' }))).Body!.transformToByteArray(),
    );
    expect(createHash('sha256').update(got).digest('hex')).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  test('a download larger than a buffered response (6 MB) streams through', async () => {
    const big = randomBytes(7 * MiB);
    await target.s3().send(new PutObjectCommand({ Bucket: B, Key: 'rest/big.bin', Body: big }));
    const got = Buffer.from(
      await (await client(REST_API_ENDPOINT).send(new GetObjectCommand({ Bucket: B, Key: 'rest/big.bin' }))).Body!.transformToByteArray(),
    );
    expect(got.equals(big)).toBe(true);
  });

  test('a declared body over CAIRN_MAX_REQUEST_BODY (4 MiB) is EntityTooLarge and stores nothing', async () => {
    const s3 = client(REST_API_ENDPOINT);
    const err = await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: 'rest/too-big.bin', Body: randomBytes(4 * MiB + 1) })));
    expect([err.name, err.$metadata.httpStatusCode]).toEqual(['EntityTooLarge', 400]);
    expect(err.message).toMatch(/multipart/);
    expect(await absent(s3, B, 'rest/too-big.bin')).toBe(true);
    // 4 MiB itself goes through.
    await s3.send(new PutObjectCommand({ Bucket: B, Key: 'rest/just-fits.bin', Body: randomBytes(4 * MiB) }));
  });

  test('without a Content-Length from API Gateway, the body is measured: small ones stored, large ones EntityTooLarge', async () => {
    const stripped: boolean[] = [];
    const s3 = client(REST_API_ENDPOINT, {
      handler: altered((e) => {
        stripped.push(header(e, 'content-length') !== undefined);
        removeHeader(e, 'content-length');
      }),
    });
    await s3.send(new PutObjectCommand({ Bucket: B, Key: 'rest/no-length.txt', Body: 'measured' }));
    expect(stripped[0]).toBe(true);
    expect(await (await target.s3().send(new GetObjectCommand({ Bucket: B, Key: 'rest/no-length.txt' }))).Body!.transformToString()).toBe(
      'measured',
    );
    const err = await failure(s3.send(new PutObjectCommand({ Bucket: B, Key: 'rest/no-length-big.bin', Body: randomBytes(4 * MiB + 10) })));
    expect([err.name, err.$metadata.httpStatusCode]).toEqual(['EntityTooLarge', 400]);
    expect(await absent(target.s3(), B, 'rest/no-length-big.bin')).toBe(true);
  });
});

localDescribe('logs', () => {
  test('one invocation line per request with the request id, method, path and status, and never the query string', async () => {
    const lines: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    try {
      await client(REST_API_ENDPOINT).send(new ListObjectsV2Command({ Bucket: B, Prefix: 'rest/secret-prefix-in-query' }));
    } finally {
      process.stdout.write = write;
    }
    const records = lines
      .flatMap((l) => l.split('\n'))
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const invocations = records.filter((r) => r.msg === 'invocation');
    // The path without the stage (the SDK asks for the bucket with a trailing slash).
    expect(invocations).toEqual([
      expect.objectContaining({ fn: 's3', requestId: 'test-request', trigger: 'http', method: 'GET', path: `/${B}/`, status: 200 }),
    ]);
    expect(lines.join('')).not.toContain('secret-prefix-in-query');
  });
});

localDescribe('public object URLs through their REST API (the gateway function)', () => {
  test('<bucket>.<storagePublicDomain>/<key> serves a public-read object byte for byte and refuses a private one', async () => {
    const bytes = randomBytes(200_000);
    await target.s3().send(
      new PutObjectCommand({
        Bucket: B,
        Key: 'rest/public.bin',
        Body: bytes,
        ACL: 'public-read',
        ContentType: 'application/octet-stream',
      }),
    );
    await target.s3().send(new PutObjectCommand({ Bucket: B, Key: 'rest/private.txt', Body: 'private' }));
    const get = restFetch(target.gatewayLambda!);
    const open = await get(`https://${B}.${PUBLIC_DOMAIN}/rest/public.bin`);
    expect(open.status).toBe(200);
    expect(Buffer.from(await open.arrayBuffer()).equals(bytes)).toBe(true);
    expect(open.headers.get('content-type')).toBe('application/octet-stream');
    const ranged = await get(`https://${B}.${PUBLIC_DOMAIN}/rest/public.bin`, { headers: { range: 'bytes=10-19' } });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(10, 20))).toBe(true);
    expect((await get(`https://${B}.${PUBLIC_DOMAIN}/rest/private.txt`)).status).toBe(403);
  });
});

describe('results for a REST API', () => {
  const withCookies = () => {
    const headers = new Headers({ 'content-type': 'text/plain', etag: '"x"' });
    headers.append('set-cookie', 'a=1; Path=/');
    headers.append('set-cookie', 'b=2; Path=/');
    return new Response('hello', { status: 201, headers });
  };

  test('a streamed one: the prelude has the status, one value per header, and every Set-Cookie in multiValueHeaders', async () => {
    const result = toRestStreamingResult(withCookies(), 'GET');
    expect(result.statusCode).toBe(201);
    expect(result.headers).toEqual({ 'content-type': 'text/plain', etag: '"x"' });
    expect(result.multiValueHeaders).toEqual({ 'set-cookie': ['a=1; Path=/', 'b=2; Path=/'] });
    expect(await new Response(result.body as ReadableStream).text()).toBe('hello');
    expect(toRestStreamingResult(new Response('body'), 'HEAD').body).toBe('');
  });

  test('a buffered one: the body base64, the same headers', async () => {
    const result = await toRestResult(withCookies(), 'GET');
    expect(result).toEqual({
      statusCode: 201,
      headers: { 'content-type': 'text/plain', etag: '"x"' },
      multiValueHeaders: { 'set-cookie': ['a=1; Path=/', 'b=2; Path=/'] },
      body: Buffer.from('hello').toString('base64'),
      isBase64Encoded: true,
    });
  });
});
