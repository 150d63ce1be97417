/**
 * Recovery codes through both doors (the node:http server and the GraphQL
 * Lambda handler behind an HTTP API): made from a session (with its CSRF
 * token), shown once and kept only as digests, replaced whole when made
 * again, made when the passkey after the password is turned on, and given
 * at the second step of a sign-in instead of the passkey: each code once,
 * even when two requests race with it, a wrong one counted as a failed
 * sign-in of the e-mail. The passkeys are a software authenticator's
 * (test/support/passkey-authenticator.ts); the service runs at
 * `http://localhost:<port>`, where passkeys are offered.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { normaliseRecoveryCode, RECOVERY_CODE_STALE, RECOVERY_CODE_WRONG } from '../../functions/core/auth/recovery-codes.js';
import { SECOND_FACTOR_ASKED } from '../../functions/core/auth/passkeys.js';
import { tokenDigest } from '../../functions/core/ids.js';
import { SIGN_IN_LIMITS } from '../../functions/core/data/sign-in-attempts.js';
import { accountsService, authClient, doorTag, LOOPBACK_ADDRESSES, PASSWORD } from '../support/accounts-service.js';
import type { Door } from '../support/graphql.js';
import { SoftwareAuthenticator } from '../support/passkey-authenticator.js';
import { freePort } from '../support/service-env.js';

const live = accountsService(async () => {
  const port = await freePort();
  return { CAIRN_SIGNUP: 'open', CAIRN_GC_INTERVAL: '0', CAIRN_API_PORT: String(port), CAIRN_BASE_URL: `http://localhost:${port}` };
});

const origin = () => new URL(live.service.config.urls.baseUrl).origin;
const CODE_FORMAT = /^[0-9a-hjkmnp-tv-z]{4}-[0-9a-hjkmnp-tv-z]{4}-[0-9a-hjkmnp-tv-z]{4}-[0-9a-hjkmnp-tv-z]{4}$/;

beforeEach(async () => {
  for (const value of LOOPBACK_ADDRESSES) await live.service.services.signInAttempts.clear({ scope: 'address', value });
});

async function emailFailures(email: string): Promise<number> {
  const db = live.service.services.db;
  const item = await db.doc.send(
    new GetCommand({ TableName: db.tables.accounts, Key: { pk: `SIGNIN#email#${tokenDigest(email)}`, sk: 'SIGNIN' } }),
  );
  return Number(item.Item?.failures ?? 0);
}

test('a typed code is read leniently, and nothing else is a code', () => {
  expect(normaliseRecoveryCode('7K2M-Q9XA-C4TH-W0NP')).toBe('7k2mq9xac4thw0np');
  expect(normaliseRecoveryCode(' 7k2m q9xa c4th wonp ')).toBe('7k2mq9xac4thw0np');
  expect(normaliseRecoveryCode('ilil-0000-0000-0000')).toBe('1111000000000000');
  expect(normaliseRecoveryCode('7k2m-q9xa-c4th-w0n')).toBeUndefined();
  expect(normaliseRecoveryCode('7k2m-q9xa-c4th-w0nu')).toBeUndefined();
  expect(normaliseRecoveryCode('x'.repeat(65))).toBeUndefined();
  expect(normaliseRecoveryCode(12)).toBeUndefined();
});

describe.each(live.doors)('recovery codes through the $name', (door: Door) => {
  const tag = doorTag(door);
  const api = authClient(door, live.base);
  let n = 0;

  /** A new person, signed up and in, with a passkey and (`required`) the passkey asked for after the password. */
  async function person(options: { required?: boolean } = {}) {
    const name = `rc-${tag}-${++n}-${randomBytes(3).toString('hex')}`;
    const email = `${name}@example.org`;
    const res = await api.postJson('/auth/sign-up', { email, password: PASSWORD, name });
    expect(res.status).toBe(201);
    const headers = { cookie: res.cookie, 'x-csrf-token': res.body.csrfToken as string };
    const authenticator = new SoftwareAuthenticator(origin());
    const options0 = await api.postJson('/auth/passkeys/registration/options', {}, headers);
    const { response } = authenticator.register(options0.body.options);
    expect((await api.postJson('/auth/passkeys/registration', { response, name: 'Phone' }, headers)).status).toBe(201);
    let codes: string[] = [];
    if (options.required) {
      const on = await api.postJson('/auth/passkeys/required', { required: true }, headers);
      expect(on.status).toBe(200);
      codes = on.body.recoveryCodes;
    }
    return { email, accountId: res.body.account.id as string, headers, authenticator, codes };
  }

  const status = async (headers: { cookie: string }) => {
    const res = await door.fetch(`${live.base()}/auth/recovery-codes`, { headers: { cookie: headers.cookie } });
    return { status: res.status, body: (await res.json()) as any };
  };

  /** The password step: its 401 with the second factor's options (the challenge a code goes with). */
  async function passwordStep(email: string) {
    const step = await api.postJson('/auth/sign-in', { email, password: PASSWORD });
    expect(step.status).toBe(401);
    expect(step.body).toMatchObject({ ok: false, error: SECOND_FACTOR_ASKED, secondFactor: 'passkey' });
    expect(step.cookie).toBe('');
    return step.body as { options: { challenge: string }; recoveryCodes: boolean };
  }

  test('turning the passkey on makes ten codes, shown once; made again they replace the old ones; the table holds digests', async () => {
    const ada = await person();
    expect(await status(ada.headers)).toEqual({ status: 200, body: { ok: true, remaining: 0, createdAt: null } });
    const on = await api.postJson('/auth/passkeys/required', { required: true }, ada.headers);
    expect(on.body).toMatchObject({ ok: true, required: true });
    const first: string[] = on.body.recoveryCodes;
    expect(first).toHaveLength(10);
    for (const code of first) expect(code).toMatch(CODE_FORMAT);
    expect(new Set(first).size).toBe(10);
    expect((await status(ada.headers)).body).toMatchObject({ remaining: 10, createdAt: expect.any(String) });
    // Turned off and on again with codes left: none are made (the person has theirs).
    await api.postJson('/auth/passkeys/required', { required: false }, ada.headers);
    const again = await api.postJson('/auth/passkeys/required', { required: true }, ada.headers);
    expect(again.body).toEqual({ ok: true, required: true });
    // Only digests are kept: no code appears in the account's item.
    const db = live.service.services.db;
    const item = (
      await db.doc.send(new GetCommand({ TableName: db.tables.accounts, Key: { pk: `ACCOUNT#${ada.accountId}`, sk: 'RECOVERYCODES' } }))
    ).Item!;
    const stored = JSON.stringify([...(item.codes as Set<string>)]);
    for (const code of first) {
      expect(stored).not.toContain(code);
      expect(stored).not.toContain(normaliseRecoveryCode(code));
    }
    // Made again: ten new ones, and an old one signs no one in.
    const made = await api.postJson('/auth/recovery-codes', {}, ada.headers);
    expect(made.status).toBe(201);
    expect(made.body.codes).toHaveLength(10);
    expect(made.body.codes.filter((c: string) => first.includes(c))).toEqual([]);
    const step = await passwordStep(ada.email);
    expect(step.recoveryCodes).toBe(true);
    const old = await api.postJson('/auth/recovery-codes/sign-in', { challenge: step.options.challenge, code: first[0] });
    expect(old.status).toBe(401);
    expect(old.body).toEqual({ ok: false, error: RECOVERY_CODE_WRONG });
    expect(old.cookie).toBe('');
    const step2 = await passwordStep(ada.email);
    const fresh = await api.postJson('/auth/recovery-codes/sign-in', { challenge: step2.options.challenge, code: made.body.codes[0] });
    expect(fresh.status).toBe(200);
  });

  test('making codes takes the session and its CSRF token', async () => {
    const bo = await person();
    const noCsrf = await api.postJson('/auth/recovery-codes', {}, { cookie: bo.headers.cookie });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.ok).toBe(false);
    expect((await api.postJson('/auth/recovery-codes', {})).status).toBe(401);
    expect((await door.fetch(`${live.base()}/auth/recovery-codes`)).status).toBe(401);
    const form = await door.fetch(`${live.base()}/auth/recovery-codes`, {
      method: 'POST',
      headers: { ...bo.headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=b',
    });
    expect(form.status).toBe(415);
    expect((await status(bo.headers)).body.remaining).toBe(0);
    expect((await door.fetch(`${live.base()}/auth/recovery-codes/sign-in`)).status).toBe(405);
  });

  test('a code instead of the passkey signs in once; a replay, a stale challenge, another account’s code are refused', async () => {
    const cy = await person({ required: true });
    const other = await person({ required: true });
    const step = await passwordStep(cy.email);
    expect(step.recoveryCodes).toBe(true);
    // Typed in capitals and without hyphens: the same code.
    const typed = cy.codes[0]!.toUpperCase().replace(/-/g, '');
    const res = await api.postJson('/auth/recovery-codes/sign-in', { challenge: step.options.challenge, code: typed });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, account: { id: cy.accountId }, email: cy.email, csrfToken: expect.any(String) });
    expect(res.cookie).toMatch(/^cairn_session=/);
    const session = await door.fetch(`${live.base()}/auth/session`, { headers: { cookie: res.cookie } });
    expect(((await session.json()) as any).account.id).toBe(cy.accountId);
    expect((await status({ cookie: res.cookie })).body.remaining).toBe(9);

    // The same challenge again: taken.
    const stale = await api.postJson('/auth/recovery-codes/sign-in', { challenge: step.options.challenge, code: cy.codes[1] });
    expect(stale.status).toBe(401);
    expect(stale.body).toEqual({ ok: false, error: RECOVERY_CODE_STALE });
    // The same code with a new challenge: used.
    const replay = await api.postJson('/auth/recovery-codes/sign-in', {
      challenge: (await passwordStep(cy.email)).options.challenge,
      code: typed,
    });
    expect(replay.status).toBe(401);
    expect(replay.body.error).toBe(RECOVERY_CODE_WRONG);
    // Another account's code over this account's challenge: not this account's.
    const foreign = await api.postJson('/auth/recovery-codes/sign-in', {
      challenge: (await passwordStep(cy.email)).options.challenge,
      code: other.codes[0],
    });
    expect(foreign.status).toBe(401);
    expect((await status(other.headers)).body.remaining).toBe(10);
    // A challenge of a usernameless passkey sign-in proves no password: it is not a second step's.
    const usernameless = await api.postJson('/auth/passkeys/sign-in/options', {});
    const noPassword = await api.postJson('/auth/recovery-codes/sign-in', {
      challenge: usernameless.body.options.challenge,
      code: cy.codes[2],
    });
    expect(noPassword.status).toBe(401);
    expect(noPassword.body.error).toBe(RECOVERY_CODE_STALE);
    // Nor does a made-up one.
    const madeUp = await api.postJson('/auth/recovery-codes/sign-in', {
      challenge: randomBytes(32).toString('base64url'),
      code: cy.codes[2],
    });
    expect(madeUp.status).toBe(401);
    // Bad input names its field.
    const bad = await api.postJson('/auth/recovery-codes/sign-in', { challenge: 'a b', code: cy.codes[2] });
    expect(bad.body).toMatchObject({ ok: false, field: 'challenge' });
    expect(bad.status).toBe(400);
    const noCode = await api.postJson('/auth/recovery-codes/sign-in', { challenge: 'abc', code: ['x'] });
    expect(noCode.body).toMatchObject({ ok: false, field: 'code' });
    expect((await status({ cookie: res.cookie })).body.remaining).toBe(9);
  });

  test('two sign-ins at once with one code: exactly one session', async () => {
    const di = await person({ required: true });
    const steps = await Promise.all(Array.from({ length: 4 }, () => passwordStep(di.email)));
    const code = di.codes[3]!;
    const answers = await Promise.all(
      steps.map((step) => api.postJson('/auth/recovery-codes/sign-in', { challenge: step.options.challenge, code })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401]);
    expect(answers.filter((a) => a.cookie !== '')).toHaveLength(1);
    expect((await status(di.headers)).body.remaining).toBe(9);
  });

  test('a wrong code counts as a failed sign-in of the e-mail; at the limit even a right code is refused', async () => {
    const ed = await person({ required: true });
    const before = await emailFailures(ed.email);
    const wrong = await api.postJson('/auth/recovery-codes/sign-in', {
      challenge: (await passwordStep(ed.email)).options.challenge,
      code: '0000-0000-0000-0000',
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe(RECOVERY_CODE_WRONG);
    expect(await emailFailures(ed.email)).toBe(before + 1);
    // Not a code at all: counted the same.
    await api.postJson('/auth/recovery-codes/sign-in', { challenge: (await passwordStep(ed.email)).options.challenge, code: 'nope' });
    expect(await emailFailures(ed.email)).toBe(before + 2);
    // The e-mail at its limit: the password step and the code step are both refused, the code kept.
    const step = await passwordStep(ed.email);
    for (let i = await emailFailures(ed.email); i < SIGN_IN_LIMITS.perEmail; i++)
      await live.service.services.signInAttempts.fail([{ scope: 'email', value: ed.email }]);
    const locked = await api.postJson('/auth/recovery-codes/sign-in', { challenge: step.options.challenge, code: ed.codes[0] });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await status(ed.headers)).body.remaining).toBe(10);
    await live.service.services.signInAttempts.clear({ scope: 'email', value: ed.email });
  });
});
