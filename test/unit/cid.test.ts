/** The importer reproduces Kubo's CIDs for the reference vectors' files. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsBlockstore } from 'blockstore-fs';
import { importFile } from '../../functions/core/ipfs/import.js';
import { cidV1 } from '../../functions/core/ipfs/cid.js';
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
