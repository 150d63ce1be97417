import { startTestService } from './support/service.js';
const t0 = performance.now();
test('probe', async () => {
  const s = await startTestService({});
  const t1 = performance.now();
  await s.close();
  console.log('start', Math.round(t1 - t0), 'close', Math.round(performance.now() - t1));
});
