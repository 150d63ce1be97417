/**
 * An invitation in a real browser (Debian's Chromium through
 * playwright-core), against a local service sending mail to a real SMTP
 * server the test starts: an owner invites on the team page, the message
 * arrives, its link is opened in a browser that has never been signed in,
 * and the invitee makes an account there and joins; a second invitee who
 * has an account signs in on the page and joins; a used link says so.
 * A forgotten password the same way: asked for on the sign-in page, the
 * mailed link sets a new one and signs the account out everywhere.
 * Each step is checked against the service (its members, its sessions),
 * not only the page. No console errors, no request to any other host.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { hashPassword } from '../../functions/core/auth/passwords.js';
import { launchChromium, signInWithApiKey, watchedPage } from '../support/browser.js';
import { accountNamed, graphqlClient } from '../support/graphql.js';
import { startTestService, type TestService } from '../support/service.js';
import { startSmtp, type TestSmtp } from '../support/smtp.js';

const PASSWORD = 'correct horse battery staple';

let service: TestService;
let smtp: TestSmtp;
let browser: Browser;
let origin: string;
let apiKey: string;
let teamId: string;
const problems: string[] = [];

beforeAll(async () => {
  smtp = await startSmtp();
  service = await startTestService({
    CAIRN_GC_INTERVAL: '0',
    CAIRN_PREVIEW: 'off',
    CAIRN_SMTP_URL: smtp.url,
    CAIRN_MAIL_FROM: 'cairn@example.org',
  });
  const inviter = await accountNamed(service, 'inviter');
  apiKey = inviter.apiKey;
  teamId = inviter.team.id;
  origin = new URL(service.endpoints.graphql).origin;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await smtp?.close();
});

afterEach(() => {
  expect(problems).toEqual([]);
});

/** A page in a browser context of its own (no cookie, no storage), watched for errors and other hosts. */
function freshPage(): Promise<{ context: BrowserContext; page: Page }> {
  return watchedPage(browser, problems, {
    context: { viewport: { width: 1000, height: 800 } },
    hosts: [new URL(origin).host],
    // The page asks GET /auth/session whether this browser is signed in (401: not), and a used link answers 410: the browser
    // logs both as failed loads. Any other refusal, or one of those from another route, is a problem.
    expectedConsole: (msg) => /status of 4(01|10) /.test(msg.text()),
    badAnswer: (status, path) =>
      (status === 401 && path !== '/auth/session') ||
      (status === 410 && path !== '/auth/invitations/view' && path !== '/auth/password-reset') ||
      status >= 500,
  });
}

const members = async () =>
  (
    await graphqlClient({ name: 'node', fetch: (u, i) => fetch(u, i as RequestInit) }, service.endpoints.graphql).gql(
      apiKey,
      'query ($t: ID!) { getMembersByTeam(teamId: $t) { accountName role } }',
      { t: teamId },
    )
  ).data.getMembersByTeam as Array<{ accountName: string; role: string }>;

test('an owner invites on the team page; the invitee opens the mailed link, makes an account and joins', async () => {
  const owner = await freshPage();
  // The owner's tab is signed in with the team's API key, as the app keeps it.
  await signInWithApiKey(owner.context, apiKey);
  await owner.page.goto(`${origin}/#/team`);
  await owner.page.getByRole('heading', { name: 'Invitations' }).waitFor({ timeout: 30_000 });
  await owner.page.getByLabel('E-mail').fill('newcomer@example.org');
  await owner.page.getByLabel('Role', { exact: true }).last().selectOption('OWNER');
  await owner.page.getByRole('button', { name: 'Invite' }).click();
  await owner.page.getByText('An invitation is on its way to newcomer@example.org.').waitFor();
  await owner.page.locator('tr[data-invitation="newcomer@example.org"]').waitFor();

  const { mail } = await smtp.next('newcomer@example.org');
  const link = smtp.linkIn(mail);
  expect(link.startsWith(`${origin}/#/invitation/`)).toBe(true);

  const invitee = await freshPage();
  await invitee.page.goto(link);
  await invitee.page.getByRole('heading', { name: 'Join inviter' }).waitFor({ timeout: 30_000 });
  await invitee.page.getByText('invites newcomer@example.org to join the team inviter as an owner').waitFor();
  await invitee.page.getByLabel('Account name').fill('newcomer');
  await invitee.page.getByLabel('Password').fill(PASSWORD);
  await invitee.page.getByRole('button', { name: 'Create account and join' }).click();
  await invitee.page.getByText('You are now an owner of inviter.').waitFor();
  expect(await members()).toContainEqual({ accountName: 'newcomer', role: 'OWNER' });
  // The browser holds the new session: the service knows it as the newcomer.
  const session = await invitee.page.evaluate(async () => (await fetch('/auth/session')).json());
  expect(session).toMatchObject({ ok: true, email: 'newcomer@example.org', account: { name: 'newcomer' } });

  // The pending list on the owner's page empties once the invitation is used.
  await owner.page.reload();
  await owner.page.getByText('No invitations are waiting.').waitFor({ timeout: 30_000 });

  // The link a second time: used.
  const again = await freshPage();
  await again.page.goto(link);
  await again.page.getByText('This invitation has been used already').waitFor({ timeout: 30_000 });
  await Promise.all([owner.context.close(), invitee.context.close(), again.context.close()]);
});

