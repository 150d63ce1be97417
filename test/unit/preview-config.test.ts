/** CAIRN_PREVIEW, CAIRN_CHROMIUM_PATH, CAIRN_PREVIEW_TIMEOUT: defaults, and a ConfigError naming the variable for a bad value. */
import { ConfigError, loadConfig } from '../../functions/core/config.js';

test("preview images are on locally with Debian's Chromium and 30 s a shot, and off in AWS", () => {
  expect(loadConfig({}).preview).toEqual({ enabled: true, chromiumPath: '/usr/bin/chromium', timeoutMs: 30_000 });
  expect(loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'f' }).preview.enabled).toBe(false);
});

test('the variables set them', () => {
  const env = { CAIRN_PREVIEW: 'off', CAIRN_CHROMIUM_PATH: '/opt/chrome/chrome', CAIRN_PREVIEW_TIMEOUT: '5' };
  expect(loadConfig(env).preview).toEqual({ enabled: false, chromiumPath: '/opt/chrome/chrome', timeoutMs: 5000 });
});

test.each([
  ['CAIRN_PREVIEW', 'maybe'],
  ['CAIRN_CHROMIUM_PATH', 'chromium'],
  ['CAIRN_PREVIEW_TIMEOUT', '0'],
])('%s=%s is refused', (variable, value) => {
  expect(() => loadConfig({ [variable]: value })).toThrow(ConfigError);
  expect(() => loadConfig({ [variable]: value })).toThrow(new RegExp(`^${variable}: .*"${value}"`));
});
