/**
 * The GraphQL API on the local door (node:http): the general handler
 * (server.ts, through the HttpHandler seam, for every path of the API
 * port) and, before it, a path for what nearly every request is, a POST
 * to `/graphql`, answered from the IncomingMessage itself.
 *
 * The general way turns each request into web objects (Headers, a body
 * ReadableStream read back into a Buffer, an AbortController) and each
 * answer into more (Headers, a Response whose string body becomes a
 * stream, written chunked): for a read answered from memory that was a
 * good part of the work outside Apollo, and of the garbage. Here the body
 * is read into one Buffer, the headers go to Apollo as its own HeaderMap,
 * and the answer goes out with `res.end(string)` and its Content-Length,
 * one write. What the request passes through is the general way's, in
 * the same order and with the same answers: the body limit (declared, then
 * as read), JSON without a Content-Type, the credentials, Apollo with its
 * plugins (authentication, the answer-bytes gate) and limits. A refusal
 * and an answer with deploy logs after its JSON (answer.ts) are rare and
 * written as the general way writes them (writeResponse: an early answer
 * closes the connection and lingers).
 *
 * Everything else (GET, `Expect: 100-continue`, another path, a query
 * string) goes the general way.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HeaderMap } from '@apollo/server';
import { writeResponse } from '../core/http/node.js';
import type { HttpHandler } from '../core/http/types.js';
import type { GraphqlServices } from './context.js';
import type { SideRouteServices } from './routes.js';
import {
  answerResponse,
  bodyTooLarge,
  createApolloServer,
  createGraphqlHandler,
  createPlayground,
  executeGraphql,
  MAX_BODY_BYTES,
  readJsonBody,
} from './server.js';

export interface GraphqlDoor {
  /** Every request of the API port (side routes, the playground, GET, and whatever the fast path leaves). */
  handler: HttpHandler;
  /** For createNodeServer's `first`: true when it took the request (and answers it). */
  fastPath(req: IncomingMessage, res: ServerResponse): boolean;
}

const HTTP_SPACE = /^[\t ]+|[\t ]+$/g;

/**
 * The request's headers as Apollo takes them and as the general way gives
 * them (web Headers): names in lower case, values without surrounding
 * spaces, a repeated header's values joined with ", ". Node's parser has
 * refused what Headers would (control characters in a value, a bad name).
 */
export function headerMapOf(raw: readonly string[]): HeaderMap {
  const map = new HeaderMap();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    let value = raw[i + 1]!;
    if (value.length && (value.charCodeAt(0) <= 32 || value.charCodeAt(value.length - 1) <= 32)) value = value.replace(HTTP_SPACE, '');
    const had = map.get(name);
    map.set(name, had === undefined ? value : `${had}, ${value}`);
  }
  return map;
}

/**
 * The request body whole, up to `limit` bytes: undefined once it passes
 * the limit (reading stops there: the refusal's lingering discards the
 * rest), null when the client went away before it ended.
 */
export function readBodyUpTo(req: IncomingMessage, limit: number): Promise<Buffer | undefined | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const done = (value: Buffer | undefined | null) => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onClose);
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else {
        req.pause();
        chunks.length = 0;
        done(undefined);
      }
    };
    const onEnd = () => done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    const onGone = () => done(null);
    const onClose = () => {
      if (!req.complete) done(null);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('close', onClose);
  });
}

/** The API port's GraphQL handler and fast path, over one ApolloServer. */
export function createGraphqlDoor(services: GraphqlServices & SideRouteServices): GraphqlDoor {
  const server = createApolloServer(services.config.graphql);
  const started = server.start();
  // Until Apollo has started, requests go the general way, which waits for it (and answers its failure).
  let ready = false;
  started.then(
    () => (ready = true),
    () => {},
  );
  const handler = createGraphqlHandler(services, server, createPlayground(services.config.graphql), started);
  const logger = services.logger.child({ fn: 'graphql' });

  const answer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const headers = headerMapOf(req.rawHeaders);
    const declared = Number(headers.get('content-length') ?? 0);
    const bytes = declared > MAX_BODY_BYTES ? undefined : await readBodyUpTo(req, MAX_BODY_BYTES);
    if (bytes === null) return; // the client left: nobody to answer
    if (bytes === undefined) {
      // The unread rest of the body must not be taken for the next request on this connection.
      const refusal = bodyTooLarge();
      refusal.headers.set('connection', 'close');
      return writeResponse(res, refusal, 'POST');
    }
    const parsed = readJsonBody(bytes.toString('utf8'), headers);
    if (parsed instanceof Response) return writeResponse(res, parsed, 'POST');
    const answer = await executeGraphql(services, server, { method: 'POST', headers, search: '', body: parsed.body }, (name) =>
      headers.get(name),
    );
    if (typeof answer.body !== 'string') return writeResponse(res, answerResponse(answer), 'POST');
    const out: Record<string, string> = {};
    for (const [name, value] of answer.headers) out[name] = value;
    out['content-length'] = String(Buffer.byteLength(answer.body));
    res.writeHead(answer.status, out);
    res.end(answer.body);
  };

  const fastPath = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (!ready || req.method !== 'POST' || (req.url !== '/graphql' && req.url !== '/graphql/')) return false;
    answer(req, res).catch((err: unknown) => {
      logger.error('unhandled error in handler', { err, method: req.method, url: req.url });
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('Internal Server Error');
      } else res.destroy();
    });
    return true;
  };
  return { handler, fastPath };
}
