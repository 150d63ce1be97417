/**
 * Which URLs deploy notifications may be sent to. Any URL a team gives is
 * checked for its shape (https, or http where private addresses are
 * allowed; no credentials; 2048 characters at most). Where private
 * addresses are refused (config.outbound, the default) its host must also
 * lead only to public addresses, by the one outbound address policy
 * (functions/core/net/outbound.ts), so that a notification can never be
 * made to reach into the service's network or the metadata service. The
 * host is resolved when the URL is added, and again at every delivery,
 * whose connection is pinned to the addresses that delivery checked (a
 * name's answers can change between the two).
 */
import { OutboundRefused, resolveOutbound, systemResolver, type OutboundRules, type Resolver } from '../net/outbound.js';

export type { Resolver } from '../net/outbound.js';
export { systemResolver };

export const MAX_NOTIFICATION_URL_LENGTH = 2048;

export class NotificationUrlError extends Error {
  override name = 'NotificationUrlError';
}

/** The URL's shape: throws NotificationUrlError saying what is wrong (never echoing credentials). */
export function checkUrlShape(raw: string, rules: OutboundRules): URL {
  if (typeof raw !== 'string' || raw.length === 0) throw new NotificationUrlError('url must not be empty');
  if (raw.length > MAX_NOTIFICATION_URL_LENGTH)
    throw new NotificationUrlError(`url must be at most ${MAX_NOTIFICATION_URL_LENGTH} characters`);
  if (/[\s\x00-\x1f\x7f]/.test(raw)) throw new NotificationUrlError('url must not contain spaces or control characters');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new NotificationUrlError('url is not an absolute URL');
  }
  // Plain http is for a receiver on this machine or its network: where those are refused, so is it.
  const allowHttp = rules.private === 'allow';
  const schemes = allowHttp ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol))
    throw new NotificationUrlError(allowHttp ? 'url must be an http:// or https:// URL' : 'url must be an https:// URL');
  if (url.username !== '' || url.password !== '')
    throw new NotificationUrlError('url must not carry credentials (user:password@); the signature authenticates each delivery');
  if (url.hostname === '') throw new NotificationUrlError('url names no host');
  return url;
}

/**
 * The URL checked whole: its shape, and, where private addresses are
 * refused, every address its host resolves to now. Throws NotificationUrlError.
 */
export async function checkNotificationUrl(raw: string, rules: OutboundRules, resolver: Resolver = systemResolver): Promise<URL> {
  const url = checkUrlShape(raw, rules);
  if (rules.private === 'allow') return url;
  try {
    await resolveOutbound(url, rules, resolver);
  } catch (err) {
    if (err instanceof OutboundRefused) throw new NotificationUrlError(`url refused: ${err.message}`);
    throw new NotificationUrlError(`url's host ${url.hostname} does not resolve`);
  }
  return url;
}
