/**
 * The GraphQL API: one ApolloServer, mounted by the local door through the
 * HttpHandler seam and by the Lambda door through Apollo's Lambda
 * integration. What happens before Apollo (the playground, the body limit,
 * JSON without a Content-Type) is written once here for both doors.
 */
import { readCappedBody } from '../core/http/capped-body.js';
import { ApolloServer, HeaderMap, type ApolloServerPlugin, type HTTPGraphQLRequest } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { Kind, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';
import type { Config } from '../core/config.js';
import type { HttpHandler } from '../core/http/types.js';
import { contextFor, credentialsFrom, type GraphqlContext, type GraphqlServices } from './context.js';
import { graphqlError } from './errors.js';
import { busy } from './answer.js';
import { estimateAnswerBytes, LIMITS, limitRules } from './limits.js';
import { Playground } from './playground.js';
import { resolvers } from './resolvers/index.js';
import { loadTypeDefs } from './schema.js';
import { sideRouteFor, type SideRouteServices } from './routes.js';

export { apiKeyFrom, contextFor, credentialsFrom } from './context.js';

export const MAX_BODY_BYTES = LIMITS.bodyBytes;

/** True when every root field of the operation is an introspection field (`__schema`, `__type`, `__typename`). */
function introspectionOnly(document: DocumentNode, operation: OperationDefinitionNode): boolean {
  const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])));
  // Each fragment is judged once (a cycle counts as true: validation has refused it already).
  const judged = new Map<string, boolean>();
  const check = (set: SelectionSetNode): boolean =>
    set.selections.every((s) => {
      if (s.kind === Kind.FIELD) return s.name.value.startsWith('__');
      if (s.kind === Kind.INLINE_FRAGMENT) return check(s.selectionSet);
      const known = judged.get(s.name.value);
      if (known !== undefined) return known;
      judged.set(s.name.value, true);
      const fragment = fragments.get(s.name.value);
      const verdict = fragment ? check(fragment.selectionSet) : true;
      judged.set(s.name.value, verdict);
      return verdict;
    });
  return check(operation.selectionSet);
}

/**
 * Authentication happens once per request, before any resolver: an
 * operation without a valid key or session fails whole with
 * UNAUTHENTICATED (HTTP 401), except pure introspection, so the playground
 * can show the schema before a key is typed in; a mutation made with a
 * session but without its CSRF token fails whole with FORBIDDEN (403).
 */
const csrfRefused = () =>
  graphqlError('FORBIDDEN', "A request made with the session cookie that changes something must carry the session's X-CSRF-Token", {
    http: { status: 403 },
  });

const authentication: ApolloServerPlugin<GraphqlContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ contextValue, document, operation }) {
        if (contextValue.caller) {
          // A session's cookie goes with any request the browser makes, so what changes something also needs its CSRF token.
          if (contextValue.session && !contextValue.session.csrfOk && operation?.operation !== 'query') throw csrfRefused();
          return;
        }
        if (!operation || introspectionOnly(document, operation)) return;
        throw contextValue.authError;
      },
      async didEncounterErrors({ contextValue, errors }) {
        for (const error of errors) {
          const code = error.extensions?.code;
          if (code === undefined || code === 'INTERNAL_SERVER_ERROR') {
            contextValue.services.logger.error('GraphQL resolver failed', {
              err: error.originalError ?? error,
              path: error.path?.join('.'),
            });
          }
        }
      },
    };
  },
};

/** Each document's answer-bytes estimate per operation (Apollo keeps one parsed document per distinct query). */
const estimates = new WeakMap<DocumentNode, Map<OperationDefinitionNode, number>>();
function estimateOf(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): number {
  let known = estimates.get(document);
  if (!known) estimates.set(document, (known = new Map()));
  let bytes = known.get(operation);
  if (bytes === undefined) known.set(operation, (bytes = estimateAnswerBytes(schema, document, operation)));
  return bytes;
}

