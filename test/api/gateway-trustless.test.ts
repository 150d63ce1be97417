/**
 * The trustless gateway's response types on `/ipfs/<cid>[/path]`, through
 * both doors: raw blocks and CARs with dag-scope and entity-bytes. Every
 * block of a CAR is checked against its CID, and the blocks are compared
 * with the DAG in the node's blockstore and, independently, fed to the
 * UnixFS exporter to show a client can verify what it asked for with them
 * alone. Content comes from directories imported into the node (one of them
 * a HAMT with sub-shards) and a multi-block object uploaded through S3.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { CarBlockIterator } from '@ipld/car';
import * as dagPb from '@ipld/dag-pb';
import { MemoryBlockstore } from 'blockstore-core/memory';
import { exporter, walkPath } from 'ipfs-unixfs-exporter';
import { UnixFS } from 'ipfs-unixfs';
import { CID } from 'multiformats/cid';
import { identity } from 'multiformats/hashes/identity';
import { sha256 } from 'multiformats/hashes/sha2';
import { apiTarget, localDescribe, type ApiTarget } from '../support/api-target.js';
import { lambdaFetch } from '../support/lambda-door.js';
import { hostFetch } from '../support/http.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { blockKey, readBlock, walkDag } from '../../functions/core/storage/dag-walk.js';
import { doorsFor } from '../support/test-set.js';

const CAR_TYPE = 'application/vnd.ipld.car; version=1; order=dfs; dups=n';
const CHUNK = 262144;

let target: ApiTarget;
let scratch: string;
const savedEnv = { ...process.env };

/** An imported tree: index.html, sub/file.bin (1 MiB, four leaves), sub/note.txt, zeros.bin (two equal leaves and a short one). */
const FILE = randomBytes(1024 * 1024);
const ZEROS = Buffer.alloc(2 * CHUNK + 1000);
let tree: CID;
let sub: CID;
let file: CID;
let zeros: CID;
/** A HAMT-sharded directory of 300 entries (with sub-shards), and one of its names. */
let hamt: CID;
const HAMT_NAMES = Array.from({ length: 300 }, (_, i) => `entry-${String(i).padStart(3, '0')}-${'long-name-'.repeat(4)}.txt`);
/** A 1 MiB object uploaded through S3 (as Kubo adds it: CIDv0, four dag-pb leaves). */
const OBJECT = randomBytes(1024 * 1024 + 5000);
let object: CID;
/** A file (DAMAGED) whose second leaf is deleted from the blockstore after import. */
let damaged: CID;
const DAMAGED = randomBytes(3 * CHUNK);
/** gateway-conformance's symlink.car: a directory of `foo` ("content\n") and `bar`, a symlink to foo. */
let symlinks: CID;
/**
 * gateway-conformance's dir-with-duplicate-files.car (test/fixtures/gateway-conformance):
 * ascii-copy.txt and ascii.txt are one block, hello.txt, and multiblock.txt of five leaves.
 */
let duplicates: CID;

async function importFiles(name: string, files: Record<string, string | Buffer>, shardingThreshold?: number): Promise<CID> {
  const dir = join(scratch, name);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
  }
  const node = await target.local!.services.ipfs();
  return (await importDirectory(node.blockstore, dir, shardingThreshold === undefined ? {} : { shardingThreshold })).cid;
}

async function blockstore() {
  return (await target.local!.services.ipfs()).blockstore;
}

/** The CID of the entry at `path` under `root`, from the node's blockstore. */
async function cidAt(root: CID, path: string): Promise<CID> {
  return (await exporter(`${root}/${path}`, await blockstore())).cid;
}

/** Every block of the DAG under `root` in the node's blockstore, in walkDag's order. */
async function dagOf(root: CID): Promise<CID[]> {
  const out: CID[] = [];
  for await (const cid of walkDag(await blockstore(), root)) out.push(cid);
  return out;
}

const keys = (cids: CID[]) => cids.map(blockKey);

beforeAll(async () => {
  target = await apiTarget();
  scratch = await mkdtemp(join(tmpdir(), 'cairn-trustless-'));
  tree = await importFiles('tree', {
    'index.html': '<!doctype html><p>hi</p>\n',
    'sub/file.bin': FILE,
    'sub/note.txt': 'a note\n',
    'zeros.bin': ZEROS,
  });
  sub = await cidAt(tree, 'sub');
  file = await cidAt(tree, 'sub/file.bin');
  zeros = await cidAt(tree, 'zeros.bin');
  hamt = await importFiles('hamt', Object.fromEntries(HAMT_NAMES.map((n, i) => [n, `entry ${i}\n`])), 1);
  damaged = await cidAt(await importFiles('damaged', { 'f.bin': DAMAGED }), 'f.bin');
  const fixture = await CarBlockIterator.fromBytes(
    await readFile(join(dirname(fileURLToPath(import.meta.url)), '../fixtures/gateway-conformance/dir-with-duplicate-files.car')),
  );
  duplicates = (await fixture.getRoots())[0]!;
  for await (const { cid, bytes } of fixture) await (await blockstore()).put(cid, bytes);
  const links = await CarBlockIterator.fromBytes(
    await readFile(join(dirname(fileURLToPath(import.meta.url)), '../fixtures/gateway-conformance/symlink.car')),
  );
  symlinks = (await links.getRoots())[0]!;
  for await (const { cid, bytes } of links) await (await blockstore()).put(cid, bytes);
  const leaves = (await dagOf(damaged)).slice(1);
  expect(leaves).toHaveLength(3);
  await (await blockstore()).delete(leaves[1]!);

  let v0 = '';
  const s3 = target.s3();
  s3.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      v0 = (out.response as { headers: Record<string, string> }).headers['x-service-ipfs-hash-v0']!;
      return out;
    },
    { step: 'deserialize', name: 'captureCid' },
  );
  await s3.send(new PutObjectCommand({ Bucket: target.account.bucket, Key: 'trustless/object.bin', Body: OBJECT }));
  object = CID.parse(v0);
}, 120_000);

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

interface CarBlock {
  cid: CID;
  bytes: Uint8Array;
}

