/**
 * The SDK's seven methods and their options against a real local service:
 * results, CIDs (Kubo's), public URLs, progress, the default bucket (asked
 * once per client), listing hashes without a request per file, every page of
 * a listing, endpoints from the environment, and errors.
 */
import { CreateBucketCommand, GetObjectAclCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { importBytes } from 'ipfs-unixfs-importer';
import { BlackHoleBlockstore } from 'blockstore-core/black-hole';
import { cidV0, cidV1, kuboImportOptions } from '../../functions/core/ipfs/cid.js';
import { startTestService, type TestService } from '../support/service.js';
import { CREDS, optionsFor, startGatewayServing, startProxy, storageFor } from '../support/sdk.js';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import * as dagCbor from '@ipld/dag-cbor';
import * as cairnStorage from '../../packages/storage-sdk/src/node.js';
import { CairnStorageError, createStorage, DEFAULTS, ENV, type UploadProgress } from '../../packages/storage-sdk/src/node.js';

const OTHER = {
  name: 'other',
  accessKeyId: 'CAIRNSDKOTHER0000001',
  secretAccessKey: 'sdk-other-secret-01234567890123456789',
  apiToken: 'cairn_sdk_other_token_012345678',
};
const OTHER_CREDS = { apiKey: OTHER.accessKeyId, apiSecret: OTHER.secretAccessKey };

let service: TestService;
let s3: S3Client;
let storage: ReturnType<typeof storageFor>;
const savedEnv = { ...process.env };

beforeAll(async () => {
  service = await startTestService();
  s3 = service.s3();
  await service.services.accounts.createAccount(OTHER);
  storage = storageFor(service);
});

afterAll(async () => {
  process.env = savedEnv;
  storage.destroy();
  s3.destroy();
  await service.close();
});

async function kubo(bytes: Uint8Array): Promise<{ hash: string; hashV0: string }> {
  const { cid } = await importBytes(bytes, new BlackHoleBlockstore(), kuboImportOptions());
  return { hash: cidV1(cid), hashV0: cidV0(cid) };
}

async function rejection(p: Promise<unknown>): Promise<CairnStorageError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof CairnStorageError)) throw new Error(`expected a CairnStorageError, got ${String(err)}`);
  return err;
}

const publicDomain = () => service.config.urls.storagePublicDomain;

