/**
 * Parts over 4 MiB through the storage API's edge (test/support/storage-edge.ts:
 * the CloudFront Function, the part-staging authoriser and S3 integration
 * into a bucket stand-in, the S3 function's REST door), over HTTPS as the
 * distribution is reached, so botocore sends what it sends over TLS (an
 * unsigned payload, its checksum in a header).
 * The Debian AWS CLI uploads 20 MiB with its defaults (8 MiB parts) and
 * reads it back whole; the object's CID is `ipfs add`'s; boto3's
 * upload_file and rclone (5 MiB chunks) likewise. Then what the
 * authoriser refuses, each with nothing staged.
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  ListObjectsV2Command,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Agent } from 'node:https';
import { readFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { cidsOf, clientWorkspace, DEBIAN_CLIENTS, randomFile, requireClient, run, type ClientWorkspace } from '../support/clients.js';
import { s3Doors } from '../support/s3-doors.js';
import { startStorageEdge, type StorageEdge } from '../support/storage-edge.js';

const MiB = 1024 * 1024;
const RUN = Date.now().toString(36);
const STAGING = `edge-staging-${RUN}`;
const EDGE_KEY = randomBytes(32).toString('hex');
let target: ApiTarget;
let edge: StorageEdge;
let standIn: S3Client;
let ws: ClientWorkspace;
const savedEnv = { ...process.env };

beforeAll(async () => {
  await requireClient('aws');
  target = await apiTarget();
  process.env.CAIRN_PART_STAGING_BUCKET = STAGING;
  process.env.CAIRN_EDGE_KEY = EDGE_KEY;
  process.env.AWS_ENDPOINT_URL_S3 = target.endpoints.s3;
  process.env.AWS_ACCESS_KEY_ID = target.account.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = target.account.secretAccessKey;
  standIn = s3Doors(() => target)
    .find((d) => d.tag === 'n')!
    .client();
  await standIn.send(new CreateBucketCommand({ Bucket: STAGING }));
  ws = await clientWorkspace();
  const { handler: authorizer } = await import('../../functions/part-staging/handler.js');
  edge = await startStorageEdge({
    dir: ws.dir,
    s3Lambda: target.s3Lambda!,
    authorizer,
    standIn,
    stagingBucket: STAGING,
    functionCode: readFileSync('functions/cdn/s3-viewer-request.js', 'utf8'),
    edgeKey: EDGE_KEY,
  });
}, 120_000);

afterAll(async () => {
  await edge?.close();
  standIn?.destroy();
  await ws?.cleanup();
  process.env = savedEnv;
  await target?.close();
});

const staged = async () =>
  ((await standIn.send(new ListObjectsV2Command({ Bucket: STAGING, Prefix: 'part-staging/' }))).Contents ?? []).map((o) => o.Key!);

function sdk(creds: { accessKeyId: string; secretAccessKey: string } = target.account, extra: Record<string, unknown> = {}): S3Client {
  return new S3Client({
    endpoint: edge.endpoint,
    region: target.region,
    forcePathStyle: true,
    credentials: creds,
    requestHandler: new NodeHttpHandler({ httpsAgent: new Agent({ ca: edge.ca }) }),
    ...extra,
  });
}

test('the AWS CLI uploads 20 MiB with its default 8 MiB parts through the edge and reads it back whole, with the right CID', async () => {
  const B = target.account.bucket;
  const key = `edge/cli-${RUN}.bin`;
  const file = await ws.file('upload.bin');
  const bytes = await randomFile(file, 20 * MiB);
  const env = { ...ws.env, AWS_CA_BUNDLE: edge.caFile };
  const aws = (...args: string[]) => run(DEBIAN_CLIENTS.aws.bin, ['--endpoint-url', edge.endpoint, ...args], { env, timeoutMs: 300_000 });
  const before = { ...edge.counts };
  await aws('s3', 'cp', file, `s3://${B}/${key}`);
  // Two 8 MiB parts staged, the 4 MiB last one through the function with Create and Complete.
  expect(edge.counts.staged - before.staged).toBe(2);
  expect(edge.counts.refused - before.refused).toBe(0);
  // Over HTTPS this AWS CLI (1.45, botocore 1.43) sends its file parts unframed, payload unsigned, the
  // checksum in a header; aws-chunked bodies with trailers are covered by test/components/staged-parts.
  expect(edge.stagedPayloads.slice(-2)).toEqual(['UNSIGNED-PAYLOAD', 'UNSIGNED-PAYLOAD']);
  const back = await ws.file('back.bin');
  await aws('s3', 'cp', `s3://${B}/${key}`, back);
  const read = await readFile(back);
  expect(createHash('sha256').update(read).digest('hex')).toBe(createHash('sha256').update(bytes).digest('hex'));
  const record = await target.local!.services.objects.get(B, key);
  expect(record!.cid).toBe((await cidsOf(bytes)).v0);
  expect(record!.size).toBe(20 * MiB);
  expect(await staged()).toEqual([]);
}, 600_000);

test("a 6 MiB file, one PutObject under the AWS CLI's 8 MiB threshold, is EntityTooLarge at the edge; with multipart_threshold 4MB it goes up", async () => {
  const B = target.account.bucket;
  const key = `edge/six-${RUN}.bin`;
  const file = await ws.file('six.bin');
  const bytes = await randomFile(file, 6 * MiB);
  const env = { ...ws.env, AWS_CA_BUNDLE: edge.caFile };
  const aws = (...args: string[]) => run(DEBIAN_CLIENTS.aws.bin, ['--endpoint-url', edge.endpoint, ...args], { env, timeoutMs: 300_000 });
  const failed = await aws('s3', 'cp', file, `s3://${B}/${key}`).then(
    () => '',
    (err: Error) => err.message,
  );
  expect(failed).toContain('EntityTooLarge');
  expect(failed).toContain('multipart_threshold');
  await aws('configure', 'set', 'default.s3.multipart_threshold', '4MB');
  try {
    await aws('s3', 'cp', file, `s3://${B}/${key}`);
  } finally {
    await aws('configure', 'set', 'default.s3.multipart_threshold', '8MB');
  }
  expect((await target.local!.services.objects.get(B, key))!.cid).toBe((await cidsOf(bytes)).v0);
  expect(await staged()).toEqual([]);
}, 600_000);

test("boto3's upload_file with its defaults (8 MiB threshold and parts) goes through the edge whole", async () => {
  const B = target.account.bucket;
  const key = `edge/boto3-${RUN}.bin`;
  const file = await ws.file('boto3.bin');
  const bytes = await randomFile(file, 20 * MiB);
  const before = { ...edge.counts };
  const script = [
    'import sys, boto3',
    "s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name=sys.argv[2])",
    's3.upload_file(sys.argv[3], sys.argv[4], sys.argv[5])',
  ].join('\n');
  await run(DEBIAN_CLIENTS.python3.bin, ['-c', script, edge.endpoint, target.region, file, B, key], {
    env: { ...ws.env, AWS_CA_BUNDLE: edge.caFile, PYTHONNOUSERSITE: '1' },
    timeoutMs: 300_000,
  });
  // 8 MiB, 8 MiB staged; the last 4 MiB through the function.
  expect(edge.counts.staged - before.staged).toBe(2);
  expect(edge.counts.refused - before.refused).toBe(0);
  const record = await target.local!.services.objects.get(B, key);
  expect(record!.cid).toBe((await cidsOf(bytes)).v0);
  expect(record!.size).toBe(20 * MiB);
  expect(await staged()).toEqual([]);
}, 600_000);

test('rclone with its default 5 MiB chunks goes through the edge whole (its single-PUT cutoff set to 4M, as docs/aws-s3-clients.md says)', async () => {
  await requireClient('rclone');
  const B = target.account.bucket;
  const file = await ws.file('rclone-src', 'twelve.bin');
  const bytes = await randomFile(file, 12 * MiB);
  const before = { ...edge.counts };
  await run(
    DEBIAN_CLIENTS.rclone.bin,
    [
      'copyto',
      file,
      `edge:${B}/edge/rclone-${RUN}.bin`,
      '--s3-upload-cutoff',
      '4M',
      '--ca-cert',
      edge.caFile,
      '--retries',
      '1',
      '--low-level-retries',
      '1',
    ],
    {
      env: {
        ...ws.env,
        RCLONE_CONFIG: join(ws.home, 'rclone.conf'),
        RCLONE_CONFIG_EDGE_TYPE: 's3',
        RCLONE_CONFIG_EDGE_PROVIDER: 'Other',
        RCLONE_CONFIG_EDGE_ACCESS_KEY_ID: target.account.accessKeyId,
        RCLONE_CONFIG_EDGE_SECRET_ACCESS_KEY: target.account.secretAccessKey,
        RCLONE_CONFIG_EDGE_ENDPOINT: edge.endpoint,
        RCLONE_CONFIG_EDGE_REGION: target.region,
        RCLONE_CONFIG_EDGE_FORCE_PATH_STYLE: 'true',
      },
      timeoutMs: 300_000,
    },
  );
  // 5 MiB, 5 MiB staged (over 4 MiB); the last 2 MiB through the function. rclone then checks the size by HEAD.
  expect(edge.counts.staged - before.staged).toBe(2);
  expect(edge.counts.refused - before.refused).toBe(0);
  const record = await target.local!.services.objects.get(B, `edge/rclone-${RUN}.bin`);
  expect(record!.cid).toBe((await cidsOf(bytes)).v0);
  expect(await staged()).toEqual([]);
}, 600_000);

describe('what the authoriser refuses, with S3 XML and nothing staged', () => {
  const B = () => target.account.bucket;
  const body = randomBytes(5 * MiB);
  let uploadId: string;
  let otherUpload: string;
  const key = `edge/refused-${RUN}`;

  beforeAll(async () => {
    const s3 = sdk();
    uploadId = (await s3.send(new CreateMultipartUploadCommand({ Bucket: B(), Key: key }))).UploadId!;
    otherUpload = (await s3.send(new CreateMultipartUploadCommand({ Bucket: B(), Key: `${key}-other` }))).UploadId!;
  });

  /** A client whose signed request is changed after signing (what an attacker replays). */
  function tampering(change: (request: { query: Record<string, string>; headers: Record<string, string> }) => void): S3Client {
    const s3 = sdk();
    s3.middlewareStack.add(
      (next) => async (args) => {
        change(args.request as never);
        return next(args);
      },
      { step: 'deserialize' },
    );
    return s3;
  }

  const refused = async (s3: S3Client, input: Partial<{ UploadId: string; Key: string; Bucket: string }> = {}) => {
    const before = edge.counts.refused;
    const err = await s3
      .send(new UploadPartCommand({ Bucket: B(), Key: key, UploadId: uploadId, PartNumber: 1, Body: body, ...input }))
      .then(
        () => undefined,
        (e: unknown) => e as { name: string; $metadata: { httpStatusCode: number } },
      );
    expect(err).toMatchObject({ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
    expect(edge.counts.refused).toBe(before + 1);
    expect(await staged()).toEqual([]);
  };

  test('unsigned', () => refused(sdk(undefined as never, { signer: { sign: async (r: unknown) => r } })));
  test('wrongly signed', () => refused(sdk({ ...target.account, secretAccessKey: 'not-the-secret-0000000000000000000000000' })));
  test('an unknown key pair', () => refused(sdk({ accessKeyId: 'CAIRNNOSUCHKEY000000', secretAccessKey: 'x' })));
  test('replayed to another upload', () => refused(tampering((r) => void (r.query.uploadId = otherUpload))));
  test('naming the upload twice', () =>
    refused(tampering((r) => void ((r.query as Record<string, unknown>).uploadId = [uploadId, otherUpload]))));
  test('expired (signed 20 minutes ago)', () => refused(sdk(target.account, { systemClockOffset: -20 * 60 * 1000 })));
  test('another account, on a bucket it may not write', () => refused(sdk(target.other)));
  test('an upload that does not exist', () => refused(sdk(), { UploadId: 'nosuchupload0000000000' }));

  test('a part over API Gateway’s 10 MB is EntityTooLarge', async () => {
    const err = await sdk()
      .send(new UploadPartCommand({ Bucket: B(), Key: key, UploadId: uploadId, PartNumber: 1, Body: randomBytes(10 * 1000 * 1000 + 1) }))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ name: 'EntityTooLarge', $metadata: { httpStatusCode: 413 } });
    expect(await staged()).toEqual([]);
  });

  test('a staged part completes through the edge with the ETag the client got', async () => {
    const s3 = sdk();
    const one = await s3.send(new UploadPartCommand({ Bucket: B(), Key: key, UploadId: uploadId, PartNumber: 1, Body: body }));
    const two = await s3.send(
      new UploadPartCommand({ Bucket: B(), Key: key, UploadId: uploadId, PartNumber: 2, Body: Buffer.from('end') }),
    );
    expect(await staged()).toEqual([`part-staging/${uploadId}/1`]);
    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: B(),
        Key: key,
        UploadId: uploadId,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: one.ETag },
            { PartNumber: 2, ETag: two.ETag },
          ],
        },
      }),
    );
    expect(done.ETag).toMatch(/-2"$/);
    expect((await target.local!.services.objects.get(B(), key))!.cid).toBe((await cidsOf(Buffer.concat([body, Buffer.from('end')]))).v0);
    expect(await staged()).toEqual([]);
  });
});
