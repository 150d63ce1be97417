/**
 * The web app in a real browser (Debian's Chromium through playwright-core)
 * against a local service this test starts, with a real git server: sign
 * in (a wrong key first), create a site from a git repository, trigger a
 * deploy and watch it reach DEPLOYED with its log following live, open the
 * site's address, deploy again, roll back, purge the cache, create an API
 * key (shown once, copied) and revoke it, make a storage key pair, create a
 * bucket, upload files (one in a multipart upload), open a public URL,
 * delete a file, sign out; a key revoked under a signed-in tab ends its
 * session with a message. (Signing in as a person, with an e-mail and a
 * password, is web-app-accounts-browser.test.ts.) Every step is checked against the service itself
 * (GraphQL, S3, the gateway), not only against what the page says.
 *
 * Along the way: no console errors (but the browser's own line for the
 * 401 a wrong key gets), no request to any host but the service's, every
 * form control labelled, text contrast at WCAG AA, keyboard navigation,
 * and every page at 1280 px and at 375 px without sideways scrolling.
 * Screenshots of each page go to test-results/web-app/ (gitignored).
 */
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { launchChromium, watchedPage } from '../support/browser.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { accountNamed, dataOf, graphqlClient, seedDeploys } from '../support/graphql.js';
import { hostFetch } from '../support/http.js';
import { startTestService, type TestService } from '../support/service.js';

const SHOTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-results', 'web-app');
/** Small, so that a 2.5 MB file goes up in a multipart upload of 1 MiB parts, as it would behind Lambda. */
const MAX_PUT = 1024 * 1024;

let service: TestService;
let git: GitServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let apiKey: string;
let origin: string;
let client: ReturnType<typeof graphqlClient>;
const problems: string[] = [];
/** Set while a step expects the browser to log a 401 (a wrong or revoked key). */
let expect401 = false;

const gql = async (key: string, query: string, variables: Record<string, unknown> = {}) => client.gql(key, query, variables);

beforeAll(async () => {
  [service, git] = await Promise.all([
    startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_BUILD_TIMEOUT: '60', CAIRN_MAX_REQUEST_BODY: String(MAX_PUT), CAIRN_PREVIEW: 'on' }),
    startGitServer(),
  ]);
  apiKey = (await accountNamed(service, 'acme')).apiKey;
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
  origin = new URL(service.endpoints.graphql).origin;
  await mkdir(SHOTS, { recursive: true });
  browser = await launchChromium();
  ({ context, page } = await watchedPage(browser, problems, {
    clipboard: origin,
    hosts: [origin, service.endpoints.s3, service.endpoints.gateway].map((u) => new URL(u).host),
    expectedConsole: (msg) => expect401 && msg.text().includes('status of 401'),
    badAnswer: () => false,
  }));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  receiver?.closeAllConnections();
  await Promise.all([service?.close(), git?.close(), new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()))]);
});

afterEach(() => {
  // Checked after every step, so a failure names the step that caused it.
  expect(problems).toEqual([]);
});

async function shot(name: string, target: Page = page): Promise<void> {
  await target.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Every visible form control has a label, and visible text reaches WCAG AA contrast against what is behind it. */
async function checkAccessibility(target: Page = page): Promise<void> {
  const problems = await target.evaluate(() => {
    const out: string[] = [];
    const visible = (el: Element) => {
      const r = el.getBoundingClientRect();
      const s = getComputedStyle(el);
      return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none';
    };
    for (const el of Array.from(document.querySelectorAll('input, select, textarea, button'))) {
      if (!visible(el) || (el as HTMLInputElement).type === 'hidden') continue;
      const labelled =
        (el as HTMLInputElement).labels?.length ||
        el.getAttribute('aria-label') ||
        el.getAttribute('aria-labelledby') ||
        (el.tagName === 'BUTTON' && el.textContent?.trim());
      if (!labelled) out.push(`unlabelled ${el.tagName.toLowerCase()} ${el.outerHTML.slice(0, 80)}`);
    }
    const rgba = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number) as number[];
    const lum = ([r, g, b]: number[]) => {
      const ch = (v: number) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * ch(r!) + 0.7152 * ch(g!) + 0.0722 * ch(b!);
    };
    const background = (el: Element | null): number[] | null => {
      for (let at = el; at; at = at.parentElement) {
        const s = getComputedStyle(at);
        if (s.backgroundImage !== 'none' && at !== document.body && at.tagName !== 'MAIN') return null; // a gradient or image: not judged
        const c = rgba(s.backgroundColor);
        if (c.length >= 3 && (c.length < 4 || c[3]! > 0.5)) return c;
      }
      return [255, 255, 255];
    };
    for (const el of Array.from(document.querySelectorAll('body *'))) {
      const text = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent!.trim() !== '');
      if (!text || !visible(el) || el.closest('.visually-hidden, svg')) continue;
      const s = getComputedStyle(el);
      if (Number(s.opacity) < 1 || (el as HTMLButtonElement).disabled) continue;
      const bg = background(el);
      if (!bg) continue;
      const fg = rgba(s.color);
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x) as [number, number];
      const ratio = (a + 0.05) / (b + 0.05);
      const size = parseFloat(s.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(s.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5))
        out.push(`contrast ${ratio.toFixed(2)} for "${el.textContent!.trim().slice(0, 40)}" (${s.color} on rgb(${bg.join(',')}))`);
    }
    return out;
  });
  expect(problems).toEqual([]);
}

/** Waits until the element says exactly `text` (the page re-reads the service after an action's notice shows), then checks it. */
async function textBecomes(target: Locator, text: string): Promise<void> {
  await target.filter({ hasText: text }).waitFor({ timeout: 15_000 });
  expect(await target.textContent()).toBe(text);
}

/** Follows a link of the main navigation. */
async function nav(name: 'Sites' | 'Storage' | 'Team'): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).click();
}

async function go(hash: string): Promise<void> {
  await page.goto(`${origin}/${hash}`);
}

/** Waits for the page to say what came of an action (the notice whose text matches), and returns that text. */
async function notice(text: string | RegExp): Promise<string> {
  const result = page.locator('[data-result] > span').filter({ hasText: text });
  await result.waitFor({ timeout: 30_000 });
  return (await result.textContent()) ?? '';
}

/** The site's address through the gateway, as a browser asks for it (Host: <slug>.<sites domain>). */
async function siteFetch(slug: string, path = '/'): Promise<{ body: string; cache: string | null }> {
  const res = await hostFetch(`${service.endpoints.gateway}${path}`, { headers: { host: `${slug}.${service.config.sites.domain}` } });
  return { body: await res.text(), cache: res.headers.get('x-cache') };
}

const SLUG = 'acme-docs';
const REPO = 'acme/docs';
const BUILD = 'for i in $(seq 1 40); do echo "building step $i of 40"; sleep 0.1; done';
const indexHtml = (version: string) =>
  `<!doctype html><html><head><title>Acme docs</title><link rel="stylesheet" href="style.css"></head><body><h1>Acme docs ${version}</h1><p>Welcome to the docs.</p></body></html>`;
let siteId: string;
let firstDeploy: string;
let secondDeploy: string;

