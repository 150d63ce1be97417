/**
 * Bucket CORS through both doors: PutBucketCors/GetBucketCors/
 * DeleteBucketCors with the real @aws-sdk/client-s3, S3's validation of a
 * CORSConfiguration (a refused one changes nothing), OPTIONS preflights as a
 * browser sends them (no credentials), and the CORS headers on actual
 * responses, errors included.
 */
import {
  CreateBucketCommand,
  DeleteBucketCorsCommand,
  GetBucketCorsCommand,
  HeadBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketCorsCommand,
  PutObjectCommand,
  type CORSRule,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { hostFetch } from '../support/http.js';
import { captureHeaders, failure, s3Doors } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const savedEnv = { ...process.env };

beforeAll(async () => {
  target = await apiTarget();
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

const APP = 'https://app.example.com';
const VARY = 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method';
const RULES: CORSRule[] = [
  {
    ID: 'app',
    AllowedOrigins: [APP, 'https://*.preview.example.com'],
    AllowedMethods: ['GET', 'PUT', 'HEAD'],
    AllowedHeaders: ['content-type', 'x-amz-*'],
    ExposeHeaders: ['ETag', 'x-service-ipfs-hash', 'x-service-ipfs-hash-v0'],
    MaxAgeSeconds: 600,
  },
  { AllowedOrigins: ['*'], AllowedMethods: ['GET'] },
];

/** Adds request headers the SDK would not send on its own (a browser's Origin, a hand-made Content-MD5). */
function withHeaders(s3: S3Client, headers: Record<string, string>): S3Client {
  s3.middlewareStack.add(
    (next) => async (args) => {
      Object.assign((args.request as { headers: Record<string, string> }).headers, headers);
      return next(args);
    },
    { step: 'build' },
  );
  return s3;
}

/** Replaces the serialized body (before signing), for documents the SDK would not write. */
function withBody(s3: S3Client, body: string): S3Client {
  s3.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers: Record<string, string>; body: unknown };
      request.body = body;
      request.headers['content-length'] = String(Buffer.byteLength(body));
      for (const name of Object.keys(request.headers))
        if (/^(content-md5|x-amz-checksum-|x-amz-sdk-checksum)/i.test(name)) delete request.headers[name];
      return next(args);
    },
    { step: 'build', priority: 'low' },
  );
  return s3;
}

