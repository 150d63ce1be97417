/**
 * Passkeys through both doors (the node:http server and the GraphQL
 * Lambda handler behind an HTTP API), answered by a software
 * authenticator (test/support/passkey-authenticator.ts) so that the
 * service's WebAuthn verification runs on real signatures: registering
 * one from a session (with its CSRF token), listing and removing it,
 * signing in with it alone, and asking for it after the password. Each
 * thing the service must refuse is bent one at a time: a challenge it
 * never handed out, one handed to another session, an answer replayed, a
 * passkey of another account, a counter set back, a removed passkey, a
 * missing CSRF token. The service runs at `http://localhost:<port>`:
 * WebAuthn wants a domain as the RP ID, not an IP address.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import {
  PASSKEY_STALE,
  PASSKEY_WRONG,
  PASSKEYS_UNAVAILABLE,
  relyingParty,
  SECOND_FACTOR_ASKED,
} from '../../functions/core/auth/passkeys.js';
import { tokenDigest } from '../../functions/core/ids.js';
import { SIGN_IN_LIMITS } from '../../functions/core/data/sign-in-attempts.js';
import { loadConfig } from '../../functions/core/config.js';
import { webAppConfig } from '../../functions/web-app/app-config.js';
import { accountsService, authClient, doorTag, LOOPBACK_ADDRESSES, PASSWORD } from '../support/accounts-service.js';
import type { Door } from '../support/graphql.js';
import { SoftwareAuthenticator } from '../support/passkey-authenticator.js';
import { freePort } from '../support/service-env.js';

const live = accountsService(async () => {
  const port = await freePort();
  return { CAIRN_SIGNUP: 'open', CAIRN_GC_INTERVAL: '0', CAIRN_API_PORT: String(port), CAIRN_BASE_URL: `http://localhost:${port}` };
});

const origin = () => new URL(live.service.config.urls.baseUrl).origin;

/** Each test's failures from this machine's address start from none: the address limit is its own test. */
async function forgetAddressFailures(): Promise<void> {
  for (const value of LOOPBACK_ADDRESSES) await live.service.services.signInAttempts.clear({ scope: 'address', value });
}

/** Failed sign-ins counted against this machine's addresses (whichever the door reports). */
async function addressFailures(): Promise<number> {
  const db = live.service.services.db;
  let total = 0;
  for (const value of LOOPBACK_ADDRESSES) {
    const item = (
      await db.doc.send(new GetCommand({ TableName: db.tables.accounts, Key: { pk: `SIGNIN#address#${value}`, sk: 'SIGNIN' } }))
    ).Item;
    total += Number(item?.failures ?? 0);
  }
  return total;
}

beforeEach(forgetAddressFailures);

