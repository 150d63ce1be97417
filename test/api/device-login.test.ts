/**
 * The command line's browser login (RFC 8628) through both doors: the
 * device authorization and token endpoints with every error RFC 8628 §3.5
 * and RFC 6749 §5.2 name, slow_down raising the interval, a device code
 * refused after its one use, expiry, and the approval page's routes
 * (session and CSRF token required, a team of one's own only, deny,
 * guessing user codes locked out). Time passing (the poll interval, the
 * grant's life) is the grant's times moved back in the table, which both
 * doors read.
 */
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { tokenDigest } from '../../functions/core/ids.js';
import { DEVICE_LIMITS, USER_CODE_ALPHABET } from '../../functions/core/data/device-grants.js';
import { accountsService, authClient, doorTag, LOOPBACK_ADDRESSES, PASSWORD } from '../support/accounts-service.js';
import type { Door } from '../support/graphql.js';

const live = accountsService({ CAIRN_SIGNUP: 'open', CAIRN_GC_INTERVAL: '0' });

const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
const CODE = new RegExp(`^[${USER_CODE_ALPHABET}]{4}-[${USER_CODE_ALPHABET}]{4}$`);

const table = () => live.service.services.db.tables.accounts;

/** Each test's counts from this machine's addresses start from none: the limits are tests of their own. */
async function forgetAddressCounts(): Promise<void> {
  const db = live.service.services.db;
  for (const scope of ['address', 'start'])
    for (const value of LOOPBACK_ADDRESSES)
      await db.doc.send(new DeleteCommand({ TableName: table(), Key: { pk: `DEVICEGUESS#${scope}#${value}`, sk: 'DEVICEGUESS' } }));
}

async function grantItem(deviceCode: string) {
  const db = live.service.services.db;
  return (await db.doc.send(new GetCommand({ TableName: table(), Key: { pk: `DEVICE#${tokenDigest(deviceCode)}`, sk: 'DEVICE' } }))).Item;
}

/** Moves the grant's clock: its last poll (ms) and its end (epoch seconds). */
async function setGrant(deviceCode: string, values: { lastPolledAt?: number; expiresAt?: number }): Promise<void> {
  const names = Object.keys(values);
  await live.service.services.db.doc.send(
    new UpdateCommand({
      TableName: table(),
      Key: { pk: `DEVICE#${tokenDigest(deviceCode)}`, sk: 'DEVICE' },
      UpdateExpression: `SET ${names.map((n) => `${n} = :${n}`).join(', ')}`,
      ExpressionAttributeValues: Object.fromEntries(names.map((n) => [`:${n}`, values[n as keyof typeof values]])),
    }),
  );
}

/** The interval is over: the next poll is on time. */
const waitedInterval = (deviceCode: string) => setGrant(deviceCode, { lastPolledAt: Date.now() - 61_000 });

