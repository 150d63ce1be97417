/** The sites CDN's configuration (functions/core/config.ts `cdn`): what the stack sets, read once and checked. */
import { ConfigError, loadConfig } from '../../functions/core/config.js';

const KVS_ARN = 'arn:aws:cloudfront::123456789012:key-value-store/a1b2c3d4-5678-90ab-cdef-EXAMPLE11111';

test('unset (the local server): no distribution, no host map', () => {
  expect(loadConfig({}).cdn).toEqual({ distributionId: undefined, siteHostsKvsArn: undefined });
});

test('the distribution id and the KeyValueStore ARN as the stack gives them', () => {
  const c = loadConfig({
    CAIRN_CDN_DISTRIBUTION_ID: 'E2QWRUHEXAMPLE',
    CAIRN_SITE_HOSTS_KVS_ARN: KVS_ARN,
    CAIRN_SITES_DOMAIN: 'd111111abcdef8.cloudfront.net',
  });
  expect(c.cdn).toEqual({ distributionId: 'E2QWRUHEXAMPLE', siteHostsKvsArn: KVS_ARN });
  expect(c.sites.domain).toBe('d111111abcdef8.cloudfront.net');
});

test.each([
  ['CAIRN_CDN_DISTRIBUTION_ID', 'e2qwruhexample'],
  ['CAIRN_CDN_DISTRIBUTION_ID', 'arn:aws:cloudfront::123456789012:distribution/E2QWRUHEXAMPLE'],
  ['CAIRN_SITE_HOSTS_KVS_ARN', 'a1b2c3d4-5678-90ab-cdef-EXAMPLE11111'],
  ['CAIRN_SITE_HOSTS_KVS_ARN', 'arn:aws:cloudfront::123456789012:distribution/E2QWRUHEXAMPLE'],
])('%s=%s is refused, naming the variable', (name, value) => {
  expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
  expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name}: `));
});