test('a wrong key is refused with a clear message; the right one signs in, and the app loads nothing from elsewhere', async () => {
  // The app asks whether the browser has a session first: the browser logs the 401 of having none.
  expect401 = true;
  await go('');
  // E-mail and password first; sign-up here is by invitation (the default), which the page says; the key is the other way in.
  await page.getByLabel('E-mail').waitFor();
  await page.getByText('New accounts are by invitation: ask an owner of a team to invite you.').waitFor();
  expect(await page.getByRole('button', { name: 'Create an account' }).count()).toBe(0);
  await checkAccessibility();
  await page.getByRole('button', { name: 'Use an API key' }).click();
  const input = page.getByLabel('API key');
  await input.waitFor();
  await checkAccessibility();
  expect(await input.getAttribute('type')).toBe('password');
  await input.fill('cairn_not_a_real_key');
  await input.press('Enter');
  await expect(page.getByRole('alert').textContent()).resolves.toContain(
    'This API key was not accepted: it is wrong, or it has been revoked.',
  );
  expect401 = false;
  await shot('sign-in-wrong-key-desktop');
  await input.fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();
  await page.getByText('No sites yet').waitFor();
  expect(await page.evaluate(() => sessionStorage.getItem('cairn.apiKey'))).toBe(apiKey);
  await checkAccessibility();
  await shot('sites-empty-desktop');
});

test('the keyboard reaches everything: a skip link first, then the navigation; a new page puts focus on its heading', async () => {
  // A fresh load leaves focus where the browser puts it: the first Tab is the skip link.
  await go('#/sites');
  await page.reload();
  await page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();
  const focused = () => page.evaluate(() => `${document.activeElement?.tagName}:${document.activeElement?.textContent}`);
  await page.keyboard.press('Tab');
  expect(await focused()).toBe('A:Skip to content');
  await page.keyboard.press('Enter');
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
  await page.keyboard.press('Tab');
  expect(await focused()).toBe('A:New site');
  await page.reload();
  await page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();
  for (const expected of ['A:Skip to content', 'A:Cairn', 'A:Sites', 'A:Storage', 'A:Team']) {
    await page.keyboard.press('Tab');
    expect(await focused()).toBe(expected);
  }
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'acme', level: 1 }).waitFor();
  // Moving to another page puts focus on its heading, where reading starts.
  expect(await focused()).toBe('H1:acme');
});

test('create a site from a git repository, with a build command and an environment variable whose value is hidden', async () => {
  await git.commit(
    REPO,
    {
      'site/index.html': indexHtml('v1'),
      'site/style.css': 'body { font-family: sans-serif; background: #fef3c7; margin: 40px; } h1 { color: #92400e; }',
    },
    'First version of the docs',
  );
  await go('#/sites');
  await page.getByRole('link', { name: 'New site' }).click();
  await page.getByRole('heading', { name: 'New site', level: 1 }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill(SLUG);
  await page.getByLabel('Description (optional)').fill('The Acme handbook');
  await page.getByLabel('Repository URL').fill(git.repoUrl(REPO));
  await page.getByLabel('Branch').fill('main');
  await page.getByLabel('Build command (optional)').fill(BUILD);
  await page.getByLabel('Publish directory').fill('site');
  await page.getByRole('button', { name: 'Add a variable' }).click();
  await page.getByLabel('Name 1').fill('GREETING');
  const value = page.getByLabel('Value 1');
  await value.fill('hello-secret');
  expect(await value.getAttribute('type')).toBe('password');
  await page.getByRole('button', { name: 'Show values' }).click();
  expect(await value.getAttribute('type')).toBe('text');
  await page.getByRole('button', { name: 'Hide values' }).click();
  expect(await value.getAttribute('type')).toBe('password');
  await page.getByLabel('Start the first deploy when the site is created').uncheck();
  await checkAccessibility();
  await shot('new-site-filled-desktop');
  await page.getByRole('button', { name: 'Create site' }).click();
  await page.getByRole('heading', { name: SLUG, level: 1 }).waitFor();
  siteId = decodeURIComponent(new URL(page.url()).hash.split('/')[2]!);
  const site = dataOf(
    await gql(
      apiKey,
      'query ($s: ID!) { getSiteById(siteId: $s) { slug description buildSettings { buildCommand publishDirectoryPath environmentVariables { name value } } deploySettings { source { ... on Repository { url branch } } } } }',
      { s: siteId },
    ),
  ).getSiteById;
  expect(site).toEqual({
    slug: SLUG,
    description: 'The Acme handbook',
    buildSettings: {
      buildCommand: BUILD,
      publishDirectoryPath: 'site',
      environmentVariables: [{ name: 'GREETING', value: 'hello-secret' }],
    },
    deploySettings: { source: { url: git.repoUrl(REPO), branch: 'main' } },
  });
  await page.getByText('No deploys yet').waitFor();
  // The variable's value stays hidden on the site's page until asked for.
  await expect(page.locator('.env-view').textContent()).resolves.not.toContain('hello-secret');
  await page.getByRole('button', { name: 'Show values' }).click();
  await expect(page.locator('.env-view').textContent()).resolves.toContain('hello-secret');
  await page.getByRole('button', { name: 'Hide values' }).click();
  await checkAccessibility();
});

test('trigger a deploy: the list updates by itself, the deploy page follows the log live until DEPLOYED, and the preview image appears', async () => {
  await page.getByRole('button', { name: 'Trigger deploy' }).click();
  expect(await notice(/started/)).toMatch(/^Deploy [0-9A-Za-z]{8} started\.$/);
  const row = page.locator('li.deploy-row').first();
  await row.waitFor();
  expect(await row.getAttribute('data-status')).toBe('IN_PROGRESS');
  firstDeploy = (await row.getAttribute('data-deploy'))!;
  await shot('site-deploying-desktop');
  await row.locator('a.deploy-id').click();
  await page.getByRole('heading', { name: /^Deploy / }).waitFor();
  const log = page.getByTestId('deploy-log');
  // Live: the log grows while the deploy runs, and its panel stays scrolled to the end.
  await page.waitForFunction(
    () => /building step [5-9]/.test(document.querySelector('[data-testid=deploy-log]')?.textContent ?? ''),
    undefined,
    { timeout: 60_000 },
  );
  const early = (await log.textContent())!.length;
  await page.waitForFunction((n) => (document.querySelector('[data-testid=deploy-log]')?.textContent ?? '').length > n + 200, early, {
    timeout: 30_000,
  });
  expect(await page.getByTestId('deploy-status').textContent()).toBe('IN_PROGRESS');
  // The badge says which phase the deploy is in.
  await expect(page.locator('.page-header .badge').textContent()).resolves.toBe('Building');
  await page.waitForFunction(() => {
    const el = document.querySelector('[data-testid=deploy-log]')!;
    return el.scrollHeight > el.clientHeight && el.scrollHeight - el.scrollTop - el.clientHeight < 30;
  });
  await shot('deploy-running-desktop');
  await page.waitForFunction(() => document.querySelector('[data-testid=deploy-status]')?.textContent === 'DEPLOYED', undefined, {
    timeout: 60_000,
  });
  await page.waitForFunction(
    () => (document.querySelector('[data-testid=deploy-log]')?.textContent ?? '').includes('Published'),
    undefined,
    { timeout: 30_000 },
  );
  const deploy = dataOf(
    await gql(apiKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status ipfsHash published previewImage } }', {
      s: siteId,
      d: firstDeploy,
    }),
  ).getDeployById;
  expect(deploy).toMatchObject({ status: 'DEPLOYED', published: true });
  await expect(page.locator('.cid code').textContent()).resolves.toBe(deploy.ipfsHash);
  expect(await page.getByRole('link', { name: /Open on the gateway/ }).getAttribute('href')).toBe(
    `${service.endpoints.gateway}/ipfs/${deploy.ipfsHash}/`,
  );
  // The preview picture is taken after the deploy; the page keeps asking until it has it.
  const preview = page.locator('img.preview');
  await preview.waitFor({ timeout: 90_000 });
  await page.waitForFunction(() => {
    const img = document.querySelector('img.preview') as HTMLImageElement | null;
    return !!img && img.complete && img.naturalWidth > 0;
  });
  expect(await preview.getAttribute('src')).toMatch(new RegExp(`^${service.endpoints.gateway}/ipfs/`));
  await checkAccessibility();
  await shot('deploy-done-desktop');
}, 240_000);

