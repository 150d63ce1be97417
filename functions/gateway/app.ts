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
import { bucketHost, domainHost, siteHost, siteOriginPath } from './hosts.js';
import { resolveDomain } from '../core/hosting/domain-hosts.js';
import { ipfsPath, serveCid } from './ipfs.js';
import { serveObject } from './objects.js';
import { serveSite, serveSiteTarget } from './sites.js';
import { dnsLinkFault, ipnsPath, isRoutingPath, ROUTING_CORS, serveIpns, serveRouting } from './ipns.js';
import { createDnsLinkResolver } from '../core/hosting/dnslink-resolver.js';
import { domainDns } from '../core/hosting/domain-dns.js';
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

/** An ACME HTTP-01 challenge's token (RFC 8555 section 8.3: base64url characters only). */
function acmeChallenge(rawPath: string): string | undefined {
  const m = /^\/\.well-known\/acme-challenge\/([A-Za-z0-9_-]{1,256})$/.exec(rawPath);
  return m?.[1];
}

/** Where a domain's redirect goes: https on the HTTPS listener's port once its certificate is live, else the request's own scheme and port. */
function originOf(to: { domain: string; secure: boolean }, req: HttpRequest, httpsPort: number | undefined): string {
  if (to.secure && httpsPort !== undefined) return `https://${to.domain}${httpsPort === 443 ? '' : `:${httpsPort}`}`;
  const port = /:(\d{1,5})$/.exec(req.headers.get('host') ?? '')?.[1];
  return `${req.secure ? 'https' : 'http'}://${to.domain}${port ? `:${port}` : ''}`;
}

/** 301, path and query kept; not kept by caches: a primary changed or a domain removed is seen at once. */
function movedTo(location: string): Response {
  return new Response(`Moved Permanently: ${location}\n`, {
    status: 301,
    headers: { location, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
  });
}

export function createGatewayHandler(services: GatewayServices, logger: Logger = services.logger.child({ fn: 'gateway' })): HttpHandler {
  const { urls, sites } = services.config;
  // DNSLink names, by Host and under /ipns/ (CAIRN_GATEWAY_DNSLINK): one resolver, its answers kept and its lookups bounded, per process.
  const dnsLink = services.config.domains.gatewayDnsLink ? createDnsLinkResolver(domainDns(services.config)) : undefined;
  /** Where a request goes: at most one of host, site, origin, content, name and routing is set (a site's own domain, `domain`, is tried before the last four). */
  const routeOf = (req: HttpRequest) => {
    const host = bucketHost(req.headers.get('host'), urls);
    const site = host ? undefined : siteHost(req.headers.get('host'), sites.domain);
    const domain = host || site ? undefined : domainHost(req.headers.get('host'), services.config);
    const origin = host || site ? undefined : siteOriginPath(req.rawPath);
    const content = host || site || origin ? undefined : ipfsPath(req.rawPath);
    const name = host || site || origin || content ? undefined : ipnsPath(req.rawPath);
    const routing = !(host || site || origin || content || name) && isRoutingPath(req.rawPath);
    return { host, site, domain, origin, content, name, routing };
  };
  const answer = async (req: HttpRequest, route: ReturnType<typeof routeOf>): Promise<Response> => {
    const { host, site, domain, origin, name, routing } = route;
    // Content by CID or by IPNS name: the path gateway's CORS and methods.
    const content = route.content ?? name;
    if (!host && !site && (req.method === 'GET' || req.method === 'HEAD')) {
      const challenge = acmeChallenge(req.rawPath);
      const keyAuthorization = challenge && services.domainCertificates.challengeAnswer(challenge);
      if (keyAuthorization) return textResponse(200, keyAuthorization, { 'cache-control': 'no-store' });
    }
    const own = domain ? await resolveDomain(services, domain) : undefined;
    if (own?.kind === 'site') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return textResponse(405, 'Method Not Allowed\n', { allow: 'GET, HEAD' });
      const query = req.rawQuery ? `?${req.rawQuery}` : '';
      const to = own.redirectTo ?? (own.secure && !req.secure ? { domain: domain!, secure: true } : undefined);
      if (to) return movedTo(`${originOf(to, req, services.config.domains.httpsPort)}${req.rawPath}${query}`);
      try {
        return await serveSiteTarget(services, req, own.target);
      } catch (err) {
        if (req.signal.aborted) return textResponse(499, 'Client Closed Request\n');
        logger.error(isNotFound(err) ? 'site blocks missing' : 'gateway request failed', { err, host: domain, path: req.rawPath });
        return textResponse(500, 'Internal Server Error\n');
      }
    }
    // A Host that is no site's, bucket's nor the service's own, with a DNSLink: served as /ipns/<host>/<path>
    // (the DNSLink gateway spec); one without falls through to the path gateway, as boxo's hostname handler does.
    if (dnsLink && domain && own?.kind === 'unknown') {
      const answer = await dnsLink.resolve(domain);
      if (answer.kind !== 'none') {
        if (req.method !== 'GET' && req.method !== 'HEAD') return textResponse(405, 'Method Not Allowed\n', { allow: 'GET, HEAD' });
        if (answer.kind !== 'link') return dnsLinkFault(domain, answer);
        try {
          return await serveIpns(services, req, { nameText: domain, rest: req.rawPath }, dnsLink, {
            prefix: '',
            ipfsPath: `/ipns/${domain}${req.rawPath}`,
          });
        } catch (err) {
          if (req.signal.aborted) return textResponse(499, 'Client Closed Request\n');
          if (isNotFound(err)) return textResponse(404, `Not Found: this gateway holds no content that ${domain}'s DNSLink names\n`);
          if (err instanceof NotAFileError)
            return textResponse(501, 'Not Implemented: this gateway serves UnixFS files and directories only\n');
          logger.error('gateway request failed', { err, host: domain, path: req.rawPath });
          return textResponse(500, 'Internal Server Error\n');
        }
      }
    }
    if (content && req.method === 'OPTIONS') return new Response(null, { status: 200, headers: { allow: 'GET, HEAD, OPTIONS' } });
    if (!routing && req.method !== 'GET' && req.method !== 'HEAD')
      return textResponse(405, 'Method Not Allowed\n', { allow: content ? 'GET, HEAD, OPTIONS' : 'GET, HEAD' });
    try {
      if (host) return await serveObject(services, req, host);
      if (site) return await serveSite(services, req, site);
      if (origin) return await serveSite(services, { ...req, rawPath: origin.rawPath }, origin.address);
      if (route.content) return await serveCid(services, req, route.content);
      if (name) return await serveIpns(services, req, name, dnsLink);
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
