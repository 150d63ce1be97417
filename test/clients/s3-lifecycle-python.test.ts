/**
 * Lifecycle rules through boto3 (Debian's python3-boto3), through
 * test/clients/boto3_ops.py: put, get and delete a configuration, the
 * errors boto3 reports with S3's codes, and the `Expiration` and
 * `AbortDate` boto3 reads from an object's and an upload's answers.
 */
import { fileURLToPath } from 'node:url';
import { startTestService, type TestService } from '../support/service.js';
import { DEBIAN_CLIENTS, clientWorkspace, requireClient, run, type ClientWorkspace } from '../support/clients.js';

const SCRIPT = fileURLToPath(new URL('./boto3_ops.py', import.meta.url));
const DAY = 86_400_000;

let service: TestService;
let ws: ClientWorkspace;

beforeAll(async () => {
  await requireClient('python3');
  [service, ws] = await Promise.all([startTestService({ CAIRN_GC_INTERVAL: '0' }), clientWorkspace()]);
});

afterAll(async () => {
  await service?.close();
  await ws?.cleanup();
});

type Result = Record<string, any> & { headers: Record<string, string>; error?: { code: string; status: number; message: string } };

async function boto3(...ops: object[]): Promise<Result[]> {
  const { stdout } = await run(DEBIAN_CLIENTS.python3.bin, [SCRIPT], {
    env: ws.env,
    input: JSON.stringify({ endpoint: service.endpoints.s3, ops }),
  });
  return JSON.parse(stdout) as Result[];
}

const RULES = [
  { ID: 'logs', Filter: { Prefix: 'logs/' }, Status: 'Enabled', Expiration: { Days: 7 } },
  { ID: 'until', Filter: { Tag: { Key: 'kind', Value: 'tmp' } }, Status: 'Enabled', Expiration: { Date: '2031-01-01T00:00:00Z' } },
  {
    ID: 'versions',
    Filter: { And: { Prefix: 'v/', Tags: [{ Key: 'a', Value: 'b' }], ObjectSizeGreaterThan: 1 } },
    Status: 'Disabled',
    NoncurrentVersionExpiration: { NoncurrentDays: 30, NewerNoncurrentVersions: 2 },
  },
  { ID: 'uploads', Filter: { Prefix: 'up/' }, Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 3 } },
];

test('put, get and delete a configuration; S3 error codes; Expiration and AbortDate on objects and uploads', async () => {
  const bucket = `lc-boto3-${Date.now().toString(36)}`;
  const [created, missing, put, got, object, upload, twin, zero, deleted, after] = await boto3(
    { call: 'create_bucket', args: { Bucket: bucket } },
    { call: 'get_bucket_lifecycle_configuration', args: { Bucket: bucket } },
    { call: 'put_bucket_lifecycle_configuration', args: { Bucket: bucket, LifecycleConfiguration: { Rules: RULES } } },
    { call: 'get_bucket_lifecycle_configuration', args: { Bucket: bucket } },
    { call: 'put_object', args: { Bucket: bucket, Key: 'logs/today', Body: 'x' } },
    { call: 'create_multipart_upload', args: { Bucket: bucket, Key: 'up/big' } },
    {
      call: 'put_bucket_lifecycle_configuration',
      args: { Bucket: bucket, LifecycleConfiguration: { Rules: [RULES[0], RULES[0]] } },
    },
    {
      call: 'put_bucket_lifecycle_configuration',
      args: { Bucket: bucket, LifecycleConfiguration: { Rules: [{ ...RULES[0], Expiration: { Days: 0 } }] } },
    },
    { call: 'delete_bucket_lifecycle', args: { Bucket: bucket } },
    { call: 'get_bucket_lifecycle_configuration', args: { Bucket: bucket } },
  );
  expect(created!.error).toBeUndefined();
  expect(missing!.error).toMatchObject({ code: 'NoSuchLifecycleConfiguration', status: 404 });
  expect(put!.error).toBeUndefined();
  expect(got!.Rules).toEqual([RULES[0], { ...RULES[1], Expiration: { Date: '2031-01-01T00:00:00+00:00' } }, RULES[2], RULES[3]]);
  // Debian's botocore predates the field: the header itself.
  expect(got!.headers['x-amz-transition-default-minimum-object-size']).toBe('all_storage_classes_128K');
  const match = /^expiry-date="([^"]+)", rule-id="logs"$/.exec(object!.Expiration as string);
  expect(match).not.toBeNull();
  const expiry = Date.parse(match![1]!);
  expect(expiry % DAY).toBe(0);
  expect(expiry).toBeGreaterThan(Date.now() + 7 * DAY - 60_000);
  expect(expiry).toBeLessThanOrEqual(Date.now() + 8 * DAY);
  expect(upload!.AbortRuleId).toBe('uploads');
  expect(Date.parse(upload!.AbortDate as string) % DAY).toBe(0);
  expect(twin!.error).toMatchObject({ code: 'InvalidArgument', status: 400 });
  expect(zero!.error).toMatchObject({ code: 'InvalidArgument', status: 400 });
  expect(deleted!.status).toBe(204);
  expect(after!.error).toMatchObject({ code: 'NoSuchLifecycleConfiguration' });
});