describe.each(live.doors)('passkeys through the $name', (door: Door) => {
  const tag = doorTag(door);
  const api = authClient(door, live.base);
  let n = 0;

  /** A new person, signed up and in: what their browser sends (cookie and CSRF token), their account and e-mail. */
  async function person() {
    const name = `pk-${tag}-${++n}-${randomBytes(3).toString('hex')}`;
    const email = `${name}@example.org`;
    const res = await api.postJson('/auth/sign-up', { email, password: PASSWORD, name });
    expect(res.status).toBe(201);
    return {
      email,
      accountId: res.body.account.id as string,
      headers: { cookie: res.cookie, 'x-csrf-token': res.body.csrfToken as string },
      authenticator: new SoftwareAuthenticator(origin()),
    };
  }
  type Person = Awaited<ReturnType<typeof person>>;

  async function registrationOptions(who: Person) {
    const res = await api.postJson('/auth/passkeys/registration/options', {}, who.headers);
    expect(res.status).toBe(200);
    return res.body.options;
  }

  async function register(who: Person, name = 'Laptop') {
    const { response, credential } = who.authenticator.register(await registrationOptions(who));
    const res = await api.postJson('/auth/passkeys/registration', { response, name }, who.headers);
    expect(res.status).toBe(201);
    return { credential, passkey: res.body.passkey };
  }

  async function signInOptions() {
    const res = await api.postJson('/auth/passkeys/sign-in/options', {});
    expect(res.status).toBe(200);
    return res.body.options;
  }

  async function listed(who: Person) {
    const res = await door.fetch(`${live.base()}/auth/passkeys`, { headers: { cookie: who.headers.cookie } });
    expect(res.status).toBe(200);
    return (await res.json()) as { passkeys: Array<{ id: string; name: string; lastUsedAt: string | null }>; required: boolean };
  }

  test('register from a session, list it, and sign in with it alone: the same session as a password gives', async () => {
    const ada = await person();
    const options = await registrationOptions(ada);
    // The relying party is the configured base URL's host, and the person is the account (its id as the user handle).
    expect(options.rp).toEqual({ id: 'localhost', name: 'Cairn' });
    expect(Buffer.from(options.user.id, 'base64url').toString()).toBe(ada.accountId);
    expect(options.user.name).toBe(ada.email);
    expect(options.authenticatorSelection).toMatchObject({ residentKey: 'required' });
    // No attestation asked for, and the three key types named (EdDSA, ES256, RS256), not whatever the runtime adds.
    expect(options.attestation).toBe('none');
    expect(options.pubKeyCredParams.map((p: { alg: number }) => p.alg)).toEqual([-8, -7, -257]);
    const { response, credential } = ada.authenticator.register(options);
    const made = await api.postJson('/auth/passkeys/registration', { response, name: 'Laptop' }, ada.headers);
    expect(made.status).toBe(201);
    expect(made.body.passkey).toMatchObject({ id: credential.id, name: 'Laptop', transports: ['internal'], lastUsedAt: null });
    // Registered once: the same answer again finds its challenge used.
    const again = await api.postJson('/auth/passkeys/registration', { response, name: 'Laptop' }, ada.headers);
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ ok: false, error: PASSKEY_STALE, field: 'response' });
    // The next registration's options exclude it, so the authenticator does not make a second one for the same account.
    expect((await registrationOptions(ada)).excludeCredentials).toEqual([
      { id: credential.id, type: 'public-key', transports: ['internal'] },
    ]);
    expect(await listed(ada)).toMatchObject({ ok: true, required: false, passkeys: [{ id: credential.id, name: 'Laptop' }] });

    const signInWith = await signInOptions();
    // Usernameless: no credential is named, and the authenticator must verify its user.
    expect(signInWith).toMatchObject({ rpId: 'localhost', userVerification: 'required' });
    expect(signInWith.allowCredentials ?? []).toEqual([]);
    const res = await api.postJson('/auth/passkeys/sign-in', { response: ada.authenticator.assert(signInWith) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, account: { id: ada.accountId }, email: ada.email });
    expect(res.cookie).toMatch(/^cairn_session=s1\./);
    // The session is a session like any: GET /auth/session and GraphQL take it.
    const session = await door.fetch(`${live.base()}/auth/session`, { headers: { cookie: res.cookie } });
    expect(((await session.json()) as any).account.id).toBe(ada.accountId);
    const team = await api.gql({ cookie: res.cookie }, '{ getCurrentTeam { id } }');
    expect(team.errors).toBeUndefined();
    const [used] = (await listed(ada)).passkeys;
    expect(used!.lastUsedAt).not.toBeNull();
  });

  test('a challenge the service never handed out, or handed to another session, is refused', async () => {
    const bo = await person();
    const { credential } = await register(bo);
    // Sign-in: the answer signs a challenge of the client's own making.
    const forged = bo.authenticator.assert(await signInOptions(), { challenge: randomBytes(32).toString('base64url') });
    const before = await addressFailures();
    const refused = await api.postJson('/auth/passkeys/sign-in', { response: forged });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ ok: false, error: PASSKEY_STALE });
    expect(refused.cookie).toBe('');
    expect(await addressFailures()).toBe(before + 1);
    // Registration: options asked for in one session, answered in another session of the same account.
    const options = await registrationOptions(bo);
    const other = await api.signIn(bo.email);
    const { response } = bo.authenticator.register(options);
    const elsewhere = await api.postJson('/auth/passkeys/registration', { response }, other.headers);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error).toBe(PASSKEY_STALE);
    // And a challenge made up by the client, in the right session.
    const madeUp = bo.authenticator.register({ ...(await registrationOptions(bo)), challenge: randomBytes(32).toString('base64url') });
    expect((await api.postJson('/auth/passkeys/registration', { response: madeUp.response }, bo.headers)).status).toBe(400);
    // An answer for another origin (a look-alike site relaying the challenge) does not check out.
    const phished = bo.authenticator.register(await registrationOptions(bo), { origin: 'http://localhost.example.org' });
    const relayed = await api.postJson('/auth/passkeys/registration', { response: phished.response }, bo.headers);
    expect(relayed.status).toBe(400);
    expect(relayed.body.field).toBe('response');
    expect((await listed(bo)).passkeys.map((p) => p.id)).toEqual([credential.id]);
  });

  test('a replayed assertion, and a counter set back, sign no one in', async () => {
    const cy = await person();
    const { credential } = await register(cy);
    const answer = cy.authenticator.assert(await signInOptions());
    expect((await api.postJson('/auth/passkeys/sign-in', { response: answer })).status).toBe(200);
    const replayed = await api.postJson('/auth/passkeys/sign-in', { response: answer });
    expect(replayed.status).toBe(401);
    expect(replayed.body.error).toBe(PASSKEY_STALE);
    // The counter is now 1 at the service; an authenticator (a clone) that says 1 again, on a fresh challenge, is refused.
    const cloned = cy.authenticator.assert(await signInOptions(), { counter: 1 });
    const regressed = await api.postJson('/auth/passkeys/sign-in', { response: cloned });
    expect(regressed.status).toBe(401);
    expect(regressed.body).toEqual({ ok: false, error: PASSKEY_WRONG });
    // A higher counter signs in again.
    expect(
      (await api.postJson('/auth/passkeys/sign-in', { response: cy.authenticator.assert(await signInOptions(), { counter: 5 }) })).status,
    ).toBe(200);
    expect(credential.counter).toBe(5);
  });

  test('a removed passkey signs no one in; removing takes the session and its CSRF token', async () => {
    const di = await person();
    const { credential } = await register(di);
    const noCsrf = await api.postJson('/auth/passkeys/remove', { id: credential.id }, { cookie: di.headers.cookie });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.error).toMatch(/x-csrf-token/);
    const noSession = await api.postJson('/auth/passkeys/remove', { id: credential.id });
    expect(noSession.status).toBe(401);
    expect((await api.postJson('/auth/passkeys/remove', { id: credential.id }, di.headers)).body).toEqual({ ok: true });
    expect((await listed(di)).passkeys).toEqual([]);
    const res = await api.postJson('/auth/passkeys/sign-in', { response: di.authenticator.assert(await signInOptions()) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ ok: false, error: PASSKEY_WRONG });
    // Gone is gone: a second removal finds nothing.
    expect((await api.postJson('/auth/passkeys/remove', { id: credential.id }, di.headers)).status).toBe(404);
  });

  test('renaming: one’s own passkey only, trimmed, 1 to 64 characters without control characters', async () => {
    const gi = await person();
    const other = await person();
    const { credential } = await register(gi, 'Laptop');
    const { credential: theirs } = await register(other, 'Theirs');
    const rename = (id: string, name: unknown, headers: Record<string, string> = gi.headers) =>
      api.postJson('/auth/passkeys/rename', { id, name }, headers);
    const renamed = await rename(credential.id, '  Work laptop  ');
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ ok: true, passkey: { id: credential.id, name: 'Work laptop' } });
    expect((await listed(gi)).passkeys.map((p) => p.name)).toEqual(['Work laptop']);
    // 64 characters (an emoji is one) pass; 65, blank, control characters or no string do not, and nothing changes.
    expect((await rename(credential.id, '🔑'.repeat(64))).status).toBe(200);
    for (const bad of ['x'.repeat(65), '   ', '', 'Line\nbreak', 'Tab\there', 'Bell\u0007', 42, null]) {
      const res = await rename(credential.id, bad);
      expect([bad, res.status, res.body.field]).toEqual([bad, 400, 'name']);
    }
    expect((await listed(gi)).passkeys.map((p) => p.name)).toEqual(['🔑'.repeat(64)]);
    // Another account's passkey is not found, and keeps its name; so is one that does not exist.
    const foreign = await rename(theirs.id, 'Mine now');
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ ok: false, error: 'You have no such passkey' });
    expect((await listed(other)).passkeys.map((p) => p.name)).toEqual(['Theirs']);
    expect((await rename('bm8tc3VjaA', 'Nothing')).status).toBe(404);
    expect((await api.postJson('/auth/passkeys/rename', { name: 'No id' }, gi.headers)).body.field).toBe('id');
    // The session and its CSRF token, as every change.
    expect((await rename(credential.id, 'No token', { cookie: gi.headers.cookie })).status).toBe(403);
    expect((await rename(credential.id, 'No session', {})).status).toBe(401);
    // A name with a control character is refused at registration too.
    const { response } = gi.authenticator.register(await registrationOptions(gi));
    const badName = await api.postJson('/auth/passkeys/registration', { response, name: 'New\rline' }, gi.headers);
    expect(badName.body).toMatchObject({ ok: false, field: 'name' });
  });

  test('the state-changing passkey routes want the CSRF token, and the session', async () => {
    const ed = await person();
    const cookieOnly = { cookie: ed.headers.cookie };
    for (const [path, body] of [
      ['/auth/passkeys/registration/options', {}],
      ['/auth/passkeys/registration', { response: {} }],
      ['/auth/passkeys/required', { required: true }],
    ] as const) {
      const res = await api.postJson(path, body, cookieOnly);
      expect([path, res.status, res.body.ok]).toEqual([path, 403, false]);
      expect((await api.postJson(path, body)).status).toBe(401);
    }
    // A page of another site cannot send JSON without a preflight: a form's body is refused before anything.
    const form = await door.fetch(`${live.base()}/auth/passkeys/registration/options`, {
      method: 'POST',
      headers: { ...ed.headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=b',
    });
    expect(form.status).toBe(415);
    expect((await door.fetch(`${live.base()}/auth/passkeys`)).status).toBe(401);
  });

  test('a passkey after the password: no session until it verifies, only the account’s own passkey, the last one kept', async () => {
    const fy = await person();
    const other = await person();
    // Nothing to ask for yet.
    const none = await api.postJson('/auth/passkeys/required', { required: true }, fy.headers);
    expect(none.status).toBe(409);
    const { credential } = await register(fy, 'Phone');
    await register(other);
    // Turned on, with ten recovery codes (recovery-codes.test.ts has what they do).
    expect((await api.postJson('/auth/passkeys/required', { required: true }, fy.headers)).body).toEqual({
      ok: true,
      required: true,
      recoveryCodes: expect.arrayContaining([expect.any(String)]),
    });
    expect((await listed(fy)).required).toBe(true);

    // A wrong password is still just that.
    expect((await api.postJson('/auth/sign-in', { email: fy.email, password: 'not the password at all' })).status).toBe(401);
    const step = await api.postJson('/auth/sign-in', { email: fy.email, password: PASSWORD });
    expect(step.status).toBe(401);
    expect(step.cookie).toBe('');
    expect(step.body).toMatchObject({ ok: false, error: SECOND_FACTOR_ASKED, secondFactor: 'passkey', recoveryCodes: true });
    // The account's own passkeys are named; the authenticator need only show presence.
    expect(step.body.options.allowCredentials).toEqual([{ id: credential.id, type: 'public-key', transports: ['internal'] }]);
    expect(step.body.csrfToken).toBeUndefined();

    // Another account's passkey over this challenge is refused, and uses the challenge up, counted against the e-mail.
    const foreign = other.authenticator.assert(step.body.options, { credential: other.authenticator.credentials[0] });
    const refused = await api.postJson('/auth/passkeys/sign-in', { response: foreign });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe(PASSKEY_WRONG);
    const db = live.service.services.db;
    const emailCount = await db.doc.send(
      new GetCommand({ TableName: db.tables.accounts, Key: { pk: `SIGNIN#email#${tokenDigest(fy.email)}`, sk: 'SIGNIN' } }),
    );
    // The wrong password and the foreign passkey: the right password did not wipe the count.
    expect(emailCount.Item?.failures).toBe(2);
    const stale = await api.postJson('/auth/passkeys/sign-in', { response: fy.authenticator.assert(step.body.options) });
    expect(stale.status).toBe(401);
    expect(stale.body.error).toBe(PASSKEY_STALE);

    // The password again, then the account's own passkey: signed in, and the e-mail's failures forgotten.
    const again = await api.postJson('/auth/sign-in', { email: fy.email, password: PASSWORD });
    const res = await api.postJson('/auth/passkeys/sign-in', { response: fy.authenticator.assert(again.body.options) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, account: { id: fy.accountId }, email: fy.email });
    expect(res.cookie).toMatch(/^cairn_session=/);
    expect(
      (
        await db.doc.send(
          new GetCommand({ TableName: db.tables.accounts, Key: { pk: `SIGNIN#email#${tokenDigest(fy.email)}`, sk: 'SIGNIN' } }),
        )
      ).Item,
    ).toBeUndefined();

    // The last passkey stays while one is asked for; turned off, it goes, and the password alone signs in again.
    const last = await api.postJson('/auth/passkeys/remove', { id: credential.id }, fy.headers);
    expect(last.status).toBe(409);
    expect(last.body.error).toMatch(/last passkey/);
    expect((await api.postJson('/auth/passkeys/required', { required: false }, fy.headers)).body).toEqual({ ok: true, required: false });
    expect((await api.postJson('/auth/passkeys/remove', { id: credential.id }, fy.headers)).status).toBe(200);
    const plain = await api.postJson('/auth/sign-in', { email: fy.email, password: PASSWORD });
    expect(plain.status).toBe(200);
    expect(plain.body.csrfToken).toEqual(expect.any(String));
    // Someone else's passkey is not this account's to remove.
    expect((await api.postJson('/auth/passkeys/remove', { id: other.authenticator.credentials[0]!.id }, fy.headers)).status).toBe(404);
    expect((await listed(other)).passkeys).toHaveLength(1);
  });

  test('passkey sign-in failures are counted per address, and a locked-out address gets no options', async () => {
    const before = await addressFailures();
    const junk = await api.postJson('/auth/passkeys/sign-in', { response: { id: 'abc', response: { clientDataJSON: 'not json' } } });
    expect(junk.status).toBe(400);
    expect(junk.body).toMatchObject({ ok: false, field: 'response' });
    expect(await addressFailures()).toBe(before + 1);
    for (const value of LOOPBACK_ADDRESSES)
      for (let i = 0; i < SIGN_IN_LIMITS.perAddress; i++) await live.service.services.signInAttempts.fail([{ scope: 'address', value }]);
    const locked = await api.postJson('/auth/passkeys/sign-in/options', {});
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(locked.body.ok).toBe(false);
  });
});

test('a service at an IP address offers no passkeys (WebAuthn wants a domain), and its web app is told so', () => {
  const atIp = loadConfig({ CAIRN_BASE_URL: 'http://127.0.0.1:4000' });
  expect(relyingParty(atIp)).toBeUndefined();
  expect(webAppConfig(atIp).passkeys).toBe(false);
  const atName = loadConfig({ CAIRN_BASE_URL: 'https://cairn.example.org' });
  expect(relyingParty(atName)).toEqual({ id: 'cairn.example.org', origin: 'https://cairn.example.org', name: 'Cairn' });
  expect(webAppConfig(atName).passkeys).toBe(true);
  expect(PASSKEYS_UNAVAILABLE).toMatch(/IP address/);
});
