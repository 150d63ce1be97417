/**
 * The guard on notification URLs (no requests into the service's network
 * or to the metadata service where private addresses are refused, the
 * default: functions/core/net/outbound.ts) and the signature receivers
 * verify. Names are resolved by stub resolvers, so no test depends on DNS.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../functions/core/config.js';
import { checkNotificationUrl, NotificationUrlError, type Resolver } from '../../functions/core/hosting/notification-urls.js';
import { postNotification } from '../../functions/core/hosting/notifications.js';
import { signNotification, verifyNotification } from '../../functions/core/hosting/notification-signature.js';

const aws = loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'cairn-graphql' }).outbound;
const local = loadConfig({ CAIRN_OUTBOUND_PRIVATE: 'allow' }).outbound;
const publicResolver: Resolver = async () => ['93.184.216.34'];
const resolvesTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses;

const refusedWith = async (url: string, resolver: Resolver = publicResolver) => {
  const err = await checkNotificationUrl(url, aws, resolver).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(NotificationUrlError);
  return (err as Error).message;
};

test('the config refuses private addresses in AWS and locally unless told otherwise', () => {
  expect(aws.private).toBe('refuse');
  expect(loadConfig({}).outbound.private).toBe('refuse');
  expect(local.private).toBe('allow');
  expect(loadConfig({ CAIRN_NOTIFICATION_RETRY_BASE: '2' }).notifications.retryBaseSeconds).toBe(2);
  expect(() => loadConfig({ CAIRN_NOTIFICATION_RETRY_BASE: '0' })).toThrow(/CAIRN_NOTIFICATION_RETRY_BASE/);
});

test.each([
  ['https://127.0.0.1/hook', /127\.0\.0\.1/],
  ['https://127.1.2.3:8443/hook', /127\.1\.2\.3/],
  ['https://[::1]/hook', /::1/],
  ['https://10.0.0.5/hook', /10\.0\.0\.5/],
  ['https://172.20.1.1/hook', /172\.20\.1\.1/],
  ['https://192.168.0.10/hook', /192\.168\.0\.10/],
  ['https://169.254.169.254/latest/meta-data/', /169\.254\.169\.254/],
  ['https://[fd00::1]/hook', /fd00::1/],
  ['https://[fd00:ec2::254]/latest/meta-data/', /fd00:ec2::254/],
  ['https://[fe80::1]/hook', /fe80::1/],
  ['https://[::ffff:127.0.0.1]/hook', /::ffff:7f00:1/],
  ['https://[::ffff:169.254.169.254]/hook', /::ffff:a9fe:a9fe/],
  ['https://[::127.0.0.1]/hook', /::7f00:1 is an IPv4-compatible form of 127\.0\.0\.1/],
  ['https://[::ffff:0:127.0.0.1]/hook', /::ffff:0:7f00:1 is an IPv4-translated form of 127\.0\.0\.1/],
  ['https://[64:ff9b:1::7f00:1]/hook', /64:ff9b:1::7f00:1 is a local-use NAT64 form of 127\.0\.0\.1/],
  ['https://[64:ff9b::a9fe:a9fe]/hook', /NAT64 form of 169\.254\.169\.254/],
  ['https://[2002:7f00:1::]/hook', /2002:7f00:1:: is a 6to4 form of 127\.0\.0\.1/],
  ['https://0.0.0.0/hook', /0\.0\.0\.0/],
  ['https://100.64.0.1/hook', /100\.64\.0\.1/],
])('in AWS %s is refused', async (url, named) => {
  const message = await refusedWith(url);
  expect(message).toMatch(named);
  expect(message).toMatch(/CAIRN_OUTBOUND_PRIVATE=allow/);
});

test('in AWS a name that resolves to loopback, private or metadata addresses is refused, even one of several', async () => {
  expect(await refusedWith('https://hooks.example.com/x', resolvesTo('127.0.0.1'))).toMatch(
    /hooks\.example\.com resolves to 127\.0\.0\.1, a loopback address: outbound requests to private addresses are refused/,
  );
  expect(await refusedWith('https://hooks.example.com/x', resolvesTo('64:ff9b::7f00:1'))).toMatch(/NAT64 form of 127\.0\.0\.1/);
  expect(await refusedWith('https://hooks.example.com/x', resolvesTo('93.184.216.34', '10.1.2.3'))).toMatch(/10\.1\.2\.3/);
  expect(await refusedWith('https://hooks.example.com/x', resolvesTo('2606:2800:220:1::1', 'fd00:ec2::254'))).toMatch(/fd00:ec2::254/);
  expect(await refusedWith('https://localhost/x')).toMatch(/localhost/);
  expect(await refusedWith('https://nowhere.example/x', async () => Promise.reject(new Error('ENOTFOUND')))).toMatch(/does not resolve/);
  expect(await refusedWith('http://hooks.example.com/x')).toMatch(/https:\/\//);
});

test('in AWS a name resolving to public addresses, or a public address, is taken', async () => {
  await expect(checkNotificationUrl('https://hooks.example.com/cairn?x=1', aws, publicResolver)).resolves.toBeInstanceOf(URL);
  await expect(checkNotificationUrl('https://hooks.example.com/x', aws, resolvesTo('2606:2800:220:1::1'))).resolves.toBeInstanceOf(URL);
  await expect(checkNotificationUrl('https://8.8.8.8/x', aws)).resolves.toBeInstanceOf(URL);
  await expect(checkNotificationUrl('https://172.32.0.1/x', aws)).resolves.toBeInstanceOf(URL);
  await expect(checkNotificationUrl('https://[2606:2800:220:1::1]/x', aws)).resolves.toBeInstanceOf(URL);
});

test('where private addresses are allowed, loopback and http:// are (a receiver on this machine), without resolving anything', async () => {
  const never: Resolver = async () => {
    throw new Error('resolved');
  };
  await expect(checkNotificationUrl('http://127.0.0.1:9999/hook', local, never)).resolves.toBeInstanceOf(URL);
  await expect(checkNotificationUrl('http://localhost:9999/hook', local, never)).resolves.toBeInstanceOf(URL);
});

test.each([
  ['empty', '', /empty/],
  ['with a space', 'not a url', /spaces|absolute/],
  ['relative', '/relative/path', /absolute/],
  ['ftp', 'ftp://example.com/x', /http/],
  ['with user and password', 'https://alice:s3cr3t@example.com/x', /credentials/],
  ['with a token as user', 'https://tok3n@example.com/x', /credentials/],
  ['2049 characters long', `https://example.com/${'a'.repeat(2049 - 'https://example.com/'.length)}`, /2048/],
])('anywhere a URL %s is refused by its shape', async (_, url, why) => {
  for (const rules of [local, aws]) {
    const err = await checkNotificationUrl(url, rules, publicResolver).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NotificationUrlError);
    expect((err as Error).message).toMatch(why);
    expect((err as Error).message).not.toMatch(/s3cr3t|tok3n/);
  }
  await expect(
    checkNotificationUrl(`https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`, aws, publicResolver),
  ).resolves.toBeInstanceOf(URL);
});

describe('at delivery time', () => {
  let server: Server;
  let port: number;
  let connections = 0;
  beforeAll(async () => {
    server = createServer((_, res) => res.end('ok'));
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  test('a name resolving to loopback is not connected to: resolved once, refused before any connection', async () => {
    connections = 0;
    let asked = 0;
    const resolver: Resolver = async () => {
      asked++;
      return ['127.0.0.1'];
    };
    const refused = await postNotification(`https://receiver.test:${port}/`, '{}', {}, { outbound: aws, resolver });
    expect(refused).toEqual({
      error: expect.stringMatching(
        /^receiver\.test resolves to 127\.0\.0\.1, a loopback address: outbound requests to private addresses are refused/,
      ),
      refused: true,
    });
    expect(asked).toBe(1);
    expect(connections).toBe(0);
  });

  test('the connection goes to the address checked, not to what the name resolves to at connect time', async () => {
    connections = 0;
    // receiver.test resolves nowhere (.test is reserved): only the checked address can have been connected to.
    expect(
      await postNotification(`http://receiver.test:${port}/`, '{}', {}, { outbound: local, resolver: async () => ['127.0.0.1'] }),
    ).toEqual({ statusCode: 200 });
    expect(connections).toBe(1);
  });

  test('an address literal is refused without connecting, in any IPv4-in-IPv6 form; allowed, the same URL is delivered', async () => {
    connections = 0;
    for (const host of [
      '127.0.0.1',
      '[::ffff:127.0.0.1]',
      '[::127.0.0.1]',
      '[::ffff:0:127.0.0.1]',
      '[64:ff9b:1::7f00:1]',
      '[2002:7f00:1::]',
    ]) {
      const refused = await postNotification(`https://${host}:${port}/`, '{}', {}, { outbound: aws });
      expect(refused.statusCode).toBeUndefined();
      expect(refused.refused).toBe(true);
      expect(refused.error).toMatch(
        /127\.0\.0\.1, a loopback address: outbound requests to private addresses are refused|^127\.0\.0\.1 is a loopback/,
      );
    }
    expect(connections).toBe(0);
    expect(await postNotification(`http://127.0.0.1:${port}/`, '{}', {}, { outbound: local })).toEqual({ statusCode: 200 });
    expect(connections).toBe(1);
  });

  test('a redirect is an answer, not followed', async () => {
    const redirecting = createServer((_, res) => res.writeHead(307, { location: `http://127.0.0.1:${port}/` }).end());
    await new Promise<void>((r) => redirecting.listen(0, '127.0.0.1', () => r()));
    try {
      connections = 0;
      const at = (redirecting.address() as AddressInfo).port;
      expect(await postNotification(`http://127.0.0.1:${at}/`, '{}', {}, { outbound: local })).toEqual({ statusCode: 307 });
      expect(connections).toBe(0);
    } finally {
      await new Promise<void>((r) => redirecting.close(() => r()));
    }
  });
});

describe('signatures', () => {
  const secret = 'whsec_test';
  const body = JSON.stringify({ event: 'FAILED', deploy: { id: 'd1' } });
  const now = 1_800_000_000;

  test('a signature made for the body at t verifies within the window', () => {
    const header = signNotification(secret, body, now);
    expect(header).toMatch(/^t=1800000000,sha256=[0-9a-f]{64}$/);
    expect(verifyNotification(secret, header, body, { now })).toEqual({ ok: true, timestamp: now });
    expect(verifyNotification(secret, header, Buffer.from(body), { now: now + 299 })).toEqual({ ok: true, timestamp: now });
  });

  test('another body, another secret, another t or a mangled header does not verify', () => {
    const header = signNotification(secret, body, now);
    expect(verifyNotification(secret, header, body.replace('d1', 'd2'), { now })).toEqual({ ok: false, reason: 'mismatch' });
    expect(verifyNotification('whsec_other', header, body, { now })).toEqual({ ok: false, reason: 'mismatch' });
    // Moving t to pass the window breaks the HMAC, which covers it.
    expect(verifyNotification(secret, header.replace(`t=${now}`, `t=${now + 1000}`), body, { now: now + 1000 })).toEqual({
      ok: false,
      reason: 'mismatch',
    });
    for (const bad of [undefined, '', 'sha256=abc', `t=${now}`, `t=x,sha256=${'0'.repeat(64)}`, header.slice(0, -1)]) {
      expect(verifyNotification(secret, bad, body, { now })).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  test('a recorded delivery replayed after the window is refused', () => {
    const header = signNotification(secret, body, now);
    expect(verifyNotification(secret, header, body, { now: now + 301 })).toEqual({ ok: false, reason: 'expired' });
    expect(verifyNotification(secret, header, body, { now: now - 301 })).toEqual({ ok: false, reason: 'expired' });
    expect(verifyNotification(secret, header, body, { now: now + 3600, toleranceSeconds: 3600 })).toEqual({ ok: true, timestamp: now });
  });
});
