/**
 * `cairn login` in the browser (RFC 8628's device flow), the real binary
 * against a local service: the command prints a code and waits; the test,
 * as the person, signs in over /auth/sign-in with an identity it made and
 * approves the code (or denies it); then `cairn whoami --json` reports the
 * storage key pair as `apiKey` and `apiSecret`, which the S3 API takes,
 * and `cairn logout` revokes both the pair and the API key login made.
 * test/web-app/device-login-browser.test.ts approves on the web page in
 * Chromium instead.
 */
import { readFile, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { hashPassword } from '../../functions/core/auth/passwords.js';
import { freePort, startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { startFaultyProxy, type FaultyProxy, type ProxiedRequest } from '../support/faulty-proxy.js';
import { newCliUser, type CliUser } from './cli-runner.js';

let service: TestService;
let ada: AccountFixture;
let gql: ReturnType<typeof graphqlClient>;
let apiUrl: string;
const users: CliUser[] = [];
const PASSWORD = 'correct horse battery staple';
const EMAIL = `ada-${process.pid}@example.org`;

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off' });
  ada = await newAccount(service, 'device-cli');
  await service.services.people.add(ada.account.id, EMAIL, await hashPassword(PASSWORD));
  gql = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
  apiUrl = service.endpoints.graphql.replace(/\/graphql$/, '');
}, 120_000);
afterAll(async () => {
  await Promise.all(users.map((u) => u.cleanup()));
  await service?.close();
});

async function user(): Promise<CliUser> {
  const u = await newCliUser();
  users.push(u);
  return u;
}

const s3With = (accessKeyId: string, secretAccessKey: string) =>
  new S3Client({
    endpoint: service.endpoints.s3,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
    maxAttempts: 1,
  });

/** The person's browser: signed in with e-mail and password, holding the cookie and the CSRF token. */
async function signIn(): Promise<Record<string, string>> {
  const res = await fetch(`${apiUrl}/auth/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { csrfToken: string };
  return { cookie: res.headers.getSetCookie()[0]!.split(';')[0]!, 'x-csrf-token': body.csrfToken };
}

/** Waits for the running login to print its code (on stderr). */
async function codeFrom(running: ReturnType<CliUser['start']>): Promise<{ code: string; page: string }> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    const { stderr } = running.output();
    const code = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1];
    const page = /go straight to (\S+)\)/.exec(stderr)?.[1];
    if (code && page) return { code, page };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`cairn login printed no code in 30 s: ${JSON.stringify(running.output())}`);
}

async function decide(decision: 'approve' | 'deny', code: string, headers: Record<string, string>): Promise<void> {
  const res = await fetch(`${apiUrl}/auth/device/${decision}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ user_code: code }),
  });
  expect(res.status).toBe(200);
}

