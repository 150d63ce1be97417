/** A deploy's log: written as it grows, and past 4 MiB its head and latest tail with a marker between. */
import { createLogger } from '../../functions/core/logger.js';
import type { LogStore } from '../../functions/core/ports/log-store.js';
import { DeployLog, MAX_LOG_BYTES } from '../../functions/core/logs/deploy-log.js';

function memoryStore() {
  const logs = new Map<string, string>();
  let writes = 0;
  const store: LogStore = {
    write: async (key, text) => void (writes++, logs.set(key, text)),
    read: async (key) => logs.get(key),
    delete: async (key) => void logs.delete(key),
  };
  return { store, logs, writes: () => writes };
}

test('lines carry a timestamp, output is kept as it came, and the store gets it without waiting for the end', async () => {
  const { store, logs } = memoryStore();
  const log = new DeployLog(store, 's/d', createLogger('silent'), () => new Date('2026-01-02T03:04:05.000Z'));
  log.line('Cloning');
  log.output('raw output\nwithout');
  log.output(' a newline yet\n');
  const deadline = Date.now() + 5000;
  while (!logs.get('s/d') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(logs.get('s/d')).toBe('2026-01-02T03:04:05.000Z  Cloning\nraw output\nwithout a newline yet\n');
  await log.close();
});

test('a log past the limit keeps its head and its latest tail, with the bytes left out counted', async () => {
  const { store, logs } = memoryStore();
  const log = new DeployLog(store, 's/d', createLogger('silent'));
  const line = 'x'.repeat(1023) + '\n';
  log.output('FIRST LINE\n');
  for (let i = 0; i < 8 * 1024; i++) log.output(line); // 8 MiB
  log.output('LAST LINE\n');
  await log.close();
  const text = logs.get('s/d')!;
  expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_LOG_BYTES);
  expect(text.startsWith('FIRST LINE\n')).toBe(true);
  expect(text.endsWith('LAST LINE\n')).toBe(true);
  const left = /\[\.\.\. (\d+) bytes of log left out/.exec(text);
  expect(left).not.toBeNull();
  expect(Number(left![1]) + Buffer.byteLength(text) - left![0].length).toBeGreaterThan(8 * 1024 * 1024 - 4096);
});

test('a store that fails is tried again with the next write, and the deploy goes on', async () => {
  const { store, logs } = memoryStore();
  let fail = true;
  const flaky: LogStore = { ...store, write: async (k, t) => (fail ? Promise.reject(new Error('disk full')) : store.write(k, t)) };
  const log = new DeployLog(flaky, 's/d', createLogger('silent'));
  log.output('one\n');
  await log.flush();
  expect(logs.get('s/d')).toBeUndefined();
  fail = false;
  await log.close();
  expect(logs.get('s/d')).toBe('one\n');
});

describe('secret values are masked before anything is stored', () => {
  const SECRET = 'hunter2-0123456789';
  const settled = async (log: DeployLog, logs: Map<string, string>) => {
    await log.close();
    return logs.get('s/d')!;
  };

  test('in output and in lines, every occurrence, as ***', async () => {
    const { store, logs } = memoryStore();
    const log = new DeployLog(store, 's/d', createLogger('silent'), () => new Date('2026-01-02T03:04:05.000Z'));
    log.maskSecrets([SECRET, 'other-secret']);
    log.output(`token=${SECRET} and again ${SECRET}\n`);
    log.line(`Failed: the server said other-secret`);
    expect(await settled(log, logs)).toBe('token=*** and again ***\n2026-01-02T03:04:05.000Z  Failed: the server said ***\n');
  });

  test('a secret split across pieces of output, at every split point, is masked whole', async () => {
    for (let cut = 1; cut < SECRET.length; cut++) {
      const { store, logs } = memoryStore();
      const log = new DeployLog(store, 's/d', createLogger('silent'));
      log.maskSecrets([SECRET]);
      log.output(`before ${SECRET.slice(0, cut)}`);
      log.output(`${SECRET.slice(cut)} after\n`);
      expect(await settled(log, logs)).toBe('before *** after\n');
    }
  });

  test('a secret printed one character at a time, with a flush between each, never reaches the store', async () => {
    const { store, logs } = memoryStore();
    const log = new DeployLog(store, 's/d', createLogger('silent'));
    log.maskSecrets([SECRET]);
    log.output('x: ');
    for (const c of SECRET) {
      log.output(c);
      await log.flush();
      expect(logs.get('s/d') ?? '').not.toContain(SECRET.slice(0, 4));
    }
    log.output('\n');
    expect(await settled(log, logs)).toBe('x: ***\n');
  });

  test('output held back as a possible secret is written when it turns out not to be one, before the next line, and at the end', async () => {
    const { store, logs } = memoryStore();
    const log = new DeployLog(store, 's/d', createLogger('silent'), () => new Date('2026-01-02T03:04:05.000Z'));
    log.maskSecrets([SECRET]);
    log.output('progress: hunt');
    log.line('building done');
    log.output('last words: hunter2-01');
    expect(await settled(log, logs)).toBe('progress: hunt2026-01-02T03:04:05.000Z  building done\nlast words: hunter2-01');
  });

  test('overlapping secrets, a secret inside another, and a repeating one are all masked', async () => {
    const { store, logs } = memoryStore();
    const log = new DeployLog(store, 's/d', createLogger('silent'));
    log.maskSecrets(['abcdefgh', 'efghijkl', 'cdef', 'zzzz']);
    log.output('1 abcdefghijkl 2 xxcdefxx 3 zzzzzzzzzz 4 abcdefgh');
    log.output('ijkl 5\n');
    // The last run came in two pieces: its first part was written masked before the rest came.
    expect(await settled(log, logs)).toBe('1 *** 2 xx***xx 3 *** 4 ****** 5\n');
  });

  test('each line of a multi-line secret is masked on its own; values under 4 characters are not masked', async () => {
    const { store, logs } = memoryStore();
    const log = new DeployLog(store, 's/d', createLogger('silent'));
    log.maskSecrets(['-----BEGIN KEY-----\nMIIEvQIBADANBg\r\n-----END KEY-----', 'abc']);
    log.output('MIIEvQIBADANBg\nabc\n');
    expect(await settled(log, logs)).toBe('***\nabc\n');
    expect(log.masked('key: -----BEGIN KEY-----\nMIIEvQIBADANBg\r\n-----END KEY-----.')).toBe('key: ***.');
  });
});
