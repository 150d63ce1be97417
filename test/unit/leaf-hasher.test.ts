/**
 * The leaf hashers (leaf-hasher.ts): on a hash thread, on the local
 * helper thread (between the embedded database's queries) or inline, the same
 * DAG as ipfs-unixfs-importer and the same digests as node:crypto and the
 * checksum libraries over the whole file; a job given up mid-way answers
 * (rejects) instead of hanging, and the thread serves the next job.
 */
import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { MemoryBlockstore } from 'blockstore-core/memory';
import { importer } from 'ipfs-unixfs-importer';
import { fixedSize } from 'ipfs-unixfs-importer/chunker';
import { balanced } from 'ipfs-unixfs-importer/layout';
import { buildFileDag } from '../../functions/core/ipfs/file-dag.js';
import { kuboImportOptions } from '../../functions/core/ipfs/cid.js';
import { createDigest, DIGESTS, type DigestName } from '../../functions/core/hashing/digests.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  inlineLeafHasher,
  ownHashThread,
  RemoteHashing,
  type FromHashThread,
  type LeafHasher,
  type ToHashThread,
} from '../../functions/core/hashing/leaf-hasher.js';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../functions/local/embedded-dynamo/database.js';
import { startHelperThread, type HelperThread } from '../../functions/local/helper.js';

// The two threads that serve hash jobs: one of its own, and the local helper thread (whose database goes on answering queries).
let own: RemoteHashing;
let helper: HelperThread;
let embedded: EmbeddedDynamo;
let onHelper: RemoteHashing;
let dir: string;
beforeAll(async () => {
  own = new RemoteHashing(ownHashThread());
  dir = await mkdtemp(join(tmpdir(), 'cairn-hash-'));
  helper = startHelperThread();
  embedded = await startEmbeddedDynamo(helper, dir);
  onHelper = new RemoteHashing(helper.start<ToHashThread, FromHashThread>('hashing'));
});
afterAll(async () => {
  await embedded.close();
  await helper.close();
  await rm(dir, { recursive: true, force: true });
});
const threadLeafHasher = (names: DigestName[]) => own.hasher(names);

async function* pieces(bytes: Uint8Array, size: number) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function referenceCid(bytes: Uint8Array, chunkSize: number, maxChildren: number): Promise<string> {
  const options = { ...kuboImportOptions(), chunker: fixedSize({ chunkSize }), layout: balanced({ maxChildrenPerNode: maxChildren }) };
  let cid = '';
  for await (const entry of importer([{ content: pieces(bytes, 1000) }], new MemoryBlockstore(), options)) cid = entry.cid.toString();
  return cid;
}

const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString('hex');
const ways: Array<[string, (names: DigestName[]) => LeafHasher]> = [
  ['a hash thread of its own', (names) => own.hasher(names)],
  ['the helper thread', (names) => onHelper.hasher(names)],
  ['inline', inlineLeafHasher],
];

describe.each(ways)('%s', (_way, make) => {
  test.each([0, 1, 4095, 4096, 4097, 3 * 4096 + 5, 40_000])(
    "%i bytes: the importer's root, and MD5 and CRC32 of the whole file",
    async (size) => {
      const bytes = randomBytes(size);
      const hasher = make(['md5', 'crc32']);
      const dag = await buildFileDag(new MemoryBlockstore(), pieces(bytes, 777), { chunkSize: 4096, maxChildren: 3, leaves: hasher });
      const [digests, tables] = await Promise.all([hasher.finish(), embedded.execute('ListTables', {})]);
      expect(tables.status).toBe(200);
      expect(dag.cid.toString()).toBe(await referenceCid(bytes, 4096, 3));
      expect(hex(digests.md5)).toBe(createHash('md5').update(bytes).digest('hex'));
      expect(Buffer.from(digests.crc32!).readUInt32BE()).toBe(crc32(bytes));
    },
  );

  test('every digest it offers matches the one-shot computation', async () => {
    const bytes = randomBytes(100_003);
    const hasher = make([...DIGESTS]);
    await buildFileDag(new MemoryBlockstore(), pieces(bytes, 8192), { chunkSize: 16_384, maxChildren: 174, leaves: hasher });
    const digests = await hasher.finish();
    for (const name of DIGESTS) {
      const one = createDigest(name);
      one.update(bytes);
      expect([name, hex(digests[name])]).toEqual([name, hex(await one.digest())]);
    }
  });
});

test('a job given up mid-way rejects what it still waits for, and the thread goes on serving', async () => {
  const hasher = threadLeafHasher(['md5']);
  const waiting = Array.from({ length: 20 }, () => hasher.leaf(new Uint8Array(randomBytes(65536)), 0, 65536));
  hasher.abort();
  const settled = await Promise.allSettled(waiting);
  // Some may have been answered before the abort; none is left hanging.
  expect(settled.length).toBe(20);
  expect(settled.some((s) => s.status === 'rejected')).toBe(true);
  const next = threadLeafHasher(['md5']);
  const block = new Uint8Array(randomBytes(1000));
  const expected = createHash('sha256').update(block).digest('hex');
  const { sha256, block: back } = await next.leaf(block, 10, 100);
  expect(hex(sha256)).toBe(expected);
  expect(createHash('sha256').update(back).digest('hex')).toBe(expected);
  expect(hex((await next.finish()).md5)).toBe(createHash('md5').update(back.subarray(10, 110)).digest('hex'));
});

test('a block that shares its memory is copied to the thread, not taken from its owner', async () => {
  const memory = new Uint8Array(randomBytes(4096));
  const view = memory.subarray(100, 1100);
  const hasher = threadLeafHasher([]);
  const { sha256 } = await hasher.leaf(view, 0, view.length);
  await hasher.finish();
  expect(memory.byteLength).toBe(4096); // not detached
  expect(hex(sha256)).toBe(createHash('sha256').update(view).digest('hex'));
});
