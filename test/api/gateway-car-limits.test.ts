/**
 * The trustless gateway's bound on a `dups=y` CAR, end to end through both
 * doors: a DAG of two blocks whose walk with repeats meets 1.2 million
 * blocks (a root linking one dag-cbor block six times, which links one
 * identity block 200,000 times) passes MAX_REPEATED_BLOCKS, a million, and
 * its CAR ends as functions/gateway/trustless.ts documents: a 200 whose
 * body is cut short, holding every block walked before the cut, never
 * ended cleanly; the same DAG with `dups=n` is whole. A long suite (a
 * million blocks walked per door: about 20 s each on two busy cores).
 */
import { get as httpGet } from 'node:http';
import { CarBlockIterator } from '@ipld/car';
import * as dagCbor from '@ipld/dag-cbor';
import { CID } from 'multiformats/cid';
import { identity } from 'multiformats/hashes/identity';
import { sha256 } from 'multiformats/hashes/sha2';
import { MAX_REPEATED_BLOCKS } from '../../functions/gateway/trustless.js';
import { apiTarget, localDescribe, type ApiTarget } from '../support/api-target.js';
import { lambdaFetch } from '../support/lambda-door.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const savedEnv = { ...process.env };
/** The DAG: `root` links `wide` six times; `wide` links one identity block 200,000 times. */
let root: CID;
let wide: CID;

beforeAll(async () => {
  target = await apiTarget();
  const { blockstore } = await target.local!.services.ipfs();
  const put = async (bytes: Uint8Array) => {
    const cid = CID.createV1(dagCbor.code, await sha256.digest(bytes));
    await blockstore.put(cid, bytes);
    return cid;
  };
  const tiny = CID.createV1(0x55, identity.digest(new Uint8Array([0x61])));
  wide = await put(dagCbor.encode(Array<CID>(200_000).fill(tiny)));
  root = await put(dagCbor.encode(Array<CID>(6).fill(wide)));
}, 60_000);

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

/** A GET's status, Content-Type, the body's bytes as they came, and whether it ended cleanly (a cut one errs midway). */
type Streamed = { status: number; type: string | null; body: Uint8Array; complete: boolean };

/** A GET through the node:http door that keeps what came before a cut (test/support/http.ts's hostFetch refuses a cut body whole). */
function streamOverHttp(url: string): Promise<Streamed> {
  return new Promise((resolve, reject) => {
    httpGet(url, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', () => {}); // the cut: `complete` says so
      res.on('close', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: res.headers['content-type'] ?? null,
          body: Buffer.concat(chunks),
          complete: res.complete,
        }),
      );
    }).on('error', reject);
  });
}

/** The same through a Response whose body may end in an error. */
async function streamOf(res: Response): Promise<Streamed> {
  const chunks: Uint8Array[] = [];
  let complete = true;
  try {
    for await (const chunk of res.body! as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
  } catch {
    complete = false;
  }
  return { status: res.status, type: res.headers.get('content-type'), body: Buffer.concat(chunks), complete };
}

const doors: Array<{ name: string; stream: (url: string) => Promise<Streamed> }> = [
  { name: 'node:http door', stream: streamOverHttp },
  { name: 'Lambda door', stream: async (url) => streamOf(await lambdaFetch(target.gatewayLambda!)(url)) },
];

/** The CIDs of a CAR's blocks, each checked against its bytes. */
async function carCids(body: Uint8Array): Promise<string[]> {
  const cids: string[] = [];
  for await (const { cid, bytes } of await CarBlockIterator.fromBytes(body)) {
    expect(Buffer.from((await sha256.digest(bytes)).digest).equals(Buffer.from(cid.multihash.digest))).toBe(true);
    cids.push(cid.toString());
  }
  return cids;
}

localDescribe.each(doorsFor(doors))('a dups=y CAR past the repeat limit through the $name', ({ stream }) => {
  test('is a 200 whose CAR is cut short after the blocks walked, never ended cleanly; dups=n of the same DAG is whole', async () => {
    // Trustless gateway spec, "Streaming and Missing Child Blocks": once streaming, "The gateway SHOULD terminate the
    // stream (potentially with an incomplete CAR)"; "Clients MUST verify CAR completeness and handle incomplete
    // streams as retrieval failures".
    expect(MAX_REPEATED_BLOCKS).toBe(1_000_000);
    const res = await stream(`${target.endpoints.gateway}/ipfs/${root}?format=car&car-dups=y`);
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/vnd.ipld.car; version=1; order=dfs; dups=y');
    // The body ends in an error, not a clean end a client could take for the whole CAR.
    expect(res.complete).toBe(false);
    // Before the cut, whole blocks of the walk: the root, then the wide block each time the walk met it (the
    // root's 5 repeats of it are counted first, then 199,999 of the identity block under each: the millionth
    // repeat is under the fifth). Identity blocks are in no CAR.
    expect(await carCids(res.body)).toEqual([root, wide, wide, wide, wide, wide].map(String));
    // dups=n: each block once, whole.
    const whole = await stream(`${target.endpoints.gateway}/ipfs/${root}?format=car`);
    expect([whole.status, whole.complete]).toEqual([200, true]);
    expect(await carCids(whole.body)).toEqual([root, wide].map(String));
  }, 120_000);
});
