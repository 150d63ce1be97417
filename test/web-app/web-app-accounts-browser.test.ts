/**
 * People in the web app, in a real browser (Debian's Chromium through
 * playwright-core) against a local service with sign-up open: sign up,
 * sign out, a wrong password in the service's words, sign in; the pages
 * load through the session cookie alone (no key in the tab's storage, no
 * Authorization header, the CSRF token only on mutations); Settings makes a
 * storage key pair whose secret, shown once, works with the AWS SDK and is
 * gone on reload; a second browser's session is listed, and "sign out
 * everywhere" in one ends the other; a mutation with the cookie but
 * without the CSRF token is refused; the password changed in Settings
 * (refused with a wrong current password) signs the other browsers out
 * and keeps this one; the team switcher moves requests to another team; the Team page renames the team and makes a new one
 * (its key shown once) the person moves into; a session ended while the tab was away is said to have
 * ended; a lock-out is shown with its wait.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListBucketsCommand, PutObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { launchChromium, watchPage } from '../support/browser.js';
import { startTestService, type TestService } from '../support/service.js';

/** Screenshots of each screen, beside the API key suite's (gitignored). */
const SHOTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-results', 'web-app');
const shot = (name: string, target: Page = page) => target.screenshot({ path: join(SHOTS, `accounts-${name}.png`), fullPage: true });
const PASSWORD = 'a long enough password';
const SESSION_ENDED = 'Your session has ended (signed out, or unused or kept too long). Sign in again.';

let service: TestService;
let browser: Browser;
let origin: string;
let first: BrowserContext;
let page: Page;
const problems: string[] = [];
/** Every GraphQL request the first browser made, with its headers. */
const graphqlRequests: Request[] = [];

async function newPage(context: BrowserContext): Promise<Page> {
  return watchPage(await context.newPage(), problems, {
    // The browser logs each refusal this suite provokes (400 a bad name, 401 no session, 403 no CSRF token, 429 locked).
    expectedConsole: (msg) => /status of (400|401|403|429)/.test(msg.text()),
    badAnswer: () => false,
  });
}

