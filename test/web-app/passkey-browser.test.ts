/**
 * Passkeys in a real browser (Debian's Chromium through playwright-core)
 * against a local service at `http://localhost:<port>` (WebAuthn wants a
 * domain, not an IP address), with Chromium's virtual authenticator
 * (the DevTools protocol's WebAuthn domain: a CTAP2 platform authenticator
 * with resident keys and user verification, which answers the page's
 * `navigator.credentials` calls as a fingerprint reader would): a passkey
 * added in Settings, signing out and in with it alone, then asked for
 * after the password, where a browser without it gets no session; the
 * last passkey kept while it is asked for; recovery codes made when it is
 * turned on, and one of them instead of the passkey in a browser without it.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { launchChromium, watchPage } from '../support/browser.js';
import { freePort } from '../support/service-env.js';
import { startTestService, type TestService } from '../support/service.js';

const SHOTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-results', 'web-app');
const shot = (name: string, target: Page = page) => target.screenshot({ path: join(SHOTS, `passkey-${name}.png`), fullPage: true });
const PASSWORD = 'a long enough password';
const EMAIL = 'pia@example.org';

let service: TestService;
let browser: Browser;
let origin: string;
let page: Page;
let cdp: CDPSession;
let authenticatorId: string;
/** The virtual authenticator's signature counter as last seen. */
let signCount = 0;
const problems: string[] = [];

/** A page in a context of its own, with a virtual authenticator of its own (empty: no passkey yet). */
async function pageWithAuthenticator(): Promise<{ page: Page; cdp: CDPSession; authenticatorId: string }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const p = watchPage(await context.newPage(), problems, {
    // The browser logs the refusals this suite provokes (400 a blank name, 401 no session yet or a second factor asked, 409 the last passkey).
    expectedConsole: (msg) => /status of (400|401|409)/.test(msg.text()),
    badAnswer: () => false,
  });
  const session = await context.newCDPSession(p);
  await session.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId: id } = await session.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { page: p, cdp: session, authenticatorId: id };
}

const credentialsOf = async (session: CDPSession, id: string) =>
  (await session.send('WebAuthn.getCredentials', { authenticatorId: id })).credentials;