describe('upload', () => {
  test("returns both CIDs (Kubo's), the public URL, key and bucket, for every kind of data", async () => {
    const bytes = Buffer.from('hello from the Cairn SDK\n');
    const expected = await kubo(bytes);
    const kinds: Array<[string, unknown]> = [
      ['string', bytes.toString()],
      ['Buffer', bytes],
      ['Uint8Array', new Uint8Array(bytes)],
      ['ArrayBuffer', new Uint8Array(bytes).buffer],
      ['Blob', new Blob([bytes])],
      ['Node Readable', Readable.from([bytes.subarray(0, 5), bytes.subarray(5)])],
      ['web ReadableStream', new Blob([bytes]).stream()],
    ];
    for (const [kind, data] of kinds) {
      const key = `kinds/${kind.replace(/ /g, '-')}.txt`;
      const result = await storage.upload({ ...CREDS, key, data: data as never });
      expect(result).toEqual({
        ...expected,
        key,
        bucket: 'default-bucket',
        publicUrl: `http://default-bucket.${publicDomain()}/${key}`,
      });
    }
    expect(expected.hash).toMatch(/^bafybei/);
    expect(expected.hashV0).toMatch(/^Qm/);
  });

  test('passes ContentType through, uploads public-read by default (private on request), into a named bucket', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'sdk-second' }));
    const r = await storage.upload({
      ...CREDS,
      key: 'page.html',
      bucket: 'sdk-second',
      data: '<h1>hi</h1>',
      ContentType: 'text/html; charset=utf-8',
    });
    expect(r.bucket).toBe('sdk-second');
    expect(r.publicUrl).toBe(`http://sdk-second.${publicDomain()}/page.html`);
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'sdk-second', Key: 'page.html' }));
    expect(head.ContentType).toBe('text/html; charset=utf-8');
    const anonymous = await fetch(`${service.endpoints.s3}/sdk-second/page.html`);
    expect([anonymous.status, await anonymous.text()]).toEqual([200, '<h1>hi</h1>']);

    await storage.upload({ ...CREDS, key: 'secret.txt', data: 'shh', ACL: 'private' });
    const acl = await s3.send(new GetObjectAclCommand({ Bucket: 'default-bucket', Key: 'secret.txt' }));
    expect(acl.Grants?.some((g) => g.Grantee?.URI?.endsWith('AllUsers'))).toBe(false);
    expect((await fetch(`${service.endpoints.s3}/default-bucket/secret.txt`)).status).toBe(403);
  });

  test('reports progress: loaded grows to total, in more than one step for a larger file', async () => {
    const data = randomBytes(1024 * 1024 + 17);
    const events: UploadProgress[] = [];
    await storage.upload({ ...CREDS, key: 'progress.bin', data, httpUploadProgressCallback: (e) => events.push({ ...e }) });
    expect(events.length).toBeGreaterThan(4);
    expect(events.every((e) => e.total === data.length)).toBe(true);
    expect(events.at(-1)).toEqual({ loaded: data.length, total: data.length });
    for (let i = 1; i < events.length; i++) expect(events[i]!.loaded).toBeGreaterThanOrEqual(events[i - 1]!.loaded);
    expect(events.some((e) => e.loaded > 0 && e.loaded < data.length)).toBe(true);
  });

  test('a throwing progress callback does not break the upload', async () => {
    const r = await storage.upload({
      ...CREDS,
      key: 'throwing-callback.txt',
      data: 'x',
      httpUploadProgressCallback: () => {
        throw new Error('callback bug');
      },
    });
    expect(r.hash).toMatch(/^bafy/);
  });

  test('an empty file', async () => {
    const r = await storage.upload({ ...CREDS, key: 'empty', data: new Uint8Array(0) });
    expect(r).toMatchObject(await kubo(new Uint8Array(0)));
    const got = await storage.get({ ...CREDS, key: 'empty' });
    expect(got.data.length).toBe(0);
  });
});

describe('get', () => {
  const key = 'dir/get me.txt';
  let uploaded: Awaited<ReturnType<typeof storage.upload>>;
  beforeAll(async () => {
    uploaded = await storage.upload({ ...CREDS, key, data: 'the content', ContentType: 'text/plain' });
  });

  test('returns only data by default, as a Buffer', async () => {
    const got = await storage.get({ ...CREDS, key });
    expect(Object.keys(got)).toEqual(['data']);
    expect(Buffer.isBuffer(got.data)).toBe(true);
    expect(got.data.toString()).toBe('the content');
  });

  test('returns each requested item and nothing else', async () => {
    const all = await storage.get({ ...CREDS, key, getOptions: ['data', 'bucket', 'key', 'hash', 'hashV0', 'publicUrl'] });
    expect({ ...all, data: all.data.toString() }).toEqual({
      data: 'the content',
      bucket: 'default-bucket',
      key,
      hash: uploaded.hash,
      hashV0: uploaded.hashV0,
      publicUrl: `http://default-bucket.${publicDomain()}/dir/get%20me.txt`,
    });
    for (const option of ['bucket', 'key', 'hash', 'hashV0', 'publicUrl'] as const) {
      const one = await storage.get({ ...CREDS, key, getOptions: [option] });
      expect(one).toEqual({ [option]: all[option] });
    }
  });

  test('hash without data costs one HEAD; with data, one GET', async () => {
    const proxy = await startProxy(service.endpoints.s3);
    const viaProxy = createStorage(optionsFor(service, { endpoint: proxy.url }));
    try {
      await viaProxy.get({ ...CREDS, key, bucket: 'default-bucket', getOptions: ['hash'] });
      await viaProxy.get({ ...CREDS, key, bucket: 'default-bucket', getOptions: ['data', 'hash'] });
      expect(proxy.requests.map((r) => r.split('?')[0])).toEqual([
        `HEAD /default-bucket/dir/get%20me.txt`,
        `GET /default-bucket/dir/get%20me.txt`,
      ]);
    } finally {
      viaProxy.destroy();
      await proxy.close();
    }
  });

  test('a missing file rejects with NoSuchKey and 404, with or without data', async () => {
    for (const getOptions of [['data'], ['hash']] as const) {
      const err = await rejection(storage.get({ ...CREDS, key: 'not-there', getOptions: [...getOptions] }));
      expect([err.code, err.status]).toEqual(['NoSuchKey', 404]);
      expect(err.message).toContain('not-there');
    }
    const err = await rejection(storage.get({ ...CREDS, key, bucket: 'no-such-bucket-here' }));
    expect([err.code, err.status]).toEqual(['NoSuchBucket', 404]);
  });
});

