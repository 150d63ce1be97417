/**
 * The one outbound address policy (functions/core/net): the classifier's
 * verdict on each special-purpose range and on every IPv6 form that
 * carries an IPv4 address, a name resolved once (by a resolver the test
 * gives, so no test depends on DNS) and refused when any of its addresses
 * is, and the lookup and curl resolve list that pin a connection to what
 * was checked.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { classify, describe as describeAddress } from '../../functions/core/net/addresses.js';
import {
  checkAddress,
  curlResolve,
  OutboundRefused,
  pinnedLookup,
  REFUSAL_RULE,
  resolveOutbound,
  type Resolver,
} from '../../functions/core/net/outbound.js';
import { loadConfig, outboundRules } from '../../functions/core/config.js';

const refuse = { private: 'refuse' } as const;
const allow = { private: 'allow' } as const;
const resolvesTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses;

describe('classify', () => {
  test.each([
    // IPv4, each special-purpose range
    ['0.0.0.0', 'unspecified ("this network")'],
    ['0.1.2.3', 'unspecified ("this network")'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT (shared)'],
    ['100.127.255.254', 'carrier-grade NAT (shared)'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['192.0.0.192', 'IETF protocol assignment (reserved)'],
    ['192.0.2.1', 'documentation (reserved)'],
    ['198.51.100.7', 'documentation (reserved)'],
    ['203.0.113.9', 'documentation (reserved)'],
    ['198.18.0.1', 'benchmarking (reserved)'],
    ['198.19.255.1', 'benchmarking (reserved)'],
    ['192.88.99.1', '6to4 relay anycast (reserved)'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    // IPv6, each special-purpose range
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'unique-local (private)'],
    ['fd00:ec2::254', 'unique-local (private)'],
    ['fec0::1', 'site-local (private)'],
    ['ff02::1', 'multicast'],
    ['100::1', 'discard-only (reserved)'],
    ['2001:db8::1', 'documentation (reserved)'],
    ['3fff::1', 'documentation (reserved)'],
    ['2001:2::1', 'benchmarking (reserved)'],
    ['2001:10::1', 'ORCHID (reserved)'],
    ['2001:20::1', 'ORCHIDv2 (reserved)'],
    ['5f00::1', 'segment routing (reserved)'],
  ])('%s is %s', (address, kind) => {
    expect(classify(address)).toMatchObject({ public: false, kind });
    expect(() => checkAddress(address, refuse)).toThrow(OutboundRefused);
    expect(() => checkAddress(address, allow)).not.toThrow();
  });

  test.each([
    ['8.8.8.8'],
    ['1.1.1.1'],
    ['172.32.0.1'], // just past 172.16/12
    ['100.128.0.1'], // just past 100.64/10
    ['169.255.0.1'],
    ['2606:4700:4700::1111'],
    ['2a00:1450:4001:80b::200e'],
  ])('%s is public', (address) => {
    expect(classify(address)).toMatchObject({ public: true, kind: 'public' });
    expect(() => checkAddress(address, refuse)).not.toThrow();
  });

  test.each([
    // Each form that carries an IPv4 address: the IPv4 address's verdict, whatever the form.
    ['::ffff:127.0.0.1', 'IPv4-mapped', '127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped', '127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'IPv4-mapped', '169.254.169.254', 'link-local'],
    ['::ffff:10.1.2.3', 'IPv4-mapped', '10.1.2.3', 'private'],
    ['::127.0.0.1', 'IPv4-compatible', '127.0.0.1', 'loopback'],
    ['::7f00:1', 'IPv4-compatible', '127.0.0.1', 'loopback'],
    ['::a9fe:a9fe', 'IPv4-compatible', '169.254.169.254', 'link-local'],
    ['::ffff:0:127.0.0.1', 'IPv4-translated', '127.0.0.1', 'loopback'],
    ['::ffff:0:a00:1', 'IPv4-translated', '10.0.0.1', 'private'],
    ['64:ff9b::7f00:1', 'NAT64', '127.0.0.1', 'loopback'],
    ['64:ff9b::169.254.169.254', 'NAT64', '169.254.169.254', 'link-local'],
    ['64:ff9b:1::7f00:1', 'local-use NAT64', '127.0.0.1', 'loopback'],
    ['64:ff9b:1::c0a8:1', 'local-use NAT64', '192.168.0.1', 'private'],
    ['2002:7f00:1::', '6to4', '127.0.0.1', 'loopback'],
    ['2002:a9fe:a9fe::1', '6to4', '169.254.169.254', 'link-local'],
    ['2002:6440:1::', '6to4', '100.64.0.1', 'carrier-grade NAT (shared)'],
    // Teredo: the client's address, inverted (~127.0.0.1 = 80ff:fffe).
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo', '127.0.0.1', 'loopback'],
  ])('%s, the %s form of %s, is %s', (address, form, ipv4, kind) => {
    const c = classify(address);
    expect(c).toMatchObject({ public: false, kind, carries: { form, ipv4 } });
    expect(() => checkAddress(address, refuse)).toThrow(
      new RegExp(
        `${form} form of ${ipv4.replace(/\./g, '\\.')}, an? ${kind.replace(/[()]/g, '\\$&')} address: ${REFUSAL_RULE.replace(/[()]/g, '\\$&')}`,
      ),
    );
  });

  test('a form carrying a public IPv4 address is public, except local-use NAT64 and Teredo, which never are', () => {
    expect(classify('::ffff:8.8.8.8')).toMatchObject({ public: true, carries: { form: 'IPv4-mapped', ipv4: '8.8.8.8' } });
    expect(classify('64:ff9b::808:808')).toMatchObject({ public: true, carries: { form: 'NAT64', ipv4: '8.8.8.8' } });
    expect(classify('2002:808:808::1')).toMatchObject({ public: true, carries: { form: '6to4', ipv4: '8.8.8.8' } });
    expect(classify('64:ff9b:1::808:808')).toMatchObject({ public: false, kind: 'local-use NAT64 (not globally reachable)' });
    expect(classify('2001:0:4136:e378:8000:63bf:f7f7:f7f7')).toMatchObject({ public: false, kind: 'Teredo tunnel' });
  });

  test("what is not an IP address in Node's reading is never public (numeric forms only a resolver would turn into one)", () => {
    for (const input of ['0x7f.1', '2130706433', '0177.0.0.1', 'localhost', '', '1.2.3', '::ffff:1.2.3.4.5']) {
      expect(classify(input)).toMatchObject({ public: false, kind: 'not an IP address' });
    }
  });

  test('messages name the address, what it is and the rule', () => {
    expect(() => checkAddress('127.0.0.1', refuse)).toThrow(`127.0.0.1 is a loopback address: ${REFUSAL_RULE}`);
    expect(REFUSAL_RULE).toBe('outbound requests to private addresses are refused (CAIRN_OUTBOUND_PRIVATE=allow allows them)');
    expect(describeAddress(classify('[::ffff:0:127.0.0.1]'))).toBe(
      '::ffff:0:7f00:1 is an IPv4-translated form of 127.0.0.1, a loopback address',
    );
  });
});

describe('resolveOutbound', () => {
  test('an address literal is checked as it is, never resolved', async () => {
    const never: Resolver = async () => {
      throw new Error('resolved');
    };
    await expect(resolveOutbound('https://8.8.8.8/x', refuse, never)).resolves.toEqual({
      host: '8.8.8.8',
      port: 443,
      literal: true,
      addresses: [{ address: '8.8.8.8', family: 4 }],
    });
    await expect(resolveOutbound('http://[::ffff:127.0.0.1]:8080/x', refuse, never)).rejects.toThrow(
      /::ffff:7f00:1 is an IPv4-mapped form of 127\.0\.0\.1, a loopback address/,
    );
    // The URL parser's normal form: 0177.0.0.1 and 2130706433 are 127.0.0.1 by then.
    await expect(resolveOutbound('http://0177.0.0.1/x', refuse, never)).rejects.toThrow(/^127\.0\.0\.1 is a loopback/);
    await expect(resolveOutbound('http://2130706433/x', refuse, never)).rejects.toThrow(/^127\.0\.0\.1 is a loopback/);
    await expect(resolveOutbound('http://127.0.0.1:9/x', allow, never)).resolves.toMatchObject({ literal: true, port: 9 });
  });

  test('a name is resolved once; refused when any of its addresses is, the first refused one named', async () => {
    let calls = 0;
    const counting: Resolver = async () => {
      calls++;
      return ['93.184.216.34', '10.1.2.3', '127.0.0.1'];
    };
    await expect(resolveOutbound('https://git.example.com/a/b', refuse, counting)).rejects.toThrow(
      `git.example.com resolves to 10.1.2.3, a private address: ${REFUSAL_RULE}`,
    );
    expect(calls).toBe(1);
    await expect(resolveOutbound('https://h.example/x', refuse, resolvesTo('2606:4700::1', 'fd00:ec2::254'))).rejects.toThrow(
      /h\.example resolves to fd00:ec2::254, a unique-local \(private\) address/,
    );
    await expect(resolveOutbound('https://h.example/x', refuse, resolvesTo('::ffff:169.254.169.254'))).rejects.toThrow(
      /resolves to ::ffff:a9fe:a9fe, an IPv4-mapped form of 169\.254\.169\.254, a link-local address/,
    );
    await expect(resolveOutbound('https://h.example/x', refuse, resolvesTo('not-an-address'))).rejects.toThrow(OutboundRefused);
    await expect(resolveOutbound('https://h.example:8443/x', refuse, resolvesTo('93.184.216.34', '2606:4700::1'))).resolves.toEqual({
      host: 'h.example',
      port: 8443,
      literal: false,
      addresses: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:4700::1', family: 6 },
      ],
    });
  });

  test('where private addresses are allowed a name is still resolved once, and pinned', async () => {
    await expect(resolveOutbound('http://git.test:81/a/b', allow, resolvesTo('127.0.0.1'))).resolves.toEqual({
      host: 'git.test',
      port: 81,
      literal: false,
      addresses: [{ address: '127.0.0.1', family: 4 }],
    });
  });

  test('names of this machine (localhost and its subdomains) are refused without asking anyone, whatever a resolver would say', async () => {
    await expect(resolveOutbound('http://localhost:8080/x', refuse, resolvesTo('93.184.216.34'))).rejects.toThrow(
      `localhost names this machine, a loopback address: ${REFUSAL_RULE}`,
    );
    await expect(resolveOutbound('http://api.LOCALHOST./x', refuse, resolvesTo('93.184.216.34'))).rejects.toThrow(
      /api\.localhost\. names this machine/,
    );
    await expect(resolveOutbound('http://localhost.example.com/x', refuse, resolvesTo('93.184.216.34'))).resolves.toMatchObject({
      literal: false,
    });
  });

  test("the system resolver's answer is checked too: this machine's own name leads to a loopback or private address", async () => {
    const { hostname } = await import('node:os');
    await expect(resolveOutbound(`http://${hostname()}/x`, refuse)).rejects.toThrow(
      new RegExp(`^${hostname()} resolves to \\S+, an? [^:]+ address: ${REFUSAL_RULE.replace(/[()]/g, '\\$&')}`),
    );
  });

  test("a name that does not resolve fails with the resolver's error, not a refusal", async () => {
    const err = await resolveOutbound('https://nowhere.example/x', refuse, async () => []).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(OutboundRefused);
    expect((err as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
  });
});

describe('pinning', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((req, res) => res.end(`host ${req.headers.host}`));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const get = (url: string, lookup: ReturnType<typeof pinnedLookup>) =>
    new Promise<{ body?: string; error?: Error }>((resolve) => {
      const req = httpRequest(url, { lookup, agent: false }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ body }));
      });
      req.on('error', (error) => resolve({ error }));
      req.end();
    });

  test('a request connects to the checked address, whatever the name would resolve to, and keeps the name as its Host', async () => {
    // cairn-pinned.test resolves nowhere (.test is reserved, RFC 6761): only the pin can have connected it.
    const target = await resolveOutbound(`http://cairn-pinned.test:${port}/`, allow, resolvesTo('127.0.0.1'));
    expect(await get(`http://cairn-pinned.test:${port}/`, pinnedLookup(target))).toEqual({ body: `host cairn-pinned.test:${port}` });
  });

  test('a lookup of another name than the checked one fails (only a redirect could ask it)', async () => {
    const target = await resolveOutbound(`http://cairn-pinned.test:${port}/`, allow, resolvesTo('127.0.0.1'));
    const { error } = await get(`http://other.test:${port}/`, pinnedLookup(target));
    expect(error).toBeInstanceOf(OutboundRefused);
    expect(error?.message).toMatch(/other\.test was not checked/);
  });

  test("git's resolve list: host, port and every checked address, IPv6 in brackets; none for a literal", async () => {
    expect(curlResolve(await resolveOutbound('https://git.example.com/a/b', refuse, resolvesTo('93.184.216.34', '2606:4700::1')))).toBe(
      'git.example.com:443:93.184.216.34,[2606:4700::1]',
    );
    expect(curlResolve(await resolveOutbound('http://git.example.com:8080/a/b', refuse, resolvesTo('93.184.216.34')))).toBe(
      'git.example.com:8080:93.184.216.34',
    );
    expect(curlResolve(await resolveOutbound('https://8.8.8.8/a/b', refuse))).toBeUndefined();
  });
});

describe('config', () => {
  test('refuse by default, in AWS and locally; CAIRN_OUTBOUND_PRIVATE=allow allows', () => {
    expect(loadConfig({}).outbound).toEqual(refuse);
    expect(loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'f' }).outbound).toEqual(refuse);
    expect(loadConfig({ CAIRN_OUTBOUND_PRIVATE: 'allow' }).outbound).toEqual(allow);
    expect(() => loadConfig({ CAIRN_OUTBOUND_PRIVATE: 'sometimes' })).toThrow(/^CAIRN_OUTBOUND_PRIVATE: /);
  });

  test("the notifications' old variable still says it where the new one is unset (deprecated), now for every request", () => {
    expect(outboundRules({ CAIRN_NOTIFICATION_PRIVATE_ADDRESSES: 'true' })).toEqual(allow);
    expect(outboundRules({ CAIRN_NOTIFICATION_PRIVATE_ADDRESSES: 'off' })).toEqual(refuse);
    expect(outboundRules({ CAIRN_NOTIFICATION_PRIVATE_ADDRESSES: 'true', CAIRN_OUTBOUND_PRIVATE: 'refuse' })).toEqual(refuse);
    expect(() => outboundRules({ CAIRN_NOTIFICATION_PRIVATE_ADDRESSES: 'maybe' })).toThrow(/CAIRN_NOTIFICATION_PRIVATE_ADDRESSES/);
  });
});
