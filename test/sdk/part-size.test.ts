/**
 * Part sizes chosen by the endpoint: Cairn's S3 API says on every answer
 * how large a body one request may carry (x-cairn-max-request-body: 4 MiB
 * through the Lambda door, S3's 5 GiB on one machine), and refuses larger
 * ones with an S3 EntityTooLarge that names the part size setting.
 */
import { HeadBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { apiTarget, localDescribe, type ApiTarget } from '../support/api-target.js';
import { REST_API_ENDPOINT, restRequestHandler, type LambdaFn } from '../support/lambda-door.js';
import { LAMBDA_MAX_EVENT_BYTES, limitedLambda, type LimitedLambda } from '../support/lambda-limits.js';
import { absent, captureHeaders, failure } from '../support/s3-doors.js';
import { generatedChunks, MiB } from '../support/sdk.js';

const B = 'default-bucket';
const LIMIT = 4 * MiB;
let target: ApiTarget;

beforeAll(async () => {
  target = await apiTarget({ CAIRN_LOG_LEVEL: 'error' });
}, 120_000);
afterAll(() => target?.close());

interface Seen {
  op: string;
  bodyBytes: number;
}

/** The S3 handler behind Lambda's event limit, recording what each request was (HeadBucket, PutObject, UploadPart n) and its body's size. */
function door(): { lambda: LimitedLambda; seen: Seen[] } {
  const seen: Seen[] = [];
  const record: LambdaFn = (event, context) => {
    const e = event as APIGatewayProxyEvent;
    const q = e.queryStringParameters ?? {};
    const op =
      e.httpMethod === 'HEAD' && e.path.split('/').filter(Boolean).length === 1
        ? 'HeadBucket'
        : e.httpMethod === 'PUT'
          ? q.partNumber
            ? `UploadPart ${q.partNumber}`
            : 'PutObject'
          : `${e.httpMethod} ${Object.keys(q).join(',')}`;
    seen.push({ op, bodyBytes: e.body ? Buffer.from(e.body, e.isBase64Encoded ? 'base64' : 'utf8').length : 0 });
    return target.s3Lambda!(event, context);
  };
  return { lambda: limitedLambda(record), seen };
}

function restClient(handler: LambdaFn): S3Client {
  return new S3Client({
    endpoint: REST_API_ENDPOINT,
    region: target.region,
    forcePathStyle: true,
    credentials: target.account,
    maxAttempts: 1,
    requestHandler: restRequestHandler(handler) as never,
  });
}

const bytesOf = (seed: string, size: number) => Buffer.concat([...generatedChunks(seed, size)]);

localDescribe('the limit, said and enforced by the S3 API', () => {
  test('every answer carries it: 4 MiB through the Lambda door (errors too), 5 GiB on the node:http server', async () => {
    const { lambda } = door();
    const rest = restClient(lambda.handler);
    const seen = captureHeaders(rest);
    await rest.send(new HeadBucketCommand({ Bucket: B }));
    expect(seen.headers['x-cairn-max-request-body']).toBe(String(LIMIT));
    await failure(rest.send(new HeadBucketCommand({ Bucket: 'no-such-bucket-here' })));
    expect(seen.headers['x-cairn-max-request-body']).toBe(String(LIMIT));

    const local = target.s3();
    const localSeen = captureHeaders(local);
    await local.send(new HeadBucketCommand({ Bucket: B }));
    local.destroy();
    expect(localSeen.headers['x-cairn-max-request-body']).toBe(String(5 * 1024 ** 3));
  });

  test('a body over it that reaches the function is EntityTooLarge (400, S3 XML) naming the part size setting, and stores nothing', async () => {
    const { lambda } = door();
    const rest = restClient(lambda.handler);
    // 4.4 MiB: over the function's limit, yet its event (base64) still fits Lambda's 6 MB, so the function answers.
    for (const size of [LIMIT + 1, Math.floor(4.4 * MiB)]) {
      const key = `limits/too-big-${size}.bin`;
      const err = await failure(rest.send(new PutObjectCommand({ Bucket: B, Key: key, Body: bytesOf('too big', size) })));
      expect([err.name, err.$metadata.httpStatusCode]).toEqual(['EntityTooLarge', 400]);
      expect(err.message).toContain('AWS Lambda');
      expect(err.message).toContain(`part size (your client's multipart chunk size) of at most ${LIMIT} bytes`);
      expect(err.message).toContain('docs/aws-s3-clients.md');
      expect((err as unknown as { MaxSizeAllowed?: string; ProposedSize?: string }).MaxSizeAllowed).toBe(String(LIMIT));
      expect((err as unknown as { ProposedSize?: string }).ProposedSize).toBe(String(size));
      expect(await absent(rest, B, key)).toBe(true);
    }
    expect(lambda.refused()).toBe(0);
    // What the limit is for: one more MiB and Lambda itself would refuse the event, before the function could answer.
    expect(Math.ceil(((LIMIT + MiB) * 4) / 3)).toBeGreaterThan(LAMBDA_MAX_EVENT_BYTES);
  });
});
