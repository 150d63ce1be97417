/**
 * The Screenshotter of one machine: a headless Chromium installed here
 * (Debian's, by default; CAIRN_CHROMIUM_PATH names another) driven by
 * playwright-core. The driving itself is shared with the preview Lambda,
 * which launches @sparticuz/chromium instead (functions/preview/chromium.ts).
 */
export { ChromiumScreenshotter, installedChromium } from '../preview/chromium.js';
