/**
 * Both deploy log stores' size-first read (LogStore.readAdmitted), which the
 * GraphQL API charges to an answer's byte budget before a log is in memory:
 * files under a data directory, and objects in a bucket, here a bucket on
 * Cairn's own local S3 endpoint (as the AWS pipeline tests keep theirs).
 */
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileLogStore } from '../../functions/local/file-log-store.js';
import { S3LogStore } from '../../functions/aws/s3-log-store.js';
import type { LogStore } from '../../functions/core/ports/log-store.js';
import { startTestService, type TestService } from '../support/service.js';

let service: TestService;
let dir: string;
const stores: Array<[string, () => LogStore]> = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-log-stores-'));
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  const s3 = service.s3();
  await s3.send(new CreateBucketCommand({ Bucket: 'cairn-logs' }));
  stores.push(['files', () => new FileLogStore(dir)], ['S3 objects', () => new S3LogStore(s3, 'cairn-logs')]);
});

afterAll(async () => {
  await service?.close();
  await rm(dir, { recursive: true, force: true });
});

describe.each(['files', 'S3 objects'])('deploy logs as %s', (name) => {
  const store = () => stores.find(([n]) => n === name)![1]();
  const log = `${'line é 😀\n'.repeat(50_000)}end`;

  test('readAdmitted tells the size in bytes, then gives the bytes', async () => {
    await store().write('site/d1', log);
    const seen: number[] = [];
    const bytes = await store().readAdmitted!('site/d1', (n) => void seen.push(n));
    expect(seen).toEqual([Buffer.byteLength(log)]);
    expect(Buffer.isBuffer(bytes)).toBe(true);
    expect(bytes!.toString('utf8') === log).toBe(true);
  });

  test('a refused size is thrown back and nothing is read; a missing log is undefined without asking', async () => {
    await store().write('site/d2', log);
    await expect(
      store().readAdmitted!('site/d2', () => {
        throw new Error('over the budget');
      }),
    ).rejects.toThrow('over the budget');
    // The store is still usable afterwards (a refused S3 body is destroyed, not left half read).
    expect((await store().readAdmitted!('site/d2', () => {}))!.byteLength).toBe(Buffer.byteLength(log));
    const asked: number[] = [];
    expect(await store().readAdmitted!('site/none', (n) => void asked.push(n))).toBeUndefined();
    expect(asked).toEqual([]);
  });
});
