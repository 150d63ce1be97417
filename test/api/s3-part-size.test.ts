/**
 * S3's least part size, with the service's default settings, through each
 * door with the real @aws-sdk/client-s3. The S3 API reference
 * (CompleteMultipartUpload, Errors): "EntityTooSmall: Your proposed upload
 * is smaller than the minimum allowed object size. Each part must be at
 * least 5 MB in size, except the last part." (400 Bad Request), and AWS's
 * error document names the part: `ProposedSize`, `MinSizeAllowed`,
 * `PartNumber`, `ETag`. The least size is S3's 5 MiB on the node:http
 * server, 4 MiB behind Lambda, whose requests carry no more (config.ts,
 * CAIRN_S3_MIN_PART_SIZE). The suites that upload small parts on purpose
 * (s3-multipart, s3-conformance) set CAIRN_S3_MIN_PART_SIZE=0.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListPartsCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { loadConfig } from '../../functions/core/config.js';
import { apiTarget, REMOTE, type ApiTarget } from '../support/api-target.js';
import { absent, failure, s3Doors, uploadParts } from '../support/s3-doors.js';
import { doorsFor } from '../support/test-set.js';

const MiB = 1024 * 1024;
let target: ApiTarget;
const savedEnv = { ...process.env };
const RUN = Date.now().toString(36);

beforeAll(async () => {
  target = await apiTarget();
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

describe.each(doorsFor(s3Doors(() => target)))('the least part size through the $name', (door) => {
  /** S3's 5 MiB, or the 4 MiB a Lambda request carries (a deployed stack is behind Lambda). */
  const MIN = door.lambda || REMOTE ? 4 * MiB : 5 * MiB;
  let s3: S3Client;
  let B: string;
  beforeAll(() => {
    s3 = door.client();
    B = target.account.bucket;
  });

  test('a part but the last under the minimum is EntityTooSmall naming it; the upload is left as it was, to send the part again', async () => {
    const key = `too-small-${door.tag}-${RUN}`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
    const bodies = [randomBytes(MIN), randomBytes(MIN - 1), Buffer.from('the last part may be any size')];
    const parts = await uploadParts(s3, { Bucket: B, Key: key, UploadId }, bodies);
    const complete = (Parts: CompletedPart[]) =>
      s3.send(new CompleteMultipartUploadCommand({ Bucket: B, Key: key, UploadId, MultipartUpload: { Parts } }));

    // Part 2 is one byte short and not the last.
    const err = await failure(complete(parts));
    expect(err).toMatchObject({
      name: 'EntityTooSmall',
      message: 'Your proposed upload is smaller than the minimum allowed size',
      $metadata: { httpStatusCode: 400 },
      ProposedSize: String(MIN - 1),
      MinSizeAllowed: String(MIN),
      PartNumber: '2',
      ETag: md5(bodies[1]!),
    });
    // Nothing changed: no object, the same parts listed.
    expect(await absent(s3, B, key)).toBe(true);
    const listed = await s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId }));
    expect(listed.Parts!.map((p) => [p.PartNumber, p.ETag, p.Size])).toEqual(bodies.map((b, i) => [i + 1, parts[i]!.ETag, b.length]));

    // Part 2 sent again at the minimum: the three complete.
    const again = randomBytes(MIN);
    const out = await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber: 2, Body: again }));
    const done = await complete([parts[0]!, { PartNumber: 2, ETag: out.ETag }, parts[2]!]);
    expect(done.ETag).toMatch(/-3"$/);
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key }));
    const bytes = Buffer.from(await got.Body!.transformToByteArray());
    expect(md5(bytes)).toBe(md5(Buffer.concat([bodies[0]!, again, bodies[2]!])));
  });

  test('the last part may be small, and so may the only one; the first of two under the minimum is refused', async () => {
    const key = `small-last-${door.tag}-${RUN}`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
    const put = async (PartNumber: number, Body: Buffer) => ({
      PartNumber,
      ETag: (await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber, Body }))).ETag,
    });
    const one = await put(1, Buffer.from('one'));
    const two = await put(2, Buffer.from('two'));
    const complete = (Parts: CompletedPart[]) =>
      s3.send(new CompleteMultipartUploadCommand({ Bucket: B, Key: key, UploadId, MultipartUpload: { Parts } }));
    expect(await failure(complete([one, two]))).toMatchObject({
      name: 'EntityTooSmall',
      ProposedSize: '3',
      MinSizeAllowed: String(MIN),
      PartNumber: '1',
    });
    await complete([two]);
    const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: key }));
    expect(await got.Body!.transformToString()).toBe('two');
  });

  test('an upload refused for a small part can still be aborted', async () => {
    const key = `small-abort-${door.tag}-${RUN}`;
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: key }));
    const parts: CompletedPart[] = [];
    for (const PartNumber of [1, 2]) {
      const out = await s3.send(new UploadPartCommand({ Bucket: B, Key: key, UploadId, PartNumber, Body: Buffer.from('x') }));
      parts.push({ PartNumber, ETag: out.ETag });
    }
    await failure(s3.send(new CompleteMultipartUploadCommand({ Bucket: B, Key: key, UploadId, MultipartUpload: { Parts: parts } })));
    await s3.send(new AbortMultipartUploadCommand({ Bucket: B, Key: key, UploadId }));
    expect(await failure(s3.send(new ListPartsCommand({ Bucket: B, Key: key, UploadId })))).toMatchObject({ name: 'NoSuchUpload' });
  });
});

describe('CAIRN_S3_MIN_PART_SIZE', () => {
  test("defaults to S3's 5 MiB, to the request body limit where that is smaller; 0 takes any part; sizes with units", () => {
    expect(loadConfig({}).storage.minPartSize).toBe(5 * MiB);
    expect(loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'f' }).storage.minPartSize).toBe(4 * MiB);
    expect(loadConfig({ CAIRN_MAX_REQUEST_BODY: String(MiB) }).storage.minPartSize).toBe(MiB);
    expect(loadConfig({ CAIRN_S3_MIN_PART_SIZE: '0' }).storage.minPartSize).toBe(0);
    expect(loadConfig({ CAIRN_S3_MIN_PART_SIZE: '64KiB' }).storage.minPartSize).toBe(64 * 1024);
    expect(loadConfig({ CAIRN_S3_MIN_PART_SIZE: '100' }).storage.minPartSize).toBe(100);
    expect(() => loadConfig({ CAIRN_S3_MIN_PART_SIZE: '-1' })).toThrow(/^CAIRN_S3_MIN_PART_SIZE: /);
    expect(() => loadConfig({ CAIRN_S3_MIN_PART_SIZE: '5 MB' })).toThrow(/^CAIRN_S3_MIN_PART_SIZE: /);
  });
});
