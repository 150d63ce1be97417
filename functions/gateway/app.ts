/**
 * The gateway. By Host header, `<bucket>.<storage public domain>/<key>` and
 * `<bucket>.<bucket endpoint domain>/<key>` serve public-read objects;
 * `<slug>.<sites domain>` and `<deployId>--<slug>.<sites domain>` serve
 * sites (sites.ts); on any other host, `GET|HEAD /ipfs/<cid>[/path]` serves
 * any content in the node, with ranges and immutable caching. Content is public by CID, whatever the ACL
 * of the objects that hold it, as on any IPFS network. `/ipns/<name>[/path]` serves what an IPNS name
 * Cairn holds a record for points at, and `/routing/v1/ipns/<name>` is the Delegated Routing V1 API's
 * IPNS endpoint (ipns.ts).
 *
 * On that other host, `/sites/<siteId>/<path>` and
 * `/previews/<siteId>/<deployLabel>/<path>` serve sites too: the CDN in front
 * of the gateway in AWS (lib/site-cdn.ts) sends site hosts that way, since a
 * Function URL answers only to its own Host. Asked for directly, these paths
 * show nothing a site host does not: a published deploy, or a DEPLOYED
 * deploy's preview, found by the site's unguessable id rather than its
 * slug; and the site's root CID already serves the same files under /ipfs/
 * on this host. The path after the prefix is the site's own, decoded as on
 * a site host, so `..` stops at the site's root and never reaches another.
 */
import type { HttpHandler, HttpRequest } from '../core/http/types.js';
import type { Logger } from '../core/logger.js';
import type { GatewayServices } from '../core/services.js';
import { isNotFound, NotAFileError } from '../core/ipfs/read.js';
import { bucketHost, siteHost, siteOriginPath } from './hosts.js';
import { ipfsPath, serveCid } from './ipfs.js';
import { serveObject } from './objects.js';
import { serveSite } from './sites.js';
import { ipnsPath, isRoutingPath, ROUTING_CORS, serveIpns, serveRouting } from './ipns.js';
import { textResponse } from './responses.js';

/**
 * Content by CID is public, so any web page may read it: `/ipfs/` answers
 * every origin, as IPFS gateways do (boxo's gateway.AddAccessControlHeaders,
 * which Kubo's gateway serves by default), and answers a preflight itself.
 * Headers a page needs beyond the CORS-safelisted ones are exposed: the
 * length and range of a partial answer, the ETag a verifying client
 * compares with the CID, and the path and roots the gateway resolved. No
 * credentials are involved, so `*` is the whole answer. On AWS the Function
 * URL has no CORS configuration of its own (lib/gateway.ts), so these
 * headers and the answer to OPTIONS are the function's
 * (https://docs.aws.amazon.com/lambda/latest/dg/urls-configuration.html#urls-cors).
 */
const PATH_GATEWAY_CORS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, HEAD, OPTIONS',
  'access-control-allow-headers': 'Content-Type, Range, User-Agent, X-Requested-With',
  'access-control-expose-headers': 'Content-Length, Content-Range, ETag, X-Chunked-Output, X-Ipfs-Path, X-Ipfs-Roots, X-Stream-Output',
};

export function createGatewayHandler(services: GatewayServices, logger: Logger = services.logger.child({ fn: 'gateway' })): HttpHandler {
  const { urls, sites } = services.config;
  /** Where a request goes: at most one of the four is set. */
  const routeOf = (req: HttpRequest) => {
    const host = bucketHost(req.headers.get('host'), urls);
    const site = host ? undefined : siteHost(req.headers.get('host'), sites.domain);
    const origin = host || site ? undefined : siteOriginPath(req.rawPath);
    const content = host || site || origin ? undefined : ipfsPath(req.rawPath);
    const name = host || site || origin || content ? undefined : ipnsPath(req.rawPath);
    const routing = !(host || site || origin || content || name) && isRoutingPath(req.rawPath);
    return { host, site, origin, content, name, routing };
  };
  const answer = async (req: HttpRequest, route: ReturnType<typeof routeOf>): Promise<Response> => {
    const { host, site, origin, name, routing } = route;
    // Content by CID or by IPNS name: the path gateway's CORS and methods.
    const content = route.content ?? name;
    if (content && req.method === 'OPTIONS') return new Response(null, { status: 200, headers: { allow: 'GET, HEAD, OPTIONS' } });
    if (!routing && req.method !== 'GET' && req.method !== 'HEAD')
      return textResponse(405, 'Method Not Allowed\n', { allow: content ? 'GET, HEAD, OPTIONS' : 'GET, HEAD' });
    try {
      if (host) return await serveObject(services, req, host);
      if (site) return await serveSite(services, req, site);
      if (origin) return await serveSite(services, { ...req, rawPath: origin.rawPath }, origin.address);
      if (route.content) return await serveCid(services, req, route.content);
      if (name) return await serveIpns(services, req, name);
      if (routing) return await serveRouting(services, req);
      return textResponse(404, 'Not Found: paths are /ipfs/<cid>[/path] and /ipns/<name>[/path]\n');
    } catch (err) {
      // The client hung up (the door aborts the request's signal): whatever failed after that is no fault of ours, and nobody reads the answer.
      if (req.signal.aborted) {
        logger.debug('gateway request abandoned: the client disconnected', {
          method: req.method,
          host: req.headers.get('host'),
          path: req.rawPath,
          err: (err as Error)?.message,
        });
        return textResponse(499, 'Client Closed Request\n');
      }
      if (content && isNotFound(err)) return textResponse(404, 'Not Found: this gateway holds no content with that CID\n');
      if (err instanceof NotAFileError)
        return textResponse(501, 'Not Implemented: this gateway serves UnixFS files and directories only\n');
      if ((err as Error)?.name === 'NoResolverError')
        return textResponse(501, "Not Implemented: this gateway does not decode that CID's codec\n");
      // A record whose blocks are gone is a fault of ours, not a missing file.
      const msg =
        !content && isNotFound(err) ? (site || origin ? 'site blocks missing' : 'object blocks missing') : 'gateway request failed';
      logger.error(msg, { err, method: req.method, host: req.headers.get('host'), path: req.rawPath });
      return textResponse(500, 'Internal Server Error\n');
    }
  };
  return async (req) => {
    const route = routeOf(req);
    const response = await answer(req, route);
    // Every answer under /ipfs/, /ipns/ and /routing/v1/, errors too: a page can then tell a 404 from a network failure.
    const cors = route.content || route.name ? PATH_GATEWAY_CORS : route.routing ? ROUTING_CORS : undefined;
    if (cors) for (const [name, value] of Object.entries(cors)) response.headers.set(name, value);
    logger.debug('gateway request', { method: req.method, path: req.rawPath, status: response.status });
    return response;
  };
}
