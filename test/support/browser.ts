/**
 * What the browser suites share: Debian's Chromium through playwright-core,
 * launched the one way, and pages watched for what must never happen on
 * them (an uncaught error, an error on the console, a request to a host
 * the page has no business with, an answer the suite did not provoke),
 * each pushed as a sentence to the suite's list of problems, which its
 * afterEach expects empty; and the web app's sign-in with an API key, as
 * the app keeps it.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type ConsoleMessage, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CAIRN_CHROMIUM ?? '/usr/bin/chromium';

/** Headless, no sandbox (the tests run as root), nothing of Chromium's own on the network. */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Chromium, with a fresh temporary profile (launch() makes one per run); a missing Chromium is said plainly. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (or set CAIRN_CHROMIUM to a Chromium)`);
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

export interface Watch {
  /** The hosts (host:port) the page may ask; any other is a problem (data: URLs aside). Unset: any host. */
  hosts?: string[];
  /** Console errors that are expected: the browser's own line for a refusal the suite provokes. */
  expectedConsole?: (message: ConsoleMessage) => boolean;
  /** Answers that are problems; unset: every 5xx. */
  badAnswer?: (status: number, path: string) => boolean;
}

/** Watches `page`, pushing what must not happen to `problems`. */
export function watchPage(page: Page, problems: string[], watch: Watch = {}): Page {
  const { hosts, expectedConsole = () => false, badAnswer = (status: number) => status >= 500 } = watch;
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && !expectedConsole(message)) problems.push(message.text());
  });
  if (hosts)
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.protocol !== 'data:' && !hosts.includes(url.host)) problems.push(`request to ${request.url()}`);
    });
  page.on('response', (res) => {
    const path = new URL(res.url()).pathname;
    if (badAnswer(res.status(), path)) problems.push(`${res.status()} from ${path}`);
  });
  return page;
}

/** Every page of the context signed in to the web app with `apiKey`, as the app keeps it (the tab's sessionStorage). */
export async function signInWithApiKey(context: BrowserContext, apiKey: string): Promise<void> {
  await context.addInitScript((key) => sessionStorage.setItem('cairn.apiKey', key), apiKey);
}

/** A watched page in a browser context of its own (no cookie, no storage): signed in with `apiKey` when given. */
export async function watchedPage(
  browser: Browser,
  problems: string[],
  options: Watch & { context?: BrowserContextOptions; apiKey?: string; clipboard?: string } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext(options.context ?? { viewport: { width: 1280, height: 860 } });
  if (options.clipboard) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: options.clipboard });
  if (options.apiKey) await signInWithApiKey(context, options.apiKey);
  return { context, page: watchPage(await context.newPage(), problems, options) };
}