/** A CAR's roots and blocks, each block checked against its CID: the SHA-256 of its bytes is the CID's digest, and a dag-pb block decodes. */
async function readCar(body: Uint8Array): Promise<{ roots: CID[]; blocks: CarBlock[] }> {
  const reader = await CarBlockIterator.fromBytes(body);
  expect(reader.version).toBe(1);
  const roots = await reader.getRoots();
  const blocks: CarBlock[] = [];
  for await (const { cid, bytes } of reader) {
    expect(cid.multihash.code).toBe(sha256.code);
    const digest = await sha256.digest(bytes);
    expect(Buffer.from(digest.digest).equals(Buffer.from(cid.multihash.digest))).toBe(true);
    if (cid.code === dagPb.code) expect(() => dagPb.decode(bytes)).not.toThrow();
    blocks.push({ cid, bytes });
  }
  return { roots, blocks };
}

/** The CAR's blocks as a blockstore of their own: what a client holds after the download. */
async function storeOf(blocks: CarBlock[]): Promise<MemoryBlockstore> {
  const store = new MemoryBlockstore();
  for (const b of blocks) await store.put(b.cid, b.bytes);
  return store;
}

/** A file's bytes (or a range of them) as the exporter reads them. */
async function bytesOf(entry: Awaited<ReturnType<typeof exporter>>, options?: { offset: number; length: number }): Promise<Buffer> {
  if (entry.type !== 'file' && entry.type !== 'raw') throw new Error(`${entry.cid} is a ${entry.type}`);
  const parts: Uint8Array[] = [];
  for await (const part of entry.content(options)) parts.push(part);
  return Buffer.concat(parts);
}

type Init = { method?: string; headers?: Record<string, string> };
type Fetch = (url: string, init?: Init) => Promise<Response>;
const doors: Array<{ name: string; fetch: Fetch }> = [
  { name: 'node:http door', fetch: (url, init) => hostFetch(url, init) },
  { name: 'Lambda door', fetch: (url, init) => lambdaFetch(target.gatewayLambda!)(url, init) },
];

