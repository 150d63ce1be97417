/**
 * The preview image of a deploy that ended DEPLOYED: a picture of its index
 * page, stored on IPFS, pinned and referenced by the deploy so collection
 * keeps it while the deploy exists. A picture that cannot be had leaves
 * previewImage null and the deploy as it is: the log says why.
 *
 * The one code path for every environment: the content is served on
 * 127.0.0.1 for the shot, either the publish directory still on disk (the
 * pipeline on one machine) or the deploy's DAG from the blockstore (the
 * preview Lambda, deploy-content.ts); either way it is
 * pictured, stored and recorded here.
 *
 * Everything of the preview lives in this folder, and imports run one way:
 * the deploy pipeline calls in (deploy-worker/steps/announce.ts), nothing
 * here imports the pipeline (the deploy's log is core/logs/deploy-log.ts).
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Services } from '../core/services.js';
import { referenceCidOf } from '../core/data/deploys.js';
import { importFile } from '../core/ipfs/import.js';
import { pinRoot } from '../core/storage/pins.js';
import { ScreenshotError, type Screenshotter } from '../core/ports/screenshotter.js';
import { serveDirectory, type ServedDirectory } from './serve-directory.js';

export const PREVIEW_WIDTH = 1280;
export const PREVIEW_HEIGHT = 800;

/** What is pictured: served over HTTP on 127.0.0.1 while the shot is taken. */
export interface PreviewContent {
  /** Why there is no index page to picture (a log line's end), or undefined when there is one. */
  missingIndex(): Promise<string | undefined>;
  serve(): Promise<ServedDirectory>;
}

/** A publish directory on disk. */
export function directoryContent(dir: string): PreviewContent {
  return {
    async missingIndex() {
      const index = await stat(join(dir, 'index.html')).catch(() => undefined);
      return index?.isFile() ? undefined : 'the publish directory has no index.html';
    },
    serve: () => serveDirectory(dir),
  };
}

export interface PreviewRequest {
  siteId: string;
  deployId: string;
  /** The built publish directory (still on disk), or other content to serve. */
  publish: string | PreviewContent;
  screenshotter: Screenshotter;
  timeoutMs: number;
  signal: AbortSignal;
  log(line: string): void;
}

/** What taking a picture reads and writes: the picture imported and pinned under the upload gate, the deploy referencing it. */
export type PreviewServices = Pick<Services, 'config' | 'deploys' | 'gate' | 'ipfs' | 'logger' | 'objects'>;

/** Takes, stores and records the picture; returns its URL, or undefined (and logs why). Never throws. */
export async function takePreview(services: PreviewServices, request: PreviewRequest): Promise<string | undefined> {
  const { log } = request;
  try {
    const content = typeof request.publish === 'string' ? directoryContent(request.publish) : request.publish;
    const missing = await content.missingIndex();
    if (missing) {
      log(`No preview image: ${missing}`);
      return undefined;
    }
    const started = Date.now();
    const served = await content.serve();
    let png: Uint8Array;
    try {
      png = await request.screenshotter.capture(`${served.origin}/`, {
        width: PREVIEW_WIDTH,
        height: PREVIEW_HEIGHT,
        timeoutMs: request.timeoutMs,
        signal: request.signal,
      });
    } finally {
      await served.close();
    }
    const url = await store(services, request, png);
    if (!url) {
      log('No preview image: the deploy was deleted meanwhile');
      return undefined;
    }
    log(`Preview image (${((Date.now() - started) / 1000).toFixed(1)} s, ${request.screenshotter.name}): ${url}`);
    return url;
  } catch (err) {
    if (err instanceof ScreenshotError) {
      log(`No preview image: ${err.message}`);
    } else {
      services.logger.error('the preview image could not be made', { deployId: request.deployId, siteId: request.siteId, err });
      log('No preview image: an internal error (the service log has the details)');
    }
    return undefined;
  }
}

/** Imports and pins the picture and has the deploy reference it, under the upload gate as the site's own root is. */
async function store(services: PreviewServices, request: PreviewRequest, png: Uint8Array): Promise<string | undefined> {
  let unreferenced: string | undefined;
  const release = await services.gate.enterShared();
  try {
    const node = await services.ipfs();
    const { cid } = await importFile(
      node.blockstore,
      (async function* () {
        yield png;
      })(),
    );
    unreferenced = referenceCidOf(cid.toString());
    await pinRoot(node, cid, { signal: request.signal });
    const url = `${services.config.urls.gatewayUrl}/ipfs/${cid.toV1().toString()}`;
    if (!(await services.deploys.setPreview(request.siteId, request.deployId, url, unreferenced))) return undefined;
    unreferenced = undefined;
    return url;
  } finally {
    release();
    // Imported but not referenced: collection may take it (and will, unless something else holds it).
    if (unreferenced !== undefined) {
      const cid = unreferenced;
      await services.objects
        .addCandidate(cid)
        .catch((err: unknown) => services.logger.warn('could not record a collection candidate', { cid, err }));
    }
  }
}
