/**
 * People, not only keys: sign-up, sign-in and sessions through both doors
 * (the node:http server and the GraphQL Lambda handler behind an HTTP
 * API). The routes under /auth/ set and clear the session cookie; GraphQL
 * takes the cookie as it takes an API key, and wants the session's CSRF
 * token with every mutation. Time passing (idle and absolute expiry, the
 * end of a lock-out window) is the records' times moved back in the
 * table, which both doors read; the stores' own clocks are injected in the
 * last block.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { tokenDigest } from '../../functions/core/ids.js';
import { SESSION_LIMITS, SessionStore } from '../../functions/core/data/sessions.js';
import { SIGN_IN_LIMITS, SignInAttemptStore } from '../../functions/core/data/sign-in-attempts.js';
import { hashPassword } from '../../functions/core/auth/passwords.js';
import { signUp } from '../../functions/core/auth/sign-in.js';
import { accountsService, authClient, doorTag, LOOPBACK_ADDRESSES, PASSWORD } from '../support/accounts-service.js';
import type { Door } from '../support/graphql.js';
import { startTestService, type TestService } from '../support/service.js';

const live = accountsService({ CAIRN_SIGNUP: 'open', CAIRN_GC_INTERVAL: '0' });

const TEAM = '{ getCurrentTeam { id name } }';
const NEW_PAIR = 'mutation { createStorageKeyPair { keyPair { accessKeyId } } }';
const SESSIONS = '{ getSessions { id createdAt lastSeenAt expiresAt userAgent address current } }';

interface SignedIn {
  status: number;
  body: any;
  /** `name=value`, as the browser sends it back. */
  cookie: string;
  setCookie: string;
  secret: string;
}

/** Each test's failures from this machine's address start from none: the address limit is its own test. */
async function forgetAddressFailures(): Promise<void> {
  for (const value of LOOPBACK_ADDRESSES) await live.service.services.signInAttempts.clear({ scope: 'address', value });
}

function client(door: Door, base: () => string) {
  const api = authClient(door, base);
  async function signedIn(res: Response): Promise<SignedIn> {
    const body = await res.json();
    const setCookie = res.headers.getSetCookie()[0] ?? '';
    const cookie = setCookie.split(';')[0]!;
    return { status: res.status, body, cookie, setCookie, secret: cookie.slice(cookie.indexOf('=') + 1) };
  }
  return {
    post: api.post,
    signUp: async (body: Record<string, unknown>, headers?: Record<string, string>) =>
      signedIn(await api.post('/auth/sign-up', body, headers)),
    signIn: async (email: string, password: string, headers?: Record<string, string>) =>
      signedIn(await api.post('/auth/sign-in', { email, password }, headers)),
    gql: api.gql,
  };
}

/** What a browser signed in sends: the cookie, and (for what changes something) the session's CSRF token. */
const withSession = (s: SignedIn, csrf = true): Record<string, string> => ({
  cookie: s.cookie,
  ...(csrf ? { 'x-csrf-token': s.body.csrfToken } : {}),
});

async function sessionItem(secret: string) {
  const db = live.service.services.db;
  return (
    await db.doc.send(new GetCommand({ TableName: db.tables.accounts, Key: { pk: `SESSION#${tokenDigest(secret)}`, sk: 'SESSION' } }))
  ).Item;
}

async function setSessionTimes(secret: string, times: { createdAt?: string; lastSeenAt?: string }): Promise<void> {
  const db = live.service.services.db;
  const names = Object.keys(times);
  await db.doc.send(
    new UpdateCommand({
      TableName: db.tables.accounts,
      Key: { pk: `SESSION#${tokenDigest(secret)}`, sk: 'SESSION' },
      UpdateExpression: `SET ${names.map((n) => `${n} = :${n}`).join(', ')}`,
      ExpressionAttributeValues: Object.fromEntries(names.map((n) => [`:${n}`, times[n as keyof typeof times]])),
    }),
  );
}

const ago = (seconds: number) => new Date(Date.now() - seconds * 1000).toISOString();