/**
 * The answer's large values (answer.ts): before the operation runs, its
 * estimate is reserved at the process's gate (503 with Retry-After when no
 * room comes in time); afterwards what was not used goes back, and a query
 * whose answer failed its budget answers with that one error and no data
 * (HTTP 400), as a request error: GraphQL-over-HTTP's 4xx for a response
 * with no `data` (https://graphql.github.io/graphql-over-http/draft/#sec-application-graphql-response-json).
 * A mutation keeps its data, with the log that did not fit null and the
 * error beside it: what it did, it did.
 */
const answerBytes: ApolloServerPlugin<GraphqlContext> = {
  async requestDidStart() {
    return {
      async responseForOperation({ contextValue, document, operation, schema }) {
        if (await contextValue.answer.reserve(estimateOf(schema, document, operation))) return null;
        const error = busy();
        return {
          http: { status: 503, headers: new HeaderMap([['retry-after', '1']]) },
          body: { kind: 'single', singleResult: { errors: [{ message: error.message, extensions: error.extensions }] } },
        };
      },
      async willSendResponse({ contextValue, operation, response }) {
        const answer = contextValue.answer;
        answer.settle();
        const failure = answer.failure;
        if (failure && operation?.operation === 'query' && response.body.kind === 'single') {
          answer.drop();
          response.body = {
            kind: 'single',
            singleResult: { errors: [{ message: failure.error.message, extensions: failure.error.extensions }] },
          };
          response.http.status = failure.status;
          if (failure.status === 503) response.http.headers.set('retry-after', '1');
        }
        // A door that does not stream has the whole answer in hand from here on.
        if (!answer.streams) answer.release();
      },
    };
  },
};

export function createApolloServer(options: Config['graphql']): ApolloServer<GraphqlContext> {
  return new ApolloServer<GraphqlContext>({
    typeDefs: loadTypeDefs(),
    resolvers,
    introspection: options.introspection,
    // Without introspection, validation errors do not suggest field names either.
    hideSchemaDetailsFromClientErrors: !options.introspection,
    // An API key is a header the browser never adds on its own, and a
    // session's mutations need its CSRF token (the authentication plugin):
    // Apollo's checks would only break clients that send `GET ?query=` or
    // JSON without a Content-Type.
    csrfPrevention: false,
    persistedQueries: false,
    allowBatchedHttpRequests: false,
    includeStacktraceInErrorResponses: false,
    parseOptions: { maxTokens: LIMITS.tokens },
    validationRules: limitRules,
    // Cache-control hints would wrap every resolver for headers nothing here sets;
    // usage reporting would send data to Apollo's cloud if APOLLO_KEY were set.
    plugins: [
      authentication,
      answerBytes,
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
    ],
    formatError: (formatted) => {
      const code = formatted.extensions?.code;
      if (code === 'INTERNAL_SERVER_ERROR' || code === undefined) {
        return { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
      }
      return formatted;
    },
  });
}

export function createPlayground(options: Config['graphql']): Playground {
  return new Playground({ enabled: options.playground, dir: options.playgroundDir });
}

/** An error answered before Apollo sees the request, in GraphQL's error shape. */
export function requestError(status: number, message: string, code = 'BAD_REQUEST'): Response {
  return new Response(JSON.stringify({ errors: [{ message, extensions: { code } }] }), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

export const bodyTooLarge = () => requestError(413, `The request body is larger than the limit of ${MAX_BODY_BYTES} bytes`);

/**
 * Clients in the wild send JSON with no Content-Type (or curl's form type):
 * a body that parses as JSON is treated as JSON. The parsed body, or a
 * Response refusing the request.
 */
export function readJsonBody(
  text: string,
  headers: { get(name: string): string | null | undefined; set(name: string, value: string): void },
): { body: unknown } | Response {
  if (text.trim() === '') return { body: undefined };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return requestError(400, 'The request body is not valid JSON');
  }
  const type = (headers.get('content-type') ?? '').toLowerCase();
  if (type === '' || type.startsWith('text/plain') || type.startsWith('application/x-www-form-urlencoded'))
    headers.set('content-type', 'application/json');
  return { body };
}

async function readBody(stream: ReadableStream<Uint8Array> | null): Promise<string | undefined> {
  return (await readCappedBody(stream, MAX_BODY_BYTES))?.toString('utf8');
}

/** Apollo's answer with the request's large values in place (answer.ts): the JSON as one string, or a stream when values follow it. */
export interface GraphqlAnswer {
  status: number;
  headers: HeaderMap;
  body: string | ReadableStream<Uint8Array>;
}

/**
 * Runs a request that passed the door's checks (body size, JSON) through
 * Apollo, with the context its credentials make (`header`: a request
 * header by lower-case name). The node:http doors' common part: the
 * general handler below and the fast path of node-door.ts.
 */
export async function executeGraphql(
  services: GraphqlServices,
  server: ApolloServer<GraphqlContext>,
  request: HTTPGraphQLRequest,
  header: (name: string) => string | null | undefined,
): Promise<GraphqlAnswer> {
  let context: GraphqlContext | undefined;
  let response;
  try {
    response = await server.executeHTTPGraphQLRequest({
      httpGraphQLRequest: request,
      // Deploy logs go out after the JSON, piece by piece (answer.ts).
      context: async () => (context = await contextFor(services, credentialsFrom(header), { stream: true })),
    });
  } catch (err) {
    context?.answer.release();
    throw err;
  }
  const status = response.status ?? 200;
  if (response.body.kind === 'complete') {
    const body = context ? context.answer.body(response.body.string) : response.body.string;
    return { status, headers: response.headers, body };
  }
  context?.answer.release();
  const iterator = response.body.asyncIterator;
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
  });
  return { status, headers: response.headers, body: stream };
}

