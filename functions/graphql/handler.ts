/**
 * Lambda door of the GraphQL API: Apollo's Lambda integration (HTTP API
 * payload 2.0), with the same front matter as the local door (playground,
 * body limit, JSON without a Content-Type) as its middleware. The side
 * routes of the same HTTP API (hooks, imports, the web app; routes.ts) go
 * by path to the same handlers the local door mounts.
 */
import { sourceMappedStacks } from '../aws/source-mapped-stacks.js';
import middy from '@middy/core';
import { handlers, startServerAndCreateLambdaHandler } from '@as-integrations/aws-lambda';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { loadConfig } from '../core/config.js';
import { toHttpRequest, toLambdaResult } from '../core/http/lambda.js';
import { createObservability, observe } from '../core/observability.js';
import { createServices, type Services } from '../core/services.js';
import { awsAdapters } from '../aws/adapters.js';
import { sideRouteFor } from './routes.js';
import { bodyTooLarge, contextFor, createApolloServer, createPlayground, MAX_BODY_BYTES, readJsonBody } from './server.js';

// Stack traces in the sources' lines, the map read only when one is printed (lib/functions.ts says why).
sourceMappedStacks();

// The integration is CommonJS and types against Apollo's CJS build; at run
// time it only calls public methods, which the ESM instance has too.
type CjsApolloServer = Parameters<typeof startServerAndCreateLambdaHandler>[0];
type Door = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

/** Logs (each line with its request id), the cold-start metric and the handler's trace. */
const observability = createObservability('graphql');

let door: Door | undefined;
/** One set of services per container, for Apollo's context and the hooks alike. */
let containerServices: Promise<Services> | undefined;
const servicesOf = (config: ReturnType<typeof loadConfig>) =>
  (containerServices ??= awsAdapters(config, observability.logger).then((adapters) =>
    createServices(config, adapters, { logger: observability.logger }),
  ));

/** Built on the first request of a container, so a configuration error shows in that request's log. */
function buildDoor(): Door {
  const config = loadConfig();
  const getServices = () => servicesOf(config);
  const playground = createPlayground(config.graphql);
  const apollo = startServerAndCreateLambdaHandler(
    createApolloServer(config.graphql) as unknown as CjsApolloServer,
    handlers.createAPIGatewayProxyEventV2RequestHandler(),
    {
      middleware: [
        async (event: APIGatewayProxyEventV2) => {
          const method = event.requestContext.http.method;
          const headers = (event.headers ??= {});
          const early = await playground.respond({
            method,
            rawQuery: event.rawQueryString ?? '',
            headers: new Headers(Object.entries(headers).filter((e): e is [string, string] => typeof e[1] === 'string')),
          });
          if (early) return toLambdaResult(early, method);
          if (!event.body) return;
          const size = event.isBase64Encoded ? Buffer.byteLength(event.body, 'base64') : Buffer.byteLength(event.body);
          if (size > MAX_BODY_BYTES) return toLambdaResult(bodyTooLarge(), method);
          const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
          const parsed = readJsonBody(text, {
            get: (name) => headers[name] ?? headers[Object.keys(headers).find((k) => k.toLowerCase() === name) ?? ''],
            set: (name, value) => {
              for (const k of Object.keys(headers)) if (k.toLowerCase() === name) delete headers[k];
              headers[name] = value;
            },
          });
          if (parsed instanceof Response) return toLambdaResult(parsed, method);
          return;
        },
      ],
      context: async ({ event }) => contextFor(await getServices(), event.headers?.authorization ?? event.headers?.Authorization) as never,
    },
  ) as unknown as Door;
  return apollo;
}

export const handler = observe(
  middy(async (event: APIGatewayProxyEventV2, context: Context) => {
    const side = sideRouteFor(event.rawPath ?? '');
    if (side) {
      const services = await servicesOf(loadConfig());
      return toLambdaResult(await side.handle(services, toHttpRequest(event)), event.requestContext.http.method);
    }
    return (door ??= buildDoor())(event, context);
  }),
  observability,
);