describe('deleteFile', () => {
  test('deletes and returns key and bucket; a missing file is a success', async () => {
    await storage.upload({ ...CREDS, key: 'to-delete.txt', data: 'bye' });
    expect(await storage.deleteFile({ ...CREDS, key: 'to-delete.txt' })).toEqual({ key: 'to-delete.txt', bucket: 'default-bucket' });
    expect((await rejection(storage.get({ ...CREDS, key: 'to-delete.txt' }))).code).toBe('NoSuchKey');
    expect(await storage.deleteFile({ ...CREDS, key: 'to-delete.txt' })).toEqual({ key: 'to-delete.txt', bucket: 'default-bucket' });
    expect(await storage.deleteFile({ ...CREDS, key: 'never-was', bucket: 'sdk-second' })).toEqual({
      key: 'never-was',
      bucket: 'sdk-second',
    });
  });
});

describe('listBuckets', () => {
  test("lists the account's buckets as { name }, the default bucket first", async () => {
    const buckets = await storage.listBuckets(CREDS);
    expect(buckets[0]).toEqual({ name: 'default-bucket' });
    expect(buckets).toContainEqual({ name: 'sdk-second' });
    expect(await storage.listBuckets(OTHER_CREDS)).toEqual([{ name: 'other-bucket' }]);
  });
});

describe('listFiles', () => {
  const bucket = 'sdk-listing';
  const count = 1005;
  const keys = Array.from({ length: count }, (_, i) => `files/${String(i).padStart(4, '0')}.txt`);

  beforeAll(async () => {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    // More than one page (1000 keys) of files, written directly.
    let next = 0;
    const worker = async () => {
      while (next < keys.length) {
        const Key = keys[next++]!;
        await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: Key }));
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'other/readme.md', Body: 'readme' }));
  }, 120000);

  test('returns every file, across pages, with key, bucket and publicUrl by default', async () => {
    const files = await storage.listFiles({ ...CREDS, bucket });
    expect(files).toHaveLength(count + 1);
    expect(files[0]).toEqual({ key: keys[0], bucket, publicUrl: `http://${bucket}.${publicDomain()}/${keys[0]}` });
    expect(files.map((f) => f.key)).toEqual([...keys, 'other/readme.md']);
  });

  test('prefix narrows it; hash and hashV0 come from the listing itself, without a request per file', async () => {
    const proxy = await startProxy(service.endpoints.s3);
    const viaProxy = createStorage(optionsFor(service, { endpoint: proxy.url }));
    try {
      const files = await viaProxy.listFiles({ ...CREDS, bucket, prefix: 'files/', getOptions: ['key', 'hash', 'hashV0'] });
      expect(files).toHaveLength(count);
      expect(files[7]).toEqual({ key: keys[7], ...(await kubo(Buffer.from(keys[7]!))) });
      expect(proxy.count((m) => m === 'HEAD')).toBe(0);
      const lists = proxy.requests.filter((r) => r.includes('list-type=2'));
      expect(lists).toHaveLength(2);
      expect(lists.every((r) => r.includes('ipfs-hashes=true'))).toBe(true);
    } finally {
      viaProxy.destroy();
      await proxy.close();
    }
  });

  test('from a server without the listing extension, hashes come from one HEAD per file', async () => {
    const proxy = await startProxy(service.endpoints.s3, undefined, (method, url) =>
      method === 'GET' && url.searchParams.get('list-type') === '2'
        ? (xml) => xml.replace(/<IpfsHash(V0)?>[^<]*<\/IpfsHash(V0)?>/g, '')
        : undefined,
    );
    const viaProxy = createStorage(optionsFor(service, { endpoint: proxy.url }));
    try {
      const files = await viaProxy.listFiles({ ...CREDS, bucket, prefix: 'files/00', getOptions: ['key', 'hash', 'hashV0'] });
      expect(files).toHaveLength(100);
      expect(files[42]).toEqual({ key: keys[42], ...(await kubo(Buffer.from(keys[42]!))) });
      expect(proxy.count((m) => m === 'HEAD')).toBe(100);
    } finally {
      viaProxy.destroy();
      await proxy.close();
    }
  });

  test('the default bucket, and only the options asked for', async () => {
    const files = await storage.listFiles({ ...CREDS, prefix: 'dir/', getOptions: ['bucket', 'hash'] });
    expect(files).toEqual([{ bucket: 'default-bucket', hash: expect.stringMatching(/^bafybei/) }]);
    expect(await storage.listFiles({ ...CREDS, prefix: 'nothing-here/' })).toEqual([]);
  });
});

