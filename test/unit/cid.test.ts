/** The importer reproduces Kubo's CIDs for the reference vectors' files. */
import { createCipheriv, createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsBlockstore } from 'blockstore-fs';
import { importFile } from '../../functions/core/ipfs/import.js';
import { cidV1 } from '../../functions/core/ipfs/cid.js';

interface Vector { name: string; kind: string; generator: string; size: number; cidV0: string; cidV1: string }
const vectors = (JSON.parse(readFileSync(new URL('../../../shared/reference/cid-vectors.json', import.meta.url), 'utf8')) as Vector[])
  .filter((v) => v.kind === 'file');

/** Rebuilds a vector's bytes from its generator: a literal text, or Kubo's ChaCha20 reader. */
function bytesOf(v: Vector): Uint8Array {
  const text = /^new TextEncoder\(\)\.encode\((".*")\)$/.exec(v.generator);
  if (text) return new TextEncoder().encode(JSON.parse(text[1]!));
  const chacha = /createHash\('sha256'\)\.update\((".*?")\)/.exec(v.generator);
  if (!chacha) throw new Error(`unknown generator for ${v.name}`);
  const key = createHash('sha256').update(JSON.parse(chacha[1]!)).digest();
  return createCipheriv('chacha20', key, Buffer.alloc(16)).update(Buffer.alloc(v.size));
}

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