test("the site's address serves the deploy; a second deploy replaces it, a rollback brings the first back", async () => {
  await page.getByRole('link', { name: `← ${SLUG}` }).click();
  await page.getByRole('heading', { name: SLUG, level: 1 }).waitFor();
  // The address link opens the site in a new tab.
  const address = page.locator('.subtitle a');
  expect(await address.getAttribute('href')).toBe(`http://${SLUG}.${service.config.sites.domain}/`);
  const [tab] = await Promise.all([context.waitForEvent('page'), address.click()]);
  await tab.waitForLoadState();
  expect(await tab.locator('h1').textContent()).toBe('Acme docs v1');
  await shot('site-address-v1-desktop', tab);
  await tab.close();

  await git.commit(REPO, { 'site/index.html': indexHtml('v2') }, 'Second version');
  await page.getByRole('button', { name: 'Trigger deploy' }).click();
  await notice(/started/);
  const rows = page.locator('li.deploy-row');
  await page.waitForFunction(() => document.querySelectorAll('li.deploy-row').length === 2);
  secondDeploy = (await rows.first().getAttribute('data-deploy'))!;
  expect(secondDeploy).not.toBe(firstDeploy);
  // The list follows the deploy on its own until it ends.
  await page.waitForFunction(
    (id) => document.querySelector(`li[data-deploy="${id}"]`)?.getAttribute('data-status') === 'DEPLOYED',
    secondDeploy,
    { timeout: 90_000 },
  );
  await page.locator(`li[data-deploy="${secondDeploy}"] .tag-published`).waitFor({ timeout: 30_000 });
  expect((await siteFetch(SLUG)).body).toContain('Acme docs v2');
  await checkAccessibility();
  await shot('site-two-deploys-desktop');

  await page.getByRole('button', { name: `Roll back to deploy ${firstDeploy.slice(-8)}` }).click();
  expect(await notice(/Rolled back/)).toBe(`Rolled back: deploy ${firstDeploy.slice(-8)} is published.`);
  await page.locator(`li[data-deploy="${firstDeploy}"] .tag-published`).waitFor();
  const site = dataOf(
    await gql(apiKey, 'query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } } }', { s: siteId }),
  ).getSiteById;
  expect(site.publishedDeploy.id).toBe(firstDeploy);
  expect((await siteFetch(SLUG)).body).toContain('Acme docs v1');
}, 180_000);

test('purge the cache: the next visit is a miss', async () => {
  await siteFetch(SLUG);
  expect((await siteFetch(SLUG)).cache).toBe('HIT');
  await page.getByRole('button', { name: 'Purge cache' }).click();
  await notice('The cache was purged');
  expect((await siteFetch(SLUG)).cache).toBe('MISS');
});

test("the site's IPNS name shows with a copy button and a /ipns/ link that serves the published deploy", async () => {
  const name = dataOf(await gql(apiKey, 'query ($s: ID!) { getSiteById(siteId: $s) { ipnsName } }', { s: siteId })).getSiteById
    .ipnsName as string;
  expect(name).toMatch(/^k51[0-9a-z]+$/);
  const facts = page.locator('.site-overview-facts');
  await facts.getByText(name, { exact: true }).waitFor();
  expect(await facts.getByRole('button', { name: 'Copy name' }).count()).toBe(1);
  const link = await facts.getByRole('link', { name: /\/ipns\// }).getAttribute('href');
  expect(link).toMatch(new RegExp(`^https?://[^/]+/ipns/${name}/$`));
  expect(await (await fetch(link!)).text()).toContain('Acme docs v1');
});

test('retry a deploy, then cancel the new one: each says what came of it, and the list follows', async () => {
  await page.getByRole('button', { name: `Retry deploy ${firstDeploy.slice(-8)}` }).click();
  const started = await notice(/builds the same commit again/);
  const retried = /^Deploy (\S{8}) started/.exec(started)![1]!;
  const row = page.locator('li.deploy-row').first();
  await page.waitForFunction((id) => document.querySelector('li.deploy-row')?.getAttribute('data-deploy')?.endsWith(id), retried);
  const retriedId = (await row.getAttribute('data-deploy'))!;
  expect(await row.getAttribute('data-status')).toBe('IN_PROGRESS');
  const again = dataOf(
    await gql(apiKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { repository { commit } } }', {
      s: siteId,
      d: retriedId,
    }),
  ).getDeployById;
  const first = dataOf(
    await gql(apiKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { repository { commit } } }', {
      s: siteId,
      d: firstDeploy,
    }),
  ).getDeployById;
  expect(again.repository.commit).toBe(first.repository.commit);
  await row.getByRole('button', { name: `Cancel deploy ${retried}` }).click();
  await notice(new RegExp(`^Deploy ${retried} is (cancelled|being cancelled)`));
  await page.waitForFunction(
    (id) => document.querySelector(`li[data-deploy="${id}"]`)?.getAttribute('data-status') === 'CANCELLED',
    retriedId,
    { timeout: 30_000 },
  );
  expect(
    dataOf(
      await gql(apiKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status } }', { s: siteId, d: retriedId }),
    ).getDeployById.status,
  ).toBe('CANCELLED');
  // The rollback still stands.
  expect((await siteFetch(SLUG)).body).toContain('Acme docs v1');
  await checkAccessibility();
  await shot('site-retried-cancelled-desktop');
}, 60_000);