describe.each(doorsFor(s3Doors(() => target)))('through the $name', (door) => {
  const { tag } = door;
  const bucket = `cors-${tag}`;
  const bare = `cors-bare-${tag}`;
  let s3: S3Client;
  /** An unauthenticated request, as a browser's preflight is (through node:http, which sends the Origin given). */
  const send = (method: string, path: string, headers: Record<string, string> = {}) =>
    (door.lambda ? door.fetch : hostFetch)(`${target.endpoints.s3}${path}`, { method, headers });
  const preflightOf = (path: string, origin: string | undefined, method: string | undefined, requestHeaders?: string) =>
    send('OPTIONS', path, {
      ...(origin !== undefined ? { origin } : {}),
      ...(method !== undefined ? { 'access-control-request-method': method } : {}),
      ...(requestHeaders !== undefined ? { 'access-control-request-headers': requestHeaders } : {}),
    });
  const corsOf = (res: Response) =>
    Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary'));

  beforeAll(async () => {
    s3 = door.client();
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3.send(new CreateBucketCommand({ Bucket: bare }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'hello.txt', Body: 'hello', ACL: 'public-read' }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'private.txt', Body: 'secret' }));
    await s3.send(new PutObjectCommand({ Bucket: bare, Key: 'hello.txt', Body: 'hello' }));
  });

  describe('the configuration', () => {
    beforeAll(async () => {
      await s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: RULES } }));
    });

    test('a bucket without one answers GetBucketCors with 404 NoSuchCORSConfiguration', async () => {
      const err = await failure(s3.send(new GetBucketCorsCommand({ Bucket: bare })));
      expect(err).toMatchObject({ name: 'NoSuchCORSConfiguration', $metadata: { httpStatusCode: 404 } });
      expect(err.message).toBe('The CORS configuration does not exist');
    });

    test('PutBucketCors stores the rules; GetBucketCors returns them in order; DeleteBucketCors removes them (204)', async () => {
      const name = `cors-cycle-${tag}`;
      await s3.send(new CreateBucketCommand({ Bucket: name }));
      const put = await s3.send(new PutBucketCorsCommand({ Bucket: name, CORSConfiguration: { CORSRules: RULES } }));
      expect(put.$metadata.httpStatusCode).toBe(200);
      const got = await s3.send(new GetBucketCorsCommand({ Bucket: name }));
      expect(got.CORSRules).toEqual(RULES);
      // A new configuration replaces the old one whole.
      await s3.send(new PutBucketCorsCommand({ Bucket: name, CORSConfiguration: { CORSRules: [RULES[1]!] } }));
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: name }))).CORSRules).toEqual([RULES[1]]);
      const deleted = await s3.send(new DeleteBucketCorsCommand({ Bucket: name }));
      expect(deleted.$metadata.httpStatusCode).toBe(204);
      expect(await failure(s3.send(new GetBucketCorsCommand({ Bucket: name })))).toMatchObject({ name: 'NoSuchCORSConfiguration' });
      // Deleting a configuration that is not there succeeds, as in S3.
      expect((await s3.send(new DeleteBucketCorsCommand({ Bucket: name }))).$metadata.httpStatusCode).toBe(204);
    });

    test('only the bucket owner may read, set or delete it; a missing bucket is NoSuchBucket', async () => {
      const other = door.client(target.other);
      for (const call of [
        () => other.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [RULES[1]!] } })),
        () => other.send(new GetBucketCorsCommand({ Bucket: bucket })),
        () => other.send(new DeleteBucketCorsCommand({ Bucket: bucket })),
      ]) {
        expect(await failure(call())).toMatchObject({ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
      }
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: bucket }))).CORSRules).toEqual(RULES);
      expect(
        await failure(s3.send(new PutBucketCorsCommand({ Bucket: `nowhere-${tag}`, CORSConfiguration: { CORSRules: RULES } }))),
      ).toMatchObject({ name: 'NoSuchBucket', $metadata: { httpStatusCode: 404 } });
      expect(await failure(s3.send(new HeadBucketCommand({ Bucket: `nowhere-${tag}` })))).toMatchObject({
        $metadata: { httpStatusCode: 404 },
      });
    });

    const rule = (r: Partial<CORSRule>): CORSRule[] => [{ AllowedOrigins: ['*'], AllowedMethods: ['GET'], ...r }];
    test.each<[string, string, CORSRule[], string]>([
      [
        'an unsupported method',
        'InvalidRequest',
        rule({ AllowedMethods: ['GET', 'PATCH'] }),
        'Found unsupported HTTP method in CORS config. Unsupported method is PATCH',
      ],
      [
        'a lower-case method',
        'InvalidRequest',
        rule({ AllowedMethods: ['get'] }),
        'Found unsupported HTTP method in CORS config. Unsupported method is get',
      ],
      [
        'OPTIONS as a method',
        'InvalidRequest',
        rule({ AllowedMethods: ['OPTIONS'] }),
        'Found unsupported HTTP method in CORS config. Unsupported method is OPTIONS',
      ],
      [
        'an origin with two wildcards',
        'InvalidRequest',
        rule({ AllowedOrigins: ['https://*.example.*'] }),
        'AllowedOrigin "https://*.example.*" can not have more than one wildcard.',
      ],
      [
        'a header with two wildcards',
        'InvalidRequest',
        rule({ AllowedHeaders: ['x-*-*'] }),
        'AllowedHeader "x-*-*" can not have more than one wildcard.',
      ],
      [
        'a wildcard ExposeHeader',
        'InvalidRequest',
        rule({ ExposeHeaders: ['*'] }),
        'ExposeHeader "*" contains wildcard. We currently do not support wildcard for ExposeHeader.',
      ],
      ['an ID over 255 characters', 'InvalidArgument', rule({ ID: 'x'.repeat(256) }), ''],
      ['no rule', 'MalformedXML', [], ''],
      ['101 rules', 'MalformedXML', Array.from({ length: 101 }, () => rule({})[0]!), ''],
      ['a rule without AllowedOrigin', 'MalformedXML', [{ AllowedMethods: ['GET'] } as CORSRule], ''],
      ['a rule without AllowedMethod', 'MalformedXML', [{ AllowedOrigins: ['*'] } as CORSRule], ''],
    ])('%s is %s, and the configuration in place stays', async (_, code, rules, message) => {
      const err = await failure(s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: rules } })));
      expect(err).toMatchObject({ name: code, $metadata: { httpStatusCode: 400 } });
      if (message) expect(err.message).toBe(message);
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: bucket }))).CORSRules).toEqual(RULES);
    });

    test('exactly 100 rules are accepted', async () => {
      const name = `cors-hundred-${tag}`;
      await s3.send(new CreateBucketCommand({ Bucket: name }));
      const many = Array.from({ length: 100 }, (_, i): CORSRule => ({
        ID: `r${i}`,
        AllowedOrigins: [`https://${i}.example.com`],
        AllowedMethods: ['GET'],
      }));
      await s3.send(new PutBucketCorsCommand({ Bucket: name, CORSConfiguration: { CORSRules: many } }));
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: name }))).CORSRules).toEqual(many);
    });

    const doc = (inner: string) => `<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${inner}</CORSConfiguration>`;
    const ok = '<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>';
    test.each<[string, string]>([
      ['not XML', 'this is not xml'],
      ['an unclosed element', doc(`<CORSRule>${ok}`)],
      ['another root', `<Cors><CORSRule>${ok}</CORSRule></Cors>`],
      ['an unknown element in a rule', doc(`<CORSRule>${ok}<AllowedColour>red</AllowedColour></CORSRule>`)],
      ['an unknown element beside the rules', doc(`<CORSRule>${ok}</CORSRule><Extra/>`)],
      ['a MaxAgeSeconds that is not a number', doc(`<CORSRule>${ok}<MaxAgeSeconds>soon</MaxAgeSeconds></CORSRule>`)],
      ['a negative MaxAgeSeconds', doc(`<CORSRule>${ok}<MaxAgeSeconds>-1</MaxAgeSeconds></CORSRule>`)],
      ['two IDs in a rule', doc(`<CORSRule><ID>a</ID><ID>b</ID>${ok}</CORSRule>`)],
      [
        'an element inside AllowedOrigin',
        doc('<CORSRule><AllowedOrigin><Host>x</Host></AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>'),
      ],
    ])('%s is MalformedXML, and the configuration in place stays', async (_, body) => {
      const err = await failure(
        withBody(door.client(), body).send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [] } })),
      );
      expect(err).toMatchObject({ name: 'MalformedXML', $metadata: { httpStatusCode: 400 } });
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: bucket }))).CORSRules).toEqual(RULES);
    });

    test('a document with whitespace between elements is read like a compact one', async () => {
      const name = `cors-pretty-${tag}`;
      await s3.send(new CreateBucketCommand({ Bucket: name }));
      const body = `<?xml version="1.0" encoding="UTF-8"?>\n<CORSConfiguration>\n  <CORSRule>\n    <AllowedOrigin>https://a.example</AllowedOrigin>\n    <AllowedMethod>PUT</AllowedMethod>\n    <MaxAgeSeconds>5</MaxAgeSeconds>\n  </CORSRule>\n</CORSConfiguration>\n`;
      await withBody(door.client(), body).send(new PutBucketCorsCommand({ Bucket: name, CORSConfiguration: { CORSRules: [] } }));
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: name }))).CORSRules).toEqual([
        { AllowedOrigins: ['https://a.example'], AllowedMethods: ['PUT'], MaxAgeSeconds: 5 },
      ]);
    });

    test('a Content-MD5 that does not match the body is BadDigest, a malformed one InvalidDigest; a matching one is accepted', async () => {
      const wrong = createHash('md5').update('something else').digest('base64');
      expect(
        await failure(
          s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [RULES[1]!] }, ContentMD5: wrong })),
        ),
      ).toMatchObject({ name: 'BadDigest', $metadata: { httpStatusCode: 400 } });
      expect(
        await failure(
          s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [RULES[1]!] }, ContentMD5: 'not-md5' })),
        ),
      ).toMatchObject({ name: 'InvalidDigest', $metadata: { httpStatusCode: 400 } });
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: bucket }))).CORSRules).toEqual(RULES);
      const body = doc('<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>');
      const name = `cors-md5-${tag}`;
      await s3.send(new CreateBucketCommand({ Bucket: name }));
      const md5 = createHash('md5').update(body).digest('base64');
      await withHeaders(withBody(door.client(), body), { 'content-md5': md5 }).send(
        new PutBucketCorsCommand({ Bucket: name, CORSConfiguration: { CORSRules: [] } }),
      );
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: name }))).CORSRules).toEqual([RULES[1]]);
    });
  });

  describe('preflights (OPTIONS, unauthenticated)', () => {
    beforeAll(async () => {
      await s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: RULES } }));
    });

    test("a matching rule answers 200 with the origin, the rule's methods, the requested headers, its exposed headers and max age", async () => {
      const res = await preflightOf(`/${bucket}/photo.jpg`, APP, 'PUT', 'Content-Type, X-Amz-Date,x-amz-content-sha256');
      expect(res.status).toBe(200);
      expect(corsOf(res)).toEqual({
        'access-control-allow-origin': APP,
        'access-control-allow-methods': 'GET, PUT, HEAD',
        'access-control-allow-headers': 'content-type, x-amz-date, x-amz-content-sha256',
        'access-control-expose-headers': 'ETag, x-service-ipfs-hash, x-service-ipfs-hash-v0',
        'access-control-max-age': '600',
        'access-control-allow-credentials': 'true',
        vary: VARY,
      });
      expect(await res.text()).toBe('');
    });

    test('an origin matches a one-wildcard AllowedOrigin; a rule whose origin is * answers *', async () => {
      const preview = await preflightOf(`/${bucket}/a`, 'https://pr-7.preview.example.com', 'HEAD');
      expect(preview.status).toBe(200);
      expect(preview.headers.get('access-control-allow-origin')).toBe('https://pr-7.preview.example.com');
      // Any origin may GET (the second rule), answered with * and without credentials.
      const anyone = await preflightOf(`/${bucket}/a`, 'https://elsewhere.test', 'GET');
      expect(anyone.status).toBe(200);
      expect(corsOf(anyone)).toEqual({ 'access-control-allow-origin': '*', 'access-control-allow-methods': 'GET', vary: VARY });
    });

    test('rules are taken in order: the first that allows origin, method and headers answers', async () => {
      // The first rule allows APP to GET too, so its headers answer, not the * rule's.
      const res = await preflightOf(`/${bucket}/a`, APP, 'GET');
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-max-age')).toBe('600');
      // A header the first rule does not allow: the * rule has no AllowedHeader either, so nothing matches.
      const refused = await preflightOf(`/${bucket}/a`, APP, 'GET', 'x-custom');
      expect(refused.status).toBe(403);
    });

    test.each<[string, string, string, string | undefined]>([
      ['an origin no rule names', 'https://evil.example.net', 'PUT', undefined],
      ["a method the origin's rule does not allow", APP, 'DELETE', undefined],
      ['a header no AllowedHeader matches', APP, 'PUT', 'content-type, authorization'],
      ['a wildcard origin that needs a subdomain', 'https://preview.example.com', 'PUT', undefined],
    ])("%s is 403 AccessForbidden, S3's XML, and no CORS headers", async (_, origin, method, headers) => {
      const res = await preflightOf(`/${bucket}/photo.jpg`, origin, method, headers);
      expect(res.status).toBe(403);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      const body = await res.text();
      expect(body).toContain('<Code>AccessForbidden</Code>');
      expect(body).toContain('<Message>CORSResponse: This CORS request is not allowed.');
      expect(body).toContain(`<Method>${method}</Method><ResourceType>OBJECT</ResourceType>`);
    });

    test('a bucket without CORS, or no bucket at all, is 403 AccessForbidden alike', async () => {
      for (const b of [bare, `no-such-bucket-${tag}`]) {
        const res = await preflightOf(`/${b}/hello.txt`, APP, 'GET');
        expect(res.status).toBe(403);
        const body = await res.text();
        expect(body).toContain('<Code>AccessForbidden</Code>');
        expect(body).toContain('<Message>CORSResponse: CORS is not enabled for this bucket.</Message>');
      }
    });

    test('the bucket path is answered too (ResourceType BUCKET), whatever the query of the actual request', async () => {
      const listing = await preflightOf(`/${bucket}?list-type=2&prefix=a`, APP, 'GET', 'x-amz-date');
      expect(listing.status).toBe(200);
      expect(listing.headers.get('access-control-allow-origin')).toBe(APP);
      // A multipart upload's and a presigned URL's query must not make the preflight an S3 operation.
      expect((await preflightOf(`/${bucket}/big.bin?uploads`, APP, 'PUT')).status).toBe(200);
      expect((await preflightOf(`/${bucket}/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00&tagging`, APP, 'PUT')).status).toBe(200);
      const refused = await preflightOf(`/${bucket}`, APP, 'DELETE');
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain('<Method>DELETE</Method><ResourceType>BUCKET</ResourceType>');
    });

    test('without Origin, or without (or with a non-CORS) Access-Control-Request-Method, it is 400 BadRequest', async () => {
      const noOrigin = await preflightOf(`/${bucket}/a`, undefined, 'GET');
      expect(noOrigin.status).toBe(400);
      expect(await noOrigin.text()).toContain(
        '<Code>BadRequest</Code><Message>Insufficient information. Origin request header needed.</Message>',
      );
      const noMethod = await preflightOf(`/${bucket}/a`, APP, undefined);
      expect(noMethod.status).toBe(400);
      expect(await noMethod.text()).toContain('<Message>Invalid Access-Control-Request-Method: null</Message>');
      const patch = await preflightOf(`/${bucket}/a`, APP, 'PATCH');
      expect(patch.status).toBe(400);
      expect(await patch.text()).toContain('<Message>Invalid Access-Control-Request-Method: PATCH</Message>');
    });
  });

  describe('actual requests', () => {
    beforeAll(async () => {
      await s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: RULES } }));
    });

    test('GET, HEAD and PUT from an allowed origin carry Allow-Origin, the exposed headers and Vary', async () => {
      const client = withHeaders(door.client(), { origin: APP });
      const seen = captureHeaders(client);
      const put = await client.send(new PutObjectCommand({ Bucket: bucket, Key: 'from-app.txt', Body: 'from the app' }));
      const expected = {
        'access-control-allow-origin': APP,
        'access-control-allow-methods': 'GET, PUT, HEAD',
        'access-control-expose-headers': 'ETag, x-service-ipfs-hash, x-service-ipfs-hash-v0',
        'access-control-max-age': '600',
        'access-control-allow-credentials': 'true',
        vary: VARY,
      };
      expect(seen.headers).toMatchObject(expected);
      expect(seen.headers['x-service-ipfs-hash']).toMatch(/^bafy/);
      expect(put.ETag).toBeDefined();
      await client.send(new GetObjectCommand({ Bucket: bucket, Key: 'from-app.txt' }));
      expect(seen.headers).toMatchObject(expected);
      await client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'from-app.txt' }));
      expect(seen.headers).toMatchObject(expected);
    });

    test('an error answered to an allowed origin carries them too, so the page can read it', async () => {
      const client = withHeaders(door.client(), { origin: APP });
      const err = await failure(client.send(new GetObjectCommand({ Bucket: bucket, Key: 'missing.txt' })));
      expect(err).toMatchObject({ name: 'NoSuchKey', $metadata: { httpStatusCode: 404 } });
      expect(err.$response?.headers['access-control-allow-origin']).toBe(APP);
      // Unauthenticated, on a private object; and with a key nobody has (refused before any bucket was read).
      const anonymous = await send('GET', `/${bucket}/private.txt`, { origin: APP });
      expect(anonymous.status).toBe(403);
      expect(anonymous.headers.get('access-control-allow-origin')).toBe(APP);
      expect(await anonymous.text()).toContain('<Code>AccessDenied</Code>');
      const badSignature = withHeaders(door.client({ accessKeyId: 'CAIRNNOSUCHKEY000001', secretAccessKey: 'x'.repeat(40) }), {
        origin: APP,
      });
      const denied = await failure(badSignature.send(new GetObjectCommand({ Bucket: bucket, Key: 'hello.txt' })));
      expect(denied.name).toBe('InvalidAccessKeyId');
      expect(denied.$response?.headers['access-control-allow-origin']).toBe(APP);
    });

    test('an anonymous GET of a public object from any origin is answered with *', async () => {
      const res = await send('GET', `/${bucket}/hello.txt`, { origin: 'https://any.example.org' });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('hello');
      expect(corsOf(res)).toEqual({ 'access-control-allow-origin': '*', 'access-control-allow-methods': 'GET', vary: VARY });
    });

    test('an origin or method no rule allows gets no Allow-Origin, only Vary; a bucket without CORS gets neither', async () => {
      // Any origin may GET, but only APP's rule allows HEAD.
      const stranger = await send('HEAD', `/${bucket}/hello.txt`, { origin: 'https://stranger.example.net' });
      expect(stranger.status).toBe(200);
      expect(corsOf(stranger)).toEqual({ vary: VARY });
      // PUT is allowed to APP only: another origin's PUT is answered without Allow-Origin.
      const client = withHeaders(door.client(), { origin: 'https://elsewhere.test' });
      const seen = captureHeaders(client);
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: 'elsewhere.txt', Body: 'x' }));
      expect(seen.headers['access-control-allow-origin']).toBeUndefined();
      expect(seen.headers.vary).toBe(VARY);
      // Without Origin (not a browser), still Vary: a cache must not give this answer to a browser.
      expect(corsOf(await send('GET', `/${bucket}/hello.txt`))).toEqual({ vary: VARY });
      const plain = await send('GET', `/${bare}/hello.txt`, { origin: APP });
      expect(plain.status).toBe(403);
      expect(corsOf(plain)).toEqual({});
    });
  });
});
