/**
 * The body of a small POST to a side route (/auth/...), read whole up to a
 * limit and parsed into its fields: JSON, or (where a route takes it, as
 * OAuth's endpoints do) a form. Each route renders the refusal in its own
 * protocol's shape: the /auth/ routes as `{"ok": false, "error"}`
 * (accounts-http.ts's `refuse`), RFC 8628's endpoints as OAuth's
 * `invalid_request` (device-http.ts), so this answers with a value, not a
 * Response.
 *
 * The Content-Type is checked first: a route that takes only JSON is one
 * no form on another site can post to (a cross-site request with that type
 * needs a CORS preflight, which this service never grants). A body
 * declared larger than the limit is not read at all; one that turns out
 * larger is read no further (core/http/capped-body.ts). Either way the
 * refusal says to close the connection, so that the unread rest is not
 * taken for the next request on it.
 */
import { readCappedBody } from '../core/http/capped-body.js';
import type { HttpRequest } from '../core/http/types.js';

/** What a route takes: JSON only, or a form as well. */
export type BodyKinds = 'json' | 'form-or-json';

/** Why a body was refused: the status to answer, one sentence saying what to send instead, and headers to answer with. */
export interface BodyRefusal {
  status: 400 | 413 | 415;
  problem: string;
  headers: Record<string, string>;
}

export type BodyFields = { fields: Record<string, unknown> } | BodyRefusal;

const FORM = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';

const WRONG_TYPE: Record<BodyKinds, string> = {
  json: 'send the body as JSON, with Content-Type: application/json',
  'form-or-json': 'send the body form-encoded (application/x-www-form-urlencoded) or as JSON',
};

/** The body's fields (an empty body has none), or why it is refused. */
export async function readBodyFields(req: HttpRequest, accept: BodyKinds, maxBytes: number): Promise<BodyFields> {
  const type = (req.headers.get('content-type') ?? '').toLowerCase().split(';')[0]!.trim();
  const form = type === FORM && accept === 'form-or-json';
  if (!form && type !== JSON_TYPE) {
    await req.body?.cancel().catch(() => {});
    return { status: 415, problem: WRONG_TYPE[accept], headers: {} };
  }
  const tooLarge: BodyRefusal = { status: 413, problem: `the body is larger than ${maxBytes} bytes`, headers: { connection: 'close' } };
  if (Number(req.headers.get('content-length') ?? 0) > maxBytes) {
    await req.body?.cancel().catch(() => {});
    return tooLarge;
  }
  const bytes = await readCappedBody(req.body, maxBytes);
  if (bytes === undefined) return tooLarge;
  const text = bytes.toString('utf8');
  if (form) return { fields: Object.fromEntries(new URLSearchParams(text)) };
  try {
    const body: unknown = text ? JSON.parse(text) : {};
    if (body && typeof body === 'object' && !Array.isArray(body)) return { fields: body as Record<string, unknown> };
  } catch {
    // Answered below.
  }
  return { status: 400, problem: 'the body must be a JSON object', headers: {} };
}
