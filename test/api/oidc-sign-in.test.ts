/**
 * Sign-in with an OpenID Connect provider, through both doors, against a
 * real provider the test starts (test/support/oidc-provider.ts) and the
 * local service with CAIRN_SIGNUP=invite (the default): the flow driven
 * over HTTP as a browser would (start, the provider's login and consent
 * pages, the callback); the session it makes works for GraphQL; a second
 * sign-in of the same subject is the same account; every refusal comes
 * back to the sign-in page, never a 500: a forged state, a replayed code,
 * a callback without a started flow, a denial at the provider, an e-mail
 * the provider did not verify, sign-up without an invitation, and an
 * e-mail that already has a password account (not taken over).
 */
import { newAccessKeyId, newApiToken, newSecretAccessKey } from '../../functions/core/ids.js';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { hashPassword } from '../../functions/core/auth/passwords.js';
import { oidcIdentity } from '../../functions/core/data/oidc-identities.js';
import type { Door } from '../support/graphql.js';
import { accountsService, PASSWORD } from '../support/accounts-service.js';
import { oidcEnv, startOidcProvider, throughProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { freePort } from '../support/service-env.js';

let provider: TestOidcProvider;
const live = accountsService(async () => {
  provider = await startOidcProvider();
  return {
    CAIRN_GC_INTERVAL: '0',
    CAIRN_API_PORT: String(await freePort()),
    ...oidcEnv(provider),
  };
});
let service: typeof live.service;
let base: string;

beforeAll(() => {
  service = live.service;
  base = service.config.urls.baseUrl; // the redirect URI the service sends the provider is under its own base URL
  provider.register(`${base}/auth/oidc/callback`);
});

afterAll(async () => {
  await provider?.close();
});

let made = 0;

describe.each(live.doors)('OpenID Connect sign-in through the $name', (door: Door) => {
  const tag = door.name.startsWith('node') ? 'n' : 'l';
  const unique = (what: string) => `${what}-${tag}-${process.pid}-${++made}`;
  const get = (url: string, cookie = '') => door.fetch(url, { headers: cookie ? { cookie } : {}, redirect: 'manual' } as never);
  const cookieOf = (res: Response, name: RegExp) =>
    res.headers.getSetCookie().find((c) => name.test(c.split('=')[0]!) && !/Max-Age=0/.test(c));

  /** POST /auth/oidc/start: the provider's URL, and the flow cookie the browser would keep. */
  async function start(body: Record<string, unknown> = {}) {
    const res = await door.fetch(`${base}/auth/oidc/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    const { url } = (await res.json()) as { url: string };
    const flow = cookieOf(res, /cairn_oidc$/)!;
    expect(flow).toMatch(/HttpOnly; SameSite=Lax/);
    return { url, flow: flow.split(';')[0]! };
  }

  /** The whole flow for `login`: the callback's answer, its Location and the session cookie it set, if any. */
  async function signInAs(login: string, body: Record<string, unknown> = {}) {
    const { url, flow } = await start(body);
    const callback = await throughProvider(url, login, `${base}/auth/oidc/callback`);
    const res = await get(callback, flow);
    const session = cookieOf(res, /cairn_session$/)?.split(';')[0];
    return { status: res.status, location: res.headers.get('location'), session, callback, flow };
  }

  const whoAmI = async (cookie: string) => {
    const res = await door.fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie },
      body: JSON.stringify({ query: '{ getCurrentMember { accountId accountName role } getCurrentTeam { name } }' }),
    });
    return (await res.json()) as {
      data?: { getCurrentMember: { accountId: string; accountName: string }; getCurrentTeam: { name: string } };
    };
  };

  /** An owner with an API key, who invites `email` to their team; the invitation's token. */
  async function invite(email: string) {
    const apiKey = newApiToken();
    const { account } = await service.services.accounts.createAccount({
      name: unique('owner'),
      accessKeyId: newAccessKeyId(),
      secretAccessKey: newSecretAccessKey(),
      apiToken: apiKey,
    });
    const res = await door.fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: apiKey },
      body: JSON.stringify({
        query: 'mutation ($t: ID!, $e: String!) { inviteTeamMember(teamId: $t, email: $e) { link } }',
        variables: { t: account.defaultTeamId, e: email },
      }),
    });
    const link = ((await res.json()) as { data: { inviteTeamMember: { link: string } } }).data.inviteTeamMember.link;
    return { token: link.slice(link.indexOf('/#/invitation/') + '/#/invitation/'.length), team: account };
  }

  test('the sign-in page is told the provider by name, never its secret', async () => {
    const res = await get(`${base}/app/config.json`);
    const text = await res.text();
    expect(JSON.parse(text).oidc).toEqual({ name: 'Test ID' });
    expect(text).not.toContain(provider.clientSecret);
  });

  test('by invitation: the flow signs up with the verified e-mail, joins the team, and the session works for GraphQL', async () => {
    const login = unique('ada');
    const email = `${login}@example.org`;
    provider.people.set(login, { email, email_verified: true });
    const { token, team } = await invite(email);

    const done = await signInAs(login, { invitation: token });
    expect(done.status).toBe(303);
    expect(done.location).toBe('/');
    expect(done.session).toBeDefined();
    const me = await whoAmI(done.session!);
    expect(me.data?.getCurrentMember.accountName).toBe(login);
    expect(me.data?.getCurrentTeam.name).toBe(login);
    const accountId = me.data!.getCurrentMember.accountId;
    // Linked by the provider's subject, and a member of the inviting team.
    expect((await oidcIdentity(service.services.db, provider.issuer, login))?.accountId).toBe(accountId);
    expect((await service.services.teams.listByAccount(accountId)).map((m) => m.teamId)).toContain(team.defaultTeamId);
    expect((await service.services.people.byEmail(email))?.accountId).toBe(accountId);
    // Its password is one nobody knows: the session says so (Settings offers a link to set one, not a change).
    const session = await door.fetch(`${base}/auth/session`, { headers: { cookie: done.session! } });
    expect(((await session.json()) as { passwordSet: boolean }).passwordSet).toBe(false);
    // A reset link's new password is one its person knows.
    const identity = (await service.services.people.byEmail(email))!;
    expect(identity.passwordUnknown).toBe(true);
    await service.services.db.doc.send(
      new TransactWriteCommand({ TransactItems: [service.services.people.hashChange(identity, await hashPassword(PASSWORD))] }),
    );
    const after = await door.fetch(`${base}/auth/session`, { headers: { cookie: done.session! } });
    expect(((await after.json()) as { passwordSet: boolean }).passwordSet).toBe(true);

    // Again: the same account, no invitation needed; the subject, not the e-mail, finds it.
    provider.people.set(login, { email: `changed-${email}`, email_verified: true });
    const again = await signInAs(login);
    expect(again.location).toBe('/');
    expect((await whoAmI(again.session!)).data?.getCurrentMember.accountId).toBe(accountId);
  });

  test('a replayed callback is refused: the provider takes each code once', async () => {
    const login = unique('bo');
    provider.people.set(login, { email: `${login}@example.org`, email_verified: true });
    const { token } = await invite(`${login}@example.org`);
    const first = await signInAs(login, { invitation: token });
    expect(first.location).toBe('/');
    const replayed = await get(first.callback, first.flow);
    expect(replayed.status).toBe(303);
    expect(replayed.headers.get('location')).toBe('/?sign_in_error=failed');
    expect(cookieOf(replayed, /cairn_session$/)).toBeUndefined();
  });

  test('a forged state, a callback no flow started, and a denial come back to the sign-in page with their problem', async () => {
    const login = unique('cy');
    provider.people.set(login, { email: `${login}@example.org`, email_verified: true });
    const { url, flow } = await start();
    const callback = new URL(await throughProvider(url, login, `${base}/auth/oidc/callback`));
    const state = callback.searchParams.get('state')!;
    // Another state than the flow's: the provider's answer to someone else's sign-in.
    callback.searchParams.set('state', `${state}x`);
    const forged = await get(callback.href, flow);
    expect([forged.status, forged.headers.get('location')]).toEqual([303, '/?sign_in_error=failed']);
    expect(cookieOf(forged, /cairn_session$/)).toBeUndefined();
    // The flow cleared whatever the outcome.
    expect(forged.headers.getSetCookie().some((c) => /cairn_oidc=;.*Max-Age=0/.test(c))).toBe(true);
    // The right state but no flow cookie (another browser, or over 10 minutes).
    callback.searchParams.set('state', state);
    const noFlow = await get(callback.href);
    expect(noFlow.headers.get('location')).toBe('/?sign_in_error=expired');
    // The person declined at the provider.
    const declined = await start();
    const declinedState = new URL(declined.url).searchParams.get('state')!;
    const denied = await get(`${base}/auth/oidc/callback?error=access_denied&state=${declinedState}`, declined.flow);
    expect(denied.headers.get('location')).toBe('/?sign_in_error=denied');
  });

  test('an e-mail with a password account is not taken over; an unverified one and one without an invitation make nothing', async () => {
    // A person who signed up with a password; someone at the provider claims (and verified) the same e-mail.
    const owner = unique('dee');
    const email = `${owner}@example.org`;
    const { account } = await service.services.accounts.createAccount({ name: owner });
    await service.services.people.add(account.id, email, await hashPassword(PASSWORD));
    const intruder = unique('intruder');
    provider.people.set(intruder, { email: email.toUpperCase(), email_verified: true });
    const takeover = await signInAs(intruder);
    expect(takeover.location).toBe('/?sign_in_error=email-taken');
    expect(takeover.session).toBeUndefined();
    expect(await oidcIdentity(service.services.db, provider.issuer, intruder)).toBeUndefined();
    // The password still signs in to the account, which is still the only one with that e-mail.
    const password = await door.fetch(`${base}/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    });
    expect(password.status).toBe(200);
    expect((await service.services.people.byEmail(email))?.accountId).toBe(account.id);

    const unverified = unique('eve');
    provider.people.set(unverified, { email: `${unverified}@example.org`, email_verified: false });
    expect((await signInAs(unverified)).location).toBe('/?sign_in_error=email-unverified');
    const uninvited = unique('fay');
    provider.people.set(uninvited, { email: `${uninvited}@example.org`, email_verified: true });
    expect((await signInAs(uninvited)).location).toBe('/?sign_in_error=invite-only');
    expect(await service.services.people.byEmail(`${uninvited}@example.org`)).toBeUndefined();
  });
});
