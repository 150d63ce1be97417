/**
 * The parsers behind site addresses: `_redirects` (IPIP-0002's subset of
 * Netlify's format), `_headers`, request paths made safe, site hosts, and
 * Content-Type from names and first bytes.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBlockstore } from 'blockstore-core/memory';
import type { Blockstore } from 'interface-blockstore';
import { matchRedirect, MAX_RULES_FILE_BYTES, parseRedirects, SiteFileError } from '../../functions/core/hosting/redirects.js';
import { siteRules } from '../../functions/core/hosting/site-rules.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { headersFor, parseHeaders, UnsafeHeaderLine, unsendableHeader } from '../../functions/core/hosting/headers.js';
import { PublishDirectoryError } from '../../functions/core/ipfs/import-directory.js';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { contentPath, BadPathError } from '../../functions/core/ipfs/paths.js';
import { siteHost } from '../../functions/gateway/hosts.js';
import { sniffType, typeFromName } from '../../functions/core/http/content-type.js';

describe('_redirects', () => {
  test('rules read as "from to [status]", 301 by default, comments and blank lines skipped', () => {
    const rules = parseRedirects('# moved\n\n/old /new\n/gone /gone.html 410\r\n/ext https://example.com/x 302\n');
    expect(rules.map((r) => [r.line, r.from, r.to, r.status])).toEqual([
      [3, '/old', '/new', 301],
      [4, '/gone', '/gone.html', 410],
      [5, '/ext', 'https://example.com/x', 302],
    ]);
  });

  test('placeholders and the splat fill the target; the first matching rule wins; the query is carried to a redirect', () => {
    const rules = parseRedirects(
      '/blog/:year/:slug /posts/:year-:slug 301\n/docs/* /manual/:splat 302\n/docs/* /never 301\n/* /index.html 200\n',
    );
    expect(matchRedirect(rules, '/blog/2024/hello', 'a=1')).toMatchObject({ location: '/posts/2024-hello?a=1', rule: { status: 301 } });
    expect(matchRedirect(rules, '/docs/a/b c', '')).toMatchObject({ location: '/manual/a/b%20c', rule: { line: 2 } });
    expect(matchRedirect(rules, '/docs', '')).toMatchObject({ location: '/manual/', rule: { line: 2 } });
    expect(matchRedirect(rules, '/blog/2024', 'x=y')).toMatchObject({ location: '/index.html', rule: { status: 200 } });
    expect(matchRedirect(rules.slice(0, 1), '/blog/2024/a/b')).toBeUndefined();
    expect(matchRedirect(parseRedirects('/a /b?x=1 301'), '/a/', 'y=2')?.location).toBe('/b?x=1&y=2');
  });

  test.each([
    ['/a', 'a rule needs a source path and a target'],
    ['/a /b 301 Country=us', 'too many fields'],
    ['a /b', 'the source must be a path'],
    ['/a/*/b /c', '"*" may only be the last segment'],
    ['/a b', 'the target must be a path'],
    ['/a /b 301!', 'forced rules ("!") are not supported'],
    ['/a /b 418', 'the status must be one of'],
    ['/a https://example.com 200', 'its target must be a path'],
  ])('%j is refused with its line number', (line, reason) => {
    const error = (() => {
      try {
        parseRedirects(`# first\n${line}\n`);
      } catch (err) {
        return err as SiteFileError;
      }
      throw new Error('parsed');
    })();
    expect(error).toBeInstanceOf(SiteFileError);
    expect(error.line).toBe(2);
    expect(error.message).toContain('_redirects line 2');
    expect(error.message).toContain(reason);
  });

  /** 10,000 short rules under 64 KiB, the last one but one a placeholder rule. */
  const tenThousand = () =>
    [...Array.from({ length: 9_998 }, (_, i) => `/${(i % 1296).toString(36)} /`), '/near/:name /found/:name 302', '/last /'].join('\n');

  test('a valid 10,000-line file under 64 KiB: every rule read, one near the end matches, a path no rule names matches none', () => {
    const text = tenThousand();
    expect(Buffer.byteLength(text)).toBeLessThan(MAX_RULES_FILE_BYTES);
    const rules = parseRedirects(text);
    expect(rules).toHaveLength(10_000);
    expect(matchRedirect(rules, '/near/thing', 'q=1')).toMatchObject({ location: '/found/thing?q=1', rule: { line: 9_999, status: 302 } });
    expect(matchRedirect(rules, '/last', '')?.rule.line).toBe(10_000);
    expect(matchRedirect(rules, '/no/such/page', '')).toBeUndefined();
  });

  test("a directory's rules are read and parsed once, then kept by its root CID", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-rules-'));
    try {
      await writeFile(join(dir, 'index.html'), 'home');
      await writeFile(join(dir, '_redirects'), tenThousand());
      const store = new MemoryBlockstore();
      const { cid } = await importDirectory(store, dir);
      let reads = 0;
      const counted = new Proxy(store, {
        get: (target, name, receiver) =>
          name === 'get' ? (...args: Parameters<Blockstore['get']>) => (reads++, target.get(...args)) : Reflect.get(target, name, receiver),
      }) as Blockstore;
      const first = await siteRules(counted, cid);
      expect(reads).toBeGreaterThan(0);
      const readsOnce = reads;
      expect(await siteRules(counted, cid)).toBe(first);
      expect(reads).toBe(readsOnce);
      expect(first.redirects).toHaveLength(10_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a file over 64 KiB is refused whole, with its size in the message', () => {
    const text = Array.from({ length: 10_000 }, (_, i) => `/old-${i} /new-${i} 301`).join('\n');
    expect(Buffer.byteLength(text)).toBeGreaterThan(64 * 1024);
    expect(() => parseRedirects(text)).toThrow(/_redirects: redirects file size cannot exceed 65536 bytes: the file is \d+ bytes/);
  });
});

