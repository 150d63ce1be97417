/**
 * Collection never takes a block a listed object still needs, and never
 * ends the process. The two reproductions of issue 18: a block linked more
 * than once in one file (Helia 7.1.15's pin counts dropped it once per
 * link), and a block shared by two files pinned, unpinned and pinned again
 * (Helia's pinnedBy filter kept the wrong roots).
 */
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { decode } from '@ipld/dag-pb';
import type { CID } from 'multiformats/cid';
import { startTestService, type TestService } from '../support/service.js';
import { captureHeaders } from '../support/s3-doors.js';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { ObjectReferences } from '../../functions/core/data/object-references.js';
import { parseCid } from '../../functions/core/ipfs/cid.js';
import { isRootPinned } from '../../functions/core/storage/pins.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
});
afterAll(async () => {
  await service.close();
});

const B = 'default-bucket';
const KiB = 1024;

async function put(key: string, body: Buffer): Promise<CID> {
  const s3 = service.s3();
  const seen = captureHeaders(s3);
  await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: body }));
  return parseCid(seen.headers['x-service-ipfs-hash-v0']!)!;
}

async function get(key: string): Promise<Buffer> {
  const got = await service.s3().send(new GetObjectCommand({ Bucket: B, Key: key }));
  return Buffer.from(await got.Body!.transformToByteArray());
}

const del = (key: string) => service.s3().send(new DeleteObjectCommand({ Bucket: B, Key: key }));

async function linksOf(cid: CID): Promise<string[]> {
  const node = await service.services.ipfs();
  const parts: Uint8Array[] = [];
  for await (const p of node.blockstore.get(cid)) parts.push(p);
  return decode(Buffer.concat(parts)).Links.map((l) => l.Hash.toString());
}

async function has(cid: CID | string): Promise<boolean> {
  const node = await service.services.ipfs();
  return node.blockstore.has(typeof cid === 'string' ? parseCid(cid)! : cid);
}

test("a block linked twice in one file survives that file's deletion while another object uses it, and goes with the last", async () => {
  const two = await put('zeros/two', Buffer.alloc(512 * KiB));
  const one = await put('zeros/one', Buffer.alloc(256 * KiB));
  // The reproduction needs the shape it describes: two's root links one's root twice.
  expect(await linksOf(two)).toEqual([one.toString(), one.toString()]);

  await del('zeros/two');
  await collectGarbage(service.services);
  expect(await has(two)).toBe(false);
  expect((await get('zeros/one')).equals(Buffer.alloc(256 * KiB))).toBe(true);

  await del('zeros/one');
  const result = await collectGarbage(service.services);
  expect(result.unpinned).toBeGreaterThanOrEqual(1);
  expect(await has(one)).toBe(false);
});

test('a block shared by two files, unpinned and pinned again, stays while any file that uses it is listed', async () => {
  const x = randomBytes(256 * KiB);
  const y = randomBytes(256 * KiB);
  const a = await put('shared/a', Buffer.concat([x, y]));
  const b = await put('shared/b', x);
  const [leafX, leafY] = await linksOf(a);
  expect(leafX).toBe(b.toString()); // A's first leaf is B's root

  await del('shared/a');
  await collectGarbage(service.services);
  expect(await has(leafY!)).toBe(false);
  expect(await has(b)).toBe(true);

  expect(await put('shared/a', Buffer.concat([x, y]))).toEqual(a);
  await del('shared/b');
  await collectGarbage(service.services);
  expect(await has(leafX!)).toBe(true);
  expect((await get('shared/a')).equals(Buffer.concat([x, y]))).toBe(true);

  await del('shared/a');
  await collectGarbage(service.services);
  for (const cid of [a.toString(), leafX!, leafY!]) expect(await has(cid)).toBe(false);
});

test('a candidate whose DAG lost a block is set aside, and the rest of the pass goes on', async () => {
  const broken = await put('hole/broken', randomBytes(600 * KiB));
  const fine = await put('hole/fine', randomBytes(300 * KiB));
  const [lost] = await linksOf(broken);
  const node = await service.services.ipfs();
  await node.blockstore.delete(parseCid(lost!)!);
  await del('hole/broken');
  await del('hole/fine');
  const result = await collectGarbage(service.services);
  expect(result.quarantined).toBe(1);
  expect(await has(fine)).toBe(false); // collected in the same pass
  expect(await has(broken)).toBe(true); // left whole for the integrity check
  const aside = await new ObjectReferences(service.services.db).quarantined();
  expect(aside.map((q) => q.cid)).toContain(broken.toString());
  expect(aside.find((q) => q.cid === broken.toString())!.reason).toContain(lost);
  expect((await new ObjectReferences(service.services.db).candidates(100)).map((c) => c.cid)).not.toContain(broken.toString());
});

test('an unpin cut short (root marked REMOVING, some blocks already gone) is finished by the next collection', async () => {
  const bytes = randomBytes(900 * KiB);
  const root = await put('resume/a', bytes);
  const leaves = await linksOf(root);
  const node = await service.services.ipfs();
  await del('resume/a');
  // What a crash after deleting the last two leaves leaves behind.
  const { Key } = await import('interface-datastore');
  await node.datastore.put(new Key(`/cairn/root/${root.toV1()}`), Uint8Array.of(2));
  for (const leaf of leaves.slice(-2)) await node.blockstore.delete(parseCid(leaf)!);
  const result = await collectGarbage(service.services);
  expect(result.quarantined).toBe(0);
  for (const cid of [root.toString(), ...leaves]) expect(await has(cid)).toBe(false);
  expect(await isRootPinned(node, root)).toBe(false);
});