beforeAll(async () => {
  service = await startTestService({ CAIRN_SIGNUP: 'open', CAIRN_GC_INTERVAL: '0' });
  origin = new URL(service.endpoints.graphql).origin;
  await mkdir(SHOTS, { recursive: true });
  browser = await launchChromium();
  first = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  await first.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  page = await newPage(first);
  page.on('request', (r) => {
    if (new URL(r.url()).pathname === '/graphql') graphqlRequests.push(r);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

afterEach(() => {
  // Checked after every step, and emptied, so that a failure names the step that caused it.
  expect(problems.splice(0)).toEqual([]);
});

/** What the tab keeps in localStorage and sessionStorage, every value. */
const storedValues = (p: Page) =>
  p.evaluate(() => [localStorage, sessionStorage].flatMap((s) => Array.from({ length: s.length }, (_, i) => s.getItem(s.key(i)!) ?? '')));

/** The session this page's cookie opens, as the page itself would ask for it. */
const sessionOf = (p: Page) =>
  p.evaluate(async () => (await fetch('/auth/session', { credentials: 'same-origin' })).json()) as Promise<{
    ok: boolean;
    csrfToken: string;
    session: { id: string };
    account: { defaultTeamId: string };
  }>;

async function signInWith(p: Page, email: string, password: string): Promise<void> {
  await p.getByLabel('E-mail').fill(email);
  await p.getByLabel('Password').fill(password);
  await p.getByRole('button', { name: 'Sign in', exact: true }).click();
}

const sitesHeading = (p: Page) => p.getByRole('heading', { name: 'Sites', level: 1 });

test('sign up in the browser: the account, its team and a session, and nothing of it in the tab storage', async () => {
  await page.goto(`${origin}/`);
  await page.getByLabel('E-mail').waitFor();
  await shot('sign-in');
  // The API key remains a way in, behind its own button.
  expect(await page.getByLabel('API key').count()).toBe(0);
  // A forgotten password has its way back from here: the reset page.
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  await page.getByLabel('E-mail').waitFor();
  expect(new URL(page.url()).hash).toBe('#/forgot-password');
  await page.goBack();
  await page.getByRole('button', { name: 'Create an account' }).click();
  await page.getByRole('heading', { name: 'Create an account', level: 1 }).waitFor();
  // A refusal in the service's words, the field it names marked.
  await page.getByLabel('Account name').fill('Dana!');
  await page.getByLabel('E-mail').fill('Dana@Example.org');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('alert').filter({ hasText: /name/ }).waitFor();
  expect(await page.getByLabel('Account name').getAttribute('aria-invalid')).toBe('true');
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('account-name');
  await shot('sign-up-refused');

  await page.getByLabel('Account name').fill('dana');
  await page.getByRole('button', { name: 'Create account' }).click();
  await sitesHeading(page).waitFor();
  await page.getByText('No sites yet').waitFor();
  expect(await page.locator('.team-name').textContent()).toBe('dana');
  const person = await service.services.people.byEmail('dana@example.org');
  expect(person?.accountId).toBeDefined();
  // The session is an HttpOnly cookie: the page cannot read it, and keeps no credential of its own.
  expect(await page.evaluate(() => document.cookie)).toBe('');
  const { csrfToken } = await sessionOf(page);
  for (const value of await storedValues(page)) {
    expect(value).not.toMatch(/cairn_/);
    expect(value).not.toContain(csrfToken);
  }
});

test('sign out from the header; a wrong password is refused in the service words; the right one signs in', async () => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('E-mail').waitFor();
  expect((await sessionOf(page)).ok).toBe(false);
  await signInWith(page, 'dana@example.org', 'not the password at all');
  await page.getByRole('alert').filter({ hasText: 'The e-mail address or the password is not right.' }).waitFor();
  await shot('sign-in-wrong-password');
  await page.getByLabel('Password').fill(PASSWORD);
  graphqlRequests.length = 0;
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await sitesHeading(page).waitFor();
  await page.getByText('No sites yet').waitFor();
  // The sites page came through the session: the cookie, the team, no key and (for a query) no CSRF token.
  expect(graphqlRequests.length).toBeGreaterThan(0);
  const { account } = await sessionOf(page);
  for (const request of graphqlRequests) {
    const headers = await request.allHeaders();
    expect(headers.authorization).toBeUndefined();
    expect(headers['x-cairn-team']).toBe(account.defaultTeamId);
    expect(headers['x-csrf-token']).toBeUndefined();
    expect(headers.cookie).toMatch(/cairn_session=/);
  }
  for (const value of await storedValues(page)) expect(value).not.toMatch(/cairn_/);
});

let accessKeyId: string;
let secretAccessKey: string;

test('Settings: a storage key pair made there is shown once, works with the AWS SDK, and is gone after a reload', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
  const facts = page.locator('dl.facts');
  await facts.getByText('dana@example.org').waitFor();
  await facts.getByText('dana', { exact: true }).waitFor();
  await page.getByRole('heading', { name: 'API', level: 2 }).waitFor();

  graphqlRequests.length = 0;
  await page.getByRole('button', { name: 'Create storage key pair' }).click();
  await page.getByText('This secret will not be shown again').waitFor();
  accessKeyId = await page.getByLabel('Access key id').inputValue();
  secretAccessKey = await page.getByLabel('Secret access key').inputValue();
  expect(accessKeyId).toMatch(/^[A-Z0-9]{16,}$/);
  expect(secretAccessKey.length).toBeGreaterThanOrEqual(30);
  // Focus lands on what was just shown.
  expect(await page.evaluate(() => document.activeElement?.closest('.shown-once') !== null)).toBe(true);
  // The mutation carried the session's CSRF token.
  const mutation = graphqlRequests.find((r) => r.postData()?.includes('createStorageKeyPair'));
  expect((await mutation!.allHeaders())['x-csrf-token']).toBe((await sessionOf(page)).csrfToken);

  await page.locator('.shown-once').filter({ hasText: 'Secret access key' }).getByRole('button', { name: 'Copy' }).click();
  await page.getByRole('button', { name: 'Copied' }).waitFor();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secretAccessKey);
  await shot('settings-new-pair');

  // The pair works against the service's S3 API, as any S3 tool would use it.
  const s3 = service.s3({ accessKeyId, secretAccessKey });
  const buckets = await s3.send(new ListBucketsCommand({}));
  expect(buckets.Buckets?.map((b) => b.Name)).toContain('dana-bucket');
  await s3.send(new PutObjectCommand({ Bucket: 'dana-bucket', Key: 'hello.txt', Body: 'from the key pair made in Settings' }));
  const got = await s3.send(new GetObjectCommand({ Bucket: 'dana-bucket', Key: 'hello.txt' }));
  expect(await got.Body!.transformToString()).toBe('from the key pair made in Settings');

  await page.reload();
  await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
  await page.locator(`tr[data-pair="${accessKeyId}"]`).waitFor();
  expect(await page.locator('.shown-once').count()).toBe(0);
  expect(await page.content()).not.toContain(secretAccessKey);
  for (const value of await storedValues(page)) expect(value).not.toContain(secretAccessKey);
});

test('Settings: an API key for the team is shown once and works; revoked, it stops', async () => {
  await page.getByLabel("New key's name").fill('laptop');
  await page.getByRole('button', { name: 'Create API key' }).click();
  const key = await page.getByRole('textbox', { name: 'New API key "laptop"' }).inputValue();
  expect(key).toMatch(/^cairn_/);
  const ask = (k: string) =>
    fetch(service.endpoints.graphql, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: k },
      body: JSON.stringify({ query: '{ getCurrentTeam { name } }' }),
    }).then((r) => r.json() as Promise<{ data?: { getCurrentTeam: { name: string } }; errors?: Array<{ extensions: { code: string } }> }>);
  expect((await ask(key)).data?.getCurrentTeam.name).toBe('dana');
  const row = page.locator('tr').filter({ has: page.locator('td[data-label="Name"]', { hasText: /^laptop$/ }) });
  await row.getByRole('button', { name: 'Revoke' }).click();
  await row.getByRole('button', { name: 'Revoke now' }).click();
  await row.locator('td[data-label="Status"]', { hasText: /^Revoked/ }).waitFor();
  expect((await ask(key)).errors?.[0]?.extensions.code).toBe('UNAUTHENTICATED');
});

