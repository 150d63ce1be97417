/**
 * What the web app is told about the service (`GET /app/config.json`): the
 * public endpoints it needs besides its own origin's `/graphql`, derived
 * from the one Config. No secrets: anyone may read it.
 */
import { relyingParty } from '../core/auth/passkeys.js';
import type { Config } from '../core/config.js';

export interface WebAppConfig {
  /** The GraphQL endpoint, on the app's own origin. */
  graphqlPath: string;
  /** The S3-compatible endpoint the app signs requests for (path style). */
  storageEndpoint: string;
  /** The region S3 signatures are made for. */
  region: string;
  /** The service's own gateway (`<gatewayUrl>/ipfs/<cid>`). */
  gatewayUrl: string;
  /** A public IPFS gateway (may be the same as gatewayUrl). */
  publicGatewayUrl: string;
  /** Sites answer at `<scheme>//<slug>.<domain>`, one deploy at `<scheme>//<deployId>--<slug>.<domain>`. */
  sites: { scheme: string; domain: string };
  /** Public files answer at `<scheme>//<bucket>.<domain>/<key>`. */
  publicFiles: { scheme: string; domain: string };
  /** The largest body one PUT may carry; larger files go up in a multipart upload. */
  maxPutBytes: number;
  /** Who may sign up (CAIRN_SIGNUP): the sign-in page offers its form only where it is `open`, and says why not elsewhere. */
  signUp: Config['signup'];
  /** The OpenID Connect provider to sign in with, by the name its button shows, where one is configured (never its secret). */
  oidc?: { name: string };
  /** Whether passkeys can be used here: browsers allow WebAuthn only at a domain name, not at an IP address (core/auth/passkeys.ts). */
  passkeys: boolean;
}

export function webAppConfig(config: Config): WebAppConfig {
  // Sites and public files are served by the gateway (or CloudFront in front of it, with the same scheme).
  const scheme = new URL(config.urls.gatewayUrl).protocol;
  return {
    graphqlPath: '/graphql',
    storageEndpoint: config.urls.storageEndpoint,
    region: config.region,
    gatewayUrl: config.urls.gatewayUrl,
    publicGatewayUrl: config.urls.publicGatewayUrl,
    sites: { scheme, domain: config.sites.domain },
    publicFiles: { scheme, domain: config.urls.storagePublicDomain },
    maxPutBytes: config.storage.maxRequestBody,
    signUp: config.signup,
    passkeys: relyingParty(config) !== undefined,
    ...(config.oidc ? { oidc: { name: config.oidc.name } } : {}),
  };
}
