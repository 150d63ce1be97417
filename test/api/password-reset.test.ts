/**
 * New passwords, through both doors, against the local service sending
 * mail to a real SMTP server the test starts: a reset link asked by
 * e-mail (the same answer for every e-mail, the link read from the parsed
 * message), used once within its hour to set a password and sign the
 * account out everywhere; a change while signed in, which keeps only the
 * browser that made it. Every refusal: used, expired (its expiry moved
 * back in the table), outdated by a later password, the limits per e-mail
 * and per address, no CSRF token, a wrong current password; and where no
 * mail can be sent. Last, the first owner's welcome link, which the
 * service's first start made with its default account.
 */
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { RESET_ASKED, RESET_RATES } from '../../functions/core/auth/password-reset.js';
import { hashPassword } from '../../functions/core/auth/passwords.js';
import { ACCOUNT_LINK_SECONDS } from '../../functions/core/data/account-links.js';
import { tokenDigest } from '../../functions/core/ids.js';
import { accountsService, apiBase, authClient, doorTag, LOOPBACK_ADDRESSES, NODE_DOOR, PASSWORD } from '../support/accounts-service.js';
import type { Door } from '../support/graphql.js';
import { startTestService, type TestService } from '../support/service.js';

const live = accountsService({ CAIRN_GC_INTERVAL: '0' }, { mailFrom: 'cairn@example.org' });

const NEW_PASSWORD = 'a new and longer passphrase';
const TEAM = '{ getCurrentTeam { id } }';

const resetToken = (link: string) => link.slice(link.indexOf('/#/reset-password/') + '/#/reset-password/'.length);

/** The routes as these tests read them: a POST's status and parsed answer, a GraphQL request's status. */
function client(door: Door, base: () => string) {
  const api = authClient(door, base);
  return {
    post: api.postJson,
    gql: async (headers: Record<string, string>, query: string) => (await api.gql(headers, query)).status,
    signIn: api.signIn,
  };
}

let made = 0;
async function person(svc: TestService, prefix: string) {
  const name = `${prefix}-${process.pid}-${++made}`.toLowerCase();
  const email = `${name}@example.org`;
  const { account } = await svc.services.accounts.createAccount({ name });
  await svc.services.people.add(account.id, email, await hashPassword(PASSWORD));
  return { account, email, name };
}

/** The address limit's counts start from none in each test (its own test fills one). */
async function forgetAddressCounts(): Promise<void> {
  const db = live.service.services.db;
  for (const value of LOOPBACK_ADDRESSES)
    await db.doc.send(
      new DeleteCommand({ TableName: db.tables.accounts, Key: { pk: `RATE#${RESET_RATES.address.action}#${value}`, sk: 'RATE' } }),
    );
}

