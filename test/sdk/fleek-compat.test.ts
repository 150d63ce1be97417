/**
 * Switching from Fleek's SDK is one import: the same example code, run with
 * Fleek's published SDK (@fleekhq/fleek-storage-js 1.0.24, pointed at Cairn
 * through its config.js; it reads CIDs from ETags, so the service answers
 * CID ETags) and with Cairn's, gives the same hash, hashV0, key and bucket.
 */
import { Readable } from 'node:stream';
import { startTestService, type TestService } from '../support/service.js';
import { CREDS, expectedCids, generatedChunks, loadFleek, MiB, unloadFleek, type FleekSdk } from '../support/sdk.js';
import * as cairnStorage from '../../packages/storage-sdk/src/node.js';

let service: TestService;
let fleekStorage: FleekSdk;
const savedEnv = { ...process.env };

beforeAll(async () => {
  service = await startTestService({ CAIRN_ETAG: 'cid' });
  fleekStorage = loadFleek(service);
  // Cairn's SDK takes its endpoints from the environment, as an app switching SDKs would set them.
  process.env.CAIRN_STORAGE_ENDPOINT = service.endpoints.s3;
  process.env.CAIRN_GATEWAY_URL = service.endpoints.gateway;
  process.env.CAIRN_STORAGE_PUBLIC_DOMAIN = service.config.urls.storagePublicDomain;
});

afterAll(async () => {
  unloadFleek();
  process.env = savedEnv;
  await service.close();
});

const { apiKey, apiSecret } = CREDS;

/** Example code as a Fleek user writes it; only `sdk` changes. */
async function example(sdk: FleekSdk | typeof cairnStorage, tag: string) {
  const uploaded = await sdk.upload({ apiKey, apiSecret, key: 'example/hello.txt', data: Buffer.from('Hello from both SDKs\n') });
  const inBucket = await sdk.upload({
    apiKey,
    apiSecret,
    key: 'example/page.html',
    bucket: 'default-bucket',
    data: Buffer.from(`<p>${'x'.repeat(300000)}</p>`),
  });
  const streamed = await sdk.streamUpload({
    apiKey,
    apiSecret,
    key: 'example/streamed.bin',
    // A byte stream: Fleek's streamUpload never settles on an object-mode stream (Readable.from's default).
    stream: Readable.from(generatedChunks('both SDKs', 12 * MiB), { objectMode: false }),
  });
  const buckets = await sdk.listBuckets({ apiKey, apiSecret });
  const got = await sdk.get({ apiKey, apiSecret, key: 'example/hello.txt', getOptions: ['data', 'key', 'bucket'] });
  const files = await sdk.listFiles({ apiKey, apiSecret, prefix: 'example/' });
  const bytes = await sdk.getFileFromHash({ hash: uploaded.hash, getFileFromHashOptions: ['buffer'] });
  const deleted = await sdk.deleteFile({ apiKey, apiSecret, key: `example/${tag}-never-existed.txt` });
  const pick = (r: { hash: string; hashV0: string; key: string; bucket: string }) => ({
    hash: r.hash,
    hashV0: r.hashV0,
    key: r.key,
    bucket: r.bucket,
  });
  return {
    uploads: [pick(uploaded), pick(inBucket), pick(streamed)],
    buckets,
    got: { data: Buffer.from(got.data as Uint8Array).toString(), key: got.key, bucket: got.bucket },
    files: files.map((f) => ({ key: f.key, bucket: f.bucket })),
    bytes: Buffer.from(bytes as Uint8Array).toString(),
    deleted: deleted.bucket,
  };
}

test("the same example code gives the same results with Fleek's SDK and with Cairn's", async () => {
  const withFleek = await example(fleekStorage, 'fleek');
  const withCairn = await example(cairnStorage, 'cairn');
  expect(withCairn).toEqual(withFleek);
  expect(withCairn.uploads[0]).toEqual({
    hash: expect.stringMatching(/^bafybei/),
    hashV0: expect.stringMatching(/^Qm/),
    key: 'example/hello.txt',
    bucket: 'default-bucket',
  });
  expect(withCairn.uploads[2]).toMatchObject(await expectedCids('both SDKs', 12 * MiB));
  expect(withCairn.got.data).toBe('Hello from both SDKs\n');
  expect(withCairn.deleted).toBe('default-bucket');
}, 120000);

test("where Fleek's SDK is known to fail, Cairn's does not", async () => {
  // Fleek's streamUpload crashes the process on a failure (it reads the result after rejecting); Cairn's rejects.
  const failing = new Readable({
    read() {
      this.destroy(new Error('disk went away'));
    },
  });
  const err = await cairnStorage.streamUpload({ apiKey, apiSecret, key: 'example/failing.bin', stream: failing }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(cairnStorage.CairnStorageError);
  expect((err as cairnStorage.CairnStorageError).code).toBe('SourceStreamError');
  // Fleek's public URLs point at Fleek whatever the server; Cairn's at the configured public domain.
  const r = await cairnStorage.upload({ apiKey, apiSecret, key: 'example/url.txt', data: 'u' });
  const f = await fleekStorage.upload({ apiKey, apiSecret, key: 'example/url.txt', data: 'u' });
  expect(f.publicUrl).toBe('https://storageapi.fleek.co/default-bucket/example/url.txt');
  expect(r.publicUrl).toBe(`http://default-bucket.${service.config.urls.storagePublicDomain}/example/url.txt`);
});
