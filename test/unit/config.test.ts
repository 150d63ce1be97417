/** Configuration from the environment (functions/core/config.ts): a bad value names its variable. */
import { availableParallelism } from 'node:os';
import { ConfigError, defaultGatewayThreads, loadConfig, MAX_GATEWAY_THREADS } from '../../functions/core/config.js';

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

  test('CAIRN_BUILD_NETWORK=outside is its own value, and only with the bubblewrap sandbox', () => {
    expect(loadConfig({ CAIRN_BUILD_NETWORK: 'outside' }).build).toMatchObject({ sandbox: 'bwrap', network: 'outside' });
    expect(loadConfig({ CAIRN_BUILD_NETWORK: 'OUTSIDE', CAIRN_BUILD_SANDBOX: 'bwrap' }).build.network).toBe('outside');
    // A plain child process has this machine's whole network: refused at start-up, in one line, rather than not kept.
    expect(() => loadConfig({ CAIRN_BUILD_NETWORK: 'outside', CAIRN_BUILD_SANDBOX: 'none' })).toThrow(ConfigError);
    expect(() => loadConfig({ CAIRN_BUILD_NETWORK: 'outside', CAIRN_BUILD_SANDBOX: 'none' })).toThrow(
      /^CAIRN_BUILD_NETWORK: "outside" needs the bubblewrap sandbox[^\n]*$/,
    );
    expect(loadConfig({ CAIRN_BUILD_NETWORK: 'host', CAIRN_BUILD_SANDBOX: 'none' }).build.network).toBe('host');
    expect(() => loadConfig({ CAIRN_BUILD_NETWORK: 'slirp' })).toThrow(
      /^CAIRN_BUILD_NETWORK: must be "none", "outside" or "host", got "slirp"$/,
    );
  });

  test('the local site cache holds 256 MiB unless CAIRN_SITE_CACHE_BYTES says otherwise', () => {
    expect(loadConfig({}).sites.cacheBytes).toBe(256 * 1024 * 1024);
    expect(loadConfig({ CAIRN_SITE_CACHE_BYTES: '1048576' }).sites.cacheBytes).toBe(1048576);
    expect(() => loadConfig({ CAIRN_SITE_CACHE_BYTES: '0' })).toThrow(/^CAIRN_SITE_CACHE_BYTES: /);
  });
  test('the gateway answers on one thread per core unless CAIRN_GATEWAY_THREADS says otherwise', () => {
    expect(MAX_GATEWAY_THREADS).toBe(8);
    expect([1, 2, 3, 8, 9, 64].map((cores) => defaultGatewayThreads(cores))).toEqual([1, 2, 3, 8, 8, 8]);
    // Unset or empty: this machine's cores, which is what npm start runs with.
    expect(loadConfig({}).sites.gatewayThreads).toBe(Math.min(availableParallelism(), 8));
    expect(loadConfig({ CAIRN_GATEWAY_THREADS: '' }).sites.gatewayThreads).toBe(defaultGatewayThreads());
    expect(loadConfig({ CAIRN_GATEWAY_THREADS: '1' }).sites.gatewayThreads).toBe(1);
    expect(loadConfig({ CAIRN_GATEWAY_THREADS: '8' }).sites.gatewayThreads).toBe(8);
    for (const bad of ['0', '9', '-1', '2.5', 'two', ' 2'])
      expect(() => loadConfig({ CAIRN_GATEWAY_THREADS: bad })).toThrow(/^CAIRN_GATEWAY_THREADS: /);
  });
  test('build limits default to a CodeBuild small instance; sizes take KiB/MiB/GiB', () => {
    expect(loadConfig({}).build.limits).toEqual({
      memoryBytes: 3 * 1024 ** 3,
      processes: 512,
      cpuSeconds: 1800,
      diskBytes: 10 * 1024 ** 3,
      tmpBytes: 1024 ** 3,
      outputBytes: 64 * 1024 ** 2,
    });
    const set = loadConfig({
      CAIRN_BUILD_MEMORY: '512MiB',
      CAIRN_BUILD_DISK: '2G',
      CAIRN_BUILD_TMP: '65536',
      CAIRN_BUILD_OUTPUT: '64k',
      CAIRN_BUILD_PROCESSES: '64',
      CAIRN_BUILD_CPU_SECONDS: '30',
    }).build.limits;
    expect(set).toEqual({
      memoryBytes: 512 * 1024 ** 2,
      diskBytes: 2 * 1024 ** 3,
      tmpBytes: 65536,
      outputBytes: 64 * 1024,
      processes: 64,
      cpuSeconds: 30,
    });
    expect(() => loadConfig({ CAIRN_BUILD_MEMORY: '3 TB' })).toThrow(/^CAIRN_BUILD_MEMORY: must be a size/);
    expect(() => loadConfig({ CAIRN_BUILD_PROCESSES: '0' })).toThrow(/^CAIRN_BUILD_PROCESSES: /);
  });

  test('CAIRN_OUTBOUND_PRIVATE is refuse unless set to allow', () => {
    expect(loadConfig({}).outbound.private).toBe('refuse');
    expect(loadConfig({ CAIRN_OUTBOUND_PRIVATE: 'ALLOW' }).outbound.private).toBe('allow');
    expect(() => loadConfig({ CAIRN_OUTBOUND_PRIVATE: 'yes' })).toThrow(/^CAIRN_OUTBOUND_PRIVATE: must be "allow" or "refuse", got "yes"$/);
  });

  test('CAIRN_SIGNUP is invite unless set to open or closed', () => {
    expect(loadConfig({}).signup).toBe('invite');
    expect(loadConfig({ CAIRN_SIGNUP: 'Open' }).signup).toBe('open');
    expect(loadConfig({ CAIRN_SIGNUP: 'closed' }).signup).toBe('closed');
    expect(() => loadConfig({ CAIRN_SIGNUP: 'yes' })).toThrow(/^CAIRN_SIGNUP: must be "open", "invite" or "closed", got "yes"$/);
  });

  test('CAIRN_OIDC_*: issuer, client id and secret together, https or loopback http; no error shows the secret', () => {
    expect(loadConfig({}).oidc).toBeUndefined();
    const oidc = { CAIRN_OIDC_ISSUER: 'https://id.example.org/realm', CAIRN_OIDC_CLIENT_ID: 'cairn', CAIRN_OIDC_CLIENT_SECRET: 's3cret' };
    expect(loadConfig(oidc).oidc).toEqual({
      issuer: 'https://id.example.org/realm',
      clientId: 'cairn',
      clientSecret: 's3cret',
      name: 'id.example.org',
    });
    expect(loadConfig({ ...oidc, CAIRN_OIDC_NAME: 'GitLab' }).oidc?.name).toBe('GitLab');
    expect(loadConfig({ ...oidc, CAIRN_OIDC_ISSUER: 'http://127.0.0.1:9000' }).oidc?.issuer).toBe('http://127.0.0.1:9000');
    const refusals: Array<[Record<string, string>, RegExp]> = [
      [{ ...oidc, CAIRN_OIDC_CLIENT_SECRET: '' }, /^CAIRN_OIDC_CLIENT_SECRET: must be set with the other/],
      [{ CAIRN_OIDC_ISSUER: oidc.CAIRN_OIDC_ISSUER }, /^CAIRN_OIDC_CLIENT_ID: must be set with the other/],
      [{ ...oidc, CAIRN_OIDC_ISSUER: 'http://id.example.org' }, /^CAIRN_OIDC_ISSUER: must be https \(http only on a loopback address\)/],
      [{ ...oidc, CAIRN_OIDC_ISSUER: 'not a url' }, /^CAIRN_OIDC_ISSUER: must be the provider's issuer URL/],
      [{ ...oidc, CAIRN_OIDC_NAME: 'Git\nLab' }, /^CAIRN_OIDC_NAME: must be one line/],
    ];
    for (const [env, message] of refusals) {
      expect(() => loadConfig(env)).toThrow(message);
      try {
        loadConfig(env);
      } catch (err) {
        expect((err as Error).message).not.toContain('s3cret');
      }
    }
  });

  test('CAIRN_SMTP_URL names the mail server, with CAIRN_MAIL_FROM; neither error shows the password', () => {
    expect(loadConfig({}).mail).toEqual({ from: undefined });
    const from = 'Cairn <cairn@example.org>';
    expect(loadConfig({ CAIRN_SMTP_URL: 'smtp://mail%40example.org:p%2Fss@smtp.example.org:2525', CAIRN_MAIL_FROM: from }).mail).toEqual({
      from,
      smtp: { host: 'smtp.example.org', port: 2525, secure: false, user: 'mail@example.org', password: 'p/ss' },
    });
    expect(loadConfig({ CAIRN_SMTP_URL: 'smtps://smtp.example.org', CAIRN_MAIL_FROM: 'cairn@example.org' }).mail.smtp).toEqual({
      host: 'smtp.example.org',
      port: 465,
      secure: true,
      user: undefined,
      password: undefined,
    });
    expect(loadConfig({ CAIRN_SMTP_URL: 'smtp://[::1]', CAIRN_MAIL_FROM: from }).mail.smtp).toMatchObject({ host: '::1', port: 587 });
    expect(() => loadConfig({ CAIRN_SMTP_URL: 'smtp://u:secret@smtp.example.org' })).toThrow(
      /^CAIRN_MAIL_FROM: must be set when CAIRN_SMTP_URL is/,
    );
    expect(() => loadConfig({ CAIRN_SMTP_URL: 'https://u:secret@smtp.example.org', CAIRN_MAIL_FROM: from })).toThrow(
      /^CAIRN_SMTP_URL: must start with smtp:\/\/ or smtps:\/\/, got "https:\/\/"$/,
    );
    expect(() => loadConfig({ CAIRN_SMTP_URL: 'smtp://u:secret@', CAIRN_MAIL_FROM: from })).toThrow(/^CAIRN_SMTP_URL: /);
    for (const bad of ['cairn@example.org\r\nBcc: x@example.org', 'no address', 'Cairn <cairn>'])
      expect(() => loadConfig({ CAIRN_MAIL_FROM: bad })).toThrow(/^CAIRN_MAIL_FROM: must be an address/);
    try {
      loadConfig({ CAIRN_SMTP_URL: 'ftp://u:secret@smtp.example.org', CAIRN_MAIL_FROM: from });
    } catch (err) {
      expect((err as Error).message).not.toContain('secret');
    }
  });

  describe('CAIRN_GIT_HOST_APIS', () => {
    test('github.com and gitlab.com are known without it', () => {
      expect(loadConfig({}).gitHostApis).toEqual({
        'github.com': { kind: 'github', baseUrl: 'https://api.github.com' },
        'gitlab.com': { kind: 'gitlab', baseUrl: 'https://gitlab.com/api/v4' },
      });
    });

    test('adds hosts (with a port, any case, trailing slashes dropped) and replaces a default one it names', () => {
      const apis = loadConfig({
        CAIRN_GIT_HOST_APIS:
          ' GHE.example.com=github@https://ghe.example.com/api/v3/ , git.example.org:8443=GitLab@http://10.0.0.5:8080/api/v4,github.com=github@https://proxy.example.net',
      }).gitHostApis;
      expect(apis).toEqual({
        'github.com': { kind: 'github', baseUrl: 'https://proxy.example.net' },
        'gitlab.com': { kind: 'gitlab', baseUrl: 'https://gitlab.com/api/v4' },
        'ghe.example.com': { kind: 'github', baseUrl: 'https://ghe.example.com/api/v3' },
        'git.example.org:8443': { kind: 'gitlab', baseUrl: 'http://10.0.0.5:8080/api/v4' },
      });
    });

    test.each([
      [
        'no API kind',
        'git.example.com=https://git.example.com/api',
        /"git\.example\.com=https:\/\/git\.example\.com\/api" must be host\[:port\]=github\|gitlab@<API base URL>/,
      ],
      ['an unknown kind', 'git.example.com=gitea@https://git.example.com/api', /must be host\[:port\]=github\|gitlab@/],
      [
        'a host that is a URL',
        'https://git.example.com=github@https://git.example.com/api',
        /must be host\[:port\]=github\|gitlab@|is not a host name/,
      ],
      ['a bad host', 'git..example.com=github@https://x.example.com', /"git\.\.example\.com" is not a host name/],
      [
        'a host named twice',
        'a.example.com=github@https://a.example.com,A.example.com=gitlab@https://b.example.com',
        /a\.example\.com is named twice/,
      ],
      ['a base that is no URL', 'a.example.com=github@api', /the API base URL of a\.example\.com is not an absolute URL/],
      ['a base that is not http(s)', 'a.example.com=github@ftp://a.example.com', /must be an http\(s\) URL/],
      [
        'credentials in the base',
        'a.example.com=github@https://bot:secret@a.example.com/api',
        /must carry no credentials, query or fragment/,
      ],
      ['a query in the base', 'a.example.com=gitlab@https://a.example.com/api?x=1', /must carry no credentials, query or fragment/],
    ])('%s is refused in one line naming the variable', (_, value, why) => {
      let error: Error | undefined;
      try {
        loadConfig({ CAIRN_GIT_HOST_APIS: value });
      } catch (err) {
        error = err as Error;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect(error!.message).toMatch(/^CAIRN_GIT_HOST_APIS: /);
      expect(error!.message).toMatch(why);
      expect(error!.message).not.toContain('\n');
      expect(error!.message).not.toContain('secret');
    });
  });
});