describe('getFileFromHash', () => {
  test('fetches by CIDv1 or CIDv0 with no credentials: text by default, bytes with buffer', async () => {
    const r = await storage.upload({ ...CREDS, key: 'by-hash.txt', data: 'fetched by hash' });
    const anonymous = createStorage(optionsFor(service));
    try {
      expect(await anonymous.getFileFromHash({ hash: r.hash })).toBe('fetched by hash');
      const bytes = await anonymous.getFileFromHash({ hash: r.hashV0, getFileFromHashOptions: ['buffer'] });
      expect(Buffer.isBuffer(bytes)).toBe(true);
      expect(bytes.toString()).toBe('fetched by hash');
    } finally {
      anonymous.destroy();
    }
  });

  test('a larger file (several chunks) verifies', async () => {
    const data = Buffer.alloc(3 * 262144 + 5);
    for (let i = 0; i < data.length; i++) data[i] = (i * 31) & 0xff;
    const r = await storage.upload({ ...CREDS, key: 'multi-chunk.bin', data });
    const got = await storage.getFileFromHash({ hash: r.hash, getFileFromHashOptions: ['buffer'] });
    expect(got.equals(data)).toBe(true);
  });

  test('bytes that do not hash to the CID (a tampering gateway) reject with CidMismatch; verify: false takes them', async () => {
    const r = await storage.upload({ ...CREDS, key: 'tamper-target.txt', data: 'the real content' });
    for (const wrong of [Buffer.from('forged content!!'), Buffer.from('the real conten'), Buffer.alloc(0)]) {
      const gateway = await startGatewayServing(wrong);
      const viaTamperer = createStorage(optionsFor(service, { gatewayUrl: gateway.url }));
      try {
        for (const hash of [r.hash, r.hashV0]) {
          const err = await rejection(viaTamperer.getFileFromHash({ hash, getFileFromHashOptions: ['buffer'] }));
          expect([err.code, err.status]).toEqual(['CidMismatch', 200]);
          expect(err.message).toContain(hash);
        }
        expect(gateway.hits()).toBe(2);
        const unchecked = await viaTamperer.getFileFromHash({ hash: r.hash, getFileFromHashOptions: ['buffer'], verify: false });
        expect(unchecked.equals(wrong)).toBe(true);
      } finally {
        viaTamperer.destroy();
        await gateway.close();
      }
    }
  });

  test('CIDs of other shapes: raw, identity, `ipfs add --cid-version=1` (raw leaves) verify; other codecs need verify: false', async () => {
    const content = Buffer.alloc(700000);
    for (let i = 0; i < content.length; i++) content[i] = (i * 7 + (i >> 9)) & 0xff;
    const rawCid = CID.createV1(0x55, await sha256.digest(content)).toString();
    const { cid: rawLeaves } = await importBytes(content, new BlackHoleBlockstore(), {
      ...kuboImportOptions(),
      cidVersion: 1,
      rawLeaves: true,
    });
    const gateway = await startGatewayServing(content);
    const viaGateway = createStorage(optionsFor(service, { gatewayUrl: gateway.url }));
    try {
      for (const hash of [rawCid, rawLeaves.toString()]) {
        expect((await viaGateway.getFileFromHash({ hash, getFileFromHashOptions: ['buffer'] })).equals(content)).toBe(true);
      }
      const tampered = CID.createV1(0x55, await sha256.digest(Buffer.from('other'))).toString();
      expect((await rejection(viaGateway.getFileFromHash({ hash: tampered }))).code).toBe('CidMismatch');
      const cbor = CID.createV1(dagCbor.code, await sha256.digest(dagCbor.encode({ a: 1 }))).toString();
      expect((await rejection(viaGateway.getFileFromHash({ hash: cbor }))).code).toBe('UnverifiableCid');
      expect((await viaGateway.getFileFromHash({ hash: cbor, verify: false, getFileFromHashOptions: ['buffer'] })).length).toBe(
        content.length,
      );
    } finally {
      viaGateway.destroy();
      await gateway.close();
    }
    const empty = await startGatewayServing(new Uint8Array(0));
    const viaEmpty = createStorage(optionsFor(service, { gatewayUrl: empty.url }));
    try {
      expect(await viaEmpty.getFileFromHash({ hash: 'bafkqaaa' })).toBe(''); // identity CID of nothing
    } finally {
      viaEmpty.destroy();
      await empty.close();
    }
  });

  test('content the gateway does not hold is NotFound 404', async () => {
    const { hash } = await kubo(Buffer.from('never uploaded anywhere'));
    const err = await rejection(storage.getFileFromHash({ hash }));
    expect([err.code, err.status]).toEqual(['NotFound', 404]);
  });
});

