/**
 * Bucket CORS through both doors: PutBucketCors/GetBucketCors/
 * DeleteBucketCors with the real @aws-sdk/client-s3, and S3's validation of
 * a CORSConfiguration (a refused one changes nothing).
 */
import {
  CreateBucketCommand,
  DeleteBucketCorsCommand,
  GetBucketCorsCommand,
  PutBucketCorsCommand,
  type CORSRule,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { startTestService, type TestService } from '../support/service.js';
import type { LambdaFn } from '../support/lambda-door.js';
import { failure, loadS3Lambda, s3Doors } from '../support/s3-doors.js';

let service: TestService;
let lambda: LambdaFn;
const savedEnv = { ...process.env };
const OTHER = { name: 'cors-other', accessKeyId: 'CAIRNCORSOTHER000001', secretAccessKey: 'cors-other-secret-012345678901234567', apiToken: 'cairn_cors_other_token_01234567' };

beforeAll(async () => {
  service = await startTestService();
  lambda = await loadS3Lambda(service);
  await service.services.accounts.createAccount(OTHER);
});

afterAll(async () => {
  process.env = savedEnv;
  await service.close();
});

const APP = 'https://app.example.com';
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
      for (const name of Object.keys(request.headers)) if (/^(content-md5|x-amz-checksum-|x-amz-sdk-checksum)/i.test(name)) delete request.headers[name];
      return next(args);
    },
    { step: 'build', priority: 'low' },
  );
  return s3;
}

const [nodeDoor, lambdaDoor] = s3Doors(() => service, () => lambda);

describe.each([nodeDoor!, lambdaDoor!])('through the $name', (door) => {
  const tag = door.name.startsWith('Lambda') ? 'l' : 'n';
  const bucket = `cors-${tag}`;
  const bare = `cors-bare-${tag}`;
  let s3: S3Client;

  beforeAll(async () => {
    s3 = door.client();
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3.send(new CreateBucketCommand({ Bucket: bare }));
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
      expect((await service.services.buckets.get(name))?.cors).toHaveLength(2);
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
      const other = door.client(OTHER);
      for (const call of [
        () => other.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [RULES[1]!] } })),
        () => other.send(new GetBucketCorsCommand({ Bucket: bucket })),
        () => other.send(new DeleteBucketCorsCommand({ Bucket: bucket })),
      ]) {
        expect(await failure(call())).toMatchObject({ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
      }
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: bucket }))).CORSRules).toEqual(RULES);
      expect(await failure(s3.send(new PutBucketCorsCommand({ Bucket: `nowhere-${tag}`, CORSConfiguration: { CORSRules: RULES } })))).toMatchObject({ name: 'NoSuchBucket', $metadata: { httpStatusCode: 404 } });
      expect(await service.services.buckets.get(`nowhere-${tag}`)).toBeUndefined();
    });

    const rule = (r: Partial<CORSRule>): CORSRule[] => [{ AllowedOrigins: ['*'], AllowedMethods: ['GET'], ...r }];
    test.each<[string, string, CORSRule[], string]>([
      ['an unsupported method', 'InvalidRequest', rule({ AllowedMethods: ['GET', 'PATCH'] }), 'Found unsupported HTTP method in CORS config. Unsupported method is PATCH'],
      ['a lower-case method', 'InvalidRequest', rule({ AllowedMethods: ['get'] }), 'Found unsupported HTTP method in CORS config. Unsupported method is get'],
      ['OPTIONS as a method', 'InvalidRequest', rule({ AllowedMethods: ['OPTIONS'] }), 'Found unsupported HTTP method in CORS config. Unsupported method is OPTIONS'],
      ['an origin with two wildcards', 'InvalidRequest', rule({ AllowedOrigins: ['https://*.example.*'] }), 'AllowedOrigin "https://*.example.*" can not have more than one wildcard.'],
      ['a header with two wildcards', 'InvalidRequest', rule({ AllowedHeaders: ['x-*-*'] }), 'AllowedHeader "x-*-*" can not have more than one wildcard.'],
      ['a wildcard ExposeHeader', 'InvalidRequest', rule({ ExposeHeaders: ['*'] }), 'ExposeHeader "*" contains wildcard. We currently do not support wildcard for ExposeHeader.'],
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
      const many = Array.from({ length: 100 }, (_, i): CORSRule => ({ ID: `r${i}`, AllowedOrigins: [`https://${i}.example.com`], AllowedMethods: ['GET'] }));
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
      ['an element inside AllowedOrigin', doc('<CORSRule><AllowedOrigin><Host>x</Host></AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>')],
    ])('%s is MalformedXML, and the configuration in place stays', async (_, body) => {
      const err = await failure(withBody(door.client(), body).send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [] } })));
      expect(err).toMatchObject({ name: 'MalformedXML', $metadata: { httpStatusCode: 400 } });
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: bucket }))).CORSRules).toEqual(RULES);
    });

    test('a document with whitespace between elements is read like a compact one', async () => {
      const name = `cors-pretty-${tag}`;
      await s3.send(new CreateBucketCommand({ Bucket: name }));
      const body = `<?xml version="1.0" encoding="UTF-8"?>\n<CORSConfiguration>\n  <CORSRule>\n    <AllowedOrigin>https://a.example</AllowedOrigin>\n    <AllowedMethod>PUT</AllowedMethod>\n    <MaxAgeSeconds>5</MaxAgeSeconds>\n  </CORSRule>\n</CORSConfiguration>\n`;
      await withBody(door.client(), body).send(new PutBucketCorsCommand({ Bucket: name, CORSConfiguration: { CORSRules: [] } }));
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: name }))).CORSRules).toEqual([{ AllowedOrigins: ['https://a.example'], AllowedMethods: ['PUT'], MaxAgeSeconds: 5 }]);
    });

    test('a Content-MD5 that does not match the body is BadDigest, a malformed one InvalidDigest; a matching one is accepted', async () => {
      const wrong = createHash('md5').update('something else').digest('base64');
      expect(await failure(s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [RULES[1]!] }, ContentMD5: wrong })))).toMatchObject({ name: 'BadDigest', $metadata: { httpStatusCode: 400 } });
      expect(await failure(s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [RULES[1]!] }, ContentMD5: 'not-md5' })))).toMatchObject({ name: 'InvalidDigest', $metadata: { httpStatusCode: 400 } });
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: bucket }))).CORSRules).toEqual(RULES);
      const body = doc('<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>');
      const name = `cors-md5-${tag}`;
      await s3.send(new CreateBucketCommand({ Bucket: name }));
      const md5 = createHash('md5').update(body).digest('base64');
      await withHeaders(withBody(door.client(), body), { 'content-md5': md5 }).send(new PutBucketCorsCommand({ Bucket: name, CORSConfiguration: { CORSRules: [] } }));
      expect((await s3.send(new GetBucketCorsCommand({ Bucket: name }))).CORSRules).toEqual([RULES[1]]);
    });
  });
});
