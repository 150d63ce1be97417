/**
 * `cairn storage cp` against the S3 API's door in AWS: the S3 Lambda
 * handler behind an HTTP port as API Gateway REST invokes it, held to
 * Lambda's 6 MB invocation (test/support/s3-door-limits.ts). The CLI is
 * told nothing about where the endpoint runs; it asks the endpoint its
 * limit and uploads a file larger than the 4 MiB the function takes per
 * request in parts that fit, and the object is whole, with the CID Kubo
 * gives it.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { apiTarget, localDescribe, type ApiTarget } from '../support/api-target.js';
import { LAMBDA_MAX_EVENT_BYTES, recordedLambda, startRestFront, type RecordedLambda, type RestFront } from '../support/s3-door-limits.js';
import { expectedCids, generatedChunks, MiB } from '../support/sdk.js';
import { loginArgs, newCliUser, type CliUser } from './cli-runner.js';

const LIMIT = 4 * MiB;
let target: ApiTarget;
let lambda: RecordedLambda;
let front: RestFront;
let u: CliUser;

beforeAll(async () => {
  target = await apiTarget({ CAIRN_LOG_LEVEL: 'error', CAIRN_PREVIEW: 'off' });
  lambda = recordedLambda(target.s3Lambda!);
  front = await startRestFront(lambda.handler);
  u = await newCliUser();
  const args = loginArgs(target.local!, target.account.apiKey);
  args[args.indexOf('--storage-endpoint') + 1] = front.url;
  const login = await u.run(args);
  if (login.code !== 0) throw new Error(login.stderr);
}, 120_000);
afterAll(async () => {
  await u?.cleanup();
  await front?.close();
  await target?.close();
});

localDescribe('through the REST API door with Lambda limits', () => {
  test('cp of a 9 MiB file goes in parts of at most 4 MiB, no request refused; the object is whole and has its CID', async () => {
    const size = 9 * MiB + 123;
    const file = join(u.home, 'big.bin');
    await writeFile(file, Buffer.concat([...generatedChunks('cli through lambda', size)]));
    const [result] = await u.json(['storage', 'cp', file, `s3://${target.account.bucket}/cli/big.bin`]);
    expect(result).toMatchObject({ key: 'cli/big.bin', size, ...(await expectedCids('cli through lambda', size)) });

    // It asked the endpoint its limit (HeadBucket, answered with x-cairn-max-request-body) before sending any part.
    const asked = front.requests.findIndex((r) => r.method === 'HEAD' && r.path.replace(/\/$/, '') === `/${target.account.bucket}`);
    const firstPart = front.requests.findIndex((r) => r.method === 'PUT' && r.path.includes('partNumber='));
    expect(asked).toBeGreaterThanOrEqual(0);
    expect(asked).toBeLessThan(firstPart);
    const parts = front.requests.filter((r) => r.method === 'PUT' && r.path.includes('partNumber='));
    expect(parts.map((p) => p.bodyBytes).sort((a, b) => b - a)).toEqual([LIMIT, LIMIT, size - 2 * LIMIT]);
    expect(front.requests.every((r) => r.bodyBytes <= LIMIT)).toBe(true);
    expect(Math.max(...lambda.events)).toBeLessThanOrEqual(LAMBDA_MAX_EVENT_BYTES);

    const s3 = target.s3();
    const head = await s3.send(new HeadObjectCommand({ Bucket: target.account.bucket, Key: 'cli/big.bin' }));
    s3.destroy();
    expect(head.ContentLength).toBe(size);
    expect(head.ETag).toMatch(/-3"$/);
  });
});