beforeAll(async () => {
  const port = await freePort();
  service = await startTestService({
    CAIRN_SIGNUP: 'open',
    CAIRN_GC_INTERVAL: '0',
    CAIRN_API_PORT: String(port),
    CAIRN_BASE_URL: `http://localhost:${port}`,
  });
  origin = service.config.urls.baseUrl;
  await mkdir(SHOTS, { recursive: true });
  browser = await launchChromium();
  ({ page, cdp, authenticatorId } = await pageWithAuthenticator());
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

afterEach(() => {
  expect(problems.splice(0)).toEqual([]);
});

const sitesHeading = (p: Page) => p.getByRole('heading', { name: 'Sites', level: 1 });
/** Signed in: back on the page signed out from (Settings), with the header's sign-out. */
const settingsHeading = (p: Page) => p.getByRole('heading', { name: 'Settings', level: 1 });
const passkeyRows = (p: Page) => p.locator('tr[data-passkey]');

async function signInWith(p: Page, password: string): Promise<void> {
  await p.getByLabel('E-mail').fill(EMAIL);
  await p.getByLabel('Password').fill(password);
  await p.getByRole('button', { name: 'Sign in', exact: true }).click();
}

test('a passkey added in Settings signs in without the password', async () => {
  await page.goto(`${origin}/`);
  await page.getByRole('button', { name: 'Create an account' }).click();
  await page.getByLabel('Account name').fill('pia');
  await page.getByLabel('E-mail').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await sitesHeading(page).waitFor();

  await page.goto(`${origin}/#/settings`);
  const section = page.getByRole('region', { name: 'Passkeys' });
  await section.getByText('You have no passkey yet.').waitFor();
  // Nothing to ask for without a passkey.
  expect(await section.getByLabel('Ask for a passkey after my password').isDisabled()).toBe(true);
  await section.getByLabel('Passkey name').fill('This laptop');
  await section.getByRole('button', { name: 'Add a passkey' }).click();
  await section.getByRole('status').filter({ hasText: 'The passkey “This laptop” is added' }).waitFor();
  await passkeyRows(page).filter({ hasText: 'This laptop' }).filter({ hasText: 'never' }).waitFor();
  await shot('settings-added');
  // The authenticator holds one discoverable credential for localhost, made for this account; the service holds its public key.
  const [held] = await credentialsOf(cdp, authenticatorId);
  expect(held).toMatchObject({ isResidentCredential: true, rpId: 'localhost' });
  const account = (await service.services.people.byEmail(EMAIL))!.accountId;
  expect(Buffer.from(held!.userHandle!, 'base64').toString()).toBe(account);
  const [kept] = await service.services.passkeys.list(account);
  expect(Buffer.from(held!.credentialId, 'base64').toString('base64url')).toBe(kept!.credentialId);
  // The service starts from the counter the authenticator reported (Chromium's starts at 1, not 0).
  expect(kept!.counter).toBe(held!.signCount);
  signCount = held!.signCount;

  await page.getByRole('banner').getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.getByLabel('E-mail').waitFor();
  await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
  await settingsHeading(page).waitFor();
  expect(await page.locator('.team-name').textContent()).toBe('pia');
  // The authenticator signed once more, and the service kept its counter; Settings says when the passkey was last used.
  expect((await credentialsOf(cdp, authenticatorId))[0]!.signCount).toBe(++signCount);
  expect((await service.services.passkeys.list(account))[0]!.counter).toBe(signCount);
  await page.goto(`${origin}/#/settings`);
  await passkeyRows(page).filter({ hasText: 'This laptop' }).waitFor();
  expect(await passkeyRows(page).filter({ hasText: 'never' }).count()).toBe(0);
  await shot('settings-used');
});

test('asked for after the password: this browser signs in with both, one without the passkey gets no session', async () => {
  const section = page.getByRole('region', { name: 'Passkeys' });
  // The box shows what the service holds: it is ticked once the service has said yes.
  const ask = section.getByLabel('Ask for a passkey after my password');
  await ask.click();
  await section.getByRole('status').filter({ hasText: 'one of your passkeys is asked for too' }).waitFor();
  await section.locator('input[type=checkbox]:checked').waitFor();
  // Turned on for the first time: ten recovery codes, shown once.
  const made = page.getByRole('group', { name: 'Your new recovery codes' });
  await made.waitFor();
  expect(await made.locator('li').count()).toBe(10);
  await section.getByText('Keep the recovery codes below').waitFor();
  // The last passkey stays while it is asked for: the service's words say why.
  await passkeyRows(page).getByRole('button', { name: 'Remove' }).click();
  await passkeyRows(page).getByRole('button', { name: 'Remove “This laptop”' }).click();
  await section.getByRole('status').filter({ hasText: 'turn that off first' }).waitFor();
  expect(await passkeyRows(page).count()).toBe(1);
  await shot('settings-required');

  await page.getByRole('banner').getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.getByLabel('E-mail').waitFor();
  await signInWith(page, PASSWORD);
  await settingsHeading(page).waitFor();
  expect((await credentialsOf(cdp, authenticatorId))[0]!.signCount).toBe(++signCount);

  // Another browser, whose authenticator holds no passkey of the account: the right password alone is not enough.
  const other = await pageWithAuthenticator();
  await other.page.goto(`${origin}/`);
  await signInWith(other.page, PASSWORD);
  await other.page.getByRole('alert').filter({ hasText: 'No passkey was given' }).waitFor();
  await shot('second-factor-missing', other.page);
  const session = await other.page.evaluate(async () => (await fetch('/auth/session')).status);
  expect(session).toBe(401);
  expect(await other.page.context().cookies()).toEqual([]);
  await other.page.context().close();

  // Turned off, the passkey can go; the password alone signs in again.
  await page.goto(`${origin}/#/settings`);
  await ask.click();
  await section.getByRole('status').filter({ hasText: 'Your password alone signs you in again' }).waitFor();
  await section.locator('input[type=checkbox]:not(:checked)').waitFor();
  await passkeyRows(page).getByRole('button', { name: 'Remove' }).click();
  await passkeyRows(page).getByRole('button', { name: 'Remove “This laptop”' }).click();
  await section.getByText('You have no passkey yet.').waitFor();
  await page.getByRole('banner').getByRole('button', { name: 'Sign out', exact: true }).click();
  await signInWith(page, PASSWORD);
  await settingsHeading(page).waitFor();
  expect((await credentialsOf(cdp, authenticatorId))[0]!.signCount).toBe(signCount);
});

test('a browser without the passkey signs in with a recovery code instead, once; Settings counts what is left', async () => {
  await page.goto(`${origin}/#/settings`);
  const section = page.getByRole('region', { name: 'Passkeys' });
  await section.getByLabel('Passkey name').fill('Second laptop');
  await section.getByRole('button', { name: 'Add a passkey' }).click();
  await passkeyRows(page).filter({ hasText: 'Second laptop' }).waitFor();
  // Renamed in place; a name with only spaces is refused in the service's words, and the name stays.
  await page.getByRole('button', { name: 'Rename “Second laptop”' }).click();
  await page.getByLabel('New name for “Second laptop”').fill('   ');
  await passkeyRows(page).getByRole('button', { name: 'Save' }).click();
  await section.getByRole('status').filter({ hasText: 'name must be 1 to 64 characters' }).waitFor();
  await page.getByLabel('New name for “Second laptop”').fill('  Work laptop ');
  await passkeyRows(page).getByRole('button', { name: 'Save' }).click();
  await section.getByRole('status').filter({ hasText: 'is now “Work laptop”' }).waitFor();
  await passkeyRows(page).filter({ hasText: 'Work laptop' }).waitFor();
  // The first test turned the passkey on, which made ten codes (seen there); on again, the codes left are kept.
  await section.getByLabel('Ask for a passkey after my password').click();
  await section.locator('input[type=checkbox]:checked').waitFor();
  await page.locator('[data-recovery-remaining="10"]').waitFor();
  expect(await page.getByRole('group', { name: 'Your new recovery codes' }).count()).toBe(0);
  // Made again, shown once; they replace the old ones.
  await page.getByRole('button', { name: 'Make new recovery codes' }).click();
  await page.getByRole('button', { name: 'Replace my recovery codes' }).click();
  const fresh = page.getByRole('group', { name: 'Your new recovery codes' });
  await fresh.waitFor();
  const codes = await fresh.locator('li').allTextContents();
  expect(codes).toHaveLength(10);
  for (const code of codes) expect(code).toMatch(/^[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$/);
  await page.locator('[data-recovery-remaining="10"]').waitFor();
  await shot('recovery-codes-made');
  await fresh.getByRole('button', { name: 'I have kept them' }).click();
  await fresh.waitFor({ state: 'detached' });

  const other = await pageWithAuthenticator();
  await other.page.goto(`${origin}/`);
  await signInWith(other.page, PASSWORD);
  await other.page.getByRole('alert').filter({ hasText: 'No passkey was given' }).waitFor();
  await other.page.getByRole('button', { name: 'Use a recovery code instead' }).click();
  await other.page.getByLabel('Recovery code').fill(codes[0]!.toUpperCase());
  await shot('recovery-code-typed', other.page);
  await other.page.getByRole('button', { name: 'Sign in with the recovery code' }).click();
  await sitesHeading(other.page).waitFor();
  await other.page.goto(`${origin}/#/settings`);
  await other.page.locator('[data-recovery-remaining="9"]').waitFor();
  await other.page.getByRole('banner').getByRole('button', { name: 'Sign out', exact: true }).click();

  // The same code again: refused in the service's words, and no session.
  await signInWith(other.page, PASSWORD);
  await other.page.getByRole('alert').filter({ hasText: 'No passkey was given' }).waitFor();
  await other.page.getByRole('button', { name: 'Use a recovery code instead' }).click();
  await other.page.getByLabel('Recovery code').fill(codes[0]!);
  await other.page.getByRole('button', { name: 'Sign in with the recovery code' }).click();
  await other.page.getByRole('alert').filter({ hasText: 'not right, or was used already' }).waitFor();
  expect(await other.page.evaluate(async () => (await fetch('/auth/session')).status)).toBe(401);
  await shot('recovery-code-used', other.page);
  await other.page.context().close();
});
