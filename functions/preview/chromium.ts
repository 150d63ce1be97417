/**
 * A Screenshotter driving a headless Chromium through playwright-core, for
 * whichever Chromium the environment has: Debian's on one machine
 * (functions/local/chromium-screenshotter.ts), @sparticuz/chromium's Amazon
 * Linux build in the preview Lambda (lambda-chromium.ts). A ChromiumBuild
 * says where the executable is and which flags it needs; the isolation
 * flags below are added to every build's. The installed one runs with its
 * own sandbox and never as root (installedChromium); the Lambda's cannot
 * (lambda-chromium.ts says why that is safe there).
 *
 * One browser is launched on the first shot and kept for the next ones (a
 * launch costs a second or more); each shot gets a context of its own, so
 * one site never sees another's cookies or storage. The browser goes with
 * close(), or is launched again when it died.
 */
import { rmSync } from 'node:fs';
import { access, chmod, constants, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { ScreenshotError, type CaptureOptions, type Screenshotter } from '../core/ports/screenshotter.js';

/** How long a browser may take to start and open a page, before the page's own time limit starts. */
const START_LIMIT_MS = 45_000;

/** What every build is launched with, whatever its own flags. */
export const ISOLATION_ARGS: readonly string[] = [
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // The pages are the users' own: no name they use resolves, and WebRTC
  // (which request routing does not see) sends nothing outside a proxy.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
];

/**
 * The flags of a Chromium installed on this machine (Debian's). Never
 * --no-sandbox: the pages are strangers' code, and Chromium's own sandbox
 * (a renderer in user, pid and network namespaces of its own, under a
 * seccomp-bpf filter) is what keeps a renderer exploit from the machine.
 */
const INSTALLED_ARGS: readonly string[] = ['--headless', '--disable-gpu'];

/**
 * Whom Chromium runs as when the service is root (CI is, and so are many
 * one-machine installs): nobody. Chromium refuses its sandbox to root, and
 * root without one would be a renderer exploit away from owning the machine.
 */
export const PREVIEW_UID = 65534;
export const PREVIEW_GID = 65534;
const SETPRIV = '/usr/bin/setpriv';

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * A launcher for Chromium at `path` as PREVIEW_UID: Playwright starts it as
 * it would start Chromium (the same arguments, the DevTools pipe on fds 3
 * and 4 passed through), and it hands Playwright's fresh profile directory
 * to that user, then becomes it for good (setpriv, no new privileges) and
 * runs Chromium, whose own sandbox then works. Written with mkdtemp (never
 * a guessable name in a shared /tmp) and removed when the process exits.
 */
async function unprivilegedLauncher(path: string): Promise<string> {
  try {
    await access(SETPRIV, constants.X_OK);
  } catch {
    throw new ScreenshotError(`${SETPRIV} (util-linux) is needed to run Chromium as an unprivileged user while the service runs as root`);
  }
  const dir = await mkdtemp(join(tmpdir(), 'cairn-chromium-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const launcher = join(dir, 'chromium');
  const owner = `${PREVIEW_UID}:${PREVIEW_GID}`;
  await writeFile(
    launcher,
    [
      '#!/bin/sh',
      '# Chromium as an unprivileged user, with its own sandbox (functions/preview/chromium.ts).',
      'set -e',
      'profile=',
      'for arg in "$@"; do case "$arg" in --user-data-dir=*) profile="${arg#--user-data-dir=}" ;; esac; done',
      // Playwright made the profile (root's, mode 0700) a moment ago; Chromium must write it.
      `if [ -n "$profile" ]; then chown -R ${owner} "$profile"; export HOME="$profile" XDG_CONFIG_HOME="$profile" XDG_CACHE_HOME="$profile"; fi`,
      `exec ${SETPRIV} --reuid=${PREVIEW_UID} --regid=${PREVIEW_GID} --clear-groups --no-new-privs -- ${shellQuote(path)} "$@"`,
      '',
    ].join('\n'),
  );
  await chmod(launcher, 0o700);
  return launcher;
}

/** A Chromium to launch: where it is and the flags it needs. */
export interface ChromiumBuild {
  /** What the deploy log names ("Chromium at /usr/bin/chromium"). */
  readonly name: string;
  /** The executable's path; rejects with a ScreenshotError saying why there is none. */
  executablePath(): Promise<string>;
  /** Its own flags (ISOLATION_ARGS are added). */
  readonly args: readonly string[];
  /** Whether Chromium's own sandbox is on (Playwright otherwise adds --no-sandbox). */
  readonly sandbox: boolean;
}

async function executableAt(path: string): Promise<string> {
  try {
    await access(path, constants.X_OK);
  } catch {
    throw new ScreenshotError(`no Chromium at ${path} (install chromium or set CAIRN_CHROMIUM_PATH)`);
  }
  return path;
}

/**
 * A Chromium installed at `path` (Debian's chromium package by default),
 * with its own sandbox: as the service's user, or as PREVIEW_UID when the
 * service is root. A machine where that sandbox cannot start (no
 * unprivileged user namespaces) gets no pictures, and the deploy log says
 * why: a picture is not worth an unsandboxed browser.
 */
export function installedChromium(path: string, options: { sandbox?: boolean } = {}): ChromiumBuild {
  // Off only where the machine cannot give one and isolates the browser itself: a Lambda function (see lambda-chromium.ts).
  if (options.sandbox === false)
    return {
      name: `Chromium at ${path}`,
      args: [...INSTALLED_ARGS, '--no-sandbox'],
      sandbox: false,
      executablePath: () => executableAt(path),
    };
  let launcher: Promise<string> | undefined;
  return {
    name: `Chromium at ${path}`,
    args: INSTALLED_ARGS,
    sandbox: true,
    async executablePath() {
      await executableAt(path);
      if (process.getuid?.() !== 0) return path;
      launcher ??= unprivilegedLauncher(path);
      launcher.catch(() => (launcher = undefined));
      return launcher;
    },
  };
}

/** How long an abandoned shot's context may take to close before the whole browser is. */
const CLOSE_GRACE_MS = 5000;

export class ChromiumScreenshotter implements Screenshotter {
  readonly name: string;
  private readonly build: ChromiumBuild;
  private browser?: Promise<Browser>;
  private closed = false;

  /** A path is a Chromium installed there (installedChromium). */
  constructor(build: ChromiumBuild | string) {
    this.build = typeof build === 'string' ? installedChromium(build) : build;
    this.name = this.build.name;
  }

  private launch(): Promise<Browser> {
    if (this.closed) return Promise.reject(new ScreenshotError('the screenshotter was closed (the service is stopping)'));
    if (this.browser) return this.browser;
    const launching = (async () => {
      const executablePath = await this.build.executablePath();
      try {
        // Loaded with the first browser, not with the module: playwright-core takes about
        // 380 ms to import, which the preview function's cold start need not wait for.
        const { chromium } = await import('playwright-core');
        // launch() gives the browser a fresh temporary profile, removed when it closes.
        return await chromium.launch({
          executablePath,
          args: [...this.build.args, ...ISOLATION_ARGS],
          chromiumSandbox: this.build.sandbox,
          headless: true,
          timeout: 30_000,
        });
      } catch (err) {
        throw new ScreenshotError(`${this.build.name} did not start: ${firstLine(err)}`);
      }
    })();
    this.browser = launching;
    launching.then(
      (browser) => browser.on('disconnected', () => this.forget(launching)),
      () => this.forget(launching),
    );
    return launching;
  }

  /** A browser that failed to start or died is launched again by the next shot. */
  private forget(which: Promise<Browser>): void {
    if (this.browser === which) this.browser = undefined;
  }

  async capture(url: string, options: CaptureOptions): Promise<Uint8Array> {
    const target = new URL(url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:')
      throw new ScreenshotError(`cannot take a picture of a ${target.protocol} URL`);
    if (options.signal?.aborted) throw new ScreenshotError('the deploy was stopped');
    let context: BrowserContext | undefined;
    let abandoned = false;
    const browser = this.launch();
    // The time limit is the page's: it starts when the page is asked for, not while a browser starts.
    let startClock!: () => void;
    const clockStarted = new Promise<void>((resolve) => (startClock = resolve));

    const shot = (async () => {
      const opened = await (
        await browser
      ).newContext({
        viewport: { width: options.width, height: options.height },
        deviceScaleFactor: 1,
        serviceWorkers: 'block',
        acceptDownloads: false,
      });
      if (abandoned) {
        await opened.close().catch(() => {});
        throw new ScreenshotError('abandoned');
      }
      context = opened;
      // Only the page's own origin: a site cannot make the service fetch elsewhere.
      await opened.route('**/*', (route) =>
        new URL(route.request().url()).origin === target.origin ? route.continue() : route.abort('blockedbyclient'),
      );
      await opened.routeWebSocket(/.*/, (ws) => ws.close());
      const page = await opened.newPage();
      startClock();
      await page.goto(url, { waitUntil: 'load', timeout: options.timeoutMs });
      return await page.screenshot({ type: 'png', timeout: options.timeoutMs });
    })();

    let timer: NodeJS.Timeout | undefined;
    let startTimer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      // A browser that will not start or open a page is bounded too: the shot never hangs a deploy.
      startTimer = setTimeout(
        () => reject(new ScreenshotError(`the browser did not open the page within ${seconds(START_LIMIT_MS)}`)),
        START_LIMIT_MS,
      );
      void clockStarted.then(() => {
        clearTimeout(startTimer);
        timer = setTimeout(
          () => reject(new ScreenshotError(`the page did not load and render within ${seconds(options.timeoutMs)}`)),
          options.timeoutMs,
        );
      });
      onAbort = () => reject(new ScreenshotError('the deploy was stopped'));
      options.signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return new Uint8Array(await Promise.race([shot, stopped]));
    } catch (err) {
      abandoned = true;
      shot.catch(() => {}); // settles once its context is closed below
      if (err instanceof ScreenshotError) throw err;
      // Playwright's own limits (the same time) can fire a moment before ours: the same answer.
      if ((err as Error)?.name === 'TimeoutError')
        throw new ScreenshotError(`the page did not load and render within ${seconds(options.timeoutMs)}`);
      throw new ScreenshotError(`the page could not be captured: ${firstLine(err)}`);
    } finally {
      clearTimeout(timer);
      clearTimeout(startTimer);
      if (onAbort) options.signal?.removeEventListener('abort', onAbort);
      if (context) await this.closeContext(context, browser);
    }
  }

  /**
   * A page stuck in a script can keep its context from closing: then the
   * whole browser goes (the next shot launches another).
   */
  private async closeContext(context: BrowserContext, browser: Promise<Browser>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      context.close().then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CLOSE_GRACE_MS))),
    ]);
    clearTimeout(timer);
    if (!closed) {
      this.forget(browser);
      await (await browser).close().catch(() => {});
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const browser = this.browser;
    this.browser = undefined;
    if (browser) await (await browser.catch(() => undefined))?.close().catch(() => {});
  }
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
