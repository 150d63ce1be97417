/**
 * Bounded work on hostile input, on a local service, through the node:http
 * door and the Lambda door: a CAR holding a chain DAG 3,000 deep (which
 * once held every port for seconds, and at 3,000 answered 500 "Maximum call
 * stack size exceeded") imports whole; one 10,000 deep is refused with 400
 * naming the depth limit, keeps nothing, and cannot be deployed by CID
 * either; a `have` of 10,000 CIDs is answered; and while each runs, a timer
 * in this process (the service's) never waits 50 ms of work for its turn
 * (test/support/event-loop.ts). Several hostile imports at once leave the
 * heap where it was.
 *
 * Local only: it reads the node's pins and runs collection itself.
 */
import { randomBytes } from 'node:crypto';
import { CarWriter } from '@ipld/car/writer';
import { encode as encodeDagPb, prepare } from '@ipld/dag-pb';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, importGraphqlLambda, newAccount, onlyError, type AccountFixture } from '../support/graphql.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import { leastCpuMs, leastStalled } from '../support/event-loop.js';
import { isRootPinned } from '../../functions/core/storage/pins.js';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { importPinsOf } from '../../functions/core/storage/car-ingest.js';
import { DAG_LIMITS } from '../../functions/core/storage/dag-walk.js';
import { doorsFor } from '../support/test-set.js';

let service: TestService;
let a: AccountFixture;
let graphqlLambda: LambdaFn;
const savedEnv = { ...process.env };

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_MAX_IMPORT_BYTES: String(8 * 1024 * 1024), CAIRN_PREVIEW: 'off' });
  Object.assign(process.env, service.env);
  graphqlLambda = await importGraphqlLambda();
  a = await newAccount(service, 'hostile');
});
afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
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

/** A chain `depth` links deep: a raw leaf of its own under `depth` dag-pb nodes of one link each; blocks root first. */
async function chain(depth: number): Promise<{ root: CID; blocks: Block[] }> {
  const leafBytes = randomBytes(32);
  const blocks: Block[] = [{ cid: CID.createV1(0x55, await sha256.digest(leafBytes)), bytes: leafBytes }];
  for (let i = 0; i < depth; i++) {
    const bytes = encodeDagPb(prepare({ Links: [{ Hash: blocks[blocks.length - 1]!.cid, Name: '', Tsize: 1 }] }));
    blocks.push({ cid: CID.createV1(0x70, await sha256.digest(bytes)), bytes });
  }
  blocks.reverse();
  return { root: blocks[0]!.cid, blocks };
}

async function carOf(root: CID, blocks: Block[]): Promise<Uint8Array> {
  const { writer, out } = CarWriter.create([root]);
  const parts: Uint8Array[] = [];
  const reading = (async () => {
    for await (const part of out) parts.push(part);
  })();
  for (const block of blocks) await writer.put(block);
  await writer.close();
  await reading;
  return Buffer.concat(parts);
}

const depthRefusal = (root: CID) =>
  `the DAG of ${root} is deeper than ${DAG_LIMITS.maxDepth} levels; this service takes DAGs of at most ${DAG_LIMITS.maxDepth} levels, ${DAG_LIMITS.maxBlocks} blocks and ${DAG_LIMITS.maxLinks} links`;

