/**
 * Reading a CAR someone sends (functions/core/ipfs/car-import.ts): blocks
 * verified against their CIDs, a section's declared length refused before
 * it is read, the source's own failures passed through as they are; IPLD
 * blocks (dag-cbor, dag-json, cbor, json) taken, and hostile ones (nested
 * past the bound, declaring more than they hold, invalid) refused quickly;
 * and the import settings read from the environment.
 */
import { CarWriter } from '@ipld/car/writer';
import * as dagCbor from '@ipld/dag-cbor';
import * as dagJson from '@ipld/dag-json';
import { encode as encodeDagPb, prepare } from '@ipld/dag-pb';
import { CID } from 'multiformats/cid';
import { identity } from 'multiformats/hashes/identity';
import { sha256 } from 'multiformats/hashes/sha2';
import { CarImportError, MAX_BLOCK_BYTES, readVerifiedCar, type CarBlock } from '../../functions/core/ipfs/car-import.js';
import { loadConfig } from '../../functions/core/config.js';
import { MAX_NESTING } from '../../functions/core/ipfs/ipld.js';

/** An unsigned LEB128 varint, as CAR sections are prefixed. */
function varint(n: number): Uint8Array {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Uint8Array.from(out);
}

async function carOf(roots: CID[], blocks: CarBlock[]): Promise<Uint8Array> {
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

async function* chunks(bytes: Uint8Array, size = 7): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function raw(text: string): Promise<CarBlock> {
  const bytes = new TextEncoder().encode(text);
  return { cid: CID.createV1(0x55, await sha256.digest(bytes)), bytes };
}

async function readAll(bytes: Uint8Array | AsyncIterable<Uint8Array>): Promise<{ root: CID; blocks: CarBlock[] }> {
  const car = await readVerifiedCar(bytes instanceof Uint8Array ? chunks(bytes) : bytes);
  const blocks: CarBlock[] = [];
  for await (const block of car.blocks) blocks.push(block);
  return { root: car.root, blocks };
}

test('a CAR in small chunks gives its root and every block, verified, in order (identity and CIDv0 dag-pb included)', async () => {
  const leaf = await raw('a leaf');
  const inline = {
    cid: CID.createV1(0x55, identity.digest(new TextEncoder().encode('inline'))),
    bytes: new TextEncoder().encode('inline'),
  };
  const nodeBytes = encodeDagPb(prepare({ Links: [{ Hash: leaf.cid, Name: 'leaf', Tsize: leaf.bytes.length }] }));
  const node = { cid: CID.createV0(await sha256.digest(nodeBytes)), bytes: nodeBytes };
  const { root, blocks } = await readAll(await carOf([node.cid], [node, leaf, inline]));
  expect(root.toString()).toBe(node.cid.toString());
  expect(blocks.map((b) => b.cid.toString())).toEqual([node.cid, leaf.cid, inline.cid].map(String));
  expect(Buffer.from(blocks[1]!.bytes).toString()).toBe('a leaf');
});

test('a block whose bytes differ from its CID, or an identity CID whose digest is not its bytes, is refused naming it', async () => {
  const good = await raw('good');
  const bad = { cid: good.cid, bytes: new TextEncoder().encode('evil') };
  await expect(readAll(await carOf([good.cid], [bad]))).rejects.toThrow(new CarImportError(`block ${good.cid} does not match its content`));
  const lying = { cid: CID.createV1(0x55, identity.digest(new TextEncoder().encode('one'))), bytes: new TextEncoder().encode('two') };
  await expect(readAll(await carOf([good.cid], [lying]))).rejects.toThrow(`block ${lying.cid} does not match its content`);
});

test('a dag-pb block that does not decode is refused even when its hash matches', async () => {
  const bytes = Uint8Array.of(0xff, 0xff, 0xff);
  const cid = CID.createV1(0x70, await sha256.digest(bytes));
  await expect(readAll(await carOf([cid], [{ cid, bytes }]))).rejects.toThrow(/is not valid dag-pb/);
});

async function block(code: number, bytes: Uint8Array): Promise<CarBlock> {
  return { cid: CID.createV1(code, await sha256.digest(bytes)), bytes };
}

test('dag-cbor, dag-json, cbor and json blocks are taken, as a root too, each verified against its CID', async () => {
  const leaf = await raw('a leaf');
  const json = await block(0x0200, new TextEncoder().encode('{"plain": true}\n'));
  const cbor = await block(0x51, Uint8Array.of(0xa1, 0x61, 0x61, 0x01));
  const dj = await block(0x0129, dagJson.encode({ leaf: leaf.cid, json: json.cid }));
  const dc = await block(0x71, dagCbor.encode({ list: [dj.cid, cbor.cid], n: 1 }));
  const { root, blocks } = await readAll(await carOf([dc.cid], [dc, dj, leaf, json, cbor]));
  expect(root.toString()).toBe(dc.cid.toString());
  expect(blocks.map((b) => b.cid.toString())).toEqual([dc, dj, leaf, json, cbor].map((b) => b.cid.toString()));
  const tampered = { cid: dc.cid, bytes: dagCbor.encode({ list: [dj.cid, cbor.cid], n: 2 }) };
  await expect(readAll(await carOf([dc.cid], [tampered]))).rejects.toThrow(`block ${dc.cid} does not match its content`);
  // A codec no part of Cairn follows (git-raw) is still refused, as a root or a block.
  const git = await block(0x78, Uint8Array.of(1, 2, 3));
  await expect(readAll(await carOf([git.cid], []))).rejects.toThrow(/root .* has codec 0x78; a root must be dag-pb, raw, dag-cbor/);
  await expect(readAll(await carOf([leaf.cid], [git]))).rejects.toThrow(/codec 0x78; this service stores dag-pb, raw, dag-cbor/);
});

test('hostile dag-cbor and dag-json blocks are refused before a decoder recurses into them, whatever their hash', async () => {
  const deep = (depth: number) => {
    const cbor = new Uint8Array(depth + 1).fill(0x81); // [[[...[1]...]]]
    cbor[depth] = 0x01;
    return { cbor, json: new TextEncoder().encode(`${'['.repeat(depth)}1${']'.repeat(depth)}`) };
  };
  // At the bound, a block decodes; one level past it, and a million deep (2 MiB of JSON), it is refused.
  const atBound = deep(MAX_NESTING);
  const taken = await readAll(
    await carOf([(await block(0x71, atBound.cbor)).cid], [await block(0x71, atBound.cbor), await block(0x0129, atBound.json)]),
  );
  expect(taken.blocks).toHaveLength(2);
  for (const depth of [MAX_NESTING + 1, MAX_BLOCK_BYTES / 2 - 64]) {
    const { cbor, json } = deep(depth);
    for (const [code, bytes] of [
      [0x71, cbor],
      [0x0129, json],
    ] as const) {
      const b = await block(code, bytes);
      // The decoders alone would recurse once a level (and, a million deep, fail on the call stack's limit instead).
      await expect(readAll(chunks(await carOf([b.cid], [b]), 65536))).rejects.toThrow(`nests deeper than ${MAX_NESTING} levels`);
    }
  }
  // An array declaring 2^32 entries in 9 bytes, a map key twice, a link that is not a CID, bytes after the value.
  const invalid: Array<[number, Uint8Array, RegExp]> = [
    [0x71, Uint8Array.of(0x9b, 0, 0, 0, 1, 0, 0, 0, 0), /declares more entries than it holds/],
    [0x0129, new TextEncoder().encode('{"a":1,"a":2}'), /repeat map key/],
    [0x0129, new TextEncoder().encode('{"/":"not a cid"}'), /not valid dag-json/],
    [0x71, Uint8Array.of(0xa0, 0x00), /not valid dag-cbor/],
  ];
  for (const [code, bytes, why] of invalid) {
    const b = await block(code, bytes);
    await expect(readAll(await carOf([b.cid], [b]))).rejects.toThrow(why);
  }
});

test('a block declared longer than 2 MiB is refused before its bytes are read', async () => {
  const good = await raw('x');
  const header = await carOf([good.cid], []);
  const declared = varint(good.cid.bytes.length + MAX_BLOCK_BYTES + 1);
  let pulled = 0;
  async function* source() {
    yield header;
    yield Buffer.concat([declared, good.cid.bytes]);
    // Never reached: the length alone refuses the section.
    for (;;) {
      pulled++;
      yield new Uint8Array(64 * 1024);
    }
  }
  await expect(readAll(source())).rejects.toThrow(/a block may be at most 2 MiB/);
  expect(pulled).toBeLessThanOrEqual(1);
});

test('a section shorter than its own CID is refused, not read backwards', async () => {
  const good = await raw('x');
  const header = await carOf([good.cid], []);
  const body = Buffer.concat([header, varint(3), good.cid.bytes, new Uint8Array(10)]);
  await expect(readAll(body)).rejects.toThrow(CarImportError);
});

test('a failure of the byte source passes through as it is, not as a malformed CAR', async () => {
  const good = await raw('x');
  const header = await carOf([good.cid], [good]);
  class Gone extends Error {}
  async function* source() {
    yield header.subarray(0, header.length - 3);
    throw new Gone('client went away');
  }
  await expect(readAll(source())).rejects.toBeInstanceOf(Gone);
});

test('the import settings: 1 GiB locally, 4 MiB in Lambda, a day of pinning, each overridable; bad values name the variable', () => {
  expect(loadConfig({}).imports).toEqual({ maxBytes: 1024 ** 3, pinSeconds: 86400 });
  expect(loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'x' }).imports.maxBytes).toBe(4 * 1024 ** 2);
  expect(loadConfig({ CAIRN_MAX_IMPORT_BYTES: '1000', CAIRN_IMPORT_PIN_TTL: '60' }).imports).toEqual({ maxBytes: 1000, pinSeconds: 60 });
  expect(() => loadConfig({ CAIRN_MAX_IMPORT_BYTES: 'lots' })).toThrow(/^CAIRN_MAX_IMPORT_BYTES: /);
  expect(() => loadConfig({ CAIRN_IMPORT_PIN_TTL: '0' })).toThrow(/^CAIRN_IMPORT_PIN_TTL: /);
});
