/**
 * Takes a picture of a web page: headless Chromium through playwright-core
 * on one machine (functions/local/chromium-screenshotter.ts). A Lambda
 * adapter (@sparticuz/chromium) can implement the same port later; the
 * deploy pipeline only knows this interface.
 */

export interface CaptureOptions {
  /** The viewport, in CSS pixels; the image has exactly this size (device scale 1). */
  width: number;
  height: number;
  /** Past this the shot is abandoned (the page is closed, and the browser if it does not close) and capture rejects. */
  timeoutMs: number;
  /** Aborting it abandons the shot the same way. */
  signal?: AbortSignal;
}

export interface Screenshotter {
  /** What the deploy log names ("Chromium at /usr/bin/chromium"). */
  readonly name: string;
  /**
   * A PNG of the page at `url` once it has loaded. The page may load
   * anything from its own origin and nothing else: every request to another
   * host is refused, so a site cannot make the service fetch on its behalf.
   * Rejects with a ScreenshotError saying why the picture could not be had.
   */
  capture(url: string, options: CaptureOptions): Promise<Uint8Array>;
  /** Closes the browser, if one was started; later captures reject. */
  close(): Promise<void>;
}

/** Why a picture could not be had, in words for a deploy log. */
export class ScreenshotError extends Error {
  override name = 'ScreenshotError';
}
