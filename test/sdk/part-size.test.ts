/**
 * Part sizes chosen by the endpoint: Cairn's S3 API says on every answer
 * how large a body one request may carry (x-cairn-max-request-body: 4 MiB
 * through the Lambda door, S3's 5 GiB on one machine), refuses larger ones
 * with an S3 EntityTooLarge that names the part size setting, and the SDK
 * keeps its parts within the limit by itself: through the REST API door
 * with Lambda's 6 MB invocation limit, a caller's 8 MiB parts become 4 MiB
 * ones, while the node:http door keeps them at 8 MiB.
 */
import { HeadBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { apiTarget, localDescribe, type ApiTarget } from '../support/api-target.js';
import { REST_API_ENDPOINT, restRequestHandler, type LambdaFn } from '../support/lambda-door.js';
import { LAMBDA_MAX_EVENT_BYTES, recordedLambda, type RecordedLambda } from '../support/s3-door-limits.js';
import { absent, captureHeaders, failure } from '../support/s3-doors.js';
import { CREDS, expectedCids, generatedChunks, generatedStream, MiB } from '../support/sdk.js';
import { createStorage, type CairnStorageError } from '../../packages/storage-sdk/src/node.js';
import { choosePartSize, MAX_PARTS } from '../../packages/storage-sdk/src/limits.js';

const B = 'default-bucket';
const LIMIT = 4 * MiB;
let target: ApiTarget;

beforeAll(async () => {
  // Parts of 1 and 2 MiB on purpose (a caller's part size standing), so no least part size.
  target = await apiTarget({ CAIRN_LOG_LEVEL: 'error', CAIRN_S3_MIN_PART_SIZE: '0' });
}, 120_000);
afterAll(() => target?.close());

interface Seen {
  op: string;
  bodyBytes: number;
}

/** The S3 handler behind Lambda's event limit, recording what each request was (HeadBucket, PutObject, UploadPart n) and its body's size. */
function door(): { lambda: RecordedLambda; seen: Seen[] } {
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
  return { lambda: recordedLambda(record), seen };
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
    expect(Math.max(...lambda.events)).toBeLessThanOrEqual(LAMBDA_MAX_EVENT_BYTES);
    // What the limit is for: one more MiB and Lambda itself would refuse the event, before the function could answer.
    expect(Math.ceil(((LIMIT + MiB) * 4) / 3)).toBeGreaterThan(LAMBDA_MAX_EVENT_BYTES);
  });
});