test("edit the site's settings: the form starts from what the site has, and saving changes only what was changed", async () => {
  await page.getByRole('link', { name: 'Edit settings' }).click();
  await page.getByRole('heading', { name: `Settings of ${SLUG}`, level: 1 }).waitFor();
  expect(await page.getByLabel('Repository URL').inputValue()).toBe(git.repoUrl(REPO));
  expect(await page.getByLabel('Build command (optional)').inputValue()).toBe(BUILD);
  expect(await page.getByLabel('Value 1').inputValue()).toBe('hello-secret');
  expect(await page.getByLabel('Value 1').getAttribute('type')).toBe('password');
  await page.getByLabel('Description (optional)').fill('The Acme handbook, second edition');
  await page.getByRole('button', { name: 'Add a variable' }).click();
  await page.getByLabel('Name 2').fill('NODE_ENV');
  await page.getByLabel('Value 2').fill('production');
  await checkAccessibility();
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.getByRole('heading', { name: SLUG, level: 1, exact: true }).waitFor();
  const site = dataOf(
    await gql(
      apiKey,
      'query ($s: ID!) { getSiteById(siteId: $s) { slug description buildSettings { buildCommand publishDirectoryPath environmentVariables { name value } } } }',
      { s: siteId },
    ),
  ).getSiteById;
  expect(site).toEqual({
    slug: SLUG,
    description: 'The Acme handbook, second edition',
    buildSettings: {
      buildCommand: BUILD,
      publishDirectoryPath: 'site',
      environmentVariables: [
        { name: 'GREETING', value: 'hello-secret' },
        { name: 'NODE_ENV', value: 'production' },
      ],
    },
  });
  await expect(page.locator('.facts').first().textContent()).resolves.toContain('The Acme handbook, second edition');
});

test('a secret variable: typed blind with its scope, shown only as "secret (set)", kept when the settings are saved again, replaced on demand', async () => {
  const secretOf = async () => {
    const site = (await service.services.sites.getById(siteId))!;
    const token = site.buildSettings.environmentVariables.find((v) => v.name === 'API_TOKEN')!;
    return (await service.services.sites.openVariables(siteId, { API_TOKEN: token.sealed! })).API_TOKEN;
  };
  const variables = async () =>
    dataOf(
      await gql(
        apiKey,
        'query ($s: ID!) { getSiteById(siteId: $s) { buildSettings { environmentVariables { name value secret scope } } } }',
        { s: siteId },
      ),
    ).getSiteById.buildSettings.environmentVariables;
  const edit = async () => {
    await page.getByRole('link', { name: 'Edit settings' }).click();
    await page.getByRole('heading', { name: `Settings of ${SLUG}`, level: 1 }).waitFor();
  };
  const save = async () => {
    await page.getByRole('button', { name: 'Save settings' }).click();
    // Exactly the site page's heading, where the page goes once the save is answered: the
    // settings page's own heading, "Settings of <slug>", holds the name too, and a wait for
    // that one ended at once, before the save (seen on a loaded machine).
    await page.getByRole('heading', { name: SLUG, level: 1, exact: true }).waitFor();
  };
  await edit();
  await page.getByRole('button', { name: 'Add a variable' }).click();
  await page.getByLabel('Name 3').fill('API_TOKEN');
  await page.getByLabel('Secret 3').check();
  await page.getByLabel('Value 3').fill('tok-12345678');
  await page.getByLabel('Deploys 3').selectOption('PRODUCTION');
  // "Show values" shows plain values only: a secret stays blind.
  await page.getByRole('button', { name: 'Show values' }).click();
  expect(await page.getByLabel('Value 3').getAttribute('type')).toBe('password');
  expect(await page.getByLabel('Value 1').getAttribute('type')).toBe('text');
  await page.getByRole('button', { name: 'Hide values' }).click();
  await checkAccessibility();
  await save();
  expect(await variables()).toEqual([
    { name: 'GREETING', value: 'hello-secret', secret: false, scope: 'ALL' },
    { name: 'NODE_ENV', value: 'production', secret: false, scope: 'ALL' },
    { name: 'API_TOKEN', value: null, secret: true, scope: 'PRODUCTION' },
  ]);
  expect(await secretOf()).toBe('tok-12345678');
  await page.getByRole('button', { name: 'Show values' }).click();
  const shown = (await page.locator('.env-view').textContent())!;
  expect(shown).toContain('API_TOKENsecret (set) (production only)');
  expect(shown).not.toContain('tok-12345678');
  await page.getByRole('button', { name: 'Hide values' }).click();

  // Editing again: the secret has no field to read, only a way to replace it; saving as it is keeps it.
  await edit();
  await expect(page.getByLabel('Value 3').count()).resolves.toBe(0);
  await page.getByRole('button', { name: 'Replace API_TOKEN' }).waitFor();
  expect(await page.content()).not.toContain('tok-12345678');
  await checkAccessibility();
  await shot('site-settings-secret-desktop');
  await save();
  expect(await secretOf()).toBe('tok-12345678');

  await edit();
  await page.getByRole('button', { name: 'Replace API_TOKEN' }).click();
  await page.getByLabel('Value 3').fill('tok-87654321');
  await save();
  expect(await secretOf()).toBe('tok-87654321');
  expect((await variables())[2]).toEqual({ name: 'API_TOKEN', value: null, secret: true, scope: 'PRODUCTION' });
});

test('the sites list shows the site with its address, latest deploy and published preview', async () => {
  await nav('Sites');
  const card = page.locator(`li.site-card[data-site="${SLUG}"]`);
  await card.waitFor();
  await expect(card.locator('.site-card-address a').getAttribute('href')).resolves.toBe(`http://${SLUG}.${service.config.sites.domain}/`);
  // The latest deploy is the retry cancelled above; the published one (with its preview) is the first.
  await expect(card.locator('.badge').textContent()).resolves.toBe('Cancelled');
  await page.waitForFunction(() => {
    const img = document.querySelector('.site-card img') as HTMLImageElement | null;
    return !!img && img.complete && img.naturalWidth > 0;
  });
  await checkAccessibility();
  await shot('sites-with-site-desktop');
});

test('create an API key: shown once with a copy button, it works; revoke it: it stops working', async () => {
  await nav('Team');
  await page.getByRole('heading', { name: 'Members' }).waitFor();
  await page.getByLabel("New key's name").fill('ci');
  await page.getByRole('button', { name: 'Create API key' }).click();
  const field = page.getByRole('textbox', { name: 'New API key "ci"' });
  await field.waitFor();
  const key = await field.inputValue();
  expect(key).toMatch(/^cairn_/);
  await page.locator('.shown-once').getByRole('button', { name: 'Copy' }).click();
  await page.getByRole('button', { name: 'Copied' }).waitFor();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
  expect(dataOf(await gql(key, '{ getCurrentTeam { name } }')).getCurrentTeam.name).toBe('acme');
  await checkAccessibility();
  await shot('team-new-key-desktop');

  const byName = (name: string) =>
    page.locator('tr').filter({ has: page.locator('td[data-label="Name"]', { hasText: new RegExp(`^${name}$`) }) });
  const row = byName('ci');
  await expect(row.locator('td[data-label="Status"]').textContent()).resolves.toBe('Active');
  await row.getByRole('button', { name: 'Revoke' }).click();
  await row.getByRole('button', { name: 'Revoke now' }).click();
  expect(await notice(/is revoked/)).toBe('The key "ci" is revoked: it no longer works.');
  await row.locator('td[data-label="Status"]', { hasText: /^Revoked/ }).waitFor();
  // The key shown once is gone from the page.
  expect(await page.locator('.shown-once').count()).toBe(0);
  const refused = await gql(key, '{ getCurrentTeam { name } }');
  expect(refused.errors?.[0]?.extensions.code).toBe('UNAUTHENTICATED');
  await shot('team-key-revoked-desktop');
});

