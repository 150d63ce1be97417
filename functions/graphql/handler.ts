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
import type { Config } from '../core/config.js';
import { toHttpRequest, toLambdaResult } from '../core/http/lambda.js';
import { createObservability, observe } from '../core/observability.js';
import { createServices, type Services } from '../core/services.js';
import { awsAdapters } from '../aws/adapters.js';
import { onceUntilFailure } from '../core/once-until-failure.js';
import { loadConfigWithSecrets } from '../aws/settings-secret.js';
import { sideRouteFor } from './routes.js';
import { bodyTooLarge, contextFor, createApolloServer, createPlayground, MAX_BODY_BYTES, readJsonBody } from './server.js';
import { credentialsFrom } from './context.js';

// Stack traces in the sources' lines, the map read only when one is printed (lib/functions.ts says why).
sourceMappedStacks();

// The integration is CommonJS and types against Apollo's CJS build; at run
// time it only calls public methods, which the ESM instance has too.
type CjsApolloServer = Parameters<typeof startServerAndCreateLambdaHandler>[0];
type Door = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

/** Logs (each line with its request id), the cold-start metric and the handler's trace. */
const observability = createObservability('graphql');

let door: Door | undefined;
/**
 * One set of services per container, for Apollo's context and the hooks
 * alike; built again after a failure (see onceUntilFailure). The settings
 * that are secrets (the OIDC client secret, the SMTP URL) are read from the
 * stack's secret here, once (functions/aws/settings-secret.ts).
 */
const containerServices = onceUntilFailure(async (): Promise<Services> => {
  const config = await loadConfigWithSecrets(process.env, observability.logger);
  return createServices(config, await awsAdapters(config, observability.logger), { logger: observability.logger });
});

/**
 * Built on the first request of a container, so a configuration error shows
 * in that request's log, from the services' configuration (read with the
 * stack's secret: without it the provider's settings alone would not load).
 */
function buildDoor(config: Config): Door {
  const getServices = containerServices;
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
      // Payload 2.0 hands the request's cookies over in `cookies`, not among the headers
      // (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).
      context: async ({ event }) =>
        contextFor(
          await getServices(),
          credentialsFrom((name) => Object.entries(event.headers ?? {}).find(([k]) => k.toLowerCase() === name)?.[1], event.cookies),
        ) as never,
    },
  ) as unknown as Door;
  return apollo;
}

/**
 * Lambda's largest buffered response: "Invocation payload (request and
 * response): 6 MB each" (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html);
 * the Runtime API counts the result as the JSON it is sent as ("Exceeded
 * maximum allowed payload size (6291556 bytes)"), and API Gateway then
 * answers a bare 500. The answer budget (LIMITS.lambdaAnswerBytes) counts
 * the values as read; escaping can take a log past the payload (a control
 * character is six bytes in JSON, and the answer is a string inside the
 * result's JSON, escaped again), so the finished result is measured too.
 */
const LAMBDA_RESPONSE_PAYLOAD_BYTES = 6 * 1024 * 1024;

/** The result as sent, or RESPONSE_TOO_LARGE (400, in GraphQL's error shape) when the payload would be over Lambda's limit. */
function withinPayload(result: APIGatewayProxyStructuredResultV2): APIGatewayProxyStructuredResultV2 {
  // A character of the body is at most 7 bytes of the payload (a control character, escaped twice): a short body cannot be over.
  if ((result.body?.length ?? 0) * 7 < LAMBDA_RESPONSE_PAYLOAD_BYTES - 64 * 1024) return result;
  const bytes = Buffer.byteLength(JSON.stringify(result));
  if (bytes <= LAMBDA_RESPONSE_PAYLOAD_BYTES) return result;
  const limit = { what: 'Answer bytes', actual: bytes, max: LAMBDA_RESPONSE_PAYLOAD_BYTES };
  const message = `The answer is ${bytes} bytes once encoded, over Lambda's response payload of ${LAMBDA_RESPONSE_PAYLOAD_BYTES} bytes (logs with many control characters grow most): ask for fewer deploy logs at a time`;
  observability.logger.warn('answer over the Lambda response payload', { limit });
  return {
    statusCode: 400,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify({ errors: [{ message, extensions: { code: 'RESPONSE_TOO_LARGE', limit } }] }),
  };
}

export const handler = observe(
  middy(async (event: APIGatewayProxyEventV2, context: Context) => {
    const side = sideRouteFor(event.rawPath ?? '');
    if (side) {
      const services = await containerServices();
      return toLambdaResult(await side.handle(services, toHttpRequest(event)), event.requestContext.http.method);
    }
    door ??= buildDoor((await containerServices()).config);
    return withinPayload(await door(event, context));
  }),
  observability,
);