describe('_headers', () => {
  const file = [
    '# site headers',
    '/*',
    '  X-Frame-Options: DENY',
    '  X-Shared: one',
    '/assets/*',
    '  Cache-Control: public, max-age=31536000, immutable',
    '  X-Shared: two',
    '/blog/:slug',
    '  X-Blog: yes',
    '  Content-Length: 1',
    '  Transfer-Encoding: chunked',
  ].join('\n');

  test('every block whose path matches applies; a name set twice is joined; protected headers are dropped with a warning', () => {
    const { rules, warnings } = parseHeaders(file);
    expect(headersFor(rules, '/')).toEqual({ 'x-frame-options': 'DENY', 'x-shared': 'one' });
    expect(headersFor(rules, '/assets/app.js')).toEqual({
      'x-frame-options': 'DENY',
      'x-shared': 'one, two',
      'cache-control': 'public, max-age=31536000, immutable',
    });
    expect(headersFor(rules, '/blog/post')).toMatchObject({ 'x-blog': 'yes' });
    expect(headersFor(rules, '/blog/post/deeper')).not.toHaveProperty('x-blog');
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/line 10: Content-Length is set by the service/);
    expect(JSON.stringify(rules)).not.toMatch(/content-length|transfer-encoding/);
  });

  test.each([
    ['  X-A: b', 'before any path line'],
    ['/a\n  no colon here', '"Name: value"'],
    ['https://example.com/*\n  X: y', 'rules for other domains are not supported'],
    // Compiled to .*a.*a.*...b, a 40-character request path took 7 s to fail to match: one rule would block the gateway.
    ['/*a*a*a*a*a*a*a*a*b\n  X: y', 'a path holds at most one "*"'],
    ['/*/*.js\n  X: y', 'a path holds at most one "*"'],
  ])('%j is refused', (text, reason) => {
    expect(() => parseHeaders(text)).toThrow(reason);
    // At publish the same file fails the deploy, naming the line.
    expect(() => parseHeaders(text, { publish: true })).toThrow(UnsafeHeaderLine);
    expect(() => parseHeaders(text, { publish: true })).toThrow(/^_headers line \d+: /);
  });

  test('one "*" anywhere in a path matches across folders, and a long request path is matched at once', () => {
    const { rules } = parseHeaders('/*.css\n  X-Css: yes\n/assets/*\n  X-Assets: yes\n/a*b\n  X-Ab: yes');
    expect(headersFor(rules, '/themes/dark/site.css')).toEqual({ 'x-css': 'yes' });
    expect(headersFor(rules, '/assets/x/y.js')).toEqual({ 'x-assets': 'yes' });
    expect(headersFor(rules, '/a/deep/b')).toEqual({ 'x-ab': 'yes' });
    const started = process.hrtime.bigint();
    expect(headersFor(rules, `/${'a'.repeat(8000)}c`)).toEqual({});
    // Linear: far under a second even on a busy machine (two "*" took seconds for 40 characters).
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1000);
  });

  const unsafe: Array<[string, string, RegExp]> = [
    [
      '  X-Price: 5 €',
      'a value past ASCII (Node refuses it: a 500 on every matching request)',
      /line 3: the value of X-Price holds "€"; header values are visible ASCII/,
    ],
    ['  X-Name: café', "a Latin-1 letter (it would be sent as one byte, not as the file's UTF-8)", /line 3: the value of X-Name holds "é"/],
    ['  X-Bell: a\u0007b', 'a control character', /line 3: the value of X-Bell holds the control character U\+0007/],
    ['  Bad Name: x', 'a name with a space', /line 3: "Bad Name" is not a valid header name/],
    [
      '  Set-Cookie: s=1; Path=/; Domain=sites.example',
      'a cookie for the whole sites domain',
      /line 3: a cookie set by _headers stays with the site's own address: remove its Domain attribute/,
    ],
    ['  set-cookie: s=1;domain=.other.example;Secure', 'the same, spelt otherwise', /line 3: a cookie set by _headers/],
    ['  Set-Cookie: s=1; Secure; DOMAIN = x', 'the same, with spaces round "="', /line 3: a cookie set by _headers/],
  ];

  test.each(unsafe)('at publish, %j (%s) fails the deploy naming the line', (header, _why, message) => {
    const text = ['# site', '/*', header, '  X-Good: yes'].join('\n');
    let thrown: unknown;
    try {
      parseHeaders(text, { publish: true });
    } catch (err) {
      thrown = err;
    }
    // A PublishDirectoryError is a failure the deploy pipeline reports as the deploy's reason.
    expect(thrown).toBeInstanceOf(UnsafeHeaderLine);
    expect(thrown).toBeInstanceOf(PublishDirectoryError);
    expect((thrown as Error).message).toMatch(/^_headers line 3: /);
    expect((thrown as Error).message).toMatch(message);
  });

  test.each(unsafe)('when serving, %j (%s) is skipped with a warning and the other lines apply', (header, _why, message) => {
    const { rules, warnings } = parseHeaders(['# site', '/*', header, '  X-Good: yes'].join('\n'));
    expect(headersFor(rules, '/page')).toEqual({ 'x-good': 'yes' });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(message);
    expect(warnings[0]).toMatch(/; the line is ignored$/);
  });

  test('a host-only cookie (no Domain) is kept, attributes and all; an attribute that only mentions "domain" in a value is no Domain', () => {
    const cookie = 's=1; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=60';
    const { rules } = parseHeaders(`/*\n  Set-Cookie: ${cookie}\n/x\n  Set-Cookie: note=domain=x; Path=/x`, { publish: true });
    expect(headersFor(rules, '/')).toEqual({ 'set-cookie': cookie });
    expect(headersFor(rules, '/x')['set-cookie']).toContain('note=domain=x');
  });

  test('headersFor leaves out a header that cannot be sent, whatever made the rule', () => {
    const rules = [
      {
        line: 1,
        path: '/*',
        pattern: /^\/.*$/,
        headers: [
          ['x-ok', 'yes'],
          ['x-bad', 'a\r\nInjected: 1'],
          ['x-euro', '€'],
          ['set-cookie', 'a=1; Domain=sites.example'],
        ] as Array<[string, string]>,
      },
    ];
    expect(headersFor(rules, '/')).toEqual({ 'x-ok': 'yes' });
  });

  test("whatever unsendableHeader lets through, Node's http sends: every character up to U+02FF, in a name and in a value", () => {
    let accepted = 0;
    for (let code = 0; code <= 0x2ff; code++) {
      const ch = String.fromCharCode(code);
      const value = `a${ch}b`;
      if (unsendableHeader('x-test', value) === undefined) {
        accepted++;
        expect(() => validateHeaderValue('x-test', value)).not.toThrow();
      }
      if (unsendableHeader(`x${ch}`, 'v') === undefined) expect(() => validateHeaderName(`x${ch}`)).not.toThrow();
    }
    // Tab, space and the 94 visible ASCII characters.
    expect(accepted).toBe(96);
  });
});

