/**
 * How a DAG walk finds the links of a dag-cbor or dag-json block
 * (scanLinks in functions/core/ipfs/ipld.ts): the same links, in the same
 * order, as the codecs' own decoders find, for every form a link takes;
 * refused where the decoders refuse the block for its shape or its links;
 * and, on a 2 MiB block of 50,000 links in the real local blockstore, work
 * that follows the block's size and the blocks visited, not its links: no
 * CID is built for a link the walk does not follow (counted), and the
 * event loop is never held for 50 ms of CPU (measured as stallsDuring does).
 * Before, the walk decoded the whole block and its 50,000 CIDs in one go.
 */
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as dagCbor from '@ipld/dag-cbor';
import * as dagJson from '@ipld/dag-json';
import { jest } from '@jest/globals';
import { base58btc } from 'multiformats/bases/base58';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { PackedBlockstore } from '../../functions/core/ipfs/local-blockstore.js';
import { DAG_CBOR, DAG_JSON, decodeIpld, IpldBlockError, linksIn, MAX_NESTING, scanLinks } from '../../functions/core/ipfs/ipld.js';
import { walkDag } from '../../functions/core/storage/dag-walk.js';
import { leastCpuMs, leastStalled } from '../support/event-loop.js';

let work: string;
let blockstore: PackedBlockstore;

beforeAll(async () => {
  work = await realpath(await mkdtemp(join(tmpdir(), 'cairn-ipld-links-')));
  blockstore = new PackedBlockstore({ smallBlocks: join(work, 'small'), packs: join(work, 'packs') });
  await blockstore.open();
});

afterAll(async () => {
  await blockstore.close();
  await rm(work, { recursive: true, force: true });
});

const raw = async (text: string) => CID.createV1(0x55, await sha256.digest(new TextEncoder().encode(text)));
const codecs = [
  { name: 'dag-cbor', code: DAG_CBOR, encode: dagCbor.encode },
  { name: 'dag-json', code: DAG_JSON, encode: dagJson.encode },
] as const;
const hex = (links: Array<Uint8Array | CID>) => links.map((l) => Buffer.from(l instanceof Uint8Array ? l : l.bytes).toString('hex'));

test('the links the codecs decode, in document order, repeats included, from every form a link takes', async () => {
  const [a, b, c] = await Promise.all(['a', 'b', 'c'].map(raw));
  const v0 = CID.createV0(await sha256.digest(new TextEncoder().encode('v0')));
  const values: unknown[] = [
    a,
    [a, b, a],
    { z: a, y: [b, { x: c, w: new Uint8Array([0xd8, 0x2a]) }], v: 'not a link', u: null, t: 1.5, s: -3, r: true },
    { nested: [[[[v0]]]], bytes: new Uint8Array(300), text: `{"/": "${a}"}` },
    Array.from({ length: 1000 }, (_, i) => (i % 3 ? { n: i, link: b } : [a, c])),
    { none: [1, 2, 3] },
  ];
  for (const codec of codecs) {
    for (const value of values) {
      const bytes = codec.encode(value);
      expect([codec.name, hex(await scanLinks(codec.code, bytes))]).toEqual([codec.name, hex(linksIn(decodeIpld(codec.code, bytes)))]);
    }
  }
  // dag-json's own forms, as @ipld/dag-json's tokenizer reads them: `{"/": {"bytes"}}` is bytes; `/` with
  // another value is a plain map; a map in `/` may hold a link; a CID in another multibase is a link too.
  const texts = [
    `{"a":{"/":{"bytes":"aGVsbG8"}},"b":{"/":5},"c":{"/":{"/":"${b}"}},"d":{"/":"${a}"}}`,
    `[{"/":"${v0}"},{"/":"${a.toString(base58btc)}"},{"/":{"x":1}},{"/":[{"/":"${c}"}]}]`,
    `  {"k" : [ {"/" : "${a}"} ] }  `,
  ];
  for (const text of texts) {
    const bytes = new TextEncoder().encode(text);
    const decoded = hex(linksIn(decodeIpld(DAG_JSON, bytes)));
    expect(decoded.length).toBeGreaterThan(0);
    expect([text, hex(await scanLinks(DAG_JSON, bytes))]).toEqual([text, decoded]);
  }
});

