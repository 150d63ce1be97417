/**
 * The CAR import endpoint, on the API port beside /graphql (both doors
 * route `/imports/` here, functions/graphql/routes.ts). It lets a client
 * that builds a site's DAG itself (`cairn deploy --dir`) send it, then
 * deploy it with the `deployCid` mutation:
 *
 *   POST /imports/have   {"cids": [...]}  -> {"ok": true, "missing": [...]}: the CIDs whose blocks are not here
 *   POST /imports/car    a CARv1 (Content-Type application/vnd.ipld.car), one root
 *                        -> {"ok": true, "root", "blocks", "bytes", "complete", ["missing"], "expiresAt"}
 *
 * Both take the hosting API key as GraphQL does (`Authorization: <key>` or
 * `Bearer <key>`), and optionally `?siteId=<id>`, which must then be a site
 * of the key's team. Every answer is JSON; a refusal is
 * `{"ok": false, "error": "<one sentence>"}` with its 4xx status.
 *
 * This is the HTTP side only (paths, methods, bodies, statuses); who may
 * import and which blocks are here is core/hosting/imports.ts, and what a
 * CAR becomes (verified blocks, the import pin) core/storage/car-ingest.ts,
 * both called with plain values.
 */
import type { CarImportServices, Services } from '../core/services.js';
import type { HttpRequest } from '../core/http/types.js';
import { queryParams } from '../core/http/types.js';
import { readCappedBody } from '../core/http/capped-body.js';
import { parseCid } from '../core/ipfs/cid.js';
import { CarImportError } from '../core/ipfs/car-import-error.js';
import { GateBusyError } from '../core/ports/upload-gate.js';
import { workSlices } from '../core/work-slices.js';
import { importAccess, missingBlocks } from '../core/hosting/imports.js';

/** The most CIDs one `have` asks about. */
export const MAX_HAVE_CIDS = 10_000;
/** The largest `have` body: 10,000 CIDs of a hundred characters and more, with room to spare. */
export const MAX_HAVE_BODY_BYTES = 2 * 1024 * 1024;

const HAVE_PATH = /^\/imports\/have\/?$/;
const CAR_PATH = /^\/imports\/car\/?$/;
const CAR_TYPE = 'application/vnd.ipld.car';

export const isImportPath = (rawPath: string): boolean => rawPath.startsWith('/imports/');

function json(status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers },
  });
}

const refuse = (status: number, error: string, headers?: Record<string, string>) => json(status, { ok: false, error }, headers);

/** The body is past its limit: the answer says so and the rest is never read (the connection closes after it). */
class BodyTooLarge extends Error {
  override name = 'BodyTooLarge';
}

/** The body could not be read to its end (the client went away, or the stream broke). */
class BodyUnreadable extends Error {
  override name = 'BodyUnreadable';
}

/** The caller's key from `Authorization: <key>` or `Bearer <key>`, as the GraphQL door reads it (graphql/context.ts). */
function apiKeyFrom(header: string | null): string | undefined {
  if (!header) return undefined;
  const key = header
    .trim()
    .replace(/^Bearer\s+/i, '')
    .trim();
  return key || undefined;
}

const ACCESS_REFUSALS = {
  'no-key': [401, 'An API key is required: send it in the Authorization header'],
  'bad-key': [401, 'The API key is not valid (unknown or revoked)'],
  'no-site': [404, 'site not found'],
  'other-team': [403, 'The site belongs to another team; this API key cannot import content for it'],
} as const;

async function drop(req: HttpRequest): Promise<void> {
  await req.body?.cancel().catch(() => {});
}

/** Answers a request under /imports/. */
/** What the import endpoint reads and writes: the key and its team's site (who may import), and the CAR's blocks and import pin. */
export type ImportServices = CarImportServices & Pick<Services, 'apiKeys' | 'sites'>;

export async function handleImport(services: ImportServices, req: HttpRequest): Promise<Response> {
  const have = HAVE_PATH.test(req.rawPath);
  const car = CAR_PATH.test(req.rawPath);
  if (!have && !car) {
    await drop(req);
    return refuse(404, 'no such import endpoint: POST /imports/have or POST /imports/car');
  }
  if (req.method.toUpperCase() !== 'POST') {
    await drop(req);
    return refuse(405, `${req.rawPath.replace(/\/$/, '')} takes POST only`, { allow: 'POST' });
  }
  try {
    const access = await importAccess(services, apiKeyFrom(req.headers.get('authorization')), queryParams(req.rawQuery).get('siteId'));
    if (access !== 'allowed') {
      await drop(req);
      const [status, error] = ACCESS_REFUSALS[access];
      return refuse(status, error);
    }
    return have ? await answerHave(services, req) : await answerCar(services, req);
  } catch (err) {
    if (err instanceof CarImportError) return refuse(400, err.message);
    if (err instanceof BodyTooLarge) return refuse(413, err.message, { connection: 'close' });
    if (err instanceof BodyUnreadable) return refuse(400, err.message);
    if (err instanceof GateBusyError)
      return refuse(503, 'garbage collection is running; try again in a few seconds', { 'retry-after': '5' });
    services.logger.error('an import request failed', { path: req.rawPath, err });
    return refuse(500, 'internal error; nothing of this request was kept, so it can be sent again');
  }
}

