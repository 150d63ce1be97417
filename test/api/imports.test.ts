/**
 * The CAR import endpoint (`POST /imports/have`, `POST /imports/car`) and
 * the `deployCid` mutation, on a local service, through the node:http door
 * and the GraphQL Lambda handler: a folder built with the project's own
 * Kubo-exact import, sent as CARs (whole, or split in two), deployed by
 * CID and served at the site's address; what is refused (tampered blocks,
 * headers without exactly one root, bodies over the limit, other teams'
 * keys), each leaving nothing behind; and import pins that keep a DAG from
 * collection until their time is up, then let it go.
 *
 * Local only: it reads the node's pins and runs collection itself.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { CarReader } from '@ipld/car/reader';
import { CarWriter } from '@ipld/car/writer';
import { MemoryBlockstore } from 'blockstore-core/memory';
import { CID } from 'multiformats/cid';
import { identity } from 'multiformats/hashes/identity';
import { sha256 } from 'multiformats/hashes/sha2';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { BOOT, startTestService, type TestService } from '../support/service.js';
import { captureHeaders } from '../support/s3-doors.js';
import { dataOf, graphqlClient, importGraphqlLambda, newAccount, onlyError, type AccountFixture } from '../support/graphql.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import { withLambdaLimits } from '../support/lambda-runtime.js';
import { hostFetch } from '../support/http.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { importFile } from '../../functions/core/ipfs/import.js';
import { readBlock, walkDag } from '../../functions/core/storage/dag-walk.js';
import { isRootPinned } from '../../functions/core/storage/pins.js';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { importPinsOf } from '../../functions/core/storage/car-ingest.js';
import { doorsFor } from '../support/test-set.js';

let service: TestService;
let a: AccountFixture;
let b: AccountFixture;
let graphqlLambda: LambdaFn;
const savedEnv = { ...process.env };
/** The largest CAR the test service takes: small, so that a body past it is cheap to send. */
const MAX_IMPORT = 8 * 1024 * 1024;
const scratch: string[] = [];
/** CARs of the IPFS gateway conformance tests (their README says where from). */
const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/gateway-conformance');

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_MAX_IMPORT_BYTES: String(MAX_IMPORT), CAIRN_PREVIEW: 'on' });
  Object.assign(process.env, service.env);
  graphqlLambda = await importGraphqlLambda();
  [a, b] = await Promise.all([newAccount(service, 'importer'), newAccount(service, 'outsider')]);
});
afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
});

type Init = { method?: string; headers?: Record<string, string>; body?: string | Uint8Array };
type Fetch = (url: string, init?: Init) => Promise<Response>;
const DOORS: Array<{ name: string; fetch: () => Fetch }> = [
  { name: 'node:http door', fetch: () => (url, init) => fetch(url, init as RequestInit) },
  { name: 'Lambda door', fetch: () => (url, init) => lambdaFetch(graphqlLambda)(url, init) },
];

interface Block {
  cid: CID;
  bytes: Uint8Array;
}

/** A CARv1 with these roots and blocks, as @ipld/car writes it. */
async function carOf(roots: CID[], blocks: Block[]): Promise<Uint8Array> {
  const { writer, out } = CarWriter.create(roots);
  const parts: Uint8Array[] = [];
  const reading = (async () => {
    for await (const part of out) parts.push(part);
  })();
  for (const block of blocks) await writer.put(block);
  await writer.close();
  await reading;
  return Buffer.concat(parts);
}

