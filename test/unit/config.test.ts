/** Configuration from the environment (functions/core/config.ts): a bad value names its variable. */
import { ConfigError, loadConfig } from '../../functions/core/config.js';

describe('configuration', () => {
  test.each([
    ['CAIRN_API_PORT', '70000'],
    ['CAIRN_S3_PORT', 'abc'],
    ['CAIRN_GATEWAY_URL', 'not a url'],
    ['CAIRN_LOG_LEVEL', 'loud'],
    ['CAIRN_SECRET_KEY', 'c2hvcnQ='],
  ])('%s=%s is refused, naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name}: `));
  });

  test('defaults are the documented local endpoints', () => {
    const c = loadConfig({});
    expect(c.ports).toEqual({ api: 4000, s3: 4001, gateway: 4002 });
    expect(c.urls.baseUrl).toBe('http://127.0.0.1:4000');
    expect(c.urls.storageEndpoint).toBe('http://127.0.0.1:4001');
    expect(c.urls.gatewayUrl).toBe('http://127.0.0.1:4002');
    expect(c.dataDir).toBe('./data');
  });
});