test('refused as the decoders refuse it: too deep, a tag 42 that holds no CID, another tag, a link with other keys, a CID that does not parse', async () => {
  const a = await raw('a');
  const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
  const refused = [
    { code: DAG_JSON, bytes: new TextEncoder().encode(deep(MAX_NESTING + 1)) },
    { code: DAG_CBOR, bytes: new Uint8Array([...Array<number>(MAX_NESTING + 1).fill(0x81), 0x01]) },
    // tag 42 around bytes without the leading 0x00, around a string, and tag 1.
    { code: DAG_CBOR, bytes: new Uint8Array([0xd8, 0x2a, 0x58, a.bytes.length, ...a.bytes]) },
    { code: DAG_CBOR, bytes: new Uint8Array([0xd8, 0x2a, 0x61, 0x78]) },
    { code: DAG_CBOR, bytes: new Uint8Array([0xc1, 0x01]) },
    // tag 42 around 0x00 and bytes that are no whole CID.
    { code: DAG_CBOR, bytes: new Uint8Array([0xd8, 0x2a, 0x58, a.bytes.length, 0, ...a.bytes.subarray(0, -1)]) },
    // an array that declares more entries than the block holds.
    { code: DAG_CBOR, bytes: new Uint8Array([0x9a, 0xff, 0xff, 0xff, 0x00, 0x01]) },
    { code: DAG_JSON, bytes: new TextEncoder().encode(`{"/":"${a}","x":1}`) },
    { code: DAG_JSON, bytes: new TextEncoder().encode(`{"/":"bafy-not-a-cid"}`) },
    { code: DAG_JSON, bytes: new TextEncoder().encode(`{"/":{"bytes":"aGVsbG8","x":1}}`) },
    { code: DAG_JSON, bytes: new TextEncoder().encode(`[{"/":"${a}"}`) },
  ];
  for (const { code, bytes } of refused) {
    const label = Buffer.from(bytes.subarray(0, 40)).toString('hex');
    let decoded: unknown;
    try {
      decodeIpld(code, bytes);
    } catch (err) {
      decoded = err;
    }
    expect([label, decoded instanceof IpldBlockError]).toEqual([label, true]);
    await expect(scanLinks(code, bytes)).rejects.toThrow(IpldBlockError);
  }
});

/** A stored block of `codec` that is a list of `links` links to `to`, near 2 MiB (the largest block an import takes). */
async function wideBlock(codec: (typeof codecs)[number], links: number, to: CID): Promise<CID> {
  const bytes = codec.encode(Array<CID>(links).fill(to));
  expect(bytes.length).toBeLessThanOrEqual(2 * 1024 * 1024);
  expect(bytes.length).toBeGreaterThan(1024 * 1024);
  const cid = CID.createV1(codec.code, await sha256.digest(bytes));
  await blockstore.put(cid, bytes);
  return cid;
}

test.each([
  { codec: codecs[0], links: 50_000 },
  { codec: codecs[1], links: 30_000 },
])(
  'a $codec.name block of $links links to one leaf: a CID built per block visited, not per link; the loop never held 50 ms',
  async ({ codec, links }) => {
    const leaf = await raw(`leaf of ${codec.name}`);
    await blockstore.put(leaf, new TextEncoder().encode(`leaf of ${codec.name}`));
    const root = await wideBlock(codec, links, leaf);
    const walk = async (from: CID) => {
      const seen: string[] = [];
      for await (const cid of walkDag(blockstore, from)) seen.push(cid.toString());
      return seen;
    };
    // Counted: every CID built from bytes or text goes through CID.decode (CID.parse calls it too).
    const decode = jest.spyOn(CID, 'decode');
    try {
      expect(await walk(root)).toEqual([root.toString(), leaf.toString()]);
      // Decoding the block built one CID a link: 50,000 here.
      expect(decode.mock.calls.length).toBeLessThan(10);
    } finally {
      decode.mockRestore();
    }
    // And with repeats (a CAR with dups=y), each link is a block visited: then, and only then, a CID each.
    let repeats = 0;
    for await (const _ of walkDag(blockstore, root, { duplicates: true, onRepeat: () => repeats++ })) void _;
    expect(repeats).toBe(links - 1);

    const runs = await leastStalled(() => root, walk);
    for (const run of runs) {
      expect(run.result).toEqual([root.toString(), leaf.toString()]);
      expect(run.turns).toBeGreaterThan(3);
    }
    // Work, not waiting for a CPU on a busy machine (stallsDuring). Decoded whole, the block held the loop 100 to 700 ms.
    expect(leastCpuMs(runs)).toBeLessThan(50);
  },
);