/** A folder on disk built into its DAG with the project's Kubo-exact import (as `cairn deploy --dir` does), every block root first. */
async function builtFolder(files: Record<string, string | Uint8Array>): Promise<{ root: CID; blocks: Block[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-import-'));
  scratch.push(dir);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  const store = new MemoryBlockstore();
  const { cid: root } = await importDirectory(store, dir);
  const blocks: Block[] = [];
  for await (const cid of walkDag(store, root)) blocks.push({ cid, bytes: await readBlock(store, cid) });
  return { root, blocks };
}

/** A site folder whose every file is new to the service (one file spans several blocks). */
const newSiteFiles = (marker: string) => ({
  'index.html': `<h1>imported ${marker}</h1>`,
  'sub/page.html': `<p>a page of ${marker}</p>`,
  'big.bin': randomBytes(600 * 1024),
  _redirects: `# ${marker}\n/old /sub/page.html 301\n`,
});

/**
 * Puts `content` as an object of the default bucket, then deletes it: its
 * CID becomes a collection candidate, so the next collection deletes its
 * blocks unless something else keeps them. Returns the CID.
 */
async function objectGoneAgain(target: TestService, key: string, content: Uint8Array): Promise<CID> {
  const s3 = target.s3();
  const seen = captureHeaders(s3);
  await s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: key, Body: content }));
  const cid = CID.parse(seen.headers['x-service-ipfs-hash']!);
  await s3.send(new DeleteObjectCommand({ Bucket: 'default-bucket', Key: key }));
  s3.destroy();
  return cid;
}

const sameBlock = (x: CID, y: CID) =>
  x.multihash.bytes.length === y.multihash.bytes.length && x.multihash.bytes.every((byte, i) => byte === y.multihash.bytes[i]);

async function rawBlock(bytes: Uint8Array = randomBytes(1000)): Promise<Block> {
  return { cid: CID.createV1(0x55, await sha256.digest(bytes)), bytes };
}