describe.each(live.doors)('people and sessions through the $name', (door) => {
  const tag = doorTag(door);
  let people = 0;
  const person = (prefix: string) => {
    const n = `${prefix}-${tag}-${process.pid}-${++people}`;
    return { email: `${n}@Example.ORG`, name: n.toLowerCase(), password: PASSWORD };
  };
  const api = client(door, live.base);

  beforeEach(forgetAddressFailures);

  test('sign-up (open) makes an account and its team, sets the session cookie, and the cookie works in GraphQL', async () => {
    const who = person('signup');
    const up = await api.signUp(who, { 'user-agent': 'Test Browser/1.0' });
    expect(up.status).toBe(201);
    expect(up.body).toEqual({
      ok: true,
      account: { id: expect.any(String), name: who.name, defaultTeamId: expect.any(String) },
      email: who.email.toLowerCase(),
      session: { id: expect.any(String), createdAt: expect.any(String), lastSeenAt: expect.any(String), expiresAt: expect.any(String) },
      csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    // Loopback http: no Secure (no browser would keep it), and the plain name (__Host- needs Secure).
    const attributes = up.setCookie.split(/;\s*/).slice(1);
    expect(up.cookie).toMatch(/^cairn_session=s1\.[A-Za-z0-9_-]{43}$/);
    expect(attributes.sort()).toEqual(['HttpOnly', `Max-Age=${SESSION_LIMITS.absoluteSeconds}`, 'Path=/', 'SameSite=Lax'].sort());

    const team = await api.gql(withSession(up, false), TEAM);
    expect(team.data.getCurrentTeam).toEqual({ id: up.body.account.defaultTeamId, name: who.name });
    const member = await api.gql(withSession(up, false), '{ getCurrentMember { accountId role } }');
    expect(member.data.getCurrentMember).toEqual({ accountId: up.body.account.id, role: 'OWNER' });
    // No keys were made for a person: they make them when they want them.
    expect((await api.gql(withSession(up, false), '{ getStorageKeyPairs { accessKeyId } }')).data.getStorageKeyPairs).toEqual([]);

    // What is stored is not the secret: the password as its scrypt hash with its parameters, the session by its SHA-256.
    const db = live.service.services.db;
    const identity = (
      await db.doc.send(new GetCommand({ TableName: db.tables.accounts, Key: { pk: `PERSON#${who.email.toLowerCase()}`, sk: 'PERSON' } }))
    ).Item!;
    expect(identity.accountId).toBe(up.body.account.id);
    expect(identity.passwordHash).toMatch(/^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(JSON.stringify(identity)).not.toContain(PASSWORD);
    const session = await sessionItem(up.secret);
    expect(session).toMatchObject({ accountId: up.body.account.id, id: up.body.session.id, userAgent: 'Test Browser/1.0' });
    expect(JSON.stringify(session)).not.toContain(up.secret);
    expect(JSON.stringify(session)).not.toContain(up.body.csrfToken);
  });

  test('sign-up refuses a taken e-mail (in any case), a taken name, and bad input, naming the field', async () => {
    const who = person('taken');
    expect((await api.signUp(who)).status).toBe(201);
    const again = await api.signUp({ ...who, email: `  ${who.email.toUpperCase()} `, name: `${who.name}-2` });
    expect([again.status, again.body.field, again.cookie]).toEqual([400, 'email', '']);
    const name = await api.signUp({ ...person('other'), name: who.name });
    expect([name.status, name.body.field]).toEqual([400, 'name']);
    for (const [input, field] of [
      [{ ...person('bad'), email: 'not-an-address' }, 'email'],
      [{ ...person('bad'), password: 'short' }, 'password'],
      [{ ...person('bad'), name: 'Not A Name' }, 'name'],
    ] as const) {
      const res = await api.signUp(input);
      expect([res.status, res.body.ok, res.body.field]).toEqual([400, false, field]);
    }
    // A body that is not JSON is refused before anything is read into it.
    const form = await door.fetch(`${live.service.endpoints.graphql.replace(/\/graphql$/, '')}/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'email=a&password=b',
    });
    expect(form.status).toBe(415);
  });

  test('sign-in: the right password signs in; a wrong one and an unknown e-mail get the same answer', async () => {
    const who = person('signin');
    const up = await api.signUp(who);
    const right = await api.signIn(`  ${who.email.toUpperCase()}`, PASSWORD);
    expect(right.status).toBe(200);
    expect(right.body.account.id).toBe(up.body.account.id);
    expect(right.secret).not.toBe(up.secret);
    expect((await api.gql(withSession(right, false), TEAM)).data.getCurrentTeam.id).toBe(up.body.account.defaultTeamId);

    const wrong = await api.post('/auth/sign-in', { email: who.email, password: 'not the password' });
    const unknown = await api.post('/auth/sign-in', { email: `nobody-${tag}-${process.pid}@example.org`, password: 'not the password' });
    expect([wrong.status, unknown.status]).toEqual([401, 401]);
    const [wrongBody, unknownBody] = [await wrong.text(), await unknown.text()];
    expect(wrongBody).toBe(unknownBody);
    expect(JSON.parse(wrongBody)).toEqual({ ok: false, error: 'The e-mail address or the password is not right' });
    expect(wrong.headers.getSetCookie()).toEqual([]);
  });

  test('after 10 failures an e-mail is locked out for the rest of 15 minutes (known or not), right password or not', async () => {
    const who = person('lock');
    await api.signUp(who);
    for (let i = 0; i < SIGN_IN_LIMITS.perEmail; i++)
      expect((await api.post('/auth/sign-in', { email: who.email, password: `wrong ${i}!!` })).status).toBe(401);
    // An e-mail no account has is counted the same way (its first failures through the store the door counts with, the last through the door).
    const unknown = `ghost-${tag}-${process.pid}@example.org`;
    for (let i = 0; i < SIGN_IN_LIMITS.perEmail - 1; i++)
      await live.service.services.signInAttempts.fail([{ scope: 'email', value: unknown }]);
    expect((await api.post('/auth/sign-in', { email: unknown, password: 'wrong again' })).status).toBe(401);
    for (const email of [who.email, unknown]) {
      const locked = await api.post('/auth/sign-in', { email, password: PASSWORD });
      expect(locked.status).toBe(429);
      const wait = Number(locked.headers.get('retry-after'));
      expect(wait).toBeGreaterThan(SIGN_IN_LIMITS.windowSeconds - 120);
      expect(wait).toBeLessThanOrEqual(SIGN_IN_LIMITS.windowSeconds);
      expect(await locked.json()).toEqual({
        ok: false,
        error: expect.stringMatching(/^Too many failed sign-ins: try again in \d+ minutes$/),
      });
    }
    // The window ends (its start moved back 15 minutes): the right password signs in again.
    const db = live.service.services.db;
    await db.doc.send(
      new UpdateCommand({
        TableName: db.tables.accounts,
        Key: { pk: `SIGNIN#email#${tokenDigest(who.email.toLowerCase())}`, sk: 'SIGNIN' },
        UpdateExpression: 'SET windowStart = windowStart - :window',
        ExpressionAttributeValues: { ':window': SIGN_IN_LIMITS.windowSeconds * 1000 },
      }),
    );
    expect((await api.signIn(who.email, PASSWORD)).status).toBe(200);
  });

  test('an address with 30 failures in the window is refused for every e-mail', async () => {
    const who = person('address');
    await api.signUp(who);
    // 29 failures counted already (the store the door counts with), then the 30th through the door.
    const addresses = ['127.0.0.1', '::ffff:127.0.0.1', '::1'];
    for (let i = 0; i < SIGN_IN_LIMITS.perAddress - 1; i++)
      await live.service.services.signInAttempts.fail(addresses.map((value) => ({ scope: 'address' as const, value })));
    expect((await api.post('/auth/sign-in', { email: `x-${tag}@example.org`, password: 'wrong password' })).status).toBe(401);
    const locked = await api.post('/auth/sign-in', { email: who.email, password: PASSWORD });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    // Sign-up from that address waits as well: it would otherwise be a way to try e-mails.
    expect((await api.post('/auth/sign-up', person('late'))).status).toBe(429);
  });

  test("a mutation with the cookie needs the session's CSRF token; a query does not, nor a request with an API key", async () => {
    const up = await api.signUp(person('csrf'));
    for (const headers of [withSession(up, false), { cookie: up.cookie, 'x-csrf-token': 'A'.repeat(43) }]) {
      const refused = await api.gql(headers, NEW_PAIR);
      expect(refused.status).toBe(403);
      expect(refused.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'FORBIDDEN' }) })]);
      expect(refused.data).toBeUndefined();
    }
    expect((await api.gql({ cookie: up.cookie }, '{ getStorageKeyPairs { accessKeyId } }')).data.getStorageKeyPairs).toEqual([]);
    const made = await api.gql(withSession(up), NEW_PAIR);
    expect(made.data.createStorageKeyPair.keyPair.accessKeyId).toMatch(/^CAIRN/);
    // A key made by the person acts as before: no cookie, no CSRF token.
    const key = await api.gql(withSession(up), 'mutation ($t: ID!) { createApiKey(teamId: $t, name: "ci") { key } }', {
      t: up.body.account.defaultTeamId,
    });
    const withKey = await api.gql({ authorization: key.data.createApiKey.key }, NEW_PAIR);
    expect(withKey.data.createStorageKeyPair.keyPair.accessKeyId).toMatch(/^CAIRN/);
    // A session ended signs nothing in, whatever the token.
    expect((await api.post('/auth/sign-out', {}, withSession(up))).status).toBe(200);
    expect((await api.gql(withSession(up), NEW_PAIR)).status).toBe(401);
  });

  test('X-Cairn-Team picks one of the account’s teams; a team it is not in is refused', async () => {
    const up = await api.signUp(person('teams'));
    const other = await api.signUp(person('teams-other'));
    const created = await api.gql(withSession(up), 'mutation { createTeam(name: "Second") { team { id name } } }');
    const second = created.data.createTeam.team;
    expect((await api.gql({ ...withSession(up, false), 'x-cairn-team': second.id }, TEAM)).data.getCurrentTeam).toEqual(second);
    const refused = await api.gql({ ...withSession(other, false), 'x-cairn-team': second.id }, TEAM);
    expect([refused.status, refused.errors?.[0].extensions.code]).toEqual([403, 'FORBIDDEN']);
  });

  test('a session unused for 7 days has ended; so has one begun 30 days ago, however used', async () => {
    const who = person('expiry');
    await api.signUp(who);
    const idle = await api.signIn(who.email, PASSWORD);
    await setSessionTimes(idle.secret, { lastSeenAt: ago(SESSION_LIMITS.idleSeconds - 60) });
    expect((await api.gql(withSession(idle, false), TEAM)).status).toBe(200);
    // That use moved its last use to now: it lasts another 7 days from here.
    expect(Date.parse((await sessionItem(idle.secret))!.lastSeenAt)).toBeGreaterThan(Date.now() - 60_000);
    await setSessionTimes(idle.secret, { lastSeenAt: ago(SESSION_LIMITS.idleSeconds + 1) });
    const ended = await api.gql(withSession(idle, false), TEAM);
    expect([ended.status, ended.errors?.[0].extensions.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect((await api.post('/auth/sign-out', {}, withSession(idle))).status).toBe(401);

    const old = await api.signIn(who.email, PASSWORD);
    await setSessionTimes(old.secret, { createdAt: ago(SESSION_LIMITS.absoluteSeconds - 60), lastSeenAt: ago(0) });
    expect((await api.gql(withSession(old, false), TEAM)).status).toBe(200);
    await setSessionTimes(old.secret, { createdAt: ago(SESSION_LIMITS.absoluteSeconds + 1), lastSeenAt: ago(0) });
    expect((await api.gql(withSession(old, false), TEAM)).status).toBe(401);
  });

  test('sign-out ends this session and clears the cookie; it wants the CSRF token', async () => {
    const who = person('signout');
    const up = await api.signUp(who);
    const kept = await api.signIn(who.email, PASSWORD);
    expect((await api.post('/auth/sign-out', {}, withSession(up, false))).status).toBe(403);
    expect((await api.post('/auth/sign-out', {}, { cookie: up.cookie, 'x-csrf-token': kept.body.csrfToken })).status).toBe(403);
    const out = await api.post('/auth/sign-out', {}, withSession(up));
    expect(await out.json()).toEqual({ ok: true, ended: 1 });
    expect(out.headers.getSetCookie()).toEqual(['cairn_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax']);
    expect(await sessionItem(up.secret)).toBeUndefined();
    expect((await api.gql(withSession(up, false), TEAM)).status).toBe(401);
    // The other browser is still signed in.
    expect((await api.gql(withSession(kept, false), TEAM)).status).toBe(200);
  });

  test('sign out everywhere: every session of the account ends, the other browsers’ too', async () => {
    const who = person('everywhere');
    const a = await api.signUp(who);
    const b = await api.signIn(who.email, PASSWORD);
    const c = await api.signIn(who.email, PASSWORD);
    const stranger = await api.signUp(person('stranger'));
    const out = await api.post('/auth/sign-out', { everywhere: true }, withSession(a));
    expect(await out.json()).toEqual({ ok: true, ended: 3 });
    for (const s of [a, b, c]) expect((await api.gql(withSession(s, false), TEAM)).status).toBe(401);
    expect((await api.gql(withSession(stranger, false), TEAM)).status).toBe(200);
    // Signing in again afterwards works.
    const again = await api.signIn(who.email, PASSWORD);
    expect((await api.gql(withSession(again, false), TEAM)).status).toBe(200);
  });

  test("the list of one's sessions: newest first, the current one marked; one can be signed out from another", async () => {
    const who = person('list');
    const a = await api.signUp(who, { 'user-agent': 'Browser A' });
    const b = await api.signIn(who.email, PASSWORD, { 'user-agent': 'Browser B' });
    const listed = (await api.gql(withSession(a, false), SESSIONS)).data.getSessions;
    expect(listed).toEqual([
      {
        id: b.body.session.id,
        createdAt: b.body.session.createdAt,
        lastSeenAt: expect.any(String),
        expiresAt: new Date(Date.parse(b.body.session.createdAt) + SESSION_LIMITS.absoluteSeconds * 1000).toISOString(),
        userAgent: 'Browser B',
        address: expect.stringMatching(/127\.0\.0\.1|::1/),
        current: false,
      },
      expect.objectContaining({ id: a.body.session.id, userAgent: 'Browser A', current: true }),
    ]);
    // A second team of the account's, for the web app's team switcher: /auth/session names both, with the role in each.
    const second = await api.gql(withSession(a), 'mutation ($n: String!) { createTeam(name: $n) { team { id } } }', {
      n: `${who.name}-two`,
    });
    const session = await door.fetch(`${live.service.endpoints.graphql.replace(/\/graphql$/, '')}/auth/session`, {
      headers: { cookie: b.cookie },
    });
    const sessionBody = await session.json();
    expect(sessionBody).toMatchObject({
      ok: true,
      email: who.email.toLowerCase(),
      passwordSet: true,
      csrfToken: b.body.csrfToken,
      session: { id: b.body.session.id },
    });
    expect(sessionBody.teams.sort((x: { name: string }, y: { name: string }) => x.name.localeCompare(y.name))).toEqual([
      { id: b.body.account.defaultTeamId, name: who.name, role: 'OWNER' },
      { id: second.data.createTeam.team.id, name: `${who.name}-two`, role: 'OWNER' },
    ]);

    const revoked = await api.gql(withSession(a), 'mutation ($id: ID!) { revokeSession(sessionId: $id) }', { id: b.body.session.id });
    expect(revoked.data.revokeSession).toBe(true);
    expect((await api.gql(withSession(b, false), TEAM)).status).toBe(401);
    expect((await api.gql(withSession(a, false), SESSIONS)).data.getSessions.map((s: { id: string }) => s.id)).toEqual([a.body.session.id]);
    // Another account's session is not one's own to end.
    const stranger = await api.signUp(person('list-stranger'));
    expect(
      (await api.gql(withSession(stranger), 'mutation ($id: ID!) { revokeSession(sessionId: $id) }', { id: a.body.session.id })).data
        .revokeSession,
    ).toBe(false);
  });
});

