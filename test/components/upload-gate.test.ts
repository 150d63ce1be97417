/**
 * The upload gate across processes (AWS): two gates over the same DynamoDB
 * tables stand for two Lambda instances. A collection never runs while an
 * upload is in flight, and an upload waits for a running collection.
 */
import { DynamoUploadGate } from '../../functions/aws/dynamo-gate.js';
import { GateBusyError } from '../../functions/core/ports/upload-gate.js';
import { startTestService, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
});
afterAll(async () => {
  await service.close();
});

const gate = () => new DynamoUploadGate(service.services.db, service.services.logger, { pollMs: 20, waitMs: 5_000 });

test('a collection is refused while another instance has an upload in flight, and runs once it ends', async () => {
  const uploader = gate();
  const collector = gate();
  const release = await uploader.enterShared();
  let ran = false;
  await expect(collector.withExclusive(async () => (ran = true))).rejects.toBeInstanceOf(GateBusyError);
  expect(ran).toBe(false);
  release();
  // The upload's marker is deleted in the background: the collection runs once it is gone.
  await waitFor(
    () =>
      collector
        .withExclusive(async () => (ran = true))
        .then(
          () => true,
          (err: unknown) => {
            if (err instanceof GateBusyError) return false;
            throw err;
          },
        ),
    { what: 'the collection to run once the upload ended' },
  );
  expect(ran).toBe(true);
});

test('an upload that starts during a collection waits for it to finish', async () => {
  const uploader = gate();
  const collector = gate();
  const order: string[] = [];
  let entered: Promise<() => void> | undefined;
  await collector.withExclusive(async () => {
    order.push('collection starts');
    entered = uploader.enterShared().then((release) => {
      order.push('upload enters');
      return release;
    });
    // Time is the subject: the collection lasts ten of the uploader's polls
    // (pollMs 20), which an upload that did not wait would have entered in.
    await new Promise((r) => setTimeout(r, 200));
    order.push('collection ends');
  });
  (await entered!)();
  expect(order).toEqual(['collection starts', 'collection ends', 'upload enters']);
});

test('two collections do not run at once', async () => {
  const a = gate();
  const b = gate();
  await a.withExclusive(async () => {
    await expect(b.withExclusive(async () => 'no')).rejects.toBeInstanceOf(GateBusyError);
  });
  expect(await b.withExclusive(async () => 'yes')).toBe('yes');
});

test("the worker's scheduled tick collects the blocks of deleted objects", async () => {
  const { runScheduledTick } = await import('../../functions/deploy-worker/worker.js');
  const { PutObjectCommand, DeleteObjectCommand } = await import('@aws-sdk/client-s3');
  const s3 = service.s3();
  await s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: 'to-collect', Body: 'collect me, tick' }));
  await s3.send(new DeleteObjectCommand({ Bucket: 'default-bucket', Key: 'to-collect' }));
  const result = await runScheduledTick(service.services);
  expect(result.collected).toMatchObject({ examined: 1, unpinned: 1, blocksDeleted: 1 });
  expect((await runScheduledTick(service.services)).collected.examined).toBe(0);
});