test("team settings with an API key: the owner renames the team; a new team's key is shown once, to sign in with", async () => {
  await nav('Team');
  await page.getByRole('heading', { name: 'Team settings' }).waitFor();
  const rename = async (name: string) => {
    await page.getByLabel('Team name', { exact: true }).fill(name);
    await page.getByRole('button', { name: 'Rename team' }).click();
    expect(await notice(/now called/)).toBe(`The team is now called ${name}.`);
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    expect(await page.locator('.team-name').textContent()).toBe(name);
  };
  await rename('acme studio');
  expect(dataOf(await gql(apiKey, '{ getCurrentTeam { name } }')).getCurrentTeam.name).toBe('acme studio');
  await rename('acme'); // back, for the pages after
  await page.getByLabel("New team's name").fill('acme labs');
  await page.getByRole('button', { name: 'Create team' }).click();
  const shown = page.getByLabel('API key for acme labs');
  await shown.waitFor();
  const key = await shown.inputValue();
  expect(dataOf(await gql(key, '{ getCurrentTeam { name } }')).getCurrentTeam.name).toBe('acme labs');
  // A tab signed in with a key stays in its team: the new one is worked in by signing in with its key.
  await page.getByText('To work in acme labs, sign in with this key.').waitFor();
  expect(await page.getByRole('button', { name: /^Work in/ }).count()).toBe(0);
  expect(await page.locator('.team-name').textContent()).toBe('acme');
  await checkAccessibility();
  await shot('team-settings-desktop');
});

test("members: an owner adds one by account name, changes roles and removes them; the API's refusals are the notice; a member sees no controls", async () => {
  const betaKey = (await accountNamed(service, 'beta')).apiKey;
  const teamId = dataOf(await gql(apiKey, '{ getCurrentTeam { id } }')).getCurrentTeam.id as string;
  const members = async () =>
    (
      dataOf(await gql(apiKey, 'query ($t: ID!) { getMembersByTeam(teamId: $t) { accountName role } }', { t: teamId }))
        .getMembersByTeam as Array<{ accountName: string; role: string }>
    )
      .map((m) => `${m.accountName}:${m.role}`)
      .sort();
  await go('#/team');
  await page.getByRole('heading', { name: 'Members' }).waitFor();
  await page.locator('tr[data-member="acme"] .tag-current').waitFor();
  const add = async (name: string) => {
    await page.getByLabel('Account name').fill(name);
    await page.getByRole('button', { name: 'Add member' }).click();
  };
  await add('nobody-here');
  expect(await notice(/failed/)).toBe('Adding nobody-here failed: account not found');
  await add('beta');
  expect(await notice(/^beta is now/)).toBe('beta is now a member of the team.');
  const beta = page.locator('tr[data-member="beta"]');
  const acme = page.locator('tr[data-member="acme"]');
  await beta.waitFor();
  expect(await members()).toEqual(['acme:OWNER', 'beta:MEMBER']);
  // The last owner cannot step down.
  await acme.getByRole('button', { name: 'Make member' }).click();
  expect(await notice(/failed/)).toBe('Making acme a member failed: a team keeps at least one owner: make another member an owner first');
  expect(await members()).toEqual(['acme:OWNER', 'beta:MEMBER']);
  await beta.getByRole('button', { name: 'Make owner' }).click();
  expect(await notice(/^beta is now/)).toBe('beta is now an owner.');
  await beta.locator('.tag-owner').waitFor();
  expect(await members()).toEqual(['acme:OWNER', 'beta:OWNER']);
  await checkAccessibility();
  await shot('team-members-desktop');
  await beta.getByRole('button', { name: 'Make member' }).click();
  await notice('beta is now a member.');
  expect(await members()).toEqual(['acme:OWNER', 'beta:MEMBER']);

  // beta, a member, in a tab signed in with its key for this team: the list, without the owners' controls.
  const betaHere = dataOf(await gql(betaKey, 'mutation ($t: ID!) { createApiKey(teamId: $t, name: "beta here") { key } }', { t: teamId }))
    .createApiKey.key as string;
  await page.evaluate((k) => sessionStorage.setItem('cairn.apiKey', k), betaHere);
  await page.reload();
  await page.locator('tr[data-member="beta"] .tag-current').waitFor();
  await page.getByText('Owners add members, change their roles and remove them.').waitFor();
  expect(await page.getByRole('button', { name: 'Add member' }).count()).toBe(0);
  expect(await page.locator('tr[data-member] button').count()).toBe(0);
  await checkAccessibility();
  await shot('team-members-as-member-desktop');
  await page.evaluate((k) => sessionStorage.setItem('cairn.apiKey', k), apiKey);
  await page.reload();

  // Removing is asked twice; it takes the member's keys for the team with it.
  await beta.getByRole('button', { name: 'Remove', exact: true }).click();
  await beta.getByRole('button', { name: 'Remove beta' }).click();
  expect(await notice(/no longer in the team/)).toBe('beta is no longer in the team, and the API keys they made for it are revoked.');
  await beta.waitFor({ state: 'detached' });
  expect(await members()).toEqual(['acme:OWNER']);
  expect((await gql(betaHere, '{ getCurrentTeam { name } }')).errors?.[0]?.extensions.code).toBe('UNAUTHENTICATED');
});