describe('where sign-up is not open, and the base URL is https', () => {
  let invite: TestService;
  let base: string;

  beforeAll(async () => {
    // The default (invite), and a base URL that is not loopback http: the cookie is Secure.
    invite = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_BASE_URL: 'https://cairn.example.com' });
    base = `http://127.0.0.1:${invite.config.ports.api}`;
  });

  afterAll(async () => {
    await invite?.close();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  test('sign-up is refused with 403 by default (invite), and when closed', async () => {
    const res = await post('/auth/sign-up', { email: 'new@example.org', password: PASSWORD, name: 'newcomer' });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ ok: false, error: expect.stringMatching(/^Sign-up is by invitation on this service/) });
    expect(await invite.services.accounts.getAccountByName('newcomer')).toBeUndefined();
    expect(invite.config.signup).toBe('invite');
    // Closed says so in its own words (the same rule the route calls, under the other setting).
    const closed = await signUp(
      { ...invite.services, config: { ...invite.config, signup: 'closed' } },
      { email: 'new@example.org', password: PASSWORD, name: 'newcomer' },
      {},
    );
    expect(closed).toEqual({ kind: 'closed', message: expect.stringMatching(/^Sign-up is closed on this service/) });
  });

  test('a person the operator gave an identity signs in; the cookie is Secure and __Host- named', async () => {
    const { account } = await invite.services.accounts.createAccount({ name: 'grace' });
    await invite.services.people.add(account.id, 'Grace@Example.org', await hashPassword(PASSWORD));
    const res = await post('/auth/sign-in', { email: 'grace@example.org', password: PASSWORD });
    expect(res.status).toBe(200);
    const [cookie] = res.headers.getSetCookie();
    expect(cookie).toMatch(/^__Host-cairn_session=s1\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax; Secure$/);
    const team = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: cookie!.split(';')[0]! },
      body: JSON.stringify({ query: TEAM }),
    });
    expect(((await team.json()) as any).data.getCurrentTeam.id).toBe(account.defaultTeamId);
  });
});