describe('the default bucket', () => {
  test('is the first bucket ListBuckets answers, asked once per client (credential pair), even when calls race', async () => {
    const proxy = await startProxy(service.endpoints.s3);
    const listBucketsCalls = () => proxy.count((m, url) => m === 'GET' && url.pathname === '/');
    const viaProxy = createStorage(optionsFor(service, { endpoint: proxy.url }));
    try {
      const first = await Promise.all([
        viaProxy.upload({ ...CREDS, key: 'race-1.txt', data: '1' }),
        viaProxy.upload({ ...CREDS, key: 'race-2.txt', data: '2' }),
        viaProxy.listFiles({ ...CREDS, prefix: 'race-' }),
      ]);
      expect(first[0].bucket).toBe('default-bucket');
      await viaProxy.get({ ...CREDS, key: 'race-1.txt' });
      await viaProxy.get({ ...CREDS, key: 'race-1.txt', getOptions: ['hash'] });
      await viaProxy.deleteFile({ ...CREDS, key: 'race-2.txt' });
      expect(listBucketsCalls()).toBe(1);
      // A named bucket needs no lookup.
      await viaProxy.upload({ ...CREDS, key: 'named.txt', bucket: 'sdk-second', data: 'n' });
      expect(listBucketsCalls()).toBe(1);
      // Another key pair is another client, with its own default bucket.
      const other = await viaProxy.upload({ ...OTHER_CREDS, key: 'mine.txt', data: 'other account' });
      expect(other.bucket).toBe('other-bucket');
      await viaProxy.get({ ...OTHER_CREDS, key: 'mine.txt' });
      expect(listBucketsCalls()).toBe(2);
      // Credentials given to createStorage serve calls that leave them out.
      const preset = createStorage(optionsFor(service, { endpoint: proxy.url, ...OTHER_CREDS }));
      expect((await preset.get({ key: 'mine.txt' })).data.toString()).toBe('other account');
      preset.destroy();
      expect(listBucketsCalls()).toBe(3);
    } finally {
      viaProxy.destroy();
      await proxy.close();
    }
  });
});