describe.each(doorsFor(DOORS))('through the $name', (door) => {
  let send: Fetch;
  const url = (path: string) => `${service.config.urls.baseUrl}${path}`;
  /** Asks which of `cids` the service lacks: the request's body as sent, the answer's as received. */
  const haveAnswer = async (body: string): Promise<string> => {
    const res = await send(url('/imports/have'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: a.apiKey },
      body,
    });
    expect(res.status).toBe(200);
    return res.text();
  };
  const missingOf = async (cids: string[]): Promise<string[]> => JSON.parse(await haveAnswer(JSON.stringify({ cids }))).missing;
  beforeAll(async () => {
    send = door.fetch();
    // A Lambda's first request loads and composes the service: a cold start, not work on anyone's input.
    expect((await missingOf([])).length).toBe(0);
  });
  const postCar = (body: Uint8Array) =>
    send(url('/imports/car'), { method: 'POST', headers: { 'content-type': 'application/vnd.ipld.car', authorization: a.apiKey }, body });

  test('a chain 3,000 deep in one CAR imports whole and is pinned, and the event loop never waits 50 ms', async () => {
    const runs = await leastStalled(
      async () => {
        const { root, blocks } = await chain(3_000);
        return { root, car: await carOf(root, blocks) };
      },
      async ({ car }) => {
        const res = await postCar(car);
        return { status: res.status, body: await res.json() };
      },
    );
    for (const { result: res, input } of runs) {
      expect(res).toEqual({
        status: 200,
        body: expect.objectContaining({ ok: true, root: input.root.toString(), blocks: 3_001, complete: true }),
      });
      expect(await isRootPinned(await service.services.ipfs(), input.root)).toBe(true);
    }
    expect(leastCpuMs(runs)).toBeLessThan(50);
  });

  test('a chain 10,000 deep is 400 naming the depth limit, keeps nothing, and cannot be deployed by CID; the loop never waits 50 ms', async () => {
    const runs = await leastStalled(
      async () => {
        const { root, blocks } = await chain(10_000);
        return { root, blocks, car: await carOf(root, blocks) };
      },
      async ({ car }) => {
        const res = await postCar(car);
        return { status: res.status, body: await res.json() };
      },
    );
    for (const { result: res, input } of runs) {
      expect(res).toEqual({ status: 400, body: { ok: false, error: depthRefusal(input.root) } });
      expect(await isRootPinned(await service.services.ipfs(), input.root)).toBe(false);
      expect(await importPinsOf(service.services).get(input.root)).toBeUndefined();
    }
    expect(leastCpuMs(runs)).toBeLessThan(50);
    const { root, blocks } = runs[0]!.input;

    // Its blocks are still here until collection: deploying the root walks it, and refuses it the same way.
    const gql = graphqlClient({ name: door.name, fetch: send }, service.endpoints.graphql);
    const site = dataOf(
      await gql.gql(a.apiKey, 'mutation ($i: CreateSiteInput!) { createSite(input: $i) { id } }', {
        i: { deploySettings: { source: { repository: { type: 'GIT_HOST', url: 'https://git.invalid/acme/never.git', branch: 'main' } } } },
      }),
    ).createSite;
    const refused = onlyError(
      await gql.gql(a.apiKey, 'mutation ($s: ID!, $c: String!) { deployCid(siteId: $s, cid: $c) { id } }', {
        s: site.id,
        c: root.toString(),
      }),
    );
    expect(refused.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'cid' });
    expect(refused.message).toBe(`${depthRefusal(root).replace(/^t/, 'T')}.`);

    await collectGarbage(service.services);
    const cids = [blocks[0]!, blocks[5_000]!, blocks[10_000]!].map((block) => block.cid.toString());
    expect(await missingOf(cids)).toEqual(cids);
  }, 180_000); // 10,000 blocks stored, held, walked to the limit and let go: tens of thousands of writes on a shared disk

  test('a have of 10,000 CIDs is answered without a 50 ms wait of the loop', async () => {
    // The client's share stays out of the measured window: the 600 KB request
    // is written before it and the answer parsed after it, so the window holds
    // the door and the service (a CI run once measured 52.7 ms with both in).
    const runs = await leastStalled(
      async () => {
        const cids = await Promise.all(
          Array.from({ length: 10_000 }, async (_, i) =>
            CID.createV1(0x55, await sha256.digest(Buffer.from(`have ${door.name} ${i}`))).toString(),
          ),
        );
        return { cids, body: JSON.stringify({ cids }) };
      },
      ({ body }) => haveAnswer(body),
    );
    for (const { result, input } of runs) expect(JSON.parse(result).missing).toEqual(input.cids);
    expect(leastCpuMs(runs)).toBeLessThan(50);
  });
});

describe('several hostile imports at once', () => {
  test('four chains 5,000 deep sent together are each refused, and the heap returns to where it was', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const chains = await Promise.all(Array.from({ length: 4 }, () => chain(5_000)));
    const cars = await Promise.all(chains.map(({ root, blocks }) => carOf(root, blocks)));
    gc();
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
    let answers: number[];
    try {
      answers = await Promise.all(
        cars.map(
          async (car) =>
            (
              await fetch(`${service.config.urls.baseUrl}/imports/car`, {
                method: 'POST',
                headers: { 'content-type': 'application/vnd.ipld.car', authorization: a.apiKey },
                body: car as BodyInit,
              })
            ).status,
        ),
      );
    } finally {
      clearInterval(sampler);
    }
    expect(answers).toEqual([400, 400, 400, 400]);
    // Four walks stopped at 4,096 levels hold a few MiB each, not their DAGs; the rest is garbage not yet collected.
    expect((peak - before) / 2 ** 20).toBeLessThan(256);
    gc();
    expect((process.memoryUsage().heapUsed - before) / 2 ** 20).toBeLessThan(16);
  }, 180_000);
});