describe('the stores keep time by the clock they are given', () => {
  test('a session ends 7 days after its last use and 30 days after it began', async () => {
    let now = Date.parse('2026-01-01T00:00:00.000Z');
    const sessions = new SessionStore(live.service.services.db, () => new Date(now));
    const { account } = await live.service.services.accounts.createAccount({ name: `clock-${process.pid}` });
    const { secret } = await sessions.create(account.id, { userAgent: 'clock', address: null });
    // Used every 6 days, it lasts until the 30th day, then ends whatever its use.
    for (let day = 6; day < 30; day += 6) {
      now += 6 * 24 * 3600 * 1000;
      expect(await sessions.open(secret)).toEqual({ session: expect.objectContaining({ accountId: account.id }) });
    }
    now = Date.parse('2026-01-31T00:00:00.000Z');
    expect(await sessions.open(secret)).toEqual({ refused: 'expired' });

    now = Date.parse('2026-03-01T00:00:00.000Z');
    const idle = await sessions.create(account.id, {});
    now += SESSION_LIMITS.idleSeconds * 1000 - 1;
    expect('session' in (await sessions.open(idle.secret))).toBe(true);
    now += SESSION_LIMITS.idleSeconds * 1000;
    expect(await sessions.open(idle.secret)).toEqual({ refused: 'idle' });
    expect(await sessions.list(account.id)).toEqual([]);
  });

  test('failures count in a window that opens with the first, and lock only until it ends', async () => {
    let now = Date.parse('2026-01-01T00:00:00.000Z');
    const attempts = new SignInAttemptStore(live.service.services.db, () => new Date(now));
    const key = [{ scope: 'email' as const, value: `clock-${process.pid}@example.org` }];
    for (let i = 0; i < SIGN_IN_LIMITS.perEmail - 1; i++) await attempts.fail(key);
    expect(await attempts.retryAfter(key)).toBe(0);
    now += 60_000;
    await attempts.fail(key);
    expect(await attempts.retryAfter(key)).toBe(SIGN_IN_LIMITS.windowSeconds - 60);
    now += (SIGN_IN_LIMITS.windowSeconds - 60) * 1000;
    expect(await attempts.retryAfter(key)).toBe(0);
    // A failure after the window opens a new one, counting from one.
    await attempts.fail(key);
    expect(await attempts.retryAfter(key)).toBe(0);
  });
});