async function answerHave(services: Pick<Services, 'ipfs'>, req: HttpRequest): Promise<Response> {
  const declared = Number(req.headers.get('content-length') ?? 0);
  const body =
    declared > MAX_HAVE_BODY_BYTES
      ? undefined
      : await readCappedBody(req.body, MAX_HAVE_BODY_BYTES).catch(() => {
          throw new BodyUnreadable('the request body could not be read to its end');
        });
  if (body === undefined)
    return refuse(413, `the body is larger than ${MAX_HAVE_BODY_BYTES} bytes; ask about at most ${MAX_HAVE_CIDS} CIDs at a time`, {
      connection: 'close',
    });
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return refuse(400, 'the body is not JSON: send {"cids": ["<cid>", ...]}');
  }
  const cids = (parsed as { cids?: unknown } | null)?.cids;
  if (!parsed || typeof parsed !== 'object' || !Array.isArray(cids))
    return refuse(400, 'the body must be a JSON object with "cids", an array of CID strings');
  if (cids.length > MAX_HAVE_CIDS) return refuse(400, `"cids" holds ${cids.length} CIDs; ask about at most ${MAX_HAVE_CIDS} at a time`);
  // 10,000 CIDs to parse and look up, most of them answered without I/O (the
  // local store's index is read synchronously): in slices, and with as few
  // promises as will do (each costs more than the lookup it waits for).
  const pause = workSlices();
  const parsedCids = [];
  for (const [i, text] of cids.entries()) {
    const cid = typeof text === 'string' ? parseCid(text) : undefined;
    if (!cid) return refuse(400, `cids[${i}] is not a CID: ${JSON.stringify(text)?.slice(0, 120)}`);
    parsedCids.push(cid);
    const turn = pause();
    if (turn) await turn;
  }
  const missing = new Set(await missingBlocks(services, parsedCids, { signal: req.signal, pause }));
  return json(200, { ok: true, missing: (cids as string[]).filter((_, i) => missing.has(i)) });
}

async function answerCar(services: CarImportServices, req: HttpRequest): Promise<Response> {
  const type = (req.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== CAR_TYPE) {
    await drop(req);
    return refuse(400, `the body must be a CARv1 sent with Content-Type: ${CAR_TYPE}`);
  }
  const limit = services.config.imports.maxBytes;
  const tooLarge = `the CAR is larger than the limit of ${limit} bytes (CAIRN_MAX_IMPORT_BYTES); send it as several CARs`;
  const declared = Number(req.headers.get('content-length') ?? 0);
  if (declared > limit) return refuse(413, tooLarge, { connection: 'close' });
  if (!req.body) return refuse(400, 'the body is empty: send a CARv1');
  // The CAR reader, the IPLD codecs and the ingest come with the first CAR: no cold start of the GraphQL function needs them.
  const { importCar } = await import('../core/storage/car-ingest.js');
  const result = await importCar(services, cappedChunks(req.body, limit, tooLarge), { signal: req.signal });
  services.logger.info('CAR imported', {
    root: result.root.toString(),
    blocks: result.blocks,
    bytes: result.bytes,
    complete: result.complete,
    missing: result.missing,
  });
  return json(200, {
    ok: true,
    root: result.root.toString(),
    blocks: result.blocks,
    bytes: result.bytes,
    complete: result.complete,
    ...(result.complete ? {} : { missing: result.missing }),
    expiresAt: new Date(result.expiresAt).toISOString(),
  });
}

/** The body's chunks, failing with BodyTooLarge once they pass `limit` (reading no further: the stream is released, not drained). */
async function* cappedChunks(stream: ReadableStream<Uint8Array>, limit: number, tooLarge: string): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  let size = 0;
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch {
        throw new BodyUnreadable('the request body could not be read to its end');
      }
      if (next.done) return;
      size += next.value.byteLength;
      if (size > limit) throw new BodyTooLarge(tooLarge);
      yield next.value;
    }
  } finally {
    reader.releaseLock();
  }
}