describe('configuration', () => {
  test('endpoints come from CAIRN_* environment variables, then the documented defaults', async () => {
    for (const name of Object.values(ENV)) delete process.env[name];
    expect(createStorage().options).toEqual({ ...DEFAULTS });
    process.env[ENV.endpoint] = service.endpoints.s3;
    process.env[ENV.gatewayUrl] = service.endpoints.gateway;
    process.env[ENV.publicDomain] = 'files.example.test';
    const fromEnv = createStorage();
    expect(fromEnv.options).toMatchObject({
      endpoint: service.endpoints.s3,
      gatewayUrl: service.endpoints.gateway,
      publicDomain: 'files.example.test',
    });
    const r = await fromEnv.upload({ ...CREDS, key: 'env.txt', data: 'env' });
    expect(r.publicUrl).toBe('http://default-bucket.files.example.test/env.txt');
    fromEnv.destroy();
    // Explicit options win over the environment; Fleek-style gateway URLs ending in /ipfs are accepted.
    const explicit = createStorage({
      endpoint: 'https://s3.example.test/',
      gatewayUrl: 'https://gw.example.test/ipfs',
      publicDomain: 'pub.example.test',
      partSize: 1048576,
      concurrency: 2,
    });
    expect(explicit.options).toEqual({
      endpoint: 'https://s3.example.test',
      gatewayUrl: 'https://gw.example.test',
      publicDomain: 'pub.example.test',
      partSize: 1048576,
      concurrency: 2,
      region: 'us-east-1',
    });
  });

  test("the plain functions (Fleek's call shape) use a default storage configured from the environment", async () => {
    process.env[ENV.endpoint] = service.endpoints.s3;
    process.env[ENV.gatewayUrl] = service.endpoints.gateway;
    process.env[ENV.publicDomain] = service.config.urls.storagePublicDomain;
    const fleekStorage = cairnStorage;
    const up = await fleekStorage.upload({ apiKey: CREDS.apiKey, apiSecret: CREDS.apiSecret, key: 'plain.txt', data: 'plain' });
    expect(up).toMatchObject({ key: 'plain.txt', bucket: 'default-bucket', ...(await kubo(Buffer.from('plain'))) });
    expect((await fleekStorage.get({ ...CREDS, key: 'plain.txt' })).data.toString()).toBe('plain');
    expect(await fleekStorage.getFileFromHash({ hash: up.hash })).toBe('plain');
    expect((await fleekStorage.listBuckets(CREDS))[0]).toEqual({ name: 'default-bucket' });
    expect(await fleekStorage.deleteFile({ ...CREDS, key: 'plain.txt' })).toEqual({ key: 'plain.txt', bucket: 'default-bucket' });
    expect(cairnStorage.default.upload).toBe(cairnStorage.upload);
    cairnStorage.configure(optionsFor(service, { publicDomain: 'configured.example.test' }));
    expect((await cairnStorage.upload({ ...CREDS, key: 'configured.txt', data: 'c' })).publicUrl).toBe(
      'http://default-bucket.configured.example.test/configured.txt',
    );
  });
});

