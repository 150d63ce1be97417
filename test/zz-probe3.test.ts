import { startTestService } from './support/service.js';
test('probe', async () => {
  expect(typeof startTestService).toBe('function');
});
