/**
 * The guard on notification URLs (no requests into the VPC or to the
 * metadata service where the service runs in AWS) and the signature
 * receivers verify. The AWS rule is turned on the way a Lambda gets it:
 * loadConfig with AWS_LAMBDA_FUNCTION_NAME set. Names are resolved by stub
 * resolvers, so no test depends on DNS.
 */
import { createServer, type Server } from 'node:http';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { loadConfig } from '../../functions/core/config.js';
import { checkNotificationUrl, guardedLookup, isRefusedAddress, NotificationUrlError, type Resolver } from '../../functions/core/hosting/notification-urls.js';
import { postNotification } from '../../functions/core/hosting/notifications.js';
import { signNotification, verifyNotification } from '../../functions/core/hosting/notification-signature.js';

const aws = loadConfig({ AWS_LAMBDA_FUNCTION_NAME: 'cairn-graphql' }).notifications;
const local = loadConfig({}).notifications;
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

test('the config turns private addresses off in AWS and on locally, and can say otherwise', () => {
  expect(aws.allowPrivateAddresses).toBe(false);
  expect(local.allowPrivateAddresses).toBe(true);
  expect(loadConfig({ CAIRN_NOTIFICATION_PRIVATE_ADDRESSES: 'off' }).notifications.allowPrivateAddresses).toBe(false);
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
  ['https://0.0.0.0/hook', /0\.0\.0\.0/],
  ['https://100.64.0.1/hook', /100\.64\.0\.1/],
])('in AWS %s is refused', async (url, named) => {
  expect(await refusedWith(url)).toMatch(named);
});

test('in AWS a name that resolves to loopback, private or metadata addresses is refused, even one of several', async () => {
  expect(await refusedWith('https://hooks.example.com/x', resolvesTo('127.0.0.1'))).toMatch(/127\.0\.0\.1.*public addresses only/);
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
  expect(isRefusedAddress('8.8.8.8')).toBe(false);
  expect(isRefusedAddress('172.32.0.1')).toBe(false);
  expect(isRefusedAddress('2606:2800:220:1::1')).toBe(false);
});

test('locally loopback and http:// are allowed (a receiver on this machine), without resolving anything', async () => {
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
  await expect(checkNotificationUrl(`https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`, aws, publicResolver)).resolves.toBeInstanceOf(URL);
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

  /** A resolver for node:dns's lookup signature answering `address` for any name. */
  const stubLookup = (address: string) =>
    ((_: string, __: object, cb: (err: Error | null, addresses: LookupAddress[]) => void) => cb(null, [{ address, family: address.includes(':') ? 6 : 4 }])) as never;

  const get = (lookup: ReturnType<typeof guardedLookup>) =>
    new Promise<{ status?: number; code?: string }>((resolve) => {
      const req = httpRequest(`http://receiver.test:${port}/`, { lookup, agent: false }, (res) => {
        res.resume();
        resolve({ status: res.statusCode });
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve({ code: err.code }));
      req.end();
    });

  test('a name whose answer turned to loopback is not connected to: the check is on the connection', async () => {
    connections = 0;
    expect(await get(guardedLookup(stubLookup('127.0.0.1')))).toEqual({ code: 'EREFUSEDADDRESS' });
    expect(connections).toBe(0);
    // The same lookup path connects when the answer is allowed (here: the stub's loopback, unguarded).
    expect(await get(stubLookup('127.0.0.1'))).toEqual({ status: 200 });
    expect(connections).toBe(1);
  });

  test('an address literal is refused without connecting; locally the same URL is delivered', async () => {
    connections = 0;
    const refused = await postNotification(`https://127.0.0.1:${port}/`, '{}', {}, { allowPrivateAddresses: false });
    expect(refused.statusCode).toBeUndefined();
    expect(refused.error).toMatch(/127\.0\.0\.1 is a loopback/);
    expect(connections).toBe(0);
    expect(await postNotification(`http://127.0.0.1:${port}/`, '{}', {}, { allowPrivateAddresses: true })).toEqual({ statusCode: 200 });
    expect(connections).toBe(1);
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
    expect(verifyNotification(secret, header.replace(`t=${now}`, `t=${now + 1000}`), body, { now: now + 1000 })).toEqual({ ok: false, reason: 'mismatch' });
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
