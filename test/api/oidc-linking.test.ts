/**
 * Linking an OpenID Connect provider to an existing account from Settings,
 * and unlinking it, through both doors, against a real provider the test
 * starts (test/support/oidc-provider.ts): the flow driven over HTTP as a
 * browser would. The link lands on the account of the session that
 * started it, and only there: a callback met with another session, or
 * none, links nothing; an identity linked to another account is refused,
 * never moved; unlinking is refused while it is the only way in.
 */
import { randomBytes } from 'node:crypto';
import { oidcIdentity } from '../../functions/core/data/oidc-identities.js';
import type { Door } from '../support/graphql.js';
import { accountsService, authClient, doorTag, PASSWORD } from '../support/accounts-service.js';
import { oidcEnv, startOidcProvider, throughProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { freePort } from '../support/service-env.js';

let provider: TestOidcProvider;
const live = accountsService(async () => {
  provider = await startOidcProvider();
  return { CAIRN_GC_INTERVAL: '0', CAIRN_SIGNUP: 'open', CAIRN_API_PORT: String(await freePort()), ...oidcEnv(provider) };
});
let base: string;

beforeAll(() => {
  base = live.service.config.urls.baseUrl;
  provider.register(`${base}/auth/oidc/callback`);
});

afterAll(async () => {
  await provider?.close();
});

describe.each(live.doors)('linking a provider through the $name', (door: Door) => {
  const tag = doorTag(door);
  const api = authClient(door, () => base);
  let n = 0;
  const unique = (what: string) => `${what}-${tag}-${++n}-${randomBytes(3).toString('hex')}`;
  const get = (url: string, cookie = '') => door.fetch(url, { headers: cookie ? { cookie } : {}, redirect: 'manual' } as never);
  const cookieOf = (res: Response, name: RegExp) =>
    res.headers.getSetCookie().find((c) => name.test(c.split('=')[0]!) && !/Max-Age=0/.test(c));

  /** A person with a password, signed in: what their browser sends. */
  async function person() {
    const name = unique('ln');
    const res = await api.postJson('/auth/sign-up', { email: `${name}@example.org`, password: PASSWORD, name });
    expect(res.status).toBe(201);
    return { accountId: res.body.account.id as string, headers: { cookie: res.cookie, 'x-csrf-token': res.body.csrfToken as string } };
  }

  /** A login at the provider, with a verified e-mail of its own. */
  function providerLogin() {
    const login = unique('idp');
    provider.people.set(login, { email: `${login}@idp.example.org`, email_verified: true });
    return login;
  }

  /** Starts linking in this session: the provider's URL, and the flow cookie. */
  async function startLink(headers: Record<string, string>) {
    const res = await api.postJson('/auth/oidc/link', {}, headers);
    expect(res.status).toBe(200);
    const flow = res.headers.getSetCookie().find((c) => /cairn_oidc=./.test(c))!;
    expect(flow).toMatch(/HttpOnly; SameSite=Lax/);
    return { url: res.body.url as string, flow: flow.split(';')[0]! };
  }

  async function identities(cookie: string) {
    const res = await door.fetch(`${base}/auth/oidc/identities`, { headers: { cookie } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { identities: Array<{ id: string; issuer: string; email: string }> }).identities;
  }

  /** Signs in with the provider as `login` (no session): the session cookie, if any, and where it lands. */
  async function providerSignIn(login: string) {
    const start = await door.fetch(`${base}/auth/oidc/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const flow = cookieOf(start, /cairn_oidc$/)!.split(';')[0]!;
    const { url } = (await start.json()) as { url: string };
    const res = await get(await throughProvider(url, login, `${base}/auth/oidc/callback`), flow);
    return { location: res.headers.get('location'), session: cookieOf(res, /cairn_session$/)?.split(';')[0] };
  }

  test('linked from Settings in the session that started it; then the provider signs in to this account', async () => {
    const ada = await person();
    const login = providerLogin();
    const { url, flow } = await startLink(ada.headers);
    const callback = await throughProvider(url, login, `${base}/auth/oidc/callback`);
    const res = await get(callback, `${flow}; ${ada.headers.cookie}`);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/?link=linked#/settings');
    // The flow cookie is cleared; the session stays as it was.
    expect(res.headers.getSetCookie().some((c) => /cairn_oidc=;/.test(c) && /Max-Age=0/.test(c))).toBe(true);
    expect(cookieOf(res, /cairn_session$/)).toBeUndefined();
    const listed = await identities(ada.headers.cookie);
    expect(listed).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f]{64}$/),
        issuer: provider.issuer,
        email: `${login}@idp.example.org`,
        createdAt: expect.any(String),
      },
    ]);
    const signedIn = await providerSignIn(login);
    expect(signedIn.location).toBe('/');
    const session = await door.fetch(`${base}/auth/session`, { headers: { cookie: signedIn.session! } });
    expect(((await session.json()) as any).account.id).toBe(ada.accountId);
  });

  test('a callback met with another session, or none, links nothing (no one links their identity into a victim’s account)', async () => {
    const attacker = await person();
    const victim = await person();
    const login = providerLogin();
    // The attacker starts linking in their own session and goes through the provider as themselves...
    const { url, flow } = await startLink(attacker.headers);
    const callback = await throughProvider(url, login, `${base}/auth/oidc/callback`);
    // ...then makes the victim's browser (the victim's session) meet the callback, even with the attacker's flow cookie planted.
    const planted = await get(callback, `${flow}; ${victim.headers.cookie}`);
    expect(planted.headers.get('location')).toBe('/?link=session#/settings');
    // The victim's browser without the flow cookie: no flow of its own.
    expect((await get(callback, victim.headers.cookie)).headers.get('location')).toBe('/?sign_in_error=expired');
    // No session at all.
    const { url: url2, flow: flow2 } = await startLink(attacker.headers);
    const noSession = await get(await throughProvider(url2, login, `${base}/auth/oidc/callback`), flow2);
    expect(noSession.headers.get('location')).toBe('/?link=session#/settings');
    expect(await identities(victim.headers.cookie)).toEqual([]);
    expect(await identities(attacker.headers.cookie)).toEqual([]);
    expect(await oidcIdentity(live.service.services.db, provider.issuer, login)).toBeUndefined();
    // Starting wants the session and its CSRF token.
    expect((await api.postJson('/auth/oidc/link', {}, { cookie: victim.headers.cookie })).status).toBe(403);
    expect((await api.postJson('/auth/oidc/link', {})).status).toBe(401);
  });

  test('an identity linked to another account is refused, not moved; linking it again to its own is said so', async () => {
    const first = await person();
    const second = await person();
    const login = providerLogin();
    const link = async (who: { headers: Record<string, string> }) => {
      const { url, flow } = await startLink(who.headers);
      const res = await get(await throughProvider(url, login, `${base}/auth/oidc/callback`), `${flow}; ${who.headers.cookie}`);
      return res.headers.get('location');
    };
    expect(await link(first)).toBe('/?link=linked#/settings');
    expect(await link(second)).toBe('/?link=taken#/settings');
    expect(await link(first)).toBe('/?link=already#/settings');
    expect((await oidcIdentity(live.service.services.db, provider.issuer, login))?.accountId).toBe(first.accountId);
    expect(await identities(second.headers.cookie)).toEqual([]);
  });

  test('unlinking: only one’s own, only while another way in remains, with the CSRF token', async () => {
    const ada = await person();
    const login = providerLogin();
    const { url, flow } = await startLink(ada.headers);
    await get(await throughProvider(url, login, `${base}/auth/oidc/callback`), `${flow}; ${ada.headers.cookie}`);
    const [linked] = await identities(ada.headers.cookie);
    // An account made through the provider has no password it knows, and no passkey: its only way in stays.
    const made = await providerSignIn(providerLogin());
    expect(made.location).toBe('/');
    const sessionRes = await door.fetch(`${base}/auth/session`, { headers: { cookie: made.session! } });
    const madeCsrf = ((await sessionRes.json()) as any).csrfToken as string;
    const [own] = await identities(made.session!);
    const only = await api.postJson('/auth/oidc/unlink', { id: own!.id }, { cookie: made.session!, 'x-csrf-token': madeCsrf });
    expect(only.status).toBe(409);
    expect(only.body.error).toMatch(/only way in/);
    expect(await identities(made.session!)).toHaveLength(1);
    // Someone else's identity is not found, and stays.
    const foreign = await api.postJson('/auth/oidc/unlink', { id: linked!.id }, { cookie: made.session!, 'x-csrf-token': madeCsrf });
    expect(foreign.status).toBe(404);
    expect(await identities(ada.headers.cookie)).toHaveLength(1);
    expect((await api.postJson('/auth/oidc/unlink', { id: 'nope' }, ada.headers)).body.field).toBe('id');
    expect((await api.postJson('/auth/oidc/unlink', { id: linked!.id }, { cookie: ada.headers.cookie })).status).toBe(403);
    // With a password, the provider can go; it then signs in to no account of ada's.
    expect((await api.postJson('/auth/oidc/unlink', { id: linked!.id }, ada.headers)).body).toEqual({ ok: true });
    expect(await identities(ada.headers.cookie)).toEqual([]);
    expect(await oidcIdentity(live.service.services.db, provider.issuer, login)).toBeUndefined();
  });
});
