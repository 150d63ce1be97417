/**
 * The web app's session cookie and the CSRF token that goes with it.
 *
 * The cookie is `HttpOnly` (no script reads it), `SameSite=Lax` (a
 * cross-site POST, form or fetch, goes without it), `Path=/`, and `Secure`
 * unless the service's own base URL is plain http on a loopback address
 * (`npm start` on 127.0.0.1, where no browser would keep a Secure cookie
 * from http). With `Secure` it is named `__Host-cairn_session`: browsers
 * take a `__Host-` cookie only with Secure, Path=/ and no Domain, so no
 * sibling host can plant or shadow it (RFC 6265bis, "Cookie Name Prefixes").
 *
 * The CSRF token is an HMAC of a fixed label under the session's secret:
 * it is the same for the whole session, never stored, and cannot be made
 * from what the table holds (the secret's SHA-256). The web app gets it
 * when it signs in (or from GET /auth/session) and sends it as
 * `X-CSRF-Token` with every request that changes something; a page of
 * another site can neither read it nor set that header on a cross-site
 * request without a CORS preflight, which this service never grants.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config.js';
import { SESSION_LIMITS } from '../data/sessions.js';

export const CSRF_HEADER = 'x-csrf-token';

/** Whether the base URL is http on this machine: the one case the cookie goes without Secure. */
export function cookieIsSecure(config: Pick<Config, 'urls'>): boolean {
  const url = new URL(config.urls.baseUrl);
  if (url.protocol === 'https:') return true;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const loopback = host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  return !loopback;
}

/** A cookie's name here: `__Host-<base>` where cookies are Secure, plain `<base>` on a loopback http base URL. */
export const hostCookieName = (config: Pick<Config, 'urls'>, base: string): string => (cookieIsSecure(config) ? `__Host-${base}` : base);

export const sessionCookieName = (config: Pick<Config, 'urls'>): string => hostCookieName(config, 'cairn_session');

/** The attributes every cookie of the service is set with: the whole site, HttpOnly, SameSite=Lax, Secure but on loopback http. */
export function cookieAttributes(config: Pick<Config, 'urls'>, maxAge: number): string {
  return `Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${cookieIsSecure(config) ? '; Secure' : ''}`;
}

/** The Set-Cookie value that hands the browser a session; it keeps it as long as the session can last at most. */
export function sessionCookie(config: Pick<Config, 'urls'>, secret: string): string {
  return `${sessionCookieName(config)}=${secret}; ${cookieAttributes(config, SESSION_LIMITS.absoluteSeconds)}`;
}

/** The Set-Cookie value that makes the browser forget its session (signing out). */
export const clearedSessionCookie = (config: Pick<Config, 'urls'>): string =>
  `${sessionCookieName(config)}=; ${cookieAttributes(config, 0)}`;

/** The values a Cookie header carries under `name`, in the header's order. */
export function cookieValues(cookieHeader: string | null | undefined, name: string): string[] {
  const values: string[] = [];
  for (const part of (cookieHeader ?? '').split(/;\s*/)) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) values.push(part.slice(eq + 1).trim());
  }
  return values;
}

/** The session secret a Cookie header carries, or undefined. */
export function sessionSecretFrom(config: Pick<Config, 'urls'>, cookieHeader: string | null | undefined): string | undefined {
  return cookieValues(cookieHeader, sessionCookieName(config))[0] || undefined;
}

/** The session's CSRF token. */
export const csrfTokenFor = (secret: string): string => createHmac('sha256', secret).update('cairn csrf v1').digest('base64url');

/** Whether a request's X-CSRF-Token is the session's, compared in constant time. */
export function csrfTokenMatches(secret: string, sent: string | null | undefined): boolean {
  if (!sent) return false;
  const expected = Buffer.from(csrfTokenFor(secret));
  const given = Buffer.from(sent.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}