/** An answer as a web Response. */
export function answerResponse(answer: GraphqlAnswer): Response {
  const out = new Headers();
  for (const [name, value] of answer.headers) out.set(name, value);
  return new Response(answer.body, { status: answer.status, headers: out });
}

/**
 * The local door's GraphQL handler at `/graphql`, with the side routes
 * (hooks, imports, the web app) beside it. What most requests are, a POST
 * to `/graphql`, node-door.ts answers without this seam's web objects.
 */
export function createGraphqlHandler(
  services: GraphqlServices & SideRouteServices,
  server = createApolloServer(services.config.graphql),
  playground = createPlayground(services.config.graphql),
  started: Promise<void> = server.start(),
): HttpHandler {
  return async (req) => {
    const side = sideRouteFor(req.rawPath);
    if (side) return side.handle(services, req);
    await started;
    if (req.rawPath !== '/graphql' && req.rawPath !== '/graphql/')
      return requestError(404, 'Not found: the API is at /graphql', 'NOT_FOUND');
    const early = await playground.respond(req);
    if (early) return early;
    const headers = new HeaderMap();
    req.headers.forEach((value, name) => headers.set(name, value));
    let body: unknown;
    if (req.method === 'POST') {
      const declared = Number(req.headers.get('content-length') ?? 0);
      const text = declared > MAX_BODY_BYTES ? undefined : await readBody(req.body);
      if (text === undefined) {
        // The unread rest of the body must not be taken for the next request on this connection.
        const refusal = bodyTooLarge();
        refusal.headers.set('connection', 'close');
        return refusal;
      }
      const parsed = readJsonBody(text, headers);
      if (parsed instanceof Response) return parsed;
      body = parsed.body;
    }
    const request: HTTPGraphQLRequest = { method: req.method.toUpperCase(), headers, search: req.rawQuery ? `?${req.rawQuery}` : '', body };
    return answerResponse(await executeGraphql(services, server, request, (name) => req.headers.get(name)));
  };
}
