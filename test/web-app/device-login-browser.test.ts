/**
 * `cairn login` approved on the web page in a real browser (Debian's
 * Chromium through playwright-core): the real `cairn` binary waits with
 * its code while the person opens the page it printed, is told to sign in
 * first, signs in (over /auth/sign-in in the same browser, sharing its
 * cookies: the sign-in screen is the web app's own), sees the code, the
 * machine and its address, picks the team and approves; the command line
 * then holds an API key and a storage key pair, and `cairn whoami --json`
 * reports `apiKey` and `apiSecret` that the AWS CLI (Debian's awscli)
 * works with. A second login denied on the page ends with the command
 * line saying so. Screenshots go to test-results/web-app/ (gitignored).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { hashPassword } from '../../functions/core/auth/passwords.js';
import { launchChromium, watchPage } from '../support/browser.js';
import { DEBIAN_CLIENTS, clientWorkspace, requireClient, run, type ClientWorkspace } from '../support/clients.js';
import { newAccount, type AccountFixture } from '../support/graphql.js';
import { startTestService, type TestService } from '../support/service.js';
import { newCliUser, type CliUser } from '../cli/cli-runner.js';

const SHOTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-results', 'web-app');
const PASSWORD = 'correct horse battery staple';
const EMAIL = `grace-${process.pid}@example.org`;

let service: TestService;
let grace: AccountFixture;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let ws: ClientWorkspace;
let apiUrl: string;
const users: CliUser[] = [];
const problems: string[] = [];

beforeAll(async () => {
  await requireClient('aws');
  [service, ws] = await Promise.all([startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off' }), clientWorkspace()]);
  grace = await newAccount(service, 'device-web');
  await service.services.people.add(grace.account.id, EMAIL, await hashPassword(PASSWORD));
  apiUrl = service.endpoints.graphql.replace(/\/graphql$/, '');
  await mkdir(SHOTS, { recursive: true });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = watchPage(await context.newPage(), problems, {
    // The page asks GET /auth/session before it knows whether it is signed in, and a wrong code is a 404:
    // the browser's own lines for those answers are expected; anything else is not.
    expectedConsole: (msg) => /status of 40[14]/.test(msg.text()),
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all(users.map((u) => u.cleanup()));
  await Promise.all([service?.close(), ws?.cleanup()]);
});

afterEach(() => {
  expect(problems).toEqual([]);
});

/** Starts `cairn login` without a browser of its own, and waits for the page it prints. */
async function startLogin(u: CliUser) {
  const running = u.start(['login', '--device', '--no-browser', '--api-url', apiUrl, '--json'], { timeoutMs: 120_000 });
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    const stderr = running.output().stderr;
    const code = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1];
    const address = /go straight to (\S+)\)/.exec(stderr)?.[1];
    if (code && address) return { running, code, address };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`cairn login printed no code: ${JSON.stringify(running.output())}`);
}

test('approved on the page while the command line waits; whoami --json gives apiKey and apiSecret that the AWS CLI takes', async () => {
  const u = await newCliUser();
  users.push(u);
  const { running, code, address } = await startLogin(u);

  // Not signed in: the page says so, and offers the sign-in.
  await page.goto(address);
  await page.getByText('You are not signed in').waitFor();
  await page.getByRole('link', { name: 'Sign in' }).waitFor();
  await page.screenshot({ path: join(SHOTS, 'device-signed-out.png'), fullPage: true });

  // Its link leads to the web app's sign-in, which sends the person back here once signed in.
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.getByLabel('E-mail').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL((url) => url.pathname === '/app/device');
  expect(new URL(page.url()).search).toBe(new URL(address).search);
  await page.getByTestId('device-code').waitFor();
  expect(await page.getByTestId('device-code').textContent()).toBe(code);
  expect(await page.getByTestId('device-machine').textContent()).toBe(hostname());
  expect(await page.getByTestId('device-address').textContent()).toMatch(/127\.0\.0\.1|::1/);
  expect(await page.getByLabel('Team the command line acts in').inputValue()).toBe(grace.team.id);
  await page.screenshot({ path: join(SHOTS, 'device-review.png'), fullPage: true });
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.getByText(`Approved: cairn on ${hostname()} is logged in`).waitFor();
  await page.screenshot({ path: join(SHOTS, 'device-approved.png'), fullPage: true });

  const done = await running.done;
  expect(done.code).toBe(0);
  expect(JSON.parse(done.stdout)).toMatchObject({ team: { id: grace.team.id }, storage: { created: true } });

  const who = await u.json(['whoami']);
  expect(who.apiKey).toMatch(/^CAIRN[A-Z0-9]{15}$/);
  expect(who.apiSecret).toMatch(/^[A-Za-z0-9]{40}$/);
  const env = { ...ws.env, AWS_ACCESS_KEY_ID: who.apiKey, AWS_SECRET_ACCESS_KEY: who.apiSecret };
  const aws = (...args: string[]) =>
    run(DEBIAN_CLIENTS.aws.bin, ['--endpoint-url', service.endpoints.s3, '--no-cli-pager', ...args], { env });
  const file = join(ws.dir, 'hello.txt');
  await writeFile(file, 'hello from cairn login\n');
  const bucket = `${grace.account.name}-bucket`;
  expect((await aws('s3', 'ls')).stdout).toContain(bucket);
  await aws('s3', 'cp', file, `s3://${bucket}/hello.txt`, '--no-progress');
  expect((await aws('s3', 'cp', `s3://${bucket}/hello.txt`, '-')).stdout).toBe('hello from cairn login\n');

  // Logged out, the same credentials are refused.
  expect((await u.json(['logout'])).revokedStorageKey).toBe(who.apiKey);
  await expect(aws('s3', 'ls')).rejects.toThrow(/InvalidAccessKeyId|Forbidden|403/);
}, 180_000);

test('denied on the page: the command line says so and keeps nothing', async () => {
  const u = await newCliUser();
  users.push(u);
  const { running, address } = await startLogin(u);
  await page.goto(address);
  await page.getByRole('button', { name: 'Deny' }).click();
  await page.getByText(`Denied: cairn on ${hostname()} was not logged in.`).waitFor();
  const done = await running.done;
  expect(done.code).toBe(1);
  expect(done.stderr).toContain('cairn: the login was denied in the browser');
  expect(done.stdout).toBe('');
}, 120_000);

test('typing the code: a wrong one is told so, the right one shows the login', async () => {
  const u = await newCliUser();
  users.push(u);
  const { running, code } = await startLogin(u);
  await page.goto(`${apiUrl}/app/device`);
  const input = page.getByLabel('Code');
  await input.fill('BBBB-BBBC');
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByText('No login waits with this code').waitFor();
  await input.fill(code.toLowerCase());
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByTestId('device-code').waitFor();
  expect(await page.getByTestId('device-code').textContent()).toBe(code);
  await page.screenshot({ path: join(SHOTS, 'device-typed.png'), fullPage: true });
  await page.getByRole('button', { name: 'Deny' }).click();
  expect((await running.done).code).toBe(1);
}, 120_000);