test('storage: a key pair made here, a bucket, uploads with progress (one multipart), CIDs, a public URL, a delete', async () => {
  await nav('Storage');
  await page.getByRole('heading', { name: 'Storage', level: 1 }).waitFor();
  await checkAccessibility();
  await shot('storage-keys-desktop');
  await page.getByRole('button', { name: 'Create a key pair for this browser' }).click();
  // Shown once: the id and the secret, before the tab starts using them.
  await page.getByRole('button', { name: 'Continue to storage' }).waitFor();
  const accessKeyId = await page.getByLabel('Access key id').inputValue();
  const secretAccessKey = await page.getByLabel('Secret access key').inputValue();
  expect(accessKeyId).toMatch(/^[A-Z0-9]{16,}$/);
  await page.getByRole('button', { name: 'Continue to storage' }).click();
  await page.locator('li[data-bucket="acme-bucket"]').waitFor();
  expect(JSON.parse((await page.evaluate(() => sessionStorage.getItem('cairn.storageKeys')))!)).toEqual({ accessKeyId, secretAccessKey });

  await page.getByLabel("New bucket's name").fill('acme-files');
  await page.getByRole('button', { name: 'Create bucket' }).click();
  await notice('Bucket acme-files created.');
  await page.locator('li[data-bucket="acme-files"] a').click();
  await page.getByText('This bucket is empty.').waitFor();

  const small = Buffer.from('hello from the web app\n');
  const big = Buffer.alloc(Math.floor(2.5 * MAX_PUT), 7);
  for (let i = 0; i < big.length; i += 4096) big.writeUInt32BE(i, i);
  await page.getByLabel(/^Files to upload/).setInputFiles([
    { name: 'hello.txt', mimeType: 'text/plain', buffer: small },
    { name: 'big.bin', mimeType: 'application/octet-stream', buffer: big },
  ]);
  await page.getByRole('button', { name: 'Upload', exact: true }).click();
  await page.locator('li[data-upload="big.bin"][data-state="done"]').waitFor({ timeout: 60_000 });
  await page.locator('li[data-upload="hello.txt"][data-state="done"]').waitFor();
  expect(await page.locator('li[data-upload="big.bin"] progress').evaluate((p: HTMLProgressElement) => p.value === p.max)).toBe(true);

  const s3 = service.s3({ accessKeyId, secretAccessKey });
  for (const [key, bytes] of [
    ['hello.txt', small],
    ['big.bin', big],
  ] as const) {
    const row = page.locator(`li.file-row[data-key="${key}"]`);
    await row.waitFor();
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'acme-files', Key: key }));
    expect(head.ContentLength).toBe(bytes.length);
    // Public (the upload's default): even an anonymous HEAD answers, with the CID.
    const cid = (await hostFetch(`${service.endpoints.s3}/acme-files/${key}`, { method: 'HEAD' })).headers.get('x-service-ipfs-hash');
    expect(cid).toMatch(/^bafy/);
    expect(await row.locator('.file-cid code').textContent()).toBe(cid);
    // And at its public URL.
    const publicUrl = (await row.locator('a.public-url').getAttribute('href'))!;
    expect(publicUrl).toBe(`http://acme-files.${service.config.urls.storagePublicDomain}/${key}`);
    const got = await hostFetch(`${service.endpoints.gateway}/${key}`, { headers: { host: new URL(publicUrl).host } });
    expect(got.status).toBe(200);
    expect(
      createHash('sha256')
        .update(Buffer.from(await got.arrayBuffer()))
        .digest('hex'),
    ).toBe(createHash('sha256').update(bytes).digest('hex'));
  }
  await checkAccessibility();
  await shot('bucket-uploaded-desktop');

  // Opening the public URL from the page.
  const [tab] = await Promise.all([context.waitForEvent('page'), page.locator('li.file-row[data-key="hello.txt"] a.public-url').click()]);
  await tab.waitForLoadState();
  expect(await tab.locator('body').textContent()).toBe(small.toString());
  await tab.close();

  const row = page.locator('li.file-row[data-key="hello.txt"]');
  await row.getByRole('button', { name: 'Delete' }).click();
  await row.getByRole('button', { name: 'Delete file' }).click();
  await notice('hello.txt deleted.');
  await row.waitFor({ state: 'detached' });
  await expect(s3.send(new HeadObjectCommand({ Bucket: 'acme-files', Key: 'hello.txt' }))).rejects.toMatchObject({ name: 'NotFound' });
  await s3.send(new HeadObjectCommand({ Bucket: 'acme-files', Key: 'big.bin' }));
}, 120_000);

/** A second site, for the "Git & notifications" page: no build, so its deploys are quick. */
const HOOKS_SLUG = 'acme-hooks';
const HOOKS_REPO = 'acme/hooks';
let hooksSite: string;
let hookUrl: string;
let receiver: Server | undefined;

const hooksSiteState = async () =>
  dataOf(
    await gql(
      apiKey,
      'query ($s: ID!) { getSiteById(siteId: $s) { webhookUrl webhookSecretSet repositoryTokenSet repositoryUsername deploySettings { prDeployPreviews } buildHooks { name branch } notificationUrls { url events } } }',
      { s: hooksSite },
    ),
  ).getSiteById;

/** Polls the deploy until it has ended, and returns it. */
async function deployEnded(deployId: string): Promise<{ status: string; repository: { commit: string } }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const d = dataOf(
      await gql(apiKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { status repository { commit } } }', {
        s: hooksSite,
        d: deployId,
      }),
    ).getDeployById;
    if (d.status !== 'IN_PROGRESS') return d;
    if (Date.now() > deadline) throw new Error(`deploy ${deployId} is still in progress`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The page at 375 px: no sideways scrolling, labels and contrast intact; then back to 1280. */
async function fitsPhone(name: string): Promise<void> {
  await page.setViewportSize({ width: 375, height: 812 });
  expect([name, await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)]).toEqual([name, 0]);
  await checkAccessibility();
  await shot(`${name}-phone`);
  await page.setViewportSize({ width: 1280, height: 860 });
}

test('git & notifications: a webhook secret shown once with its URL takes a signed GitHub push, which starts a deploy; rotated, the old one is refused; deleted, the URL is gone', async () => {
  const commit = await git.commit(
    HOOKS_REPO,
    { 'site/index.html': '<!doctype html><html><head><title>Hooks</title></head><body><h1>Hooks v1</h1></body></html>' },
    'Hooks v1',
  );
  const input = {
    name: HOOKS_SLUG,
    buildSettings: { publishDirectoryPath: 'site' },
    deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(HOOKS_REPO), branch: 'main' } } },
  };
  hooksSite = dataOf(await gql(apiKey, 'mutation ($i: CreateSiteInput!) { createSite(input: $i) { id } }', { i: input })).createSite.id;
  await go(`#/sites/${hooksSite}`);
  await page.getByRole('heading', { name: HOOKS_SLUG, level: 1 }).waitFor();
  await page.getByRole('link', { name: 'Git & notifications' }).click();
  await page.getByRole('heading', { name: 'Git & notifications', level: 1 }).waitFor();
  expect(await page.getByTestId('webhook-status').textContent()).toMatch(/^No secret yet/);
  await page.getByRole('heading', { name: 'On GitHub' }).waitFor();
  await page.getByRole('heading', { name: 'On GitLab' }).waitFor();
  await checkAccessibility();

  const push = async (url: string, secret: string) => {
    const body = JSON.stringify({
      ref: 'refs/heads/main',
      after: commit,
      deleted: false,
      repository: { full_name: HOOKS_REPO, clone_url: git.repoUrl(HOOKS_REPO) },
    });
    const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    return fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': signature,
      },
      body,
    });
  };
  await page.getByRole('button', { name: 'Create webhook secret' }).click();
  await notice(/Secret made/);
  const url = await page.getByLabel('Payload URL').inputValue();
  const secret = await page.getByLabel('Webhook secret').inputValue();
  await textBecomes(page.getByTestId('webhook-status'), 'A secret is set: events signed with it are taken.');
  expect(await hooksSiteState()).toMatchObject({ webhookUrl: url, webhookSecretSet: true });
  await checkAccessibility();
  await shot('integrations-webhook-desktop');

  const res = await push(url, secret);
  expect(res.status).toBe(200);
  const answer = (await res.json()) as { ok: boolean; deployId: string };
  expect(answer.ok).toBe(true);
  expect(await deployEnded(answer.deployId)).toMatchObject({ status: 'DEPLOYED', repository: { commit } });

  // Rotated: the new secret is shown once, and the old one no longer signs anything the hook takes.
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  await page.getByRole('button', { name: 'Replace the secret' }).click();
  await notice(/the old one no longer works/);
  const rotated = await page.getByLabel('Webhook secret').inputValue();
  expect(rotated).not.toBe(secret);
  expect((await push(url, secret)).status).toBe(401);

  await page.getByRole('button', { name: 'Delete secret' }).click();
  await page.getByRole('button', { name: 'Delete the secret' }).click();
  await notice(/answers 404 from now on/);
  expect(await page.locator('.shown-once').count()).toBe(0);
  expect((await hooksSiteState()).webhookSecretSet).toBe(false);
  expect((await push(url, rotated)).status).toBe(404);
  await page.getByRole('button', { name: 'Create webhook secret' }).waitFor();
}, 90_000);

