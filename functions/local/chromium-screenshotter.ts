/**
 * The Screenshotter of one machine: a headless Chromium installed here
 * (Debian's, by default; CAIRN_CHROMIUM_PATH names another) driven by
 * playwright-core, with Chromium's own sandbox on and, when the service
 * runs as root, as the unprivileged user nobody (installedChromium says
 * why). The driving itself is shared with the preview Lambda,
 * which launches @sparticuz/chromium instead (functions/preview/chromium.ts).
 */
export { ChromiumScreenshotter, installedChromium } from '../preview/chromium.js';