describe('errors', () => {
  test('invalid arguments reject (never throw) with InvalidArgument naming the parameter', async () => {
    const cases: Array<[() => Promise<unknown>, RegExp]> = [
      [() => storage.upload({ key: 'k', data: 'x' } as never), /^apiKey is required$/],
      [() => storage.upload({ apiKey: CREDS.apiKey, key: 'k', data: 'x' } as never), /^apiSecret is required$/],
      [() => storage.upload({ ...CREDS, data: 'x' } as never), /^key is required$/],
      [() => storage.upload({ ...CREDS, key: 'k' } as never), /^data is required$/],
      [() => storage.upload({ ...CREDS, key: 'k', data: 42 } as never), /^data must be/],
      [() => storage.upload({ ...CREDS, key: 'k', data: 'x', bucket: 7 } as never), /^bucket must be/],
      [() => storage.upload({ ...CREDS, key: 'k', data: 'x', ContentType: 3 } as never), /^ContentType must be/],
      [
        () => storage.upload({ ...CREDS, key: 'k', data: 'x', httpUploadProgressCallback: 'no' } as never),
        /^httpUploadProgressCallback must be a function$/,
      ],
      [() => storage.upload({ ...CREDS, key: 'k'.repeat(1025), data: 'x' }), /^key must be at most 1024 bytes/],
      [() => storage.streamUpload({ ...CREDS, key: 'k' } as never), /^stream is required$/],
      [() => storage.streamUpload({ ...CREDS, key: 'k', stream: 'not a stream' } as never), /^stream must be/],
      [() => storage.get({ ...CREDS } as never), /^key is required$/],
      [() => storage.get({ ...CREDS, key: 'k', getOptions: ['data', 'size'] } as never), /^getOptions: "size" is not one of/],
      [() => storage.get({ ...CREDS, key: 'k', getOptions: [] }), /^getOptions must not be empty$/],
      [() => storage.listFiles({ ...CREDS, getOptions: ['data'] } as never), /^getOptions: "data" is not one of/],
      [() => storage.listFiles({ ...CREDS, prefix: 5 } as never), /^prefix must be a string$/],
      [() => storage.deleteFile({ ...CREDS } as never), /^key is required$/],
      [() => storage.listBuckets({} as never), /^apiKey is required$/],
      [() => storage.getFileFromHash({} as never), /^hash is required$/],
      [() => storage.getFileFromHash({ hash: 'not-a-cid' }), /^hash is not a valid CID/],
      [
        () => storage.getFileFromHash({ hash: 'bafkqaaa', getFileFromHashOptions: ['stream'] } as never),
        /^getFileFromHashOptions: "stream" is not one of/,
      ],
      [() => cairnStorage.upload(undefined as never), /^apiKey is required$/],
    ];
    for (const [call, message] of cases) {
      let returned: Promise<unknown> | undefined;
      expect(() => (returned = call())).not.toThrow();
      const err = await rejection(returned!);
      expect([err.code, err.status]).toEqual(['InvalidArgument', 400]);
      expect(err.message).toMatch(message);
    }
    expect(() => createStorage({ partSize: 0 })).toThrow(/^partSize must be an integer/);
    expect(() => createStorage({ concurrency: 1.5 })).toThrow(/^concurrency must be an integer/);
    expect(() => createStorage({ endpoint: 'not a url' })).toThrow(/^endpoint must be an absolute http\(s\) URL/);
  });

  test("server errors keep S3's code and status", async () => {
    const wrongSecret = await rejection(storage.listBuckets({ apiKey: CREDS.apiKey, apiSecret: 'wrong-secret-000000000000000000000000' }));
    expect([wrongSecret.code, wrongSecret.status, wrongSecret.name]).toEqual(['SignatureDoesNotMatch', 403, 'CairnStorageError']);
    expect(wrongSecret).toBeInstanceOf(Error);
    const unknownKey = await rejection(
      storage.upload({ apiKey: 'CAIRNNOSUCHKEY000000', apiSecret: 'whatever-secret-0000000000000000000000', key: 'k', data: 'x' }),
    );
    expect([unknownKey.code, unknownKey.status]).toEqual(['InvalidAccessKeyId', 403]);
    const otherAccountsBucket = await rejection(storage.upload({ ...OTHER_CREDS, key: 'k', data: 'x', bucket: 'default-bucket' }));
    expect([otherAccountsBucket.code, otherAccountsBucket.status]).toEqual(['AccessDenied', 403]);
  });

  test('an unreachable server is NetworkError', async () => {
    const proxy = await startProxy(service.endpoints.s3);
    const deadEndpoint = proxy.url;
    await proxy.close();
    const dead = createStorage(optionsFor(service, { endpoint: deadEndpoint, gatewayUrl: deadEndpoint, clientConfig: { maxAttempts: 1 } }));
    try {
      const err = await rejection(dead.listBuckets(CREDS));
      expect([err.code, err.status]).toEqual(['NetworkError', undefined]);
      const viaGateway = await rejection(dead.getFileFromHash({ hash: 'bafkqaaa' }));
      expect(viaGateway.code).toBe('NetworkError');
    } finally {
      dead.destroy();
    }
  });
});
