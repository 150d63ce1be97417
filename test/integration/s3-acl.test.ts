/**
 * Presigned URLs' X-Amz-Expires range, with the URLs real clients make
 * (boto3, the JS SDK's presigner), through both doors.
 */
import { fileURLToPath } from 'node:url';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { startTestService, type TestService } from '../support/service.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import { loadS3Lambda } from '../support/s3-doors.js';
import { DEBIAN_CLIENTS, clientWorkspace, requireClient, run, type ClientWorkspace } from '../support/clients.js';

const SCRIPT = fileURLToPath(new URL('../clients/boto3_ops.py', import.meta.url));

let service: TestService;
let lambda: LambdaFn;
let ws: ClientWorkspace;
const savedEnv = { ...process.env };

beforeAll(async () => {
  await requireClient('python3');
  [service, ws] = await Promise.all([startTestService(), clientWorkspace()]);
  lambda = await loadS3Lambda(service);
});

afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  await ws?.cleanup();
});

type Result = Record<string, any> & { error?: { code: string; status: number; message: string } };

async function boto3(options: { env?: NodeJS.ProcessEnv }, ...ops: object[]): Promise<Result[]> {
  const { stdout } = await run(DEBIAN_CLIENTS.python3.bin, [SCRIPT], {
    env: { ...ws.env, ...options.env },
    input: JSON.stringify({ endpoint: service.endpoints.s3, ops }),
  });
  return JSON.parse(stdout) as Result[];
}

test('presigned URLs: X-Amz-Expires of 0, negative (SDK presigner) or over 604800 (boto3) is AuthorizationQueryParametersError (400), through both doors', async () => {
  const s3 = service.s3();
  await s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: 'presign-range.txt', Body: 'in range' }));
  const params = { Bucket: 'default-bucket', Key: 'presign-range.txt' };
  // boto3 (awscrt) refuses to sign 0 or less; the JS SDK's presigner signs them, and refuses over a week.
  const [overWeek, week] = await boto3(
    {},
    ...[604801, 604800].map((ExpiresIn) => ({ call: 'presign', method: 'get_object', args: { Params: params, ExpiresIn } })),
  );
  const bad = [
    await getSignedUrl(s3, new GetObjectCommand(params), { expiresIn: 0 }),
    await getSignedUrl(s3, new GetObjectCommand(params), { expiresIn: -60 }),
    overWeek!.url as string,
  ];
  for (const get of [(url: string) => fetch(url), (url: string) => lambdaFetch(lambda)(url)]) {
    for (const url of bad) {
      const expires = new URL(url).searchParams.get('X-Amz-Expires');
      const res = await get(url);
      const body = await res.text();
      expect([expires, res.status, body.match(/<Code>(.*)<\/Code>/)?.[1]]).toEqual([expires, 400, 'AuthorizationQueryParametersError']);
    }
    const ok = await get(week!.url as string);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('in range');
  }
  expect(bad.map((url) => new URL(url).searchParams.get('X-Amz-Expires'))).toEqual(['0', '-60', '604801']);
});