describe.each(live.doors)('new passwords through the $name', (door) => {
  const tag = doorTag(door);
  const api = client(door, live.base);
  const signIn = api.signIn;
  const askLink = async (email: string) => {
    const asked = await api.post('/auth/password-reset/request', { email });
    expect([asked.status, asked.body]).toEqual([202, { ok: true, message: RESET_ASKED }]);
    return resetToken(live.smtp.linkIn((await live.smtp.next(email)).mail));
  };

  beforeEach(forgetAddressCounts);

  test('a reset link by e-mail sets the password once and signs the account out everywhere', async () => {
    const who = await person(live.service, `reset-${tag}`);
    const [a, b] = [await signIn(who.email), await signIn(who.email)];
    expect(await api.gql(a.headers, TEAM)).toBe(200);

    const asked = await api.post('/auth/password-reset/request', { email: `  ${who.email.toUpperCase()} ` });
    expect([asked.status, asked.body]).toEqual([202, { ok: true, message: RESET_ASKED }]);
    const { mail, from } = await live.smtp.next(who.email);
    expect(from).toBe('cairn@example.org');
    expect(mail.subject).toBe('Set a new password for Cairn');
    const link = live.smtp.linkIn(mail);
    expect(link.startsWith(`${live.service.config.urls.baseUrl}/#/reset-password/l1.`)).toBe(true);
    const token = resetToken(link);
    // Kept by its digest only, for an hour.
    const db = live.service.services.db;
    const item = (
      await db.doc.send(new GetCommand({ TableName: db.tables.accounts, Key: { pk: `LINK#${tokenDigest(token)}`, sk: 'RESET' } }))
    ).Item!;
    expect(JSON.stringify(item)).not.toContain(token);
    expect(Math.abs(Number(item.expiresAt) - (Date.now() / 1000 + ACCOUNT_LINK_SECONDS.RESET))).toBeLessThan(5);

    // A password too short is refused, and the link still works after it.
    const short = await api.post('/auth/password-reset', { token, password: 'short' });
    expect([short.status, short.body.field]).toEqual([400, 'password']);
    const done = await api.post('/auth/password-reset', { token, password: NEW_PASSWORD });
    expect([done.status, done.body]).toEqual([200, { ok: true, email: who.email, ended: 2 }]);
    for (const s of [a, b]) expect(await api.gql(s.headers, TEAM)).toBe(401);
    expect((await signIn(who.email)).status).toBe(401);
    expect((await signIn(who.email, NEW_PASSWORD)).status).toBe(200);

    const again = await api.post('/auth/password-reset', { token, password: 'yet another password' });
    expect([again.status, again.body.error]).toEqual([
      410,
      expect.stringMatching(/^This link to set a new password is not valid, used, or expired/),
    ]);
    expect((await signIn(who.email, NEW_PASSWORD)).status).toBe(200);
  });

  test('an unknown e-mail gets the very same answer, and no message goes anywhere', async () => {
    const who = await person(live.service, `known-${tag}`);
    const ghost = `ghost-${tag}-${process.pid}-${++made}@example.org`;
    const before = live.smtp.messages.length;
    const unknown = await api.post('/auth/password-reset/request', { email: ghost });
    const known = await api.post('/auth/password-reset/request', { email: who.email });
    expect([unknown.status, unknown.text]).toEqual([known.status, known.text]);
    await live.smtp.next(who.email);
    expect(live.smtp.messages.slice(before).flatMap((m) => m.to)).toEqual([who.email]);
    expect((await api.post('/auth/password-reset/request', { email: 'not an address' })).status).toBe(400);
  });

  test('a link expires after its hour, and one asked before a newer password no longer works', async () => {
    const who = await person(live.service, `expire-${tag}`);
    const first = await askLink(who.email);
    const second = await askLink(who.email);
    const db = live.service.services.db;
    await db.doc.send(
      new UpdateCommand({
        TableName: db.tables.accounts,
        Key: { pk: `LINK#${tokenDigest(first)}`, sk: 'RESET' },
        UpdateExpression: 'SET expiresAt = :past',
        ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 1 },
      }),
    );
    expect((await api.post('/auth/password-reset', { token: first, password: NEW_PASSWORD })).status).toBe(410);
    // The password changes (signed in, with the current one): the second link, asked under the old, is over.
    const session = await signIn(who.email);
    expect((await api.post('/auth/password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, session.headers)).status).toBe(200);
    expect((await api.post('/auth/password-reset', { token: second, password: 'a third password here' })).status).toBe(410);
    expect((await api.post('/auth/password-reset', { token: 'l1.nothing', password: NEW_PASSWORD })).status).toBe(410);
    expect((await signIn(who.email, NEW_PASSWORD)).status).toBe(200);
  });

  test('three links an hour per e-mail (then the same answer, and no mail); twenty per address (then 429)', async () => {
    const who = await person(live.service, `limit-${tag}`);
    for (let i = 0; i < RESET_RATES.email.count; i++) await askLink(who.email);
    const before = live.smtp.messages.length;
    const fourth = await api.post('/auth/password-reset/request', { email: who.email });
    expect([fourth.status, fourth.body.message]).toEqual([202, RESET_ASKED]);
    // The next person's message arriving shows the fourth was never sent, rather than late.
    const next = await person(live.service, `limit-next-${tag}`);
    await askLink(next.email);
    expect(live.smtp.messages.slice(before).flatMap((m) => m.to)).toEqual([next.email]);

    for (const value of LOOPBACK_ADDRESSES)
      for (let i = 0; i < RESET_RATES.address.count; i++) await live.service.services.rateLimits.take(RESET_RATES.address, value);
    const locked = await api.post('/auth/password-reset/request', { email: `other-${made}@example.org` });
    expect([locked.status, locked.body.error]).toEqual([429, expect.stringMatching(/^Too many reset links asked for/)]);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(3000);
  });

  test('a change signed in wants the CSRF token and the current password, and signs the other sessions out', async () => {
    const who = await person(live.service, `change-${tag}`);
    const [mine, other] = [await signIn(who.email), await signIn(who.email)];
    const change = { currentPassword: PASSWORD, newPassword: NEW_PASSWORD };
    expect((await api.post('/auth/password', change, { cookie: mine.headers.cookie })).status).toBe(403);
    expect((await api.post('/auth/password', change)).status).toBe(401);
    const wrong = await api.post('/auth/password', { ...change, currentPassword: 'not the password' }, mine.headers);
    expect([wrong.status, wrong.body.field]).toEqual([400, 'currentPassword']);
    const weak = await api.post('/auth/password', { ...change, newPassword: 'short' }, mine.headers);
    expect([weak.status, weak.body.field]).toEqual([400, 'newPassword']);

    const done = await api.post('/auth/password', change, mine.headers);
    expect([done.status, done.body]).toEqual([200, { ok: true, ended: 1 }]);
    expect(await api.gql(mine.headers, TEAM)).toBe(200);
    expect(await api.gql(other.headers, TEAM)).toBe(401);
    expect((await signIn(who.email)).status).toBe(401);
    expect((await signIn(who.email, NEW_PASSWORD)).status).toBe(200);
    // The browser that changed it stays in: it still signs out as itself.
    expect((await api.post('/auth/sign-out', {}, mine.headers)).status).toBe(200);
  });
});

describe('the first owner', () => {
  const api = client(NODE_DOOR, live.base);

  test('the first start made a welcome link with the default account; it gives it an e-mail and password, once', async () => {
    const welcome = live.service.bootstrap.welcome!;
    expect(welcome.url).toMatch(
      new RegExp(`^${live.service.config.urls.baseUrl.replace(/[.]/g, '\\.')}/#/welcome/l1\\.[A-Za-z0-9_-]{43}$`),
    );
    const token = welcome.url.slice(welcome.url.indexOf('/#/welcome/') + '/#/welcome/'.length);
    const owner = 'first-owner@example.org';
    const bad = await api.post('/auth/first-owner', { token, email: owner, password: 'short' });
    expect([bad.status, bad.body.field]).toEqual([400, 'password']);
    const claimed = await api.post('/auth/first-owner', { token, email: 'First-Owner@Example.org', password: PASSWORD });
    expect(claimed.status).toBe(201);
    expect(claimed.body).toMatchObject({ ok: true, account: { name: 'default' }, email: owner, csrfToken: expect.any(String) });
    const defaultAccount = (await live.service.services.accounts.getAccountByName('default'))!;
    expect(await api.gql({ cookie: claimed.cookie }, TEAM)).toBe(200);
    expect(await live.service.services.people.emailOf(defaultAccount.id)).toBe(owner);
    // Once only.
    const again = await api.post('/auth/first-owner', { token, email: 'someone@example.org', password: PASSWORD });
    expect(again.status).toBe(410);
    // Another welcome link for an account that has its owner already changes nothing.
    const late = await live.service.services.accountLinks.create('WELCOME', { accountId: defaultAccount.id });
    const taken = await api.post('/auth/first-owner', { token: late, email: 'intruder@example.org', password: PASSWORD });
    expect([taken.status, taken.body.error]).toEqual([410, 'The first account has an owner already: sign in']);
    expect(await live.service.services.people.emailOf(defaultAccount.id)).toBe(owner);
    // The API key printed at the first start still works beside it.
    expect(await api.gql({ authorization: live.service.env.CAIRN_BOOTSTRAP_API_TOKEN ?? '' }, TEAM)).toBe(200);
  });

  test('an expired welcome link opens nothing', async () => {
    const { account } = await live.service.services.accounts.createAccount({ name: `welcome-${process.pid}` });
    const token = await live.service.services.accountLinks.create('WELCOME', { accountId: account.id });
    const db = live.service.services.db;
    await db.doc.send(
      new UpdateCommand({
        TableName: db.tables.accounts,
        Key: { pk: `LINK#${tokenDigest(token)}`, sk: 'WELCOME' },
        UpdateExpression: 'SET expiresAt = :past',
        ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 1 },
      }),
    );
    const res = await api.post('/auth/first-owner', { token, email: 'late@example.org', password: PASSWORD });
    expect(res.status).toBe(410);
    expect(await live.service.services.people.emailOf(account.id)).toBeUndefined();
  });
});

describe('without mail', () => {
  let quiet: TestService;
  beforeAll(async () => {
    quiet = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  }, 120_000);
  afterAll(async () => {
    await quiet?.close();
  });

  test('asking for a reset link says the service sends no mail, for every e-mail alike', async () => {
    const api = client(NODE_DOOR, () => apiBase(quiet));
    const who = await person(quiet, 'quiet');
    const known = await api.post('/auth/password-reset/request', { email: who.email });
    const unknown = await api.post('/auth/password-reset/request', { email: 'nobody@example.org' });
    expect([known.status, known.text]).toEqual([503, unknown.text]);
    expect(known.body.error).toBe('This service sends no e-mail: ask its operator to set a new password for you');
  });
});
