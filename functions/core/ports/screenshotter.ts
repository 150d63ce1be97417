/**
 * Preview images of deploys, through two small ports.
 *
 * Screenshotter takes a picture of a web page: headless Chromium through
 * playwright-core, Debian's on one machine, @sparticuz/chromium's in the
 * preview Lambda (functions/preview/chromium.ts has both). Whoever holds
 * one calls the preview step (functions/preview/take-preview.ts),
 * the one code path that serves the deploy's content, takes the picture,
 * stores it and sets previewImage.
 *
 * PreviewTaker is for a worker that holds no browser (the deploy worker in
 * AWS): it asks for the picture of a deploy that ended DEPLOYED and does not
 * wait for it (functions/aws/lambda-preview-taker.ts invokes the preview
 * Lambda asynchronously).
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

/** A deploy that ended DEPLOYED, as the preview function is asked to picture it. */
export interface PreviewInput {
  siteId: string;
  deployId: string;
  /** The deploy's root CID (its ipfsHash). */
  root: string;
}

export interface PreviewTaker {
  /** What logs name ("the preview function cairn-preview"). */
  readonly name: string;
  /** Asks for the deploy's picture and returns once asked (not taken); rejects when it could not even ask. */
  deployed(deploy: PreviewInput): Promise<void>;
}
