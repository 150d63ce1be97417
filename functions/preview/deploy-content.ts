/**
 * A deploy's content for its picture where its publish directory is not on
 * disk (the preview Lambda): the deploy's DAG, read from the blockstore and
 * answered on 127.0.0.1 by the gateway's own site serving (sites.ts: index
 * pages, `_redirects`, `_headers`, 404.html), so the picture shows what the
 * deploy's address shows. Every path on that origin is the site's own, as
 * on its host: absolute paths (/style.css) load.
 */
import type { Server } from 'node:http';
import type { Services } from '../core/services.js';
import { createNodeServer, listen } from '../core/http/node.js';
import type { HttpHandler } from '../core/http/types.js';
import { cidOf } from '../core/ipfs/cid.js';
import { resolvePath } from '../core/ipfs/paths.js';
import { isNotFound } from '../core/ipfs/read.js';
import { serveSite } from '../gateway/sites.js';
import { textResponse } from '../gateway/responses.js';
import type { PreviewContent } from './take-preview.js';
import type { ServedDirectory } from './serve-directory.js';

const FILE_TYPES = new Set(['file', 'raw', 'identity']);

/** What serving a deploy's DAG reads: the blocks, and what the gateway's site serving reads (the site, its deploys, its cache). */
export type DeployContentServices = Pick<Services, 'deploys' | 'ipfs' | 'logger' | 'siteCache' | 'sites'>;

/** One DEPLOYED deploy of a site, `root` its DAG. */
export function deployContent(services: DeployContentServices, siteId: string, deployId: string, root: string): PreviewContent {
  return {
    async missingIndex() {
      const node = await services.ipfs();
      // A root that is no directory (content deployed by CID may be a single file) has no index either.
      const index = await resolvePath(node.blockstore, cidOf(root), ['index.html']).catch((err: unknown) => {
        if (isNotFound(err)) throw err; // missing blocks are ours to report, not the site's
        return undefined;
      });
      return index && FILE_TYPES.has(index.entry.type) ? undefined : 'the deploy has no index.html';
    },
    async serve() {
      // The deploy's own address (`<deployId>--<slug>`), by site id as behind the CDN.
      const address = { siteId, deployLabel: deployId.toLowerCase() };
      const handler: HttpHandler = async (req) => {
        if (req.method !== 'GET' && req.method !== 'HEAD') return textResponse(405, 'Method Not Allowed\n', { allow: 'GET, HEAD' });
        return serveSite(services, req, address);
      };
      return serveOnLoopback(createNodeServer(handler, services.logger.child({ fn: 'preview' })));
    },
  };
}

async function serveOnLoopback(server: Server): Promise<ServedDirectory> {
  const port = await listen(server, 0, '127.0.0.1');
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
