/**
 * Every line the S3 and gateway Lambda functions log names the function
 * (`fn`), the lines their request handlers write included.
 */
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { startTestService, BOOT, type TestService } from '../support/service.js';
import { lambdaFetch, lambdaRequestHandler, type LambdaFn } from '../support/lambda-door.js';

let service: TestService;
const savedEnv = { ...process.env };

beforeAll(async () => {
  service = await startTestService();
  Object.assign(process.env, service.env, { CAIRN_LOG_LEVEL: 'debug' });
});

afterAll(async () => {
  process.env = savedEnv;
  await service.close();
});

async function logLines(run: () => Promise<unknown>): Promise<Array<Record<string, unknown>>> {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    await run();
  } finally {
    process.stdout.write = write;
  }
  return lines
    .flatMap((l) => l.split('\n'))
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

test('the gateway Lambda logs with fn: gateway', async () => {
  const { handler } = (await import('../../functions/gateway/handler.js')) as unknown as { handler: LambdaFn };
  const records = await logLines(async () => {
    expect((await lambdaFetch(handler)(`${service.endpoints.gateway}/ipfs/not-a-cid`)).status).toBe(400);
  });
  expect(records).toContainEqual(expect.objectContaining({ msg: 'gateway request', status: 400, fn: 'gateway' }));
  expect(records.every((r) => r.fn === 'gateway')).toBe(true);
});

test('the S3 Lambda logs with fn: s3', async () => {
  const { handler } = (await import('../../functions/s3/handler.js')) as unknown as { handler: LambdaFn };
  const s3 = new S3Client({
    endpoint: service.endpoints.s3,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: BOOT,
    requestHandler: lambdaRequestHandler(handler) as never,
  });
  const records = await logLines(() => s3.send(new ListBucketsCommand({})));
  expect(records).toContainEqual(expect.objectContaining({ msg: 's3 request', op: 'ListBuckets', fn: 's3' }));
  expect(records.every((r) => r.fn === 's3')).toBe(true);
});