let second: BrowserContext;
let other: Page;

test("a second browser's session is listed beside this one; one is marked as this browser", async () => {
  second = await browser.newContext({ viewport: { width: 375, height: 812 } });
  other = await newPage(second);
  await other.goto(`${origin}/`);
  await signInWith(other, 'dana@example.org', PASSWORD);
  await sitesHeading(other).waitFor();

  await page.reload();
  await page.getByRole('heading', { name: 'Sessions', level: 2 }).waitFor();
  await page.waitForFunction(() => document.querySelectorAll('tr[data-session]').length === 2);
  const current = page.locator('tr[data-current="yes"]');
  expect(await current.count()).toBe(1);
  expect(await current.getAttribute('data-session')).toBe((await sessionOf(page)).session.id);
  expect(await current.locator('.tag-current').textContent()).toBe('this browser');
  expect(await page.locator('tr[data-session] td[data-label="Browser"]').first().textContent()).toContain('Headless Chrome on Linux');
  expect(await page.locator('tr[data-session] td[data-label="Address"]').first().textContent()).toMatch(/127\.0\.0\.1|::1/);
  await shot('settings-sessions');
});

test('a mutation sent with the cookie but without the CSRF token is refused, and changes nothing', async () => {
  const pairs = () =>
    page.evaluate(async () => {
      const res = await fetch('/graphql', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ getStorageKeyPairs { accessKeyId } }' }),
      });
      return ((await res.json()) as { data: { getStorageKeyPairs: unknown[] } }).data.getStorageKeyPairs.length;
    });
  const before = await pairs();
  const refused = await page.evaluate(async () => {
    const res = await fetch('/graphql', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'mutation { createStorageKeyPair { secretAccessKey } }' }),
    });
    return { status: res.status, body: (await res.json()) as { data?: unknown; errors: Array<{ extensions: { code: string } }> } };
  });
  expect(refused.status).toBe(403);
  expect(refused.body.errors[0]!.extensions.code).toBe('FORBIDDEN');
  expect(refused.body.data ?? null).toBeNull();
  expect(await pairs()).toBe(before);
});

test('"sign out everywhere" ends both sessions: this browser goes to sign-in, the other on its next navigation', async () => {
  await page.getByRole('button', { name: 'Sign out everywhere' }).click();
  await page.getByRole('button', { name: 'Sign out of every session' }).click();
  await page.getByText('You signed out everywhere: every session of your account has ended, this one too.').waitFor();
  await page.getByLabel('E-mail').waitFor();

  await other.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' }).click();
  await other.getByText(SESSION_ENDED).waitFor();
  await other.getByLabel('E-mail').waitFor();
  expect((await sessionOf(other)).ok).toBe(false);
  await other.reload();
  await other.getByLabel('E-mail').waitFor();
  expect(await service.services.sessions.list((await service.services.people.byEmail('dana@example.org'))!.accountId)).toEqual([]);
  await second.close();
});

