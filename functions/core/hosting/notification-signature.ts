/**
 * How a deploy notification is signed, as Stripe signs its webhooks:
 *
 *   X-Cairn-Signature: t=<unix seconds>,sha256=<hex HMAC-SHA256 of "<t>.<raw body>">
 *
 * keyed with the notification URL's secret. The timestamp is inside what is
 * signed, so a receiver that refuses a `t` too far from its own clock
 * (five minutes, say) cannot be fed a recorded delivery again later; each
 * attempt of a delivery is signed anew with its own `t`. The delivery's id
 * (X-Cairn-Delivery) stays the same across attempts: delivery is at least
 * once, and a receiver that must act once keeps the ids it has seen.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-cairn-signature';
/** What a receiver should accept between its clock and `t`, either way. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

const hmac = (secret: string, t: number, body: string | Uint8Array) =>
  createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');

/** The header's value for `body` sent at `t` (unix seconds). */
export function signNotification(secret: string, body: string | Uint8Array, t: number): string {
  return `t=${t},sha256=${hmac(secret, t, body)}`;
}

export type VerifyResult = { ok: true; timestamp: number } | { ok: false; reason: 'malformed' | 'mismatch' | 'expired' };

/**
 * A receiver's check of a delivery: the header parsed, the HMAC compared in
 * constant time, and `t` within `toleranceSeconds` of `now`.
 */
export function verifyNotification(
  secret: string,
  header: string | null | undefined,
  body: string | Uint8Array,
  options: { toleranceSeconds?: number; now?: number } = {},
): VerifyResult {
  if (!header) return { ok: false, reason: 'malformed' };
  const parts = new Map<string, string>();
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) parts.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const t = parts.get('t');
  const given = parts.get('sha256');
  if (!t || !/^\d{1,12}$/.test(t) || !given || !/^[0-9a-f]{64}$/.test(given)) return { ok: false, reason: 'malformed' };
  const timestamp = Number(t);
  const expected = Buffer.from(hmac(secret, timestamp, body), 'hex');
  if (!timingSafeEqual(expected, Buffer.from(given, 'hex'))) return { ok: false, reason: 'mismatch' };
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return { ok: false, reason: 'expired' };
  return { ok: true, timestamp };
}