test('git & notifications: a build hook (its URL shown once, with a curl line) starts a deploy on POST; one with a branch is listed with it, and deleted', async () => {
  await page.getByLabel('Hook name').fill('cms');
  await page.getByRole('button', { name: 'Create build hook' }).click();
  await notice('Build hook "cms" made. Copy its URL now: it is not shown again.');
  hookUrl = await page.getByLabel('URL of build hook "cms"').inputValue();
  expect(await page.getByLabel('Command that triggers it').inputValue()).toBe(`curl -X POST '${hookUrl}'`);
  await page.locator('.shown-once').first().getByRole('button', { name: 'Copy' }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(hookUrl);
  await page.locator('tr[data-hook="cms"]').waitFor();
  await checkAccessibility();
  await shot('integrations-build-hook-desktop');

  const res = await fetch(hookUrl, { method: 'POST' });
  expect(res.status).toBe(200);
  expect((await deployEnded(((await res.json()) as { deployId: string }).deployId)).status).toBe('DEPLOYED');

  await page.getByLabel('Hook name').fill('staging');
  await page.getByLabel('Branch (optional)').fill('staging');
  await page.getByRole('button', { name: 'Create build hook' }).click();
  await notice(/Build hook "staging" made/);
  const stagingUrl = await page.getByLabel('URL of build hook "staging"').inputValue();
  const staging = page.locator('tr[data-hook="staging"]');
  expect(await staging.locator('td[data-label="Branch"]').textContent()).toBe('staging');
  expect(await page.locator('tr[data-hook="cms"] td[data-label="Branch"]').textContent()).toBe("the site's (main)");
  expect((await hooksSiteState()).buildHooks).toEqual([
    { name: 'cms', branch: null },
    { name: 'staging', branch: 'staging' },
  ]);
  await staging.getByRole('button', { name: 'Delete' }).click();
  await staging.getByRole('button', { name: 'Delete hook' }).click();
  await notice('Build hook "staging" deleted: its URL answers 404 from now on.');
  await staging.waitFor({ state: 'detached' });
  expect((await hooksSiteState()).buildHooks).toEqual([{ name: 'cms', branch: null }]);
  expect((await fetch(stagingUrl, { method: 'POST' })).status).toBe(404);
}, 60_000);

test('git & notifications: a notification URL for two events gets signed deliveries of a deploy, listed in its last deliveries; removed, it is gone', async () => {
  const received: Array<{ headers: IncomingHttpHeaders; raw: string }> = [];
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver!.listen(0, '127.0.0.1', () => r()));
  const target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/cairn-events`;

  await page.getByLabel('URL', { exact: true }).fill(target);
  for (const event of ['Created', 'Building', 'Failed']) await page.getByRole('checkbox', { name: event, exact: true }).uncheck();
  await page.getByRole('button', { name: 'Add URL' }).click();
  await notice(/URL added/);
  const secret = await page.getByLabel(`Signing secret of ${target}`).inputValue();
  expect((await hooksSiteState()).notificationUrls).toEqual([{ url: target, events: ['SUCCEEDED', 'PUBLISHED'] }]);
  const item = page.locator(`li[data-notification="${target}"]`);
  // The list shows the new URL once it has read it again: wait for it before reading its tags.
  await item.getByText('Nothing sent yet.').waitFor();
  expect(await item.locator('.notification-events .tag').allTextContents()).toEqual(['Succeeded', 'Published']);

  const res = await fetch(hookUrl, { method: 'POST' });
  const { deployId } = (await res.json()) as { deployId: string };
  expect((await deployEnded(deployId)).status).toBe('DEPLOYED');
  const deadline = Date.now() + 30_000;
  while (received.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const deliveries = received.map(({ headers, raw }) => {
    const m = /^t=(\d+),sha256=([0-9a-f]{64})$/.exec(String(headers['x-cairn-signature']));
    expect(m && createHmac('sha256', secret).update(`${m[1]}.${raw}`).digest('hex')).toBe(m?.[2]);
    const body = JSON.parse(raw) as { event: string; deploy: { id: string } };
    return `${body.event}:${body.deploy.id}`;
  });
  expect(deliveries.sort()).toEqual([`PUBLISHED:${deployId}`, `SUCCEEDED:${deployId}`]);

  await page.getByRole('button', { name: 'Refresh deliveries' }).click();
  for (const event of ['SUCCEEDED', 'PUBLISHED']) await item.locator(`tr[data-delivery="${event}"][data-status="DELIVERED"]`).waitFor();
  expect(await item.locator('tr[data-delivery="PUBLISHED"] td[data-label="Result"]').textContent()).toBe('Delivered HTTP 200');
  await checkAccessibility();
  await shot('integrations-notifications-desktop');
  await fitsPhone('integrations-notifications');

  await item.getByRole('button', { name: 'Remove' }).click();
  await item.getByRole('button', { name: 'Remove URL' }).click();
  await notice(`${target} removed: nothing more is sent to it.`);
  await item.waitFor({ state: 'detached' });
  expect((await hooksSiteState()).notificationUrls).toEqual([]);
}, 90_000);

test('git & notifications: a repository token is set (never shown again) and a private repository deploys with it; cleared; previews are switched on in the settings the page links to', async () => {
  const token = `ghp_${randomBytes(18).toString('hex')}`;
  await page.getByLabel('Token', { exact: true }).fill(token);
  await page.getByRole('button', { name: 'Set token' }).click();
  await notice('The token is set: the next deploys clone the repository with it.');
  await textBecomes(page.getByTestId('token-status'), 'A token is set, with the user name x-access-token.');
  expect(await hooksSiteState()).toMatchObject({ repositoryTokenSet: true, repositoryUsername: 'x-access-token' });
  expect(await page.getByLabel('New token', { exact: true }).inputValue()).toBe('');
  expect(await page.content()).not.toContain(token);
  await checkAccessibility();

  // From now on the repository answers only with the token: a deploy still clones it.
  await git.requireCredentials(HOOKS_REPO, 'x-access-token', token);
  const deploy = dataOf(await gql(apiKey, 'mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: hooksSite })).triggerDeploy;
  expect((await deployEnded(deploy.id)).status).toBe('DEPLOYED');
  expect(
    (await git.authorizations()).some(
      (a) =>
        a.path.startsWith(`/${HOOKS_REPO}`) && a.authorization === `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`,
    ),
  ).toBe(true);
  await page.reload();
  await page.getByTestId('token-status').waitFor();
  expect(await page.content()).not.toContain(token);

  await page.getByRole('button', { name: 'Clear token' }).click();
  await page.getByRole('button', { name: 'Clear the token' }).click();
  await notice(/The token is cleared/);
  await textBecomes(page.getByTestId('token-status'), 'No token is set: the repository is cloned without credentials.');
  expect((await hooksSiteState()).repositoryTokenSet).toBe(false);

  // Previews and auto-publishing live in the site's settings: the page says how they are and links there.
  expect(await page.locator('[aria-labelledby="settings-title"] p').textContent()).toBe(
    "Pull-request previews are off; auto-publishing is on. Change them in the site's settings.",
  );
  await page.getByRole('link', { name: "Change them in the site's settings" }).click();
  await page.getByRole('heading', { name: `Settings of ${HOOKS_SLUG}`, level: 1 }).waitFor();
  await page.getByLabel(/^Build a preview of each pull request/).check();
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.getByRole('heading', { name: HOOKS_SLUG, level: 1, exact: true }).waitFor();
  expect((await hooksSiteState()).deploySettings.prDeployPreviews).toBe(true);
  await go(`#/sites/${hooksSite}/integrations`);
  await page.getByText('Pull-request previews are on').waitFor();
}, 90_000);

