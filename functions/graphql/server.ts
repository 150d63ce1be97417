/**
 * The GraphQL API: one ApolloServer, mounted by the local door through the
 * HttpHandler seam and by the Lambda door through Apollo's Lambda integration.
 */
import { ApolloServer, HeaderMap, type HTTPGraphQLRequest } from '@apollo/server';
import type { Services } from '../core/services.js';
import type { HttpHandler } from '../core/http/types.js';
import { graphqlError } from './errors.js';
import { resolvers, type GraphqlContext } from './resolvers.js';
import { loadTypeDefs } from './schema.js';

export const MAX_BODY_BYTES = 1024 * 1024;

export function createApolloServer(): ApolloServer<GraphqlContext> {
  return new ApolloServer<GraphqlContext>({
    typeDefs: loadTypeDefs(),
    resolvers,
    // Authentication is a header the browser never adds on its own, so
    // cross-site requests carry no credentials: CSRF checks would only break
    // clients that send `GET ?query=` or JSON without a Content-Type.
    csrfPrevention: false,
    includeStacktraceInErrorResponses: false,
    formatError: (formatted) => {
      const code = formatted.extensions?.code;
      if (code === 'INTERNAL_SERVER_ERROR' || code === undefined) {
        return { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
      }
      return formatted;
    },
  });
}

/** The caller's key from `Authorization: <key>` or `Bearer <key>`, spaces tolerated. */
export function apiKeyFrom(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const key = header.trim().replace(/^Bearer\s+/i, '').trim();
  return key || undefined;
}

export async function contextFor(services: Services, authorization: string | null | undefined): Promise<GraphqlContext> {
  const key = apiKeyFrom(authorization);
  const teamId = key ? await services.accounts.getTeamIdByApiToken(key) : undefined;
  if (!teamId) throw graphqlError('UNAUTHENTICATED', key ? 'The API key is not valid' : 'An API key is required in the Authorization header');
  return { services, teamId };
}

async function readBody(stream: ReadableStream<Uint8Array> | null): Promise<string | undefined> {
  if (!stream) return undefined;
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      return undefined;
    }
    parts.push(value);
  }
  return Buffer.concat(parts).toString('utf8');
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/** The local door's GraphQL handler at `/graphql`. */
export function createGraphqlHandler(services: Services, server = createApolloServer()): HttpHandler {
  const started = server.start();
  return async (req) => {
    await started;
    if (req.rawPath !== '/graphql' && req.rawPath !== '/graphql/') return json(404, { errors: [{ message: 'Not found: the API is at /graphql' }] });
    const headers = new HeaderMap();
    req.headers.forEach((value, name) => headers.set(name, value));
    let body: unknown;
    if (req.method === 'POST') {
      const declared = Number(req.headers.get('content-length') ?? 0);
      const text = declared > MAX_BODY_BYTES ? undefined : await readBody(req.body);
      if (text === undefined) {
        return json(413, { errors: [{ message: `Request body too large (limit ${MAX_BODY_BYTES} bytes)`, extensions: { code: 'BAD_USER_INPUT' } }] });
      }
      // Clients in the wild send JSON without a Content-Type.
      if (!headers.get('content-type')) headers.set('content-type', 'application/json');
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        return json(400, { errors: [{ message: 'The request body is not valid JSON', extensions: { code: 'BAD_USER_INPUT' } }] });
      }
    }
    const request: HTTPGraphQLRequest = { method: req.method.toUpperCase(), headers, search: req.rawQuery ? `?${req.rawQuery}` : '', body };
    const response = await server.executeHTTPGraphQLRequest({
      httpGraphQLRequest: request,
      context: () => contextFor(services, req.headers.get('authorization')),
    });
    const out = new Headers();
    for (const [name, value] of response.headers) out.set(name, value);
    if (response.body.kind === 'complete') {
      return new Response(response.body.string, { status: response.status ?? 200, headers: out });
    }
    const iterator = response.body.asyncIterator;
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await iterator.next();
        if (next.done) controller.close();
        else controller.enqueue(new TextEncoder().encode(next.value));
      },
    });
    return new Response(stream, { status: response.status ?? 200, headers: out });
  };
}
