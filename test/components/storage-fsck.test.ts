/**
 * The integrity check: finds objects whose blocks are missing or corrupt,
 * marks them so GET and HEAD answer a clear error, rebuilds the pin index,
 * and clears the mark once the content is uploaded again. Also the command
 * itself (`npm run fsck`) on a stopped data directory.
 */
import { CopyObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { decode } from '@ipld/dag-pb';
import { Key } from 'interface-datastore';
import type { CID } from 'multiformats/cid';
import { startTestService, serviceEnv, type TestService } from '../support/service.js';
import { captureHeaders, failure } from '../support/s3-doors.js';
import { npmScriptArgs, ROOT } from '../support/child-service.js';
import { parseCid } from '../../functions/core/ipfs/cid.js';
import { checkIntegrity } from '../../functions/core/storage/fsck.js';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { INDEX_MARKER } from '../../functions/core/storage/pins.js';

const B = 'default-bucket';
const KiB = 1024;

async function put(service: TestService, key: string, body: Buffer): Promise<CID> {
  const s3 = service.s3();
  const seen = captureHeaders(s3);
  await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: body }));
  return parseCid(seen.headers['x-service-ipfs-hash-v0']!)!;
}

async function get(service: TestService, key: string): Promise<Buffer> {
  const got = await service.s3().send(new GetObjectCommand({ Bucket: B, Key: key }));
  return Buffer.from(await got.Body!.transformToByteArray());
}

async function leavesOf(service: TestService, cid: CID): Promise<CID[]> {
  const node = await service.services.ipfs();
  const parts: Uint8Array[] = [];
  for await (const p of node.blockstore.get(cid)) parts.push(p);
  return decode(Buffer.concat(parts)).Links.map((l) => l.Hash);
}

describe('in the service', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  });
  afterAll(async () => {
    await service.close();
  });

  test('a missing and a corrupt block are found, their objects marked, and an upload of the content repairs them', async () => {
    const lostBytes = randomBytes(600 * KiB);
    const badBytes = randomBytes(300 * KiB);
    const whole = randomBytes(10 * KiB);
    const lost = await put(service, 'fsck/lost', lostBytes);
    await service.s3().send(new CopyObjectCommand({ Bucket: B, Key: 'fsck/lost-copy', CopySource: `${B}/fsck/lost` }));
    const bad = await put(service, 'fsck/bad', badBytes);
    await put(service, 'fsck/whole', whole);
    const node = await service.services.ipfs();
    const [missingLeaf] = await leavesOf(service, lost);
    await node.blockstore.delete(missingLeaf!);
    await node.blockstore.delete(bad);
    await node.blockstore.put(bad, randomBytes(1000)); // bytes that do not hash to the CID

    const looked = await checkIntegrity(service.services, { repair: false });
    expect(looked.damaged.map((d) => d.key).sort()).toEqual(['fsck/bad', 'fsck/lost', 'fsck/lost-copy']);
    expect(looked.missingBlocks).toEqual([missingLeaf!.toString()]);
    expect(looked.corruptBlocks).toEqual([bad.toString()]);
    expect(looked.damaged.find((d) => d.key === 'fsck/lost')!.problem).toContain(missingLeaf!.toString());
    expect(await node.blockstore.has(bad)).toBe(true); // a dry run changes nothing
    expect((await service.services.objects.get(B, 'fsck/lost'))!.damaged).toBeUndefined();

    const repaired = await checkIntegrity(service.services, { repair: true });
    expect(repaired.damaged).toHaveLength(3);
    expect(await node.blockstore.has(bad)).toBe(false); // so an upload stores it afresh
    for (const key of ['fsck/lost', 'fsck/lost-copy', 'fsck/bad']) {
      const err = await failure(service.s3().send(new GetObjectCommand({ Bucket: B, Key: key })));
      expect(err.name).toBe('InvalidObjectState');
      expect(err.$metadata.httpStatusCode).toBe(403);
      expect(err.message).toContain('damaged');
      const head = await failure(service.s3().send(new HeadObjectCommand({ Bucket: B, Key: key })));
      expect(head.$metadata.httpStatusCode).toBe(403);
    }
    expect((await get(service, 'fsck/whole')).equals(whole)).toBe(true);

    // Uploading the content again restores every copy of it.
    expect((await put(service, 'fsck/lost', lostBytes)).equals(lost)).toBe(true);
    expect((await put(service, 'fsck/bad', badBytes)).equals(bad)).toBe(true);
    expect((await get(service, 'fsck/lost')).equals(lostBytes)).toBe(true);
    expect((await get(service, 'fsck/bad')).equals(badBytes)).toBe(true);
    const after = await checkIntegrity(service.services, { repair: true });
    expect(after.damaged).toEqual([]);
    expect((await get(service, 'fsck/lost-copy')).equals(lostBytes)).toBe(true);
  });

  test('collection in a data directory without the pin index first rebuilds it from the objects table', async () => {
    const x = randomBytes(256 * KiB);
    const y = randomBytes(256 * KiB);
    await put(service, 'legacy/a', Buffer.concat([x, y]));
    const b = await put(service, 'legacy/b', x);
    const node = await service.services.ipfs();
    // A data directory from before the index: Helia's records only.
    for await (const key of node.datastore.queryKeys({ prefix: '/cairn/' })) await node.datastore.delete(new Key(key.toString()));
    await node.pinsWritten?.();
    expect(await node.datastore.has(INDEX_MARKER)).toBe(false);
    await service.s3().send(new PutObjectCommand({ Bucket: B, Key: 'legacy/a', Body: 'replaced' }));
    await collectGarbage(service.services);
    expect(await node.datastore.has(INDEX_MARKER)).toBe(true);
    expect(await node.blockstore.has(b)).toBe(true);
    expect((await get(service, 'legacy/b')).equals(x)).toBe(true);
  });
});

describe('npm run fsck', () => {
  const run = promisify(execFile);
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cairn-fsck-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const { nodeArgs, script } = npmScriptArgs('fsck');
  const fsck = async (env: Record<string, string>, ...args: string[]) =>
    run(process.execPath, [...nodeArgs, join(ROOT, script), ...args], { cwd: ROOT, env: { ...process.env, ...env } }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );

  test('reports a whole data directory, refuses one in use, and exits 2 on damage', async () => {
    const service = await startTestService({ CAIRN_GC_INTERVAL: '0' }, dir);
    const env = await serviceEnv(dir);
    let lost: CID;
    try {
      lost = await put(service, 'cli/lost', randomBytes(600 * KiB));
      await put(service, 'cli/whole', randomBytes(1000));
      const inUse = await fsck(env);
      expect(inUse.code).toBe(1);
      expect(inUse.stderr).toContain('in use');
      const node = await service.services.ipfs();
      await node.blockstore.delete((await leavesOf(service, lost))[1]!);
    } finally {
      await service.stop();
    }
    const dry = await fsck(env, '--dry-run');
    expect(dry.code).toBe(2);
    expect(dry.stdout).toContain(`DAMAGED ${B}/cli/lost (${lost!})`);
    expect(dry.stdout).toContain('Checked 2 objects');
    const fixed = await fsck(env);
    expect(fixed.code).toBe(2);
    expect(fixed.stdout).toContain('marked: GET answers InvalidObjectState');
    expect((await fsck(env, '--bogus')).code).toBe(1);
  }, 120_000);
});
