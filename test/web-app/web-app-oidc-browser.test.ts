/**
 * Sign-in with an OpenID Connect provider in a real browser (Debian's
 * Chromium through playwright-core): the local service with sign-up open
 * and a real provider the test starts (test/support/oidc-provider.ts).
 * The sign-in page offers "Sign in with Test ID"; the provider's login and
 * consent pages send the browser back signed in, to a new account named
 * after the e-mail; a sign-in that is refused (an e-mail that already has
 * a password account) comes back to the sign-in page with its notice;
 * that password account links the provider from Settings, signs in with
 * it, and unlinks it.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchPage } from '../support/browser.js';
import { oidcEnv, startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { freePort } from '../support/service-env.js';
import { startTestService, type TestService } from '../support/service.js';

const SHOTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-results', 'web-app');
const shot = (name: string) => page.screenshot({ path: join(SHOTS, `oidc-${name}.png`), fullPage: true });

let provider: TestOidcProvider;
let service: TestService;
let browser: Browser;
let origin: string;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  provider = await startOidcProvider();
  service = await startTestService({
    CAIRN_SIGNUP: 'open',
    CAIRN_GC_INTERVAL: '0',
    CAIRN_API_PORT: String(await freePort()),
    ...oidcEnv(provider),
  });
  origin = new URL(service.endpoints.graphql).origin;
  provider.register(`${service.config.urls.baseUrl}/auth/oidc/callback`);
  await mkdir(SHOTS, { recursive: true });
  browser = await launchChromium();
  page = await freshPage();
}, 120_000);

/** A page in a browser context of its own: no cookie of the service's, nor of the provider's (its own session). */
async function freshPage(): Promise<Page> {
  const p = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  return watchPage(p, problems, {
    // The service's pages only (the provider's development pages ask for a web font this machine cannot reach); the
    // browser logs the 401 of the session asked for before signing in.
    expectedConsole: (msg) => !msg.location().url.startsWith(origin) || /status of 401/.test(msg.text()),
    badAnswer: () => false,
  });
}

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await provider?.close();
});

afterEach(() => {
  expect(problems.splice(0)).toEqual([]);
});

/** Through the provider's development pages: any login name (the subject), any password, then consent. */
async function atProvider(login: string): Promise<void> {
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

test('"Sign in with Test ID": the provider sends the browser back signed in, to a new account', async () => {
  provider.people.set('grace', { email: 'Grace@Example.org', email_verified: true });
  await page.goto(`${origin}/`);
  const button = page.getByRole('button', { name: 'Sign in with Test ID' });
  await button.waitFor();
  await shot('sign-in');
  await button.click();
  await page.waitForURL((url) => url.origin === provider.issuer);
  await atProvider('grace');
  await page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();
  expect(new URL(page.url()).origin).toBe(origin);
  expect(await page.locator('.team-name').textContent()).toBe('grace');
  // The session is the HttpOnly cookie, as with a password; the page holds no credential.
  expect(await page.evaluate(() => document.cookie)).toBe('');
  const session = (await page.evaluate(async () => (await fetch('/auth/session')).json())) as { ok: boolean; email: string };
  expect(session).toMatchObject({ ok: true, email: 'grace@example.org', passwordSet: false });
  await shot('signed-in');
  // No password to change in Settings: the account has none its person knows; a link sets one.
  await page.goto(`${origin}/#/settings`);
  await page.getByRole('button', { name: 'Send me a link to set a password' }).waitFor();
  expect(await page.getByLabel('Current password').count()).toBe(0);
  await shot('settings-no-password');
  await page.getByRole('banner').getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.getByLabel('E-mail').waitFor();
});

test('a refused sign-in comes back to the sign-in page with its notice: an e-mail with a password account is not taken', async () => {
  await page.evaluate(async () => {
    const res = await fetch('/auth/sign-up', {
      method: 'POST',
      credentials: 'omit',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'hal@example.org', password: 'a long enough password', name: 'hal' }),
    });
    if (res.status !== 201) throw new Error(`sign-up answered ${res.status}`);
  });
  provider.people.set('mallory', { email: 'hal@example.org', email_verified: true });
  // Another browser: the provider would otherwise sign its last person in again without asking.
  page = await freshPage();
  await page.goto(`${origin}/`);
  await page.getByRole('button', { name: 'Sign in with Test ID' }).click();
  await page.waitForURL((url) => url.origin === provider.issuer);
  await atProvider('mallory');
  await page
    .getByRole('status')
    .filter({ hasText: 'An account with the e-mail address Test ID gave exists already, and is not linked to it' })
    .waitFor();
  await page.getByLabel('E-mail').waitFor();
  // The problem is shown once: the address no longer carries it.
  expect(new URL(page.url()).search).toBe('');
  expect((await page.evaluate(async () => (await fetch('/auth/session')).status)) as number).toBe(401);
  await shot('refused');
});

test('a password account links the provider from Settings, signs in with it, and unlinks it', async () => {
  provider.people.set('hal-at-idp', { email: 'hal.elsewhere@example.org', email_verified: true });
  page = await freshPage();
  await page.goto(`${origin}/`);
  await page.getByLabel('E-mail').fill('hal@example.org');
  await page.getByLabel('Password').fill('a long enough password');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();
  await page.goto(`${origin}/#/settings`);
  const section = page.getByRole('region', { name: 'Sign-in providers' });
  await section.getByRole('button', { name: 'Connect Test ID' }).click();
  await page.waitForURL((url) => url.origin === provider.issuer);
  await atProvider('hal-at-idp');
  await section.getByRole('status').filter({ hasText: 'Test ID is linked' }).waitFor();
  await section.getByText('hal.elsewhere@example.org').waitFor();
  // The outcome is shown once: the address no longer carries it.
  expect(new URL(page.url()).search).toBe('');
  await shot('linked');

  await page.getByRole('banner').getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.getByRole('button', { name: 'Sign in with Test ID' }).click();
  await page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();
  expect(await page.locator('.team-name').textContent()).toBe('hal');

  await page.goto(`${origin}/#/settings`);
  await section.getByRole('button', { name: 'Unlink' }).click();
  await section.getByRole('button', { name: 'Unlink Test ID' }).click();
  await section.getByRole('status').filter({ hasText: 'Test ID is unlinked' }).waitFor();
  await section.getByRole('button', { name: 'Connect Test ID' }).waitFor();
});
