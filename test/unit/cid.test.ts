/** The importer reproduces Kubo's CIDs for the reference vectors' files. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsBlockstore } from 'blockstore-fs';
import { importFile } from '../../functions/core/ipfs/import.js';
import { createHash } from 'node:crypto';
import { CID } from 'multiformats/cid';
import { create as createDigest } from 'multiformats/hashes/digest';
import { cidForms, cidText, cidV1 } from '../../functions/core/ipfs/cid.js';
import { bytesOf, fileVectors as vectors } from '../support/vectors.js';

async function* pieces(bytes: Uint8Array, size = 65536) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

let dir: string;
let blockstore: FsBlockstore;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-cid-'));
  blockstore = new FsBlockstore(dir);
  await blockstore.open();
});
afterAll(() => rm(dir, { recursive: true, force: true }));

test.each(vectors.map((v) => [v.name, v] as const))('%s', async (_name, v) => {
  const bytes = bytesOf(v);
  expect(bytes.length).toBe(v.size);
  const { cid, size } = await importFile(blockstore, pieces(bytes));
  expect(cid.toString()).toBe(v.cidV0);
  expect(cidV1(cid)).toBe(v.cidV1);
  expect(size).toBe(v.size);
});

test('both forms of a CID, from its v0 or v1 string or from the imported CID, the same when asked again', () => {
  for (const v of vectors.slice(0, 3)) {
    const expected = { v0: v.cidV0, v1: v.cidV1 };
    expect(cidForms(v.cidV1)).toEqual(expected);
    expect(cidForms(v.cidV1)).toEqual(expected); // remembered
    expect(cidText(CID.parse(v.cidV0))).toBe(v.cidV0); // remembers the forms without parsing the string
    expect(cidForms(v.cidV0)).toEqual(expected);
  }
  // More CIDs than are remembered: the oldest are worked out again, still right.
  for (let i = 0; i < 1100; i++) {
    const cid = CID.createV0(createDigest(0x12, createHash('sha256').update(String(i)).digest()));
    expect(cidForms(cid.toString())).toEqual({ v0: cid.toString(), v1: cid.toV1().toString() });
  }
  expect(cidForms(vectors[0]!.cidV0)).toEqual({ v0: vectors[0]!.cidV0, v1: vectors[0]!.cidV1 });
});