function client(door: Door) {
  const api = authClient(door, live.base);
  const form = (path: string, fields: Record<string, string>) =>
    door.fetch(`${live.base()}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'cairn/test' },
      body: new URLSearchParams(fields).toString(),
    });
  return {
    base: live.base,
    form,
    post: api.post,
    get: (path: string, headers: Record<string, string> = {}) => door.fetch(`${live.base()}${path}`, { headers }),
    async start(machine = 'laptop.example') {
      const res = await form('/auth/device/code', { client_id: 'cairn-cli', machine });
      expect(res.status).toBe(200);
      return (await res.json()) as {
        device_code: string;
        user_code: string;
        verification_uri: string;
        verification_uri_complete: string;
        expires_in: number;
        interval: number;
      };
    },
    async poll(deviceCode: string, fields: Record<string, string> = {}) {
      const res = await form('/auth/device/token', { grant_type: GRANT_TYPE, device_code: deviceCode, client_id: 'cairn-cli', ...fields });
      return { status: res.status, body: (await res.json()) as any, headers: res.headers };
    },
    gql: (key: string, query: string) => api.gql({ authorization: key }, query),
  };
}

describe.each(live.doors)('device login through the $name', (door) => {
  const tag = doorTag(door);
  let people = 0;
  const api = client(door);

  /** A person signed up and in: their cookie, CSRF token and account. */
  async function person() {
    const name = `device-${tag}-${process.pid}-${++people}`;
    const res = await api.post('/auth/sign-up', { email: `${name}@example.org`, password: PASSWORD, name });
    expect(res.status).toBe(201);
    const body = (await res.json()) as any;
    const cookie = res.headers.getSetCookie()[0]!.split(';')[0]!;
    return {
      account: body.account as { id: string; name: string; defaultTeamId: string },
      cookie,
      csrf: body.csrfToken as string,
      headers: { cookie, 'x-csrf-token': body.csrfToken as string },
    };
  }

  beforeEach(forgetAddressCounts);

  test('the authorization request answers RFC 8628 §3.2, form-encoded or JSON; the device code is stored only as its hash', async () => {
    const started = await api.start('build-box');
    expect(started).toEqual({
      device_code: expect.stringMatching(/^cdc1\.[A-Za-z0-9_-]{43}$/),
      user_code: expect.stringMatching(CODE),
      verification_uri: `${api.base()}/app/device`,
      verification_uri_complete: `${api.base()}/app/device?user_code=${started.user_code}`,
      expires_in: 600,
      interval: 5,
    });
    const item = await grantItem(started.device_code);
    expect(item).toMatchObject({
      status: 'pending',
      machine: 'build-box',
      clientId: 'cairn-cli',
      userCode: started.user_code.replace('-', ''),
    });
    expect(JSON.stringify(item)).not.toContain(started.device_code);
    // TTL: DynamoDB removes it after its end.
    expect(item!.expiresAt).toBeGreaterThan(Date.now() / 1000 + 590);

    const viaJson = await api.post('/auth/device/code', { client_id: 'cairn-cli', machine: 'other' });
    expect(viaJson.status).toBe(200);
    expect(viaJson.headers.get('cache-control')).toBe('no-store');
    const other = (await viaJson.json()) as any;
    expect(other.user_code).not.toBe(started.user_code);
    expect(other.device_code).not.toBe(started.device_code);
  });

  test('a bad authorization request: invalid_client, invalid_request, in OAuth shape', async () => {
    const wrongClient = await api.form('/auth/device/code', { client_id: 'someone-else' });
    expect(wrongClient.status).toBe(401);
    expect(await wrongClient.json()).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    const longName = await api.form('/auth/device/code', { client_id: 'cairn-cli', machine: 'x'.repeat(65) });
    expect(longName.status).toBe(400);
    expect(((await longName.json()) as any).error).toBe('invalid_request');
    const text = await door.fetch(`${api.base()}/auth/device/code`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'client_id=cairn-cli',
    });
    expect(text.status).toBe(400);
    expect(((await text.json()) as any).error).toBe('invalid_request');
    const get = await api.get('/auth/device/code');
    expect(get.status).toBe(405);
  });

  test("bodies too large, malformed or of another type are refused with one clear sentence, in each route's shape", async () => {
    const big = 'x'.repeat(16 * 1024);
    const send = (path: string, type: string, body: string, headers: Record<string, string> = {}) =>
      door.fetch(`${api.base()}${path}`, { method: 'POST', headers: { 'content-type': type, ...headers }, body });
    // The command line's endpoints answer in OAuth's shape (RFC 6749 §5.2): invalid_request, the reason as its description.
    for (const path of ['/auth/device/code', '/auth/device/token'])
      for (const [type, body, description] of [
        ['text/plain', 'client_id=cairn-cli', 'send the body form-encoded (application/x-www-form-urlencoded) or as JSON'],
        ['application/json', '{"client_id": "cairn-cli"', 'the body must be a JSON object'],
        ['application/json; charset=utf-8', '["cairn-cli"]', 'the body must be a JSON object'],
        ['application/x-www-form-urlencoded', `client_id=cairn-cli&machine=${big}`, 'the body is larger than 16384 bytes'],
      ]) {
        const res = await send(path, type!, body!);
        expect([path, type, res.status, await res.json()]).toEqual([
          path,
          type,
          400,
          { error: 'invalid_request', error_description: description },
        ]);
      }
    // The approval page's POSTs take JSON only, and answer as the other /auth/ routes do.
    const who = await person();
    for (const [type, body, status, error] of [
      ['application/x-www-form-urlencoded', 'user_code=BBBB-BBBB', 415, 'send the body as JSON, with Content-Type: application/json'],
      ['text/plain', '{"user_code": "BBBB-BBBB"}', 415, 'send the body as JSON, with Content-Type: application/json'],
      ['application/json', 'user_code=BBBB-BBBB', 400, 'the body must be a JSON object'],
      ['application/json', JSON.stringify({ user_code: big }), 413, 'the body is larger than 16384 bytes'],
    ] as const) {
      const res = await send('/auth/device/approve', type, body, who.headers);
      expect([type, body.slice(0, 20), res.status, await res.json()]).toEqual([type, body.slice(0, 20), status, { ok: false, error }]);
    }
    // None of them was taken for a guess at a user code.
    expect((await api.get(`/auth/device?user_code=BBBB-BBBB`, who.headers)).status).toBe(404);
  });

  test('the token endpoint: unsupported_grant_type, invalid_client, invalid_request, invalid_grant', async () => {
    const { device_code } = await api.start();
    const wrongType = await api.poll(device_code, { grant_type: 'client_credentials' });
    expect([wrongType.status, wrongType.body.error]).toEqual([400, 'unsupported_grant_type']);
    const wrongClient = await api.poll(device_code, { client_id: 'other' });
    expect([wrongClient.status, wrongClient.body.error]).toEqual([401, 'invalid_client']);
    const missing = await api.poll('');
    expect([missing.status, missing.body.error]).toEqual([400, 'invalid_request']);
    const made = await api.poll(`cdc1.${'A'.repeat(43)}`);
    expect([made.status, made.body.error]).toEqual([400, 'invalid_grant']);
    expect(made.headers.get('cache-control')).toBe('no-store');
  });

  test('authorization_pending, then slow_down when polled too soon, raising the interval by 5 each time', async () => {
    const { device_code } = await api.start();
    const first = await api.poll(device_code);
    expect(first).toMatchObject({ status: 400, body: { error: 'authorization_pending' } });
    const tooSoon = await api.poll(device_code);
    expect(tooSoon).toMatchObject({ status: 400, body: { error: 'slow_down', interval: 10 } });
    expect((await api.poll(device_code)).body).toMatchObject({ error: 'slow_down', interval: 15 });
    expect((await grantItem(device_code))!.interval).toBe(15);
    // 6 seconds later is not enough any more: the interval is 15 now.
    await setGrant(device_code, { lastPolledAt: Date.now() - 6_000 });
    expect((await api.poll(device_code)).body).toMatchObject({ error: 'slow_down', interval: 20 });
    await setGrant(device_code, { lastPolledAt: Date.now() - 20_000 });
    expect((await api.poll(device_code)).body.error).toBe('authorization_pending');
  });

  test('approving needs a session and its CSRF token; the page sees machine, address and teams; the code then gives credentials once', async () => {
    const who = await person();
    const { device_code, user_code } = await api.start('ada-laptop');
    const query = `/auth/device?user_code=${encodeURIComponent(user_code.toLowerCase())}`;

    // No session: neither the page's information nor a decision.
    expect((await api.get(query)).status).toBe(401);
    const anonymous = await api.post('/auth/device/approve', { user_code });
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as any).ok).toBe(false);
    // A session without its CSRF token (a form or script of another site) decides nothing either.
    const noCsrf = await api.post('/auth/device/approve', { user_code }, { cookie: who.cookie });
    expect(noCsrf.status).toBe(403);
    const wrongCsrf = await api.post('/auth/device/approve', { user_code }, { cookie: who.cookie, 'x-csrf-token': 'x'.repeat(43) });
    expect(wrongCsrf.status).toBe(403);
    const formBody = await door.fetch(`${api.base()}/auth/device/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...who.headers },
      body: `user_code=${user_code}`,
    });
    expect(formBody.status).toBe(415);
    expect((await grantItem(device_code))!.status).toBe('pending');
    expect((await api.poll(device_code)).body.error).toBe('authorization_pending');

    // Looking a code up needs the CSRF token too: another site could navigate the browser here until the account is locked out.
    const noToken = await api.get(query, { cookie: who.cookie });
    expect(noToken.status).toBe(403);
    const info = await api.get(query, who.headers);
    expect(info.status).toBe(200);
    expect(await info.json()).toEqual({
      ok: true,
      userCode: user_code,
      machine: 'ada-laptop',
      address: expect.any(String),
      userAgent: 'cairn/test',
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
      status: 'pending',
      // Started and approved from this machine: the page has no warning to give.
      sameAddress: true,
      teams: [{ id: who.account.defaultTeamId, name: who.account.name, role: 'OWNER' }],
      defaultTeamId: who.account.defaultTeamId,
    });

    const approved = await api.post('/auth/device/approve', { user_code }, who.headers);
    expect(approved.status).toBe(200);
    expect(await approved.json()).toEqual({ ok: true, status: 'approved', machine: 'ada-laptop', teamId: who.account.defaultTeamId });
    // Deciding twice is refused.
    expect((await api.post('/auth/device/deny', { user_code }, who.headers)).status).toBe(409);

    await waitedInterval(device_code);
    const token = await api.poll(device_code);
    expect(token.status).toBe(200);
    expect(token.headers.get('cache-control')).toBe('no-store');
    expect(token.body).toEqual({
      access_token: expect.stringMatching(/^cairn_/),
      token_type: 'Bearer',
      api_key_id: expect.any(String),
      team: { id: who.account.defaultTeamId, name: who.account.name },
      account: { id: who.account.id, name: who.account.name },
      access_key_id: expect.any(String),
      secret_access_key: expect.any(String),
      endpoints: {
        api: live.service.config.urls.baseUrl,
        storage: live.service.config.urls.storageEndpoint,
        gateway: live.service.config.urls.gatewayUrl,
        storage_public_domain: live.service.config.urls.storagePublicDomain,
        sites_domain: live.service.config.sites.domain,
      },
    });
    // The API key acts in the team, and is listed under the machine's name.
    const team = await api.gql(token.body.access_token, '{ getCurrentTeam { id } }');
    expect(team.data?.getCurrentTeam.id).toBe(who.account.defaultTeamId);
    const keys = await api.gql(token.body.access_token, `{ getApiKeysByTeam(teamId: "${who.account.defaultTeamId}") { id name } }`);
    expect(keys.data?.getApiKeysByTeam).toContainEqual({ id: token.body.api_key_id, name: 'cairn login on ada-laptop' });
    // The storage key pair is the account's, named after the machine too, and the S3 API takes it.
    const pairs = await api.gql(token.body.access_token, '{ getStorageKeyPairs { accessKeyId revokedAt } }');
    expect(pairs.data?.getStorageKeyPairs).toContainEqual({ accessKeyId: token.body.access_key_id, revokedAt: null });
    const pairItem = (
      await live.service.services.db.doc.send(
        new GetCommand({ TableName: table(), Key: { pk: `AKEY#${token.body.access_key_id}`, sk: 'AKEY' } }),
      )
    ).Item;
    expect(pairItem?.name).toBe('cairn login on ada-laptop');
    const s3 = new S3Client({
      endpoint: live.service.endpoints.s3,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: token.body.access_key_id, secretAccessKey: token.body.secret_access_key },
      maxAttempts: 1,
    });
    const buckets = await s3.send(new ListBucketsCommand({}));
    expect(buckets.Buckets?.map((b) => b.Name)).toContain(`${who.account.name}-bucket`);
    s3.destroy();

    // Replayed, the device code gives nothing more: not the credentials again, nor a new set.
    await waitedInterval(device_code);
    const replay = await api.poll(device_code);
    expect([replay.status, replay.body.error]).toEqual([400, 'invalid_grant']);
    expect(replay.body.access_token).toBeUndefined();
    const after = await api.gql(token.body.access_token, `{ getApiKeysByTeam(teamId: "${who.account.defaultTeamId}") { name } }`);
    expect(after.data?.getApiKeysByTeam.filter((k: { name: string }) => k.name === 'cairn login on ada-laptop')).toHaveLength(1);
  });

  test('two polls at once after approval: one gets the credentials, the other does not', async () => {
    const who = await person();
    const { device_code, user_code } = await api.start();
    expect((await api.post('/auth/device/approve', { user_code }, who.headers)).status).toBe(200);
    const both = await Promise.all([api.poll(device_code), api.poll(device_code)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(['slow_down', 'invalid_grant']).toContain(both.find((r) => r.status === 400)!.body.error);
  });

  test('a team of someone else is refused, and nothing is decided', async () => {
    const who = await person();
    const other = await person();
    const { device_code, user_code } = await api.start();
    const res = await api.post('/auth/device/approve', { user_code, teamId: other.account.defaultTeamId }, who.headers);
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ ok: false, field: 'teamId' });
    expect((await grantItem(device_code))!.status).toBe('pending');
  });

  test('deny: the command line is told access_denied, and the code cannot be approved after', async () => {
    const who = await person();
    const { device_code, user_code } = await api.start();
    const denied = await api.post('/auth/device/deny', { user_code }, who.headers);
    expect(await denied.json()).toEqual({ ok: true, status: 'denied', machine: 'laptop.example', teamId: null });
    expect(await api.poll(device_code)).toMatchObject({ status: 400, body: { error: 'access_denied' } });
    expect((await api.post('/auth/device/approve', { user_code }, who.headers)).status).toBe(409);
  });

  test('expiry: expired_token for the command line, and the page finds no such code', async () => {
    const who = await person();
    const { device_code, user_code } = await api.start();
    await setGrant(device_code, { expiresAt: Math.floor(Date.now() / 1000) - 1 });
    expect(await api.poll(device_code)).toMatchObject({ status: 400, body: { error: 'expired_token' } });
    expect((await api.get(`/auth/device?user_code=${user_code}`, who.headers)).status).toBe(404);
    expect((await api.post('/auth/device/approve', { user_code }, who.headers)).status).toBe(404);
  });

  test('guessing user codes: after 10 wrong ones the account may look up none for the window, not even a right one', async () => {
    const who = await person();
    const { user_code } = await api.start();
    const wrong = user_code === 'BBBB-BBBB' ? 'CCCC-CCCC' : 'BBBB-BBBB';
    for (let i = 0; i < DEVICE_LIMITS.guessesPerAccount; i++) {
      const res = await api.post('/auth/device/approve', { user_code: i % 2 ? wrong : 'nonsense' }, who.headers);
      expect(res.status).toBe(i % 2 ? 404 : 400);
    }
    const locked = await api.get(`/auth/device?user_code=${user_code}`, who.headers);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await api.post('/auth/device/approve', { user_code }, who.headers)).status).toBe(429);
    // Another person is not locked out by this one.
    const other = await person();
    expect((await api.get(`/auth/device?user_code=${user_code}`, other.headers)).status).toBe(200);
  });

  test('an address that started its limit of logins in the window is told to wait, and no grant is made', async () => {
    const first = await api.form('/auth/device/code', { client_id: 'cairn-cli', machine: 'probe' });
    expect(first.status).toBe(200);
    // The count is kept by the address the door saw: the one this request's grant records.
    const address = (await grantItem(((await first.json()) as any).device_code))!.address as string;
    await live.service.services.db.doc.send(
      new UpdateCommand({
        TableName: table(),
        Key: { pk: `DEVICEGUESS#start#${address}`, sk: 'DEVICEGUESS' },
        UpdateExpression: 'SET #count = :limit',
        ExpressionAttributeNames: { '#count': 'count' },
        ExpressionAttributeValues: { ':limit': DEVICE_LIMITS.grantsPerAddress },
      }),
    );
    const refused = await api.form('/auth/device/code', { client_id: 'cairn-cli', machine: 'probe' });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const body = (await refused.json()) as any;
    expect(body).toEqual({ error: 'slow_down', error_description: expect.any(String) });
    expect(body.device_code).toBeUndefined();
  });

  test('unknown routes and methods under /auth/device', async () => {
    expect((await api.get('/auth/device/nothing')).status).toBe(404);
    expect((await api.post('/auth/device', {})).status).toBe(405);
    // /auth/ itself still answers sign-in's routes.
    expect((await api.get('/auth/session')).status).toBe(401);
  });
});