describe('request paths', () => {
  test.each([
    ['/a/b.html', ['a', 'b.html'], false],
    ['/a/', ['a'], true],
    ['//a///b', ['a', 'b'], false],
    ['/../../etc/passwd', ['etc', 'passwd'], false],
    ['/a/%2e%2e/%2E%2E/%2e%2e/b', ['b'], false],
    ['/a/..%2f..%2fb', ['b'], false],
    ['/a%20b/c%2Fd', ['a b', 'c', 'd'], false],
    ['/a/..', [], true],
  ])('%s is %j', (raw, segments, trailingSlash) => {
    expect(contentPath(raw)).toEqual({ segments, trailingSlash });
  });

  test('NUL and malformed escapes are refused', () => {
    expect(() => contentPath('/a%00b')).toThrow(BadPathError);
    expect(() => contentPath('/a%zz')).toThrow(BadPathError);
  });
});

describe('site hosts', () => {
  const domain = 'sites.localhost:4002';
  test.each([
    ['hidden-waterfall-6189.sites.localhost:4002', { slug: 'hidden-waterfall-6189' }],
    ['Hidden-Waterfall-6189.SITES.localhost.', { slug: 'hidden-waterfall-6189' }],
    ['hidden-waterfall-6189.sites.localhost.:8080', { slug: 'hidden-waterfall-6189' }],
    ['0lx2abc123AbCdEfGhIjKl--My-Site.sites.localhost', { slug: 'my-site', deployLabel: '0lx2abc123abcdefghijkl' }],
    ['a--b.sites.localhost', { slug: 'a--b' }],
  ])('%s', (host, expected) => {
    expect(siteHost(host, domain)).toEqual(expected);
  });

  test.each(['sites.localhost', 'a.b.sites.localhost', 'a.storage.localhost', 'example.com'])('%s is no site host', (host) => {
    expect(siteHost(host, domain)).toBeUndefined();
  });
});

describe('Content-Type', () => {
  test('from the name, HTML with its charset', () => {
    expect(typeFromName('index.HTML')).toBe('text/html; charset=utf-8');
    expect(typeFromName('app.js')).toBe('text/javascript; charset=utf-8');
    expect(typeFromName('logo.svg')).toBe('image/svg+xml');
    expect(typeFromName('README')).toBeUndefined();
  });

  test('from the first bytes when the name says nothing', () => {
    expect(sniffType(Buffer.from('\n  <!DOCTYPE html><p>x'))).toBe('text/html; charset=utf-8');
    expect(sniffType(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]))).toBe('image/png');
    expect(sniffType(Buffer.from('%PDF-1.7'))).toBe('application/pdf');
    expect(sniffType(Buffer.from('just words\n'))).toBe('text/plain; charset=utf-8');
    expect(sniffType(Buffer.from([1, 2, 3, 0]))).toBe('application/octet-stream');
  });
});