test('every page at 1280 px and at 375 px: no sideways scrolling, labels and contrast intact', async () => {
  const pages: Array<[string, string, string]> = [
    ['sites', '#/sites', 'Sites'],
    ['new-site', '#/sites/new', 'New site'],
    ['site', `#/sites/${siteId}`, SLUG],
    ['site-settings', `#/sites/${siteId}/settings`, `Settings of ${SLUG}`],
    ['deploy', `#/sites/${siteId}/deploys/${secondDeploy}`, `Deploy ${secondDeploy.slice(-8)}`],
    ['site-integrations', `#/sites/${hooksSite}/integrations`, 'Git & notifications'],
    ['team', '#/team', 'acme'],
    ['settings', '#/settings', 'Settings'],
    ['storage', '#/storage', 'Storage'],
    ['bucket', '#/storage/acme-files', 'acme-files'],
  ];
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: width === 375 ? 812 : 860 });
    for (const [name, hash, heading] of pages) {
      await go(hash);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await page.waitForFunction(() => !document.querySelector('.loading'));
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect([name, width, overflow]).toEqual([name, width, 0]);
      await checkAccessibility();
      await shot(`${name}-${width === 375 ? 'phone' : 'desktop'}`);
    }
  }
  await page.setViewportSize({ width: 1280, height: 860 });
}, 120_000);

test('long lists load on demand: older deploys ten at a time, files past the first 200', async () => {
  const made = dataOf(
    await gql(apiKey, 'mutation ($i: CreateSiteInput!) { createSite(input: $i) { id } }', {
      i: { name: 'acme-history', deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(REPO), branch: 'main' } } } },
    }),
  ).createSite;
  const seeded = await seedDeploys(service, made.id, 23);
  await go(`#/sites/${made.id}`);
  await page.getByRole('heading', { name: 'acme-history', level: 1 }).waitFor();
  const shown = () => page.locator('li.deploy-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-deploy')));
  await page.waitForFunction(() => document.querySelectorAll('li.deploy-row').length === 10);
  const newestFirst = seeded.map((d) => d.id).reverse();
  expect(await shown()).toEqual(newestFirst.slice(0, 10));
  await page.getByRole('button', { name: 'Older deploys' }).click();
  await page.waitForFunction(() => document.querySelectorAll('li.deploy-row').length === 20);
  await page.getByRole('button', { name: 'Older deploys' }).click();
  await page.waitForFunction(() => document.querySelectorAll('li.deploy-row').length === 23);
  expect(await shown()).toEqual(newestFirst);
  await page.getByRole('button', { name: 'Older deploys' }).waitFor({ state: 'detached' });

  // The storage test left this tab with a key pair; 201 files in one folder make two pages of the listing.
  const keys = JSON.parse((await page.evaluate(() => sessionStorage.getItem('cairn.storageKeys')))!) as {
    accessKeyId: string;
    secretAccessKey: string;
  };
  const s3 = service.s3(keys);
  const names = Array.from({ length: 201 }, (_, i) => `many/f${String(i).padStart(3, '0')}.txt`);
  for (let i = 0; i < names.length; i += 20) {
    await Promise.all(names.slice(i, i + 20).map((Key) => s3.send(new PutObjectCommand({ Bucket: 'acme-files', Key, Body: Key }))));
  }
  await go('#/storage/acme-files/many/');
  await page.waitForFunction(() => document.querySelectorAll('li.file-row[data-key]').length === 200);
  await page.getByRole('button', { name: 'More files' }).click();
  await page.waitForFunction(() => document.querySelectorAll('li.file-row[data-key]').length === 201);
  expect(await page.locator('li.file-row[data-key]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key')))).toEqual(names);
  await page.getByRole('button', { name: 'More files' }).waitFor({ state: 'detached' });
}, 120_000);

test('delete a site: asked twice, then gone from the service and the list', async () => {
  const made = dataOf(
    await gql(apiKey, 'mutation ($i: CreateSiteInput!) { createSite(input: $i) { id } }', {
      i: { name: 'acme-old', deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(REPO), branch: 'main' } } } },
    }),
  ).createSite;
  await go(`#/sites/${made.id}`);
  await page.getByRole('heading', { name: 'acme-old', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Delete site' }).click();
  await shot('site-delete-confirm-desktop');
  await page.getByRole('button', { name: 'Delete the site and its deploys' }).click();
  await page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();
  await page.locator(`li.site-card[data-site="${SLUG}"]`).waitFor();
  expect(await page.locator('li.site-card[data-site="acme-old"]').count()).toBe(0);
  expect(dataOf(await gql(apiKey, 'query ($s: ID!) { getSiteById(siteId: $s) { id } }', { s: made.id })).getSiteById).toBeNull();
});

test('sign out forgets the keys; a key revoked under a signed-in tab ends its session with a message', async () => {
  await go('#/sites');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();
  expect(await page.evaluate(() => [sessionStorage.getItem('cairn.apiKey'), sessionStorage.getItem('cairn.storageKeys')])).toEqual([
    null,
    null,
  ]);
  await page.setViewportSize({ width: 375, height: 812 });
  await shot('sign-in-phone');
  await page.setViewportSize({ width: 1280, height: 860 });

  // A second key, signed in with, then revoked by someone else.
  const team = dataOf(await gql(apiKey, '{ getCurrentTeam { id } }')).getCurrentTeam;
  const made = dataOf(
    await gql(apiKey, 'mutation ($t: ID!) { createApiKey(teamId: $t, name: "laptop") { key apiKey { id } } }', { t: team.id }),
  ).createApiKey;
  await page.getByLabel('API key').fill(made.key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Sites', level: 1 }).waitFor();
  dataOf(
    await gql(apiKey, 'mutation ($t: ID!, $k: ID!) { revokeApiKey(teamId: $t, apiKeyId: $k) { id } }', { t: team.id, k: made.apiKey.id }),
  );
  expect401 = true;
  await nav('Team');
  await page.getByText('Your API key is no longer accepted (it was revoked or deleted). Sign in with another one.').waitFor();
  expect401 = false;
  expect(await page.evaluate(() => sessionStorage.getItem('cairn.apiKey'))).toBeNull();
  await shot('sign-in-revoked-desktop');
});