localDescribe('the SDK keeps its parts within the limit by itself', () => {
  test('through the REST API door with Lambda limits, preferred 8 MiB parts go as 4 MiB ones; one HeadBucket asks the limit, once', async () => {
    const { lambda, seen } = door();
    const storage = createStorage({
      endpoint: REST_API_ENDPOINT,
      gatewayUrl: target.endpoints.gateway,
      partSize: 8 * MiB,
      clientConfig: { requestHandler: restRequestHandler(lambda.handler) as never, maxAttempts: 1 },
    });
    try {
      const size = 9 * MiB + 5;
      const data = bytesOf('nine through lambda', size);
      const result = await storage.upload({ ...CREDS, bucket: B, key: 'limits/sdk-bytes.bin', data });
      expect(result).toMatchObject(await expectedCids('nine through lambda', size));
      expect(seen.map((s) => s.op)).toEqual([
        'HeadBucket',
        'POST uploads',
        expect.stringMatching(/^UploadPart [123]$/),
        expect.stringMatching(/^UploadPart [123]$/),
        expect.stringMatching(/^UploadPart [123]$/),
        'POST uploadId',
      ]);
      const parts = seen.filter((s) => s.op.startsWith('UploadPart')).map((s) => s.bodyBytes);
      expect(parts.sort((a, b) => b - a)).toEqual([LIMIT, LIMIT, size - 2 * LIMIT]);
      expect(Math.max(...lambda.events)).toBeLessThanOrEqual(LAMBDA_MAX_EVENT_BYTES);

      // A stream of unknown length, through the same storage: the limit is known now, no second question.
      seen.length = 0;
      const streamed = await storage.streamUpload({
        ...CREDS,
        bucket: B,
        key: 'limits/sdk-stream.bin',
        stream: generatedStream('streamed', size),
      });
      expect(streamed).toMatchObject(await expectedCids('streamed', size));
      expect(seen.filter((s) => s.op === 'HeadBucket')).toEqual([]);
      expect(seen.filter((s) => s.op.startsWith('UploadPart')).every((s) => s.bodyBytes <= LIMIT)).toBe(true);
      expect(seen.filter((s) => s.op.startsWith('UploadPart'))).toHaveLength(3);
      expect(Math.max(...lambda.events)).toBeLessThanOrEqual(LAMBDA_MAX_EVENT_BYTES);
    } finally {
      storage.destroy();
    }
  });

  test("a server that does not say its limit is asked once; the caller's part size stands", async () => {
    const { lambda, seen } = door();
    // The same handler with the header taken off its answers: an S3 server that is not Cairn, or an older Cairn.
    const silent: LambdaFn = async (event, context) => {
      const result = (await lambda.handler(event, context)) as {
        headers?: Record<string, unknown>;
        multiValueHeaders?: Record<string, unknown>;
      };
      for (const headers of [result.headers, result.multiValueHeaders])
        for (const name of Object.keys(headers ?? {})) if (name.toLowerCase() === 'x-cairn-max-request-body') delete headers![name];
      return result;
    };
    const storage = createStorage({
      endpoint: REST_API_ENDPOINT,
      gatewayUrl: target.endpoints.gateway,
      partSize: 2 * MiB,
      clientConfig: { requestHandler: restRequestHandler(silent) as never, maxAttempts: 1 },
    });
    try {
      for (const key of ['limits/silent-1.bin', 'limits/silent-2.bin']) {
        await storage.upload({ ...CREDS, bucket: B, key, data: bytesOf(key, 5 * MiB) });
      }
      expect(seen.filter((s) => s.op === 'HeadBucket')).toHaveLength(1);
      const parts = seen.filter((s) => s.op.startsWith('UploadPart')).map((s) => s.bodyBytes);
      expect(parts.sort((a, b) => b - a)).toEqual([2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, MiB, MiB]);
    } finally {
      storage.destroy();
    }
  });

  test('on the node:http server (no Lambda) the caller keeps its 8 MiB parts', async () => {
    const storage = createStorage({ endpoint: target.endpoints.s3, gatewayUrl: target.endpoints.gateway, partSize: 8 * MiB });
    try {
      const size = 9 * MiB + 5;
      await storage.upload({ ...CREDS, bucket: B, key: 'limits/local.bin', data: bytesOf('nine locally', size) });
      const s3 = target.s3();
      const head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: 'limits/local.bin' }));
      s3.destroy();
      expect(head.ETag).toMatch(/-2"$/);
      expect(head.ContentLength).toBe(size);
    } finally {
      storage.destroy();
    }
  });
});

describe('choosing a part size', () => {
  test('the preferred size within the limit; raised for a file that would need more than 10,000 parts', () => {
    expect(choosePartSize(8 * MiB, LIMIT, 9 * MiB, 'x')).toBe(LIMIT);
    expect(choosePartSize(8 * MiB, undefined, 9 * MiB, 'x')).toBe(8 * MiB);
    expect(choosePartSize(MiB, LIMIT, undefined, 'x')).toBe(MiB);
    // 30,000 MiB in parts of 1 MiB would be 30,000 parts: 3 MiB ones make 10,000.
    expect(choosePartSize(MiB, LIMIT, 30000 * MiB, 'x')).toBe(3 * MiB);
    expect(choosePartSize(4 * MiB, undefined, 50 * 1024 * MiB, 'x')).toBe(Math.ceil((50 * 1024 * MiB) / MAX_PARTS));
  });

  test('a file larger than 10,000 parts of the limit fails before anything is sent', () => {
    let err: CairnStorageError | undefined;
    try {
      choosePartSize(4 * MiB, LIMIT, MAX_PARTS * LIMIT + 1, 'upload of "huge"');
    } catch (e) {
      err = e as CairnStorageError;
    }
    expect(err?.code).toBe('TooManyParts');
    expect(err?.message).toContain(`more than ${MAX_PARTS} parts of ${LIMIT} bytes`);
  });
});