localDescribe.each(doorsFor(doors))('trustless gateway formats through the $name', ({ fetch }) => {
  const get = (path: string, init: Init = {}) => fetch(`${target.endpoints.gateway}${path}`, init);
  const car = async (path: string, init: Init = {}) => {
    const res = await get(path, init);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(CAR_TYPE);
    return { res, ...(await readCar(new Uint8Array(await res.arrayBuffer()))) };
  };

  test('dag-scope=all (the default) of a directory is its whole DAG, each block once, depth first, each block matching its CID', async () => {
    const { res, roots, blocks } = await car(`/ipfs/${tree}?format=car`);
    expect(roots.map(String)).toEqual([tree.toString()]);
    const dag = await dagOf(tree);
    // Exactly the DAG, in walkDag's depth-first order: the zero leaf that zeros.bin links twice comes once.
    expect(keys(blocks.map((b) => b.cid))).toEqual(keys(dag));
    expect(new Set(keys(blocks.map((b) => b.cid))).size).toBe(blocks.length);
    // The root, index.html, sub, file.bin and its 4 leaves, note.txt, zeros.bin and its 2 distinct leaves.
    expect(blocks).toHaveLength(12);
    // Each block is byte for byte the block in the node.
    const bs = await blockstore();
    for (const b of blocks) expect(Buffer.from(b.bytes).equals(Buffer.from(await readBlock(bs, b.cid)))).toBe(true);
    // A client with the CAR alone reads every file back.
    const mine = await storeOf(blocks);
    expect((await bytesOf(await exporter(`${tree}/sub/file.bin`, mine))).equals(FILE)).toBe(true);
    expect((await bytesOf(await exporter(`${tree}/zeros.bin`, mine))).equals(ZEROS)).toBe(true);
    expect((await bytesOf(await exporter(`${tree}/sub/note.txt`, mine))).toString()).toBe('a note\n');
    expect(res.headers.get('etag')).toMatch(new RegExp(`^W/"${tree}\\.[0-9a-f]{16}\\.car"$`));
    expect(res.headers.get('cache-control')).toBe('public, max-age=29030400, immutable');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${tree}.car"`);
    expect(res.headers.get('x-ipfs-path')).toBe(`/ipfs/${tree}`);
    expect(res.headers.get('x-ipfs-roots')).toBe(tree.toString());
    expect(res.headers.get('vary')).toBe('Accept');
    expect(res.headers.get('content-location')).toBeNull();
  });

  test('dag-scope=entity: a directory is its node alone, a file all its blocks, a HAMT its shards and no entries', async () => {
    const dir = await car(`/ipfs/${tree}?format=car&dag-scope=entity`);
    expect(dir.blocks.map((b) => b.cid.toString())).toEqual([tree.toString()]);

    const whole = await car(`/ipfs/${object}?format=car&dag-scope=entity`);
    expect(whole.roots.map(String)).toEqual([object.toString()]);
    const objectDag = await dagOf(object);
    expect(objectDag).toHaveLength(1 + 5);
    expect(keys(whole.blocks.map((b) => b.cid))).toEqual(keys(objectDag));
    expect((await bytesOf(await exporter(object, await storeOf(whole.blocks)))).equals(OBJECT)).toBe(true);

    const shards = await car(`/ipfs/${hamt}?format=car&dag-scope=entity`);
    // The HAMT's own blocks, found independently: every block of its DAG whose UnixFS type is a HAMT shard.
    const bs = await blockstore();
    const expected: CID[] = [];
    for (const cid of await dagOf(hamt)) {
      if (cid.code !== dagPb.code) continue;
      const node = dagPb.decode(await readBlock(bs, cid));
      if (node.Data && UnixFS.unmarshal(node.Data).type === 'hamt-sharded-directory') expected.push(cid);
    }
    expect(expected.length).toBeGreaterThan(1); // the root and sub-shards
    expect(shards.blocks[0]!.cid.toString()).toBe(hamt.toString());
    expect(new Set(keys(shards.blocks.map((b) => b.cid)))).toEqual(new Set(keys(expected)));
    expect(shards.blocks).toHaveLength(expected.length);
    // With them alone a client lists all 300 names.
    const listed: string[] = [];
    const dirEntry = await exporter(hamt, await storeOf(shards.blocks));
    if (dirEntry.type !== 'directory') throw new Error('not a directory');
    for await (const e of dirEntry.entries()) listed.push(e.name);
    expect(listed.sort()).toEqual([...HAMT_NAMES].sort());

    // The etags of the scopes differ.
    const all = await get(`/ipfs/${tree}?format=car`, { method: 'HEAD' });
    expect(dir.res.headers.get('etag')).not.toBe(all.headers.get('etag'));
  });

  test('dups=y (IPIP-412) repeats each block every time the walk meets it; dups=n, the default, sends it once; the Content-Type says which', async () => {
    // gateway-conformance TestTrustlessCarOrderAndDuplicates: "Duplicate blocks MUST be sent every time they occur during the DAG walk" (dups=y),
    // "Duplicate blocks MUST be sent only once" (dups=n), exactly these blocks in this order.
    const fixture = await blockstore();
    const at = async (name: string) => (await exporter(`${duplicates}/${name}`, fixture)).cid.toString();
    const multiblock = await at('multiblock.txt');
    const leaves = (await dagOf(CID.parse(multiblock))).slice(1).map(String);
    expect(leaves).toEqual([
      'bafkreie5noke3mb7hqxukzcy73nl23k6lxszxi5w3dtmuwz62wnvkpsscm',
      'bafkreih4ephajybraj6wnxsbwjwa77fukurtpl7oj7t7pfq545duhot7cq',
      'bafkreigu7buvm3cfunb35766dn7tmqyh2um62zcio63en2btvxuybgcpue',
      'bafkreicll3huefkc3qnrzeony7zcfo7cr3nbx64hnxrqzsixpceg332fhe',
      'bafkreifst3pqztuvj57lycamoi7z34b4emf7gawxs74nwrc2c7jncmpaqm',
    ]);
    const ascii = await at('ascii.txt');
    expect(await at('ascii-copy.txt')).toBe(ascii);
    const withDups = [duplicates.toString(), ascii, ascii, await at('hello.txt'), multiblock, ...leaves];
    const DUPS_Y = 'application/vnd.ipld.car; version=1; order=dfs; dups=y';
    const cids = async (path: string, init: Init, type: string) => {
      const res = await get(path, init);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      return (await readCar(new Uint8Array(await res.arrayBuffer()))).blocks.map((b) => b.cid.toString());
    };
    const accept = (dups: string) => ({ headers: { accept: `application/vnd.ipld.car; version=1; order=dfs; dups=${dups}` } });
    expect(await cids(`/ipfs/${duplicates}`, accept('y'), DUPS_Y)).toEqual(withDups);
    expect(await cids(`/ipfs/${duplicates}`, accept('n'), CAR_TYPE)).toEqual([...new Set(withDups)]);
    // format=car still reads dups from Accept; the query's car-dups wins over it ("the URL query parameter SHOULD take precedence").
    expect(await cids(`/ipfs/${duplicates}?format=car`, accept('y'), DUPS_Y)).toEqual(withDups);
    expect(
      await cids(`/ipfs/${duplicates}?format=car&car-dups=y`, { headers: { accept: 'application/vnd.ipld.car; dups=n' } }, DUPS_Y),
    ).toEqual(withDups);
    expect(await cids(`/ipfs/${duplicates}?format=car&car-dups=n`, accept('y'), CAR_TYPE)).toEqual([...new Set(withDups)]);
    // order=unk takes the depth-first order, said explicitly.
    expect(await cids(`/ipfs/${duplicates}`, { headers: { accept: 'application/vnd.ipld.car; version=1; order=unk' } }, CAR_TYPE)).toEqual([
      ...new Set(withDups),
    ]);
    // "A Gateway MUST NOT include virtual blocks identified by identity CIDs ... regardless of ... the value assigned to the "dups" parameter".
    expect(
      await cids(
        '/ipfs/bafkqaf3imvwgy3zaneqgc3janfxgy2lomvscay3jmqfa',
        { headers: { accept: 'application/vnd.ipld.car; dups=y' } },
        DUPS_Y,
      ),
    ).toEqual([]);

    // zeros.bin links one leaf twice: dups=y sends it twice, for the whole file, its entity and a byte range over both.
    const zeroDag = (await dagOf(zeros)).map(String);
    expect(zeroDag).toHaveLength(3);
    const [root, zero, tail] = zeroDag as [string, string, string];
    for (const query of ['', '&dag-scope=entity', `&entity-bytes=0:${2 * CHUNK + 10}`]) {
      expect(await cids(`/ipfs/${zeros}?format=car&car-dups=y${query}`, {}, DUPS_Y)).toEqual([root, zero, zero, tail]);
      expect(await cids(`/ipfs/${zeros}?format=car${query}`, {}, CAR_TYPE)).toEqual([root, zero, tail]);
    }
    expect(await cids(`/ipfs/${zeros}?format=car&car-dups=y&entity-bytes=${CHUNK}:${CHUNK + 5}`, {}, DUPS_Y)).toEqual([root, zero]);
    // Under a path, the path's blocks come first, once; then the file's, repeated.
    expect(await cids(`/ipfs/${tree}/zeros.bin?format=car&car-dups=y`, {}, DUPS_Y)).toEqual([tree.toString(), root, zero, zero, tail]);
    // Each variant has its own ETag.
    const [y, n] = await Promise.all([
      get(`/ipfs/${zeros}?format=car&car-dups=y`, { method: 'HEAD' }),
      get(`/ipfs/${zeros}?format=car`, { method: 'HEAD' }),
    ]);
    expect(y.headers.get('etag')).not.toBe(n.headers.get('etag'));
  });

  test('dag-scope=block is the one block', async () => {
    const { roots, blocks, res } = await car(`/ipfs/${object}?format=car&dag-scope=block`);
    expect(roots.map(String)).toEqual([object.toString()]);
    expect(blocks.map((b) => b.cid.toString())).toEqual([object.toString()]);
    const entity = await get(`/ipfs/${object}?format=car&dag-scope=entity`, { method: 'HEAD' });
    expect(res.headers.get('etag')).not.toBe(entity.headers.get('etag'));
  });

  test('a CAR for a path: the file is the root, after the blocks that prove the path', async () => {
    const { res, roots, blocks } = await car(`/ipfs/${tree}/sub/file.bin?format=car`);
    expect(roots.map(String)).toEqual([file.toString()]);
    const fileDag = await dagOf(file);
    expect(keys(blocks.map((b) => b.cid))).toEqual(keys([tree, sub, ...fileDag]));
    expect(res.headers.get('x-ipfs-roots')).toBe([tree, sub, file].join(','));
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${file}.car"`);
    // The client follows the path and reads the file from the CAR alone.
    const mine = await storeOf(blocks);
    const steps = [];
    for await (const step of walkPath(`${tree}/sub/file.bin`, mine)) steps.push(step.cid.toString());
    expect(steps.at(-1)).toBe(file.toString());
    expect((await bytesOf(await exporter(`${tree}/sub/file.bin`, mine))).equals(FILE)).toBe(true);

    // dag-scope=block on a path: the path's blocks and the file's root only.
    const block = await car(`/ipfs/${tree}/sub/file.bin?format=car&dag-scope=block`);
    expect(block.blocks.map((b) => b.cid.toString())).toEqual([tree, sub, file].map(String));
    expect(block.res.headers.get('etag')).not.toBe(res.headers.get('etag'));
  });

  test('a path through a HAMT brings the shards on the way, and only those', async () => {
    const name = HAMT_NAMES[123]!;
    const entry = await cidAt(hamt, name);
    const { roots, blocks } = await car(`/ipfs/${hamt}/${name}?format=car&dag-scope=block`);
    expect(roots.map(String)).toEqual([entry.toString()]);
    expect(blocks[0]!.cid.toString()).toBe(hamt.toString());
    expect(blocks.at(-1)!.cid.toString()).toBe(entry.toString());
    const shardCount = (await car(`/ipfs/${hamt}?format=car&dag-scope=entity`)).blocks.length;
    expect(blocks.length).toBeLessThan(shardCount + 1);
    const mine = await storeOf(blocks);
    const found = await exporter(`${hamt}/${name}`, mine);
    expect((await bytesOf(found)).toString()).toBe('entry 123\n');
  });

  test('entity-bytes: only the blocks under the range, which a client can read the range from', async () => {
    const dag = await dagOf(object);
    const [root, ...leaves] = dag;
    expect(leaves).toHaveLength(5);
    const cases: Array<[string, number[], number, number]> = [
      ['300000:600000', [1, 2], 300000, 600001], // bytes in leaves 1 and 2
      ['0:0', [0], 0, 1],
      [`-1000:*`, [4], OBJECT.length - 1000, OBJECT.length],
      [`${CHUNK}:${2 * CHUNK - 1}`, [1], CHUNK, 2 * CHUNK],
      ['0:*', [0, 1, 2, 3, 4], 0, OBJECT.length],
      [`10:${10 * OBJECT.length}`, [0, 1, 2, 3, 4], 10, OBJECT.length],
    ];
    const etags = new Set<string>();
    for (const [range, wanted, from, to] of cases) {
      const { blocks, res } = await car(`/ipfs/${object}?format=car&entity-bytes=${range}`);
      expect(keys(blocks.map((b) => b.cid))).toEqual(keys([root!, ...wanted.map((i) => leaves[i]!)]));
      const entry = await exporter(object, await storeOf(blocks));
      expect((await bytesOf(entry, { offset: from, length: to - from })).equals(OBJECT.subarray(from, to))).toBe(true);
      etags.add(res.headers.get('etag')!);
    }
    expect(etags.size).toBe(cases.length);
    // A file of equal chunks: the zero leaf is sent once, whichever occurrences the range covers.
    const z = await car(`/ipfs/${zeros}?format=car&entity-bytes=1000:${2 * CHUNK + 10}`);
    const zeroDag = await dagOf(zeros);
    expect(keys(z.blocks.map((b) => b.cid))).toEqual(keys(zeroDag));
    expect(zeroDag).toHaveLength(3); // root, the 256 KiB zero leaf, the short one
    // Wholly outside the file: 400; a range that selects nothing is the root alone.
    expect((await get(`/ipfs/${object}?format=car&entity-bytes=${OBJECT.length}:*`)).status).toBe(400);
    const none = await car(`/ipfs/${object}?format=car&entity-bytes=500:100`);
    expect(none.blocks.map((b) => b.cid.toString())).toEqual([object.toString()]);
    // On a directory entity-bytes means nothing: the directory's entity.
    const dir = await car(`/ipfs/${tree}?format=car&entity-bytes=0:10`);
    expect(dir.blocks.map((b) => b.cid.toString())).toEqual([tree.toString()]);
    // Malformed, or against another scope: 400.
    for (const bad of ['entity-bytes=1-2', 'entity-bytes=a:b', 'entity-bytes=0:10&dag-scope=all', 'dag-scope=everything']) {
      const res = await get(`/ipfs/${object}?format=car&${bad}`);
      expect(res.status).toBe(400);
    }
  });

  test('a raw block is the bytes as stored, which hash to the CID; by a path, the block it reaches', async () => {
    const bs = await blockstore();
    for (const cid of [object, (await dagOf(object))[2]!, tree]) {
      const res = await get(`/ipfs/${cid}?format=raw`);
      expect(res.status).toBe(200);
      const bytes = new Uint8Array(await res.arrayBuffer());
      expect(Buffer.from((await sha256.digest(bytes)).digest).equals(Buffer.from(cid.multihash.digest))).toBe(true);
      expect(Buffer.from(bytes).equals(Buffer.from(await readBlock(bs, cid)))).toBe(true);
      expect(res.headers.get('content-type')).toBe('application/vnd.ipld.raw');
      expect(res.headers.get('etag')).toBe(`"${cid}.raw"`);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${cid}.bin"`);
      expect(res.headers.get('cache-control')).toBe('public, max-age=29030400, immutable');
      expect(res.headers.get('x-ipfs-path')).toBe(`/ipfs/${cid}`);
      expect(res.headers.get('x-ipfs-roots')).toBe(cid.toString());
      expect(res.headers.get('content-length')).toBe(String(bytes.length));
    }
    // The CIDv1 of the same block is the same bytes.
    const v1 = await get(`/ipfs/${object.toV1()}?format=raw`);
    expect(Buffer.from(await v1.arrayBuffer()).equals(Buffer.from(await readBlock(bs, object)))).toBe(true);
    // ?filename= names the download, in ASCII and, when it is not ASCII, in UTF-8 too.
    const named = await get(`/ipfs/${object}?format=raw&filename=bl%C3%B6ck.bin`);
    expect(named.headers.get('content-disposition')).toBe(`attachment; filename="bl_ck.bin"; filename*=UTF-8''bl%C3%B6ck.bin`);
    await named.arrayBuffer();
    // With a path, the block the path reaches ("format": the response type of the
    // content path's terminal element), the blocks on the way named in X-Ipfs-Roots.
    for (const [path, terminal, roots] of [
      [`${tree}/sub`, sub, [tree, sub]],
      [`${tree}/sub/file.bin`, file, [tree, sub, file]],
    ] as const) {
      const res = await get(`/ipfs/${path}?format=raw`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(await readBlock(bs, terminal)))).toBe(true);
      expect(res.headers.get('etag')).toBe(`"${terminal}.raw"`);
      expect(res.headers.get('x-ipfs-roots')).toBe(roots.join(','));
      expect(res.headers.get('x-ipfs-path')).toBe(`/ipfs/${path}`);
    }
    const byAccept = await get(`/ipfs/${tree}/sub`, { headers: { accept: 'application/vnd.ipld.raw' } });
    expect(byAccept.headers.get('etag')).toBe(`"${sub}.raw"`);
    await byAccept.arrayBuffer();
    const nowhere = await get(`/ipfs/${tree}/sub/missing.txt?format=raw`);
    expect(nowhere.status).toBe(404);
    await nowhere.arrayBuffer();
    // The spec's probe: the empty identity CID is an empty block and an empty CAR.
    const probe = await get('/ipfs/bafkqaaa?format=raw');
    expect(probe.status).toBe(200);
    expect((await probe.arrayBuffer()).byteLength).toBe(0);
    const probeCar = await car('/ipfs/bafkqaaa?format=car');
    expect(probeCar.roots.map(String)).toEqual(['bafkqaaa']);
    expect(probeCar.blocks).toHaveLength(0);
  });

  test('If-None-Match with the ETag is a 304 for raw blocks and CARs; another ETag is a 200', async () => {
    for (const path of [`/ipfs/${object}?format=raw`, `/ipfs/${tree}/sub/file.bin?format=car&dag-scope=entity`]) {
      const first = await get(path);
      expect(first.status).toBe(200);
      await first.arrayBuffer();
      const etag = first.headers.get('etag')!;
      const again = await get(path, { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
      expect(again.headers.get('etag')).toBe(etag);
      expect(again.headers.get('cache-control')).toContain('immutable');
      expect((await again.arrayBuffer()).byteLength).toBe(0);
      const other = await get(path, { headers: { 'if-none-match': '"something-else"' } });
      expect(other.status).toBe(200);
      await other.arrayBuffer();
    }
    // An ETag of another scope does not match.
    const entity = await get(`/ipfs/${object}?format=car&dag-scope=entity`, { method: 'HEAD' });
    expect((await get(`/ipfs/${object}?format=car`, { headers: { 'if-none-match': entity.headers.get('etag')! } })).status).toBe(200);
  });

  test('the Accept header forms answer as the ?format= forms, naming those in Content-Location', async () => {
    const pairs: Array<[string, string, Record<string, string>]> = [
      [`/ipfs/${object}?format=raw`, `/ipfs/${object}`, { accept: 'application/vnd.ipld.raw' }],
      [`/ipfs/${tree}?format=car`, `/ipfs/${tree}`, { accept: 'application/vnd.ipld.car' }],
      [
        `/ipfs/${tree}/sub?format=car&dag-scope=entity`,
        `/ipfs/${tree}/sub?dag-scope=entity`,
        { accept: 'application/vnd.ipld.car; version=1; order=dfs; dups=n' },
      ],
      [`/ipfs/${tree}?format=car`, `/ipfs/${tree}`, { accept: 'application/vnd.ipld.car;order=unk, application/vnd.ipld.raw;q=0.5' }],
      [`/ipfs/${object}?format=raw`, `/ipfs/${object}`, { accept: 'text/html;q=0.1, application/vnd.ipld.raw' }],
      // A CAR variant this gateway does not write, then one it does.
      [
        `/ipfs/${tree}?format=car`,
        `/ipfs/${tree}`,
        { accept: 'application/vnd.ipld.car; version=2, application/vnd.ipld.car; dups=n; q=0.9' },
      ],
      [
        `/ipfs/${tree}?format=car&car-dups=y`,
        `/ipfs/${tree}`,
        { accept: 'application/vnd.ipld.car; order=foo, application/vnd.ipld.car; dups=y; q=0.9' },
      ],
    ];
    for (const [byFormat, byAccept, headers] of pairs) {
      const a = await get(byFormat);
      const b = await get(byAccept, { headers });
      expect(b.status).toBe(200);
      const [bodyA, bodyB] = [Buffer.from(await a.arrayBuffer()), Buffer.from(await b.arrayBuffer())];
      expect(bodyA.length).toBeGreaterThan(0);
      expect(bodyB.equals(bodyA)).toBe(true);
      for (const h of ['content-type', 'etag', 'content-disposition', 'x-ipfs-roots']) expect(b.headers.get(h)).toBe(a.headers.get(h));
      expect(b.headers.get('content-location')).toBe(
        `${byAccept}${byAccept.includes('?') ? '&' : '?'}format=${byFormat.includes('format=raw') ? 'raw' : 'car'}`,
      );
    }
    // format wins over Accept.
    const both = await get(`/ipfs/${object}?format=raw`, { headers: { accept: 'application/vnd.ipld.car' } });
    expect(both.headers.get('content-type')).toBe('application/vnd.ipld.raw');
    // A browser's Accept, or none, gets the file itself.
    const page = await get(`/ipfs/${tree}/sub/note.txt`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('a note\n');
    expect(page.headers.get('vary')).toBe('Accept');
  });

  // Kubo's listing (boxo's assets/directory.html): breadcrumbs, a `..` row, and per entry its path, its CID with ?filename= and its size.
  // Path gateway spec, "Generated HTML with directory index": "Linking to alternative response types ... allows clients
  // to consume directory listings programmatically"; `filename`: "gateway will include it in Content-Disposition header
  // and may use it for Content-Type calculation"; `download=true` "MUST include Content-Disposition: attachment[;filename=...]".
  test('a listing links each path segment, the parent, and each entry by path and by CID (?filename=), names HTML-escaped', async () => {
    const odd = `we <b>"&'.txt`;
    const root = await importFiles('listing', {
      [`deep/${odd}`]: 'x',
      'deep/100% sure #1?.txt': 'hello',
      'deep/ünï.txt': 'ü',
      'deep/sub dir/inner.txt': 'inner',
    });
    const deep = await cidAt(root, 'deep');
    const html = async (path: string) => {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      return res.text();
    };
    const page = await html(`/ipfs/${root}/deep/`);
    // "Index of /ipfs/<cid>/deep": ipfs as text, the CID and each segment a link to its directory.
    expect(page).toContain(`<h1>Index of /ipfs/<a href="/ipfs/${root}/">${root}</a>/<a href="/ipfs/${root}/deep/">deep</a></h1>`);
    expect(page).toContain(`<td><a href="/ipfs/${root}/">..</a></td>`);
    // Names are escaped as text and percent-encoded (then escaped) in links; none reaches the page as markup.
    expect(page).not.toContain('<b>');
    const escaped = 'we &#60;b&#62;&#34;&#38;&#39;.txt';
    const oddCid = await cidAt(root, `deep/${odd}`);
    expect(page).toContain(
      `<tr><td><a href="/ipfs/${root}/deep/we%20%3Cb%3E%22%26&#39;.txt">${escaped}</a></td><td>1</td>` +
        `<td><a href="/ipfs/${oddCid}?filename=we%20%3Cb%3E%22%26&#39;.txt"><code>${oddCid}</code></a></td></tr>`,
    );
    const hello = await cidAt(root, 'deep/100% sure #1?.txt');
    expect(page).toContain(
      `<a href="/ipfs/${root}/deep/100%25%20sure%20%231%3F.txt">100% sure #1?.txt</a></td><td>5</td><td><a href="/ipfs/${hello}?filename=100%25%20sure%20%231%3F.txt">`,
    );
    expect(page).toContain(`<a href="/ipfs/${root}/deep/%C3%BCn%C3%AF.txt">ünï.txt</a></td><td>2</td>`);
    const subDir = await cidAt(root, 'deep/sub dir');
    expect(page).toContain(
      `<a href="/ipfs/${root}/deep/sub%20dir/">sub dir/</a></td><td></td><td><a href="/ipfs/${subDir}?filename=sub%20dir"><code>${subDir}</code></a>`,
    );
    expect(page).toContain(`<p><a href="/ipfs/${deep}/"><code>${deep}</code></a></p>`);
    // The links lead where they say: the file by its path, and by its CID under its name.
    const unescape = (s: string) => s.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));
    const hrefs = [...page.matchAll(/href="([^"]*)"/g)].map((m) => unescape(m[1]!));
    const byPath = hrefs.find((h) => h.startsWith(`/ipfs/${root}/deep/we`))!;
    expect(await (await get(byPath)).text()).toBe('x');
    const byCid = await get(hrefs.find((h) => h.startsWith(`/ipfs/${oddCid}?`))!);
    expect(await byCid.text()).toBe('x');
    // Path gateway spec, filename: named inline (in ASCII and RFC 8187 UTF-8), and typed by the name; download=true: an attachment.
    expect(byCid.headers.get('content-disposition')).toBe(`inline; filename="we <b>_&'.txt"; filename*=UTF-8''${encodeURIComponent(odd)}`);
    expect(byCid.headers.get('content-type')).toMatch(/^text\/plain/);
    const saved = await get(`/ipfs/${oddCid}?filename=x.json&download=true`);
    expect(saved.headers.get('content-disposition')).toBe('attachment; filename="x.json"');
    expect(saved.headers.get('content-type')).toBe('application/json');
    await saved.arrayBuffer();
    // At the content root, no `..`; deeper, the segments decoded as text and linked as they are.
    const top = await html(`/ipfs/${root}/`);
    expect(top).not.toContain('>..</a>');
    expect(top).toContain(`<h1>Index of /ipfs/<a href="/ipfs/${root}/">${root}</a></h1>`);
    const inner = await html(`/ipfs/${root}/deep/sub%20dir/`);
    expect(inner).toContain(`/<a href="/ipfs/${root}/deep/sub%20dir/">sub dir</a></h1>`);
    expect(inner).toContain(`<td><a href="/ipfs/${root}/deep/">..</a></td>`);
  });

  // The path gateway spec's ETag, Cache-Control and If-None-Match, as the IPFS
  // gateway conformance tests (TestGatewayCache) check them. Etag: "By default, etag should be based on requested
  // CID" (the directory's, whose index.html answers); "If HTML directory index was generated by the gateway, the etag
  // returned with HTTP response should be based on the version of gateway implementation" (`DirIndex-<hash>_CID-<cid>`);
  // Cache-Control: "public, max-age=29030400, immutable MUST be returned for every immutable resource under /ipfs/",
  // which a listing, this gateway's HTML, is not.
  test('a directory is named by its own CID: its index.html and its listing answer 304 to it; listings are not immutable', async () => {
    const index = await cidAt(tree, 'index.html');
    const page = await get(`/ipfs/${tree}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('etag')).toBe(`"${tree}"`);
    expect(page.headers.get('cache-control')).toBe('public, max-age=29030400, immutable');
    expect(await page.text()).toContain('<');
    for (const tag of [`"${tree}"`, `W/"${tree}"`]) {
      const res = await get(`/ipfs/${tree}/`, { headers: { 'if-none-match': tag } });
      expect([tag, res.status]).toEqual([tag, 304]);
      expect(res.headers.get('etag')).toBe(`"${tree}"`);
    }
    // The file by its own path keeps its own CID.
    const file = await get(`/ipfs/${tree}/index.html`);
    expect(file.headers.get('etag')).toBe(`"${index}"`);
    await file.arrayBuffer();
    expect((await get(`/ipfs/${tree}/index.html`, { headers: { 'if-none-match': '"fakeEtag1", "fakeEtag2", *' } })).status).toBe(304);
    expect((await get(`/ipfs/${tree}/index.html`, { headers: { 'if-none-match': `"fakeEtag1", W/"${index}"` } })).status).toBe(304);

    // A listing: this gateway's HTML, which may change with it.
    const listing = await get(`/ipfs/${tree}/sub/`);
    expect(listing.status).toBe(200);
    expect(listing.headers.get('cache-control')).toBe('public, max-age=604800, stale-while-revalidate=2678400');
    const listingTag = listing.headers.get('etag')!;
    expect(listingTag).toMatch(new RegExp(`^"DirIndex-[0-9a-f]+_CID-${sub}"$`));
    expect(listing.headers.get('x-ipfs-roots')).toBe([tree, sub].join(','));
    expect(await listing.text()).toContain('note.txt');
    for (const tag of [listingTag, `W/${listingTag}`, `W/"${sub}"`, `"${sub}"`]) {
      const res = await get(`/ipfs/${tree}/sub/`, { headers: { 'if-none-match': tag } });
      expect([tag, res.status]).toEqual([tag, 304]);
      expect([tag, res.headers.get('etag')]).toEqual([tag, listingTag]);
      expect(res.headers.get('cache-control')).toBe('public, max-age=604800, stale-while-revalidate=2678400');
    }
    expect((await get(`/ipfs/${tree}/sub/`, { headers: { 'if-none-match': `"${tree}"` } })).status).toBe(200);
  });

  test('several ranges are one 206 multipart/byteranges, parts in the order asked; too many or too much is the whole file', async () => {
    const path = `/ipfs/${object}`;
    const res = await get(path, { headers: { range: 'bytes=6-16,0-4,-3' } });
    expect(res.status).toBe(206);
    const type = res.headers.get('content-type')!;
    const boundary = /^multipart\/byteranges; boundary=(\S+)$/.exec(type)?.[1];
    expect(boundary).toBeDefined();
    const body = Buffer.from(await res.arrayBuffer());
    expect(res.headers.get('content-length')).toBe(String(body.length));
    // RFC 9110 section 14.6: each part a boundary, its headers, a blank line, its bytes; then the closing boundary.
    const text = body.toString('latin1');
    expect(text.endsWith(`\r\n--${boundary}--\r\n`)).toBe(true);
    const parts = text
      .slice(0, -`\r\n--${boundary}--\r\n`.length)
      .split(new RegExp(`(?:^|\r\n)--${boundary}\r\n`))
      .slice(1)
      .map((part) => {
        const split = part.indexOf('\r\n\r\n');
        return { head: part.slice(0, split), bytes: Buffer.from(part.slice(split + 4), 'latin1') };
      });
    const size = OBJECT.length;
    expect(parts.map((p) => p.head)).toEqual([
      `Content-Type: application/octet-stream\r\nContent-Range: bytes 6-16/${size}`,
      `Content-Type: application/octet-stream\r\nContent-Range: bytes 0-4/${size}`,
      `Content-Type: application/octet-stream\r\nContent-Range: bytes ${size - 3}-${size - 1}/${size}`,
    ]);
    expect(parts.map((p) => p.bytes.toString('hex'))).toEqual(
      [OBJECT.subarray(6, 17), OBJECT.subarray(0, 5), OBJECT.subarray(size - 3)].map((b) => b.toString('hex')),
    );
    const head = await get(path, { method: 'HEAD', headers: { range: 'bytes=6-16,0-4,-3' } });
    expect(head.status).toBe(206);
    expect(head.headers.get('content-length')).toBe(String(body.length));
    // One satisfiable range among unsatisfiable ones: a plain 206; none: 416.
    const one = await get(path, { headers: { range: `bytes=${size + 10}-,0-4` } });
    expect([one.status, one.headers.get('content-range')]).toEqual([206, `bytes 0-4/${size}`]);
    expect(Buffer.from(await one.arrayBuffer()).equals(OBJECT.subarray(0, 5))).toBe(true);
    expect((await get(path, { headers: { range: `bytes=${size}-,${size + 1}-` } })).status).toBe(416);
    // Overlaps asking for more bytes than the file has, or more than 32 ranges: the whole file, read once.
    for (const range of ['bytes=0-,0-', `bytes=${Array.from({ length: 33 }, (_, i) => `${i}-${i}`).join(',')}`]) {
      const whole = await get(path, { method: 'HEAD', headers: { range } });
      expect([range.slice(0, 20), whole.status, whole.headers.get('content-length')]).toEqual([range.slice(0, 20), 200, String(size)]);
    }
  });

  // Path gateway spec, only-if-cached: "If data is not cached locally, and the response requires an expensive remote
  // fetch, a 412 Precondition Failed HTTP status code should be returned by the gateway without any payload".
  test('Cache-Control: only-if-cached answers what the node holds and 412 for what it does not', async () => {
    const absent = 'QmYzfKSE55XCjD1MW128RfciAf2DViABhEiXfgVFMabSjN';
    const onlyIfCached = { 'cache-control': 'only-if-cached' };
    for (const method of ['GET', 'HEAD']) {
      const held = await get(`/ipfs/${tree}/sub/?format=raw`, { method, headers: onlyIfCached });
      expect([method, held.status]).toEqual([method, 200]);
      await held.arrayBuffer();
      const missing = await get(`/ipfs/${absent}`, { method, headers: onlyIfCached });
      expect([method, missing.status]).toEqual([method, 412]);
      await missing.arrayBuffer();
    }
    expect((await get(`/ipfs/${absent}`, { headers: { 'cache-control': 'max-age=0, only-if-cached' } })).status).toBe(412);
    // Without it, a CID the node lacks is a 404, as before.
    expect((await get(`/ipfs/${absent}`)).status).toBe(404);
  });

  test('formats this gateway does not produce are a 400 by ?format= and a 406 by Accept alone, never a 500', async () => {
    for (const format of ['tar', 'ipns-record', 'junk', 'toString', '__proto__', 'constructor']) {
      const res = await get(`/ipfs/${tree}?format=${format}`);
      expect(res.status).toBe(400);
      expect(await res.text()).toContain('format=car');
    }
    // The codec formats exist, but a UnixFS directory is none of them: "SHOULD produce 406 Not Acceptable when the CID codec does not match".
    for (const format of ['dag-json', 'dag-cbor', 'json', 'cbor']) expect((await get(`/ipfs/${tree}/?format=${format}`)).status).toBe(406);
    for (const accept of [
      'application/x-tar',
      'application/vnd.ipld.dag-json',
      'application/vnd.ipld.car; version=2',
      'application/vnd.ipld.car; dups=maybe',
      'application/vnd.ipld.car; order=foo, application/vnd.ipfs.ipns-record',
    ]) {
      const res = await get(`/ipfs/${tree}`, { headers: { accept } });
      expect(res.status).toBe(406);
    }
    // A CAR parameter in the query that cannot be met is a 400; one that can is a CAR.
    expect((await get(`/ipfs/${tree}?format=car&car-dups=maybe`)).status).toBe(400);
    expect((await get(`/ipfs/${tree}?format=car&car-version=2`)).status).toBe(400);
    const ok = await get(`/ipfs/${tree}?format=car&car-dups=n&car-order=dfs&car-version=1`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe(CAR_TYPE);
    await ok.arrayBuffer();
    // format=car with an Accept that asks only for an unwritten variant: 406.
    expect((await get(`/ipfs/${tree}?format=car`, { headers: { accept: 'application/vnd.ipld.car; order=foo' } })).status).toBe(406);
  });

  test('an unknown CID or path is a 404 before any byte, GET or HEAD; HEAD answers the headers alone', async () => {
    const unknown = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
    for (const method of ['GET', 'HEAD']) {
      expect((await get(`/ipfs/${unknown}?format=raw`, { method })).status).toBe(404);
      expect((await get(`/ipfs/${unknown}?format=car`, { method })).status).toBe(404);
      expect(
        (await get(`/ipfs/QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o`, { method, headers: { accept: 'application/vnd.ipld.car' } }))
          .status,
      ).toBe(404);
      expect((await get(`/ipfs/${tree}/no/such?format=car`, { method })).status).toBe(404);
    }
    const headCar = await get(`/ipfs/${tree}/sub/file.bin?format=car`, { method: 'HEAD' });
    const getCar = await get(`/ipfs/${tree}/sub/file.bin?format=car`);
    expect(headCar.status).toBe(200);
    expect((await headCar.arrayBuffer()).byteLength).toBe(0);
    expect((await getCar.arrayBuffer()).byteLength).toBeGreaterThan(FILE.length);
    for (const h of ['content-type', 'etag', 'x-ipfs-roots', 'content-disposition', 'cache-control'])
      expect(headCar.headers.get(h)).toBe(getCar.headers.get(h));
    const headRaw = await get(`/ipfs/${object}?format=raw`, { method: 'HEAD' });
    expect(headRaw.status).toBe(200);
    expect(headRaw.headers.get('content-length')).toBe(String((await readBlock(await blockstore(), object)).length));
    expect(headRaw.headers.get('etag')).toBe(`"${object}.raw"`);
    expect((await headRaw.arrayBuffer()).byteLength).toBe(0);
  });

  // gateway-conformance TestGatewayUnixFSFileRanges and TestTrustlessCarEntityBytes: "GET Range of file succeeds even if
  // the gateway is missing a block AFTER (BEFORE) the requested range", and the same for entity-bytes.
  test('a range or entity-bytes of a file is answered whole when a block outside it is missing; files say Accept-Ranges: bytes', async () => {
    // The file's root and its first and last leaves (the middle one is gone, so a walk would stop there).
    const leaves = dagPb.decode(await readBlock(await blockstore(), damaged)).Links.map((l) => l.Hash);
    const [root, first, last] = [damaged, leaves[0]!, leaves[2]!];
    for (const [range, from, to] of [
      ['bytes=0-99', 0, 100],
      [`bytes=${2 * CHUNK + 10}-${2 * CHUNK + 109}`, 2 * CHUNK + 10, 2 * CHUNK + 110],
      ['bytes=-100', 3 * CHUNK - 100, 3 * CHUNK],
    ] as const) {
      const res = await get(`/ipfs/${damaged}`, { headers: { range } });
      expect([range, res.status]).toEqual([range, 206]);
      expect(res.headers.get('content-range')).toBe(`bytes ${from}-${to - 1}/${3 * CHUNK}`);
      expect(Buffer.from(await res.arrayBuffer()).equals(DAMAGED.subarray(from, to))).toBe(true);
    }
    expect((await car(`/ipfs/${damaged}?format=car&entity-bytes=0:99`)).blocks.map((b) => b.cid.toString())).toEqual(
      [root, first].map(String),
    );
    expect((await car(`/ipfs/${damaged}?format=car&entity-bytes=-100:*`)).blocks.map((b) => b.cid.toString())).toEqual(
      [root, last].map(String),
    );
    // Path gateway spec, Accept-Ranges: "Returned to indicate that the gateway supports partial requests for UnixFS files" (conformance: "bytes").
    const file = await get(`/ipfs/${object}`, { method: 'HEAD' });
    expect(file.headers.get('accept-ranges')).toBe('bytes');
  });

  // boxo's TestEmptyIdentityCIDProbeShortCircuit: clients probe a gateway with the empty identity CID (bafkqaaa) as a
  // raw block, and expect a 200 with an empty body. An identity CID holds its block, so any other is served too.
  test('the empty identity CID, the probe clients send, is an empty raw block; an identity CID is its digest', async () => {
    for (const method of ['GET', 'HEAD']) {
      const res = await get('/ipfs/bafkqaaa?format=raw', { method, headers: { accept: 'application/vnd.ipld.raw' } });
      expect([method, res.status, res.headers.get('content-type')]).toEqual([method, 200, 'application/vnd.ipld.raw']);
      expect((await res.arrayBuffer()).byteLength).toBe(0);
    }
    const inline = CID.createV1(0x55, identity.digest(new TextEncoder().encode('not empty')));
    const res = await get(`/ipfs/${inline}?format=raw`);
    expect([res.status, await res.text()]).toEqual([200, 'not empty']);
  });

  // gateway-conformance TestPathGatewayMiscellaneous: "GET for /ipfs/ file whose filename contains percentage-encoded
  // characters works": a path is percent-decoded once, and `+` stays a plus (it is no query string).
  test('a name holding %2C, + and = is reached by its path percent-encoded once', async () => {
    const name = 'Portugal%2C+España=Peninsula Ibérica.txt';
    const dir = await importFiles('percent', { [name]: 'hello from a percent encoded filename\n' });
    const res = await get(`/ipfs/${dir}/Portugal%252C+Espa%C3%B1a=Peninsula%20Ib%C3%A9rica.txt`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello from a percent encoded filename\n');
  });

  // gateway-conformance TestGatewaySymlink: a UnixFS symlink is served as its own bytes (its target), never followed.
  test('a symlink is listed with its directory and served as its target text', async () => {
    const listing = await get(`/ipfs/${symlinks}/`);
    const html = await listing.text();
    expect(html).toContain('>foo<');
    expect(html).toContain('>bar<');
    const link = await get(`/ipfs/${symlinks}/bar`);
    expect(link.status).toBe(200);
    expect(await link.text()).toBe('foo');
    const raw = await get(`/ipfs/${symlinks}?format=raw`);
    expect(Buffer.from(await raw.arrayBuffer()).equals(Buffer.from(await readBlock(await blockstore(), symlinks)))).toBe(true);
  });

  test('a block missing mid-DAG cuts the CAR off: the client never gets a complete 200', async () => {
    // The root is there, so the answer begins as a 200 before the gap is met.
    const head = await get(`/ipfs/${damaged}?format=car`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    // The first block alone is whole: dag-scope=block does not reach the gap.
    expect((await car(`/ipfs/${damaged}?format=car&dag-scope=block`)).blocks).toHaveLength(1);
    let complete = false;
    try {
      const res = await get(`/ipfs/${damaged}?format=car`);
      await res.arrayBuffer();
      complete = res.status === 200;
    } catch {
      // the connection was cut mid-body
    }
    expect(complete).toBe(false);
  });
});