test('someone with an account signs in on the invitation page and joins', async () => {
  const { account } = await service.services.accounts.createAccount({ name: 'veteran' });
  await service.services.people.add(account.id, 'veteran@example.org', await hashPassword(PASSWORD));
  const invited = await graphqlClient({ name: 'node', fetch: (u, i) => fetch(u, i as RequestInit) }, service.endpoints.graphql).gql(
    apiKey,
    'mutation ($t: ID!) { inviteTeamMember(teamId: $t, email: "veteran@example.org") { mailSent } }',
    { t: teamId },
  );
  expect(invited.data.inviteTeamMember.mailSent).toBe(true);
  const link = smtp.linkIn((await smtp.next('veteran@example.org')).mail);

  const { context, page } = await freshPage();
  await page.goto(link);
  await page.getByRole('button', { name: 'I have an account' }).click();
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in and join' }).click();
  await page.getByText('You are now a member of inviter.').waitFor({ timeout: 30_000 });
  expect(await members()).toContainEqual({ accountName: 'veteran', role: 'MEMBER' });
  await context.close();
});

test('a forgotten password: asked for on the sign-in page, the mailed link sets a new one, every session ends, the link works once', async () => {
  const email = 'forgetful@example.org';
  const { account } = await service.services.accounts.createAccount({ name: 'forgetful' });
  await service.services.people.add(account.id, email, await hashPassword(PASSWORD));
  const NEW_PASSWORD = 'a new and long enough password';
  const signIn = async (page: Page, password: string) => {
    await page.goto(`${origin}/`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  };
  // Signed in elsewhere before the reset.
  const elsewhere = await freshPage();
  await signIn(elsewhere.page, PASSWORD);
  await elsewhere.page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();

  const { context, page } = await freshPage();
  await page.goto(`${origin}/`);
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  await page.getByLabel('E-mail').fill(email);
  await page.getByRole('button', { name: 'Send me a link' }).click();
  await page.getByRole('status').waitFor();
  const link = smtp.linkIn((await smtp.next(email)).mail);
  expect(link.startsWith(`${origin}/#/reset-password/`)).toBe(true);

  await page.goto(link);
  await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
  await page.getByLabel('New password, again').fill(NEW_PASSWORD);
  await page.getByRole('button', { name: 'Set password' }).click();
  await page.getByText(`Your password is set, and your account is signed out everywhere: sign in with ${email}`).waitFor();
  // The old password no longer signs in; the new one does.
  expect(await signInAnswer(email, PASSWORD)).toBe(401);
  await signIn(page, NEW_PASSWORD);
  await page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();
  // The browser signed in before the reset is signed out: its next load asks it to sign in.
  await elsewhere.page.reload();
  await elsewhere.page.getByLabel('Password').waitFor();
  // The link a second time: spent, and said so on the page.
  const again = await freshPage();
  await again.page.goto(link);
  await again.page.getByLabel('New password', { exact: true }).fill('yet another long password');
  await again.page.getByLabel('New password, again').fill('yet another long password');
  await again.page.getByRole('button', { name: 'Set password' }).click();
  await again.page.getByRole('alert').waitFor();
  expect(await signInAnswer(email, NEW_PASSWORD)).toBe(200);
  await Promise.all([context.close(), elsewhere.context.close(), again.context.close()]);
});

const signInAnswer = async (email: string, password: string) =>
  (
    await fetch(`${origin}/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    })
  ).status;