describe.each(doorsFor(DOORS))('through the $name', (door) => {
  let send: Fetch;
  let gqlClient: ReturnType<typeof graphqlClient>;
  beforeAll(() => {
    send = door.fetch();
    gqlClient = graphqlClient({ name: door.name, fetch: send }, service.endpoints.graphql);
  });
  const url = (path: string) => `${service.config.urls.baseUrl}${path}`;
  const postCar = (body: Uint8Array, key: string | null = a.apiKey, query = '') =>
    send(url(`/imports/car${query}`), {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.ipld.car', ...(key === null ? {} : { authorization: key }) },
      body,
    });
  const postHave = (body: unknown, key: string | null = a.apiKey) =>
    send(url('/imports/have'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key === null ? {} : { authorization: key }) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const missingOf = async (cids: string[]): Promise<string[]> => {
    const res = await postHave({ cids });
    expect(res.status).toBe(200);
    return (await res.json()).missing;
  };
  const gql = (query: string, variables: Record<string, unknown>, key = a.apiKey) => gqlClient.gql(key, query, variables);
  const DEPLOY = 'id status ipfsHash published previewImage log repository { commit branch owner name message }';
  const deployCid = (siteId: string, cid: string, key = a.apiKey) =>
    gql(`mutation ($s: ID!, $c: String!) { deployCid(siteId: $s, cid: $c) { ${DEPLOY} } }`, { s: siteId, c: cid }, key);
  const newSite = async (fixture = a) =>
    dataOf(
      await gql(
        'mutation ($i: CreateSiteInput!) { createSite(input: $i) { id slug } }',
        {
          i: {
            deploySettings: {
              source: { repository: { type: 'GIT_HOST', url: 'https://git.invalid/acme/never-cloned.git', branch: 'main' } },
            },
          },
        },
        fixture.apiKey,
      ),
    ).createSite as { id: string; slug: string };

  async function waitForDeploy(siteId: string, deployId: string, done: (d: any) => boolean, ms = 90_000): Promise<any> {
    const deadline = Date.now() + ms;
    for (;;) {
      const deploy = dataOf(
        await gql(`query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ${DEPLOY} } }`, { s: siteId, d: deployId }),
      ).getDeployById;
      if (done(deploy)) return deploy;
      if (Date.now() > deadline)
        throw new Error(`deploy ${deployId} did not get there in ${ms} ms: ${JSON.stringify(deploy).slice(0, 3000)}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  test('a folder built as Kubo builds it, sent as one CAR, is stored, pinned, deployed by deployCid and served at the site', async () => {
    const files = newSiteFiles(`${door.name} ${Date.now()}`);
    const { root, blocks } = await builtFolder(files);
    const cids = blocks.map((block) => block.cid.toString());
    expect(blocks.length).toBeGreaterThan(6); // the directory, its files, the big file's leaves
    expect(await missingOf(cids)).toEqual(cids);

    const res = await postCar(await carOf([root], blocks));
    expect(res.status).toBe(200);
    const answer = await res.json();
    expect(answer).toEqual({
      ok: true,
      root: root.toString(),
      blocks: blocks.length,
      bytes: blocks.reduce((sum, block) => sum + block.bytes.length, 0),
      complete: true,
      expiresAt: expect.any(String),
    });
    expect(Date.parse(answer.expiresAt) - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
    expect(await missingOf(cids)).toEqual([]);
    expect(await isRootPinned(await service.services.ipfs(), root)).toBe(true);

    const site = await newSite();
    const started = dataOf(await deployCid(site.id, root.toString())).deployCid;
    expect(started).toMatchObject({
      status: 'IN_PROGRESS',
      repository: { commit: null, branch: null, owner: null, name: null, message: null },
    });
    const deploy = await waitForDeploy(
      site.id,
      started.id,
      (d) => d.status !== 'IN_PROGRESS' && /Preview image|No preview image/.test(d.log ?? ''),
    );
    expect(deploy).toMatchObject({ status: 'DEPLOYED', ipfsHash: root.toV1().toString(), published: true });
    expect(deploy.log).toMatch(/Published: the site now serves this deploy/);
    expect(deploy.previewImage).toMatch(/\/ipfs\/bafy[a-z2-7]+$/);

    const host = `${site.slug}.${service.config.sites.domain}`;
    const page = await hostFetch(`${service.endpoints.gateway}/`, { headers: { host } });
    expect(page.status).toBe(200);
    expect(await page.text()).toBe(files['index.html']);
    const sub = await hostFetch(`${service.endpoints.gateway}/sub/page.html`, { headers: { host } });
    expect(await sub.text()).toBe(files['sub/page.html']);
    const moved = await hostFetch(`${service.endpoints.gateway}/old`, { headers: { host } });
    expect(moved.status).toBe(301);
    expect(moved.headers.get('location')).toBe('/sub/page.html');
  });

  test('have answers exactly the CIDs not held, as sent and in order; bad asks are 400', async () => {
    const held = await rawBlock();
    const absent = await rawBlock();
    expect((await postCar(await carOf([held.cid], [held]))).status).toBe(200);
    const inline = CID.createV1(0x55, identity.digest(new TextEncoder().encode('inline')));
    const dagPbAbsent = CID.createV0(await sha256.digest(randomBytes(64)));
    const asked = [
      absent.cid.toString(),
      held.cid.toString(),
      inline.toString(),
      dagPbAbsent.toString(),
      dagPbAbsent.toV1().toString(),
      held.cid.toString(),
    ];
    expect(await missingOf(asked)).toEqual([absent.cid.toString(), dagPbAbsent.toString(), dagPbAbsent.toV1().toString()]);
    expect(await missingOf([])).toEqual([]);

    for (const [body, error] of [
      ['{"cids": ', /not JSON/],
      [{ cid: [] }, /"cids"/],
      [{ cids: ['not-a-cid'] }, /cids\[0\] is not a CID/],
      [{ cids: [held.cid.toString(), 42] }, /cids\[1\] is not a CID/],
      [{ cids: new Array(10_001).fill(held.cid.toString()) }, /at most 10000/],
    ] as const) {
      const res = await postHave(body);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ ok: false, error: expect.stringMatching(error) });
    }
  });

  test('a block whose bytes do not match its CID is 400, and nothing of that request is kept', async () => {
    const { root, blocks } = await builtFolder(newSiteFiles(`tampered ${door.name} ${Date.now()}`));
    const victim = blocks.length - 2;
    expect(victim).toBeGreaterThan(4);
    const tampered = blocks.map((block, i) =>
      i === victim ? { cid: block.cid, bytes: Uint8Array.from(block.bytes, (byte, j) => (j === 0 ? byte ^ 1 : byte)) } : block,
    );
    const res = await postCar(await carOf([root], tampered));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ ok: false, error: `block ${blocks[victim]!.cid} does not match its content` });
    const node = await service.services.ipfs();
    expect(await isRootPinned(node, root)).toBe(false);
    expect(await importPinsOf(service.services).get(root)).toBeUndefined();
    // The blocks stored before the bad one are loose: the next collection takes them.
    const before = blocks.slice(0, victim).map((block) => block.cid.toString());
    expect(await missingOf(before)).toEqual([]);
    await collectGarbage(service.services);
    expect(await missingOf(before)).toEqual(before);
    const site = await newSite();
    const refused = onlyError(await deployCid(site.id, root.toString()));
    expect(refused.extensions.code).toBe('BAD_USER_INPUT');
  });

  test('a CAR whose header names no root or two roots is 400, as are other CARs this service does not take', async () => {
    const one = await rawBlock();
    const two = await rawBlock();
    const noRoot = await postCar(await carOf([], [one]));
    expect(noRoot.status).toBe(400);
    expect((await noRoot.json()).error).toBe('the CAR header must name exactly one root; it names 0');
    const twoRoots = await postCar(await carOf([one.cid, two.cid], [one, two]));
    expect(twoRoots.status).toBe(400);
    expect((await twoRoots.json()).error).toBe('the CAR header must name exactly one root; it names 2');
    expect(await missingOf([one.cid.toString(), two.cid.toString()])).toEqual([one.cid.toString(), two.cid.toString()]);

    const trailing = Uint8Array.of(0xa0, 0x00); // a map, then a byte after the one value a block holds
    const notCbor = CID.createV1(0x71, await sha256.digest(trailing));
    const blake = CID.createV1(0x55, {
      code: 0xb220,
      size: 32,
      digest: new Uint8Array(32),
      bytes: Uint8Array.of(0xa0, 0xe4, 0x02, 32, ...new Uint8Array(32)),
    } as never);
    const v2Pragma = Uint8Array.of(0x0a, 0xa1, 0x67, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x02);
    const gitRaw = CID.createV1(0x78, await sha256.digest(Uint8Array.of(0xa0)));
    const deepCbor = new Uint8Array(100_001).fill(0x81); // [[[...[1]...]]], a hundred thousand deep
    deepCbor[100_000] = 0x01;
    const deep = CID.createV1(0x71, await sha256.digest(deepCbor));
    const cases: Array<[string, Uint8Array | string, RegExp, string?]> = [
      ['a git-raw root', await carOf([gitRaw], []), /root .* codec 0x78/],
      [
        'a git-raw block',
        await carOf([one.cid], [{ cid: gitRaw, bytes: Uint8Array.of(0xa0) }]),
        /codec 0x78; this service stores dag-pb, raw, dag-cbor, dag-json, cbor and json blocks only/,
      ],
      [
        'a dag-cbor block that is not dag-cbor',
        await carOf([notCbor], [{ cid: notCbor, bytes: trailing }]),
        /is refused as dag-cbor: not valid/,
      ],
      ['a dag-cbor block nested too deep', await carOf([deep], [{ cid: deep, bytes: deepCbor }]), /nests deeper than 512 levels/],
      ['another hash', await carOf([one.cid], [{ cid: blake, bytes: one.bytes }]), /hash 0xb220; only sha2-256/],
      ['a CARv2', Buffer.concat([v2Pragma, new Uint8Array(40)]), /CARv1|CAR version/],
      ['garbage', 'this is not a CAR at all', /not a valid CARv1|ends before/],
      ['a CAR cut short', (await carOf([one.cid], [one])).slice(0, -10), /ends before the CAR does/],
      ['a wrong Content-Type', await carOf([one.cid], [one]), /Content-Type: application\/vnd.ipld.car/, 'application/octet-stream'],
    ];
    for (const [what, body, error, type] of cases) {
      const res = await send(url('/imports/car'), {
        method: 'POST',
        headers: { 'content-type': type ?? 'application/vnd.ipld.car', authorization: a.apiKey },
        body,
      });
      expect([what, res.status]).toEqual([what, 400]);
      expect((await res.json()).error).toMatch(error);
    }
    expect(await isRootPinned(await service.services.ipfs(), one.cid)).toBe(false);
  });

  test('dag-cbor and dag-json DAGs are taken: a pending import counts the blocks their links miss, the pinned one survives collection', async () => {
    // The gateway conformance tests' traversal fixtures: three blocks each, linked by CBOR tag 42 / {"/": cid}.
    for (const name of ['dag-cbor-traversal', 'dag-json-traversal']) {
      const blocks: Block[] = [];
      const reader = await CarReader.fromBytes(await readFile(join(FIXTURES, `${name}.car`)));
      for await (const block of reader.blocks()) blocks.push(block);
      const [root, ...rest] = blocks;
      const cids = blocks.map((b) => b.cid.toString());
      // The blocks of a fixture are the same for each door, and the doors share one node: the
      // first door to run meets them missing, a later one finds them held (and pinned) already.
      const fresh = (await missingOf(cids.slice(1))).length === rest.length;
      const first = await postCar(await carOf([root!.cid], [root!]));
      expect([name, first.status]).toEqual([name, 200]);
      // The root's one link (to the middle block) is missing; what lies below it is not known yet.
      expect(await first.json()).toMatchObject(fresh ? { ok: true, complete: false, missing: 1 } : { ok: true, complete: true });
      const second = await postCar(await carOf([root!.cid], rest));
      expect(await second.json()).toMatchObject({ ok: true, complete: true, blocks: 2 });
      expect(await isRootPinned(await service.services.ipfs(), root!.cid)).toBe(true);
      await collectGarbage(service.services);
      expect(await missingOf(cids)).toEqual([]);
    }
  });

  test('a DAG sent in two CARs: the first is pending (and survives a collection), the second completes it', async () => {
    const shared = randomBytes(3000);
    const { root, blocks } = await builtFolder({ ...newSiteFiles(`split ${door.name} ${Date.now()}`), 'shared.txt': shared });
    const [rootBlock, ...rest] = blocks;
    const half = Math.ceil(rest.length / 2);
    const sharedCid = (
      await importFile(
        new MemoryBlockstore(),
        (async function* () {
          yield shared;
        })(),
      )
    ).cid;
    const inFirst = (block: Block, i: number) => i < half || sameBlock(block.cid, sharedCid);
    const first = rest.filter(inFirst);
    const second = [rootBlock!, ...rest.filter((block, i) => !inFirst(block, i))];
    expect(first.some((block) => sameBlock(block.cid, sharedCid))).toBe(true);

    const res1 = await postCar(await carOf([root], first));
    expect(res1.status).toBe(200);
    const answer1 = await res1.json();
    expect(answer1).toMatchObject({ ok: true, root: root.toString(), blocks: first.length, complete: false });
    expect(answer1.missing).toBeGreaterThanOrEqual(1);
    expect(await isRootPinned(await service.services.ipfs(), root)).toBe(false);

    const site = await newSite();
    const early = onlyError(await deployCid(site.id, root.toString()));
    expect(early.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'cid' });
    expect(early.message).toMatch(/import it first with POST \/imports\/car/);

    // Held by the pending import: a collection between the two CARs keeps
    // them, even a block an object that is gone no longer keeps.
    expect(sameBlock(await objectGoneAgain(service, `split-${door.name}`, shared), sharedCid)).toBe(true);
    const between = await collectGarbage(service.services);
    expect(between.unpinned).toBeGreaterThanOrEqual(1);
    expect(await missingOf(first.map((block) => block.cid.toString()))).toEqual([]);

    const res2 = await postCar(await carOf([root], second));
    expect(res2.status).toBe(200);
    expect(await res2.json()).toMatchObject({ ok: true, root: root.toString(), blocks: second.length, complete: true });
    expect(await isRootPinned(await service.services.ipfs(), root)).toBe(true);
    await collectGarbage(service.services);
    expect(await missingOf(blocks.map((block) => block.cid.toString()))).toEqual([]);

    const started = dataOf(await deployCid(site.id, root.toV1().toString())).deployCid;
    const deploy = await waitForDeploy(
      site.id,
      started.id,
      (d) => d.status !== 'IN_PROGRESS' && /Published|not published|Failed/.test(d.log ?? ''),
    );
    expect(deploy).toMatchObject({ status: 'DEPLOYED', ipfsHash: root.toV1().toString() });

    // All held already: an empty CAR naming the root renews its import pin.
    const again = await postCar(await carOf([root], []));
    expect(await again.json()).toMatchObject({ ok: true, blocks: 0, bytes: 0, complete: true });
  });

  test('content deployed by CID whose _redirects stops its rules deploys with a warning in the log', async () => {
    const { root, blocks } = await builtFolder({
      'index.html': `<p>warned ${door.name} ${Date.now()}</p>`,
      _redirects: '/only-a-source\n',
    });
    expect((await postCar(await carOf([root], blocks))).status).toBe(200);
    const site = await newSite();
    const started = dataOf(await deployCid(site.id, root.toString())).deployCid;
    const deploy = await waitForDeploy(
      site.id,
      started.id,
      (d) => d.status !== 'IN_PROGRESS' && /Published|not published|Failed/.test(d.log ?? ''),
    );
    expect(deploy.status).toBe('DEPLOYED');
    expect(deploy.log).toMatch(/Warning: _redirects line 1: a rule needs a source path and a target/);
  });

  test("deployCid refuses a malformed CID, a DAG not here, and another team's or an unknown site", async () => {
    const site = await newSite();
    const held = await rawBlock();
    expect((await postCar(await carOf([held.cid], [held]))).status).toBe(200);
    const malformed = onlyError(await deployCid(site.id, 'not-a-cid'));
    expect(malformed.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'cid' });
    const absent = await rawBlock();
    const notHere = onlyError(await deployCid(site.id, absent.cid.toString()));
    expect(notHere.extensions.code).toBe('BAD_USER_INPUT');
    expect(notHere.message).toMatch(/not complete on this service .*import it first with POST \/imports\/car/);
    const theirs = await newSite(b);
    expect(onlyError(await deployCid(theirs.id, held.cid.toString())).extensions.code).toBe('FORBIDDEN');
    expect(onlyError(await deployCid('00000000-0000-4000-8000-000000000000', held.cid.toString())).extensions.code).toBe('NOT_FOUND');
    const deploys = dataOf(await gql('query ($s: ID!) { getDeploysBySite(siteId: $s) { deploys { id } } }', { s: site.id }))
      .getDeploysBySite.deploys;
    expect(deploys).toEqual([]);
    expect(
      dataOf(await gql('query ($s: ID!) { getDeploysBySite(siteId: $s) { deploys { id } } }', { s: theirs.id }, b.apiKey)).getDeploysBySite
        .deploys,
    ).toEqual([]);
  });

  test("without a valid key it is 401 (Bearer works too); another team's site is 403, an unknown one 404; GET is 405", async () => {
    const block = await rawBlock();
    const car = await carOf([block.cid], [block]);
    for (const key of [null, 'cairn_not_a_key']) {
      for (const res of [await postCar(car, key), await postHave({ cids: [block.cid.toString()] }, key)]) {
        expect(res.status).toBe(401);
        expect(await res.json()).toEqual({ ok: false, error: expect.stringMatching(/API key/) });
      }
    }
    expect(await missingOf([block.cid.toString()])).toEqual([block.cid.toString()]);
    const bearer = await postCar(car, `Bearer ${a.apiKey}`);
    expect(bearer.status).toBe(200);

    const mine = await newSite();
    const theirs = await newSite(b);
    expect((await postCar(car, a.apiKey, `?siteId=${mine.id}`)).status).toBe(200);
    const forbidden = await postCar(car, a.apiKey, `?siteId=${theirs.id}`);
    expect(forbidden.status).toBe(403);
    expect((await forbidden.json()).ok).toBe(false);
    expect((await postCar(car, a.apiKey, '?siteId=00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const get = await send(url('/imports/car'), { method: 'GET', headers: { authorization: a.apiKey } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect((await send(url('/imports/nothing'), { method: 'POST', headers: { authorization: a.apiKey }, body: '{}' })).status).toBe(404);
  });
});

describe('a body past the limit', () => {
  test('a CAR past the limit through the Lambda door is 413, and what it stored before the limit is not kept', async () => {
    const big = await rawBlock(randomBytes(1024 * 1024));
    const blocks = [big, ...(await Promise.all(Array.from({ length: 8 }, () => rawBlock(randomBytes(1024 * 1024)))))];
    const post = async () =>
      lambdaFetch(graphqlLambda)(`${service.config.urls.baseUrl}/imports/car`, {
        method: 'POST',
        headers: { 'content-type': 'application/vnd.ipld.car', authorization: a.apiKey },
        body: await carOf([big.cid], blocks),
      });
    // In AWS 9 MiB (12 MiB as base64) never reach the function: Lambda takes
    // an event of 6 MB at most, and the HTTP API answers 500 for it.
    expect((await post()).status).toBe(500);
    // The function's own limit, reached on a Lambda that took larger events.
    const res = await withLambdaLimits({ requestBytes: 16 * 1024 * 1024 }, post);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      ok: false,
      error: expect.stringMatching(/larger than the limit of 8388608 bytes \(CAIRN_MAX_IMPORT_BYTES\)/),
    });
    await collectGarbage(service.services);
    const cids = blocks.map((block) => block.cid.toString());
    const have = await fetch(`${service.config.urls.baseUrl}/imports/have`, {
      method: 'POST',
      headers: { authorization: a.apiKey },
      body: JSON.stringify({ cids }),
    });
    expect((await have.json()).missing).toEqual(cids);
  });
  /** POSTs `total` bytes of a CAR in chunks, stopping once answered: the status, the answer, and how much was sent by then. */
  function streamCar(
    headers: Record<string, string>,
    chunks: () => Uint8Array | undefined,
  ): Promise<{ status: number; body: string; sentWhenAnswered: number }> {
    return new Promise((resolve, reject) => {
      let sent = 0;
      let answered = false;
      const req = httpRequest(
        `${service.config.urls.baseUrl}/imports/car`,
        { method: 'POST', headers: { 'content-type': 'application/vnd.ipld.car', authorization: a.apiKey, ...headers } },
        (res) => {
          answered = true;
          const sentWhenAnswered = sent;
          const parts: Buffer[] = [];
          res.on('data', (part: Buffer) => parts.push(part));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8'), sentWhenAnswered }));
          res.on('error', reject);
        },
      );
      req.on('error', (err) => {
        if (!answered) reject(err);
      });
      const pump = () => {
        for (;;) {
          if (answered || req.destroyed) return;
          const chunk = chunks();
          if (!chunk) {
            req.end();
            return;
          }
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', pump);
            return;
          }
        }
      };
      if (headers['content-length'] === undefined) pump();
      else req.flushHeaders();
    });
  }

  test('a streamed CAR of 256 MiB is refused with 413 after about the limit, not read to its end', async () => {
    const block = await rawBlock(randomBytes(256 * 1024));
    const header = await carOf([block.cid], []);
    const section = (await carOf([block.cid], [block])).subarray(header.length);
    const total = 256 * 1024 * 1024;
    let produced = 0;
    const result = await streamCar({}, () => {
      if (produced >= total) return undefined;
      const chunk = produced === 0 ? Buffer.concat([header, section]) : section;
      produced += chunk.length;
      return chunk;
    });
    expect(result.status).toBe(413);
    expect(JSON.parse(result.body)).toEqual({ ok: false, error: expect.stringMatching(/larger than the limit/) });
    // The server stopped at the limit: what was sent by the answer is the limit plus what the sockets buffer.
    expect(result.sentWhenAnswered).toBeLessThan(total / 4);
    await collectGarbage(service.services);
    const res = await fetch(`${service.config.urls.baseUrl}/imports/have`, {
      method: 'POST',
      headers: { authorization: a.apiKey },
      body: JSON.stringify({ cids: [block.cid.toString()] }),
    });
    expect((await res.json()).missing).toEqual([block.cid.toString()]);
  });

  test('a declared Content-Length past the limit is 413 before any of the body is sent', async () => {
    const result = await streamCar({ 'content-length': String(2 * 1024 ** 3) }, () => undefined);
    expect(result.status).toBe(413);
    expect(result.sentWhenAnswered).toBe(0);
  });
});

describe('import pins in time', () => {
  let short: TestService;
  const TTL = 8;
  beforeAll(async () => {
    short = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_IMPORT_PIN_TTL: String(TTL), CAIRN_PREVIEW: 'off' });
  });
  afterAll(async () => {
    await short?.close();
  });
  const post = (path: string, body: Uint8Array | string, type: string) =>
    fetch(`${short.config.urls.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': type, authorization: BOOT.apiToken },
      body: body as BodyInit,
    });
  const missingOf = async (cids: string[]) =>
    (await (await post('/imports/have', JSON.stringify({ cids }), 'application/json')).json()).missing as string[];

  test('a complete and a pending import survive a collection before their time, and are collected after it; a deployed one stays', async () => {
    // Each DAG holds a file that is also an object, deleted after the
    // import: the collection before the pins' time then tries to take its
    // block, and only the import pin keeps it.
    const wholeShared = randomBytes(2000);
    const pendingShared = randomBytes(2000);
    const whole = await builtFolder({ ...newSiteFiles(`whole ${Date.now()}`), 'shared.txt': wholeShared });
    const pending = await builtFolder({ ...newSiteFiles(`pending ${Date.now()}`), 'shared.txt': pendingShared });
    const deployed = await builtFolder(newSiteFiles(`deployed ${Date.now()}`));
    const pendingSharedCid = (
      await importFile(
        new MemoryBlockstore(),
        (async function* () {
          yield pendingShared;
        })(),
      )
    ).cid;
    const pendingPart = pending.blocks.filter((block, i) => (i > 0 && i < 4) || sameBlock(block.cid, pendingSharedCid));
    const answers = await Promise.all([
      post('/imports/car', await carOf([whole.root], whole.blocks), 'application/vnd.ipld.car').then((r) => r.json()),
      post('/imports/car', await carOf([pending.root], pendingPart), 'application/vnd.ipld.car').then((r) => r.json()),
      post('/imports/car', await carOf([deployed.root], deployed.blocks), 'application/vnd.ipld.car').then((r) => r.json()),
    ]);
    expect(answers.map((answer) => answer.complete)).toEqual([true, false, true]);
    const expiresAt = Math.min(...answers.map((answer) => Date.parse(answer.expiresAt)));

    const client = graphqlClient({ name: 'node:http door', fetch: (u, init) => fetch(u, init as RequestInit) }, short.endpoints.graphql);
    const key = BOOT.apiToken;
    const site = dataOf(
      await client.gql(key, 'mutation ($i: CreateSiteInput!) { createSite(input: $i) { id } }', {
        i: {
          deploySettings: {
            source: { repository: { type: 'GIT_HOST', url: 'https://git.invalid/acme/never-cloned.git', branch: 'main' } },
          },
        },
      }),
    ).createSite;
    const started = dataOf(
      await client.gql(key, 'mutation ($s: ID!, $c: String!) { deployCid(siteId: $s, cid: $c) { id } }', {
        s: site.id,
        c: deployed.root.toString(),
      }),
    ).deployCid;

    const wholeCids = whole.blocks.map((block) => block.cid.toString());
    const pendingCids = pendingPart.map((block) => block.cid.toString());
    const deployedCids = deployed.blocks.map((block) => block.cid.toString());
    await objectGoneAgain(short, 'whole-shared', wholeShared);
    await objectGoneAgain(short, 'pending-shared', pendingShared);
    const before = await collectGarbage(short.services);
    expect(before.unpinned).toBe(2); // the two objects' CIDs, unpinned: their blocks stay only if something else keeps them
    expect(Date.now()).toBeLessThan(expiresAt); // else this collection proves nothing: the pins had expired already
    expect(before.importPinsExpired).toBe(0);
    expect(await missingOf([...wholeCids, ...pendingCids, ...deployedCids])).toEqual([]);
    expect(await isRootPinned(await short.services.ipfs(), whole.root)).toBe(true);

    // The deploy takes its DAG before the import pin's time is up.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const deploy = dataOf(
        await client.gql(key, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status } }', {
          s: site.id,
          d: started.id,
        }),
      ).getDeployById;
      if (deploy.status === 'DEPLOYED') break;
      expect(deploy.status).toBe('IN_PROGRESS');
      if (Date.now() > deadline) throw new Error('the deploy did not end');
      await new Promise((r) => setTimeout(r, 100));
    }

    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now()) + 1500));
    const after = await collectGarbage(short.services);
    expect(after.importPinsExpired).toBe(3);
    expect(await isRootPinned(await short.services.ipfs(), whole.root)).toBe(false);
    expect(await importPinsOf(short.services).get(whole.root)).toBeUndefined();
    expect(await missingOf(wholeCids)).toEqual(wholeCids);
    expect(await missingOf(pendingCids)).toEqual(pendingCids);
    expect(await missingOf(deployedCids)).toEqual([]);
    expect(await isRootPinned(await short.services.ipfs(), deployed.root)).toBe(true);
  });
});
