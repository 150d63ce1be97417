/**
 * The Chromium of the preview Lambda: @sparticuz/chromium, an Amazon Linux
 * build (x86_64 only) whose brotli-packed binary is unpacked into /tmp on
 * an instance's first shot and found there by the next ones. The package
 * stays outside the esbuild bundle (it finds its packed files next to its
 * own code; lib/preview.ts copies it into the function's node_modules) and
 * is imported only here, when a picture is taken.
 */
import { ScreenshotError } from '../core/ports/screenshotter.js';
import type { ChromiumBuild } from './chromium.js';

/**
 * Flags of its list a picture does not need, and which would weaken the
 * page's own origin checks (the shot already refuses other hosts).
 */
const LEFT_OUT = new Set(['--disable-web-security', '--allow-running-insecure-content']);

export async function sparticuzChromium(): Promise<ChromiumBuild> {
  const { default: Chromium } = await import('@sparticuz/chromium');
  return {
    name: '@sparticuz/chromium',
    args: Chromium.args.filter((arg) => !LEFT_OUT.has(arg)),
    async executablePath() {
      try {
        return await Chromium.executablePath();
      } catch (err) {
        throw new ScreenshotError(`@sparticuz/chromium could not be unpacked: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`);
      }
    },
  };
}