// A login waits for the command line's next poll (5 s by default; the back-off tests, seconds more):
// the logins run side by side, each its own command line, config and device code. Jest starts five
// concurrent tests at once (maxConcurrency) in the order they are written, the next as one ends: the
// longest waits come first, so that none of them starts late and lengthens the suite. The tests that
// start the command line without a login run after them, not in the approvals' window.
describe('cairn login in the browser', () => {
  // Each with a proxy of its own: its requests are that login's alone.
  describe('polling (RFC 8628 §3.5), through a proxy playing the network', () => {
    const polls = (proxy: FaultyProxy) => proxy.requests().filter((r) => r.path === '/auth/device/token');
    const gaps = (requests: ProxiedRequest[]) => requests.slice(1).map((r, i) => r.at - requests[i]!.at);
    /** The service's answer to the code request with a 1 s interval: the command line's waits are then counted in seconds. */
    const oneSecond = (body: string) => JSON.stringify({ ...JSON.parse(body), interval: 1 });
    /** A proxy planned by `plan`, closed when the test ends whatever happens. */
    async function proxied(plan: Parameters<typeof startFaultyProxy>[1], body: (proxy: FaultyProxy) => Promise<void>) {
      const proxy = await startFaultyProxy(apiUrl, plan);
      try {
        await body(proxy);
      } finally {
        await proxy.close();
      }
    }

    test.concurrent(
      'five polls in a row with no answer: login gives up with one line saying why, nothing stored',
      async () => {
        const plan = (request: ProxiedRequest) =>
          request.path === '/auth/device/code' ? { forward: true as const, rewrite: oneSecond } : { drop: true as const };
        await proxied(plan, async (proxy) => {
          const u = await user();
          const running = u.start(['login', '--device', '--no-browser', '--api-url', proxy.url]);
          const done = await running.done;
          expect(done.code).toBe(1);
          expect(polls(proxy).map((r) => r.outcome)).toEqual(Array(5).fill('dropped'));
          const waits = gaps(polls(proxy));
          [2, 4, 8, 16].forEach((seconds, i) => {
            expect(waits[i]).toBeGreaterThanOrEqual(seconds * 1000 - 50);
            expect(waits[i]).toBeLessThan(seconds * 1000 + 1500);
          });
          expect(done.stderr.trim().split('\n').pop()).toMatch(
            /^cairn: cannot reach the API at http:\/\/127\.0\.0\.1:\d+: .+ \(5 polls in a row failed\): check the connection, then run cairn login again$/,
          );
          await expect(stat(u.configPath)).rejects.toThrow();
        });
      },
      90_000,
    );

    test.concurrent(
      'slow_down: the next poll waits the interval and 5 s more, and is answered',
      async () => {
        let first = true;
        const plan = async (request: ProxiedRequest) => {
          if (request.path === '/auth/device/token' && first) {
            first = false;
            // Someone polls with the same device code just before the command line's first poll, which so comes too soon.
            const early = await fetch(`${apiUrl}/auth/device/token`, {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: request.body,
            });
            expect(((await early.json()) as { error: string }).error).toBe('authorization_pending');
          }
          return { forward: true as const };
        };
        await proxied(plan, async (proxy) => {
          const u = await user();
          const running = u.start(['login', '--device', '--no-browser', '--api-url', proxy.url, '--json']);
          const { code } = await codeFrom(running);
          const until = Date.now() + 20_000;
          while (polls(proxy).length === 0 || polls(proxy)[0]!.outcome === undefined) {
            if (Date.now() > until) throw new Error(`no poll in 20 s: ${JSON.stringify(running.output())}`);
            await new Promise((r) => setTimeout(r, 50));
          }
          expect([polls(proxy)[0]!.outcome, JSON.parse(polls(proxy)[0]!.answer!)]).toEqual([
            400,
            expect.objectContaining({ error: 'slow_down', interval: 10 }),
          ]);
          await decide('approve', code, await signIn());
          const done = await running.done;
          expect(done.code).toBe(0);
          const answered = polls(proxy);
          expect(answered.map((r) => r.outcome)).toEqual([400, 200]);
          expect(gaps(answered)[0]).toBeGreaterThanOrEqual(9_900);
        });
      },
      60_000,
    );

    test.concurrent(
      'a poll with no answer or a server error is tried again after waits that double from the interval',
      async () => {
        let tokenPolls = 0;
        const plan = (request: ProxiedRequest) => {
          if (request.path === '/auth/device/code') return { forward: true as const, rewrite: oneSecond };
          if (request.path !== '/auth/device/token') return { forward: true as const };
          tokenPolls += 1;
          return tokenPolls === 1
            ? { drop: true as const }
            : tokenPolls === 2
              ? { status: 503, body: 'Service Unavailable', headers: { 'content-type': 'text/plain' } }
              : { forward: true as const };
        };
        await proxied(plan, async (proxy) => {
          const u = await user();
          const running = u.start(['login', '--device', '--no-browser', '--api-url', proxy.url, '--json']);
          await decide('approve', (await codeFrom(running)).code, await signIn());
          const done = await running.done;
          expect(done.code).toBe(0);
          expect(polls(proxy).map((r) => r.outcome)).toEqual(['dropped', 503, 200]);
          const [afterDrop, after503] = gaps(polls(proxy));
          expect(afterDrop).toBeGreaterThanOrEqual(1_950);
          expect(afterDrop).toBeLessThan(3_500);
          expect(after503).toBeGreaterThanOrEqual(3_950);
          expect(after503).toBeLessThan(5_500);
          expect(done.stderr).toMatch(/cannot reach the API at http:\/\/127\.0\.0\.1:\d+: .+: trying again in 2 s\n/);
          expect(done.stderr).toContain(`the API at ${proxy.url} answered 503: trying again in 4 s\n`);
          expect(JSON.parse(done.stdout).team.id).toBe(ada.team.id);
        });
      },
      60_000,
    );
  });

  test.concurrent(
    'approved: the keys are kept (0600), whoami reports apiKey and apiSecret that S3 takes, logout revokes both',
    async () => {
      const u = await user();
      const running = u.start(['login', '--device', '--no-browser', '--api-url', apiUrl, '--json']);
      const { code, page } = await codeFrom(running);
      expect(page).toBe(`${apiUrl}/app/device?user_code=${code}`);
      expect(running.output().stderr).toContain(`open ${apiUrl}/app/device and enter the code ${code}`);
      await decide('approve', code, await signIn());
      const done = await running.done;
      expect(done.code).toBe(0);
      const out = JSON.parse(done.stdout);
      expect(out).toMatchObject({
        apiUrl,
        team: { id: ada.team.id, name: ada.team.name },
        account: { id: ada.account.id, name: ada.account.name },
        storage: { created: true },
        storageEndpoint: service.config.urls.storageEndpoint,
        gatewayUrl: service.config.urls.gatewayUrl,
        sitesDomain: service.config.sites.domain,
      });

      // Kept readable by its owner only, with a note of who made the keys.
      expect(((await stat(u.configPath)).mode & 0o777).toString(8)).toBe('600');
      const stored = JSON.parse(await readFile(u.configPath, 'utf8'));
      expect(stored).toMatchObject({
        apiKeyCreated: true,
        storageKeyCreated: true,
        teamId: ada.team.id,
        accessKeyId: out.storage.accessKeyId,
      });
      expect(stored.createdBy).toMatch(/^cairn login in the browser, .* cairn logout revokes/);

      const who = await u.json(['whoami']);
      expect(who).toMatchObject({
        team: { id: ada.team.id },
        apiKeyFrom: 'config',
        apiKey: stored.accessKeyId,
        apiSecret: stored.secretAccessKey,
        accessKeyId: stored.accessKeyId,
      });
      expect(who.apiSecret).toMatch(/^[A-Za-z0-9]{40}$/);
      const human = await u.run(['whoami']);
      expect(human.stdout).toContain(`apiKey:    ${stored.accessKeyId}`);
      expect(human.stdout).toContain(`apiSecret: ${stored.secretAccessKey}`);

      // The pair works with an S3 client, and both keys carry this machine's name.
      const buckets = await s3With(who.apiKey, who.apiSecret).send(new ListBucketsCommand({}));
      expect(buckets.Buckets?.map((b) => b.Name)).toContain(`${ada.account.name}-bucket`);
      const keys = dataOf(
        await gql.gql(ada.apiKey, `{ getApiKeysByTeam(teamId: "${ada.team.id}") { id name revokedAt } }`),
      ).getApiKeysByTeam;
      expect(keys).toContainEqual({ id: stored.apiKeyId, name: `cairn login on ${hostname()}`, revokedAt: null });

      const logout = await u.json(['logout']);
      expect(logout).toEqual({
        loggedOut: true,
        configPath: u.configPath,
        revokedStorageKey: stored.accessKeyId,
        revokedApiKey: stored.apiKeyId,
      });
      await expect(stat(u.configPath)).rejects.toThrow();
      await expect(s3With(who.apiKey, who.apiSecret).send(new ListBucketsCommand({}))).rejects.toMatchObject({
        $metadata: { httpStatusCode: 403 },
      });
      const after = dataOf(await gql.gql(ada.apiKey, `{ getApiKeysByTeam(teamId: "${ada.team.id}") { id revokedAt } }`)).getApiKeysByTeam;
      expect(after.find((k: { id: string }) => k.id === stored.apiKeyId)?.revokedAt).toEqual(expect.any(String));
      expect((await gql.gql(stored.apiKey, '{ getCurrentTeam { id } }')).errors?.[0]?.extensions.code).toBe('UNAUTHENTICATED');
    },
    90_000,
  );

  test.concurrent(
    'logging in in the browser again replaces, and revokes, what the first login made',
    async () => {
      const u = await user();
      const login = async () => {
        const running = u.start(['login', '--device', '--no-browser', '--api-url', apiUrl, '--json']);
        await decide('approve', (await codeFrom(running)).code, await signIn());
        expect((await running.done).code).toBe(0);
        return JSON.parse(await readFile(u.configPath, 'utf8'));
      };
      const first = await login();
      const second = await login();
      expect(second.apiKeyId).not.toBe(first.apiKeyId);
      await expect(s3With(first.accessKeyId, first.secretAccessKey).send(new ListBucketsCommand({}))).rejects.toMatchObject({
        $metadata: { httpStatusCode: 403 },
      });
      expect((await gql.gql(first.apiKey, '{ getCurrentTeam { id } }')).errors?.[0]?.extensions.code).toBe('UNAUTHENTICATED');
      expect(dataOf(await gql.gql(second.apiKey, '{ getCurrentTeam { id } }')).getCurrentTeam.id).toBe(ada.team.id);
      expect((await u.json(['logout'])).revokedApiKey).toBe(second.apiKeyId);
    },
    90_000,
  );

  test.concurrent(
    'denied in the browser: exit 1, one line saying so, nothing stored',
    async () => {
      const u = await user();
      const running = u.start(['login', '--device', '--no-browser', '--api-url', apiUrl]);
      await decide('deny', (await codeFrom(running)).code, await signIn());
      const done = await running.done;
      expect(done.code).toBe(1);
      expect(done.stderr.trim().split('\n').pop()).toBe('cairn: the login was denied in the browser');
      expect(done.stdout).toBe('');
      await expect(stat(u.configPath)).rejects.toThrow();
    },
    60_000,
  );

  test('without a terminal and without --device, or in CI, login asks for a key instead of waiting for a browser', async () => {
    const u = await user();
    const noTerminal = await u.run(['login', '--api-url', apiUrl]);
    expect(noTerminal.code).toBe(1);
    expect(noTerminal.stderr).toMatch(/^cairn: no API key: .*cairn login --device\)\n$/);
    const inCi = await u.runInTerminal(['login', '--api-url', apiUrl], { env: { CI: 'true' } });
    expect(inCi.code).toBe(1);
    expect(inCi.output).toMatch(/no API key/);
    // In a terminal, not in CI, it starts the browser login by itself (and a browser cannot be opened here: it says so and goes on).
    const port = await freePort();
    const unreachable = await u.runInTerminal(['login', '--api-url', `http://127.0.0.1:${port}`], { env: { CI: '' } });
    expect(unreachable.code).toBe(1);
    expect(unreachable.output).toMatch(/cannot reach the API at http:\/\/127\.0\.0\.1:\d+/);
    await expect(stat(u.configPath)).rejects.toThrow();
  });

  test('--access-key-id goes with --api-key only', async () => {
    const u = await user();
    const result = await u.run(['login', '--device', '--api-url', apiUrl, '--access-key-id', 'X', '--secret-access-key', 'Y']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/go with --api-key/);
  });
});