test('Settings: the password changed with the current one; the other browsers are signed out, this one stays', async () => {
  const NEW_PASSWORD = 'another long enough password';
  await page.goto(`${origin}/`);
  await signInWith(page, 'dana@example.org', PASSWORD);
  await sitesHeading(page).waitFor();
  const third = await browser.newContext();
  const elsewhere = await newPage(third);
  await elsewhere.goto(`${origin}/`);
  await signInWith(elsewhere, 'dana@example.org', PASSWORD);
  await sitesHeading(elsewhere).waitFor();

  await page.goto(`${origin}/#/settings`);
  const section = page.getByRole('region', { name: 'Password' });
  await section.getByLabel('Current password').waitFor();
  const change = async (current: string, next: string, repeated = next) => {
    await section.getByLabel('Current password').fill(current);
    await section.getByLabel('New password', { exact: true }).fill(next);
    await section.getByLabel('New password again').fill(repeated);
    await section.getByRole('button', { name: 'Change password' }).click();
  };
  // Refusals: the repetition differs (checked here), the current password is wrong (the service's words), each field marked.
  await change(PASSWORD, NEW_PASSWORD, 'something else entirely');
  await section.getByRole('alert').filter({ hasText: 'The new password and its repetition differ.' }).waitFor();
  expect(await section.getByLabel('New password again').getAttribute('aria-invalid')).toBe('true');
  await change('not the password at all', NEW_PASSWORD);
  await section.getByRole('alert').filter({ hasText: 'The current password is not right' }).waitFor();
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('settings-currentPassword');

  await change(PASSWORD, NEW_PASSWORD);
  await section.getByText('Password changed. 1 other session was signed out.').waitFor();
  await shot('settings-password');
  // This browser stays signed in; the other one's next navigation lands on sign-in.
  expect((await sessionOf(page)).ok).toBe(true);
  await elsewhere.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' }).click();
  await elsewhere.getByText(SESSION_ENDED).waitFor();
  await third.close();
  // The old password no longer signs in; the new one does. Asked from outside the browser, and that new session
  // signed out again, so that the change back below finds no other session.
  const signIn = (password: string) =>
    fetch(`${origin}/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'dana@example.org', password }),
    });
  expect((await signIn(PASSWORD)).status).toBe(401);
  const signedIn = await signIn(NEW_PASSWORD);
  expect(signedIn.status).toBe(200);
  const { csrfToken } = (await signedIn.json()) as { csrfToken: string };
  const cookie = signedIn.headers.getSetCookie()[0]!.split(';')[0]!;
  const out = await fetch(`${origin}/auth/sign-out`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken },
    body: '{}',
  });
  expect(await out.json()).toEqual({ ok: true, ended: 1 });
  // Back to the suite's password: no other session is signed in now.
  await change(NEW_PASSWORD, PASSWORD);
  await section.getByText('Password changed. No other session was signed in.').waitFor();
  // Signed out here, on Settings, as the next step expects: signing in again comes back to it. (The header's
  // button: the sessions list has its own "Sign out" buttons.)
  expect(new URL(page.url()).hash).toBe('#/settings');
  await page.getByRole('banner').getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.getByLabel('E-mail').waitFor();
});

test('the team switcher: requests go to the chosen team, which the tab keeps across a reload', async () => {
  await signInWith(page, 'dana@example.org', PASSWORD);
  // Back where the person was when they signed out.
  await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
  const made = await page.evaluate(
    async (csrf) => {
      const res = await fetch('/graphql', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
        body: JSON.stringify({ query: 'mutation { createTeam(name: "dana-studio") { team { id } } }' }),
      });
      return ((await res.json()) as { data: { createTeam: { team: { id: string } } } }).data.createTeam.team.id;
    },
    (await sessionOf(page)).csrfToken,
  );
  await page.reload();
  const switcher = page.getByLabel('Team', { exact: true });
  await switcher.waitFor();
  expect(await switcher.inputValue()).not.toBe(made);
  graphqlRequests.length = 0;
  await switcher.selectOption({ label: 'dana-studio' });
  await sitesHeading(page).waitFor();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' }).click();
  await page.getByRole('heading', { name: 'dana-studio', level: 1 }).waitFor();
  expect(graphqlRequests.length).toBeGreaterThan(0);
  for (const request of graphqlRequests) expect((await request.allHeaders())['x-cairn-team']).toBe(made);
  await page.reload();
  await page.getByRole('heading', { name: 'dana-studio', level: 1 }).waitFor();
  expect(await page.getByLabel('Team', { exact: true }).inputValue()).toBe(made);
  // On a phone, the header with its switcher still fits without sideways scrolling.
  await page.setViewportSize({ width: 375, height: 812 });
  await page.getByLabel('Team', { exact: true }).waitFor();
  expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
  await shot('team-switcher-phone');
  await page.setViewportSize({ width: 1280, height: 860 });
});

test('the Team page: its owner renames the team; a new team comes with its key shown once, and the person moves into it', async () => {
  // dana-studio's page, where the switcher's test left the tab: dana owns it.
  await page.getByRole('heading', { name: 'dana-studio', level: 1 }).waitFor();
  const studio = await page.getByLabel('Team', { exact: true }).inputValue();
  const checkedTeam = () => page.getByLabel('Team', { exact: true }).locator('option:checked').textContent();
  await page.getByLabel('Team name', { exact: true }).fill('Dana Studio');
  await page.getByRole('button', { name: 'Rename team' }).click();
  await page.getByText('The team is now called Dana Studio.').waitFor();
  await page.getByRole('heading', { name: 'Dana Studio', level: 1 }).waitFor();
  expect(await checkedTeam()).toBe('Dana Studio');
  expect((await service.services.teams.get(studio))?.name).toBe('Dana Studio');

  await page.getByLabel("New team's name").fill('dana-labs');
  await page.getByRole('button', { name: 'Create team' }).click();
  const shown = page.getByLabel('API key for dana-labs');
  await shown.waitFor();
  const key = await shown.inputValue();
  // The key is the new team's, and works.
  const asKey = await fetch(`${origin}/graphql`, {
    method: 'POST',
    headers: { authorization: key, 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ getCurrentTeam { id name } getCurrentMember { role } }' }),
  });
  const seen = ((await asKey.json()) as { data: { getCurrentTeam: { id: string; name: string }; getCurrentMember: { role: string } } })
    .data;
  expect([seen.getCurrentTeam.name, seen.getCurrentMember.role]).toEqual(['dana-labs', 'OWNER']);
  await shot('team-created');
  graphqlRequests.length = 0;
  await page.getByRole('button', { name: 'Work in dana-labs' }).click();
  await sitesHeading(page).waitFor();
  expect(await checkedTeam()).toBe('dana-labs');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' }).click();
  await page.getByRole('heading', { name: 'dana-labs', level: 1 }).waitFor();
  for (const request of graphqlRequests) expect((await request.allHeaders())['x-cairn-team']).toBe(seen.getCurrentTeam.id);
  // Shown once: not on the page any more, nor in the tab's storage.
  expect(await page.getByLabel('API key for dana-labs').count()).toBe(0);
  expect(await storedValues(page)).not.toContain(key);
  // The session knows the new team too: a reload keeps the tab in it, and the renamed one is listed by its new name.
  await page.reload();
  await page.getByRole('heading', { name: 'dana-labs', level: 1 }).waitFor();
  expect(await page.getByLabel('Team', { exact: true }).locator('option').allTextContents()).toEqual(
    expect.arrayContaining(['Dana Studio', 'dana-labs']),
  );
});

test('a session that ends while the tab is away is said to have ended on the next load', async () => {
  const person = await service.services.people.byEmail('dana@example.org');
  expect(await service.services.sessions.endAll(person!.accountId)).toBe(1);
  await page.reload();
  await page.getByText(SESSION_ENDED).waitFor();
  await page.getByLabel('E-mail').waitFor();
  // Nothing of the session is left in the tab, not even the team it chose.
  expect(await storedValues(page)).toEqual([]);
});

test('a lock-out is shown with its wait, as the service words it', async () => {
  for (let i = 0; i < 10; i++) {
    const res = await fetch(`${origin}/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'dana@example.org', password: `wrong guess ${i}` }),
    });
    expect(res.status).toBe(401);
  }
  await signInWith(page, 'dana@example.org', PASSWORD);
  await page.getByRole('alert').filter({ hasText: 'Too many failed sign-ins: try again in 15 minutes.' }).waitFor();
  expect((await sessionOf(page)).ok).toBe(false);
});
