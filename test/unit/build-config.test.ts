/** CAIRN_BUILD_*: defaults, and a ConfigError naming the variable for a bad value. */
import { ConfigError, loadConfig } from '../../functions/core/config.js';

/** A CodeBuild small instance's limits (config.build.limits). */
const LIMITS = {
  memoryBytes: 3 * 1024 ** 3,
  processes: 512,
  cpuSeconds: 1800,
  diskBytes: 10 * 1024 ** 3,
  tmpBytes: 1024 ** 3,
  outputBytes: 64 * 1024 ** 2,
};

test("builds default to bubblewrap, 15 minutes, one at a time, no network, a small instance's limits", () => {
  expect(loadConfig({}).build).toEqual({ sandbox: 'bwrap', timeoutMs: 900_000, concurrency: 1, network: 'none', limits: LIMITS });
});

test('the variables set them, the time limit in seconds', () => {
  const env = { CAIRN_BUILD_SANDBOX: 'none', CAIRN_BUILD_TIMEOUT: '60', CAIRN_BUILD_CONCURRENCY: '3', CAIRN_BUILD_NETWORK: 'HOST' };
  expect(loadConfig(env).build).toEqual({ sandbox: 'none', timeoutMs: 60_000, concurrency: 3, network: 'host', limits: LIMITS });
});

test.each([
  ['CAIRN_BUILD_SANDBOX', 'docker'],
  ['CAIRN_BUILD_TIMEOUT', '0'],
  ['CAIRN_BUILD_TIMEOUT', '10m'],
  ['CAIRN_BUILD_CONCURRENCY', '0'],
  ['CAIRN_BUILD_CONCURRENCY', '-1'],
  ['CAIRN_BUILD_NETWORK', 'bridge'],
  ['CAIRN_BUILD_MEMORY', '3 TB'],
  ['CAIRN_BUILD_DISK', '0'],
  ['CAIRN_BUILD_PROCESSES', '0'],
  ['CAIRN_BUILD_CPU_SECONDS', '1.5'],
])('%s=%s is refused', (variable, value) => {
  expect(() => loadConfig({ [variable]: value })).toThrow(ConfigError);
  expect(() => loadConfig({ [variable]: value })).toThrow(new RegExp(`^${variable}: .*"${value}"`));
});
